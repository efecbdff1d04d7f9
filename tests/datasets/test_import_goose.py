"""Goose: ``sessions.db`` (built from ``tests/fixtures/goose/make_fixture.py``, Goose's own schema
and message JSON) and the older per-session JSONL files.

Shapes come from Goose's source (block/goose): ``crates/goose/src/session/session_manager.rs``
(tables), ``storage.rs`` / ``legacy.rs`` (JSONL), ``crates/goose/src/conversation/message.rs`` and
``tool_result_serde.rs`` (content items), ``crates/goose/src/context_mgmt/mod.rs`` (compaction).
"""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

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
from ctxreplay.datasets.importers import detect
from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.messages import Part
from ctxreplay.datasets.store import Corpus

from builders import FIXTURES, read_items

FIX = FIXTURES / "goose"
LEGACY = FIX / "20250301_101500.jsonl"
LEGACY_BAD = FIX / "20250302_090000-bad.jsonl"
fx = load_fixture("goose")
db, bad_db = database_fixtures("goose", "sessions.db", "sessions-bad.db")


# --- detection ---------------------------------------------------------------------------------


def test_fixtures_are_detected(db: Path, bad_db: Path) -> None:
    for path in (db, bad_db, LEGACY, LEGACY_BAD):
        assert detect(path) == "goose"


def test_other_formats_fixtures_are_not_taken_for_goose() -> None:
    others_are_not("goose")


# --- the database ------------------------------------------------------------------------------


def test_database_import_accounts_for_every_row(db: Path, tmp_path: Path) -> None:
    summary = import_paths([db], tmp_path / "c", progress=False)
    assert (summary.sessions, summary.rejects, summary.records) == (2, 0, 22)
    assert dict(summary.skipped) == {"part_of_session": 20}
    accounted(summary)


def test_main_session_messages(db: Path) -> None:
    (main, _), rejects = read_items("goose", db)
    assert rejects == []
    assert (main.source_session_id, main.key) == ("20251020_1", "20251020_1:1760954400")
    m = main.messages
    assert [x.role for x in m] == ["user", "assistant"] * 8
    assert m[0].parts == (Part.text("The login test is flaky. Find out why."),)
    assert m[0].timestamp == "2025-10-20T10:00:00Z"
    assert m[1].parts == (
        Part.text("Let me find the test."),
        Part.call("toolu_01", "developer__shell", {"command": "rg -n 'def test_login' tests"}),
    )
    # the user-only copy of the output is not what the model read
    assert m[2].parts == (
        Part.response(
            "toolu_01", "tests/test_auth.py:14:def test_login(client):", "developer__shell"
        ),
    )
    error = (
        "-32602: Could not interpret tool use parameters for id toolu_03: missing field `command`"
    )
    assert m[3].parts == (
        Part("reasoning", content="It probably sleeps before the token refresh."),
        Part.call("toolu_02", "developer__text_editor",
                  {"command": "view", "path": "/home/dev/api/tests/test_auth.py"}),
        Part("tool_call", id="toolu_03", arguments=error),
    )  # fmt: skip
    assert m[3].flags == ("arguments_not_json",)
    assert m[4].parts[1] == Part.response("toolu_03", error)
    assert m[4].is_error
    assert m[6].parts == (
        Part.text("Fix it. Here is the CI screenshot."),
        Part("blob", content=fx.PNG, mime_type="image/png", modality="image"),
    )
    # the system notification was shown to the user only
    assert (m[9].visible, m[9].text) == (False, "Context is 82% full: compacting the conversation")


def test_compaction(db: Path, tmp_path: Path) -> None:
    (main, _), _ = read_items("goose", db)
    m = main.messages
    # what the compaction took out of the agent's context stays visible before the summary
    assert [x.visible for x in m] == [True] * 9 + [False] + [True] * 6
    assert m[10].flags == ("compaction_summary",)
    assert m[10].text.startswith("## Conversation summary\nThe user reported a flaky test_login.")
    assert m[11].text == fx.TOOL_LOOP
    assert m[12].parts == (Part.text("Fix it. Here is the CI screenshot."),)  # preserved
    assert main.metadata["compactions"] == [
        {"kind": "compaction", "trigger": "auto", "pre_tokens": None,
         "timestamp": "2025-10-20T10:01:10Z", "summary_seq_index": 10}
    ]  # fmt: skip
    assert main.metadata["compacted_messages"] == 9
    visible = [x for x in m if x.visible]
    assert prefix_of(visible, 13)[0].seq == 10
    import_paths([db], tmp_path / "c", progress=False)
    cases = build_cases(Corpus(tmp_path / "c"), [parse_trigger("compactions")])
    assert cases.height == 1
    assert (cases["cut"][0], cases["future_start"][0]) == (10, 11)


def test_session_metadata(db: Path, tmp_path: Path) -> None:
    (main, sub), _ = read_items("goose", db)
    assert main.metadata == {
        "name": "Fix flaky login test", "cwd": "/home/dev/api", "session_type": "user",
        "created": "2025-10-20 10:00:00", "updated": "2025-10-20 10:01:22",
        "provider": "anthropic", "model": "claude-sonnet-4-5", "context_limit": 200000,
        "session_tokens": {"total_tokens": 18211, "input_tokens": 17000, "output_tokens": 1211,
                           "accumulated_total_tokens": 130322, "accumulated_input_tokens": 126000,
                           "accumulated_output_tokens": 4322},
        "storage": "sqlite",
        "compactions": main.metadata["compactions"],
        "ui_items": {"systemNotification": 1}, "ui_messages": 1, "user_only_content": 3,
        "compacted_messages": 9,
    }  # fmt: skip
    assert (sub.metadata["session_type"], sub.metadata["model"]) == ("sub_agent", "gpt-4o")
    assert sub.messages[2].parts == (
        Part.response("call_r1", "# api\nA small auth service.", "developer__text_editor"),
    )
    import_paths([db], tmp_path / "c", progress=False)
    rows = {r["source_session_id"]: r for r in Corpus(tmp_path / "c").sessions().to_dicts()}
    row = rows["20251020_1"]
    assert (row["n_messages"], row["n_visible_messages"], row["n_tool_calls"]) == (16, 15, 5)
    assert row["n_tool_results"] == 5 and row["tokens"] > 0


# --- the JSONL files ---------------------------------------------------------------------------


def test_legacy_jsonl(tmp_path: Path) -> None:
    summary = import_paths([LEGACY], tmp_path / "c", progress=False)
    assert (summary.sessions, summary.rejects, summary.records) == (1, 0, 8)
    assert dict(summary.skipped) == {"part_of_session": 7}
    accounted(summary)
    (s,), _ = read_items("goose", LEGACY)
    assert (s.source_session_id, s.key) == ("20250301_101500", "20250301_101500:1740823000")
    assert [m.role for m in s.messages] == ["user", "assistant", "user", "assistant", "user",
                                            "assistant", "assistant"]  # fmt: skip
    # older sessions: the tool result's value is the content list itself
    assert s.messages[2].parts == (
        Part.response("toolu_A1", "hello-world.md\nsecond-post.md", "developer__shell"),
    )
    assert s.messages[4].parts == (
        Part.response("toolu_A2", "Successfully wrote to /home/dev/blog/feed.py",
                      "developer__text_editor"),
    )  # fmt: skip
    notice = s.messages[6]
    assert notice.visible is False and notice.text.startswith("The context length of the model")
    assert s.metadata == {
        "name": "Add RSS feed", "cwd": "/home/dev/blog", "message_count": 7,
        "session_tokens": {"total_tokens": 9120, "input_tokens": 8700, "output_tokens": 420,
                           "accumulated_total_tokens": 15555, "accumulated_input_tokens": 14600,
                           "accumulated_output_tokens": 955},
        "storage": "jsonl", "ui_items": {"contextLengthExceeded": 1}, "ui_messages": 1,
        "user_only_content": 1,
    }  # fmt: skip


def test_a_session_migrated_into_the_database_is_one(tmp_path: Path) -> None:
    """Goose imports its JSONL sessions into sessions.db with their id and messages."""
    lines = [json.loads(x) for x in LEGACY.read_text().splitlines()]
    path = tmp_path / "sessions.db"
    conn = sqlite3.connect(path)
    conn.executescript(fx.SCHEMA)
    conn.execute("INSERT INTO sessions (id, name, working_dir) VALUES ('20250301_101500', "
                 "'Add RSS feed', '/home/dev/blog')")  # fmt: skip
    for m in lines[1:]:
        conn.execute(
            "INSERT INTO messages (session_id, role, content_json, created_timestamp, "
            "metadata_json) VALUES ('20250301_101500', ?, ?, ?, ?)",
            (m["role"], json.dumps(m["content"]), m["created"], json.dumps(fx.BOTH)),
        )
    conn.commit()
    conn.close()
    (from_db,), _ = read_items("goose", path)
    (from_jsonl,), _ = read_items("goose", LEGACY)
    assert from_db.key == from_jsonl.key
    assert [m.parts for m in from_db.messages] == [m.parts for m in from_jsonl.messages]
    summary = import_paths([path, LEGACY], tmp_path / "c", progress=False)
    assert (summary.sessions, dict(summary.rejected)) == (1, {"duplicate_session": 1})
    accounted(summary)


def test_roundtrip_through_export(db: Path, tmp_path: Path) -> None:
    a, b, _, _ = roundtrip([db, LEGACY], tmp_path, sessions=3)
    assert_same_tables(a, b)


# --- bad input ---------------------------------------------------------------------------------


def test_damaged_rows_are_rejected_alone(bad_db: Path, tmp_path: Path) -> None:
    (s,), rejects = read_items("goose", bad_db)
    assert s.source_session_id == "20251022_1"
    assert [m.text for m in s.messages] == ["What changed?", "Two files changed: a.py and b.py."]
    assert s.metadata["rejected_records"] == 3
    assert [(r.reason, r.record, r.json_path, r.session_id) for r in rejects] == [
        ("invalid_json", 2, "$.content_json", "20251022_1"),
        ("unknown_role", 3, "$.role", "20251022_1"),
        ("wrong_type", 4, "$.content_json", "20251022_1"),
        ("invalid_utf8", 7, "$.content_json[0].text", "20251022_2"),
        ("empty_session", 6, "$", "20251022_2"),
        ("malformed", 8, "$.session_id", "20251022_9"),
    ]
    row = json.loads(rejects[0].raw)
    assert (row["id"], row["role"], row["content_json"]) == (
        2,
        "assistant",
        '[{"type": "text", "text": "Two fi',
    )
    assert b"\xff\xfe" in rejects[3].raw
    summary = import_paths([bad_db], tmp_path / "c", progress=False)
    assert (summary.sessions, summary.rejects, summary.records) == (1, 6, 9)
    assert dict(summary.skipped) == {"part_of_session": 2}
    accounted(summary)


def test_damaged_jsonl_lines_are_rejected_alone(tmp_path: Path) -> None:
    (s,), rejects = read_items("goose", LEGACY_BAD)
    assert [(r.reason, r.record, r.line, r.json_path) for r in rejects] == [
        ("invalid_json", 2, 3, "$"),
        ("unknown_role", 3, 4, "$.role"),
    ]
    assert rejects[0].raw == LEGACY_BAD.read_bytes().splitlines()[2]
    assert [m.text for m in s.messages] == [
        "Count the posts.",
        "There are two posts.",
        "Summarize the session to free context?",
    ]
    assert s.messages[2].visible is False
    assert s.metadata["rejected_records"] == 2
    summary = import_paths([LEGACY_BAD], tmp_path / "c", progress=False)
    assert (summary.sessions, summary.rejects, summary.records) == (1, 2, 6)
    accounted(summary)


def test_a_jsonl_whose_first_message_is_damaged(tmp_path: Path) -> None:
    lines = LEGACY.read_text().splitlines()
    path = tmp_path / "20250301_101500.jsonl"
    path.write_text("\n".join([lines[1][:-10], *lines[2:]]) + "\n")  # no metadata, first cut
    (s,), rejects = read_items("goose", path)
    assert [r.reason for r in rejects] == ["invalid_json"]
    assert s.source_record == 1 and len(s.messages) == 6
    summary = import_paths([path], tmp_path / "c", progress=False)
    assert (summary.records, dict(summary.skipped)) == (7, {"part_of_session": 5})
    accounted(summary)


def test_unexpected_schema_is_one_clear_reject(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    script = "CREATE TABLE sessions (id TEXT); CREATE TABLE messages (id INTEGER);"
    reject = schema_reject("goose", path, script, tmp_path / "c")
    assert (reject.reason, reject.detail) == (
        "malformed",
        "not a Goose database: table messages has no column session_id, role, content_json "
        "(its columns: id)",
    )
    assert reject.raw == b"CREATE TABLE messages (id INTEGER);\nCREATE TABLE sessions (id TEXT);"


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("junk.db", b"not a database", "unreadable_file"),
        ("cut.db", b"SQLite format 3\x00" + b"\x01" * 100, "unreadable_file"),
        ("empty.jsonl", b"", "empty_session"),
    ],
)
def test_files_that_are_not_goose_are_rejected(
    tmp_path: Path, name: str, data: bytes, reason: str
) -> None:
    assert file_rejects("goose", tmp_path / name, data) == [reason]


# --- the database is never changed ------------------------------------------------------------


def test_a_live_wal_database_is_read_without_touching_it(db: Path) -> None:
    late = [("user", 3700, [fx.text("And the LICENSE?")], fx.BOTH)]
    (_, sub), rejects = read_live_wal("goose", db, lambda w: fx.insert(w, "20251020_2", late))
    assert rejects == [] and sub.messages[-1].text == "And the LICENSE?"


def test_a_closed_wal_database_gets_no_side_files(db: Path) -> None:
    assert len(read_closed_wal("goose", db)) == 2


# --- property: whatever happens to the rows, lines or bytes, nothing raises, all is counted ---

DAMAGE = RowDamage(
    tables=("sessions", "messages"),
    json_kind="content",
    json_tables=("messages",),
    json_columns=("content_json", "metadata_json"),
    json_edits=("delete", "retype", "orphan_id"),
    values=(7, -1.5, "", "text", b"\x00\xff", '{"type": 1}', "[]", "[{}]"),
    bad_text=b'[{"type": "text", "text": "\xc3\x28"}]',
)


test_mutated_databases_never_raise_and_account_for_every_row = damage_test(
    "goose", "sessions.db", DAMAGE
)


@damage_settings(80)
@given(kind=st.sampled_from(("delete", "retype", "duplicate_id", "orphan_id", "drop", "cut")),
       seed=st.integers(0, 2**32 - 1))  # fmt: skip
def test_mutated_jsonl_never_raises_and_accounts_for_every_line(
    tmp_path_factory: pytest.TempPathFactory, kind: str, seed: int
) -> None:
    rng = random.Random(seed)
    lines = LEGACY.read_text().splitlines()
    k = rng.randrange(len(lines))
    if kind == "drop":
        del lines[k]
    elif kind == "cut":
        lines[k] = lines[k][: rng.randrange(len(lines[k]))]
    else:
        lines[k] = json.dumps(mutate_record(json.loads(lines[k]), kind, rng))
    path = tmp_path_factory.mktemp("jsonl") / "20250301_101500.jsonl"
    path.write_text("\n".join(lines) + "\n")
    check_read("goose", path)
