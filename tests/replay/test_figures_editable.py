"""Editable pruning in the figures: tokens a policy may touch, the share of them removed, and why
a target or budget was not met; runs written before these columns read them as null."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from ctxreplay.datasets.store import Corpus
from ctxreplay.datasets.tokenizer import get_tokenizer
from ctxreplay.engines.replay import run_replay
from ctxreplay.policies.budget import editable_tokens
from ctxreplay.replay.context import PrefixContext
from ctxreplay.replay.objects import build_index
from ctxreplay.reports import build_report
from ctxreplay.reports.tables import no_impact_table, outcomes
from ctxreplay.runs import Run

POLICIES = ["noop", "tool-prune:keep=1", "oldest-turn:target=1"]
NEW = ("editable_tokens", "editable_pruning", "budget_note")


@pytest.fixture(scope="module")
def run(synth_corpus: Path, synth_cases: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("editable") / "run"
    run_replay(synth_corpus, synth_cases, POLICIES, out, workers=1, chunk_size=8, progress=False)
    return out


def test_figures_hold_editable_tokens_pruning_and_the_unmet_reason(run: Path, synth_corpus):
    figures = Run(run).table("figures")
    assert figures.schema["editable_tokens"] == pl.Int64
    assert figures.schema["editable_pruning"] == pl.Float64
    assert figures.schema["budget_note"] == pl.String
    assert figures["editable_tokens"].null_count() == 0
    assert (figures["editable_tokens"] < figures["prefix_tokens"]).all()  # system prompts
    removed = (figures["prefix_tokens"] - figures["view_tokens"]) / figures["editable_tokens"]
    assert figures["editable_pruning"].to_list() == pytest.approx(
        removed.clip(0, 1).to_list(), abs=1e-12
    )
    assert (figures["editable_pruning"] >= figures["pruning_rate"]).all()
    by = {p: figures.filter(pl.col("policy") == p) for p in POLICIES}
    assert (by["noop"]["editable_pruning"] == 0).all()
    assert by["noop"]["budget_note"].null_count() == by["noop"].height
    assert by["tool-prune:keep=1"]["budget_note"].null_count() == by["tool-prune:keep=1"].height
    notes = by["oldest-turn:target=1"]["budget_note"]
    assert notes.null_count() == 0  # the whole editable prefix can never go
    assert all(n.startswith("target 1.00 of ") and "only" in n for n in notes.to_list())
    # editable tokens are exactly what the budget module counts for the case's prefix
    corpus = Corpus(synth_corpus)
    count = get_tokenizer().count
    for row in figures.head(5).iter_rows(named=True):
        session = corpus.load_session(row["session_id"])
        prefix = tuple(m for m in session if m.visible and m.seq < row["cut"])
        ctx = PrefixContext(
            row["case_id"], row["session_id"], prefix, build_index(prefix, count), count
        )
        assert row["editable_tokens"] == editable_tokens(ctx)


def test_the_no_impact_table_shows_editable_pruning_next_to_pruning(run: Path):
    report = build_report(run, bootstrap=50)
    table = report.no_impact
    figures = Run(run).table("figures")
    for row in table.iter_rows(named=True):
        mean = figures.filter(pl.col("policy") == row["policy"])["editable_pruning"].mean()
        assert row["editable_pruning_pct"] == pytest.approx(100 * mean)
    text = report.render("terminal", width=0)  # one line per row
    header = next(line for line in text.splitlines() if line.startswith("policy "))
    assert header.index("prune %") < header.index("editable prune %") < header.index("prune 95%")
    assert "| editable prune % |" in report.render("markdown")
    assert "editable prune %" in report.render("html")
    assert "editable_pruning_pct" in report.render("csv").splitlines()[1]
    doc = json.loads(report.render("json"))
    assert "editable_pruning_pct" in json.dumps(doc)


def _strip_new_columns(path: Path) -> None:
    table = pq.read_table(path)
    pq.write_table(table.drop_columns(list(NEW)), path)


def test_runs_written_before_the_columns_read_them_as_null(run: Path, tmp_path: Path):
    old = tmp_path / "old"
    shutil.copytree(run, old)
    chunks = sorted((old / "figures").rglob("chunk-*.parquet"))
    assert len(chunks) > len(POLICIES)  # several chunks per policy
    noop_chunks = [p for p in chunks if p.parent.name.startswith("noop-")]
    # every noop chunk is old; one chunk of tool-prune is old and the others new (a resumed run)
    for path in [*noop_chunks, next(p for p in chunks if "tool-prune" in p.parent.name)]:
        _strip_new_columns(path)
    figures = Run(old).table("figures")
    noop = figures.filter(pl.col("policy") == "noop")
    for column in NEW:
        assert noop[column].null_count() == noop.height
    prune = figures.filter(pl.col("policy") == "tool-prune:keep=1")
    assert 0 < prune["editable_tokens"].null_count() < prune.height
    table = no_impact_table(outcomes(Run(old), None), ["noop", "tool-prune:keep=1"], n_boot=20)
    row = table.row(0, named=True)
    assert row["policy"] == "noop" and math.isnan(row["editable_pruning_pct"])
    # from the chunks that have it
    assert table.row(1, named=True)["editable_pruning_pct"] == pytest.approx(76.1659020230551)
    text = build_report(old, bootstrap=20).render("terminal", width=0)
    header = next(line for line in text.splitlines() if line.startswith("policy "))
    noop_line = next(line for line in text.splitlines() if line.startswith("noop "))
    column = header.index("editable prune %") + len("editable prune %")
    assert noop_line[:column].rstrip().endswith("–")
    doc = json.loads(build_report(old, bootstrap=20).render("json"))
    assert "NaN" not in json.dumps(doc)
