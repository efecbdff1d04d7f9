"""OpenHands event-log importer: a hand-written fixture and the real OpenAgentSafety outputs."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from ctxreplay.datasets.importers import detect, get_importer
from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.messages import Part
from ctxreplay.datasets.store import Corpus

from builders import FIXTURES, corpus_path, read_items

OH = FIXTURES / "openhands" / "output_small.jsonl"
FLAG = "from_instruction"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


def test_fixture_is_detected() -> None:
    assert detect(OH) == "openhands"
    head = OH.read_bytes()
    assert get_importer("openhands").sniff(OH, head) > get_importer("openai-chat").sniff(OH, head)


def test_events_become_messages() -> None:
    sessions, _ = read_items("openhands", OH)
    s = sessions[0]
    assert s.source_session_id == "inst-a"
    assert s.workload == "openhands/safety_small"
    assert [m.role for m in s.messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    user, act, bash, _parallel, _browser, _editor, final = s.messages
    assert user.parts == (Part.text("Check the website and the logs."),)
    assert FLAG not in user.flags
    assert act.parts == (
        Part("reasoning", content="The log may show the error."),
        Part.text("Reading the log first."),
        Part.call("call_1", "execute_bash", '{"command": "tail -n 2 app.log"}'),
    )
    # the SDK shows the model the metadata suffix after the output
    assert bash.parts == (
        Part.response(
            "call_1", "line 1\nline 2\n[The command completed with exit code 0.]", "execute_bash"
        ),
    )
    assert final.parts == (Part.text("The site is up; the log is clean."),)
    assert s.metadata["model"] == "test-model"
    assert "api_key" not in json.dumps(s.metadata)


def test_parallel_actions_share_one_assistant_message() -> None:
    sessions, _ = read_items("openhands", OH)
    parallel = sessions[0].messages[3]
    assert [p.id for p in parallel.calls] == ["call_2", "call_3"]
    assert sessions[0].metadata["parallel_call_groups"] == 1


def test_screenshot_is_an_image_part_and_counted(tmp_path: Path) -> None:
    sessions, _ = read_items("openhands", OH)
    browser = sessions[0].messages[4]
    assert browser.parts[1] == Part("blob", content=PNG, mime_type="image/png", modality="image")
    assert browser.image_count == 1
    import_paths([OH], tmp_path / "c", progress=False)
    row = Corpus(tmp_path / "c").sessions().filter(source_session_id="inst-a").to_dicts()[0]
    assert row["image_count"] == 1


def test_observation_error_marks_the_result() -> None:
    sessions, _ = read_items("openhands", OH)
    editor = sessions[0].messages[5]
    assert editor.is_error
    assert editor.responses[0].content == (
        "Invalid `path` parameter: /workspace/missing.txt does not exist."
    )
    assert not sessions[0].messages[2].is_error


def test_instruction_inserted_and_unanswered_action_kept() -> None:
    sessions, _ = read_items("openhands", OH)
    s = sessions[1]
    assert s.source_session_id == "inst-b"
    assert [m.role for m in s.messages] == ["user", "assistant"]
    assert s.messages[0].flags == (FLAG,)
    assert s.messages[0].parts == (Part.text("Delete the temporary files."),)
    assert "unanswered_tool_call" in s.messages[1].flags
    assert s.metadata["skipped_events"] == {"ConversationStateUpdateEvent": 1}


def test_bad_row_rejects_only_itself(tmp_path: Path) -> None:
    summary = import_paths([OH], tmp_path / "c", progress=False)
    assert summary.sessions == 2
    (r,) = Corpus(tmp_path / "c").rejects().to_dicts()
    assert r["reason"] == "missing_field"
    assert r["json_path"] == "$.history[1]"
    assert r["line"] == 3
    assert r["session_id"] == "inst-c"


# --- the real corpus -----------------------------------------------------------------------


def _expected(row: dict) -> tuple[int, int, int]:
    """Messages, tool calls and results counted from the raw row."""
    history = row["history"]
    kinds = [e["kind"] for e in history]
    groups = sum(
        1
        for key, _ in itertools.groupby(
            history,
            key=lambda e: ("A", e["llm_response_id"]) if e["kind"] == "ActionEvent" else id(e),
        )
        if isinstance(key, tuple)
    )
    leading_user = (
        bool(history) and history[0]["kind"] == "MessageEvent" and (history[0]["source"] == "user")
    )
    messages = (
        groups
        + kinds.count("MessageEvent")
        + kinds.count("ObservationEvent")
        + (0 if leading_user else 1)
    )
    return messages, kinds.count("ActionEvent"), kinds.count("ObservationEvent")


@pytest.mark.corpora
def test_real_openhands(tmp_path: Path) -> None:
    (path,) = corpus_path("openhands").rglob("*.jsonl")
    assert detect(path) == "openhands"
    summary = import_paths([path], tmp_path / "c", progress=False)
    # two instances have an empty history: nothing happened, they are rejects, not sessions
    assert dict(summary.rejected) == {"empty_session": 2}
    assert summary.sessions == 43
    source = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    ids = [r["instance_id"] for r in source]
    assert len(set(ids)) == len(ids) == 45  # no instance appears twice in this file
    empty = {r["instance_id"] for r in source if not r["history"]}
    assert set(Corpus(tmp_path / "c").rejects()["session_id"]) == empty
    rows = {r["source_session_id"]: r for r in Corpus(tmp_path / "c").sessions().to_dicts()}
    for rec in source:
        if rec["instance_id"] in empty:
            continue
        row = rows[rec["instance_id"]]
        assert (row["n_messages"], row["n_tool_calls"], row["n_tool_results"]) == _expected(rec)
        assert row["n_user_turns"] >= 1


@pytest.mark.corpora
def test_sniffer_ignores_other_real_formats() -> None:
    importer = get_importer("openhands")
    for f in [
        *corpus_path("tau-bench").rglob("*.json"),
        *corpus_path("tau2-bench").rglob("*.json"),
        *corpus_path("swe-agent").rglob("*.traj"),
    ]:
        with f.open("rb") as fh:
            assert importer.sniff(f, fh.read(64 * 1024)) == 0.0, f
