"""anthropic-messages importer on our own fixtures: exact messages, sniffing, rejects, counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxreplay.datasets.importers import detect, get_importer
from ctxreplay.datasets.importers.anthropic_messages import anthropic_usage
from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.messages import Message, Part, Session, Usage
from ctxreplay.datasets.rejects import Reject
from ctxreplay.datasets.store import Corpus

FIX = Path(__file__).resolve().parent.parent / "fixtures"
ANTHROPIC = FIX / "anthropic"


def read(path: Path) -> list[Session | Reject]:
    return list(get_importer("anthropic-messages").read(path))


def text(s: str) -> Part:
    return Part.text(s)


def test_full_session_exact_messages() -> None:
    (session,) = read(ANTHROPIC / "session.json")
    assert isinstance(session, Session)
    assert session.source_format == "anthropic-messages"
    assert session.source_session_id == "conv-weather"
    assert session.source_record == 0
    assert session.metadata == {"task": "weather", "reward": 1.0, "model": "claude-sonnet-4-5"}
    expected = [
        Message("system", (text("You are a weather assistant."),), source_path="$.system"),
        Message(
            "user",
            (
                text("What is the weather in Paris? Here is a map."),
                Part("blob", content="iVBORw0KGgo=", mime_type="image/png", modality="image"),
            ),
            source_path="$.messages[0]",
        ),
        Message(
            "assistant",
            (
                Part("reasoning", content="I should call the weather tool."),
                text("Let me check."),
                Part.call("toolu_01", "get_weather", {"city": "Paris", "unit": "c"}),
            ),
            # input 120 + cache writes 0 + cache reads 80 = the whole prompt
            usage=Usage(prompt_tokens=200, cached_tokens=80, completion_tokens=30),
            source_path="$.messages[1]",
        ),
        Message(
            "user",
            (Part.response("toolu_01", "18C, cloudy", "get_weather"),),
            source_path="$.messages[2]",
        ),
        Message(
            "assistant",
            (
                Part("reasoning", content="EncryptedBlob==", name="redacted_thinking"),
                Part.call("toolu_02", "get_forecast", {"city": "Paris"}),
                Part.call("toolu_03", "get_map", {}),
            ),
            usage=Usage(prompt_tokens=10, cached_tokens=None, completion_tokens=25),
            source_path="$.messages[3]",
        ),
        Message(
            "user",  # the provider's role: tool results stay in the user message
            (
                Part.response("toolu_02", "forecast service down", "get_forecast"),
                Part.response("toolu_03", "map attached", "get_map"),
                Part("uri", uri="https://example.com/map.png", modality="image"),
                text("Also read this report."),
                Part("blob", content="JVBERi0xLjQ=", mime_type="application/pdf", modality="file"),
            ),
            is_error=True,
            source_path="$.messages[4]",
        ),
        Message(
            "assistant", (text("It is 18C and cloudy in Paris."),), source_path="$.messages[5]"
        ),
    ]
    assert [_plain(m) for m in session.messages] == [_plain(m, i) for i, m in enumerate(expected)]
    assert session.messages[2].calls[0].arguments == '{"city":"Paris","unit":"c"}'


def _plain(m: Message, seq: int | None = None) -> tuple[object, ...]:
    return (
        m.role,
        m.parts,
        m.name,
        m.is_error,
        m.visible,
        m.flags,
        m.usage,
        m.timestamp,
        m.source_path,
        m.seq if seq is None else seq,
    )


def test_jsonl_sessions_list_and_request_response_log() -> None:
    s1, s2, s3 = read(ANTHROPIC / "sessions.jsonl")
    assert isinstance(s1, Session) and isinstance(s2, Session) and isinstance(s3, Session)
    assert s1.source_session_id == "s-1"
    assert [(m.role, m.parts) for m in s1.messages] == [
        ("system", (text("Be brief."),)),
        ("user", (text("Hi"),)),
        ("assistant", (text("Hello!"),)),
    ]
    assert s2.source_session_id == "sessions:1"  # no id: file stem and record index
    assert [(m.role, m.parts, m.source_path) for m in s2.messages] == [
        ("user", (text("List files"),), "$[0]"),
        ("assistant", (Part.call("toolu_ls", "bash", {"cmd": "ls"}),), "$[1]"),
        ("user", (Part.response("toolu_ls", "a.txt\nb.txt", "bash"),), "$[2]"),
    ]
    assert s3.source_session_id == "log-7"
    assert s3.metadata == {"model": "claude-haiku-4-5"}
    assert [(m.role, m.parts, m.usage, m.source_path) for m in s3.messages] == [
        ("system", (text("Answer in French."),), None, "$.request.system"),
        ("user", (text("Hello"),), None, "$.request.messages[0]"),
        ("assistant", (text("Bonjour"),), Usage(12, None, 3), "$.response"),
    ]


def test_bare_message_array_is_one_session_with_raw_arguments() -> None:
    (session,) = read(ANTHROPIC / "messages.json")
    assert isinstance(session, Session)
    assert [m.role for m in session.messages] == ["user", "assistant", "user", "assistant"]
    assert session.messages[0].timestamp == "2025-05-01T10:00:00Z"
    call = session.messages[1].calls[0]
    assert call.arguments == '{"path": "doc.md"'  # a string input is kept byte for byte
    assert session.messages[1].flags == ("arguments_not_json",)
    assert session.messages[2].parts == (Part.response("toolu_r", "# Doc\nbody", "read"),)


def test_sniff_prefers_anthropic_on_anthropic_files_only() -> None:
    anthropic = get_importer("anthropic-messages")
    openai = get_importer("openai-chat")
    for path in sorted(ANTHROPIC.iterdir()):
        head = path.read_bytes()[:65536]
        assert anthropic.sniff(path, head) > openai.sniff(path, head), path
        assert detect(path) == "anthropic-messages"
    for folder in ("openai_chat", "otel", "bad"):
        for path in sorted((FIX / folder).iterdir()):
            assert anthropic.sniff(path, path.read_bytes()[:65536]) == 0.0, path


@pytest.mark.parametrize(
    ("line", "reason", "json_path"),
    [
        ({"messages": [{"role": "tool", "content": "x"}]}, "unknown_role", "$.messages[0].role"),
        (
            {
                "messages": [
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "t", "name": "f", "input": [1]}],
                    }
                ]
            },
            "wrong_type",
            "$.messages[0].content[0].input",
        ),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": "ghost", "content": "x"}
                        ],
                    }
                ]
            },
            "orphan_tool_result",
            "$.messages[0]",
        ),
        (
            {
                "messages": [
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
                            {"type": "tool_use", "id": "t1", "name": "g", "input": {}},
                        ],
                    },
                ]
            },
            "duplicate_tool_call_id",
            "$.messages[0]",
        ),
        (
            {"messages": [{"role": "user", "content": [{"text": "no type"}]}]},
            "missing_field",
            "$.messages[0].content[0]",
        ),
        ({"messages": [{"role": "user", "content": 7}]}, "wrong_type", "$.messages[0].content"),
        ({"system": "only a system prompt", "messages": "nope"}, "wrong_type", "$.messages"),
        ({"messages": []}, "empty_session", "$"),
    ],
)
def test_bad_records_are_rejected_and_the_rest_imports(
    tmp_path: Path, line: dict[str, object], reason: str, json_path: str
) -> None:
    good = {"id": "ok", "messages": [{"role": "user", "content": "hi"}]}
    bad_line = json.dumps(line)
    path = tmp_path / "mixed.jsonl"
    path.write_text(json.dumps(good) + "\n" + bad_line + "\n")
    items = read(path)
    sessions = [i for i in items if isinstance(i, Session)]
    rejects = [i for i in items if isinstance(i, Reject)]
    assert [s.source_session_id for s in sessions] == ["ok"]
    (reject,) = rejects
    assert (reject.reason, reject.json_path, reject.record, reject.line) == (
        reason,
        json_path,
        1,
        2,
    )
    assert reject.raw == bad_line.encode()
    assert reject.source_location == str(path)


def test_usage_semantics() -> None:
    assert anthropic_usage({"input_tokens": 5, "output_tokens": 2}) == Usage(5, None, 2)
    assert anthropic_usage(
        {"input_tokens": 5, "cache_creation_input_tokens": 10, "cache_read_input_tokens": 100}
    ) == Usage(115, 100, None)
    assert anthropic_usage({"input_tokens": "5"}) is None
    assert anthropic_usage(None) is None


def test_media_are_counted_in_the_corpus(tmp_path: Path) -> None:
    import_paths([ANTHROPIC / "session.json"], tmp_path / "c", progress=False)
    corpus = Corpus(tmp_path / "c")
    (row,) = corpus.sessions().iter_rows(named=True)
    assert (row["image_count"], row["file_count"]) == (2, 1)
    assert (row["n_tool_calls"], row["n_tool_results"]) == (3, 3)
    assert (row["usage_prompt_tokens"], row["usage_cached_tokens"]) == (210, 80)
    assert (row["usage_completion_tokens"]) == 55
    messages = corpus.messages()
    assert messages["image_count"].to_list() == [0, 1, 0, 0, 0, 1, 0]
    assert messages["file_count"].to_list() == [0, 0, 0, 0, 0, 1, 0]
    assert messages["is_error"].to_list() == [False] * 5 + [True, False]
    assert messages["role"].to_list()[5] == "user"
