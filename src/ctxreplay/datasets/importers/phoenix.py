"""Arize Phoenix span exports and OTLP JSON with OpenInference attributes.

Shapes read. Phoenix's span JSON (``phoenix.trace.span_json_encoder``: ``name``, ``context
{trace_id, span_id}``, ``span_kind``, ``parent_id``, ``start_time``, ``end_time``,
``status_code``, ``attributes``, ``events``), alone per line (JSONL), in a list, or under ``data``
(the REST API's ``GET /v1/projects/{project}/spans``, whose ``attributes`` are flattened and
whose ``span_kind`` carries ``openinference.span.kind``); the spans DataFrame layout
(``context.span_id`` and ``attributes.llm.input_messages`` columns, as JSON rows or a Parquet file
such as ``TraceDataset``'s); and OTLP JSON (``resourceSpans[].scopeSpans[].spans[]``) whose
attributes follow the OpenInference semantic conventions (``Arize-ai/openinference``
``spec/semantic_conventions.md``). Attributes may be flattened dotted keys
(``llm.input_messages.0.message.role``) or nested objects (``{"llm": {"input_messages": [{"message":
{"role": ...}}]}}``): both are read as the same flattened keys, so they give identical sessions.

Messages: ``llm.input_messages.N`` / ``llm.output_messages.N`` with ``message.role``,
``message.content`` or ``message.contents.M.message_content.{type, text, image.image.url,
audio.audio.url, video.video.url}``, ``message.tool_calls.K.tool_call.{id, function.name,
function.arguments}`` and ``message.tool_call_id`` / ``message.name`` on tool results. A call or
result recorded without an id (older instrumentations) is paired by order: the call gets the id
``oi-call-<message>-<k>`` from its place in the conversation, and a result without an id answers
the earliest open call before it. An ``LLM`` span without message attributes is read from
``input.value`` / ``output.value`` (a request body with ``messages``, a ``choices`` response, or
text). Usage: ``llm.token_count.prompt`` (cache reads included), ``.completion``,
``.prompt_details.cache_read``; model ``llm.model_name``; session ``session.id``; user ``user.id``.

Accounting unit: each span (a document or line holding several counts as its spans; one that
holds none is skipped ``no_spans``). Sessions are assembled as for Langfuse
(``calls.CallTreeImporter``, on the assembly of model calls every trace format shares): per
``session.id`` (of the span, or of another span of its trace), else per trace; the session is the longest
consistent history of its ``LLM`` spans plus that call's output; disagreeing calls become
separate sessions flagged ``conversation_split``; the other calls are skipped
``in_session``; a ``TOOL`` span whose ``output.value`` answers a call of the last
output that nothing later answers becomes its ``tool`` message (matched by ``tool_call.id`` /
``tool.id``, else by ``tool.name``), other ``TOOL`` spans are skipped ``tool_in_history``; ``CHAIN``,
``AGENT``, ``RETRIEVER`` and other kinds are skipped ``not_a_model_call``, an ``LLM`` span without
messages ``no_messages``. A span that cannot be read is rejected and flags its session
``conversation_incomplete``. Tool results whose call is not in the session reject it (a model
call's input is a request a provider accepted). Spans that carry the OTel GenAI
``gen_ai.input.messages`` attributes are the ``otel-genai`` format's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from ..messages import Message, Part, Usage, as_dict, dumps_arguments
from ..rejects import RecordError, Reject
from ..validate import FLAG_TIMESTAMP_INVALID, FLAG_USAGE_OUT_OF_RANGE
from .base import expect, importers
from .calls import CallTreeImporter, Node, ToolRun
from .langfuse import (
    count,
    id_text,
    input_messages,
    output_messages,
    role_of,
    start_order,
    text_of,
)
from .otel_genai import attributes
from .parts import unknown_part
from .records import Record, sub_record
from .sniffing import PARQUET_MAGIC, capped, is_parquet, sample_of
from .times import timestamp_of

#: ``openinference.span.kind`` values (the spec's, and Phoenix's ``UNKNOWN``)
SPAN_KINDS = frozenset(
    {"LLM", "EMBEDDING", "CHAIN", "RETRIEVER", "RERANKER", "TOOL", "AGENT", "GUARDRAIL",
     "EVALUATOR", "PROMPT", "UNKNOWN"}
)  # fmt: skip
INPUT = "llm.input_messages"
OUTPUT = "llm.output_messages"
#: attribute key prefixes only OpenInference writes
_OI_PREFIXES = (
    "openinference.span.kind", INPUT, OUTPUT, "llm.token_count.", "llm.model_name",
    "llm.invocation_parameters", "input.value", "output.value", "llm.prompts", "llm.tools",
    "tool.name", "tool.parameters", "retrieval.documents", "embedding.embeddings",
)  # fmt: skip
_GENAI = ("gen_ai.input.messages", "gen_ai.output.messages")

Flat = dict[str, tuple[Any, str]]


# --- attributes, flattened ----------------------------------------------------------------------


def _step(path: str, key: str) -> str:
    return f"{path}.{key}" if key.isidentifier() else f"{path}[{json.dumps(key)}]"


def flatten_into(out: Flat, value: Any, key: str, path: str) -> None:
    """``value`` under ``key`` as flattened dotted keys: objects by their keys, lists of objects
    by index (as OpenInference flattens them), anything else a leaf. Null leaves are left out."""
    if isinstance(value, dict) and value:
        for k, v in value.items():
            if isinstance(k, str):
                flatten_into(out, v, f"{key}.{k}" if key else k, _step(path, k))
        return
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        for i, v in enumerate(value):
            flatten_into(out, v, f"{key}.{i}", f"{path}[{i}]")
        return
    if value is not None and key:
        out[key] = (value, path)


_ANY_VALUE_KEYS = {
    "string_value": "stringValue", "bool_value": "boolValue", "int_value": "intValue",
    "double_value": "doubleValue", "bytes_value": "bytesValue", "array_value": "arrayValue",
    "kvlist_value": "kvlistValue",
}  # fmt: skip


def _camel(value: Any) -> Any:
    """An OTLP value as protobuf's JSON mapping writes it (``stringValue``), from the snake_case
    field names Phoenix's ``otlpv1`` endpoint returns (``string_value``)."""
    if isinstance(value, list):
        return [_camel(v) for v in value]
    if isinstance(value, dict):
        return {_ANY_VALUE_KEYS.get(k, k): _camel(v) for k, v in value.items()}
    return value


def span_attributes(span: dict[str, Any], where: str) -> Flat:
    """A span's attributes, flattened: a plain object (flattened or nested), an OTLP key/value
    list, or ``attributes.*`` columns of the spans DataFrame."""
    out: Flat = {}
    raw = span.get("attributes")
    if isinstance(raw, list):
        found = attributes(_camel(raw), f"{where}.attributes")
        for k, v in found.values.items():
            flatten_into(out, v, k, found.paths[k])
    elif raw is not None:
        expect(raw, dict, f"{where}.attributes", "attributes")
        flatten_into(out, raw, "", f"{where}.attributes")
    for k, v in span.items():
        if isinstance(k, str) and k.startswith("attributes.") and len(k) > len("attributes."):
            flatten_into(out, v, k[len("attributes.") :], _step(where, k))
    return out


def _value(attrs: Flat, key: str) -> Any:
    found = attrs.get(key)
    return found[0] if found is not None else None


def _context(span: dict[str, Any], name: str) -> Any:
    return as_dict(span.get("context")).get(name, span.get(f"context.{name}"))


def span_ids(span: dict[str, Any]) -> tuple[str | None, str | None]:
    """A span's trace and span ids."""
    trace = id_text(_context(span, "trace_id")) or id_text(
        span.get("traceId", span.get("trace_id"))
    )
    own = id_text(_context(span, "span_id")) or id_text(span.get("spanId", span.get("span_id")))
    return trace, own


def span_kind(span: dict[str, Any], attrs: Flat) -> str | None:
    kind = _value(attrs, "openinference.span.kind") or span.get("span_kind")
    return kind.upper() if isinstance(kind, str) else None


# --- messages -------------------------------------------------------------------------------


def _indexed(attrs: Flat, prefix: str) -> dict[int, Flat]:
    """The items of a flattened list attribute: ``<prefix>.<N>.<rest>`` grouped by ``N``."""
    groups: dict[int, Flat] = {}
    head = prefix + "."
    for key, found in attrs.items():
        if not key.startswith(head):
            continue
        index, _, rest = key[len(head) :].partition(".")
        if not index.isdigit() or not rest:
            raise RecordError("malformed", f"{key!r} is not {prefix}.<index>.<field>", found[1])
        groups.setdefault(int(index), {})[rest] = found
    return groups


def _json_list(attrs: Flat, key: str) -> Flat:
    """A list attribute some writers store as JSON text (or a list of flattened objects)."""
    found = attrs.get(key)
    if found is None:
        return {}
    value, path = found
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            raise RecordError("invalid_json", f"{key} is not JSON", path) from None
    expect(value, list, path, key)
    out: Flat = {}
    flatten_into(out, value, key, path)
    return out


def _media(fields: Flat, kind: str) -> Part:
    """An image, audio or video content item: a data URL becomes a ``blob``, a link a ``uri``."""
    url = _value(fields, f"message_content.{kind}.{kind}.url")
    mime = _value(fields, f"message_content.{kind}.{kind}.mime_type")
    mime = mime if isinstance(mime, str) else None
    if not isinstance(url, str):
        return unknown_part({k: v for k, (v, _) in fields.items()})
    if url.startswith("data:"):
        header, _, payload = url.partition(",")
        return Part(
            "blob", content=payload, mime_type=header[5:].split(";")[0] or mime, modality=kind
        )
    return Part("uri", uri=url, mime_type=mime, modality=kind)


def _call(fields: Flat, synthetic: str, where: str) -> Part:
    name = _value(fields, "tool_call.function.name")
    name = expect(name, str, fields.get("tool_call.function.name", (None, where))[1], "tool name")
    args = _value(fields, "tool_call.function.arguments")
    text = "{}" if args is None else args if isinstance(args, str) else dumps_arguments(args)
    call_id = id_text(_value(fields, "tool_call.id")) or synthetic
    return Part.call(call_id, name, text)


def _content_part(fields: Flat, synthetic: str, where: str) -> Part | None:
    kind = _value(fields, "message_content.type")
    text = _value(fields, "message_content.text")
    if kind in (None, "text") and text is not None:
        return Part.text(text_of(text)) if text != "" else None
    if kind == "reasoning":
        return Part("reasoning", content=text_of(text))
    if kind in ("image", "audio", "video"):
        return _media(fields, kind)
    if kind == "tool_use":
        return _call(fields, synthetic, where)
    return unknown_part({k: v for k, (v, _) in fields.items()})


def oi_message(fields: Flat, position: int, where: str) -> Message:
    """One flattened OpenInference message (``message.role``, ``message.content``...);
    ``position`` is its place in the conversation (for ids of calls recorded without one)."""
    role_at = fields.get("message.role", (None, f"{where}.message.role"))
    role = role_of(role_at[0], role_at[1])
    parts: list[Part] = []
    contents = _indexed(fields, "message.contents")
    for m in sorted(contents):
        part = _content_part(contents[m], f"oi-call-{position}-c{m}", f"{where}.contents[{m}]")
        if part is not None:
            parts.append(part)
    if not contents:
        content = _value(fields, "message.content")
        if content is not None and content != "":
            parts.append(Part.text(text_of(content)))
    name = id_text(_value(fields, "message.name"))
    if role == "tool":
        call_id = id_text(_value(fields, "message.tool_call_id"))
        text = "\n".join(p.content or "" for p in parts if p.type == "text")
        media = [p for p in parts if p.type not in ("text", "reasoning")]
        parts = [Part.response(call_id, text, name), *media]
        name = None
    calls = _indexed(fields, "message.tool_calls")
    for k in sorted(calls):
        parts.append(_call(calls[k], f"oi-call-{position}-{k}", f"{where}.tool_calls[{k}]"))
    legacy = _value(fields, "message.function_call_name")
    if isinstance(legacy, str):
        args = _value(fields, "message.function_call_arguments_json")
        parts.append(Part.call(f"oi-call-{position}-f", legacy, text_of(args) or "{}"))
    return Message(role, tuple(parts), name=name, source_path=where)


def oi_messages(attrs: Flat, prefix: str, offset: int, where: str) -> list[Message] | None:
    """The messages of ``llm.input_messages`` / ``llm.output_messages``, or None when the span
    has no such attribute."""
    merged = dict(attrs)
    if prefix in attrs:
        merged.update(_json_list(attrs, prefix))
    groups = _indexed(merged, prefix)
    if not groups and prefix not in attrs:
        return None
    return [
        oi_message(groups[i], offset + n, f"{where}[{i}]") for n, i in enumerate(sorted(groups))
    ]


def _usage(attrs: Flat) -> tuple[Usage | None, bool]:
    bad = False
    values = []
    for key in (
        "llm.token_count.prompt",
        "llm.token_count.prompt_details.cache_read",
        "llm.token_count.completion",
    ):
        n, wrong = count(_value(attrs, key))
        bad = bad or wrong
        values.append(n)
    if all(v is None for v in values):
        return None, bad
    return Usage(*values), bad


# --- records --------------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """A Parquet cell as JSON: times as ISO text, decimals and non-finite floats as numbers/None."""
    if isinstance(value, datetime):
        text = value.isoformat()
        return text if value.tzinfo is not None else text + "Z"
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def parquet_records(path: Path, fmt: str) -> Iterator[Record | Reject]:
    """The rows of a Parquet span table (Phoenix's ``TraceDataset``) as records, read a row group
    at a time; a row's raw bytes are its JSON (a Parquet row has no bytes of its own). A file or
    row group that does not read is one ``unreadable_file`` reject, and reading stops there."""
    index = 0
    try:
        source = pq.ParquetFile(path)
        for g in range(source.num_row_groups):
            for row in source.read_row_group(g).to_pylist():
                yield sub_record(index, _plain(row))
                index += 1
    except Exception as e:  # not Parquet after all, or a damaged file
        try:
            data = path.read_bytes()[:65536] if index == 0 else b""
        except OSError:
            data = b""
        detail = f"not a readable Parquet file after {index} rows: {type(e).__name__}: {e}"
        yield Reject(str(path), "unreadable_file", detail[:2000], data, fmt, index)


@importers.register("phoenix")
class PhoenixImporter(CallTreeImporter):
    """Phoenix / OpenInference spans (LLM, TOOL, CHAIN...) grouped into sessions."""

    suffixes = (".json", ".jsonl", ".parquet")
    key_prefix = "phoenix"

    def sniff(self, path: Path, head: bytes) -> float:
        if head.startswith(PARQUET_MAGIC):
            return _parquet_score(path)
        return sample_of(path, head).mean(_record_score)

    def table(self, path: Path) -> Iterator[Record | Reject] | None:
        return parquet_records(path, self.name) if is_parquet(path) else None

    def nodes(self, record: Record) -> list[tuple[Any, str]]:
        return list(_spans(record.value, "$"))

    def empty_reason(self, record: Record) -> str:
        return "no_spans"

    def keys_of(self, item: Any) -> tuple[str | None, str | None]:
        span = as_dict(item)
        trace, _ = span_ids(span)
        try:
            session = id_text(_value(span_attributes(span, "$"), "session.id"))
        except Exception:  # the attributes are what could not be read
            session = None
        return session, trace

    def node(self, record: Record, item: Any, where: str, position: int) -> Node:
        span = expect(item, dict, where, "span")
        attrs = span_attributes(span, where)
        trace, own = span_ids(span)
        session = id_text(_value(attrs, "session.id"))
        start = _first(span, "start_time", "startTimeUnixNano", "start_time_unix_nano", "startTime")
        order, flags = start_order(start, record, position)
        end = _first(span, "end_time", "endTimeUnixNano", "end_time_unix_nano", "endTime")
        ended, bad_end = timestamp_of(end)
        meta: dict[str, str] = {}
        for key, name in (
            ("user_ids", "user.id"),
            ("providers", "llm.provider"),
            ("systems", "llm.system"),
        ):
            found = id_text(_value(attrs, name))
            if found:
                meta[key] = found
        node = Node(record, where, order, "not_a_model_call", session, trace, meta=meta, ident=own)
        kind = span_kind(span, attrs)
        has_messages = any(k.startswith((INPUT, OUTPUT)) for k in attrs)
        if kind == "LLM" or (kind is None and has_messages):
            found_flags = list(flags)
            if bad_end and FLAG_TIMESTAMP_INVALID not in found_flags:
                found_flags.append(FLAG_TIMESTAMP_INVALID)
            return self._llm(node, span, attrs, ended, found_flags)
        if kind == "TOOL":
            call_id = next(
                (
                    found
                    for k in ("tool_call.id", "tool.id", "tool.call_id")
                    if (found := id_text(_value(attrs, k)))
                ),
                None,
            )
            node.as_tool(
                ToolRun(
                    call_id=call_id,
                    name=id_text(_value(attrs, "tool.name")) or id_text(span.get("name")),
                    text=text_of(_value(attrs, "output.value")),
                    is_error=_is_error(span),
                    ended=None if bad_end else ended,
                )
            )
        return node

    def _llm(
        self,
        node: Node,
        span: dict[str, Any],
        attrs: Flat,
        ended: str | None,
        flags: list[str],
    ) -> Node:
        where = node.where
        history = oi_messages(attrs, INPUT, 0, f"{where}.{INPUT}")
        if history is None:
            raw = attrs.get("input.value")
            history = input_messages(raw[0], raw[1]) if raw is not None else []
        output = oi_messages(attrs, OUTPUT, len(history), f"{where}.{OUTPUT}")
        if output is None:
            raw = attrs.get("output.value")
            output = output_messages(raw[0], raw[1]) if raw is not None else []
        if not history and not output:
            node.kind = "no_messages"
            return node
        usage, bad_usage = _usage(attrs)
        if bad_usage:
            flags.append(FLAG_USAGE_OUT_OF_RANGE)
        model = next(
            (
                v
                for k in ("llm.model_name", "llm.response.model_name", "llm.request.model_name")
                if isinstance(v := _value(attrs, k), str)
            ),
            None,
        )
        return node.as_call(history, output, usage, ended, model, flags)


def _first(span: dict[str, Any], *keys: str) -> Any:
    return next((span[k] for k in keys if span.get(k) is not None), None)


def _is_error(span: dict[str, Any]) -> bool:
    status = span.get("status_code")
    if isinstance(status, str):
        return status.upper() in ("ERROR", "STATUS_CODE_ERROR")
    code = as_dict(span.get("status")).get("code")
    return code in (2, "STATUS_CODE_ERROR", "ERROR")


def _spans(value: Any, where: str) -> Iterator[tuple[Any, str]]:
    """The spans of a record: OTLP ``resourceSpans``, a REST page's ``data``, a list, a span."""
    if isinstance(value, list):
        for i, v in enumerate(value):
            yield from _spans(v, f"{where}[{i}]")
        return
    if not isinstance(value, dict):
        yield value, where  # rejected as a span
        return
    if "resourceSpans" in value:
        for i, rs in enumerate(expect(value["resourceSpans"], list, f"{where}.resourceSpans")):
            rw = f"{where}.resourceSpans[{i}]"
            expect(rs, dict, rw, "resourceSpans")
            for scope_key in ("scopeSpans", "instrumentationLibrarySpans"):
                scopes = expect(rs.get(scope_key, []), list, f"{rw}.{scope_key}", scope_key)
                for j, ss in enumerate(scopes):
                    sw = f"{rw}.{scope_key}[{j}]"
                    expect(ss, dict, sw, scope_key)
                    for k, span in enumerate(expect(ss.get("spans", []), list, f"{sw}.spans")):
                        yield span, f"{sw}.spans[{k}]"
        return
    for key in ("data", "spans"):
        if isinstance(value.get(key), list) and not _is_span(value):
            yield from _spans(value[key], f"{where}.{key}")
            return
    yield value, where


def _is_span(value: dict[str, Any]) -> bool:
    return any(
        k in value
        for k in ("context", "context.span_id", "span_kind", "attributes", "spanId", "span_id")
    )


# --- detection ----------------------------------------------------------------------------------


def _keys(span: Any) -> set[str]:
    if not isinstance(span, dict):
        return set()
    try:
        return set(span_attributes(span, "$"))
    except Exception:
        return set()


#: detection: spans (or Parquet columns) with OpenInference attributes
OPENINFERENCE_SCORE = 0.9
#: spans with an OpenInference ``span_kind`` and a span id, without its attributes
SPAN_KIND_SCORE = 0.85
#: Parquet span columns with GenAI attributes
GENAI_PARQUET_SCORE = 0.3


def _span_score(span: Any) -> float:
    if not isinstance(span, dict):
        return 0.0
    keys = _keys(span)
    if any(k.startswith(_GENAI) for k in keys):
        return 0.0  # OTel GenAI messages: the otel-genai format's
    if any(k.startswith(_OI_PREFIXES) for k in keys):
        return OPENINFERENCE_SCORE
    kind = span.get("span_kind")
    if isinstance(kind, str) and kind.upper() in SPAN_KINDS and _context(span, "span_id"):
        return SPAN_KIND_SCORE
    return 0.0


def _shape_score(record: Any) -> float:
    try:
        spans = [s for s, _ in _spans(record, "$")][:32]
    except Exception:
        return 0.0
    return max((_span_score(s) for s in spans), default=0.0)


def _record_score(record: Any) -> float:
    return capped(_shape_score(record), record)


def _parquet_score(path: Path) -> float:
    try:
        columns = set(pq.read_schema(path).names)
    except Exception:
        return 0.0
    attrs = {c[len("attributes.") :] for c in columns if c.startswith("attributes.")}
    if any(a.startswith(_GENAI) for a in attrs):
        return GENAI_PARQUET_SCORE
    if "context.span_id" in columns and (
        "span_kind" in columns or any(a.startswith(_OI_PREFIXES) for a in attrs)
    ):
        return OPENINFERENCE_SCORE
    return 0.0
