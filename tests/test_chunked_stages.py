"""Chunked and whole processing give the same output, stage by stage (issue 15).

Each stage streams fixed pieces so that its memory follows the piece, not the corpus; these tests
make the pieces tiny and check that nothing the stage writes changes. The other stages are tested
the same way beside their code: import (``test_a_tiny_chunk_writes_the_same_corpus_row_for_row``),
replay (``test_identical_rows_for_any_chunk_size``), judge
(``test_verdicts_are_the_same_for_any_chunk_size_and_worker_count``) and the report
(``tests/reports``).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from ctxreplay.datasets import cases as cases_module
from ctxreplay.datasets.cases import build_cases, parse_trigger
from ctxreplay.datasets.store import Corpus
from ctxreplay.datasets.synth import generate


def corpus_tables(path: Path) -> dict[str, list[dict[str, object]]]:
    corpus = Corpus(path)
    return {
        "sessions": corpus.sessions().to_dicts(),
        "messages": pl.from_arrow(corpus.table("messages")).sort("session_id", "seq").to_dicts(),
        "ground_truth": corpus.ground_truth().to_dicts(),
    }


def test_synth_with_a_tiny_buffer_writes_the_same_corpus(tmp_path: Path) -> None:
    whole = generate(tmp_path / "whole", sessions=12, seed=5, progress=False)
    tiny = generate(tmp_path / "tiny", sessions=12, seed=5, progress=False, chunk_bytes=20_000)
    assert whole.sessions == tiny.sessions == 12
    assert whole.tokens == tiny.tokens and whole.dependencies == tiny.dependencies
    # the tiny buffer was flushed many times: its part was merged from many and holds many
    # row groups, where the whole corpus fits one flush
    part = next((tmp_path / "tiny" / "messages").rglob("*.parquet"))
    whole_part = next((tmp_path / "whole" / "messages").rglob("*.parquet"))
    assert (
        pq.ParquetFile(part).metadata.num_row_groups
        > pq.ParquetFile(whole_part).metadata.num_row_groups
    )
    assert corpus_tables(tmp_path / "whole") == corpus_tables(tmp_path / "tiny")


@pytest.mark.parametrize("rows", [1, 7, 100])
def test_cases_read_in_small_pieces_are_the_cases_read_whole(
    synth_corpus: Path, rows: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    triggers = [parse_trigger("every:3"), parse_trigger("user-turns")]
    whole = build_cases(Corpus(synth_corpus), triggers)
    monkeypatch.setattr(cases_module, "SHAPE_ROWS", rows)  # pieces cut inside sessions
    monkeypatch.setattr(cases_module, "CASE_ROWS", rows)
    pieces = build_cases(Corpus(synth_corpus), triggers)
    assert whole.height > 50
    assert pieces.to_dicts() == whole.to_dicts()
