"""OpenTelemetry GenAI semantic conventions: model-call spans, span events and log records.

Input is JSON or JSONL of OTLP JSON (``resourceSpans[].scopeSpans[].spans[]``,
``resourceLogs[].scopeLogs[].logRecords[]``, attributes as ``[{key, value{stringValue|intValue|
doubleValue|boolValue|arrayValue|kvlistValue}}]``) or of flattened span / log-record dicts
(``attributes`` a plain object, as the SDKs' console exporters and most vendors write them),
alone, in a list, or under ``spans``.

What carries a model call (the conventions as of open-telemetry/semantic-conventions-genai
``model/gen-ai/spans.yaml``, ``events.yaml``, ``registry.yaml`` and the JSON schemas
``gen-ai-input-messages.json``, ``gen-ai-output-messages.json``,
``gen-ai-system-instructions.json``; earlier open-telemetry/semantic-conventions
``docs/gen-ai/gen-ai-events.md``):

* the opt-in attributes ``gen_ai.input.messages`` / ``gen_ai.output.messages`` /
  ``gen_ai.system_instructions`` (and ``gen_ai.tool.definitions``), structured values (arrays of
  ``{role, parts[], name?, finish_reason?}``, ``kvlistValue``/``arrayValue`` in OTLP) or JSON
  text (the conventions allow text on spans), on the inference span itself;
* the ``gen_ai.client.inference.operation.details`` event, which carries the same attributes
  with usage, model and conversation id: as a log record (OTLP ``resourceLogs``, its name in
  ``eventName``, ``event_name`` or the ``event.name`` attribute), as one of a span's ``events[]``
  (the span's own attributes win where both have a key), or flattened;
* the per-message events of v1.36 and earlier (``gen_ai.system.message``,
  ``gen_ai.user.message``, ``gen_ai.assistant.message``, ``gen_ai.tool.message``, any
  ``gen_ai.<role>.message``, and ``gen_ai.choice``), whose body is ``{content, role?,
  tool_calls[{id, function{name, arguments}}]?, id?}`` (a choice: ``{index, finish_reason,
  message}``): as log records (body in ``body``) or span events (body in the event's attributes,
  or the JSON of ``gen_ai.event.content``, as Azure AI SDKs write it). Events of one span (its
  ``spanId``) make one call: the message events its input in order, the choices its output; log
  records with no span id make one call per run of message events and the choices after them.
  A span of the same file with that span id and no messages gives the call its usage, model and
  times. Where a span has both, the current attributes win over per-message events.

Message parts (``gen-ai-input-messages.json``): ``text``, ``tool_call`` (``id``, ``name``,
``arguments`` object or text), ``tool_call_response`` (``id``, ``response``; ``result`` in older
examples), ``reasoning``, ``blob`` (``content``, ``mime_type``, ``modality``), ``uri``, ``file``
(``file_id``), ``server_tool_call`` / ``server_tool_call_response`` (a provider-run tool: a tool
call and its result, as the Anthropic importer maps ``server_tool_use``; without an ``id`` they
cannot pair and are kept as unknown parts), ``compaction`` (below); any other type
(``GenericPart``) is kept whole as an unknown part (flagged ``unknown_part_type``), never dropped.

Compactions. The conventions define ``gen_ai.conversation.compacted`` as a boolean attribute of
the inference span, not an event ("whether the effective conversation context used for this
operation is a compacted view of a prior conversation"; semantic-conventions-genai PR #162), and
a ``compaction`` message part (``{type, id?, content?}``: the compacted state a provider returns,
or passes back on later requests; ``content`` the unencrypted summary when there is one). There
is no ``gen_ai.conversation.compacted`` event, and none is read. A call whose input holds a
``compaction`` part, or that carries ``gen_ai.conversation.compacted: true``, is compacted; when
its history does not continue the conversation's earlier calls (the context was replaced), the
earlier calls' messages stay in the session, in order, and the compacted call's messages follow,
less the messages both histories start with (the system prompt): like a Claude Code compaction.
The message holding a ``compaction`` part is flagged ``compaction_summary`` (its text is the
part's ``content``; an opaque part without content is kept as an unknown part); when the new
context holds none, its first message is flagged (the summary a framework wrote, or for a
sliding window the oldest message kept): cases start their prefix there and
``--trigger compactions`` cuts before it. A ``compaction`` part in a history that continues the
earlier one (Anthropic's compaction block, which the client sends back with the full history)
is flagged the same way; the same part sent back again is flagged once. A compacted call whose
history continues the earlier one and holds no compaction part (the provider compacted what it
was sent) is recorded without a summary. Session metadata ``compactions`` lists them as
``{kind: compaction_part|context_replaced|provider_side, trigger: None, pre_tokens (the input
tokens of the latest call before it), timestamp, summary_seq_index}``.

Sessions. ``gen_ai.conversation.id`` is the session key (also OpenInference ``session.id`` and
Langfuse ``session_id`` / ``langfuse.session.id``; a call without one takes the id of another
span of its trace, else its trace id stands for the conversation). Every call repeats the
history, so calls are ordered by start time and the session is the history of the call with the
longest history (the latest among equals) followed by its output messages. Each other call's
input and output must be a prefix of that. Calls that share an id but disagree (a different
earlier turn, a regenerated answer) and are not compacted are never merged away: each
consistent history becomes its own session (keys ``conversation:<id>``, then
``conversation:<id>#2``...), all flagged ``conversation_split`` with ``metadata.split`` saying
which part of how many. Each call's usage (``gen_ai.usage.input_tokens``, ``output_tokens``,
``cache_read.input_tokens``) and end time go onto the output message it produced; a start or end
time that is not a usable time (NaN, infinite, beyond the year 9999) is dropped and flags that
message ``timestamp_invalid``; a usage count that is not an integer flags it
``usage_out_of_range``. Metadata: ``calls``, ``records``, ``traces``, ``models``,
``providers`` (``gen_ai.provider.name``, older ``gen_ai.system``), ``tools`` (names from
``gen_ai.tool.definitions``), ``compactions``.

Accounting: each span and each log record is one record (a JSONL line or a document holding
several stands for them all): a session (the call a session was built from), a reject, or a skip
(``in_session`` for the other calls of a conversation, whose messages the session holds;
``in_call`` for the other per-message events of a call; ``no_model_call`` for spans and log
records without messages, listed by record in ``ignored_records``; ``no_spans``). A messages
attribute that is not valid JSON, an event body that is not a message, or a span holding bytes
that are not UTF-8, rejects that span or log record (the reject names the JSON path; ``raw`` is
the record holding it) and flags the rest of its conversation ``conversation_incomplete``. When a
rebuilt conversation fails validation, every span and log record that contributed to it is
rejected with it.

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
from functools import partial
from pathlib import Path
from typing import Any

from ..messages import ROLES, Message, Part, Session, Usage, as_dict, dumps_arguments
from ..rejects import RecordError, Reject, inspect_value
from ..validate import FLAG_COMPACTION_SUMMARY, FLAG_TIMESTAMP_INVALID, FLAG_USAGE_OUT_OF_RANGE
from .base import Importer, expect, importers
from .calls import (
    Call,
    Chain,
    Rejects,
    build_session,
    call_metadata,
    chain_messages,
    chains,
    common,
    group_key,
    is_prefix,
    numbered,
    rejected_calls,
    same,
)
from .openai_chat import file_digest
from .parts import content_parts, unknown_part
from .records import Record
from .sniffing import capped, sample_of
from .times import InvalidTime, iso_of_nanos, nanos_of

INPUT = "gen_ai.input.messages"
OUTPUT = "gen_ai.output.messages"
SYSTEM = "gen_ai.system_instructions"
TOOLS = "gen_ai.tool.definitions"
COMPACTED = "gen_ai.conversation.compacted"
MESSAGE_KEYS = (INPUT, OUTPUT, SYSTEM)
SESSION_KEYS = ("gen_ai.conversation.id", "session.id", "session_id", "langfuse.session.id")
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
CHOICE_EVENT = "gen_ai.choice"
#: the per-message events of v1.36 and earlier: ``gen_ai.<role>.message``
MESSAGE_EVENTS = {f"gen_ai.{role}.message": role for role in ROLES}
LEGACY_EVENTS = frozenset({*MESSAGE_EVENTS, CHOICE_EVENT})
GENAI_EVENTS = frozenset({*LEGACY_EVENTS, DETAILS_EVENT})
_USAGE = {
    "prompt": ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
    "cached": ("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens"),
    "completion": ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
}
_PROVIDER_KEYS = ("gen_ai.provider.name", "gen_ai.system")
_MODEL_KEYS = ("gen_ai.response.model", "gen_ai.request.model")
#: attribute prefixes of OpenInference spans (Phoenix): another format, even on OTLP
_OPENINFERENCE = ("openinference.", "llm.input_messages", "llm.output_messages")
#: body fields of a per-message event, when a span event spreads them over its attributes
_BODY_FIELDS = ("role", "content", "tool_calls", "id", "index", "finish_reason", "message")


@dataclass
class _Attributes:
    values: dict[str, Any] = field(default_factory=dict)
    paths: dict[str, str] = field(default_factory=dict)


@dataclass
class _Facts:
    """What a span without messages says about the call its per-message events describe."""

    usage: Usage | None
    model: str | None
    provider: str | None
    conversation: str | None
    start: int | None
    ended: str | None
    flags: tuple[str, ...]


@dataclass
class _Event:
    """One per-message event (v1.36 and earlier) read from a log record."""

    record: Record
    where: str
    position: int
    message: Message
    #: the choice index of a ``gen_ai.choice`` event; None for an input message
    choice: int | None
    nanos: int | None
    trace: str | None
    span_id: str | None
    conversation: str | None
    model: str | None
    provider: str | None


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


def _maybe_json(value: Any) -> Any:
    """JSON text of an object or array decoded; anything else as it is."""
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


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
        body = raw["response"] if "response" in raw else raw.get("result", "")
        return Part.response(call_id, _text(body))
    if kind == "reasoning":
        return Part("reasoning", content=_text(raw.get("content", "")))
    if kind == "compaction":  # the compacted state: its summary, when the provider gives it
        content = raw.get("content")
        return Part.text(content) if isinstance(content, str) and content else unknown_part(raw)
    if kind == "server_tool_call":
        call_id, name = raw.get("id"), raw.get("name")
        details = raw.get("server_tool_call")
        if isinstance(call_id, str) and call_id and isinstance(name, str):
            return Part.call(call_id, name, details if isinstance(details, dict) else {})
        return unknown_part(raw)
    if kind == "server_tool_call_response":
        call_id = raw.get("id")
        if isinstance(call_id, str) and call_id:
            return Part.response(call_id, _text(raw.get("server_tool_call_response", "")))
        return unknown_part(raw)
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
    """``gen_ai.input.messages`` / ``output.messages``: JSON text or an array of messages. A
    message holding a ``compaction`` part is flagged ``compaction_summary``."""
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
        compaction = False
        if "parts" in raw:
            items = expect(raw["parts"], list, f"{at}.parts", "parts")
            parts = [genai_part(p, f"{at}.parts[{j}]") for j, p in enumerate(items)]
            compaction = any(isinstance(p, dict) and p.get("type") == "compaction" for p in items)
        else:  # older instrumentations: plain ``content``
            parts = [Part.text(_text(raw["content"]))] if raw.get("content") is not None else []
        name = raw.get("name")
        out.append(
            Message(
                role,
                tuple(parts),
                name=name if isinstance(name, str) else None,
                source_path=at,
                flags=(FLAG_COMPACTION_SUMMARY,) if compaction else (),
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


def tool_names(value: Any) -> tuple[str, ...]:
    """The names in ``gen_ai.tool.definitions`` (a list of ``{type, name, ...}``, or its JSON);
    definitions that cannot be read give none (they are not messages: nothing is rejected)."""
    value = _maybe_json(value)
    if not isinstance(value, list):
        return ()
    names = []
    for d in value:
        if isinstance(d, dict):
            name = _first(d.get("name"), as_dict(d.get("function")).get("name"))
            if isinstance(name, str) and name:
                names.append(name)
    return tuple(names)


# --- per-message events (v1.36 and earlier) ---------------------------------------------------


def _event_body(attrs: dict[str, Any], body: Any, where: str) -> dict[str, Any]:
    """The body of a per-message event: the log record's ``body``, else the JSON of a span
    event's ``gen_ai.event.content``, else the body fields spread over its attributes."""
    body = _maybe_json(any_value(body, f"{where}.body"))
    if body is None:
        content = _maybe_json(attrs.get("gen_ai.event.content"))
        if isinstance(content, dict):
            return content
        body = {k: attrs[k] for k in _BODY_FIELDS if k in attrs}
        if content is not None:
            body.setdefault("content", content)
        return body
    if isinstance(body, str):
        return {"content": body}
    return expect(body, dict, f"{where}.body", "event body")


def _event_content(content: Any, where: str) -> list[Part]:
    """The ``content`` of a per-message event: text, OpenAI-style content parts, or an object
    (kept whole as an unknown part)."""
    if isinstance(content, dict):
        return [unknown_part(content)]
    return content_parts(content, where)


def _tool_calls(raw: Any, where: str) -> list[Part]:
    """``tool_calls`` of an assistant message / choice: ``[{id, type, function{name,
    arguments}}]`` (arguments left out when content capture is off)."""
    if raw is None:
        return []
    expect(raw, list, where, "tool_calls")
    out = []
    for i, call in enumerate(raw):
        at = f"{where}[{i}]"
        expect(call, dict, at, "tool call")
        function = expect(call.get("function", {}), dict, f"{at}.function", "function")
        call_id = expect(call.get("id"), str, f"{at}.id", "tool call id")
        name = expect(function.get("name"), str, f"{at}.function.name", "tool name")
        args = function.get("arguments")
        text = None if args is None else args if isinstance(args, str) else dumps_arguments(args)
        out.append(Part("tool_call", id=call_id, name=name, arguments=text))
    return out


def event_message(name: str, body: dict[str, Any], where: str) -> tuple[Message, int | None]:
    """A per-message event as a message, and its choice index (None for an input message)."""
    choice: int | None = None
    role = MESSAGE_EVENTS.get(name, "assistant")
    if name == CHOICE_EVENT:
        index = body.get("index", 0)
        choice = index if isinstance(index, int) and not isinstance(index, bool) else 0
        body = expect(
            _maybe_json(body.get("message", {})) or {}, dict, f"{where}.message", "message"
        )
        where = f"{where}.message"
    recorded = body.get("role")
    if isinstance(recorded, str) and recorded in ROLES:
        role = recorded
    if role == "tool" or (name == "gen_ai.tool.message"):
        call_id = expect(body.get("id"), str, f"{where}.id", "tool call id")
        content = body.get("content")
        text = "\n".join(p.content or "" for p in _event_content(content, f"{where}.content"))
        return Message(role, (Part.response(call_id, text),), source_path=where), choice
    parts = _event_content(body.get("content"), f"{where}.content")
    parts += _tool_calls(body.get("tool_calls"), f"{where}.tool_calls")
    return Message(role, tuple(parts), source_path=where), choice


def span_event_messages(item: dict[str, Any], where: str) -> tuple[list[Message], list[Message]]:
    """Input and output messages of the per-message span events of a span."""
    inputs: list[Message] = []
    choices: list[tuple[int, int, Message]] = []
    events = item.get("events")
    for i, event in enumerate(events if isinstance(events, list) else []):
        if not isinstance(event, dict) or event.get("name") not in LEGACY_EVENTS:
            continue
        at = f"{where}.events[{i}]"
        attrs = attributes(event.get("attributes"), f"{at}.attributes").values
        body = _event_body(attrs, event.get("body"), at)
        message, choice = event_message(event["name"], body, f"{at}.attributes")
        if choice is None:
            inputs.append(message)
        else:
            choices.append((choice, i, message))
    return inputs, [m for _, _, m in sorted(choices, key=lambda c: (c[0], c[1]))]


def _event_name(item: dict[str, Any], attrs: dict[str, Any]) -> str | None:
    name = _first(item.get("eventName"), item.get("event_name"), attrs.get("event.name"))
    return name if isinstance(name, str) else None


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
    flat_log = "body" in value and ("eventName" in value or "event_name" in value)
    if "attributes" in value or flat_log:
        resource = value.get("resource")
        raw = resource.get("attributes") if isinstance(resource, dict) else None
        yield value, where, attributes(raw, f"{where}.resource.attributes")


def _trace_id(item: dict[str, Any]) -> str | None:
    context = as_dict(item.get("context"))
    tid = _first(item.get("traceId"), item.get("trace_id"), context.get("trace_id"))
    return str(tid) if isinstance(tid, str | int) and tid != "" else None


def _span_id(item: dict[str, Any]) -> str | None:
    context = as_dict(item.get("context"))
    sid = _first(item.get("spanId"), item.get("span_id"), context.get("span_id"))
    return str(sid) if isinstance(sid, str | int) and sid != "" else None


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


def _text_value(attrs: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    value = _first(*(attrs.get(k) for k in keys))
    return value if isinstance(value, str) and value else None


def _is_true(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def _sources(item: dict[str, Any], where: str, span: _Attributes) -> list[_Attributes]:
    """Where a call's attributes may be: the span (or log record), its events, a log body."""
    sources = [span]
    events = item.get("events")
    if isinstance(events, list):
        for i, event in enumerate(events):
            if isinstance(event, dict) and "attributes" in event:
                sources.append(attributes(event["attributes"], f"{where}.events[{i}].attributes"))
    body = item.get("body")
    if isinstance(body, dict) and ("kvlistValue" in body or any(k in body for k in MESSAGE_KEYS)):
        value = any_value(body, f"{where}.body")
        if isinstance(value, dict):
            sources.append(_Attributes(value, {k: f"{where}.body" for k in value}))
    return sources


def _merged(sources: list[_Attributes]) -> dict[str, Any]:
    """The attributes of all sources, the span's first (an event's fill in what it lacks)."""
    out: dict[str, Any] = {}
    for source in sources:
        for key, value in source.values.items():
            out.setdefault(key, value)
    return out


def _times(item: dict[str, Any]) -> tuple[int | None, str | None, list[str]]:
    """A span's (or log record's) start in nanoseconds, end as text, and flags for bad times."""
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
    return start, ended, flags


def _facts(item: dict[str, Any], merged: dict[str, Any], conversation: str | None) -> _Facts:
    start, ended, flags = _times(item)
    usage, bad = _usage(merged)
    if bad:
        flags.append(FLAG_USAGE_OUT_OF_RANGE)
    return _Facts(
        usage=usage,
        model=_text_value(merged, _MODEL_KEYS),
        provider=_text_value(merged, _PROVIDER_KEYS),
        conversation=conversation,
        start=start,
        ended=ended,
        flags=tuple(flags),
    )


def call_of(
    record: Record,
    item: dict[str, Any],
    where: str,
    sources: list[_Attributes],
    merged: dict[str, Any],
    res: _Attributes,
    position: int,
) -> Call | None:
    """The model call a span, event or log record describes, or None when it has no messages."""
    found: dict[str, tuple[Any, str]] = {}
    for source in sources:
        for key in MESSAGE_KEYS:
            if key in source.values and key not in found:
                found[key] = (source.values[key], source.paths[key])
    if INPUT in found or OUTPUT in found:
        inputs = genai_messages(*found[INPUT]) if INPUT in found else []
        outputs = genai_messages(*found[OUTPUT]) if OUTPUT in found else []
    else:
        inputs, outputs = span_event_messages(item, where)
        if not inputs and not outputs:
            return None
    system = system_messages(*found[SYSTEM]) if SYSTEM in found else []
    if system and inputs and inputs[0].role == "system":
        system = []
    conversation = _conversation(merged, item, res.values)
    facts = _facts(item, merged, conversation)
    return Call(
        record=record,
        where=where,
        order=(facts.start is None, facts.start or 0, record.index, position),
        conversation=conversation,
        trace=_trace_id(item),
        history=[*system, *inputs],
        output=outputs,
        usage=facts.usage,
        ended=facts.ended,
        model=facts.model,
        flags=facts.flags,
        compacted=_is_true(merged.get(COMPACTED)),
        started=iso_of_nanos(facts.start) if facts.start is not None else None,
        provider=facts.provider,
        tools=tool_names(merged.get(TOOLS)),
    )


def legacy_calls(events: list[_Event], spans: dict[tuple[Any, str], _Facts]) -> list[Call]:
    """The calls per-message log records describe: those of one span id together (else each
    run of message events and the choices after it), with what their span says."""
    groups: dict[Any, list[_Event]] = {}
    run, after_choice = 0, False
    for ev in events:
        if ev.span_id is not None:
            key: Any = ("span", ev.trace, ev.span_id)
        else:
            if ev.choice is None and after_choice:
                run += 1
            after_choice = ev.choice is not None
            key = ("run", run)
        groups.setdefault(key, []).append(ev)
    out: list[Call] = []
    for group in groups.values():
        first = group[0]
        facts = spans.get((first.trace, first.span_id)) if first.span_id is not None else None
        choices = sorted((e for e in group if e.choice is not None), key=lambda e: e.choice or 0)
        times = [e.nanos for e in group if e.nanos is not None]
        start = facts.start if facts is not None and facts.start is not None else None
        start = start if start is not None else min(times, default=None)
        ends = [e.nanos for e in choices if e.nanos is not None]
        ended = facts.ended if facts is not None else None
        if ended is None and (ends or times):
            ended = iso_of_nanos(max(ends or times))
        out.append(
            Call(
                record=first.record,
                where=first.where,
                order=(start is None, start or 0, first.record.index, first.position),
                conversation=_first(
                    *(e.conversation for e in group), facts.conversation if facts else None
                ),
                trace=first.trace,
                history=[e.message for e in group if e.choice is None],
                output=[e.message for e in choices],
                usage=facts.usage if facts else None,
                ended=ended,
                model=_first(facts.model if facts else None, *(e.model for e in group)),
                flags=facts.flags if facts else (),
                extra=tuple((e.record, e.where) for e in group[1:]),
                started=iso_of_nanos(start) if start is not None else None,
                provider=_first(facts.provider if facts else None, *(e.provider for e in group)),
            )
        )
    return out


def _replaced_context(c: Call) -> bool:
    """Compacted: marked so, or its input holds a compaction part."""
    return c.compacted or any(FLAG_COMPACTION_SUMMARY in m.flags for m in c.history)


def epochs(group: list[Call]) -> list[list[Call]]:
    """The calls of a conversation cut where a compacted call's history does not continue the
    calls before it (the context was replaced): one list per context, in time order."""
    ordered = sorted(group, key=lambda c: c.order)
    out: list[list[Call]] = [[]]
    longest: list[Message] = []
    for c in ordered:
        full = c.full
        continues = is_prefix(full, longest) or is_prefix(longest, full)
        if out[-1] and _replaced_context(c) and not continues:
            out.append([c])
            longest = full
            continue
        out[-1].append(c)
        if continues and len(full) > len(longest):
            longest = full
    return out


# --- detection ----------------------------------------------------------------------------------


def _attribute_keys(raw: Any) -> set[str]:
    if isinstance(raw, dict):
        return {k for k in raw if isinstance(k, str)}
    if isinstance(raw, list):
        return {kv["key"] for kv in raw if isinstance(kv, dict) and isinstance(kv.get("key"), str)}
    return set()


def _attribute_value(raw: Any, key: str) -> Any:
    if isinstance(raw, dict):
        return raw.get(key)
    if isinstance(raw, list):
        for kv in raw:
            if isinstance(kv, dict) and kv.get("key") == key:
                value = kv.get("value")
                return value.get("stringValue") if isinstance(value, dict) else value
    return None


@dataclass
class _Shape:
    keys: set[str] = field(default_factory=set)
    events: set[str] = field(default_factory=set)
    otlp: bool = False
    flat: bool = False
    openinference: bool = False

    def add(self, other: _Shape) -> None:
        self.keys |= other.keys
        self.events |= other.events
        self.otlp = self.otlp or other.otlp
        self.flat = self.flat or other.flat
        self.openinference = self.openinference or other.openinference


def _span_shape(value: Any, depth: int = 0) -> _Shape:
    """Attribute keys and GenAI event names of the span-like objects in a record, whether it has
    OTLP containers, flattened spans (objects with ``attributes`` and span identity fields), or
    OpenInference spans (``openinference.*`` / ``llm.input_messages*`` attributes, nested
    ``openinference`` attributes, a ``span_kind`` field)."""
    shape = _Shape()
    if depth > 8:
        return shape
    if isinstance(value, list):
        for v in value[:32]:
            shape.add(_span_shape(v, depth + 1))
        return shape
    if not isinstance(value, dict):
        return shape
    for outer, scopes, inner in (
        ("resourceSpans", ("scopeSpans", "instrumentationLibrarySpans"), "spans"),
        ("resourceLogs", ("scopeLogs", "instrumentationLibraryLogs"), "logRecords"),
    ):
        if isinstance(value.get(outer), list):
            shape.otlp = True
            for rs in value[outer][:8]:
                if not isinstance(rs, dict):
                    continue
                for scope_key in scopes:
                    for ss in rs.get(scope_key) or []:
                        if isinstance(ss, dict) and isinstance(ss.get(inner), list):
                            found = _span_shape(ss[inner], depth + 1)
                            found.flat = False
                            shape.add(found)
    if isinstance(value.get("spans"), list):
        shape.add(_span_shape(value["spans"], depth + 1))
    name = _first(value.get("eventName"), value.get("event_name"))
    name = name if name is not None else _attribute_value(value.get("attributes"), "event.name")
    if isinstance(name, str) and name in GENAI_EVENTS:
        shape.events.add(name)
    if "attributes" in value or (name in GENAI_EVENTS and "body" in value):
        keys = _attribute_keys(value.get("attributes"))
        shape.keys |= keys
        for event in value.get("events") or []:
            if isinstance(event, dict):
                shape.keys |= _attribute_keys(event.get("attributes"))
                if event.get("name") in GENAI_EVENTS:
                    shape.events.add(event["name"])
        shape.openinference = (
            shape.openinference
            or "span_kind" in value
            or any(k == "openinference" or k.startswith(_OPENINFERENCE) for k in keys)
        )
        span_fields = ("traceId", "spanId", "trace_id", "span_id", "context", "start_time",
                       "startTimeUnixNano", "timeUnixNano", "name", "parent_id")  # fmt: skip
        shape.flat = shape.flat or any(f in value for f in span_fields)
    return shape


def _otel_score(record: Any) -> float:
    return capped(_shape_score(record), record)


#: detection: spans or events carrying GenAI messages
MESSAGES_SCORE = 0.95
#: spans with other ``gen_ai.*`` attributes
GENAI_KEYS_SCORE = 0.8
#: OTLP spans without GenAI attributes
OTLP_SCORE = 0.6
#: flat span records without GenAI attributes
FLAT_SPAN_SCORE = 0.4


def _shape_score(record: Any) -> float:
    shape = _span_shape(record)
    messages = bool(shape.keys & {INPUT, OUTPUT}) or bool(shape.events)
    if messages:
        return MESSAGES_SCORE
    if shape.openinference:  # OpenInference spans without GenAI messages: not this format
        return 0.0
    if any(k.startswith("gen_ai.") for k in shape.keys):
        return GENAI_KEYS_SCORE
    if shape.otlp:
        return OTLP_SCORE
    if shape.flat:
        return FLAT_SPAN_SCORE
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
        self._rejects = Rejects(self, path)
        calls: list[Call] = []
        events: list[_Event] = []
        spans: dict[tuple[Any, str], _Facts] = {}
        by_trace: dict[str, str] = {}  # conversation ids seen on any span of a trace
        #: conversations (or traces) a rejected span belonged to, with how many were rejected
        troubled: Counter[str] = Counter()
        for record in self.records(path, check_utf8=False):  # bytes are checked per span
            if isinstance(record, Reject):
                yield record
                continue
            found, rejects = self._calls(record, by_trace, troubled, events, spans)
            yield from rejects
            calls.extend(found)
        calls.extend(legacy_calls(events, spans))
        groups: dict[str, list[Call]] = {}
        for c in calls:
            conversation = c.conversation or (by_trace.get(c.trace) if c.trace else None)
            local = f"call:{digest}:{c.record.index}:{c.where}"
            key = group_key("conversation", conversation, c.trace, local)
            groups.setdefault(key, []).append(replace(c, conversation=conversation))
        for key, group in groups.items():
            main: list[Chain] = []
            others: list[list[Chain]] = []
            for epoch in epochs(group):
                first, *rest = chains(epoch)
                main.append(first)
                others.extend([c] for c in rest)
            incomplete = rejected_calls(troubled, key, {c.trace for c in group if c.trace})
            for part_key, split, part in numbered(key, [main, *others]):
                final = part[-1][0]
                members = [c for _, chain in part for c in chain]
                build = partial(self._session, path, part_key, part, split, incomplete)
                yield from self._rejects.chain(part_key, final, members, build)

    def _calls(
        self,
        record: Record,
        by_trace: dict[str, str],
        troubled: Counter[str],
        events: list[_Event],
        spans: dict[tuple[Any, str], _Facts],
    ) -> tuple[list[Call], list[Reject]]:
        calls: list[Call] = []
        rejects: list[Reject] = []
        legacy = 0
        if not isinstance(record.value, dict | list):
            detail = "a record should be a span object or a list"
            return [], [self._rejects.record(record, "wrong_type", detail, "$")]
        try:
            items = list(_items(record.value, "$"))
        except Exception as e:
            return [], [self._rejects.error(record, e, "$")]
        if not items:
            self.tally.skip("no_spans")
            self.ignored_records.append(record.index)
            return [], []
        self.tally.seen += len(items) - 1  # the record stands for its spans
        for position, (item, where, res) in enumerate(items):
            key = None
            try:
                span = attributes(item.get("attributes"), f"{where}.attributes")
                sources = _sources(item, where, span)
                merged = _merged(sources)
                trace = _trace_id(item)
                conversation = _conversation(merged, item, res.values)
                key = f"conversation:{conversation}" if conversation else None
                key = key or (f"trace:{trace}" if trace else None)
                bad = inspect_value(item, root=where)
                if bad is None:
                    bad = inspect_value(res.values, root=f"{where}.resource")
                if bad is not None:
                    raise RecordError(bad[0], "the span holds bytes that are not UTF-8", bad[1])
                if trace and conversation:
                    by_trace.setdefault(trace, conversation)
                name = _event_name(item, span.values)
                if name in LEGACY_EVENTS and not any(k in merged for k in (INPUT, OUTPUT)):
                    events.append(
                        self._event(record, item, where, position, name, span, merged, conversation)
                    )
                    legacy += 1
                    continue
                call = call_of(record, item, where, sources, merged, res, position)
                is_span = name is None and "body" not in item  # not a log record
                if call is None and is_span and (sid := _span_id(item)) is not None:
                    spans.setdefault((trace, sid), _facts(item, merged, conversation))
            except Exception as e:
                out = self._rejects.error(record, e, where)
                if key is not None:
                    troubled[key] += 1
                    out.session_id = key.split(":", 1)[1]
                rejects.append(out)
                continue
            if call is not None:
                calls.append(call)
            else:
                self.tally.skip("no_model_call")
        if not calls and not rejects and not legacy:
            self.ignored_records.append(record.index)
        return calls, rejects

    def _event(
        self,
        record: Record,
        item: dict[str, Any],
        where: str,
        position: int,
        name: str,
        span: _Attributes,
        merged: dict[str, Any],
        conversation: str | None,
    ) -> _Event:
        body = _event_body(span.values, item.get("body"), where)
        message, choice = event_message(name, body, f"{where}.body")
        start, _, flags = _times(item)
        if flags:
            message = replace(message, flags=(*message.flags, *flags))
        return _Event(
            record=record,
            where=where,
            position=position,
            message=message,
            choice=choice,
            nanos=start,
            trace=_trace_id(item),
            span_id=_span_id(item),
            conversation=conversation,
            model=_text_value(merged, _MODEL_KEYS),
            provider=_text_value(merged, _PROVIDER_KEYS),
        )

    def _session(
        self,
        path: Path,
        key: str,
        part: list[Chain],
        split: tuple[int, int] | None,
        incomplete: int,
    ) -> Session:
        messages: list[Message] = []
        #: the summary of each replaced context: its index, with when and the tokens before
        replaced: dict[int, tuple[str | None, int | None]] = {}
        provider_side: list[dict[str, Any]] = []
        previous: list[Message] = []
        for n, (final, members) in enumerate(part):
            chain = chain_messages(final, members)
            start = common(previous, final.full) if n else 0
            new = [_once(m, messages) for m in chain[start:]]
            if n and new:  # a replaced context: where its summary is
                at = next(
                    (i for i, m in enumerate(new) if FLAG_COMPACTION_SUMMARY in m.flags), None
                )
                summary: tuple[str | None, int | None] | None = None
                if at is None:
                    at = 0
                    new[0] = replace(new[0], flags=(*new[0].flags, FLAG_COMPACTION_SUMMARY))
                    earlier = sorted((c for _, ch in part[:n] for c in ch), key=lambda c: c.order)
                    pre = next((c.usage.prompt_tokens for c in reversed(earlier) if c.usage), None)
                    summary = (min(members, key=lambda c: c.order).started, pre)
                messages, kept = _kept(messages, new[at + 1 :])
                new = [*new[: at + 1], *kept]
                if summary is not None:
                    replaced[len(messages) + at] = summary
            provider_side += _provider_side(members, n > 0)
            messages.extend(new)
            previous = final.full
        final = part[-1][0]
        members = sorted((c for _, chain in part for c in chain), key=lambda c: c.order)
        metadata = call_metadata(members)
        compactions = _compactions(messages, replaced) + provider_side
        if compactions:
            metadata["compactions"] = compactions
        source_id = final.conversation or key.split(":", 1)[1].split("#", 1)[0]
        return build_session(
            self.name, path, key, final, source_id, messages, metadata, split, incomplete
        )


def _once(m: Message, before: list[Message]) -> Message:
    """``m`` without its compaction flag when the same compaction was flagged before (a
    compaction part passed back again on a later request)."""
    if FLAG_COMPACTION_SUMMARY not in m.flags:
        return m
    if any(FLAG_COMPACTION_SUMMARY in b.flags and same(b, m) for b in before):
        return replace(m, flags=tuple(f for f in m.flags if f != FLAG_COMPACTION_SUMMARY))
    return m


def _provider_side(members: list[Call], after_cut: bool) -> list[dict[str, Any]]:
    """Compactions a provider made on what it was sent: the first call marked compacted after
    calls that were not, when no compaction part is in its messages (the first call of a
    replaced context is the replacement itself)."""
    out = []
    ordered = sorted(members, key=lambda c: c.order)
    for i, c in enumerate(ordered):
        before = ordered[i - 1] if i else None
        if i == 0 and after_cut:
            continue
        if not c.compacted or (before is not None and before.compacted):
            continue
        if any(FLAG_COMPACTION_SUMMARY in m.flags for m in c.full):
            continue
        pre = before.usage.prompt_tokens if before is not None and before.usage else None
        out.append(
            {"kind": "provider_side", "trigger": None, "pre_tokens": pre,
             "timestamp": c.started, "summary_seq_index": None}
        )  # fmt: skip
    return out


def _kept(messages: list[Message], after: list[Message]) -> tuple[list[Message], list[Message]]:
    """Messages a compaction kept: the earlier context's last messages that the new context
    repeats right after its summary leave the earlier context (they were not replaced) and stay
    after the summary, with the usage and time recorded on them."""
    floor = max((i + 1 for i, m in enumerate(messages) if FLAG_COMPACTION_SUMMARY in m.flags),
                default=1)  # fmt: skip
    k = min(len(after), len(messages) - floor)
    while k > 0 and not all(same(a, b) for a, b in zip(messages[-k:], after, strict=False)):
        k -= 1
    if k <= 0:
        return messages, after
    dropped = messages[-k:]
    kept = [
        replace(a, usage=a.usage or d.usage, timestamp=a.timestamp or d.timestamp)
        for a, d in zip(after[:k], dropped, strict=True)
    ]
    return messages[:-k], [*kept, *after[k:]]


def _compactions(
    messages: list[Message], replaced: dict[int, tuple[str | None, int | None]]
) -> list[dict[str, Any]]:
    """A ``compactions`` entry for each message flagged as a summary, in order."""
    out = []
    for i, m in enumerate(messages):
        if FLAG_COMPACTION_SUMMARY not in m.flags:
            continue
        if i in replaced:
            kind, (timestamp, pre) = "context_replaced", replaced[i]
        else:  # the call that returned the part read the context before it
            kind, timestamp = "compaction_part", m.timestamp
            own = m.usage.prompt_tokens if m.usage is not None else None
            pre = (
                own
                if own is not None
                else next(
                    (
                        b.usage.prompt_tokens
                        for b in reversed(messages[:i])
                        if b.usage is not None and b.usage.prompt_tokens is not None
                    ),
                    None,
                )
            )
        out.append(
            {"kind": kind, "trigger": None, "pre_tokens": pre,
             "timestamp": timestamp, "summary_seq_index": i}
        )  # fmt: skip
    return out
