"""Phoenix / OpenInference spans: flattened and nested attributes, OTLP JSON, Parquet.

The fixtures under tests/fixtures/phoenix/ follow the OpenInference semantic conventions
(``Arize-ai/openinference`` ``spec/semantic_conventions.md``: ``openinference.span.kind``,
``llm.input_messages.N.message.role`` / ``.message.content`` / ``.message.contents.M.message_content.*``
/ ``.message.tool_calls.K.tool_call.{id,function.name,function.arguments}``,
``message.tool_call_id``, ``llm.token_count.prompt`` / ``completion`` /
``prompt_details.cache_read``, ``llm.model_name``, ``session.id``, ``user.id``, ``tool.name``,
``input.value`` / ``output.value``) and Phoenix's span shapes: the REST API's ``Span`` model
(``src/phoenix/server/api/routers/v1/spans.py``: ``context {trace_id, span_id}``, ``span_kind``,
``parent_id``, flattened ``attributes``) for ``spans_flat.jsonl``, the span JSON encoder's
(``phoenix.trace.span_json_encoder``, nested ``attributes``) for ``spans_nested.json`` (the same
spans), and OTLP JSON for ``otlp_openinference.json``. The Parquet file of the tests is built
here in the ``TraceDataset`` layout (``context.span_id`` and ``attributes.*`` columns).
"""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_export_roundtrip import MESSAGE_COLUMNS, assert_same_tables, roundtrip

from ctxreplay.datasets.importers import MIN_SCORE, AmbiguousFormat, detect, get_importer
from ctxreplay.datasets.importers.phoenix import PhoenixImporter
from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.messages import Part, Session, Usage
from ctxreplay.datasets.rejects import Reject
from ctxreplay.datasets.store import Corpus

FIX = Path(__file__).resolve().parent.parent / "fixtures"
PX = FIX / "phoenix"
TRAVEL = [
    ("system", (Part.text("You book travel. Use the tools."),)),
    ("user", (Part.text("Find me a flight from Oslo to Rome on May 3."),)),
    (
        "assistant",
        (
            Part.call(
                "call_f1", "search_flights", '{"from": "OSL", "to": "FCO", "date": "2025-05-03"}'
            ),
        ),
    ),
    (
        "tool",
        (Part.response("call_f1", '[{"flight": "SK4711", "price_eur": 189}]', "search_flights"),),
    ),
    ("assistant", (Part.text("SK4711 leaves Oslo on May 3 for 189 EUR. Shall I book it?"),)),
    ("user", (Part.text("Yes, book it."),)),
    (
        "assistant",
        (Part.text("Booking now."), Part.call("call_b1", "book_flight", '{"flight": "SK4711"}')),
    ),
    # the run ended after the booking tool ran: its TOOL span answers the last call
    (
        "tool",
        (
            Part.response(
                "call_b1", '{"booking": "PNR-7Q2K", "status": "confirmed"}', "book_flight"
            ),
        ),
    ),
]


def read(path: Path) -> tuple[list[Session], list[Reject], PhoenixImporter]:
    importer = get_importer("phoenix")
    assert isinstance(importer, PhoenixImporter)
    items = list(importer.read(path))
    sessions = [i for i in items if isinstance(i, Session)]
    rejects = [i for i in items if isinstance(i, Reject)]
    assert len(sessions) + len(rejects) == len(items)
    return sessions, rejects, importer


def corpus_of(paths: list[Path], out: Path) -> tuple[Any, Corpus]:
    summary = import_paths(paths, out, progress=False)
    assert summary.records == summary.sessions + summary.rejects + sum(summary.skipped.values())
    assert summary.unaccounted == 0
    return summary, Corpus(out)


def span(
    sid: str, kind: str, attrs: dict[str, Any], trace: str = "t", start: str = "1"
) -> dict[str, Any]:
    return {"name": kind.lower(), "context": {"trace_id": trace, "span_id": sid}, "span_kind": kind,
            "parent_id": None, "start_time": start, "attributes": attrs}  # fmt: skip


def llm(inputs: list[tuple[str, str]], output: str, **extra: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {"openinference.span.kind": "LLM", **extra}
    for i, (role, text) in enumerate(inputs):
        attrs[f"llm.input_messages.{i}.message.role"] = role
        attrs[f"llm.input_messages.{i}.message.content"] = text
    attrs["llm.output_messages.0.message.role"] = "assistant"
    attrs["llm.output_messages.0.message.content"] = output
    return attrs


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def parquet_of(source: Path, out: Path) -> Path:
    """The nested fixture's spans as Phoenix's ``TraceDataset`` table (``json_normalize`` at
    level 1: ``context.*`` and ``attributes.*`` columns; times as timestamps)."""
    rows = []
    for s in json.loads(source.read_text()):
        row = {
            k: s[k]
            for k in ("name", "span_kind", "parent_id", "start_time", "end_time", "status_code")
        }
        row |= {f"context.{k}": v for k, v in s["context"].items()}
        row |= {f"attributes.{k}": v for k, v in s["attributes"].items()}
        rows.append(row)
    frame = pl.DataFrame(rows, infer_schema_length=None).with_columns(
        pl.col("start_time", "end_time").str.to_datetime(time_zone="UTC")
    )
    frame.write_parquet(out)
    return out


# --- the fixtures -------------------------------------------------------------------------------


def test_flattened_spans_rebuild_the_session(tmp_path: Path) -> None:
    summary, corpus = corpus_of([PX / "spans_flat.jsonl"], tmp_path / "c")
    assert (summary.records, summary.sessions, summary.rejects) == (7, 1, 0)
    assert dict(summary.skipped) == {
        "in_session": 3,  # two earlier LLM calls and the booking tool run
        "not_a_model_call": 2,  # the AGENT and the CHAIN
        "tool_in_history": 1,  # search_flights: the next call's input holds its result
    }
    (row,) = corpus.sessions().to_dicts()
    assert row["source_session_id"] == "sess-travel"  # session.id is on the root AGENT span only
    assert (row["n_messages"], row["n_tool_calls"], row["n_tool_results"]) == (8, 2, 2)
    assert row["tokens"] > 0 and row["usage_cached_tokens"] == 256 + 384
    assert json.loads(row["metadata"]) == {
        "calls": 3,
        "records": [1, 3, 5, 6],
        "traces": ["6c1bd4f1ad8a4e7f9d3b1c0a5e2f7d90"],
        "models": ["gpt-4o-2024-11-20"],
        "tool_runs": 1,
        "providers": ["openai"],
        "systems": ["openai"],
        "user_ids": ["traveller-1"],
    }
    messages = corpus.load_session(row["session_id"])
    assert [(m.role, m.parts) for m in messages] == TRAVEL
    assert [(m.usage, m.timestamp) for m in messages if m.role == "assistant"] == [
        (Usage(310, None, 41), "2025-04-28T09:00:01.500+00:00"),
        (Usage(402, 256, 22), "2025-04-28T09:00:03.900+00:00"),
        (Usage(460, 384, 30), "2025-04-28T09:00:06.000+00:00"),
    ]
    assert messages[-1].timestamp == "2025-04-28T09:00:08.000+00:00"


def test_nested_and_flattened_attributes_give_identical_sessions(tmp_path: Path) -> None:
    _, flat = corpus_of([PX / "spans_flat.jsonl"], tmp_path / "flat")
    _, nested = corpus_of([PX / "spans_nested.json"], tmp_path / "nested")
    assert flat.sessions()["session_id"].to_list() == nested.sessions()["session_id"].to_list()
    assert flat.messages().select(MESSAGE_COLUMNS).equals(nested.messages().select(MESSAGE_COLUMNS))
    assert flat.sessions()["metadata"].to_list() == nested.sessions()["metadata"].to_list()
    (row,) = nested.sessions().to_dicts()
    assert [(m.role, m.parts) for m in nested.load_session(row["session_id"])] == TRAVEL


def test_the_same_session_in_two_files_is_imported_once(tmp_path: Path) -> None:
    summary, _ = corpus_of([PX / "spans_flat.jsonl", PX / "spans_nested.json"], tmp_path / "c")
    assert (summary.sessions, dict(summary.rejected)) == (1, {"duplicate_session": 1})


def test_otlp_document_with_media_reasoning_and_a_call_without_id(tmp_path: Path) -> None:
    summary, corpus = corpus_of([PX / "otlp_openinference.json"], tmp_path / "c")
    assert (summary.records, summary.sessions, summary.rejects) == (3, 1, 0)  # the doc's 3 spans
    assert dict(summary.skipped) == {"in_session": 1, "not_a_model_call": 1}
    (row,) = corpus.sessions().to_dicts()
    assert row["source_session_id"] == "0af7651916cd43dd8448eb211c80319c"  # no session: the trace
    assert row["image_count"] == 1
    messages = corpus.load_session(row["session_id"])
    assert [(m.role, m.parts) for m in messages] == [
        (
            "user",
            (
                Part.text("Which landmark is this? Look it up."),
                Part("blob", content="/9j/4AAQSkZJRg==", mime_type="image/jpeg", modality="image"),
            ),
        ),
        (
            "assistant",
            (
                Part("reasoning", content="It looks like the Colosseum; confirm."),
                # recorded without an id: named by its place, and the TOOL span matched by name
                Part.call("oi-call-1-0", "wiki_lookup", '{"title": "Colosseum"}'),
            ),
        ),
        (
            "tool",
            (
                Part.response(
                    "oi-call-1-0", "The Colosseum is an amphitheatre in Rome.", "wiki_lookup"
                ),
            ),
        ),
    ]
    assert (messages[1].usage, messages[1].timestamp) == (
        Usage(1620, None, 58),
        "2025-04-28T09:00:02Z",
    )


def _snake(value: Any) -> Any:
    names = {"stringValue": "string_value", "intValue": "int_value"}
    if isinstance(value, dict):
        return {names.get(k, k): _snake(v) for k, v in value.items()}
    return [_snake(v) for v in value] if isinstance(value, list) else value


def test_rest_otlpv1_page_with_snake_case_values(tmp_path: Path) -> None:
    """``GET /v1/projects/{project}/spans/otlpv1``: OTLP spans under ``data``, pydantic's field
    names (``trace_id``, ``start_time_unix_nano``, ``string_value``)."""
    doc = json.loads((PX / "otlp_openinference.json").read_text())
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    page = {"next_cursor": None, "data": [
        {"trace_id": s["traceId"], "span_id": s["spanId"], "parent_span_id": s.get("parentSpanId"),
         "name": s["name"], "start_time_unix_nano": int(s["startTimeUnixNano"]),
         "end_time_unix_nano": int(s["endTimeUnixNano"]), "attributes": _snake(s["attributes"]),
         "status": {"code": 1}}
        for s in spans
    ]}  # fmt: skip
    path = tmp_path / "page.json"
    path.write_text(json.dumps(page))
    assert detect(path) == "phoenix"
    (s,), rejects, importer = read(path)
    assert rejects == [] and importer.tally.seen == 3
    (expected,), _, _ = read(PX / "otlp_openinference.json")
    assert [(m.role, m.parts, m.usage, m.timestamp) for m in s.messages] == [
        (m.role, m.parts, m.usage, m.timestamp) for m in expected.messages
    ]


def test_parquet_span_table(tmp_path: Path) -> None:
    path = parquet_of(PX / "spans_nested.json", tmp_path / "spans.parquet")
    assert detect(path) == "phoenix"
    summary, corpus = corpus_of([path], tmp_path / "c")
    assert (summary.records, summary.sessions, summary.rejects) == (7, 1, 0)
    (row,) = corpus.sessions().to_dicts()
    messages = corpus.load_session(row["session_id"])
    assert [(m.role, m.parts) for m in messages] == TRAVEL
    assert messages[2].timestamp == "2025-04-28T09:00:01.500000+00:00"  # a Parquet timestamp


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("spans_flat.jsonl", (7, 1, 0)),
        ("spans_nested.json", (7, 1, 0)),
        ("otlp_openinference.json", (3, 1, 0)),
    ],
)
def test_every_span_is_accounted_for(
    name: str, expected: tuple[int, int, int], tmp_path: Path
) -> None:
    summary, _ = corpus_of([PX / name], tmp_path / "c")
    assert (summary.records, summary.sessions, summary.rejects) == expected
    assert summary.by_format == {"phoenix": 1}


def test_roundtrip_through_export(tmp_path: Path) -> None:
    a, b, _, _ = roundtrip([PX / "spans_flat.jsonl", PX / "otlp_openinference.json"], tmp_path, 2)
    assert_same_tables(a, b)
    c, d, _, _ = roundtrip([PX / "spans_nested.json"], tmp_path / "nested", 1)
    assert_same_tables(c, d)


def test_detection() -> None:
    phoenix = get_importer("phoenix")
    for path in sorted(PX.iterdir()):
        assert detect(path) == "phoenix", path
    others = [p for p in FIX.rglob("*") if p.is_file() and p.parent.name != "phoenix"]
    assert len(others) > 50
    for path in others:
        assert phoenix.sniff(path, path.read_bytes()[: 1 << 20]) < MIN_SCORE, path
        try:
            assert detect(path) != "phoenix", path
        except AmbiguousFormat as e:  # never because of this format
            assert "phoenix" not in {name for name, _ in e.candidates}, path
    for path in sorted((FIX / "otel").iterdir()):  # OTel GenAI spans stay otel-genai's...
        assert detect(path) == "otel-genai"
        assert phoenix.sniff(path, path.read_bytes()) == 0.0
    for path in sorted(PX.iterdir()):  # ...and OpenInference spans are not otel-genai's
        assert get_importer("otel-genai").sniff(path, path.read_bytes()) < MIN_SCORE


def test_spans_with_genai_messages_are_otel_genai(tmp_path: Path) -> None:
    both = span("s", "LLM", {**llm([("user", "a")], "b"), "gen_ai.input.messages": "[]"})
    path = write_jsonl(tmp_path / "both.jsonl", [both])
    assert get_importer("phoenix").sniff(path, path.read_bytes()) == 0.0


# --- pairing and grouping -----------------------------------------------------------------------


def test_tool_results_without_ids_answer_the_open_calls_in_order(tmp_path: Path) -> None:
    attrs = {
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "weather and time?",
        "llm.input_messages.1.message.role": "assistant",
        "llm.input_messages.1.message.tool_calls.0.tool_call.function.name": "weather",
        "llm.input_messages.1.message.tool_calls.0.tool_call.function.arguments": "{}",
        "llm.input_messages.1.message.tool_calls.1.tool_call.function.name": "clock",
        "llm.input_messages.1.message.tool_calls.1.tool_call.function.arguments": "{}",
        "llm.input_messages.2.message.role": "tool",
        "llm.input_messages.2.message.name": "clock",
        "llm.input_messages.2.message.content": "noon",
        "llm.input_messages.3.message.role": "tool",
        "llm.input_messages.3.message.content": "sunny",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": "Sunny at noon.",
    }
    (s,), rejects, _ = read(write_jsonl(tmp_path / "anon.jsonl", [span("s1", "LLM", attrs)]))
    assert rejects == []
    assert [p for m in s.messages for p in m.parts if p.type != "text"] == [
        Part.call("oi-call-1-0", "weather", "{}"),
        Part.call("oi-call-1-1", "clock", "{}"),
        Part.response("oi-call-1-1", "noon", "clock"),  # by name
        Part.response("oi-call-1-0", "sunny", "weather"),  # the earliest open call
    ]


def test_llm_span_without_message_attributes_reads_input_and_output_value(tmp_path: Path) -> None:
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    response = {"choices": [{"message": {"role": "assistant", "content": "hello"}}]}
    attrs = {"input.value": json.dumps(request), "output.value": json.dumps(response),
             "input.mime_type": "application/json", "llm.token_count.prompt": 3}  # fmt: skip
    rows = [span("s1", "LLM", attrs), span("s2", "LLM", {"llm.model_name": "m"}, trace="u")]
    sessions, rejects, importer = read(write_jsonl(tmp_path / "values.jsonl", rows))
    assert rejects == []
    (s,) = sessions
    assert [(m.role, m.text, m.usage) for m in s.messages] == [
        ("user", "hi", None),
        ("assistant", "hello", Usage(3, None, None)),
    ]
    assert dict(importer.tally.skipped) == {"no_messages": 1}
    assert importer.ignored_records == [1]


def test_calls_that_disagree_are_split(tmp_path: Path) -> None:
    rows = [
        span("a", "LLM", llm([("user", "a")], "b", **{"session.id": "s"}), start="1"),
        span("b", "LLM", llm([("user", "a"), ("assistant", "OTHER"), ("user", "c")], "d",
                             **{"session.id": "s"}), start="2"),
    ]  # fmt: skip
    sessions, rejects, _ = read(write_jsonl(tmp_path / "split.jsonl", rows))
    assert rejects == []
    assert [(s.key, [m.text for m in s.messages]) for s in sessions] == [
        ("phoenix:session:s", ["a", "OTHER", "c", "d"]),
        ("phoenix:session:s#2", ["a", "b"]),
    ]
    assert all("conversation_split" in s.messages[0].flags for s in sessions)


# --- bad input ------------------------------------------------------------------------------


def test_malformed_spans_are_rejected_with_their_bytes_and_the_rest_imports(tmp_path: Path) -> None:
    good = [
        span("a", "LLM", llm([("user", "a")], "b", **{"session.id": "s"}), start="1"),
        span("b", "LLM", llm([("user", "a"), ("assistant", "b"), ("user", "c")], "d",
                             **{"session.id": "s"}), start="3"),
    ]  # fmt: skip
    bad_index = span("x", "LLM", {**llm([("user", "a")], "z"), "session.id": "s",
                                  "llm.input_messages.first.message.role": "user"})  # fmt: skip
    bad_attrs = {"name": "n", "context": {"trace_id": "t", "span_id": "y"}, "attributes": "oops"}
    bad_count = span(
        "w", "LLM", llm([("user", "q")], "r", **{"llm.token_count.prompt": "many"}), trace="v"
    )
    lines = [json.dumps(good[0]), json.dumps(bad_index), "[{oops", json.dumps(bad_attrs),
             json.dumps(bad_count), json.dumps(good[1])]  # fmt: skip
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    summary, corpus = corpus_of([path], tmp_path / "c")
    assert (summary.records, summary.sessions, summary.rejects) == (6, 2, 3)
    rejects = corpus.rejects().sort("record").to_dicts()
    assert [(r["record"], r["reason"], r["json_path"]) for r in rejects] == [
        (1, "malformed", '$.attributes["llm.input_messages.first.message.role"]'),
        (2, "invalid_json", "$"),
        (3, "wrong_type", "$.attributes"),
    ]
    assert [r["raw"] for r in rejects] == [lines[1].encode(), lines[2].encode(), lines[3].encode()]
    sessions = {r["source_session_id"]: r for r in corpus.sessions().to_dicts()}
    main = corpus.load_session(sessions["s"]["session_id"])
    assert [m.text for m in main] == ["a", "b", "c", "d"]
    assert "conversation_incomplete" in main[0].flags
    odd = corpus.load_session(sessions["v"]["session_id"])  # an unusable count: dropped, flagged
    assert (odd[1].usage, odd[1].flags) == (None, ("usage_out_of_range",))


def test_a_session_that_fails_validation_rejects_every_span_of_it(tmp_path: Path) -> None:
    attrs = llm([("user", "a")], "b", **{"session.id": "s"})
    attrs |= {"llm.input_messages.1.message.role": "assistant", "llm.input_messages.1.message.content": "b",
              "llm.input_messages.2.message.role": "tool", "llm.input_messages.2.message.tool_call_id": "ghost",
              "llm.input_messages.2.message.content": "x"}  # fmt: skip
    rows = [
        span("a", "LLM", llm([("user", "a")], "b", **{"session.id": "s"})),
        span("b", "LLM", attrs),
    ]
    sessions, rejects, importer = read(write_jsonl(tmp_path / "orphan.jsonl", rows))
    assert sessions == []
    assert sorted((r.record, r.reason, r.session_id) for r in rejects) == [
        (0, "orphan_tool_result", "s"),
        (1, "orphan_tool_result", "s"),
    ]
    assert importer.tally.seen == 2


def test_a_damaged_parquet_file_is_one_reject(tmp_path: Path) -> None:
    path = parquet_of(PX / "spans_nested.json", tmp_path / "spans.parquet")
    data = bytearray(path.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = b"\x00" * 64
    path.write_bytes(bytes(data))
    sessions, rejects, importer = read(path)
    if rejects:  # the damage may also fall where Parquet does not notice it
        assert sessions == [] and [r.reason for r in rejects] == ["unreadable_file"]
    assert importer.tally.seen == len(sessions) + len(rejects) + sum(
        importer.tally.skipped.values()
    )


@settings(
    max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(seed=st.integers(0, 2**32 - 1))
def test_mutated_parquet_never_raises_and_accounts_for_every_row(seed: int) -> None:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = parquet_of(PX / "spans_nested.json", Path(tmp) / "p.parquet")
        data = bytearray(path.read_bytes())
        if rng.random() < 0.5:
            data = data[: rng.randrange(4, len(data))]
        else:
            for at in rng.sample(range(4, len(data)), 4):
                data[at] ^= rng.randint(1, 255)
        path.write_bytes(bytes(data))
        sessions, rejects, importer = read(path)
    tally = importer.tally
    assert tally.seen == len(sessions) + len(rejects) + sum(tally.skipped.values())
