"""Gemini CLI chat logs, ``/chat save`` checkpoints and ``logs.json``: hand-written fixtures.

The fixtures under ``tests/fixtures/gemini-cli/tmp/<project hash>/`` follow the shapes of
google-gemini/gemini-cli: ``packages/core/src/services/chatRecordingService.ts`` and
``chatRecordingTypes.ts`` (``ConversationRecord``, ``MessageRecord``, ``ToolCallRecord``,
``TokensSummary``; the JSON document of early versions, the JSONL log with ``$set`` and
``$rewindTo`` lines of later ones, messages appended again as they change),
``conversationRecordSchema.ts`` (the zod schema), ``packages/core/src/utils/sessionUtils.ts``
(``convertSessionToClientHistory``, ``ensureStableToolIds``),
``packages/core/src/services/chatCompressionService.ts`` (the ``<state_snapshot>`` summary and
the "Got it. Thanks for the additional context!" turn) and ``packages/core/src/core/logger.ts``
(``logs.json`` entries, ``checkpoint-<tag>.json``). No real Gemini CLI log is public in
``../shared/corpora``.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_export_roundtrip import assert_same_tables, roundtrip
from test_importers_property import BYTEWISE, STRUCTURAL, mutate
from test_importers_property import Sample as MutableSample

from ctxreplay.datasets.cases import build_cases, parse_trigger
from ctxreplay.datasets.importers import AmbiguousFormat, detect, get_importer
from ctxreplay.datasets.importers.gemini_cli import sniff_gemini
from ctxreplay.datasets.importers.sniffing import sample_of
from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.messages import Part, Session, Usage
from ctxreplay.datasets.rejects import SKIPS, Reject
from ctxreplay.datasets.store import Corpus

from builders import FIXTURES, read_items

GC = FIXTURES / "gemini-cli"
PROJECT = GC / "tmp" / "9c4b2e7f0a1d3c5e8b6f4a2d0c9e7b5a3f1d8c6e4b2a0f9e7d5c3b1a8f6e4d2c"
LEGACY = PROJECT / "chats" / "session-2025-10-18T14-57-f86f5318.json"
JSONL = PROJECT / "chats" / "session-2026-04-02T09-00-7d0c4e1a.jsonl"
EMPTY = PROJECT / "chats" / "session-2026-04-02T10-15-0b9a8c7d.jsonl"
LOGS = PROJECT / "logs.json"
CHECKPOINT = PROJECT / "checkpoint-before-refactor.json"
CHECKPOINT2 = PROJECT / "checkpoint-after%20fix.json"
ALL = (LEGACY, JSONL, EMPTY, LOGS, CHECKPOINT, CHECKPOINT2)
HASH = PROJECT.name
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
CANCELLED = "[Operation Cancelled] Reason: User cancelled the operation."
REPLACE_ARGS = {
    "file_path": "/home/dev/shop/cart.py",
    "old_string": "    return n\n",
    "new_string": "    return n + 1\n",
}
REPLACED = "Successfully modified file: /home/dev/shop/cart.py (1 replacements)."


def _one(path: Path) -> Session:
    sessions, rejects = read_items("gemini-cli", path)
    assert rejects == []
    (session,) = sessions
    return session


# --- detection -----------------------------------------------------------------------------------


def test_every_fixture_is_detected() -> None:
    for path in ALL:
        assert detect(path) == "gemini-cli", path


def test_no_other_fixture_is_taken_for_gemini_cli() -> None:
    sniffer = get_importer("gemini-cli")
    others = [p for p in sorted(FIXTURES.rglob("*")) if p.is_file() and "gemini-cli" not in p.parts]
    assert len(others) > 40
    for path in others:
        head = path.read_bytes()[: 1 << 20]
        assert sniffer.sniff(path, head) == 0.0, path
        try:
            assert detect(path) != "gemini-cli", path
        except AmbiguousFormat as e:
            assert "gemini-cli" not in [name for name, _ in e.candidates], path


def test_an_empty_logs_json_is_still_the_prompt_log(tmp_path: Path) -> None:
    """The CLI writes ``[]`` into ``logs.json`` before the first prompt: only its name says
    what it is; another empty array is nobody's."""
    (tmp_path / "logs.json").write_text("[]")
    (tmp_path / "other.json").write_text("[]")
    assert detect(tmp_path / "logs.json") == "gemini-cli"
    assert sniff_gemini(sample_of(tmp_path / "other.json", b"[]")) == 0.0
    summary = import_paths([tmp_path / "logs.json"], tmp_path / "c", progress=False)
    assert (summary.records, summary.sessions, summary.rejects, summary.unaccounted) == (0, 0, 0, 0)


# --- the JSON document (early versions) ----------------------------------------------------------


def test_json_chat_becomes_messages() -> None:
    s = _one(LEGACY)
    assert s.source_session_id == "f86f5318-f47b-4433-85f8-ec9d9a417f8e"
    assert s.workload == "gemini-cli" and s.source_record == 0
    roles = [m.role for m in s.messages]
    assert roles == ["user", "assistant", "tool", "tool", "assistant", "user", "assistant",
                     "user", "assistant", "tool", "user", "assistant", "tool", "assistant"]  # fmt: skip
    ask, first, many, missing, answer, look, seen, run, call, cancelled, fix, edit, edited, done = (
        s.messages
    )
    assert ask.parts == (Part.text("Why does `pytest tests/test_cart.py` fail?"),)
    assert ask.timestamp == "2025-10-18T14:57:28.974Z"
    rmf, rf = "read_many_files-1760799449161-5b7f3c2a9d", "read_file-1760799449162-8e1d0c4b7a"
    # thoughts, then the (empty) content, then a call per toolCalls entry
    assert first.parts == (
        Part(
            "reasoning",
            content="**Inspecting the failing test** I'll read the test and the cart module first.",
        ),
        Part.call(rmf, "read_many_files", {"paths": ["tests/test_cart.py"]}),
        Part.call(rf, "read_file", {"absolute_path": "/home/dev/shop/cart_utils.py"}),
    )
    assert first.usage == Usage(9120, 0, 48 + 212)  # completion counts the thinking tokens
    # the function response, then the part that followed it in the result
    assert many.parts == (
        Part.response(rmf, "Tool execution succeeded.", "read_many_files"),
        Part.text(
            "--- /home/dev/shop/tests/test_cart.py ---\n\nfrom cart import count\n\n"
            "def test_count():\n    assert count(3) == 4\n"
        ),
    )
    assert (many.is_error, many.timestamp) == (False, "2025-10-18T14:57:31.498Z")
    assert missing.parts == (
        Part.response(rf, "File not found: /home/dev/shop/cart_utils.py", "read_file"),
    )
    assert missing.is_error  # status "error"
    assert answer.usage == Usage(9980, 8190, 31)
    # the slash command and the info it printed are not there; the image is
    assert look.parts == (
        Part.text("What does this screenshot show?"),
        Part("blob", content=PNG, mime_type="image/png", modality="image"),
    )
    assert seen.text == "A terminal with one failing test: `assert 3 == 4`."
    assert run.text == "Run the whole suite."
    sh = "run_shell_command-1760799601204-2c9a7e5f13"
    assert call.parts == (
        Part.call(
            sh, "run_shell_command", {"command": "pytest -q", "description": "Run the test suite."}
        ),
    )
    assert cancelled.parts == (Part.response(sh, CANCELLED, "run_shell_command"),)
    assert cancelled.is_error  # status "cancelled"
    assert fix.text == "Fix it, please."  # /compress and the error and warning left out
    rp = "replace-1760799688310-a4b6c8d0e2"
    assert edit.parts == (
        Part.text("I'll make `count` return `n + 1`."),
        Part.call(rp, "replace", REPLACE_ARGS),
    )
    assert edited.parts == (Part.response(rp, REPLACED, "replace"),)
    assert done.usage == Usage(3120, 2890, 19)
    assert all(m.visible and m.flags == () for m in s.messages)


def test_json_chat_metadata() -> None:
    assert _one(LEGACY).metadata == {
        "layout": "json",
        "project_hash": HASH,
        "start_time": "2025-10-18T14:57:28.974Z",
        "last_updated": "2025-10-18T15:01:40.512Z",
        "summary": "Fix the failing cart test",
        "models": ["gemini-2.5-pro", "gemini-2.5-flash"],
        "requests": 6,
        "token_totals": {
            "input": 46103,
            "output": 195,
            "cached": 30740,
            "thoughts": 396,
            "tool": 0,
            "total": 46694,
        },
        # the CLI's notices and the slash commands: never sent to the model
        "cli_messages": {"error": 1, "info": 1, "slash_command": 2, "warning": 1},
        # this version did not write the compressed history (gemini-cli#21335): nothing to flag
        "compress_commands": 1,
    }


# --- the JSONL log (later versions) --------------------------------------------------------------


def test_jsonl_chat_keeps_the_last_version_of_each_message() -> None:
    s = _one(JSONL)
    assert s.source_session_id == "7d0c4e1a-9b3f-4c2d-8e5a-6f1b0c9d8e7a"
    assert s.source_record == 0  # the metadata line
    texts = [(m.role, m.text.split("\n")[0][:20], m.flags, m.visible) for m in s.messages]
    assert texts == [
        # the history the CLI started with, written by a first ``$set``
        ("user", "<session_context>", (), True),
        ("assistant", "Got it. Thanks for t", (), True),
        ("user", "Why does test_cart f", (), True),
        ("assistant", "", (), True),
        ("tool", "", (), True),
        ("assistant", "`count` returns `n`;", (), True),
        # the compressed history of a later ``$set``: the summary first, flagged
        ("user", "<state_snapshot>", ("compaction_summary",), True),
        ("assistant", "Got it. Thanks for t", (), True),
        ("user", "Fix it.", (), True),
        ("assistant", "", (), True),
        ("tool", "", (), True),  # the history's copy of this result is dropped
        ("assistant", "Fixed: `count` now r", (), True),
        ("user", "Now run the whole su", (), True),
        ("assistant", "", (), True),
        ("tool", "", (), True),
        # ``$rewindTo``: the turn the user took back, kept, not visible
        ("user", "Delete the tests/ fo", ("abandoned_branch",), False),
        ("assistant", "Deleting tests/ woul", ("abandoned_branch",), False),
        ("user", "Thanks, that's all f", (), True),
        ("assistant", "You're welcome!", (), True),
    ]
    sh = "run_shell_command-1775120402118-0a1b2c3d4e"
    ran, out = s.messages[3], s.messages[4]
    # the third version of the message: its tokens (second line) and its result (third)
    assert ran.parts == (
        Part("reasoning", content="**Running the failing test** I will run it to see the assertion."),
        Part.call(sh, "run_shell_command", {"command": "pytest tests/test_cart.py -q", "description": "Run the failing test."}),
    )  # fmt: skip
    assert ran.usage == Usage(8200, 0, 220)
    assert out.parts[0].id == sh and out.parts[0].content.startswith(
        "Command: pytest tests/test_cart.py -q\nDirectory: (root)\nOutput: F\nE   assert 3 == 4"
    )
    assert not out.is_error
    # the version the compressed history holds: its content is the model's turn (thought, call)
    rp = "replace-1775120460052-c3d4e5f6a7"
    assert s.messages[9].parts == (
        Part("reasoning", content="**Fixing the off-by-one** I will edit cart.py."),
        Part.call(rp, "replace", REPLACE_ARGS),
    )
    assert s.messages[10].parts == (Part.response(rp, REPLACED, "replace"),)
    sh2 = "run_shell_command-1775120520904-e5f6a7b8c9"
    assert s.messages[14].parts == (Part.response(sh2, CANCELLED, "run_shell_command"),)
    assert s.messages[14].is_error
    assert s.messages[6].text.startswith(
        "<state_snapshot>\n<overall_goal>Fix the failing cart test."
    )


def test_jsonl_chat_metadata() -> None:
    assert _one(JSONL).metadata == {
        "layout": "jsonl",
        "project_hash": HASH,
        "start_time": "2026-04-02T09:00:00.000Z",
        "last_updated": "2026-04-02T09:02:07.503Z",
        "summary": "Fix the off-by-one in cart.py",
        "kind": "main",
        "models": ["gemini-3-pro-preview"],
        "requests": 7,
        "token_totals": {
            "input": 43980,
            "output": 180,
            "cached": 30600,
            "thoughts": 275,
            "tool": 0,
            "total": 44435,
        },
        "cli_messages": {"error": 1, "info": 1, "slash_command": 1},
        "compress_commands": 1,
        "compactions": [
            {
                "kind": "compress",
                "trigger": "manual",  # a /compress command came before it
                "pre_tokens": 9020,  # the prompt of the last request before it
                "timestamp": "2026-04-02T09:02:07.500Z",
                "summary_seq_index": 6,
                "replaced_messages": 5,
            }
        ],
        "rewinds": 1,
        "abandoned_messages": 2,
        "superseded_versions": 3,
        "duplicate_results": 1,
    }


def test_the_recorded_compaction_makes_a_case(tmp_path: Path) -> None:
    import_paths([JSONL], tmp_path / "c", progress=False)
    cases = build_cases(Corpus(tmp_path / "c"), [parse_trigger("compactions")])
    assert cases.height == 1
    row = cases.row(0, named=True)
    assert (row["cut"], row["prefix_messages"], row["future_start"], row["future_end"]) == (
        6,
        6,
        7,
        19,
    )


def test_a_chat_with_no_prompt_is_skipped() -> None:
    importer = get_importer("gemini-cli")
    assert list(importer.read(EMPTY)) == []
    assert (importer.tally.seen, importer.tally.skipped) == (1, Counter({"empty_chat": 1}))


# --- checkpoints and logs.json ----------------------------------------------------------------------


def test_a_legacy_checkpoint_is_the_api_history() -> None:
    s = _one(CHECKPOINT)
    assert s.source_session_id == "checkpoint-before-refactor"
    assert s.metadata == {"kind": "checkpoint", "tag": "before-refactor"}
    assert [m.role for m in s.messages] == ["user", "assistant", "user", "assistant", "tool", "assistant"]  # fmt: skip
    assert s.messages[0].text.startswith("This is the Gemini CLI. We are setting up the context")
    rf = "read_file-1760799449161-5b7f3c2a9d"
    # the call had no id (older API): it takes the id of the response of its name after it
    assert s.messages[3].parts == (
        Part("reasoning", content="**Inspecting the failing test** I'll read the cart module."),
        Part.call(rf, "read_file", {"absolute_path": "/home/dev/shop/cart.py"}),
    )
    assert s.messages[4].parts == (Part.response(rf, "def count(n):\n    return n\n", "read_file"),)


def test_a_checkpoint_document() -> None:
    s = _one(CHECKPOINT2)
    assert s.source_session_id == "checkpoint-after fix"  # the tag, percent-decoded
    assert s.metadata == {"kind": "checkpoint", "tag": "after fix", "auth_type": "oauth-personal"}
    rp = "replace-1775120460052-c3d4e5f6a7"
    assert s.messages[3].parts == (Part.call(rp, "replace", REPLACE_ARGS),)  # signature: opaque
    assert s.messages[4].parts == (
        Part.response(rp, REPLACED, "replace"),
        Part.text("A screenshot of the diff:"),
        Part("blob", content=PNG, mime_type="image/png", modality="image"),
    )


def test_logs_json_is_skipped_entry_by_entry() -> None:
    importer = get_importer("gemini-cli")
    assert list(importer.read(LOGS)) == []
    assert (importer.tally.seen, importer.tally.skipped) == (4, Counter({"prompt_log": 4}))


# --- the import as a whole --------------------------------------------------------------------------


def test_the_fixture_folder_imports_and_every_record_is_accounted_for(tmp_path: Path) -> None:
    summary = import_paths([GC], tmp_path / "c", progress=False)
    assert (summary.files, summary.sessions, summary.rejects, summary.messages) == (6, 4, 0, 45)
    assert summary.records == summary.sessions + summary.rejects + sum(summary.skipped.values())
    assert summary.unaccounted == 0
    assert summary.skipped == Counter(
        {"part_of_session": 26, "prompt_log": 4, "cli_message": 3, "empty_chat": 1}
    )
    assert set(summary.skipped) <= set(SKIPS)
    corpus = Corpus(tmp_path / "c")
    by_file = {Path(s["path"]).name: s for s in corpus.manifest["sources"]}
    assert {
        name: (s["records"], s["sessions"], s["rejects"], s["skipped"])
        for name, s in by_file.items()
    } == {
        LEGACY.name: (1, 1, 0, {}),
        JSONL.name: (25, 1, 0, {"part_of_session": 21, "cli_message": 3}),
        EMPTY.name: (1, 0, 0, {"empty_chat": 1}),
        LOGS.name: (4, 0, 0, {"prompt_log": 4}),
        CHECKPOINT.name: (6, 1, 0, {"part_of_session": 5}),
        CHECKPOINT2.name: (1, 1, 0, {}),
    }
    sessions = {r["source_session_id"]: r for r in corpus.sessions().iter_rows(named=True)}
    assert {k: (r["n_messages"], r["n_tool_calls"], r["n_tool_results"]) for k, r in sessions.items()} == {
        "f86f5318-f47b-4433-85f8-ec9d9a417f8e": (14, 4, 4),
        "7d0c4e1a-9b3f-4c2d-8e5a-6f1b0c9d8e7a": (19, 3, 3),
        "checkpoint-before-refactor": (6, 1, 1),
        "checkpoint-after fix": (6, 1, 1),
    }  # fmt: skip
    assert all(r["tokens"] > 0 for r in sessions.values())
    legacy = sessions["f86f5318-f47b-4433-85f8-ec9d9a417f8e"]
    assert (legacy["usage_prompt_tokens"], legacy["usage_cached_tokens"]) == (46103, 30740)
    assert legacy["usage_completion_tokens"] == 195 + 396
    assert legacy["image_count"] == 1
    jsonl = sessions["7d0c4e1a-9b3f-4c2d-8e5a-6f1b0c9d8e7a"]
    assert jsonl["n_visible_messages"] == 17
    messages = corpus.load_session(jsonl["session_id"])
    assert [m.seq for m in messages if "compaction_summary" in m.flags] == [6]
    assert all(m.tokens > 0 for m in messages)


def test_round_trip_through_export(tmp_path: Path) -> None:
    a, b, _, _ = roundtrip([GC], tmp_path, sessions=4)
    assert_same_tables(a, b)


# --- bad input -------------------------------------------------------------------------------------


def test_a_bad_line_is_rejected_alone(tmp_path: Path) -> None:
    lines = JSONL.read_bytes().split(b"\n")[:-1]
    cut = lines[7][:50]  # the second answer, cut short
    system = json.dumps({"id": "x1", "timestamp": "t", "type": "system", "content": "hi"}).encode()
    stray = b'{"hello": 1}'
    future = b'{"$futureRecord": {"x": 1}}'
    last = json.loads(lines[23])  # the last answer, its content not a part list
    last["content"] = 5
    bad = json.dumps(last).encode()
    edited = [*lines[:7], cut, system, stray, future, *lines[8:23], bad, lines[24]]
    path = tmp_path / "session-2026-04-02T09-00-7d0c4e1a.jsonl"
    path.write_bytes(b"\n".join(edited) + b"\n")
    importer = get_importer("gemini-cli")
    items = list(importer.read(path))
    rejects = [i for i in items if isinstance(i, Reject)]
    assert sorted((r.reason, r.line, r.json_path, r.raw) for r in rejects) == [
        ("invalid_json", 8, "$", cut),
        ("malformed", 10, "$", stray),
        ("unknown_role", 9, "$.type", system),
        ("wrong_type", 27, "$.content", bad),
    ]
    (session,) = [i for i in items if isinstance(i, Session)]
    # the two broken answers are gone; the rest is there
    assert len(session.messages) == 19 - 2
    assert session.messages[-1].text == "Thanks, that's all for now."
    assert session.metadata["rejected_records"] == 4
    assert session.metadata["unknown_records"] == {"$futureRecord": 1}
    assert importer.tally.seen == 28
    assert importer.tally.skipped == Counter({"part_of_session": 20, "cli_message": 3})
    assert importer.tally.seen == 1 + len(rejects) + sum(importer.tally.skipped.values())


def test_a_broken_document_is_one_reject(tmp_path: Path) -> None:
    data = LEGACY.read_bytes()
    path = tmp_path / LEGACY.name
    path.write_bytes(data[:-300])
    summary = import_paths([path], tmp_path / "c", progress=False)
    assert (summary.records, summary.sessions, summary.rejects, summary.unaccounted) == (1, 0, 1, 0)
    (row,) = Corpus(tmp_path / "c").rejects().iter_rows(named=True)
    assert (row["reason"], row["raw"]) == ("truncated", data[:-300])
    doc = json.loads(data)
    doc["messages"][1]["toolCalls"][1]["id"] = 7
    path.write_text(json.dumps(doc, indent=2))
    (reject,) = read_items("gemini-cli", path)[1]
    assert (reject.reason, reject.json_path, reject.record) == (
        "wrong_type",
        "$.messages[1].toolCalls[1].id",
        0,
    )
    assert reject.raw == path.read_bytes()


def test_an_orphan_result_rejects_the_session(tmp_path: Path) -> None:
    doc = json.loads(LEGACY.read_text())
    result = doc["messages"][1]["toolCalls"][1]["result"][0]["functionResponse"]
    result["id"] = "ghost"
    path = tmp_path / LEGACY.name
    path.write_text(json.dumps(doc, indent=2))
    (reject,) = read_items("gemini-cli", path)[1]
    assert reject.reason == "orphan_tool_result"


@pytest.mark.parametrize(
    "other",
    [
        "codex-cli/rollout-2025-10-01T10-00-00-0199aaaa-0000-7000-8000-000000000001.jsonl",
        "openai_chat/messages.json",
        "anthropic/session.json",
        "tau2-bench/results_small.json",
    ],
)
def test_format_given_for_another_format_rejects_without_crashing(
    other: str, tmp_path: Path
) -> None:
    summary = import_paths([FIXTURES / other], tmp_path / "c", fmt="gemini-cli", progress=False)
    assert summary.sessions == 0 and summary.rejects > 0
    assert summary.records == summary.rejects + sum(summary.skipped.values())
    assert summary.unaccounted == 0


# --- property: the JSON layouts, mutated --------------------------------------------------------------


def _samples() -> dict[str, MutableSample]:
    legacy = json.loads(LEGACY.read_text())
    legacy["messages"] = legacy["messages"][:5]
    checkpoint = json.loads(CHECKPOINT.read_text())
    return {
        "document": MutableSample(".json", "document", (legacy,), ("",), 1),
        "array": MutableSample(".json", "array", tuple(checkpoint), ("",) * len(checkpoint), 1),
        "checkpoint": MutableSample(".json", "document", (json.loads(CHECKPOINT2.read_text()),), ("",), 1),
    }  # fmt: skip


SAMPLES = _samples()


def _accounts_for_every_record(data: bytes, suffix: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"sample{suffix}"
        path.write_bytes(data)
        importer = get_importer("gemini-cli")
        items = list(importer.read(path))  # must not raise, whatever the bytes
    sessions = [i for i in items if isinstance(i, Session)]
    rejects = [i for i in items if isinstance(i, Reject)]
    assert len(sessions) + len(rejects) == len(items)
    assert len(sessions) <= 1
    for r in rejects:
        assert r.reason and isinstance(r.raw, bytes)
    for s in sessions:
        assert s.messages and [m.seq for m in s.messages] == list(range(len(s.messages)))
    tally = importer.tally
    assert tally.seen == len(items) + sum(tally.skipped.values())
    assert set(tally.skipped) <= set(SKIPS)


@pytest.mark.parametrize("layout", sorted(SAMPLES))
@settings(
    max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(kind=st.sampled_from(STRUCTURAL + BYTEWISE), seed=st.integers(0, 2**32 - 1))
def test_mutated_json_layouts_never_raise_and_account_for_records(
    layout: str, kind: str, seed: int
) -> None:
    sample = SAMPLES[layout]
    _accounts_for_every_record(mutate(sample, kind, seed).data, sample.suffix)


def test_unmutated_samples_import(tmp_path: Path) -> None:
    for layout, sample in SAMPLES.items():
        path = tmp_path / f"{layout}.json"
        path.write_bytes(sample.render()[0])
        sessions, rejects = read_items("gemini-cli", path)
        assert (len(sessions), rejects) == (1, []), layout


# --- ``$set`` histories and rewinds, line by line ---------------------------------------------------


def _log(tmp_path: Path, lines: list[dict[str, object]], name: str = "session-x.jsonl") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _msg(mid: str, kind: str, content: object, **extra: object) -> dict[str, object]:
    return {"id": mid, "timestamp": "2026-04-02T09:00:00.000Z", "type": kind, "content": content, **extra}  # fmt: skip


def _call(output: str) -> dict[str, object]:
    response = {"functionResponse": {"id": "c1", "name": "ls", "response": {"output": output}}}
    return {"id": "c1", "name": "ls", "args": {}, "status": "success", "result": [response]}


META = {"sessionId": "s-1", "projectHash": "h"}


def test_a_history_that_only_rewrites_results_is_no_compaction(tmp_path: Path) -> None:
    """Tool output masking writes the history back with a result replaced: the last version
    wins, nothing is flagged; a history that drops turns without a summary is counted."""
    u1 = _msg("u1", "user", "list it")
    g1 = _msg("g1", "gemini", "", toolCalls=[_call("a b c " * 50)])
    masked = {**g1, "toolCalls": [_call("<tool_output_masked/>")]}
    g2 = _msg("g2", "gemini", "Three files.")
    u2 = _msg("u2", "user", "thanks")
    copy = _msg("g1_response", "user", masked["toolCalls"][0]["result"])  # type: ignore[index]
    path = _log(
        tmp_path,
        [META, u1, g1, g2, {"$set": {"messages": [u1, masked, copy, g2]}}, u2,
         {"$set": {"messages": [g2, u2]}}],
    )  # fmt: skip
    s = _one(path)
    assert [(m.role, m.flags) for m in s.messages] == [
        ("user", ()), ("assistant", ()), ("tool", ()), ("assistant", ()), ("user", ()),
    ]  # fmt: skip
    assert s.messages[2].parts == (Part.response("c1", "<tool_output_masked/>", "ls"),)
    assert s.metadata["duplicate_results"] == 1
    assert s.metadata["context_truncations"] == 1
    assert "compactions" not in s.metadata


def test_a_message_written_again_after_a_rewind_is_a_new_one(tmp_path: Path) -> None:
    u1 = _msg("u1", "user", "hello")
    g1 = _msg("g1", "gemini", "Hi!")
    path = _log(tmp_path, [META, u1, g1, {"$rewindTo": "u1"}, u1, g1])
    s = _one(path)
    assert [(m.text, m.visible) for m in s.messages] == [
        ("hello", False), ("Hi!", False), ("hello", True), ("Hi!", True),
    ]  # fmt: skip
    assert s.metadata["abandoned_messages"] == 2
    # a rewind to an id the log does not hold takes everything back, as the CLI's loader does
    s = _one(_log(tmp_path, [META, u1, g1, {"$rewindTo": "nowhere"}, _msg("u2", "user", "again")]))
    assert [(m.text, m.visible) for m in s.messages] == [
        ("hello", False), ("Hi!", False), ("again", True),
    ]  # fmt: skip


def test_a_subagent_log_names_its_parent(tmp_path: Path) -> None:
    meta = {**META, "kind": "subagent", "directories": ["/home/dev/shop"]}
    path = _log(tmp_path, [meta, _msg("u1", "user", "search")], "chats/parent-9/agent-1.jsonl")
    s = _one(path)
    assert (s.metadata["kind"], s.metadata["parent_session_id"]) == ("subagent", "parent-9")
    assert s.metadata["directories"] == ["/home/dev/shop"]
