"""SWE-agent ``.traj`` importer: textual and function-calling fixtures, and the real trajectories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxreplay.datasets.importers import detect, get_importer
from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.messages import Part, Session
from ctxreplay.datasets.rejects import Reject
from ctxreplay.datasets.store import Corpus

from builders import FIXTURES, corpus_path

SWE = FIXTURES / "swe-agent"


def read_one(name: str) -> Session:
    items = list(get_importer("swe-agent").read(SWE / name))
    assert len(items) == 1 and isinstance(items[0], Session), items
    return items[0]


def test_fixtures_are_detected() -> None:
    for name in ("textual.traj", "textual_xml.traj", "function_calling.traj"):
        assert detect(SWE / name) == "swe-agent", name


def test_textual_commands_become_paired_calls() -> None:
    s = read_one("textual.traj")
    assert s.source_session_id == "textual"
    assert [m.role for m in s.messages] == [
        "system",
        "user",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    demo, task, act, obs, submit = s.messages[1:]
    assert demo.flags == ("demo",) and demo.is_user_turn
    assert task.parts == (Part.text("ISSUE:\nf() has a syntax error."),) and task.flags == ()
    # the command comes from the aligned trajectory step; the prose keeps no fenced copy of it
    assert act.parts == (
        Part.text("Let's look at the file.\n\n"),
        Part.call("swe-3", "open", {"command": "open src/app.py"}),
    )
    assert act.flags == ("textual_command",)
    assert obs.role == "user"
    assert obs.parts == (
        Part.response(
            "swe-3",
            "[File: src/app.py (2 lines total)]\n1:def f()\n2:    return 1\n(Open file: src/app.py)\nbash-$",
            "open",
        ),
    )
    assert not obs.is_user_turn
    assert submit.calls == (Part.call("swe-5", "submit", {"command": "submit"}),)
    assert "unanswered_tool_call" in submit.flags
    assert s.metadata["style"] == "textual"
    assert s.metadata["exit_status"] == "submitted"
    assert s.metadata["model_stats"]["tokens_sent"] == 1200


def test_textual_without_trajectory_uses_command_blocks_and_list_content() -> None:
    s = read_one("textual_xml.traj")
    task, act, obs, confused, feedback = s.messages[1:]
    assert task.parts == (Part.text("ISSUE:\nthe tests fail."),)
    assert act.parts == (
        Part.text("First run the tests.\n"),
        Part.call("swe-2", "python", {"command": "python -m pytest -q"}),
    )
    assert obs.parts == (Part.response("swe-2", "1 failed\nbash-$", "python"),)
    # no command: plain text, and the next user message stays a plain user message
    assert confused.parts == (Part.text("I am not sure what to do."),) and not confused.calls
    assert feedback.parts == (Part.text("Your output was not formatted correctly."),)
    assert "trajectory_steps" not in s.metadata


def test_function_calling_style() -> None:
    s = read_one("function_calling.traj")
    assert [m.role for m in s.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    assert s.messages[1].parts == (Part.text("<pr_description>Fix the bug.</pr_description>"),)
    assert s.messages[2].parts == (
        Part.text("Let me look."),
        Part.call("call_x", "str_replace_editor", '{"command":"view","path":"/repo"}'),
    )
    assert s.messages[3].parts == (
        Part.response("call_x", "/repo\n/repo/app.py", "str_replace_editor"),
    )
    # the replay reused call_x after it was answered: renamed, still paired
    assert s.messages[4].calls[0].id == s.messages[5].responses[0].id == "call_x#2"
    assert s.metadata["style"] == "function_calling"


def test_same_stem_in_two_folders_gives_two_sessions(tmp_path: Path) -> None:
    for sub in ("run-a", "run-b"):
        (tmp_path / sub).mkdir()
        data = json.loads((SWE / "textual.traj").read_text())
        data["info"]["exit_status"] = sub
        (tmp_path / sub / "same.traj").write_text(json.dumps(data))
    summary = import_paths([tmp_path / "run-a", tmp_path / "run-b"], tmp_path / "c", progress=False)
    assert summary.sessions == 2 and summary.rejects == 0


def test_broken_file_rejected_while_the_others_import(tmp_path: Path) -> None:
    summary = import_paths([SWE], tmp_path / "c", fmt="swe-agent", progress=False)
    assert summary.sessions == 3
    (r,) = Corpus(tmp_path / "c").rejects().to_dicts()
    assert r["source_location"].endswith("broken.traj")
    assert r["reason"] == "missing_field"
    assert r["json_path"] == "$.history[2]"
    items = list(get_importer("swe-agent").read(SWE / "broken.traj"))
    assert len(items) == 1 and isinstance(items[0], Reject)


# --- the real corpus -----------------------------------------------------------------------


def _expected(doc: dict) -> tuple[int, int, int]:
    """Messages, tool calls and tool results, counted from the raw ``.traj``."""
    history = doc["history"]
    if any(m.get("tool_calls") or m["role"] == "tool" for m in history):
        calls = sum(len(m.get("tool_calls") or []) for m in history)
        results = sum(len(m["tool_call_ids"]) for m in history if m["role"] == "tool")
        return len(history), calls, results
    acting = [
        i
        for i, m in enumerate(history)
        if m["role"] == "assistant" and not m.get("is_demo") and (m.get("action") or "").strip()
    ]
    answered = [i for i in acting if i + 1 < len(history) and history[i + 1]["role"] == "user"]
    return len(history), len(acting), len(answered)


@pytest.mark.corpora
def test_real_swe_agent(tmp_path: Path) -> None:
    folder = corpus_path("swe-agent")
    files = sorted(folder.rglob("*.traj"))
    assert len(files) == 22
    assert {detect(f) for f in files} == {"swe-agent"}
    summary = import_paths([folder], tmp_path / "c", progress=False)
    assert summary.rejects == 0
    assert summary.sessions == 22
    rows = {r["source_location"]: r for r in Corpus(tmp_path / "c").sessions().to_dicts()}
    assert len(rows) == 22
    stems = [f.stem for f in files]
    assert stems.count("marshmallow-code__marshmallow-1867") > 1  # keys must not collide
    styles = set()
    for f in files:
        row = rows[str(f)]
        doc = json.loads(f.read_text())
        messages, calls, results = _expected(doc)
        assert row["source_session_id"] == f.stem
        assert (row["n_messages"], row["n_tool_calls"], row["n_tool_results"]) == (
            messages,
            calls,
            results,
        ), f
        styles.add(json.loads(row["metadata"])["style"])
    assert styles == {"textual", "function_calling"}


@pytest.mark.corpora
def test_sniffer_ignores_other_real_formats() -> None:
    importer = get_importer("swe-agent")
    for f in [
        *corpus_path("tau-bench").rglob("*.json"),
        *corpus_path("tau2-bench").rglob("*.json"),
        *corpus_path("openhands").rglob("*.jsonl"),
    ]:
        with f.open("rb") as fh:
            assert importer.sniff(f, fh.read(64 * 1024)) == 0.0, f
