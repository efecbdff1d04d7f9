"""Codex CLI rollouts: hand-written fixtures and the 19 real rollouts of ../shared/corpora."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ctxreplay.datasets.importers import detect, get_importer
from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.messages import ENCRYPTED_REASONING_MIME, Part, Usage
from ctxreplay.datasets.store import Corpus

from builders import FIXTURES, corpus_path, count, read_items

CX = FIXTURES / "codex-cli"
MAIN = CX / "rollout-2025-10-01T10-00-00-0199aaaa-0000-7000-8000-000000000001.jsonl"
COMPACTED = CX / "rollout-2025-12-01T09-00-00-019b0000-1111-7222-8333-444455556666.jsonl"
EARLY = CX / "rollout-2025-06-20T08-00-00-5f0e1d2c-3b4a-4958-8677-a6b5c4d3e2f1.jsonl"
ENC = ENCRYPTED_REASONING_MIME
CUSTOM = "application/vnd.openai.custom_tool_call"


def test_fixtures_are_detected() -> None:
    for path in (MAIN, COMPACTED, EARLY):
        assert detect(path) == "codex-cli"


def test_rollout_becomes_messages() -> None:
    (s,), rejects = read_items("codex-cli", MAIN)
    assert rejects == []
    assert s.source_session_id == "0199aaaa-0000-7000-8000-000000000001"
    assert s.workload == "codex-cli"
    roles = [m.role for m in s.messages]
    assert roles == ["user", "user", "user", "assistant", "tool", "assistant", "tool", "assistant",
                     "user", "assistant", "tool"]  # fmt: skip
    agents, env, ask, first, out1, second, out2, answer, again, third, out3 = s.messages
    assert agents.parts == (
        Part.text(
            "<user_instructions>\n\nRun `make test` before you finish.\n\n</user_instructions>"
        ),
    )
    assert env.text.startswith("<environment_context>\n  <cwd>/home/dev/shop</cwd>")
    assert ask.parts == (Part.text("Why does test_cart fail?"),)
    assert ask.timestamp == "2025-10-01T10:00:01.000Z"
    args = '{"command":["bash","-lc","pytest tests/test_cart.py -q"],"workdir":"/home/dev/shop"}'
    assert first.parts == (
        Part("reasoning", content="**Running the failing test**", name="summary"),
        Part("reasoning", content="gAAAAABoENCRYPTEDONE", mime_type=ENC),
        Part.call("call_A1", "shell", args),
    )
    assert first.usage == Usage(3000, 2048, 120)
    assert first.timestamp == "2025-10-01T10:00:02.100Z"
    assert out1.parts == (
        Part.response(
            "call_A1",
            '{"output":"F\\nE   assert 3 == 4\\n1 failed","metadata":{"exit_code":1,"duration_seconds":1.2}}',
            "shell",
        ),
    )
    patch = "*** Begin Patch\n*** Update File: cart.py\n@@\n-    return n\n+    return n + 1\n*** End Patch"
    assert second.parts == (
        Part("reasoning", content="gAAAAABoENCRYPTEDTWO", mime_type=ENC),
        Part("tool_call", id="call_A2", name="apply_patch", arguments=patch, mime_type=CUSTOM),
    )
    assert second.usage == Usage(3400, 2944, 210)
    assert second.flags == ()  # a custom tool's input is free text by design: no flag
    assert out2.responses[0].id == "call_A2"
    assert answer.parts == (Part.text("Fixed: the count was off by one."),)
    assert answer.usage == Usage(3900, 3328, 90)
    assert again.parts == (Part.text("Now run the whole suite."),)
    assert third.usage == Usage(4200, 3840, 60)
    assert out3.parts == (Part.response("call_A3", "aborted by user after 8.0s", "shell"),)
    assert out3.flags == ("turn_aborted",)
    assert [m.flags for m in s.messages[:-1]] == [()] * 10


def test_rollout_metadata() -> None:
    (s,), _ = read_items("codex-cli", MAIN)
    assert s.metadata == {
        "cwd": "/home/dev/shop",
        "cli_version": "0.44.0",
        "originator": "codex_cli_rs",
        "source": "cli",
        "git": {
            "commit_hash": "abc123",
            "branch": "main",
            "repository_url": "https://example.com/shop.git",
        },
        "user_instructions_chars": len("Run `make test` before you finish."),
        "models": ["gpt-5-codex", "gpt-5.1-codex"],
        "reasoning_efforts": ["medium", "high"],
        "turns": 2,
        "aborted_turns": 1,
        "requests": 4,
        "token_totals": {
            "input_tokens": 14500,
            "cached_input_tokens": 12160,
            "output_tokens": 480,
            "reasoning_output_tokens": 192,
            "total_tokens": 14980,
        },
        "model_context_window": 272000,
        # the UI copies of response items, the empty and the repeated token counts
        "skipped_events": {
            "agent_message": 1,
            "agent_reasoning": 1,
            "token_count": 2,
            "user_message": 2,
        },
        "not_context_items": {"ghost_snapshot": 1},
        "unknown_records": {"session_note": 1},
        "encrypted_reasoning": {"items": 2, "bytes": 40},
    }


def test_encrypted_reasoning_counts_no_tokens(tmp_path: Path) -> None:
    import_paths([MAIN], tmp_path / "c", progress=False)
    corpus = Corpus(tmp_path / "c")
    (sid,) = corpus.sessions()["session_id"].to_list()
    second = corpus.load_session(sid)[5]
    patch = second.calls[0].arguments or ""
    assert second.tokens == count("apply_patch") + count(patch)


def test_compactions_start_the_context_again() -> None:
    (s,), rejects = read_items("codex-cli", COMPACTED)
    assert rejects == []
    texts = [(m.role, m.text, m.flags) for m in s.messages]
    assert texts == [
        ("system", "You are Codex, a coding agent.", ()),
        ("user", "Migrate the users table.", ()),
        ("assistant", "", ()),
        ("tool", "", ()),
        # no replacement history: the summary is the new start
        (
            "user",
            "Summary: the user wants the users table migrated; migrations/ holds 0001_init.sql.",
            ("compaction_summary",),
        ),
        ("assistant", "I will add 0002_users.sql.", ()),
        # a replacement history: it is the new context, its first message flagged
        ("user", "Migrate the users table.", ("compaction_summary",)),
        ("user", "Another model summarised the work so far:\nSecond summary.", ()),
        ("assistant", "Done.", ()),
    ]
    assert s.messages[4].timestamp == "2025-12-01T09:00:04.000Z"
    assert [m.usage for m in s.messages if m.usage] == [
        Usage(90000, 80000, 300),
        Usage(1500, 0, 80),
        Usage(2100, 1024, 40),
    ]
    assert s.metadata["compactions"] == 2
    assert s.metadata["skipped_events"] == {"context_compacted": 1, "user_message": 1}


def test_early_rollout_layout() -> None:
    (s,), rejects = read_items("codex-cli", EARLY)
    assert rejects == []
    assert s.source_session_id == "5f0e1d2c-3b4a-4958-8677-a6b5c4d3e2f1"
    assert [m.role for m in s.messages] == ["user", "assistant", "tool", "assistant"]
    call = s.messages[1].calls[0]
    assert (call.id, call.name, call.mime_type) == (
        "call_C1",
        "local_shell",
        "application/vnd.openai.local_shell_call",
    )
    assert json.loads(call.arguments or "") == {
        "action": {"type": "exec", "command": ["echo", "hello"], "timeout_ms": 10000}
    }
    # answered by a function_call_output: the item type rides with the result
    assert s.messages[2].responses[0].arguments == '{"type":"function_call_output"}'
    assert s.metadata["skipped_events"] == {"state": 2}


def test_a_bad_line_is_rejected_alone(tmp_path: Path) -> None:
    lines = MAIN.read_text().splitlines()
    lines[20] = lines[20][:40]  # an event line cut short
    bad = json.loads(lines[10])
    del bad["payload"]["call_id"]  # a function call without its id
    lines.insert(11, json.dumps(bad))
    path = tmp_path / "rollout.jsonl"
    path.write_text("\n".join(lines) + "\n")
    importer = get_importer("codex-cli")
    items = list(importer.read(path))
    rejects = [i for i in items if not hasattr(i, "messages")]
    sessions = [i for i in items if hasattr(i, "messages")]
    assert sorted((r.reason, r.line, r.json_path) for r in rejects) == [
        ("invalid_json", 22, "$"),
        ("missing_field", 12, "$.payload"),
    ]
    assert len(sessions) == 1 and sessions[0].metadata["rejected_records"] == 2
    assert importer.tally.seen == 32
    assert importer.tally.skipped == Counter({"part_of_session": 29})


# --- the real rollouts ----------------------------------------------------------------------


def _expected(path: Path) -> dict[str, Any]:
    """What a rollout holds, counted with plain json (not the importer)."""
    records = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    out: Counter[str] = Counter()
    previous = None
    in_run = False  # inside a run of assistant-side items of one response
    for r in records:
        p = r["payload"]
        if r["type"] == "event_msg" and p["type"] == "token_count":
            info = p["info"] or {}
            total = info.get("total_token_usage")
            if info and total != previous:
                out["requests"] += 1
                out["prompt"] += info["last_token_usage"]["input_tokens"]
                in_run = False
            previous = total if info else previous
        if r["type"] == "event_msg" and p["type"] == "turn_aborted":
            out["aborted"] += 1
        if r["type"] != "response_item" or p["type"] == "ghost_snapshot":
            continue
        kind = p["type"]
        out[kind] += 1
        assistant_side = kind in ("reasoning", "function_call", "custom_tool_call") or (
            kind == "message" and p["role"] == "assistant"
        )
        if assistant_side:
            out["messages"] += not in_run
            in_run = True
        else:
            out["messages"] += 1
            in_run = False
    return dict(out)


@pytest.mark.corpora
def test_every_real_rollout_is_detected_and_imported(tmp_path: Path) -> None:
    folder = corpus_path("codex-cli")
    files = sorted(folder.rglob("*.jsonl"))
    assert len(files) == 19
    assert {detect(f) for f in files} == {"codex-cli"}
    summary = import_paths([folder], tmp_path / "c", progress=False)
    assert (summary.sessions, summary.rejects) == (19, 0)
    lines = {str(f): sum(1 for x in f.read_text().splitlines() if x.strip()) for f in files}
    corpus = Corpus(tmp_path / "c")
    for source in corpus.manifest["sources"]:  # every line accounted for
        n = lines[source["path"]]
        assert (source["records"], source["sessions"], source["rejects"]) == (n, 1, 0)
        assert source["skipped"] == {"part_of_session": n - 1}
    sessions = {r["source_location"]: r for r in corpus.sessions().iter_rows(named=True)}
    messages = corpus.messages()
    for f in files:
        want = _expected(f)
        row = sessions[str(f)]
        got = messages.filter(session_id=row["session_id"])
        assert row["n_messages"] == want["messages"], f.name
        calls = got.explode("parts").unnest("parts", separator=".")
        kinds = Counter(
            (t, m)
            for t, m in zip(calls["parts.type"], calls["parts.mime_type"], strict=True)
            if t in ("tool_call", "tool_call_response") or m == ENC
        )
        assert kinds[("tool_call", None)] == want.get("function_call", 0), f.name
        assert kinds[("tool_call", CUSTOM)] == want.get("custom_tool_call", 0), f.name
        outputs = want.get("function_call_output", 0) + want.get("custom_tool_call_output", 0)
        assert kinds[("tool_call_response", None)] == outputs, f.name
        assert kinds[("reasoning", ENC)] == want["reasoning"], f.name  # every item is encrypted
        usage = got.filter(got["usage_prompt_tokens"].is_not_null())
        assert usage.height == want["requests"], f.name  # every new token count found its message
        assert usage["usage_prompt_tokens"].sum() == want["prompt"], f.name
        aborted = got.filter(got["flags"].list.contains("turn_aborted")).height
        assert aborted == want.get("aborted", 0), f.name
    totals = Counter()
    for f in files:
        totals.update(_expected(f))
    assert (totals["function_call"], totals["custom_tool_call"], totals["reasoning"]) == (
        847,
        103,
        626,
    )
    assert (totals["requests"], totals["aborted"]) == (1068, 9)


@pytest.mark.corpora
def test_real_rollouts_hold_no_compaction_and_no_unknown_item() -> None:
    kinds: Counter[str] = Counter()
    for f in sorted(corpus_path("codex-cli").rglob("*.jsonl")):
        for x in f.read_text().splitlines():
            r = json.loads(x)
            kinds[r["type"] if r["type"] != "response_item" else r["payload"]["type"]] += 1
        (s,), _ = read_items("codex-cli", f)
        assert "unknown_items" not in s.metadata and "compactions" not in s.metadata
    assert "compacted" not in kinds  # compactions are covered by the fixture only
    assert set(kinds) == {
        "session_meta", "turn_context", "event_msg", "message", "reasoning", "function_call",
        "function_call_output", "custom_tool_call", "custom_tool_call_output", "ghost_snapshot",
    }  # fmt: skip
