"""``ctxreplay import`` and ``info`` as a person reads them: a failed import leaves nothing
behind and says what the files are; the summary says what its other records are; ``info``
counts tool output by content, whatever role carries it."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxreplay.cli import main

from builders import FIXTURES

CLAUDE = FIXTURES / "claude-code"


@pytest.mark.parametrize("made", [False, True], ids=["new-folder", "empty-folder-made-first"])
def test_a_forced_format_that_reads_nothing_leaves_nothing(tmp_path: Path, made: bool) -> None:
    out = tmp_path / "corpus"
    if made:
        out.mkdir()
    runner = CliRunner()
    failed = runner.invoke(main, ["import", str(CLAUDE), "--format", "codex-cli", "-o", str(out), "--quiet"])  # fmt: skip
    assert failed.exit_code == 1
    last = failed.output.strip().splitlines()[-1]
    assert last.startswith(f"error: nothing was imported, so no corpus was written at {out}")
    assert (
        "--format codex-cli read no session; by their content the files are claude-code (" in last
    )
    assert last.endswith("re-run with --format claude-code or without --format")
    assert "raw records kept" not in failed.output  # there is no corpus to query
    assert (list(out.iterdir()) == []) if made else not out.exists()
    again = runner.invoke(main, ["import", str(CLAUDE), "-o", str(out), "--quiet"])
    assert again.exit_code == 0, again.output


def test_an_existing_corpus_is_never_removed_by_a_refused_import(tmp_path: Path) -> None:
    out = tmp_path / "corpus"
    runner = CliRunner()
    assert runner.invoke(main, ["import", str(CLAUDE), "-o", str(out), "--quiet"]).exit_code == 0
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    refused = runner.invoke(main, ["import", str(CLAUDE), "--format", "codex-cli", "-o", str(out)])
    assert refused.exit_code == 2 and "exists and is not empty" in refused.output
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before


def test_the_summary_says_what_its_other_records_are(tmp_path: Path) -> None:
    out = CliRunner().invoke(main, ["import", str(CLAUDE), "-o", str(tmp_path / "c"), "--quiet"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    seen = next(x for x in lines if x.startswith("records seen "))
    assert "other records (read, and not a session of their own):" in seen
    assert "skipped" not in seen
    part = next(x for x in lines if " part_of_session: " in x)
    assert "its messages" in part


def test_info_counts_tool_results_by_content(tmp_path: Path) -> None:
    """Claude Code's tool results are messages of role user: the share of tool output by
    content matches the corpus's tool output share, not the share of role tool."""
    corpus = tmp_path / "c"
    assert CliRunner().invoke(main, ["import", str(CLAUDE), "-o", str(corpus), "--quiet"]).exit_code == 0  # fmt: skip
    from ctxreplay.datasets.info import corpus_info
    from ctxreplay.datasets.store import Corpus

    info = corpus_info(Corpus(corpus))
    share = info["overview"]["tool_output_share"][0]
    by_content = dict(zip(info["by_content"]["content"], info["by_content"]["share"], strict=True))
    assert by_content["tool results"] == pytest.approx(share, abs=0.001) and share > 0
    by_role = info["by_role"]
    user_results = by_role.filter(
        (by_role["role"] == "user") & (by_role["content"] == "tool results")
    )
    assert user_results.height == 1 and user_results["messages"][0] > 0
    assert "tool" not in by_role["role"].to_list()  # Claude Code has no role tool
