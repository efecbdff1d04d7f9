"""The replay engine: same output for any worker count, resumable, rebuildable views, show."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from ctxreplay.cli import main
from ctxreplay.datasets.store import Corpus
from ctxreplay.datasets.tokenizer import get_tokenizer
from ctxreplay.engines.replay import run_replay
from ctxreplay.policies.base import all_policies, make_policy
from ctxreplay.replay.context import PrefixContext
from ctxreplay.replay.objects import build_index
from ctxreplay.replay.outcome import replay_case
from ctxreplay.replay.view import view_problems
from ctxreplay.runs import Run, RunError

POLICIES = ["noop", "tool-prune:keep=2", "self-gc", "agent-forgetting:reminder_tokens=4000"]


def parquet_bytes(run: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(run)): p.read_bytes()
        for p in sorted(run.rglob("*.parquet"))
        if p.parts[len(run.parts)] in ("figures", "decisions", "views")
    }


def test_identical_output_for_any_worker_count(synth_corpus, synth_cases, tmp_path) -> None:
    one = run_replay(
        synth_corpus,
        synth_cases,
        POLICIES,
        tmp_path / "w1",
        workers=1,
        chunk_size=8,
        progress=False,
    )
    two = run_replay(
        synth_corpus,
        synth_cases,
        POLICIES,
        tmp_path / "w2",
        workers=2,
        chunk_size=8,
        progress=False,
    )
    assert (one.chunks, one.cases) == (two.chunks, two.cases) == (10, 73)
    a, b = parquet_bytes(tmp_path / "w1"), parquet_bytes(tmp_path / "w2")
    assert len(a) == 3 * len(POLICIES) * 10  # three tables per (chunk, policy)
    assert a == b
    assert sorted(
        p.name for p in (tmp_path / "w1" / "sidecar").rglob("*") if p.is_file()
    ) == sorted(p.name for p in (tmp_path / "w2" / "sidecar").rglob("*") if p.is_file())


def test_rerun_skips_done_work_and_adds_new_policies(synth_corpus, synth_cases, tmp_path) -> None:
    first = run_replay(
        synth_corpus, synth_cases, ["noop"], tmp_path / "r", workers=1, chunk_size=8, progress=False
    )
    assert first.computed == first.chunks and first.skipped == 0
    again = run_replay(
        synth_corpus,
        synth_cases,
        ["noop", "oldest-turn"],
        tmp_path / "r",
        workers=1,
        chunk_size=8,
        progress=False,
    )
    assert again.skipped == first.chunks and again.computed == first.chunks
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert set(manifest["policies"]) == {"noop", "oldest-turn"}
    assert manifest["policies"]["oldest-turn"]["params"]["target_ratio"] == 0.5
    with pytest.raises(RunError, match="chunk size"):
        run_replay(
            synth_corpus,
            synth_cases,
            ["noop"],
            tmp_path / "r",
            workers=1,
            chunk_size=9,
            progress=False,
        )


def test_views_rebuild_exactly_and_figures_are_consistent(
    synth_corpus, synth_cases, tmp_path
) -> None:
    run_replay(
        synth_corpus,
        synth_cases,
        ["tool-mask+prune", "self-gc"],
        tmp_path / "v",
        workers=1,
        progress=False,
    )
    run = Run(tmp_path / "v")
    corpus = Corpus(synth_corpus)
    count = get_tokenizer().count
    figures = run.table("figures")
    assert figures.height == 2 * pl.read_parquet(synth_cases).height
    assert figures["pruning_rate"].is_between(0, 1).all()
    checked = 0
    for row in figures.filter(pl.col("committed")).head(6).iter_rows(named=True):
        session = corpus.load_session(row["session_id"])
        prefix = tuple(m for m in session if m.visible and m.seq < row["cut"])
        rebuilt = run.load_view(row["case_id"], row["policy"], session)
        fresh = replay_case(
            make_policy(row["policy"]),
            PrefixContext(
                row["case_id"], row["session_id"], prefix, build_index(prefix, count), count
            ),
        )
        assert [m.parts for m in rebuilt] == [m.parts for m in fresh.view.messages]
        assert sum(m.tokens for m in rebuilt) == row["view_tokens"]
        assert view_problems(rebuilt) == []
        checked += 1
    assert checked == 6


def test_show_and_sql_cli(synth_corpus, synth_cases, tmp_path) -> None:
    runner = CliRunner()
    out = tmp_path / "s"
    result = runner.invoke(
        main,
        [
            "replay",
            str(synth_corpus),
            "--cases",
            str(synth_cases),
            "--policy",
            "tool-prune:keep=1",
            "-o",
            str(out),
            "--quiet",
            "--workers",
            "1",
        ],
    )
    assert result.exit_code == 0, result.output
    assert (
        "tool-prune:keep=1     73   72.0%         73        0       0" in result.output.splitlines()
    )
    case = Run(out).table("figures").filter(pl.col("n_prune") > 0)["case_id"][0]
    shown = runner.invoke(
        main, ["show", str(out), case, "--policy", "tool-prune", "--width", "100"]
    )
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert lines[:4] == [
        "case synth-browser-00004@12  ·  policy tool-prune:keep=1",
        "prefix 5,529 tokens → view 2,920 tokens (47.2% pruned)  ·  committed: True (always)",
        "future: 27 messages, seq 12–38 (12,808 tokens)",
        "the view: pruned 3 objects (2,630 → 21 tokens); 2,609 tokens removed in all",
    ]
    # the placeholder keeps the call envelope (unchanged, so kept: no view line) and replaces
    # the body
    assert lines[8].startswith("  2  function:search_web:1  kept         31  Starting with ")
    assert lines[9].startswith("  3  function:search_web:1  pruned    597→7  ← ")
    assert lines[10].strip() == "view: ← [Old tool result content cleared]"
    assert "(removed)" not in shown.output
    sql = runner.invoke(
        main, ["sql", str(out), "SELECT count(*) AS n FROM decisions WHERE action = 'prune'"]
    )
    assert sql.exit_code == 0
    assert "│ 716 │" in sql.output.splitlines()  # the one cell: pruned objects
    bad = runner.invoke(
        main,
        [
            "replay",
            str(synth_corpus),
            "--cases",
            str(synth_cases),
            "--policy",
            "nope",
            "-o",
            str(out),
        ],
    )
    assert bad.exit_code == 2
    assert bad.output == f"error: unknown policy 'nope'; available: {', '.join(all_policies())}\n"


def test_identical_rows_for_any_chunk_size(synth_corpus, synth_cases, tmp_path) -> None:
    """Chunks of one case and one chunk for the whole corpus replay to the same rows."""
    runs = {size: tmp_path / str(size) / "run" for size in (1, 100_000)}
    for size, out in runs.items():
        run_replay(
            synth_corpus, synth_cases, POLICIES, out, workers=1, chunk_size=size, progress=False
        )
    small, whole = Run(runs[1]), Run(runs[100_000])
    for table in ("figures", "views", "decisions"):
        keys = ["policy", "case_id"] + (["object_id"] if table == "decisions" else [])
        a, b = small.table(table).sort(keys), whole.table(table).sort(keys)
        assert a.height > 0 and a.equals(b), table


def test_the_chunks_with_the_most_work_are_handed_out_first(
    synth_corpus, synth_cases, tmp_path, monkeypatch
) -> None:
    """A chunk holds whole sessions: the one whose prefixes hold the most tokens goes first,
    so no long session is replayed alone at the end while the other workers idle; the parts
    are the same whatever the order."""
    from ctxreplay.engines import replay as engine

    handed: list[int] = []
    real = engine.run_chunks

    def spy(fn, calls, **kwargs):
        calls = list(calls)
        handed.extend(
            int(chunk.cases["prefix_tokens"].sum()) * len(missing)
            for _, _, chunk, missing, *_ in calls
        )
        return real(fn, calls, **kwargs)

    monkeypatch.setattr(engine, "run_chunks", spy)
    run_replay(synth_corpus, synth_cases, POLICIES, tmp_path / "run", chunk_size=4, progress=False)
    from ctxreplay.datasets.cases import read_cases

    plan = [
        int(c.cases["prefix_tokens"].sum()) * len(POLICIES)
        for c in engine.make_chunks(read_cases(synth_cases)[0], 4)
    ]
    assert len(handed) > 3 and handed == sorted(plan, reverse=True)
    assert handed != plan  # the plan's own order was another
    plain = tmp_path / "plain"
    monkeypatch.setattr(engine, "run_chunks", real)
    monkeypatch.setattr(engine, "_work", lambda chunk, policies: 0.0)  # plan order
    run_replay(synth_corpus, synth_cases, POLICIES, plain, chunk_size=4, progress=False)
    assert parquet_bytes(tmp_path / "run") == parquet_bytes(plain)
