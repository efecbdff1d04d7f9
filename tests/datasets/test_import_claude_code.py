"""Claude Code session logs: hand-written fixtures (branches, sub-agents, both compaction styles,
split responses, bookkeeping records) and the public ``~/.claude/projects`` backups."""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ctxreplay.datasets.importers import MIN_SCORE, detect, get_importer, importers
from ctxreplay.datasets.importers.sniffing import SNIFF_BYTES
from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.messages import Message, Part, Session, Usage
from ctxreplay.datasets.store import Corpus, session_id_for
from ctxreplay.replay.view import view_problems

from builders import FIXTURES, corpus_path, read_items

CC = FIXTURES / "claude-code"
FMT = "claude-code"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
S = "5f0c1d2e-0000-4000-8000-00000000000"  # fixture session ids: S + "1" ... S + "5"


def _read(name: str) -> tuple[list[Session], Any]:
    importer = get_importer(FMT)
    items = list(importer.read(CC / name))
    assert all(isinstance(i, Session) for i in items), items
    return [i for i in items if isinstance(i, Session)], importer


def _shape(m: Message) -> tuple[str, bool, tuple[str, ...], str]:
    return m.role, m.visible, m.flags, m.text


def _sid(key: str) -> str:
    return session_id_for(Session(FMT, key, [], key=key))


# --- detection ---------------------------------------------------------------------------------


def test_fixtures_are_detected_and_other_formats_are_not_taken() -> None:
    for f in sorted(CC.iterdir()):
        assert detect(f) == FMT, f.name
    sniffer = get_importer(FMT)
    for f in sorted(FIXTURES.rglob("*")):
        if f.is_file() and f.parent != CC and "claude-code-2x" not in f.parts:
            head = f.read_bytes()[:SNIFF_BYTES]
            assert sniffer.sniff(f, head) <= MIN_SCORE, f


# --- one session: content blocks, split responses, bookkeeping ------------------------------------


def test_content_blocks_and_split_responses() -> None:
    (s,), importer = _read("session.jsonl")
    assert (s.source_session_id, s.key, s.workload) == (S + "1", S + "1", "claude-code")
    assert s.session_id is None and s.source_record == 2
    m = s.messages
    assert [_shape(x)[:3] for x in m] == [
        ("user", True, ("cli_meta",)),
        ("user", True, ()),
        ("assistant", True, ()),
        ("user", True, ()),
        ("user", True, ()),
        ("assistant", True, ()),
        ("user", True, ()),
        ("user", True, ("turn_aborted",)),
        ("user", True, ()),
        ("assistant", True, ()),
    ]
    # four records of one response (thinking, text, two tool calls) are one message
    assert m[2].parts == (
        Part("reasoning", content="Look at cart.py first."),
        Part.text("Reading the code."),
        Part.call("toolu_1", "Read", {"file_path": "cart.py"}),
        Part.call("toolu_2", "Bash", {"command": "pytest -q"}),
    )
    # usage of the response's last record; the prompt counts cache reads and writes
    assert m[2].usage == Usage(prompt_tokens=2004, cached_tokens=800, completion_tokens=90)
    assert m[2].source_path == "line 5" and m[2].timestamp == "2025-06-01T10:02:00.000Z"
    assert m[3].parts == (
        Part.response("toolu_1", "def total(items):\n    return sum(items)\n", "Read"),
    )
    assert (m[3].is_error, m[4].is_error) == (False, True)
    assert m[4].parts == (Part.response("toolu_2", "1 failed", "Bash"),)
    assert m[6].parts == (
        Part.text("Here is the screenshot."),
        Part("blob", content=PNG, mime_type="image/png", modality="image"),
    )
    assert m[7].text == "[Request interrupted by user]"
    assert [x.usage is None for x in m] == [x.role == "user" for x in m]
    meta = s.metadata
    assert meta["titles"] == [
        {"title": "Fix the cart total", "leaf_uuid": "s-14", "resolves": True},
        {"title": "Some other session", "leaf_uuid": "elsewhere-9", "resolves": False},
    ]
    assert meta["skipped_records"] == {
        "file-history-snapshot": 1,
        "summary": 2,
        "system:stop_hook_summary": 1,
    }
    assert meta["tool_results"] == {
        "toolu_1": {
            "type": "dict",
            "bytes": 121,
            "keys": ["type", "file"],
            "values": {"type": "text"},
        },
        "toolu_2": {"type": "str", "bytes": 17, "value": "Error: 1 failed"},
    }
    assert meta["cost_usd"] == 0.055
    assert meta["models"] == ["claude-sonnet-4-20250514"] and meta["versions"] == ["1.0.17"]
    assert (meta["cwd"], meta["git_branches"]) == ("/home/dev/shop", ["main"])
    assert meta["records"] == [2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15]
    # 17 lines: the session (line 3), 12 more message lines, 4 bookkeeping lines
    assert importer.tally.seen == 17
    assert dict(importer.tally.skipped) == {"part_of_session": 12, "no_message": 4}
    assert sorted(importer.ignored_records) == [0, 1, 10, 16]


# --- branches --------------------------------------------------------------------------------


def test_an_edited_and_a_retried_turn_leave_abandoned_branches() -> None:
    (s,), importer = _read("branches.jsonl")
    A = "abandoned_branch"
    assert [_shape(m) for m in s.messages] == [
        ("user", True, (), "Name a prime."),
        ("assistant", True, (), "7"),
        # the branch the edit left, right after the message it branched from
        ("user", False, (A,), "A bigger one."),
        ("assistant", False, (A,), "11"),
        ("user", False, (A,), "Bigger still."),
        ("assistant", False, (A,), "13"),
        ("user", True, (), "An even one."),  # the edited turn
        ("assistant", False, ("api_error", A), "API Error: Request was aborted."),  # retried
        ("assistant", True, ("unknown_event_kind",), "2"),  # before an unknown record
    ]
    assert [m.source_path for m in s.messages] == [f"line {n}" for n in range(1, 10)]
    meta = s.metadata
    assert meta["abandoned_messages"] == 5
    assert meta["models"] == ["claude-sonnet-4-20250514", "<synthetic>"]
    assert meta["skipped_records"] == meta["unknown_records"] == {"hologram": 1}
    assert dict(importer.tally.skipped) == {"part_of_session": 8, "no_message": 1}


# --- sub-agents ------------------------------------------------------------------------------


def test_sidechains_in_the_parent_file_are_sessions_linked_to_their_calls() -> None:
    (main, old, new), _ = _read("sidechain.jsonl")
    key = S + "3"
    assert [s.key for s in (main, old, new)] == [key, f"{key}/agent/q-01", f"{key}/agent/ag7"]
    assert [s.workload for s in (main, old, new)] == ["claude-code"] + ["claude-code/subagent"] * 2
    assert [m.text for m in main.messages if m.role == "assistant"][
        -1
    ] == "pricing.py applies a 20% tax twice."
    assert [(m.role, [p.type for p in m.parts]) for m in old.messages] == [
        ("user", ["text"]),
        ("assistant", ["tool_call"]),
        ("user", ["tool_call_response"]),
        ("assistant", ["text"]),
    ]
    # old versions: the sub-agent's first message is the prompt of the Task call
    assert {
        k: old.metadata.get(k)
        for k in ("parent_session_id", "parent_source_session_id", "parent_call_id", "agent_id")
    } == {
        "parent_session_id": _sid(key),
        "parent_source_session_id": key,
        "parent_call_id": "toolu_T1",
        "agent_id": None,
    }
    # newer: the Task result names the agent
    assert (new.metadata["parent_call_id"], new.metadata["agent_id"]) == ("toolu_T2", "ag7")
    assert main.metadata["subagents"] == [
        {"agent_id": None, "call_id": "toolu_T1", "session_id": _sid(f"{key}/agent/q-01")},
        {"agent_id": "ag7", "call_id": "toolu_T2", "session_id": _sid(f"{key}/agent/ag7")},
    ]
    assert main.metadata["tool_results"]["toolu_T1"]["values"]["totalTokens"] == 900


def test_a_project_level_agent_file_names_a_parent_in_another_file(tmp_path: Path) -> None:
    (agent,), _ = _read("agent-a1b2c3d.jsonl")
    assert agent.key == f"{S}1/agent/a1b2c3d"
    assert agent.metadata["warmup"] is True and agent.metadata["agent_id"] == "a1b2c3d"
    assert agent.metadata.get("parent_call_id") is None
    assert [_shape(m) for m in agent.messages] == [
        ("user", True, (), "Warmup"),
        ("assistant", True, (), "Ready to search the codebase."),
    ]
    import_paths([CC / "session.jsonl", CC / "agent-a1b2c3d.jsonl"], tmp_path / "c", progress=False)
    rows = {r["source_session_id"]: r for r in Corpus(tmp_path / "c").sessions().to_dicts()}
    parent = json.loads(rows[agent.key]["metadata"])["parent_session_id"]
    assert parent == rows[S + "1"]["session_id"]  # the parent's corpus id, computed from its key


# --- compactions ----------------------------------------------------------------------------------


def test_a_compaction_in_place_keeps_its_boundary_and_flags_its_summary() -> None:
    (s,), importer = _read("compacted.jsonl")
    assert [_shape(m)[:3] for m in s.messages] == [
        ("user", True, ()),
        ("assistant", True, ()),
        ("user", True, ()),
        ("assistant", True, ()),
        ("user", True, ("compaction_summary",)),  # continues the pre-compaction leaf
        ("user", True, ("local_command",)),
        ("user", True, ()),
        ("assistant", True, ()),
    ]
    assert (
        s.messages[5].text
        == "<command-name>/cost</command-name>\n<command-message>cost</command-message>"
    )
    meta = s.metadata
    assert meta["compactions"] == [
        {"kind": "compact_boundary", "trigger": "auto", "pre_tokens": 155000,
         "timestamp": "2025-06-01T10:04:00.000Z", "summary_seq_index": 4}
    ]  # fmt: skip
    assert meta["skipped_records"] == {
        "ai-title": 1,
        "attachment:deferred_tools_delta": 1,
        "permission-mode": 1,
        "queue-operation": 1,
        "system:compact_boundary": 1,
        "system:turn_duration": 1,
    }
    assert meta["ai_titles"] == ["Refactor billing"] and meta["duplicate_uuids"] == 1
    assert dict(importer.tally.skipped) == {
        "part_of_session": 7,
        "no_message": 6,
        "duplicate_record": 1,
    }


def test_an_old_style_continued_session_flags_its_first_message() -> None:
    (s,), _ = _read("continued.jsonl")
    assert s.key == S + "5"  # the newest record's session; the copied records' session
    assert s.metadata["continues"] == [S + "f"]
    assert [_shape(m)[:3] for m in s.messages] == [
        ("user", True, ("compaction_summary",)),
        ("assistant", True, ()),
        ("user", True, ()),
        ("assistant", True, ()),
    ]
    assert s.metadata["compactions"] == [
        {"kind": "continued_session", "trigger": None, "pre_tokens": None,
         "timestamp": "2025-06-01T10:00:00.000Z", "summary_seq_index": 0}
    ]  # fmt: skip


# --- files without a conversation, and accounting -----------------------------------------------


def test_empty_and_summary_only_files_are_one_reject_each(tmp_path: Path) -> None:
    """A projects folder as on disk: the fixtures plus an empty log."""
    folder = tmp_path / "projects"
    shutil.copytree(CC, folder)
    (folder / "empty.jsonl").write_bytes(b"")
    summary = import_paths([folder], tmp_path / "c", progress=False)
    assert (summary.sessions, dict(summary.rejected)) == (
        9,
        {"empty_session": 1, "empty_file": 1},
    )
    corpus = Corpus(tmp_path / "c")
    rejects = {Path(r["source_location"]).name: r for r in corpus.rejects().to_dicts()}
    titles = rejects["summaries.jsonl"]
    assert titles["detail"] == "no conversation in the file, only bookkeeping records: 2 summary"
    assert titles["raw"] == (CC / "summaries.jsonl").read_bytes() and titles["record"] is None
    assert rejects["empty.jsonl"]["reason"] == "empty_file"  # an empty file: its own reason
    sources = {Path(s["path"]).name: s for s in corpus.manifest["sources"]}
    assert sources["summaries.jsonl"]["records"] == 2
    assert sources["summaries.jsonl"]["skipped"] == {"no_message": 1}
    for name, s in sources.items():
        lines = sum(1 for x in (folder / name).read_text().splitlines() if x.strip())
        assert s["records"] == max(lines, 1), name
        assert s["records"] == s["sessions"] + s["rejects"] + sum(s["skipped"].values()), name
    forced = import_paths([folder / "empty.jsonl"], tmp_path / "e", fmt=FMT, progress=False)
    assert dict(forced.rejected) == {"empty_session": 1}


def test_the_same_session_in_two_files_is_a_duplicate(tmp_path: Path) -> None:
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        shutil.copy(CC / "session.jsonl", tmp_path / folder / "session.jsonl")
    summary = import_paths([tmp_path / "a", tmp_path / "b"], tmp_path / "c", progress=False)
    assert (summary.sessions, dict(summary.rejected)) == (1, {"duplicate_session": 1})


def _line(sid: str, uuid: str, parent: str | None, kind: str, content: Any, **extra: Any) -> str:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message["id"] = f"msg-{uuid}"
    record = {"parentUuid": parent, "isSidechain": False, "sessionId": sid, "type": kind,
              "message": message, "uuid": uuid, "timestamp": "2025-06-01T10:00:00Z", **extra}  # fmt: skip
    return json.dumps(record) + "\n"


def test_two_trees_of_one_session_follow_each_other(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(
        _line("one", "a1", None, "user", "first")
        + _line("one", "a2", "a1", "assistant", [{"type": "text", "text": "ok"}])
        + _line("two", "z1", None, "user", "other session")
        + _line("one", "b1", None, "user", "after /clear")
        + _line("one", "b2", "b1", "assistant", [{"type": "text", "text": "fresh"}])
    )
    (one, two), _ = read_items(FMT, path)
    assert [m.text for m in one.messages] == ["first", "ok", "after /clear", "fresh"]
    assert one.metadata["roots"] == [0, 2] and one.metadata["records"] == [0, 1, 3, 4]
    assert (two.key, [m.text for m in two.messages]) == ("two", ["other session"])


def test_a_bad_record_rejects_its_session_and_a_misplaced_one_itself(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(
        _line("one", "a1", None, "user", "first")
        + _line("one", "a2", "a1", "assistant", 42)
        + _line("one", "a3", "a2", "user", "more")
        + _line("two", "z1", None, "user", "fine")
        + json.dumps(
            {"type": "user", "sessionId": "two", "message": {"role": "user", "content": "?"}}
        )
        + "\n"
    )
    sessions, rejects = read_items(FMT, path)
    assert [s.key for s in sessions] == ["two"]
    assert [(r.line, r.reason, r.json_path, r.session_id) for r in rejects] == [
        (5, "missing_field", "$", "two"),  # no uuid: it cannot be placed, it goes alone
        (1, "wrong_type", "$", "one"),
        (2, "wrong_type", "$.message.content", "one"),
        (3, "wrong_type", "$", "one"),
    ]
    assert rejects[1].detail.startswith("its session one was rejected (line 2)")
    assert rejects[2].raw == path.read_text().splitlines()[1].encode()


def test_a_parent_cycle_is_cut(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(
        _line("c", "a1", "a2", "user", "first") + _line("c", "a2", "a1", "user", "second")
    )
    (s,), _ = read_items(FMT, path)
    assert [m.text for m in s.messages] == ["first", "second"] and s.metadata["cycles_cut"] == 1


# --- the public Claude Code backups ---------------------------------------------------------------


def _public_files() -> list[Path]:
    root = corpus_path("claude-code")
    return sorted(Path(d) / f for d, _, fs in os.walk(root) for f in fs if f.endswith(".jsonl"))


def _independent(files: list[Path]) -> dict[str, int]:
    """What the public logs hold, counted with plain json: every log has one main conversation
    and no branch; each sub-agent starts at a parentless sidechain record; an assistant message
    is the records of one ``message.id``."""
    out: Counter[str] = Counter()
    for f in files:
        records = [json.loads(x) for x in f.read_text().splitlines() if x.strip()]
        out["lines"] += max(len(records), 1)
        talk = [r for r in records if r["type"] in ("user", "assistant")]
        local = [
            r for r in records if r["type"] == "system" and r.get("subtype") == "local_command"
        ]
        out["main"] += any(not r["isSidechain"] for r in talk)
        out["sub"] += sum(1 for r in talk if r["isSidechain"] and r["parentUuid"] is None)
        out["messages"] += sum(r["type"] == "user" for r in talk) + len(local)
        out["messages"] += len({r["message"]["id"] for r in talk if r["type"] == "assistant"})
        out["api_errors"] += len(
            {
                r["message"]["id"]
                for r in talk
                if r["type"] == "assistant" and r.get("isApiErrorMessage")
            }
        )
        blocks = [
            b
            for r in talk
            if isinstance(r["message"]["content"], list)
            for b in r["message"]["content"]
        ]
        out["tool_calls"] += sum(b["type"] == "tool_use" for b in blocks)
        out["tool_results"] += sum(b["type"] == "tool_result" for b in blocks)
        out["compaction_records"] += sum(
            bool(r.get("isCompactSummary")) or r.get("subtype") == "compact_boundary"
            for r in records
        )
    return dict(out)


@pytest.mark.corpora
def test_public_logs_import_with_independent_counts(tmp_path: Path) -> None:
    files = _public_files()
    expected = _independent(files)
    summary = import_paths([corpus_path("claude-code")], tmp_path / "c", progress=False)
    corpus = Corpus(tmp_path / "c")
    rows = corpus.sessions()
    by_workload = Counter(rows["workload"].to_list())
    assert dict(by_workload) == {
        "claude-code": expected["main"],
        "claude-code/subagent": expected["sub"],
    }
    assert (expected["main"], expected["sub"]) == (60, 30)
    assert rows["n_messages"].sum() == expected["messages"]
    # the CLI's records of failed requests are kept, not visible
    assert expected["api_errors"] > 0
    assert rows["n_visible_messages"].sum() == expected["messages"] - expected["api_errors"]
    assert rows["n_tool_calls"].sum() == expected["tool_calls"]
    assert rows["n_tool_results"].sum() == expected["tool_results"]
    # every line accounted: sessions + rejects + skipped
    assert summary.records == expected["lines"] and summary.unaccounted == 0
    for s in corpus.manifest["sources"]:
        assert s["format"] == (None if Path(s["path"]).stat().st_size == 0 else FMT), s
        assert s["records"] == s["sessions"] + s["rejects"] + sum(s["skipped"].values())
    # the empty file (no format) and the two summary-only files
    assert dict(summary.rejected) == {"empty_file": 1, "empty_session": 2}
    # the public logs record no compaction: no summary or boundary record, no flagged message
    assert expected["compaction_records"] == 0
    flags = corpus.messages()["flags"].explode().drop_nulls().to_list()
    assert "compaction_summary" not in flags and "abandoned_branch" not in flags


@pytest.mark.corpora
def test_public_logs_are_claude_code_and_nothing_else_is() -> None:
    for f in _public_files():
        assert detect(f) == (None if f.stat().st_size == 0 else FMT), f
    sniffer = get_importer(FMT)
    for folder in sorted(
        p for p in corpus_path().iterdir() if p.is_dir() and p.name != "claude-code"
    ):
        for f in sorted(folder.rglob("*")):
            if f.is_file() and f.suffix in (".json", ".jsonl", ".traj"):
                with f.open("rb") as fh:
                    assert sniffer.sniff(f, fh.read(SNIFF_BYTES)) == 0.0, f


@pytest.mark.corpora
def test_public_sub_agents_name_their_parents(tmp_path: Path) -> None:
    import_paths([corpus_path("claude-code")], tmp_path / "c", progress=False)
    rows = Corpus(tmp_path / "c").sessions().to_dicts()
    ids = {r["session_id"] for r in rows}
    subs = [json.loads(r["metadata"]) for r in rows if r["workload"] == "claude-code/subagent"]
    # the 18 sidechains inside their parent's log: linked to the Task call that started them
    linked = [m for m in subs if m.get("parent_call_id")]
    assert len(linked) == 18 and all(m["parent_session_id"] in ids for m in linked)
    # the 12 agent-*.jsonl files: warm-up agents (8 with their "Warmup" prompt recorded)
    assert sum(1 for m in subs if m.get("warmup")) == 8
    assert len(subs) - len(linked) == 12
    assert ".jsonl" in importers.get(FMT).suffixes


# --- a tool interrupted by the user ----------------------------------------------------------


def test_text_typed_while_a_tool_ran_follows_its_result_as_the_api_took_it() -> None:
    """The CLI records what the user typed during a call, and the failed request it caused,
    before the call's result; the API takes a turn's results first. The session is imported in
    that order, the failed request not visible, so every request point is a valid request."""
    (s,), _ = _read("interrupted_tool.jsonl")
    assert [(m.role, m.visible, m.flags, (m.parts[0].content or "")[:30]) for m in s.messages] == [
        ("user", True, (), "Search the web for SAM 2 pipel"),
        ("assistant", True, (), ""),  # the call
        ("user", True, (), "Web search results: sam2-clip-"),  # the result, first
        ("user", True, (), "Look for related projects too,"),
        ("assistant", False, ("api_error",), "API Error: 400 tool_use ids we"),
        ("user", True, ("turn_aborted",), "[Request interrupted by user f"),
        ("assistant", True, (), "sam2-clip-search is the closes"),
    ]
    visible = [m for m in s.messages if m.visible]
    assert view_problems(visible) == []
    assert [m.source_path for m in s.messages] == [f"line {n}" for n in (1, 2, 5, 3, 4, 6, 7)]
