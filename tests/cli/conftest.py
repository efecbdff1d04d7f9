"""A tiny corpus, cases file and run for the CLI tests (built once per session)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest


@dataclass(frozen=True)
class Folders:
    corpus: Path
    cases: Path
    run: Path
    other_parquet: Path  # a Parquet file that is not a cases file
    text_file: Path


@pytest.fixture(scope="session")
def folders(tmp_path_factory: pytest.TempPathFactory) -> Folders:
    from ctxreplay.datasets.cases import cut_corpus
    from ctxreplay.datasets.store import Corpus
    from ctxreplay.datasets.synth import generate
    from ctxreplay.engines.judge import run_judge
    from ctxreplay.engines.replay import run_replay

    root = tmp_path_factory.mktemp("cli")
    generate(root / "corpus", sessions=3, seed=0, progress=False)
    _, cases = cut_corpus(Corpus(root / "corpus"), root / "cases.parquet", triggers=["every:6"])
    run_replay(root / "corpus", cases, ["noop", "tool-prune"], root / "run", progress=False)
    run_judge(root / "run", "flow", progress=False, workers=1)
    other = root / "other.parquet"
    pq.write_table(pa.table({"x": [1, 2]}), other)
    text = root / "notes.txt"
    text.write_text("not a trace\n")
    return Folders(root / "corpus", cases, root / "run", other, text)
