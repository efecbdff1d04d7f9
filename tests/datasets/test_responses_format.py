"""Canonical messages → Responses API items: the reader's items come back as they were, and any
importer's messages survive items → ``messages_from_items``."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ctxreplay.datasets.export import export_corpus
from ctxreplay.datasets.importers.openai_responses import canonical_item, messages_from_items
from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.messages import Message, Part, Session
from ctxreplay.datasets.responses_format import to_responses_items
from ctxreplay.datasets.store import Corpus, CorpusError
from ctxreplay.datasets.validate import validate_session

from builders import FIXTURES, corpus_path, read_items

RS = FIXTURES / "openai-responses"
CX = FIXTURES / "codex-cli"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

#: outputs, inputs and reasoning the fixtures do not show
EDGES: list[dict[str, Any]] = [
    {"type": "message", "role": "user", "content": [
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
        {"type": "input_file", "file_data": "data:application/pdf;base64,JVBERi0=", "filename": "a.pdf"},
        {"type": "input_file", "file_url": "https://example.com/b.pdf"},
    ]},
    {"type": "reasoning", "summary": [{"type": "summary_text", "text": "one"}], "encrypted_content": "gAAAA1"},
    {"type": "reasoning", "summary": [{"type": "summary_text", "text": "two"}], "encrypted_content": "gAAAA2"},
    {"type": "reasoning", "summary": []},
    {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
    {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "not json"},
    {"type": "shell_call", "call_id": "c3", "action": {"commands": ["ls"], "timeout_ms": 1000}},
    {"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_text", "text": "only text"}]},
    {"type": "function_call_output", "call_id": "c2", "output": [
        {"type": "input_image", "file_id": "file-9", "detail": "low"},
        {"type": "input_text", "text": "after the image"},
    ]},
    {"type": "shell_call_output", "call_id": "c3", "max_output_length": 100, "output": [
        {"stdout": "a\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}},
    ]},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
    {"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": PNG},
]  # fmt: skip


def _canonical(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [canonical_item(i) for i in items]


def _roundtrip(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return to_responses_items(messages_from_items(items, "$"))


def _conversation_items() -> list[dict[str, Any]]:
    return json.loads((RS / "conversation.json").read_text())["items"]


def _rollout_items(path: Path) -> list[dict[str, Any]]:
    """The Responses items of a rollout (early rollouts write them bare), snapshots aside."""
    out = []
    for line in path.read_text().splitlines():
        r = json.loads(line)
        if "payload" in r:
            item = r["payload"] if r["type"] == "response_item" else None
        else:
            item = r if "type" in r else None
        if item is not None and item["type"] != "ghost_snapshot":
            out.append(item)
    return out


@pytest.mark.parametrize("name", ["conversation", "edges", "items"])
def test_items_come_back_as_they_were(name: str) -> None:
    if name == "conversation":
        items = _conversation_items()
    elif name == "edges":
        items = EDGES
    else:
        items = json.loads((RS / "items.json").read_text())
    assert _canonical(_roundtrip(items)) == _canonical(items)


@pytest.mark.parametrize("name", sorted(p.name for p in CX.iterdir()))
def test_rollout_items_come_back_from_the_session(name: str) -> None:
    """The session's messages (response boundaries from the token counts; the messages a
    compaction or the base instructions added left out) give back the rollout's items."""
    (s,), _ = read_items("codex-cli", CX / name)
    read = [m for m in s.messages if m.source_path in ("$", "$.payload")]
    assert _canonical(to_responses_items(read)) == _canonical(_rollout_items(CX / name))


def test_canonical_form_drops_only_server_bookkeeping() -> None:
    item = {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": "x", "annotations": [], "logprobs": []}]}  # fmt: skip
    assert canonical_item(item) == {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "x"}],
    }
    assert canonical_item({"role": "user", "content": "hi"}) == {
        "role": "user",
        "content": [{"type": "input_text", "text": "hi"}],
        "type": "message",
    }
    mcp = {"type": "mcp_call", "id": "mcp_1", "status": "completed", "name": "n"}
    assert canonical_item(mcp) == {"type": "mcp_call", "id": "mcp_1", "name": "n"}  # the call id


def test_written_items_have_the_fields_the_api_requires() -> None:
    required = {
        "message": {"role", "content"},
        "reasoning": {"summary"},
        "function_call": {"call_id", "name", "arguments"},
        "function_call_output": {"call_id", "output"},
        "custom_tool_call": {"call_id", "name", "input"},
        "custom_tool_call_output": {"call_id", "output"},
        "computer_call": {"call_id", "action", "pending_safety_checks"},
        "computer_call_output": {"call_id", "output"},
        "local_shell_call": {"call_id", "action"},
        "local_shell_call_output": {"call_id", "output"},
        "mcp_call": {"id", "server_label", "name", "arguments"},
        "file_search_call": {"id", "queries"},
        "web_search_call": {"id", "action"},
    }
    items = _roundtrip(_conversation_items())
    for item in items:
        assert required[item["type"]] <= set(item), item
        if item["type"] == "message":
            kinds = {p["type"] for p in item["content"]}
            allowed = {"output_text", "refusal"} if item["role"] == "assistant" else {
                "input_text", "input_image", "input_file", "hologram"}  # fmt: skip
            assert kinds <= allowed, item
        if item["type"] in ("function_call", "function_call_output"):
            assert isinstance(item.get("arguments", item.get("output")), str | list)


@pytest.mark.parametrize(
    ("fmt", "path"),
    [
        ("tau-bench", "tau-bench/gpt-test-airline.json"),
        ("openai-chat", "openai_chat/object.json"),
        ("openai-chat", "openai_chat/sessions.jsonl"),
        ("anthropic-messages", "anthropic/session.json"),
        ("anthropic-messages", "anthropic/sessions.jsonl"),
        ("openhands", "openhands/output_small.jsonl"),
        ("otel-genai", "otel/flat_spans.jsonl"),
        ("swe-agent", "swe-agent/textual.traj"),
    ],
)
def test_messages_of_any_importer_survive_items(fmt: str, path: str) -> None:
    """The parts come back in order, but for what items cannot say (``_sayable``); message
    boundaries may move: adjacent assistant messages become one, a tool result in a ``user``
    message comes back in a ``tool`` one."""
    sessions, _ = read_items(fmt, FIXTURES / path)
    assert sessions
    for s in sessions:
        back = validate_session(
            Session("t", "t", messages_from_items(to_responses_items(s.messages), "$"))
        )
        assert [p for m in back.messages for p in m.parts] == [
            _sayable(p) for m in s.messages for p in m.parts
        ]


def _sayable(p: Part) -> Part:
    """A part as items can say it: a reasoning part's name (Anthropic's ``redacted_thinking``)
    has no place in a reasoning item, nor the media type of a file id or a URL."""
    if p.type == "reasoning" and p.name != "summary":
        return replace(p, name=None)
    if p.type in ("file", "uri"):
        return replace(p, mime_type=None)
    return p


def test_tau_bench_messages_come_back_whole() -> None:
    (s, _), _ = read_items("tau-bench", FIXTURES / "tau-bench" / "gpt-test-airline.json")
    items = to_responses_items(s.messages)
    assert [i["type"] for i in items] == [
        "message", "message", "function_call", "function_call_output", "message", "function_call",
        "function_call_output", "message",
    ]  # fmt: skip
    assert items[0] == {
        "type": "message",
        "role": "system",
        "content": [{"type": "input_text", "text": s.messages[0].text}],
    }
    assert items[2] == {
        "type": "function_call",
        "call_id": "call_1",
        "name": "get_reservation_details",
        "arguments": s.messages[2].calls[0].arguments,
    }
    back = validate_session(Session("t", "t", messages_from_items(items, "$"))).messages
    # the assistant's text and its next call were two messages; as items they are one response
    merged = [*s.messages[:4], s.messages[4].with_parts(s.messages[4].parts + s.messages[5].parts)]
    assert _shape(back) == _shape([*merged, *s.messages[6:]])


def _shape(messages: list[Message]) -> list[tuple[str, tuple[Any, ...]]]:
    return [(m.role, m.parts) for m in messages]


def test_export_writes_a_line_per_session_that_imports_back(tmp_path: Path) -> None:
    import_paths([CX, FIXTURES / "tau-bench"], tmp_path / "c", progress=False)
    corpus = Corpus(tmp_path / "c")
    n = export_corpus(tmp_path / "c", tmp_path / "out" / "r.jsonl", format="openai-responses")
    assert n == corpus.sessions().height == 5
    lines = [json.loads(x) for x in (tmp_path / "out" / "r.jsonl").read_text().splitlines()]
    assert set(lines[0]) >= {
        "session_id",
        "source_session_id",
        "source_format",
        "metadata",
        "input",
    }
    summary = import_paths([tmp_path / "out" / "r.jsonl"], tmp_path / "b", progress=False)
    assert (summary.sessions, summary.rejects, summary.by_format) == (5, 0, {"openai-responses": 5})
    again = Corpus(tmp_path / "b")
    by_source = {
        r["source_session_id"]: r["session_id"] for r in again.sessions().iter_rows(named=True)
    }
    for row in corpus.sessions().iter_rows(named=True):
        before = [m for m in corpus.load_session(row["session_id"]) if m.visible]
        after = again.load_session(by_source[row["session_id"]])
        assert [p for m in after for p in m.parts] == [p for m in before for p in m.parts]
    one = corpus.sessions()["session_id"][0]
    assert (
        export_corpus(tmp_path / "c", tmp_path / "one.jsonl", [one], format="openai-responses") == 1
    )
    with pytest.raises(CorpusError, match="no session"):
        export_corpus(tmp_path / "c", tmp_path / "none.jsonl", ["nope"], format="openai-responses")


@pytest.mark.corpora
def test_real_codex_items_come_back_as_they_were() -> None:
    files = sorted(corpus_path("codex-cli").rglob("*.jsonl"))
    total = 0
    for f in files:
        items = _rollout_items(f)
        total += len(items)
        assert _canonical(_roundtrip(items)) == _canonical(items), f.name
    assert total == 2818


def test_encrypted_reasoning_is_never_sent_as_chat_text() -> None:
    from ctxreplay.datasets.importers.openai_chat import messages_from_openai
    from ctxreplay.datasets.messages import ENCRYPTED_REASONING_MIME, Message, Part
    from ctxreplay.datasets.openai_format import to_openai

    m = Message(
        "assistant",
        (
            Part("reasoning", content="gAAAAABsecret", mime_type=ENCRYPTED_REASONING_MIME),
            Part("reasoning", content="I should list the files."),
            Part.call("c1", "ls", {}),
        ),
    )
    plain = to_openai([m])
    assert plain[0]["reasoning_content"] == "I should list the files."
    assert "gAAAAABsecret" not in str(plain)
    # with extensions the exact parts still come back
    assert messages_from_openai(to_openai([m], extensions=True), "$")[0].parts == m.parts


@pytest.mark.parametrize("fmt", ["openai-chat", "openai-responses"])
def test_export_format_option_reimports(tmp_path: Path, fmt: str) -> None:
    """``ctxreplay export --format F`` writes what F's importer reads back: the same visible
    messages (roles, part types, text)."""
    from click.testing import CliRunner

    from ctxreplay.cli import main
    from ctxreplay.datasets.ingest import import_paths
    from ctxreplay.datasets.store import Corpus

    source = Path(__file__).resolve().parent.parent / "fixtures" / "tau-bench"
    import_paths([source], tmp_path / "c", progress=False)
    out = tmp_path / f"{fmt}.jsonl"
    result = CliRunner().invoke(
        main, ["export", str(tmp_path / "c"), "-o", str(out), "--format", fmt]
    )
    assert result.exit_code == 0, result.output
    assert f"as {fmt}" in result.output
    import_paths([out], tmp_path / "back", fmt=fmt, progress=False)

    def flat(messages: list[Any]) -> list[tuple[str, str | None, str | None]]:
        return [(p.type, p.content, p.arguments) for m in messages if m.visible for p in m.parts]

    before = sorted(flat(m) for _, m in Corpus(tmp_path / "c").iter_sessions())
    after = sorted(flat(m) for _, m in Corpus(tmp_path / "back").iter_sessions())
    assert len(after) == len(before) > 0
    assert after == before
