"""openai-chat importer on fixtures: every accepted shape, legacy calls, media, our extension."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ctxreplay.datasets.importers import detect, get_importer
from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.messages import Part, Session, Usage
from ctxreplay.datasets.rejects import Reject
from ctxreplay.datasets.store import Corpus

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "openai_chat"


def read(path: Path) -> list[Session]:
    items = list(get_importer("openai-chat").read(path))
    assert not [i for i in items if isinstance(i, Reject)], items
    return [i for i in items if isinstance(i, Session)]


def rows(s: Session) -> list[tuple[Any, ...]]:
    return [(m.role, m.parts) for m in s.messages]


def test_json_list_of_messages_is_one_session() -> None:
    (s,) = read(FIX / "messages.json")
    assert s.source_session_id == "messages:0"
    assert rows(s) == [
        ("system", (Part.text("You are a shop assistant."),)),
        ("user", (Part.text("Where is order 42?"),)),
        ("assistant", (Part.call("call_a", "find_order", '{"order_id": 42}'),)),
        ("tool", (Part.response("call_a", '{"status": "shipped"}', "find_order"),)),
        ("assistant", (Part.text("Order 42 has shipped."),)),
    ]
    assert s.messages[2].calls[0].arguments == '{"order_id": 42}'  # the JSON string as written
    assert s.messages[4].usage == Usage(90, 64, 7)
    assert [m.source_path for m in s.messages][:2] == ["$[0]", "$[1]"]


def test_json_list_of_sessions() -> None:
    a, b = read(FIX / "sessions.json")
    assert (a.source_session_id, a.metadata, a.source_record) == ("s-a", {"reward": 1}, 0)
    assert rows(a) == [("user", (Part.text("hi"),)), ("assistant", (Part.text("hello"),))]
    assert (b.source_session_id, b.source_record) == ("s-b", 1)
    assert rows(b) == [
        ("developer", (Part.text("Be terse."),)),
        ("user", (Part.text("two"), Part.text("parts"))),
        ("assistant", (Part("reasoning", content="user wants brevity"), Part.text("ok"))),
    ]


def test_messages_object() -> None:
    (s,) = read(FIX / "object.json")
    assert s.source_session_id == "obj-1"
    assert s.messages[0].name == "alice"
    assert rows(s) == [
        ("user", (Part.text("Add 2 and 3"),)),
        (
            "assistant",
            (
                Part.call("call_1", "add", '{"a": 2, "b": 3}'),
                Part.call("call_2", "log", {"msg": "adding"}),  # an object is kept as JSON text
            ),
        ),
        ("tool", (Part.response("call_1", "5", "add"),)),
        ("tool", (Part.response("call_2", "logged", "log"),)),
        ("assistant", (Part.text("5"),)),
    ]


def test_jsonl_lines_of_lists_and_objects() -> None:
    a, b = read(FIX / "sessions.jsonl")  # a line that is a list of messages is a session
    assert a.source_session_id == "sessions:0"
    assert rows(a) == [("user", (Part.text("line one"),)), ("assistant", (Part.text("reply one"),))]
    assert (b.source_session_id, b.metadata) == ("line-2", {"split": "test"})
    assert b.messages[1].timestamp == "2025-01-01T00:00:00Z"


def test_legacy_function_call() -> None:
    (s,) = read(FIX / "legacy_function.json")
    assert rows(s) == [
        ("user", (Part.text("Weather?"),)),
        ("assistant", (Part.call("function_call_1", "weather", '{"city": "Oslo"}'),)),
        ("tool", (Part.response("function_call_1", "-3C", "weather"),)),
        ("assistant", (Part.text("It is -3C."),)),
    ]


def test_images_and_files_are_parts_and_counted(tmp_path: Path) -> None:
    (s,) = read(FIX / "images.json")
    user = s.messages[0]
    assert [p.type for p in user.parts] == ["text", "blob", "uri", "blob", "file", "blob"]
    assert user.parts[1] == Part(
        "blob", content="iVBORw0KGgo=", mime_type="image/png", modality="image"
    )
    assert user.parts[2] == Part("uri", uri="https://example.com/b.jpg", modality="image")
    assert user.parts[3] == Part(
        "blob", content="JVBERi0xLjQ=", mime_type="application/pdf", modality="file"
    )
    assert (user.parts[4].type, user.parts[4].id) == ("file", "file-abc")
    assert user.parts[5] == Part(
        "blob", content="UklGRg==", mime_type="audio/wav", modality="audio"
    )
    assert (user.image_count, user.file_count) == (2, 3)
    import_paths([FIX / "images.json"], tmp_path / "c", progress=False)
    (row,) = Corpus(tmp_path / "c").sessions().iter_rows(named=True)
    assert (row["image_count"], row["file_count"]) == (2, 3)


def test_extension_restores_what_openai_cannot_say(tmp_path: Path) -> None:
    line = {
        "session_id": "openai-chat-000000000001",
        "source_session_id": "orig",
        "source_format": "anthropic-messages",
        "metadata": {"k": 1},
        "workload": "demo",
        "messages": [
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{"}},
                {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}},
            ], "x-ctxreplay": {"usage": {"prompt_tokens": 5}, "flags": ["custom"], "timestamp": "t0"}},
            {"role": "tool", "tool_call_id": "a", "content": "A", "x-ctxreplay": {"role": "user", "is_error": True}},
            {"role": "tool", "tool_call_id": "b", "content": "B", "x-ctxreplay": {"continues": True, "role": "user"}},
            {"role": "user", "content": "and text", "x-ctxreplay": {"continues": True}},
            {"role": "assistant", "content": "x", "x-ctxreplay": {"visible": False, "name": "bot", "parts": [
                {"type": "reasoning", "content": "r1"}, {"type": "text", "content": "x"}, {"type": "reasoning", "content": "r2"},
            ]}},
        ],
    }  # fmt: skip
    path = tmp_path / "export.jsonl"
    path.write_text(json.dumps(line) + "\n")
    assert detect(path) == "openai-chat"
    (s,) = read(path)
    assert s.session_id == "openai-chat-000000000001"  # an export keeps its corpus ids
    assert (s.source_session_id, s.metadata, s.workload) == ("orig", {"k": 1}, "demo")
    first, user, last = s.messages
    assert first.usage == Usage(5, None, None) and first.timestamp == "t0"
    assert first.flags == ("custom", "arguments_not_json")  # kept, then derived ones added
    assert (user.role, user.is_error) == ("user", True)
    assert user.parts == (
        Part.response("a", "A", "f"),
        Part.response("b", "B", "g"),
        Part.text("and text"),
    )
    assert (last.visible, last.name) == (False, "bot")
    assert [p.content for p in last.parts] == ["r1", "x", "r2"]


def test_bad_extension_parts_are_rejected(tmp_path: Path) -> None:
    line = {
        "messages": [
            {"role": "user", "content": "x", "x-ctxreplay": {"parts": [{"type": "video"}]}}
        ]
    }
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(line) + "\n")
    (reject,) = get_importer("openai-chat").read(path)
    assert isinstance(reject, Reject)
    assert (reject.reason, reject.json_path) == (
        "wrong_type",
        "$.messages[0].x-ctxreplay.parts[0].type",
    )
