"""otel-genai importer: OTLP and flattened spans, conversation grouping, history checks, rejects."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ctxreplay.datasets.importers import detect, get_importer
from ctxreplay.datasets.importers.otel_genai import OtelGenAIImporter
from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.messages import Message, Part, Session, Usage
from ctxreplay.datasets.rejects import Reject
from ctxreplay.datasets.store import Corpus, session_id_for

FIX = Path(__file__).resolve().parent.parent / "fixtures"
OTEL = FIX / "otel"


def read(path: Path) -> tuple[list[Session], list[Reject], OtelGenAIImporter]:
    importer = get_importer("otel-genai")
    assert isinstance(importer, OtelGenAIImporter)
    items = list(importer.read(path))
    sessions = [i for i in items if isinstance(i, Session)]
    rejects = [i for i in items if isinstance(i, Reject)]
    assert len(sessions) + len(rejects) == len(items)
    return sessions, rejects, importer


def view(m: Message) -> tuple[Any, ...]:
    return (m.role, m.parts, m.usage, m.timestamp)


def span(
    start: str,
    conversation: str | None,
    inputs: Any,
    outputs: Any,
    trace: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    attrs: dict[str, Any] = {"gen_ai.input.messages": inputs, "gen_ai.output.messages": outputs}
    if conversation:
        attrs["gen_ai.conversation.id"] = conversation
    attrs.update(extra)
    out: dict[str, Any] = {"name": "chat", "start_time": start, "attributes": attrs}
    if trace:
        out["context"] = {"trace_id": trace}
    return out


def user(t: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"type": "text", "content": t}]}


def bot(t: str) -> dict[str, Any]:
    return {"role": "assistant", "parts": [{"type": "text", "content": t}]}


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_otlp_document_rebuilds_the_conversation() -> None:
    sessions, rejects, importer = read(OTEL / "otlp_spans.json")
    assert rejects == []
    assert importer.ignored_records == []  # the tool span shares the record with model calls
    (s,) = sessions
    assert s.source_session_id == "conv-1"
    assert s.key == "conversation:conv-1"  # no file digest: one conversation, one session id
    assert s.metadata == {
        "calls": 2,
        "records": [0],
        "traces": ["5b8efff798038103d269b633813fc60c"],
        "models": ["gpt-4o"],
    }
    assert [view(m) for m in s.messages] == [
        ("system", (Part.text("You are a coding agent."),), None, None),
        ("user", (Part.text("Fix the failing test."),), None, None),
        (
            "assistant",
            (
                Part("reasoning", content="Run the tests first."),
                Part.call("call_1", "bash", {"cmd": "pytest -x"}),
            ),
            Usage(200, None, 20),  # from the first call (the span listed last in the file)
            "2023-11-14T22:13:21Z",
        ),
        ("tool", (Part.response("call_1", "1 failed: test_add", "bash"),), None, None),
        (
            "assistant",
            (Part.text("The add test fails; fixing."),),
            Usage(300, 256, 12),
            "2023-11-14T22:13:23Z",
        ),
    ]
    path = "$.resourceSpans[0].scopeSpans[0].spans[0].attributes[5].value[0]"
    assert s.messages[-1].source_path == path


def test_flattened_spans_events_media_and_session_keys() -> None:
    sessions, rejects, importer = read(OTEL / "flat_spans.jsonl")
    assert rejects == []
    assert importer.ignored_records == [1, 3]  # a db span and the agent span carry no messages
    by_id = {s.source_session_id: s for s in sessions}
    assert set(by_id) == {"conv-B", "conv-C"}
    b = by_id["conv-B"]
    assert b.metadata["records"] == [0, 2] and b.metadata["calls"] == 2
    assert "history_mismatch" not in b.metadata
    assert b.source_record == 0  # the call with the longest history
    assert [view(m) for m in b.messages] == [
        ("user", (Part.text("Show me the logo"),), None, None),
        (
            "assistant",
            (Part.call("c-img", "fetch_image", '{"name": "logo"}'),),
            Usage(30, None, 9),  # from the call whose messages rode on a span event
            "2025-03-01T12:00:01Z",
        ),
        ("tool", (Part.response("c-img", '{"status": "ok"}', "fetch_image"),), None, None),
        (
            "user",
            (
                Part.text("Here it is"),
                Part("blob", content="iVBORw0KGgo=", mime_type="image/png", modality="image"),
                Part("uri", uri="https://example.com/logo.png", modality="image"),
                Part("file", id="file-123", mime_type="application/pdf", modality="file"),
            ),
            None,
            None,
        ),
        ("assistant", (Part.text("Nice logo."),), Usage(50, None, 4), "2025-03-01T12:00:06Z"),
    ]
    assert (b.messages[3].image_count, b.messages[3].file_count) == (2, 1)
    c = by_id["conv-C"]  # its id came from the Langfuse attribute on the agent span of its trace
    assert [view(m)[:2] for m in c.messages] == [
        ("system", (Part.text("Reply in one word."),)),
        ("user", (Part.text("Ping?"),)),
        ("assistant", (Part.text("Pong"),)),
    ]


def test_calls_that_disagree_are_split_not_merged_away(tmp_path: Path) -> None:
    rows = [
        span("2025-01-01T00:00:00Z", "c", [user("a")], [bot("b")]),
        span("2025-01-01T00:00:01Z", "c", [user("a"), bot("DIFFERENT"), user("c")], [bot("d")]),
    ]
    sessions, rejects, _ = read(write_jsonl(tmp_path / "m.jsonl", rows))
    assert rejects == []
    longest, other = sessions  # the longest history first, then the call that disagrees
    assert [m.text for m in longest.messages] == ["a", "DIFFERENT", "c", "d"]
    assert [m.text for m in other.messages] == ["a", "b"]
    assert (longest.key, other.key) == ("conversation:c", "conversation:c#2")
    assert longest.source_session_id == other.source_session_id == "c"
    assert longest.metadata["split"] == {"part": 1, "of": 2}
    assert other.metadata["split"] == {"part": 2, "of": 2}
    for s in sessions:
        assert "conversation_split" in s.messages[0].flags
    assert longest.messages[1].usage is None  # the first call's usage stays with its own session


def test_start_time_orders_calls_and_the_longest_history_wins(tmp_path: Path) -> None:
    rows = [
        span("1700000005", "c", [user("a"), bot("b"), user("c")], [bot("d")]),
        span("1700000001", "c", [user("a")], [bot("b")], **{"gen_ai.usage.output_tokens": 3}),
    ]
    sessions, _, _ = read(write_jsonl(tmp_path / "o.jsonl", rows))
    (s,) = sessions
    assert [m.text for m in s.messages] == ["a", "b", "c", "d"]
    assert s.messages[1].usage == Usage(None, None, 3)
    assert s.source_record == 0


def test_calls_without_conversation_or_trace_are_separate_sessions(tmp_path: Path) -> None:
    rows = [
        span("1", None, [user("x")], [bot("y")]),
        span("2", None, [user("p")], [bot("q")], trace="t1"),
        span("3", None, [user("p"), bot("q"), user("r")], [bot("s")], trace="t1"),
    ]
    sessions, _, _ = read(write_jsonl(tmp_path / "n.jsonl", rows))
    assert sorted(len(s.messages) for s in sessions) == [2, 4]
    by_len = {len(s.messages): s for s in sessions}
    assert by_len[4].key == "trace:t1" and by_len[4].source_session_id == "t1"
    assert by_len[2].key.startswith("call:")


def test_openinference_and_langfuse_session_keys(tmp_path: Path) -> None:
    rows = [
        {
            "start_time": "1",
            "attributes": {"session.id": "oi", "gen_ai.input.messages": [user("a")]},
        },
        {
            "start_time": "1",
            "session_id": "lf",
            "attributes": {"gen_ai.input.messages": [user("b")]},
        },
        {
            "start_time": "1",
            "attributes": {"langfuse.session.id": "lf2", "gen_ai.input.messages": [user("c")]},
        },
    ]
    sessions, _, _ = read(write_jsonl(tmp_path / "k.jsonl", rows))
    assert sorted(s.source_session_id for s in sessions) == ["lf", "lf2", "oi"]


def test_unparseable_messages_attribute_rejects_that_span_only(tmp_path: Path) -> None:
    good = span("1", "c", [user("a")], [bot("b")])
    bad = span("2", "c", "[{not json", [bot("z")])
    path = write_jsonl(tmp_path / "bad.jsonl", [good, bad])
    sessions, rejects, _ = read(path)
    (reject,) = rejects
    assert reject.reason == "invalid_json"
    assert reject.json_path == '$.attributes["gen_ai.input.messages"]'
    assert (reject.record, reject.line, reject.source_location) == (1, 2, str(path))
    assert reject.raw == json.dumps(bad).encode()
    (s,) = sessions  # the conversation is rebuilt from the span that was readable
    assert [m.text for m in s.messages] == ["a", "b"]


def test_unparseable_attribute_in_otlp_names_the_attribute_path(tmp_path: Path) -> None:
    doc = json.loads((OTEL / "otlp_spans.json").read_text())
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[0]["attributes"][5]["value"]["stringValue"] = "{oops"
    path = tmp_path / "otlp.json"
    path.write_text(json.dumps(doc))
    sessions, rejects, _ = read(path)
    (reject,) = rejects
    assert reject.reason == "invalid_json"
    assert reject.json_path == "$.resourceSpans[0].scopeSpans[0].spans[0].attributes[5].value"
    assert reject.raw == path.read_bytes()  # the record is the whole document
    (s,) = sessions
    assert [m.role for m in s.messages] == ["system", "user", "assistant"]


def test_structural_errors_reject_with_paths(tmp_path: Path) -> None:
    rows = [
        span("1", "a", [{"role": "user", "parts": "oops"}], []),
        {"attributes": "not an object"},
        {"attributes": [{"key": "gen_ai.input.messages", "value": {"intValue": "x"}}]},
        42,
        span("1", "ok", [user("fine")], []),
    ]
    sessions, rejects, _ = read(write_jsonl(tmp_path / "s.jsonl", rows))
    assert [(r.record, r.reason, r.json_path) for r in rejects] == [
        (0, "wrong_type", '$.attributes["gen_ai.input.messages"][0].parts'),
        (1, "wrong_type", "$.attributes"),
        (2, "wrong_type", "$.attributes[0].value"),
        (3, "wrong_type", "$"),
    ]
    assert [s.source_session_id for s in sessions] == ["ok"]


def test_spans_without_genai_messages_are_ignored(tmp_path: Path) -> None:
    rows = [{"name": "http", "attributes": {"http.method": "GET"}}, {"resourceSpans": []}]
    sessions, rejects, importer = read(write_jsonl(tmp_path / "plain.jsonl", rows))
    assert (sessions, rejects, importer.ignored_records) == ([], [], [0, 1])


def test_same_conversation_in_two_files_maps_to_one_session_id(tmp_path: Path) -> None:
    one = write_jsonl(tmp_path / "one.jsonl", [span("1", "shared", [user("a")], [bot("b")])])
    two = write_jsonl(tmp_path / "two.jsonl", [span("1", "shared", [user("a")], [bot("b")])])
    (s1,), _, _ = read(one)
    (s2,), _, _ = read(two)
    assert session_id_for(s1) == session_id_for(s2)
    summary = import_paths([one, two], tmp_path / "corpus", progress=False)
    assert summary.sessions == 1
    assert dict(summary.rejected) == {"duplicate_session": 1}
    assert Corpus(tmp_path / "corpus").sessions()["source_session_id"].to_list() == ["shared"]


def test_sniff() -> None:
    otel = get_importer("otel-genai")
    for path in sorted(OTEL.iterdir()):
        assert detect(path) == "otel-genai"
        assert otel.sniff(path, path.read_bytes()[:65536]) > 0.9
    for folder in ("anthropic", "openai_chat", "bad"):
        for path in sorted((FIX / folder).iterdir()):
            assert otel.sniff(path, path.read_bytes()[:65536]) == 0.0, path
