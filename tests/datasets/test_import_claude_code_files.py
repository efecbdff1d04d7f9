"""Claude Code logs read whole: a result whose call is not in the log, tool outputs persisted to
``tool-results/``, sub-agent ``.meta.json`` files and the project's ``sessions-index.json``
(tests/fixtures/claude-code-2x: a project folder laid out as Claude Code 2.1 writes it)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxreplay.cli import main
from ctxreplay.datasets.importers import detect
from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.openai_format import to_openai
from ctxreplay.datasets.store import Corpus, CorpusError

from builders import FIXTURES

PROJECT = FIXTURES / "claude-code-2x"
SID = "7a1b2c3d-0000-4000-8000-0000000000aa"
FOLDER = PROJECT / "-home-dev-shop"
FULL = FOLDER / SID / "tool-results" / "toolu_big.txt"


@pytest.fixture
def imported(tmp_path: Path) -> tuple[Corpus, Path, object]:
    """The project folder copied (so its files can be removed after the import) and imported."""
    copy = tmp_path / "project"
    shutil.copytree(PROJECT, copy)
    summary = import_paths([copy], tmp_path / "c", progress=False)
    return Corpus(tmp_path / "c"), copy, summary


def _main(corpus: Corpus) -> tuple[str, dict, list]:
    row = next(r for r in corpus.sessions().to_dicts() if r["source_session_id"] == SID)
    return row["session_id"], json.loads(row["metadata"]), corpus.load_session(row["session_id"])


def test_every_file_of_the_project_folder_is_accounted_for(imported) -> None:
    corpus, _, summary = imported
    assert (summary.sessions, summary.rejects, summary.unaccounted) == (2, 0, 0)
    assert summary.records == summary.sessions + summary.rejects + sum(summary.skipped.values())
    assert {
        k: summary.skipped[k] for k in ("persisted_output", "subagent_meta", "sessions_index")
    } == {
        "persisted_output": 1,
        "subagent_meta": 1,
        "sessions_index": 1,
    }
    assert summary.not_read == {"not a trace file: *.md": 1}
    assert "not read: 1 file (not a trace file: *.md: 1" in summary.render()
    assert corpus.manifest["not_read"] == {"not a trace file: *.md": 1}
    assert "unknown_format" not in summary.rejected


def test_the_files_beside_the_logs_are_claude_code_s_by_where_they_lie() -> None:
    for path in (
        FULL,
        FOLDER / SID / "subagents" / "agent-a1.meta.json",
        FOLDER / "sessions-index.json",
    ):
        assert detect(path) == "claude-code", path
    assert detect(PROJECT / "README.md") is None


def test_a_result_whose_call_is_not_in_the_log_keeps_its_session_whole(imported) -> None:
    """The resumed session's first record answers a call of the session it continues: the
    session is imported with every message; that result is text the model read, flagged, and
    listed in the metadata; every request the session makes stays valid."""
    corpus, _, _ = imported
    _, metadata, messages = _main(corpus)
    assert len(messages) == 7
    first = messages[0]
    assert (first.role, first.visible, first.flags) == ("user", True, ("orphan_tool_result",))
    assert [(p.type, p.content) for p in first.parts] == [("text", "3 files changed")]
    assert metadata["orphan_results"] == ["toolu_before"]
    for cut in range(1, len(messages) + 1):
        issued: set[str] = set()
        for m in to_openai(messages[:cut]):
            issued.update(c["id"] for c in m.get("tool_calls") or [])
            if m["role"] == "tool":
                assert m["tool_call_id"] in issued


def test_a_persisted_output_keeps_its_preview_and_links_the_full_output(imported) -> None:
    corpus, copy, _ = imported
    sid, metadata, messages = _main(corpus)
    (result,) = messages[3].responses
    assert result.id == "toolu_big"
    assert result.content is not None and result.content.startswith("<persisted-output>")
    assert len(result.content) < 2300 < FULL.stat().st_size  # the preview the model read
    full = FULL.read_bytes()
    link = metadata["persisted_outputs"]["toolu_big"]
    assert link["recorded_path"].endswith(f"{SID}/tool-results/toolu_big.txt")
    assert (link["bytes"], link["stored"]) == (len(full), True)
    # the corpus keeps the copy: the output comes back byte for byte when the log's folder is gone
    shutil.rmtree(copy)
    assert corpus.tool_output(sid, "toolu_big") == full
    with pytest.raises(CorpusError, match="its persisted outputs: toolu_big"):
        corpus.tool_output(sid, "toolu_task")


def test_a_persisted_output_whose_file_is_missing_is_linked_not_found(tmp_path: Path) -> None:
    copy = tmp_path / "project"
    shutil.copytree(PROJECT, copy)
    (copy / FULL.relative_to(PROJECT)).unlink()
    summary = import_paths([copy], tmp_path / "c", progress=False)
    assert (summary.sessions, summary.rejects) == (2, 0)
    sid, metadata, _ = _main(Corpus(tmp_path / "c"))
    assert metadata["persisted_outputs"]["toolu_big"]["file"] is None
    with pytest.raises(CorpusError, match="was not found when importing"):
        Corpus(tmp_path / "c").tool_output(sid, "toolu_big")


def test_a_sub_agent_s_meta_json_is_read_into_its_metadata(imported, tmp_path: Path) -> None:
    corpus, _, _ = imported
    sub = next(r for r in corpus.sessions().to_dicts() if r["workload"] == "claude-code/subagent")
    assert json.loads(sub["metadata"])["agent_meta"] == {
        "file": "agent-a1.meta.json",
        "agentType": "Explore",
        "description": "Explore",
    }
    # a damaged one says why, and the sub-agent still imports
    copy = tmp_path / "damaged"
    shutil.copytree(PROJECT, copy)
    (copy / FOLDER.relative_to(PROJECT) / SID / "subagents" / "agent-a1.meta.json").write_text("{")
    summary = import_paths([copy], tmp_path / "d", progress=False)
    assert (summary.sessions, summary.rejects, summary.unaccounted) == (2, 0, 0)
    rows = Corpus(tmp_path / "d").sessions().to_dicts()
    meta = json.loads(next(r for r in rows if r["workload"] == "claude-code/subagent")["metadata"])
    assert meta["agent_meta"]["error"].startswith("JSONDecodeError")


def test_show_output_prints_the_full_output_byte_for_byte(imported, tmp_path: Path) -> None:
    corpus, _, _ = imported
    cases = tmp_path / "cases.parquet"
    runner = CliRunner()
    for args in (
        ["cases", str(corpus.path), "-o", str(cases), "--trigger", "every:1"],
        ["replay", str(corpus.path), "--cases", str(cases), "--policy", "noop", "-o",
         str(tmp_path / "run"), "--quiet"],
    ):  # fmt: skip
        result = runner.invoke(main, args)
        assert result.exit_code == 0, result.output
    sid, _, _ = _main(corpus)
    case = _cases(cases, sid)[0]
    result = runner.invoke(main, ["show", str(tmp_path / "run"), case, "--output", "toolu_big"])
    assert result.exit_code == 0, result.output
    assert result.stdout_bytes == FULL.read_bytes()
    result = runner.invoke(main, ["show", str(tmp_path / "run"), case])
    assert result.exit_code == 2 and "--policy" in result.output


def _cases(path: Path, session_id: str) -> list[str]:
    import polars as pl

    frame = pl.read_parquet(path).filter(pl.col("session_id") == session_id)
    return frame["case_id"].to_list()
