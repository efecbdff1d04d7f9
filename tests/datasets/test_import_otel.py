"""otel-genai importer: OTLP and flattened spans, conversation grouping, history checks, rejects."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ctxreplay.datasets.importers import SURE_SCORE, detect, get_importer
from ctxreplay.datasets.importers.otel_genai import MESSAGES_SCORE, OtelGenAIImporter
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
        assert otel.sniff(path, path.read_bytes()[:65536]) > SURE_SCORE
    for folder in ("anthropic", "openai_chat", "bad"):
        for path in sorted((FIX / folder).iterdir()):
            assert otel.sniff(path, path.read_bytes()[:65536]) == 0.0, path


# --- the current semantic conventions ---------------------------------------------------------
#
# The fixtures below follow open-telemetry/semantic-conventions-genai: model/gen-ai/events.yaml
# (the gen_ai.client.inference.operation.details event: the inference span's attributes),
# model/gen-ai/spans.yaml and registry.yaml (the opt-in gen_ai.input.messages /
# gen_ai.output.messages / gen_ai.system_instructions / gen_ai.tool.definitions attributes,
# "structured form, or a JSON string where structured values are not supported";
# gen_ai.conversation.compacted, PR #162), and the JSON schemas gen-ai-input-messages.json,
# gen-ai-output-messages.json, gen-ai-system-instructions.json (parts: text, tool_call,
# tool_call_response, server_tool_call(_response), blob, uri, file, reasoning, compaction,
# generic; the generic/redacted_thinking examples are those of docs/gen-ai/non-normative/tests).
# The per-message events are those of v1.36 (open-telemetry/semantic-conventions
# docs/gen-ai/gen-ai-events.md) as opentelemetry-instrumentation-openai-v2 writes them
# (utils.message_to_event / choice_to_event: eventName, body {content, tool_calls, id}), and as
# the Azure AI SDKs put them on span events (body in the gen_ai.event.content attribute).

import pytest  # noqa: E402

from ctxreplay.datasets.cases import build_cases, parse_trigger, prefix_of  # noqa: E402
from ctxreplay.datasets.importers import AmbiguousFormat, scores  # noqa: E402
from ctxreplay.datasets.validate import FLAG_COMPACTION_SUMMARY  # noqa: E402

from builders import FIXTURES  # noqa: E402

NEW = [
    "details_logs.json",
    "details_span_events.json",
    "details_flat.jsonl",
    "opt_in_attributes.json",
    "compaction_replaced.jsonl",
    "compaction_part.jsonl",
    "legacy_events_logs.jsonl",
    "legacy_span_events.json",
]
UNKNOWN = "application/vnd.ctxreplay.unknown-part+json"


def imported(tmp: Path, *names: str) -> tuple[Any, Corpus]:
    summary = import_paths([OTEL / n for n in names], tmp / "c", progress=False)
    return summary, Corpus(tmp / "c")


def only(corpus: Corpus) -> tuple[dict[str, Any], list[Message]]:
    (row,) = corpus.sessions().to_dicts()
    return row, corpus.load_session(row["session_id"])


def shape(messages: list[Message]) -> list[tuple[Any, ...]]:
    return [(m.role, m.parts, m.usage, m.flags) for m in messages]


def test_details_event_as_otlp_log_records(tmp_path: Path) -> None:
    summary, corpus = imported(tmp_path, "details_logs.json")
    assert (summary.records, summary.sessions, summary.rejects) == (3, 1, 0)
    assert dict(summary.skipped) == {"no_model_call": 1, "in_session": 1}  # an HTTP log line
    row, messages = only(corpus)
    assert row["source_session_id"] == "conv-logs"
    assert json.loads(row["metadata"]) == {
        "calls": 2,
        "records": [0],
        "traces": ["4bf92f3577b34da6a3ce929d0e0e4736"],
        "models": ["gpt-4.1-2025-04-14"],
        "providers": ["openai"],
        "tools": ["get_weather"],
    }
    generic = {"type": "generic", "generic_type": "search_result",
               "source": "https://example.com/paris", "title": "Paris",
               "content": [{"type": "text", "text": "Paris is in France."}]}  # fmt: skip
    call_id = "call_VSPygqKTWdrhaFErNvMV18Yl"
    assert shape(messages) == [
        ("system", (Part.text("You are a weather agent. Use the tools."),), None, ()),
        (
            "user",
            (Part.text("Weather in Paris?"), Part("text", content=json.dumps(generic), mime_type=UNKNOWN)),
            None,
            ("unknown_part_type",),
        ),
        (
            "assistant",
            (
                Part("reasoning", content="I should call the weather tool."),
                Part.call(call_id, "get_weather", {"location": "Paris"}),
            ),
            Usage(120, 64, 30),
            (),
        ),
        ("tool", (Part.response(call_id, "rainy, 57°F", "get_weather"),), None, ()),
        (
            "assistant",
            (
                Part("reasoning", content="Answer briefly."),
                Part(
                    "text",
                    content='{"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}',
                    mime_type=UNKNOWN,
                ),
                Part.text("It is rainy in Paris, 57°F."),
            ),
            Usage(180, 128, 12),
            ("unknown_part_type",),
        ),
    ]  # fmt: skip
    assert [m.timestamp for m in messages if m.role == "assistant"] == [
        "2025-06-15T15:06:41Z",
        "2025-06-15T15:06:43Z",
    ]
    # the call with the longest history; a path into the attribute's value
    assert (
        messages[2].source_path
        == "$.resourceLogs[0].scopeLogs[0].logRecords[2].attributes[11].value[1]"
    )


def test_details_event_on_a_span_and_server_tools(tmp_path: Path) -> None:
    """The event holds the messages, the span the usage and model; a provider-run tool is a
    call and its result in the assistant message."""
    summary, corpus = imported(tmp_path, "details_span_events.json")
    assert dict(summary.skipped) == {"no_model_call": 1, "in_session": 1}  # invoke_agent span
    row, messages = only(corpus)
    assert json.loads(row["metadata"])["models"] == ["claude-sonnet-4-5-20250929"]
    results = '{"type": "web_search", "results": [{"url": "https://github.com/open-telemetry/semantic-conventions/releases", "title": "Releases"}]}'  # fmt: skip
    assert shape(messages) == [
        ("user", (Part.text("What is the latest OpenTelemetry semantic conventions release?"),), None, ()),
        (
            "assistant",
            (
                Part.call("srvtoolu_01", "web_search", {"type": "web_search", "query": "opentelemetry semconv release"}),
                Part.response("srvtoolu_01", results, "web_search"),
                Part.text("The releases page lists the newest version first."),
            ),
            Usage(400, None, 75),
            (),
        ),
        ("user", (Part.text("Thanks. Where are the GenAI conventions now?"),), None, ()),
        ("assistant", (Part.text("In the semantic-conventions-genai repository."),), Usage(950, None, 18), ()),
    ]  # fmt: skip
    assert (row["n_tool_calls"], row["n_tool_results"]) == (1, 1)


def test_details_event_flattened_log_records(tmp_path: Path) -> None:
    summary, corpus = imported(tmp_path, "details_flat.jsonl")
    assert (summary.records, summary.sessions, dict(summary.skipped)) == (2, 1, {"in_session": 1})
    row, messages = only(corpus)
    assert json.loads(row["metadata"])["providers"] == ["gcp.gemini"]
    assert shape(messages) == [
        ("system", (Part.text("You are a release assistant."), Part.text("Answer in one sentence.")), None, ()),
        ("user", (Part.text("Tag the release."),), None, ()),
        ("assistant", (Part.call("call_tag", "git_tag", {"name": "v1.2.0"}),), Usage(60, None, 9), ()),
        # the older examples name a tool result ``result``, the schema ``response``
        ("tool", (Part.response("call_tag", "created tag v1.2.0", "git_tag"),), None, ()),
        ("assistant", (Part.text("Tagged v1.2.0."),), Usage(90, None, 6), ()),
    ]  # fmt: skip
    assert messages[-1].timestamp == "2025-06-01T10:00:03.000000Z"


def test_opt_in_attributes_structured_and_as_json_text_agree(tmp_path: Path) -> None:
    """The first call wrote its attributes as JSON text, the second as structured OTLP values:
    the same messages, so one history."""
    summary, corpus = imported(tmp_path, "opt_in_attributes.json")
    assert (summary.sessions, summary.rejects, dict(summary.skipped)) == (1, 0, {"in_session": 1})
    row, messages = only(corpus)
    meta = json.loads(row["metadata"])
    assert (meta["calls"], meta["tools"]) == (2, ["approve", "post_review_comment"])
    assert shape(messages)[1] == (
        "user",
        (
            Part.text("Review this diagram and the spec."),
            Part(
                "uri", uri="https://example.com/arch.png", mime_type="image/png", modality="image"
            ),
            Part("file", id="file-spec-7", mime_type="application/pdf", modality="document"),
        ),
        None,
        (),
    )
    assert [(m.role, m.text, m.usage) for m in messages] == [
        ("system", "You review pull requests.", None),
        ("user", "Review this diagram and the spec.", None),
        ("assistant", "The diagram matches the spec, except the cache layer.", Usage(1500, None, 14)),
        ("user", "Suggest a fix.", None),
        ("assistant", "Add the cache between the API and the store.", Usage(1530, None, 11)),
    ]  # fmt: skip
    assert (row["image_count"], row["file_count"]) == (1, 1)


def test_every_part_type_of_the_schema(tmp_path: Path) -> None:
    parts = [
        {"type": "text", "content": "t"},
        {"type": "tool_call", "id": "c", "name": "f", "arguments": {"a": 1}},
        {"type": "tool_call_response", "id": "c", "response": {"ok": True}},
        {"type": "server_tool_call", "id": "s", "name": "code_execution",
         "server_tool_call": {"type": "code_interpreter", "code": "1+1"}},
        {"type": "server_tool_call_response", "id": "s",
         "server_tool_call_response": {"type": "code_interpreter", "outputs": "2"}},
        {"type": "server_tool_call", "name": "web_search", "server_tool_call": {"type": "web_search"}},
        {"type": "blob", "modality": "audio", "mime_type": "audio/wav", "content": "UklGRg=="},
        {"type": "uri", "modality": "video", "uri": "gs://bucket/v.mp4"},
        {"type": "file", "modality": "document", "file_id": "f-1"},
        {"type": "reasoning", "content": "r"},
        {"type": "compaction", "id": "cmp", "content": "summary"},
        {"type": "compaction", "id": "cmp2", "encrypted_content": "gAAAA"},
        {"type": "generic", "generic_type": "x"},
    ]  # fmt: skip
    path = write_jsonl(tmp_path / "parts.jsonl", [span("1", "p", [user("go")], [bot_parts(parts)])])
    (s,), rejects, _ = read(path)
    assert rejects == []
    assert s.messages[1].parts == (
        Part.text("t"),
        Part.call("c", "f", {"a": 1}),
        Part.response("c", '{"ok": true}', "f"),
        Part.call("s", "code_execution", {"type": "code_interpreter", "code": "1+1"}),
        Part.response("s", '{"type": "code_interpreter", "outputs": "2"}', "code_execution"),
        Part("text", content=json.dumps(parts[5]), mime_type=UNKNOWN),  # no id: cannot pair
        Part("blob", content="UklGRg==", mime_type="audio/wav", modality="audio"),
        Part("uri", uri="gs://bucket/v.mp4", modality="video"),
        Part("file", id="f-1", modality="document"),
        Part("reasoning", content="r"),
        Part.text("summary"),
        Part("text", content=json.dumps(parts[11]), mime_type=UNKNOWN),  # opaque compaction
        Part("text", content=json.dumps(parts[12]), mime_type=UNKNOWN),
    )
    assert s.messages[1].flags == ("compaction_summary", "unknown_part_type")
    assert s.metadata["compactions"] == [
        {"kind": "compaction_part", "trigger": None, "pre_tokens": None, "timestamp": None,
         "summary_seq_index": 1}
    ]  # fmt: skip


def bot_parts(parts: list[Any]) -> dict[str, Any]:
    return {"role": "assistant", "parts": parts}


# --- compactions ----------------------------------------------------------------------------


def test_a_replaced_context_is_a_recorded_compaction(tmp_path: Path) -> None:
    """The fourth call is marked gen_ai.conversation.compacted and its history starts again
    with a summary: the replaced messages stay, the summary is flagged, the kept messages (the
    open write_file call) follow it once, with the usage of the call that made them."""
    summary, corpus = imported(tmp_path, "compaction_replaced.jsonl")
    assert (summary.records, summary.sessions, dict(summary.skipped)) == (4, 1, {"in_session": 3})
    row, messages = only(corpus)
    assert row["flags"] == ["compaction_summary"]
    assert json.loads(row["metadata"])["compactions"] == [
        {"kind": "context_replaced", "trigger": None, "pre_tokens": 5200,
         "timestamp": "2025-07-01T09:03:00Z", "summary_seq_index": 5}
    ]  # fmt: skip
    assert [(m.seq, m.role, m.flags, m.usage) for m in messages] == [
        (0, "system", (), None),
        (1, "user", (), None),
        (2, "assistant", (), Usage(1000, None, 50)),
        (3, "tool", (), None),
        (4, "assistant", (), Usage(5000, None, 80)),
        (5, "user", (FLAG_COMPACTION_SUMMARY,), None),
        (6, "user", (), None),
        (7, "assistant", (), Usage(5200, None, 120)),
        (8, "tool", (), None),
        (9, "assistant", (), Usage(900, None, 40)),
    ]
    assert messages[5].text.startswith("Summary of the conversation so far")
    assert [p.id for m in messages for p in m.calls] == ["c1", "c2"]  # the kept call once
    visible = [m for m in messages if m.visible]
    assert [m.seq for m in prefix_of(visible, 9)] == [5, 6, 7, 8]  # what the agent had

    cases = build_cases(corpus, [parse_trigger("compactions")])
    assert cases.height == 1
    case = cases.row(0, named=True)
    assert (case["cut"], case["prefix_messages"], case["future_start"]) == (5, 5, 6)

    from ctxreplay.datasets.cases import write_cases
    from ctxreplay.engines.replay import run_replay
    from ctxreplay.runs import Run

    cases_path = tmp_path / "cases.parquet"
    write_cases(cases, cases_path, {})
    run_replay(corpus.path, cases_path, ["recorded", "noop"], tmp_path / "run", workers=1,
               progress=False)  # fmt: skip
    view = Run(tmp_path / "run").load_view(f"{row['session_id']}@5", "recorded")
    assert [m.role for m in view][:2] == ["system", "user"]
    assert view[1].text == f"<ctxreplay:summary>{messages[5].text}</ctxreplay:summary>"
    assert len(view) < 5  # the replaced tool output is gone
    assert len(Run(tmp_path / "run").load_view(f"{row['session_id']}@5", "noop")) == 5


def test_compaction_parts_and_provider_side_compaction(tmp_path: Path) -> None:
    summary, corpus = imported(tmp_path, "compaction_part.jsonl")
    assert (summary.sessions, summary.rejects, dict(summary.skipped)) == (2, 0, {"in_session": 3})
    by_id = {r["source_session_id"]: r for r in corpus.sessions().to_dicts()}
    part = corpus.load_session(by_id["conv-part"]["session_id"])
    # the compaction block came back in a response; later calls send it back with the full
    # history (the provider drops what came before it): flagged once, in place
    assert [(m.role, m.flags) for m in part] == [
        ("system", ()), ("user", ()), ("assistant", ()), ("user", ()),
        ("assistant", (FLAG_COMPACTION_SUMMARY,)), ("user", ()), ("assistant", ()),
    ]  # fmt: skip
    assert part[4].parts == (
        Part.text("Summary: a four-step migration plan; steps 1-2 are done."),
        Part.text("Loading the converted data now."),
    )
    assert json.loads(by_id["conv-part"]["metadata"])["compactions"] == [
        {"kind": "compaction_part", "trigger": None, "pre_tokens": 150000,
         "timestamp": "2025-07-02T09:01:05Z", "summary_seq_index": 4}
    ]  # fmt: skip
    # the second conversation was compacted by the provider: the history the client sent
    # goes on; there is no summary to cut at
    provider = json.loads(by_id["conv-prov"]["metadata"])
    assert provider["compactions"] == [
        {"kind": "provider_side", "trigger": None, "pre_tokens": 30,
         "timestamp": "2025-07-02T10:01:00Z", "summary_seq_index": None}
    ]  # fmt: skip
    assert by_id["conv-prov"]["flags"] is None or by_id["conv-prov"]["flags"] == []
    cases = build_cases(corpus, [parse_trigger("compactions")])
    assert cases["cut"].to_list() == [4]


def test_an_opaque_compaction_item_passed_back_is_one_compaction(tmp_path: Path) -> None:
    """OpenAI-style: the client sends the compacted window (kept user message, then the
    opaque item) instead of the history; the item is the summary, flagged where it first
    appears, and not again when a later call sends it back."""
    item = {"role": "assistant", "parts": [{"type": "compaction", "id": "cmp_9", "encrypted_content": "gAAA"}]}  # fmt: skip
    rows = [
        span("1", "o", [user("a")], [bot("b")]),
        span("2", "o", [user("a"), item, user("c")], [bot("d")]),
        span("3", "o", [user("a"), item, user("c"), bot("d"), user("e")], [bot("f")]),
    ]
    (s,), rejects, importer = read(write_jsonl(tmp_path / "o.jsonl", rows))
    assert rejects == []
    assert [(m.role, m.text, FLAG_COMPACTION_SUMMARY in m.flags) for m in s.messages] == [
        ("user", "a", False),
        ("assistant", "b", False),
        ("assistant", json.dumps(item["parts"][0]), True),
        ("user", "c", False),
        ("assistant", "d", False),
        ("user", "e", False),
        ("assistant", "f", False),
    ]
    assert [c["kind"] for c in s.metadata["compactions"]] == ["compaction_part"]
    assert "conversation_split" not in s.messages[0].flags
    assert dict(importer.tally.skipped) == {"in_session": 2}


def test_a_disagreeing_call_without_compaction_is_still_a_split(tmp_path: Path) -> None:
    rows = [
        span("1", "s", [user("a")], [bot("b")]),
        span("2", "s", [user("summary"), user("c")], [bot("d")]),  # not marked compacted
    ]
    sessions, _, _ = read(write_jsonl(tmp_path / "s.jsonl", rows))
    assert len(sessions) == 2 and all("compactions" not in s.metadata for s in sessions)
    rows[1]["attributes"]["gen_ai.conversation.compacted"] = True
    (s,), _, _ = read(write_jsonl(tmp_path / "c.jsonl", rows))
    assert [(m.text, m.flags) for m in s.messages] == [
        ("a", ()), ("b", ()), ("summary", (FLAG_COMPACTION_SUMMARY,)), ("c", ()), ("d", ()),
    ]  # fmt: skip


# --- per-message events (v1.36 and earlier) ----------------------------------------------------


def test_per_message_log_events_with_their_spans(tmp_path: Path) -> None:
    summary, corpus = imported(tmp_path, "legacy_events_logs.jsonl")
    # 2 spans (their usage goes onto the calls), 8 log records: one per call stands for it
    assert (summary.records, summary.sessions, summary.rejects) == (10, 1, 0)
    assert dict(summary.skipped) == {"no_model_call": 2, "in_session": 1, "in_call": 6}
    row, messages = only(corpus)
    assert row["source_session_id"] == "7c1d6b3f0c7a4e7f9d2b1a0e5f6a7b8c"  # its trace
    meta = json.loads(row["metadata"])
    assert (meta["records"], meta["providers"]) == ([1, 2], ["openai"])
    assert meta["models"] == ["gpt-4o-mini-2024-07-18"]
    call = Part.call("call_abc", "get_weather", '{"location": "Oslo"}')
    assert shape(messages) == [
        ("system", (Part.text("You are a weather bot."),), None, ()),
        ("user", (Part.text("Weather in Oslo?"),), None, ()),
        ("assistant", (call,), Usage(82, None, 17), ()),
        ("tool", (Part.response("call_abc", "-3°C, snow", "get_weather"),), None, ()),
        ("assistant", (Part.text("It is -3°C and snowing in Oslo."),), Usage(120, None, 11), ()),
    ]
    assert [m.timestamp for m in messages if m.role == "assistant"] == [
        "2025-02-19T21:20:01Z",
        "2025-02-19T21:20:03Z",
    ]


def test_per_message_span_events(tmp_path: Path) -> None:
    summary, corpus = imported(tmp_path, "legacy_span_events.json")
    assert (summary.records, summary.sessions, dict(summary.skipped)) == (2, 1, {"in_session": 1})
    row, messages = only(corpus)
    assert json.loads(row["metadata"])["providers"] == ["az.ai.inference"]
    assert shape(messages) == [
        ("system", (Part.text("You help travellers."),), None, ()),
        ("user", (Part.text("Is SK1463 on time?"),), None, ()),
        ("assistant", (Part.call("call_1", "get_flight_status", '{"flight": "SK1463"}'),), Usage(64, None, 22), ()),
        ("tool", (Part.response("call_1", "delayed 20 minutes", "get_flight_status"),), None, ()),
        ("assistant", (Part.text("SK1463 is delayed by 20 minutes."),), Usage(101, None, 9), ()),
    ]  # fmt: skip


def _log(name: str, body: Any, **extra: Any) -> dict[str, Any]:
    return {"body": body, "attributes": {"gen_ai.system": "openai"}, "event_name": name,
            "timestamp": extra.pop("t", None), **extra}  # fmt: skip


def test_log_events_without_span_ids_are_grouped_by_runs(tmp_path: Path) -> None:
    """No span context: each run of message events and the choices after it is a call."""
    rows = [
        _log("gen_ai.user.message", {"content": "one"}, trace_id="t"),
        _log("gen_ai.choice", {"index": 0, "message": {"content": "two"}}, trace_id="t"),
        _log("gen_ai.user.message", {"content": "one"}, trace_id="t"),
        _log("gen_ai.assistant.message", {"content": "two"}, trace_id="t"),
        _log("gen_ai.user.message", {"content": "three"}, trace_id="t"),
        _log("gen_ai.choice", {"index": 1, "message": {"content": "four-b"}}, trace_id="t"),
        _log("gen_ai.choice", {"index": 0, "message": {"content": "four"}}, trace_id="t"),
    ]
    (s,), rejects, importer = read(write_jsonl(tmp_path / "runs.jsonl", rows))
    assert rejects == [] and s.key == "trace:t"
    assert [(m.role, m.text) for m in s.messages] == [
        ("user", "one"), ("assistant", "two"), ("user", "three"), ("assistant", "four"),
        ("assistant", "four-b"),
    ]  # fmt: skip
    assert s.metadata["records"] == list(range(7))
    assert dict(importer.tally.skipped) == {"in_session": 1, "in_call": 5}


def test_bad_per_message_events_reject_alone(tmp_path: Path) -> None:
    rows = [
        _log("gen_ai.user.message", {"content": "hi"}, trace_id="t", span_id="s1"),
        _log("gen_ai.tool.message", {"content": "no id"}, trace_id="t", span_id="s1"),
        _log("gen_ai.choice", {"index": 0, "message": "not a message"}, trace_id="t", span_id="s1"),
        _log("gen_ai.choice", {"index": 0, "message": {"content": "hello"}}, trace_id="t", span_id="s1"),
    ]  # fmt: skip
    path = write_jsonl(tmp_path / "bad.jsonl", rows)
    (s,), rejects, _ = read(path)
    assert [(r.record, r.reason, r.json_path) for r in rejects] == [
        (1, "wrong_type", "$.body.id"),
        (2, "wrong_type", "$.body.message"),
    ]
    assert rejects[0].raw == json.dumps(rows[1]).encode()
    assert [(m.role, m.text) for m in s.messages] == [("user", "hi"), ("assistant", "hello")]
    assert "conversation_incomplete" in s.messages[0].flags
    summary = import_paths([path], tmp_path / "c", progress=False)
    assert summary.records == summary.sessions + summary.rejects + sum(summary.skipped.values())
    assert (summary.sessions, summary.rejects, dict(summary.skipped)) == (1, 2, {"in_call": 1})


def test_a_rejected_session_rejects_every_event_it_was_read_from(tmp_path: Path) -> None:
    rows = [  # the tool result answers a call nobody made: the session is invalid
        _log("gen_ai.user.message", {"content": "hi"}, trace_id="t", span_id="s1"),
        _log("gen_ai.tool.message", {"content": "x", "id": "ghost"}, trace_id="t", span_id="s1"),
        _log("gen_ai.choice", {"index": 0, "message": {"content": "ok"}}, trace_id="t", span_id="s1"),
    ]  # fmt: skip
    summary = import_paths(
        [write_jsonl(tmp_path / "o.jsonl", rows)], tmp_path / "c", progress=False
    )
    assert (summary.sessions, dict(summary.rejected), dict(summary.skipped)) == (
        0, {"orphan_tool_result": 3}, {}
    )  # fmt: skip
    assert summary.unaccounted == 0


def test_current_attributes_win_over_per_message_events(tmp_path: Path) -> None:
    both = span("1", "w", [user("new")], [bot("new answer")])
    both["events"] = [{"name": "gen_ai.user.message", "attributes": {"gen_ai.event.content": '{"content": "old"}'}}]  # fmt: skip
    (s,), _, _ = read(write_jsonl(tmp_path / "w.jsonl", [both]))
    assert [m.text for m in s.messages] == ["new", "new answer"]


# --- every new fixture: accounting, round trip, detection ---------------------------------------


@pytest.mark.parametrize("name", NEW)
def test_new_fixture_accounts_for_every_record(name: str, tmp_path: Path) -> None:
    summary, corpus = imported(tmp_path, name)
    assert summary.rejects == 0 and summary.sessions >= 1
    assert summary.records == summary.sessions + summary.rejects + sum(summary.skipped.values())
    assert summary.unaccounted == 0
    sessions = corpus.sessions()
    assert (sessions["usage_prompt_tokens"] > 0).all() and (sessions["tokens"] > 0).all()


def test_new_fixtures_round_trip_through_export(tmp_path: Path) -> None:
    from test_export_roundtrip import assert_same_tables, roundtrip

    a, b, _, _ = roundtrip([OTEL / n for n in NEW], tmp_path, sessions=9)
    assert_same_tables(a, b)


def test_new_fixtures_are_detected_and_no_other_fixture_is_taken() -> None:
    otel = get_importer("otel-genai")
    for name in NEW:
        assert detect(OTEL / name) == "otel-genai", name
        # nobody else claims it
        assert dict(scores(OTEL / name)) == {"otel-genai": MESSAGES_SCORE}, name
    for path in sorted(FIXTURES.rglob("*")):
        if not path.is_file() or path.parent == OTEL:
            continue
        try:
            assert detect(path) != "otel-genai", path
        except AmbiguousFormat as e:
            assert "otel-genai" not in str(e), path
        except Exception:  # a file no importer reads: not ours either
            pass
        assert otel.sniff(path, path.read_bytes()[:65536]) == 0.0, path


def test_openinference_spans_without_genai_messages_score_zero(tmp_path: Path) -> None:
    otel = get_importer("otel-genai")
    flat = {"name": "ChatCompletion", "span_kind": "LLM", "context": {"trace_id": "t", "span_id": "s"},
            "start_time": "2025-01-01T00:00:00Z",
            "attributes": {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o",
                           "llm.input_messages.0.message.role": "user",
                           "llm.input_messages.0.message.content": "hi",
                           "llm.output_messages.0.message.role": "assistant",
                           "llm.output_messages.0.message.content": "hello",
                           "session.id": "sess-1"}}  # fmt: skip
    nested = {**flat, "attributes": {"openinference": {"span": {"kind": "LLM"}},
                                     "llm": {"input_messages": [{"message": {"role": "user"}}]}}}  # fmt: skip
    otlp = {"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "t", "spanId": "s", "name": "ChatCompletion",
        "attributes": [{"key": k, "value": {"stringValue": str(v)}} for k, v in flat["attributes"].items()],
    }]}]}]}  # fmt: skip
    for n, doc in enumerate([flat, nested, otlp]):
        path = tmp_path / f"oi{n}.json"
        path.write_text(json.dumps(doc))
        assert otel.sniff(path, path.read_bytes()) == 0.0, doc
    # the same span carrying GenAI messages is ours again
    flat["attributes"]["gen_ai.input.messages"] = [user("hi")]
    path = tmp_path / "both.json"
    path.write_text(json.dumps(flat))
    assert otel.sniff(path, path.read_bytes()) > SURE_SCORE
