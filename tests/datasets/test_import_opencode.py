"""OpenCode: ``opencode.db`` (built from ``tests/fixtures/opencode/make_fixture.py``, OpenCode's
own schema and row objects) and an ``opencode export`` JSON.

Shapes come from OpenCode's source (sst/opencode, now anomalyco/opencode):
``packages/opencode/src/session/session.sql.ts`` (tables), ``message-v2.ts`` (messages, parts,
``toModelMessages``), ``compaction.ts`` (the summary message), ``cli/cmd/export.ts``.
"""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlite_fixtures import (
    RowDamage,
    accounted,
    check_read,
    damage_settings,
    damage_test,
    database_fixtures,
    digest,
    file_rejects,
    load_fixture,
    others_are_not,
    read_closed_wal,
    read_live_wal,
    schema_reject,
)
from test_export_roundtrip import assert_same_tables, roundtrip
from test_importers_property import mutate_record

from ctxreplay.datasets.cases import build_cases, parse_trigger, prefix_of
from ctxreplay.datasets.importers import detect, get_importer
from ctxreplay.datasets.importers.opencode import COMPACTION_PROMPT, INTERRUPTED
from ctxreplay.datasets.importers.sqlite import readonly_database
from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.messages import Part, Usage
from ctxreplay.datasets.store import Corpus

from builders import FIXTURES, read_items

FIX = FIXTURES / "opencode"
EXPORT = FIX / "ses_4e9d8c7b6a5fExportSession01.json"
fx = load_fixture("opencode")
db, bad_db = database_fixtures("opencode", "opencode.db", "opencode-bad.db")


# --- detection ---------------------------------------------------------------------------------


def test_fixtures_are_detected(db: Path, bad_db: Path) -> None:
    for path in (db, bad_db, EXPORT):
        assert detect(path) == "opencode"


def test_other_formats_fixtures_are_not_taken_for_opencode() -> None:
    others_are_not("opencode")


def test_a_goose_database_is_not_opencode(tmp_path: Path) -> None:
    path = load_fixture("goose").build_main(tmp_path / "sessions.db")
    assert get_importer("opencode").sniff(path, path.read_bytes()[:100]) == 0.0
    assert detect(path) == "goose"


# --- the database ------------------------------------------------------------------------------


def test_database_import_accounts_for_every_row(db: Path, tmp_path: Path) -> None:
    summary = import_paths([db], tmp_path / "c", progress=False)
    assert (summary.sessions, summary.rejects) == (2, 0)
    # 2 session rows + 13 message rows + 45 part rows
    assert summary.records == 60
    assert dict(summary.skipped) == {"part_of_session": 58}
    accounted(summary)


def test_main_session_messages(db: Path) -> None:
    sessions, rejects = read_items("opencode", db)
    assert rejects == []
    main, child = sessions
    assert main.source_session_id == fx.MAIN and child.source_session_id == fx.CHILD
    assert main.key == fx.MAIN and main.workload == "opencode"
    roles = [m.role for m in main.messages]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "tool", "assistant",
                     "user", "assistant", "tool", "assistant", "user", "assistant", "user",
                     "assistant", "tool", "user", "assistant", "assistant"]  # fmt: skip
    m = main.messages
    # the user turn: typed text and the synthetic read OpenCode sent; the text/plain file part
    # itself is left out (OpenCode sends it as those synthetic parts)
    assert m[0].parts == (
        Part.text("Why does test_cart fail? Fix it. @src/cart.py"),
        Part.text(
            'Called the Read tool with the following input: {"filePath":"/home/dev/shop/src/cart.py"}'
        ),
        Part.text("<file>\n00001| def count(n):\n00002|     return n\n</file>"),
    )
    assert m[0].timestamp == "2025-10-09T08:53:20Z"
    # one assistant message per step, with its step-finish usage (input + cache read + write)
    assert m[1].parts == (
        Part("reasoning", content="The test asserts count(3) == 4; read the test first."),
        Part.call("toolu_01Read", "read", {"filePath": "/home/dev/shop/tests/test_cart.py"}),
    )
    assert m[1].usage == Usage(5510, 4000, 120)
    assert m[1].flags == ("generation_retried",)
    assert m[2].parts == (
        Part.response(
            "toolu_01Read",
            "<file>\n00001| from cart import count\n00002| def test_count():\n"
            "00003|     assert count(3) == 4\n</file>",
            "read",
        ),
    )
    assert m[3].parts == (
        Part.text("count() returns n; it should return n + 1. Let me run the test."),
        Part.call("toolu_02Bash", "bash",
                  {"command": "pytest tests/test_cart.py -q", "description": "Run the failing test"}),
        Part.call("toolu_03Edit", "edit", {"filePath": "/home/dev/shop/src/cart.py",
                                           "oldString": "return n", "newString": "return n + 1"}),
    )  # fmt: skip
    assert m[3].usage == Usage(5002, 5000, 150)
    assert m[4].parts == (
        Part.response(
            "toolu_02Bash", "The user rejected permission to use this specific tool call.", "bash"
        ),
    )
    assert m[4].is_error and not m[5].is_error
    assert m[5].parts == (Part.response("toolu_03Edit", "", "edit"),)
    assert m[6].parts == (Part.text("Fixed: count() now returns n + 1."),)
    assert m[6].usage == Usage(5403, 5400, 70)
    assert m[7].parts[1] == Part("blob", content=fx.PNG, mime_type="image/png", modality="image")
    assert m[8].calls == (
        Part.call("toolu_04Task", "task", {"description": "Find count() docs",
                                           "prompt": "Find where count() is documented",
                                           "subagent_type": "general"}),
    )  # fmt: skip


def test_compaction_summary_and_what_follows(db: Path) -> None:
    (main, _), _ = read_items("opencode", db)
    m = main.messages
    assert m[11].parts == (Part.text(COMPACTION_PROMPT),)  # the compaction request
    assert m[12].flags == ("compaction_summary",)
    assert m[12].text.startswith("## Goal\nFix the failing test_cart test.")
    assert m[12].usage == Usage(6306, 6300, 210)
    assert [c for c in main.metadata["compactions"]] == [
        {"kind": "compaction", "trigger": "auto", "overflow": None, "pre_tokens": 6104,
         "timestamp": "2025-10-09T08:53:41Z", "summary_seq_index": 12}
    ]  # fmt: skip
    # the messages the summary replaced stay, visible, before it; the prefix starts there
    assert all(x.visible for x in m[:13])
    assert prefix_of(m, 14)[0].seq == 12
    # an aborted turn: the running bash call is answered as OpenCode answers it later
    assert m[14].parts == (
        Part.text("Running the whole suite."),
        Part.call("toolu_05Bash", "bash", {"command": "pytest -q", "description": "Run all tests"}),
    )
    assert m[15].parts == (Part.response("toolu_05Bash", INTERRUPTED, "bash"),)
    assert (m[15].is_error, m[15].flags) == (True, ("turn_aborted",))
    # the ignored text is not sent; a failed request is kept, not visible
    assert m[16].parts == (Part.text("Stop. Just tell me the status."),)
    assert (m[17].visible, m[17].flags, m[17].text) == (False, ("request_error",), "The stat")
    # a message with no step-finish: the message's own tokens
    assert m[18].usage == Usage(6615, 6600, 25)


def test_main_session_metadata(db: Path) -> None:
    (main, child), _ = read_items("opencode", db)
    meta = main.metadata
    assert {k: meta[k] for k in ("title", "slug", "cwd", "project_id", "opencode_version",
                                 "created", "models", "agents", "requests")} == {
        "title": "Fix the failing cart test", "slug": "brave-otter", "cwd": "/home/dev/shop",
        "project_id": "prj_shop", "opencode_version": "1.2.5", "created": "2025-10-09T08:53:20Z",
        "models": ["anthropic/claude-sonnet-4-5"], "agents": ["build", "compaction"],
        "requests": 7,
    }  # fmt: skip
    assert meta["cost_usd"] == 0.1045
    assert meta["token_totals"] == {"cache_read": 39300, "cache_write": 1510, "input": 35,
                                    "output": 715, "reasoning": 0}  # fmt: skip
    assert meta["diff_summary"] == {"additions": 1, "deletions": 1, "files": 1}
    assert meta["pruned_results"] == [
        {"call_id": "toolu_01Read", "compacted_at": "2025-10-09T08:54:10Z"}
    ]
    assert (meta["failed_requests"], meta["aborted_turns"], meta["retries"]) == (1, 1, 1)
    assert meta["skipped_parts"] == {"file_sent_as_text": 1, "ignored_text": 1}
    assert "parent_session_id" not in meta
    assert child.metadata["parent_source_session_id"] == fx.MAIN
    assert child.metadata["parent_call_id"] == "toolu_04Task"
    assert [m.role for m in child.messages] == ["user", "assistant", "tool", "assistant"]


def test_corpus_links_subagent_and_parent(db: Path, tmp_path: Path) -> None:
    import_paths([db], tmp_path / "c", progress=False)
    corpus = Corpus(tmp_path / "c")
    rows = {r["source_session_id"]: r for r in corpus.sessions().to_dicts()}
    main, child = rows[fx.MAIN], rows[fx.CHILD]
    child_meta = (
        json.loads(child["metadata"]) if isinstance(child["metadata"], str) else child["metadata"]
    )
    main_meta = (
        json.loads(main["metadata"]) if isinstance(main["metadata"], str) else main["metadata"]
    )
    assert child_meta["parent_session_id"] == main["session_id"]
    assert main_meta["subagents"] == [
        {"call_id": "toolu_04Task", "source_session_id": fx.CHILD,
         "session_id": child["session_id"]}
    ]  # fmt: skip
    assert (main["n_messages"], main["n_tool_calls"], main["n_tool_results"]) == (19, 5, 5)
    assert main["tokens"] > 0 and main["n_visible_messages"] == 18
    loaded = corpus.load_session(main["session_id"])
    assert [x.flags for x in loaded if x.flags] == [
        ("generation_retried",),
        ("compaction_summary",),
        ("turn_aborted",),
        ("request_error",),
    ]


def test_compactions_trigger_cuts_before_the_summary(db: Path, tmp_path: Path) -> None:
    import_paths([db], tmp_path / "c", progress=False)
    cases = build_cases(Corpus(tmp_path / "c"), [parse_trigger("compactions")])
    assert cases.height == 1
    row = cases.row(0, named=True)
    assert (row["cut"], row["future_start"], row["prefix_messages"]) == (12, 13, 12)


# --- the export --------------------------------------------------------------------------------


def test_export_import(tmp_path: Path) -> None:
    summary = import_paths([EXPORT], tmp_path / "c", progress=False)
    assert (summary.sessions, summary.rejects, summary.records) == (1, 0, 18)
    assert dict(summary.skipped) == {"part_of_session": 17}
    accounted(summary)
    (s,), _ = read_items("opencode", EXPORT)
    assert s.source_session_id == "ses_4e9d8c7b6a5fExportSession01"
    assert [m.role for m in s.messages] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
    call, grep, read = s.messages[1], s.messages[2], s.messages[3]
    assert call.parts == (
        Part("reasoning", content="Search for TODO markers, then read the image."),
        Part.call("call_Gx1", "grep", {"pattern": "TODO", "path": "/home/dev/notes"}),
        Part.call("call_Rd2", "read", {"filePath": "/home/dev/notes/diagram.png"}),
    )
    assert call.usage == Usage(400, 0, 60)
    assert grep.parts[0].content.startswith("Found 2 matches")
    assert read.parts == (
        Part.response("call_Rd2", "Image read successfully", "read"),
        Part("blob", content=fx.PNG, mime_type="image/png", modality="image"),
    )
    assert s.messages[6].usage == Usage(760, 700, 8)
    assert s.metadata["todos"] == 1
    assert s.metadata["token_totals"]["reasoning"] == 64
    assert s.metadata["opencode_version"] == "1.1.20"


def _export_of_main() -> dict[str, Any]:
    """The main fixture session as ``opencode export`` prints it."""
    messages = []
    for mid, sid, info, parts in fx.MAIN_MESSAGES:
        messages.append({
            "info": {"id": mid, "sessionID": sid, **info},
            "parts": [{"id": f"prt_{mid[4:]}{k:02d}", "sessionID": sid, "messageID": mid, **p}
                      for k, p in enumerate(parts)],
        })  # fmt: skip
    s = fx.SESSIONS[0]
    info = {"id": s["id"], "slug": s["slug"], "projectID": s["project_id"], "directory": s["directory"],
            "title": s["title"], "version": s["version"],
            "time": {"created": s["time_created"], "updated": s["time_updated"]}}  # fmt: skip
    return {"info": info, "messages": messages, "todos": []}


def test_a_session_read_from_the_database_and_an_export_is_one(db: Path, tmp_path: Path) -> None:
    export = tmp_path / "main.json"
    export.write_text(json.dumps(_export_of_main(), indent=2))
    (from_export,), _ = read_items("opencode", export)
    (from_db, _), _ = read_items("opencode", db)
    assert [m.parts for m in from_export.messages] == [m.parts for m in from_db.messages]
    assert [m.usage for m in from_export.messages] == [m.usage for m in from_db.messages]
    summary = import_paths([db, export], tmp_path / "c", progress=False)
    assert summary.sessions == 2
    assert dict(summary.rejected) == {"duplicate_session": 1}
    accounted(summary)


def test_roundtrip_through_export(db: Path, tmp_path: Path) -> None:
    a, b, _, _ = roundtrip([db, EXPORT], tmp_path, sessions=3)
    assert_same_tables(a, b)


# --- bad input ---------------------------------------------------------------------------------


def test_damaged_rows_are_rejected_alone(bad_db: Path, tmp_path: Path) -> None:
    sessions, rejects = read_items("opencode", bad_db)
    (s,) = sessions
    assert s.source_session_id == fx.BAD
    assert [m.text for m in s.messages] == ["List the files.", "Here they are: a.py, b.py."]
    assert s.metadata["rejected_records"] == 3
    got = [(r.reason, r.record, r.json_path, r.session_id) for r in rejects]
    assert got == [
        ("invalid_json", 3, "$.data", fx.BAD),
        ("wrong_type", 9, "$.data.callID", fx.BAD),
        ("invalid_utf8", 10, "$.data.text", fx.BAD),
        ("empty_session", 11, "$", fx.EMPTY),
        ("malformed", 14, "$", "ses_deleted"),
        ("malformed", 15, "$", fx.BAD),
    ]
    # each reject keeps its row, column by column, as JSON (a row's text exactly as stored)
    with sqlite3.connect(bad_db) as conn:
        conn.text_factory = bytes
        row = conn.execute("SELECT * FROM message WHERE id = 'msg_b002'").fetchone()
    cut = json.loads(rejects[0].raw)
    assert cut["data"].encode() == row[4] == b'{"role": "assistant", "time": {"cre'
    assert b"\xff\xfe" in rejects[2].raw  # undecodable bytes kept as they were
    assert rejects[3].detail == "the session has no messages"
    assert "its session row is missing" in rejects[4].detail
    summary = import_paths([bad_db], tmp_path / "c", progress=False)
    assert (summary.sessions, summary.rejects, summary.records) == (1, 6, 16)
    # the good rows of the session, the part of the unreadable message, the empty session's rows
    assert dict(summary.skipped) == {"part_of_session": 6, "of_rejected_row": 3}
    accounted(summary)


def test_unexpected_schema_is_one_clear_reject(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    script = "CREATE TABLE session (id text); CREATE TABLE message (id text);"
    reject = schema_reject("opencode", path, script, tmp_path / "c")
    assert reject.reason == "malformed"
    assert reject.detail == (
        "not an OpenCode database: it has no table part (its tables: message, session)"
    )
    assert reject.raw == b"CREATE TABLE message (id text);\nCREATE TABLE session (id text);"
    with sqlite3.connect(path) as conn:
        conn.executescript("CREATE TABLE part (id text, message_id text, data text);")
    _, (reject,) = read_items("opencode", path)
    assert reject.detail.startswith("not an OpenCode database: table message has no column ")


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("junk.db", b"not a database at all", "unreadable_file"),
        ("cut.db", b"SQLite format 3\x00" + b"\x00" * 80, "unreadable_file"),
        ("empty.json", b"", "empty_session"),
        ("list.json", b'[{"role": "user"}]', "wrong_type"),
        ("other.json", b'{"info": {"id": "ses_x"}}', "missing_field"),
        ("half.json", b'{"info": {"id": "ses_x"}, "messages": [', "truncated"),
    ],
)
def test_files_that_are_not_opencode_are_rejected(
    tmp_path: Path, name: str, data: bytes, reason: str
) -> None:
    assert file_rejects("opencode", tmp_path / name, data) == [reason]


def test_export_with_damaged_elements(tmp_path: Path) -> None:
    doc = json.loads(EXPORT.read_text())
    doc["messages"][2] = {"info": {"role": "moderator", "id": "msg_x"}, "parts": [{"type": "text"}]}
    doc["messages"][1]["parts"][2]["state"] = "done"  # a tool part whose state is text
    path = tmp_path / "e.json"
    path.write_text(json.dumps(doc))
    (s,), rejects = read_items("opencode", path)
    assert [(r.reason, r.json_path) for r in rejects] == [
        ("wrong_type", "$.messages[1].parts[2].state"),
        ("unknown_role", "$.messages[2].info.role"),
    ]
    assert rejects[0].raw == json.dumps(doc["messages"][1]["parts"][2]).encode()
    assert [m.role for m in s.messages] == ["user", "assistant", "tool", "assistant", "assistant"]
    summary = import_paths([path], tmp_path / "c", progress=False)
    accounted(summary)
    # 18 records: the document, 4 messages, 13 parts; 2 rejected, the bad message's part skipped
    assert summary.records == 18
    assert dict(summary.skipped) == {"part_of_session": 14, "of_rejected_row": 1}


# --- the database is never changed ------------------------------------------------------------


def test_a_live_wal_database_is_read_without_touching_it(db: Path) -> None:
    late = ("msg_z001", fx.MAIN, fx.user(50000), [fx.text("One more question.")])
    (main, _), rejects = read_live_wal("opencode", db, lambda w: fx.insert_messages(w, [late]))
    assert rejects == [] and main.messages[-1].text == "One more question."


def test_a_closed_wal_database_gets_no_side_files(db: Path) -> None:
    assert len(read_closed_wal("opencode", db)) == 2


def test_readonly_database_refuses_writes(db: Path) -> None:
    before = digest(db)
    with readonly_database(db) as conn, pytest.raises(sqlite3.Error):
        conn.execute("DELETE FROM part")
    assert digest(db) == before


# --- property: whatever happens to the rows or bytes, nothing raises and every row counts ------

DAMAGE = RowDamage(
    tables=("session", "message", "part"),
    json_kind="data",
    json_tables=("message", "part"),
    json_columns=("data",),
    json_edits=("delete", "retype"),
    values=(7, -1.5, "", "text", b"\x00\xff", '{"type": 1}', "[]"),
    bad_text=b'{"type": "text", "text": "\xc3\x28"}',
)


test_mutated_databases_never_raise_and_account_for_every_row = damage_test(
    "opencode", "opencode.db", DAMAGE
)


@damage_settings(60)
@given(kind=st.sampled_from(("delete", "retype", "duplicate_id", "orphan_id")),
       seed=st.integers(0, 2**32 - 1))  # fmt: skip
def test_mutated_exports_never_raise_and_account_for_every_element(
    tmp_path_factory: pytest.TempPathFactory, kind: str, seed: int
) -> None:
    doc = json.loads(EXPORT.read_text())
    path = tmp_path_factory.mktemp("exp") / "e.json"
    path.write_text(json.dumps(mutate_record(doc, kind, random.Random(seed))))
    check_read("opencode", path)
