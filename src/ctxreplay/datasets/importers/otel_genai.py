"""OpenTelemetry GenAI semantic conventions: model-call spans, span events and log records.

Input is JSON or JSONL of OTLP JSON (``resourceSpans[].scopeSpans[].spans[]``,
``resourceLogs[].scopeLogs[].logRecords[]``, attributes as ``[{key, value{stringValue|intValue|
doubleValue|boolValue|arrayValue|kvlistValue}}]``) or of flattened span dicts (``attributes`` a
plain object, as the SDK's console exporter and most vendors write them), alone, in a list, or
under ``spans``. A model call carries ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON
text or arrays of ``{role, parts[{type: text|tool_call|tool_call_response|reasoning|blob|uri|file}],
finish_reason}``) and optionally ``gen_ai.system_instructions`` (a list of parts or a string), on
the span, on one of its events, or on a log record. Spans without these are ignored (their record
indexes are listed in ``ignored_records``); a messages attribute that is not valid JSON rejects
that span (the reject names the attribute's JSON path; ``raw`` is the record holding it). When a
rebuilt conversation fails validation, every record that contributed a call is rejected with it.

Sessions. ``gen_ai.conversation.id`` is the session key (also OpenInference ``session.id`` and
Langfuse ``session_id`` / ``langfuse.session.id``; a span without one takes the id of another span
of its trace, else its trace id stands for the conversation). Every call repeats the history, so
calls are ordered by start time and the session is the history of the call with the longest
history (the latest among equals) followed by its output messages. Each other call's input and
output must be a prefix of that; a mismatch is noted in ``metadata.history_mismatch``, never fatal.
Each call's usage (``gen_ai.usage.input_tokens``, ``output_tokens``,
``cache_read.input_tokens``) and end time go onto the output message it produced.

Grouping is per file, over all its records. The session key is the conversation id alone, without
the file's digest, so one conversation id maps to one session id wherever it is read; when the same
conversation is split across files, the first file read makes the session and later ones are
rejected as ``duplicate_session`` (concatenate the files to combine their spans).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..messages import Message, Part, Session, Usage, as_dict, dumps_arguments
from ..rejects import RecordError, Reject
from .base import Importer, Record, expect, importers, iter_records, sniff_json_keys
from .openai_chat import file_digest

INPUT = "gen_ai.input.messages"
OUTPUT = "gen_ai.output.messages"
SYSTEM = "gen_ai.system_instructions"
SESSION_KEYS = ("gen_ai.conversation.id", "session.id", "session_id", "langfuse.session.id")
_USAGE = {
    "prompt": ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
    "cached": ("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens"),
    "completion": ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
}


@dataclass
class Call:
    """One model call: what it was sent, what it returned, and where it sits in the file."""

    record: Record
    where: str
    order: tuple[Any, ...]
    conversation: str | None
    trace: str | None
    history: list[Message]
    output: list[Message]
    usage: Usage | None = None
    ended: str | None = None
    model: str | None = None


@dataclass
class _Attributes:
    values: dict[str, Any] = field(default_factory=dict)
    paths: dict[str, str] = field(default_factory=dict)


# --- OTLP JSON values ---------------------------------------------------------------------


def any_value(value: Any, where: str) -> Any:
    """An OTLP ``AnyValue`` as plain Python (flattened attributes pass through unchanged)."""
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "boolValue", "doubleValue", "bytesValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        raw = value["intValue"]
        try:
            return int(raw)
        except (TypeError, ValueError):
            raise RecordError("wrong_type", "intValue is not an integer", where) from None
    if "arrayValue" in value:
        inner = expect(value["arrayValue"], dict, f"{where}.arrayValue", "arrayValue")
        values = expect(inner.get("values", []), list, f"{where}.arrayValue.values", "values")
        return [any_value(v, f"{where}.arrayValue.values[{i}]") for i, v in enumerate(values)]
    if "kvlistValue" in value:
        inner = expect(value["kvlistValue"], dict, f"{where}.kvlistValue", "kvlistValue")
        items = expect(inner.get("values", []), list, f"{where}.kvlistValue.values", "values")
        return attributes(items, f"{where}.kvlistValue.values").values
    return value or None  # an empty AnyValue is null


def attributes(raw: Any, where: str) -> _Attributes:
    """Attributes from an OTLP key/value list or a plain object, with each value's JSON path."""
    out = _Attributes()
    if raw is None:
        return out
    if isinstance(raw, dict):
        for key, value in raw.items():
            out.values[key] = value
            out.paths[key] = f"{where}[{json.dumps(key)}]"
        return out
    expect(raw, list, where, "attributes")
    for i, kv in enumerate(raw):
        item = f"{where}[{i}]"
        expect(kv, dict, item, "attribute")
        key = expect(kv.get("key"), str, f"{item}.key", "attribute key")
        out.values[key] = any_value(kv.get("value"), f"{item}.value")
        out.paths[key] = f"{item}.value"
    return out


def _nanos(value: Any) -> int | None:
    """A timestamp (nanoseconds, seconds, or ISO 8601 text) as integer nanoseconds."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        if value.isdigit():
            value = int(value)
        else:
            try:
                moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                return None
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
            return int(moment.timestamp() * 1_000_000_000)
    if isinstance(value, int | float):
        return int(value) if value > 1e14 else int(value * 1_000_000_000)
    return None


def _iso(value: Any) -> str | None:
    if isinstance(value, str) and not value.isdigit():
        return value
    nanos = _nanos(value)
    if nanos is None:
        return None
    return datetime.fromtimestamp(nanos / 1e9, UTC).isoformat().replace("+00:00", "Z")


def _first(*values: Any) -> Any:
    return next((v for v in values if v is not None), None)


# --- GenAI messages -----------------------------------------------------------------------


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def genai_part(raw: Any, where: str) -> Part:
    """One semantic-conventions message part as a canonical part."""
    if isinstance(raw, str):
        return Part.text(raw)
    expect(raw, dict, where, "part")
    kind = raw.get("type")
    if kind == "text":
        return Part.text(_text(raw.get("content", "")))
    if kind == "tool_call":
        call_id = expect(raw.get("id"), str, f"{where}.id", "tool call id")
        name = expect(raw.get("name"), str, f"{where}.name", "tool name")
        args = raw.get("arguments")
        text = None if args is None else args if isinstance(args, str) else dumps_arguments(args)
        return Part("tool_call", id=call_id, name=name, arguments=text)
    if kind == "tool_call_response":
        call_id = expect(raw.get("id"), str, f"{where}.id", "tool call id")
        return Part.response(call_id, _text(raw.get("response", "")))
    if kind == "reasoning":
        return Part("reasoning", content=_text(raw.get("content", "")))
    if kind in ("blob", "uri", "file"):
        mime, modality = raw.get("mime_type"), raw.get("modality")
        common = {
            "mime_type": mime if isinstance(mime, str) else None,
            "modality": modality if isinstance(modality, str) else None,
        }
        if kind == "blob":
            return Part("blob", content=_text(raw.get("content", "")), **common)
        if kind == "uri":
            return Part("uri", uri=expect(raw.get("uri"), str, f"{where}.uri", "uri"), **common)
        return Part(
            "file", id=expect(raw.get("file_id"), str, f"{where}.file_id", "file_id"), **common
        )
    return Part.text(json.dumps(raw, ensure_ascii=False))  # generic part: kept, never dropped


def genai_messages(value: Any, where: str) -> list[Message]:
    """``gen_ai.input.messages`` / ``output.messages``: JSON text or an array of messages."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as e:
            raise RecordError("invalid_json", f"attribute is not JSON: {e}", where) from None
    expect(value, list, where, "messages")
    out: list[Message] = []
    for i, raw in enumerate(value):
        at = f"{where}[{i}]"
        expect(raw, dict, at, "message")
        role = expect(raw.get("role"), str, f"{at}.role", "role")
        if "parts" in raw:
            items = expect(raw["parts"], list, f"{at}.parts", "parts")
            parts = [genai_part(p, f"{at}.parts[{j}]") for j, p in enumerate(items)]
        else:  # older instrumentations: plain ``content``
            parts = [Part.text(_text(raw["content"]))] if raw.get("content") is not None else []
        name = raw.get("name")
        out.append(
            Message(
                role, tuple(parts), name=name if isinstance(name, str) else None, source_path=at
            )
        )
    return out


def system_messages(value: Any, where: str) -> list[Message]:
    """``gen_ai.system_instructions``: a list of parts (or JSON text of one, or plain text)."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return [Message("system", (Part.text(value),), source_path=where)]
    if isinstance(value, str):
        value = [value]
    expect(value, list, where, "system instructions")
    parts = [genai_part(p, f"{where}[{i}]") for i, p in enumerate(value)]
    return [Message("system", tuple(parts), source_path=where)] if parts else []


def _same(a: Message, b: Message) -> bool:
    return a.role == b.role and a.parts == b.parts and a.name == b.name


# --- finding calls in records -------------------------------------------------------------


def _items(value: Any, where: str) -> Iterator[tuple[dict[str, Any], str, _Attributes]]:
    """Span-like objects (spans, log records, flattened dicts) with their resource attributes."""
    if isinstance(value, list):
        for i, v in enumerate(value):
            yield from _items(v, f"{where}[{i}]")
        return
    if not isinstance(value, dict):
        return
    for outer, scopes, inner in (
        ("resourceSpans", ("scopeSpans", "instrumentationLibrarySpans"), "spans"),
        ("resourceLogs", ("scopeLogs", "instrumentationLibraryLogs"), "logRecords"),
    ):
        if outer not in value:
            continue
        for i, rs in enumerate(expect(value[outer], list, f"{where}.{outer}", outer)):
            rw = f"{where}.{outer}[{i}]"
            expect(rs, dict, rw, outer)
            resource = rs.get("resource") or {}
            expect(resource, dict, f"{rw}.resource", "resource")
            res = attributes(resource.get("attributes"), f"{rw}.resource.attributes")
            for scope_key in scopes:
                for j, ss in enumerate(expect(rs.get(scope_key, []), list, f"{rw}.{scope_key}")):
                    sw = f"{rw}.{scope_key}[{j}]"
                    expect(ss, dict, sw, scope_key)
                    for k, item in enumerate(expect(ss.get(inner, []), list, f"{sw}.{inner}")):
                        yield (
                            expect(item, dict, f"{sw}.{inner}[{k}]", "span"),
                            f"{sw}.{inner}[{k}]",
                            res,
                        )
    if isinstance(value.get("spans"), list):
        yield from _items(value["spans"], f"{where}.spans")
    if "attributes" in value:
        resource = value.get("resource")
        raw = resource.get("attributes") if isinstance(resource, dict) else None
        yield value, where, attributes(raw, f"{where}.resource.attributes")


def _trace_id(item: dict[str, Any]) -> str | None:
    context = as_dict(item.get("context"))
    tid = _first(item.get("traceId"), item.get("trace_id"), context.get("trace_id"))
    return str(tid) if isinstance(tid, str | int) and tid != "" else None


def _conversation(attrs: dict[str, Any], item: dict[str, Any], res: dict[str, Any]) -> str | None:
    for source in (attrs, item, res):
        for key in (*SESSION_KEYS, "sessionId"):
            value = source.get(key)
            if isinstance(value, str | int) and not isinstance(value, bool) and value != "":
                return str(value)
    return None


def _usage(attrs: dict[str, Any]) -> Usage | None:
    found: dict[str, int | None] = {}
    for field_name, keys in _USAGE.items():
        value = _first(*(attrs.get(k) for k in keys))
        if isinstance(value, str) and value.isdigit():
            value = int(value)
        found[field_name] = (
            value if isinstance(value, int) and not isinstance(value, bool) else None
        )
    if all(v is None for v in found.values()):
        return None
    return Usage(found["prompt"], found["cached"], found["completion"])


def call_of(
    record: Record,
    item: dict[str, Any],
    where: str,
    span: _Attributes,
    res: _Attributes,
    position: int,
) -> Call | None:
    """The model call a span, event or log record describes, or None when it has no messages."""
    sources = [span]
    events = item.get("events")
    if isinstance(events, list):
        for i, event in enumerate(events):
            if isinstance(event, dict) and "attributes" in event:
                sources.append(attributes(event["attributes"], f"{where}.events[{i}].attributes"))
    found: dict[str, tuple[Any, str]] = {}
    for source in sources:
        for key in (INPUT, OUTPUT, SYSTEM):
            if key in source.values and key not in found:
                found[key] = (source.values[key], source.paths[key])
    if INPUT not in found and OUTPUT not in found:
        return None
    inputs = genai_messages(*found[INPUT]) if INPUT in found else []
    outputs = genai_messages(*found[OUTPUT]) if OUTPUT in found else []
    system = system_messages(*found[SYSTEM]) if SYSTEM in found else []
    if system and inputs and inputs[0].role == "system":
        system = []
    start = _nanos(
        _first(
            item.get("startTimeUnixNano"),
            item.get("start_time"),
            item.get("startTime"),
            item.get("timeUnixNano"),
            item.get("observedTimeUnixNano"),
            item.get("timestamp"),
        )
    )
    end = _first(item.get("endTimeUnixNano"), item.get("end_time"), item.get("endTime"))
    model = _first(
        span.values.get("gen_ai.response.model"), span.values.get("gen_ai.request.model")
    )
    return Call(
        record=record,
        where=where,
        order=(start is None, start or 0, record.index, position),
        conversation=_conversation(span.values, item, res.values),
        trace=_trace_id(item),
        history=[*system, *inputs],
        output=outputs,
        usage=_usage(span.values),
        ended=_iso(_first(end, item.get("timeUnixNano"), item.get("timestamp"))),
        model=model if isinstance(model, str) else None,
    )


# --- the importer -------------------------------------------------------------------------


@importers.register("otel-genai")
class OtelGenAIImporter(Importer):
    """OpenTelemetry GenAI spans/events (``gen_ai.input.messages``) grouped into conversations."""

    suffixes = (".json", ".jsonl")

    def __init__(self) -> None:
        #: record indexes of the last file read that held no model call (ignored, not rejected)
        self.ignored_records: list[int] = []

    def sniff(self, path: Path, head: bytes) -> float:
        text = sniff_json_keys(head)
        if '"x-ctxreplay"' in text:
            return 0.0
        if INPUT in text or OUTPUT in text:
            return 0.95
        if "gen_ai." in text and ('"resourceSpans"' in text or '"attributes"' in text):
            return 0.8
        if '"resourceSpans"' in text or '"resourceLogs"' in text:
            return 0.6
        return 0.0

    def read(self, path: Path) -> Iterator[Session | Reject]:
        digest = file_digest(path)
        self.ignored_records = []
        calls: list[Call] = []
        by_trace: dict[str, str] = {}  # conversation ids seen on any span of a trace
        for record in iter_records(path, self.name):
            if isinstance(record, Reject):
                yield record
                continue
            found, rejects = self._calls(path, record, by_trace)
            yield from rejects
            calls.extend(found)
            if not found and not rejects:
                self.ignored_records.append(record.index)
        groups: dict[str, list[Call]] = {}
        for c in calls:
            conversation = c.conversation or (by_trace.get(c.trace) if c.trace else None)
            if conversation is not None:
                key = f"conversation:{conversation}"
            elif c.trace:
                key = f"trace:{c.trace}"
            else:  # nothing ties this call to others: it is its own session, local to the file
                key = f"call:{digest}:{c.record.index}:{c.where}"
            groups.setdefault(key, []).append(replace(c, conversation=conversation))
        for key, group in groups.items():
            final = max(group, key=lambda c: (len(c.history), c.order))  # latest among longest
            results = list(
                self.guarded(
                    path,
                    final.record,
                    lambda k=key, g=group, f=final: [self._session(path, k, g, f)],
                )
            )
            yield from results
            if results and isinstance(results[0], Reject):  # the other records go down with it
                why = results[0]
                others = {c.record.index: c for c in group if c.record.index != final.record.index}
                for c in others.values():
                    detail = f"its conversation ({key}) was rejected: {why.detail}"
                    yield self.reject(path, c.record, why.reason, detail, c.where)

    def _calls(
        self, path: Path, record: Record, by_trace: dict[str, str]
    ) -> tuple[list[Call], list[Reject]]:
        calls: list[Call] = []
        rejects: list[Reject] = []
        if not isinstance(record.value, dict | list):
            err = RecordError("wrong_type", "a record should be a span object or a list", "$")
            return [], [self.reject(path, record, err.reason, err.detail, err.json_path)]
        try:
            items = list(_items(record.value, "$"))
        except RecordError as e:
            return [], [self.reject(path, record, e.reason, e.detail, e.json_path)]
        for position, (item, where, res) in enumerate(items):
            try:
                span = attributes(item.get("attributes"), f"{where}.attributes")
                trace = _trace_id(item)
                conversation = _conversation(span.values, item, res.values)
                if trace and conversation:
                    by_trace.setdefault(trace, conversation)
                call = call_of(record, item, where, span, res, position)
            except RecordError as e:
                rejects.append(self.reject(path, record, e.reason, e.detail, e.json_path))
                continue
            if call is not None:
                calls.append(call)
        return calls, rejects

    def _session(self, path: Path, key: str, group: list[Call], final: Call) -> Session:
        group = sorted(group, key=lambda c: c.order)
        messages = [*final.history, *final.output]
        mismatches: list[dict[str, Any]] = []
        for c in group:
            full = [*c.history, *c.output]
            at = next(
                (i for i, m in enumerate(full) if i >= len(messages) or not _same(m, messages[i])),
                None,
            )
            if at is not None:
                mismatches.append({"record": c.record.index, "span": c.where, "message": at})
            if c.output and (at is None or at > len(c.history)):
                i = len(c.history)  # the first output message: the call's usage and end time
                messages[i] = replace(
                    messages[i],
                    usage=c.usage or messages[i].usage,
                    timestamp=c.ended or messages[i].timestamp,
                )
        conversation = final.conversation or key.split(":", 1)[1]
        metadata: dict[str, Any] = {
            "calls": len(group),
            "records": sorted({c.record.index for c in group}),
            "traces": sorted({c.trace for c in group if c.trace}),
        }
        models = sorted({c.model for c in group if c.model})
        if models:
            metadata["models"] = models
        if mismatches:
            metadata["history_mismatch"] = mismatches
        return Session(
            source_format=self.name,
            source_session_id=conversation,
            messages=messages,
            key=key,
            source_location=str(path),
            source_record=final.record.index,
            metadata=metadata,
        )
