"""OpenTelemetry GenAI semantic conventions: model-call spans, span events and log records.

Input is JSON or JSONL of OTLP JSON (``resourceSpans[].scopeSpans[].spans[]``,
``resourceLogs[].scopeLogs[].logRecords[]``, attributes as ``[{key, value{stringValue|intValue|
doubleValue|boolValue|arrayValue|kvlistValue}}]``) or of flattened span dicts (``attributes`` a
plain object, as the SDK's console exporter and most vendors write them), alone, in a list, or
under ``spans``. A model call carries ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON
text or arrays of ``{role, parts[{type: text|tool_call|tool_call_response|reasoning|blob|uri|file}],
finish_reason}``) and optionally ``gen_ai.system_instructions`` (a list of parts or a string), on
the span, on one of its events, or on a log record. Spans without these are skipped and counted
(``no_model_call``; records holding only such spans are listed in ``ignored_records``); a
messages attribute that is not valid JSON, or a span holding bytes that are not UTF-8, rejects
that span (the reject names the JSON path; ``raw`` is the record holding it) and flags the rest of
its conversation ``conversation_incomplete``. When a rebuilt conversation fails validation, every
call that contributed to it is rejected with it. Each span is one record of the import's
accounting: a session (the call a session was built from), a reject, or a skip (``in_session``
for the other calls of a conversation, whose messages the session holds).

Sessions. ``gen_ai.conversation.id`` is the session key (also OpenInference ``session.id`` and
Langfuse ``session_id`` / ``langfuse.session.id``; a span without one takes the id of another span
of its trace, else its trace id stands for the conversation). Every call repeats the history, so
calls are ordered by start time and the session is the history of the call with the longest
history (the latest among equals) followed by its output messages. Each other call's input and
output must be a prefix of that. Calls that share an id but disagree (a different earlier turn, a
regenerated answer) are never merged away: each consistent history becomes its own session (keys
``conversation:<id>``, then ``conversation:<id>#2``...), all flagged ``conversation_split`` with
``metadata.split`` saying which part of how many. Each call's usage
(``gen_ai.usage.input_tokens``, ``output_tokens``, ``cache_read.input_tokens``) and end time go
onto the output message it produced; a start or end time that is not a usable time (NaN,
infinite, beyond the year 9999) is dropped and flags that message ``timestamp_invalid``; a usage
count that is not an integer flags it ``usage_out_of_range``.

Grouping is per file, over all its records. The session key is the conversation id alone, without
the file's digest, so one conversation id maps to one session id wherever it is read; when the same
conversation is split across files, the first file read makes the session and later ones are
rejected as ``duplicate_session`` (concatenate the files to combine their spans).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..messages import Message, Part, Session, Usage, as_dict, dumps_arguments
from ..rejects import RecordError, Reject, inspect_value
from ..validate import FLAG_TIMESTAMP_INVALID, FLAG_USAGE_OUT_OF_RANGE
from .base import (
    Importer,
    InvalidTime,
    Record,
    exception_reason,
    expect,
    importers,
    iso_of_nanos,
    nanos_of,
    unknown_part,
)
from .openai_chat import file_digest
from .sniffing import capped, sample_of

FLAG_CONVERSATION_SPLIT = "conversation_split"
FLAG_CONVERSATION_INCOMPLETE = "conversation_incomplete"

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
    #: flags for the message this call's output starts (a bad time or usage count)
    flags: tuple[str, ...] = ()


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
        except (TypeError, ValueError, OverflowError):
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
    """A timestamp (nanoseconds, seconds, or ISO 8601 text) as integer nanoseconds; None when
    absent; ``InvalidTime`` when recorded but unusable."""
    return nanos_of(value)


def _iso(value: Any) -> str | None:
    """A time as ISO 8601 text (text that is not a number is kept as written, and must parse)."""
    if isinstance(value, str) and not value.strip().isdigit():
        nanos_of(value)
        return value
    nanos = nanos_of(value)
    return iso_of_nanos(nanos) if nanos is not None else None


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
    return unknown_part(raw)  # generic part: kept, never dropped (flagged unknown_part_type)


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


def _usage(attrs: dict[str, Any]) -> tuple[Usage | None, bool]:
    """The call's usage, and whether a recorded count was unusable (not an integer)."""
    found: dict[str, int | None] = {}
    bad = False
    for field_name, keys in _USAGE.items():
        value = _first(*(attrs.get(k) for k in keys))
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value.strip())
        ok = isinstance(value, int) and not isinstance(value, bool)
        bad = bad or (value is not None and not ok)
        found[field_name] = value if ok else None
    if all(v is None for v in found.values()):
        return None, bad
    return Usage(found["prompt"], found["cached"], found["completion"]), bad


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
    flags: list[str] = []
    try:
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
    except InvalidTime:
        start = None
        flags.append(FLAG_TIMESTAMP_INVALID)
    end = _first(item.get("endTimeUnixNano"), item.get("end_time"), item.get("endTime"))
    recorded_end = _first(end, item.get("timeUnixNano"), item.get("timestamp"))
    try:
        ended = _iso(recorded_end)
    except InvalidTime:  # text is kept as written (and flagged), a number dropped
        text = isinstance(recorded_end, str) and not recorded_end.strip().isdigit()
        ended = recorded_end if text else None
        if FLAG_TIMESTAMP_INVALID not in flags:
            flags.append(FLAG_TIMESTAMP_INVALID)
    usage, bad_usage = _usage(span.values)
    if bad_usage:
        flags.append(FLAG_USAGE_OUT_OF_RANGE)
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
        usage=usage,
        ended=ended,
        model=model if isinstance(model, str) else None,
        flags=tuple(flags),
    )


def _is_prefix(messages: list[Message], of: list[Message]) -> bool:
    return len(messages) <= len(of) and all(_same(a, b) for a, b in zip(messages, of, strict=False))


def chains(group: list[Call]) -> list[tuple[Call, list[Call]]]:
    """The consistent histories among calls that share a conversation: each is the call with
    the longest history (the latest among equals) and the calls whose messages are a prefix of
    its messages; the first chain holds the longest call of all."""
    remaining = sorted(group, key=lambda c: c.order)
    out: list[tuple[Call, list[Call]]] = []
    while remaining:
        final = max(remaining, key=lambda c: (len(c.history), c.order))
        full = [*final.history, *final.output]
        members = [c for c in remaining if _is_prefix([*c.history, *c.output], full)]
        out.append((final, members))
        taken = {id(c) for c in members}
        remaining = [c for c in remaining if id(c) not in taken]
    return out


# --- detection ----------------------------------------------------------------------------------


def _attribute_keys(raw: Any) -> set[str]:
    if isinstance(raw, dict):
        return {k for k in raw if isinstance(k, str)}
    if isinstance(raw, list):
        return {kv["key"] for kv in raw if isinstance(kv, dict) and isinstance(kv.get("key"), str)}
    return set()


def _span_keys(value: Any, depth: int = 0) -> tuple[set[str], bool, bool]:
    """Attribute keys of the span-like objects in a record, whether it has OTLP containers, and
    whether it has flattened spans (objects with ``attributes`` and span identity fields)."""
    keys: set[str] = set()
    otlp = flat = False
    if depth > 8:
        return keys, otlp, flat
    if isinstance(value, list):
        for v in value[:32]:
            k, o, f = _span_keys(v, depth + 1)
            keys |= k
            otlp, flat = otlp or o, flat or f
        return keys, otlp, flat
    if not isinstance(value, dict):
        return keys, otlp, flat
    for outer, scopes, inner in (
        ("resourceSpans", ("scopeSpans", "instrumentationLibrarySpans"), "spans"),
        ("resourceLogs", ("scopeLogs", "instrumentationLibraryLogs"), "logRecords"),
    ):
        if isinstance(value.get(outer), list):
            otlp = True
            for rs in value[outer][:8]:
                if not isinstance(rs, dict):
                    continue
                for scope_key in scopes:
                    for ss in rs.get(scope_key) or []:
                        if isinstance(ss, dict) and isinstance(ss.get(inner), list):
                            k, _, _ = _span_keys(ss[inner], depth + 1)
                            keys |= k
    if isinstance(value.get("spans"), list):
        k, o, f = _span_keys(value["spans"], depth + 1)
        keys |= k
        otlp, flat = otlp or o, flat or f
    if "attributes" in value:
        keys |= _attribute_keys(value["attributes"])
        for event in value.get("events") or []:
            if isinstance(event, dict):
                keys |= _attribute_keys(event.get("attributes"))
        span_fields = ("traceId", "spanId", "trace_id", "span_id", "context", "start_time",
                       "startTimeUnixNano", "timeUnixNano", "name", "parent_id")  # fmt: skip
        flat = flat or any(f in value for f in span_fields)
    return keys, otlp, flat


def _otel_score(record: Any) -> float:
    return capped(_shape_score(record), record)


def _shape_score(record: Any) -> float:
    keys, otlp, flat = _span_keys(record)
    if keys & {INPUT, OUTPUT}:
        return 0.95
    if any(k.startswith("gen_ai.") for k in keys):
        return 0.8
    if otlp:
        return 0.6
    if flat:
        return 0.4
    return 0.0


# --- the importer -------------------------------------------------------------------------


@importers.register("otel-genai")
class OtelGenAIImporter(Importer):
    """OpenTelemetry GenAI spans/events (``gen_ai.input.messages``) grouped into conversations."""

    suffixes = (".json", ".jsonl")

    def __init__(self) -> None:
        #: record indexes of the last file read that held no model call (ignored, not rejected)
        self.ignored_records: list[int] = []

    def sniff(self, path: Path, head: bytes) -> float:
        return sample_of(path, head).best(_otel_score)

    def read(self, path: Path) -> Iterator[Session | Reject]:
        digest = file_digest(path)
        self.ignored_records = []
        self._raw_given: set[int] = set()
        calls: list[Call] = []
        by_trace: dict[str, str] = {}  # conversation ids seen on any span of a trace
        #: conversations (or traces) a rejected span belonged to, with how many were rejected
        troubled: Counter[str] = Counter()
        for record in self.records(path, check_utf8=False):  # bytes are checked per span
            if isinstance(record, Reject):
                yield record
                continue
            found, rejects = self._calls(path, record, by_trace, troubled)
            yield from rejects
            calls.extend(found)
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
            parts = chains(group)
            incomplete = troubled.get(key, 0) + sum(
                troubled.get(f"trace:{t}", 0) for t in {c.trace for c in group if c.trace}
            )
            for n, (final, members) in enumerate(parts, start=1):
                part_key = key if n == 1 else f"{key}#{n}"
                split = (n, len(parts)) if len(parts) > 1 else None
                yield from self._chain(path, part_key, final, members, split, incomplete)

    def _chain(
        self,
        path: Path,
        key: str,
        final: Call,
        members: list[Call],
        split: tuple[int, int] | None,
        incomplete: int,
    ) -> Iterator[Session | Reject]:
        results = list(
            self.guarded(
                path,
                final.record,
                lambda: [self._session(path, key, members, final, split, incomplete)],
            )
        )
        if results and isinstance(results[0], Reject):  # the other calls go down with it
            why = results[0]
            why.json_path = why.json_path if why.json_path != "$" else final.where
            why.raw = self._raw_once(final.record)
            why.session_id = final.conversation
            yield why
            for c in members:
                if c is final:
                    continue
                detail = f"its conversation ({key}) was rejected: {why.detail}"
                reject = self.reject(path, c.record, why.reason, detail, c.where)
                reject.raw = self._raw_once(c.record)
                reject.session_id = c.conversation
                yield reject
            return
        self.tally.skip("in_session", len(members) - 1)
        yield from results

    def _raw_once(self, record: Record) -> bytes:
        """A record's bytes on the first reject that names it, empty on later ones (one OTLP
        document can hold many spans: its bytes are stored once)."""
        if record.index in self._raw_given:
            return b""
        self._raw_given.add(record.index)
        return record.raw

    def _calls(
        self, path: Path, record: Record, by_trace: dict[str, str], troubled: Counter[str]
    ) -> tuple[list[Call], list[Reject]]:
        calls: list[Call] = []
        rejects: list[Reject] = []

        def reject(reason: str, detail: str, json_path: str) -> Reject:
            out = self.reject(path, record, reason, detail, json_path)
            out.raw = self._raw_once(record)
            return out

        if not isinstance(record.value, dict | list):
            err = RecordError("wrong_type", "a record should be a span object or a list", "$")
            return [], [reject(err.reason, err.detail, err.json_path)]
        try:
            items = list(_items(record.value, "$"))
        except Exception as e:
            reason, detail = exception_reason(e)
            where = e.json_path if isinstance(e, RecordError) else "$"
            return [], [reject(reason, detail, where)]
        if not items:
            self.tally.skip("no_spans")
            self.ignored_records.append(record.index)
            return [], []
        self.tally.seen += len(items) - 1  # the record stands for its spans
        for position, (item, where, res) in enumerate(items):
            key = None
            try:
                span = attributes(item.get("attributes"), f"{where}.attributes")
                trace = _trace_id(item)
                conversation = _conversation(span.values, item, res.values)
                key = f"conversation:{conversation}" if conversation else None
                key = key or (f"trace:{trace}" if trace else None)
                bad = inspect_value(item, root=where)
                if bad is None:
                    bad = inspect_value(res.values, root=f"{where}.resource")
                if bad is not None:
                    raise RecordError(bad[0], "the span holds bytes that are not UTF-8", bad[1])
                if trace and conversation:
                    by_trace.setdefault(trace, conversation)
                call = call_of(record, item, where, span, res, position)
            except Exception as e:
                reason, detail = exception_reason(e)
                at = e.json_path if isinstance(e, RecordError) else where
                out = reject(reason, detail, at)
                if key is not None:
                    troubled[key] += 1
                    out.session_id = key.split(":", 1)[1]
                rejects.append(out)
                continue
            if call is not None:
                calls.append(call)
            else:
                self.tally.skip("no_model_call")
        if not calls and not rejects:
            self.ignored_records.append(record.index)
        return calls, rejects

    def _session(
        self,
        path: Path,
        key: str,
        members: list[Call],
        final: Call,
        split: tuple[int, int] | None,
        incomplete: int,
    ) -> Session:
        members = sorted(members, key=lambda c: c.order)
        messages = [*final.history, *final.output]
        for c in members:
            at = len(c.history)
            if c.output and at < len(messages):  # the call's output: its usage and end time
                messages[at] = replace(
                    messages[at],
                    usage=c.usage or messages[at].usage,
                    timestamp=c.ended or messages[at].timestamp,
                )
            if c.flags and messages:
                at = min(at if c.output else at - 1, len(messages) - 1)
                m = messages[max(at, 0)]
                new = tuple(f for f in c.flags if f not in m.flags)
                messages[max(at, 0)] = replace(m, flags=(*m.flags, *new))
        notes: list[str] = []
        if split is not None:
            notes.append(FLAG_CONVERSATION_SPLIT)
        if incomplete:
            notes.append(FLAG_CONVERSATION_INCOMPLETE)
        if notes and messages:
            first = messages[0]
            messages[0] = replace(first, flags=(*first.flags, *notes))
        conversation = final.conversation or key.split(":", 1)[1].split("#", 1)[0]
        metadata: dict[str, Any] = {
            "calls": len(members),
            "records": sorted({c.record.index for c in members}),
            "traces": sorted({c.trace for c in members if c.trace}),
        }
        models = sorted({c.model for c in members if c.model})
        if models:
            metadata["models"] = models
        if split is not None:
            metadata["split"] = {"part": split[0], "of": split[1]}
        if incomplete:
            metadata["rejected_calls"] = incomplete
        return Session(
            source_format=self.name,
            source_session_id=conversation,
            messages=messages,
            key=key,
            source_location=str(path),
            source_record=final.record.index,
            metadata=metadata,
        )
