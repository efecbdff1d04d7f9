"""Langfuse observation exports (JSON array, JSONL, CSV; the public API's ``{data: [...]}``).

Shape (Langfuse ``packages/shared/src/domain/observations.ts`` ``ObservationSchema`` and the
public API's ``ObservationV2``): each row is an observation with ``id``, ``traceId``
(``trace_id``), ``parentObservationId``, ``type`` (``GENERATION``, ``SPAN``, ``EVENT``, ``AGENT``,
``TOOL``, ``CHAIN``, ``RETRIEVER``, ``EVALUATOR``, ``EMBEDDING``, ``GUARDRAIL``), ``name``,
``startTime``/``endTime``, ``input``, ``output``, ``metadata``, ``model``/``providedModelName``,
``usageDetails`` (``input``, ``output``, ``total`` and details such as ``input_cached_tokens`` or
``cache_read_input_tokens``; also the older ``usage`` object and ``inputUsage``/``outputUsage``) and,
in newer exports, ``sessionId``/``userId``. snake_case spellings are read too. A CSV export
(the UI's batch export: one column per field) holds JSON text in its object cells
(``input``, ``output``, ``metadata``, ``usageDetails``...), decoded here. Trace rows (a traces
export: ``id``, ``timestamp``, ``sessionId``, ``userId``, ``name``, no ``type``) give the session
of their trace's observations; a trace with ``observations`` (the API's trace detail, or a
downloaded ``{trace, observations}`` document) stands for its observations.

Accounting unit: each observation row. A record holding several (a trace with its observations,
an API page) counts as its observations; a trace row without any is skipped ``trace_record``.

Sessions. One session per Langfuse session (``sessionId`` of the observation, of its trace row,
or of another observation of its trace), else per trace. Its ``GENERATION`` observations are
model calls: ordered by start time, the session is the input of the call with the longest
history (the latest among equals) followed by its output, assembled by ``calls`` (its
``CallTreeImporter``) as for every trace format: a generation's ``input`` is the chat message
list (OpenAI or Anthropic shaped, or ``{messages, system}``, or a prompt string), its ``output``
the assistant message (or text, a message list, a raw ``choices`` response). Each generation's
usage and end time go onto the output message it produced. Generations whose input is not a prefix of that
history (a regenerated answer, a condensed history) are not merged away: each consistent
history is its own session, flagged ``conversation_split`` (a condensed or truncated history
appears so; Langfuse records no compaction, so none is marked ``compaction_summary``).
The other calls of a session are skipped ``in_session``. A ``TOOL`` observation whose
output answers a tool call of the session's last output that no later input holds (the run ended
after the tool ran) becomes that call's ``tool`` message (matched by a recorded call id, else by
tool name, in order); other ``TOOL`` observations are skipped ``tool_in_history``. ``SPAN``,
``EVENT``, ``AGENT``, ``CHAIN`` and the rest are skipped ``not_a_model_call``; a generation that
records no messages is skipped ``no_messages``. An observation that cannot be read is rejected
(raw: its record) and flags the rest of its session ``conversation_incomplete``; a session that
fails validation rejects every observation it was built from. Tool results whose call is not in
the session reject it: a generation's input is a request a provider accepted, so it never
legitimately starts after a call it answers. Every message is visible.

The session key is the Langfuse session (or trace) id without the file digest, so one session
maps to one id wherever it is read; a session split across files is made by the first file and
rejected ``duplicate_session`` in the others (concatenate the files to combine them).
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..messages import Message, Part, Session, Usage, as_dict, dumps_arguments
from ..rejects import RecordError, Reject, inspect_value
from ..validate import FLAG_TIMESTAMP_INVALID, FLAG_USAGE_OUT_OF_RANGE
from .anthropic_messages import _block_parts
from .base import expect, importers
from .calls import CallTreeImporter, Node, ToolRun
from .parts import content_parts, unknown_part
from .records import Record
from .sniffing import capped, decode_bytes, sample_of
from .times import InvalidTime, nanos_of, timestamp_of

# --- values as observability tools record them ---------------------------------------------


def text_of(value: Any) -> str:
    """A recorded value as text: strings as written, anything else as its JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def id_text(value: Any) -> str | None:
    """An id as text (strings and integers), or None."""
    if isinstance(value, str) and value != "":
        return value[:1000]
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def start_order(
    value: Any, record: Record, position: int
) -> tuple[tuple[Any, ...], tuple[str, ...]]:
    """The sort key of a node starting at ``value``, and the flags a bad start time gives."""
    try:
        start = nanos_of(value)
    except InvalidTime:
        return (True, 0, record.index, position), (FLAG_TIMESTAMP_INVALID,)
    return (start is None, start or 0, record.index, position), ()


def count(value: Any) -> tuple[int | None, bool]:
    """A token count (integers, or digits), and whether a recorded value is not one."""
    if value is None:
        return None, False
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip()), False
    if isinstance(value, float) and value.is_integer():
        return int(value), False
    if isinstance(value, int) and not isinstance(value, bool):
        return value, False
    return None, True


# --- chat messages as observability tools record them -----------------------------------------

_ROLE_ALIASES = {
    "human": "user",
    "ai": "assistant",
    "model": "assistant",
    "chatbot": "assistant",
    "function": "tool",
}
_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
#: content block types of Anthropic's Messages API (read with the Anthropic importer's reader)
_BLOCKS = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use",
     "mcp_tool_use", "mcp_tool_result", "document"}
)  # fmt: skip


def role_of(value: Any, where: str) -> str:
    role = expect(value, str, where, "role")
    role = _ROLE_ALIASES.get(role.lower(), role.lower())
    if role not in _ROLES:
        raise RecordError("unknown_role", f"role {value!r} is not a chat role", where)
    return role


def _content(content: Any, where: str) -> list[Part]:
    """A message's content: text, OpenAI content parts, or Anthropic content blocks."""
    if isinstance(content, list) and any(
        isinstance(b, dict)
        and (b.get("type") in _BLOCKS or (b.get("type") == "image" and "source" in b))
        for b in content
    ):
        return [p for i, b in enumerate(content) for p in _block_parts(b, f"{where}[{i}]")]
    if isinstance(content, dict):  # one part on its own
        return content_parts([content], where)
    return content_parts(content, where)


def _tool_call(raw: Any, where: str) -> Part:
    """An OpenAI (``{id, function: {name, arguments}}``) or LangChain (``{id, name, args}``)
    tool call."""
    expect(raw, dict, where, "tool call")
    fn = raw.get("function")
    if isinstance(fn, dict):
        name = expect(fn.get("name"), str, f"{where}.function.name", "tool name")
        args = fn.get("arguments")
    else:
        name = expect(raw.get("name"), str, f"{where}.name", "tool name")
        args = raw.get("args", raw.get("arguments", raw.get("input")))
    call_id = expect(raw.get("id"), str, f"{where}.id", "tool call id")
    text = "{}" if args is None else args if isinstance(args, str) else dumps_arguments(args)
    return Part.call(call_id, name, text)


def chat_message(raw: Any, where: str, default_role: str | None = None) -> Message:
    """One chat message in the OpenAI or Anthropic shape (LangChain roles accepted)."""
    expect(raw, dict, where, "message")
    if "role" not in raw and default_role is not None:
        role = default_role
    else:
        role = role_of(raw.get("role"), f"{where}.role")
    parts = _content(raw.get("content"), f"{where}.content")
    for key in ("reasoning_content", "reasoning"):
        if isinstance(raw.get(key), str) and raw[key]:
            parts.insert(0, Part("reasoning", content=raw[key]))
            break
    if isinstance(raw.get("refusal"), str) and raw["refusal"]:
        parts.append(Part.text(raw["refusal"]))
    name = raw.get("name") if isinstance(raw.get("name"), str) else None
    if role == "tool":
        call_id = raw.get("tool_call_id")
        if call_id is not None:
            call_id = expect(call_id, str, f"{where}.tool_call_id", "tool_call_id")
        text = "\n".join(p.content or "" for p in parts if p.type == "text")
        media = [p for p in parts if p.type not in ("text", "reasoning")]
        parts = [Part.response(call_id, text, name), *media]
        name = None
    calls = raw.get("tool_calls")
    if calls is not None:
        expect(calls, list, f"{where}.tool_calls", "tool_calls")
        parts += [_tool_call(c, f"{where}.tool_calls[{j}]") for j, c in enumerate(calls)]
    fc = raw.get("function_call")
    if isinstance(fc, dict) and role == "assistant":
        parts.append(_tool_call({"id": "function_call", **fc}, f"{where}.function_call"))
    return Message(role, tuple(parts), name=name, source_path=where)


def _is_messages(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(m, dict) and "role" in m for m in value)
    )


def _decoded(value: Any) -> Any:
    """A messages value some writers store as JSON text: decoded when it is one."""
    if isinstance(value, str) and value.lstrip()[:1] in ("[", "{"):
        try:
            found = json.loads(value)
        except (ValueError, RecursionError):
            return value
        if _is_messages(found) or (
            isinstance(found, dict) and any(k in found for k in ("messages", "role", "choices"))
        ):
            return found
    return value


def input_messages(value: Any, where: str) -> list[Message]:
    """A model call's input: a message list, ``{messages, system}``, one message, a prompt."""
    value = _decoded(value)
    if value is None:
        return []
    if isinstance(value, str):
        return [Message("user", (Part.text(value),), source_path=where)] if value else []
    if isinstance(value, list):
        if len(value) == 1 and _is_messages(value[0]):  # LangChain batches: [[messages]]
            value, where = value[0], f"{where}[0]"
        if all(isinstance(m, dict) and "role" in m for m in value):
            return [chat_message(m, f"{where}[{i}]") for i, m in enumerate(value)]
        parts = _content(value, where)  # a list of content parts: one user message
        return [Message("user", tuple(parts), source_path=where)] if parts else []
    if isinstance(value, dict):
        if "messages" in value:
            items = expect(value["messages"], list, f"{where}.messages", "messages")
            out = [chat_message(m, f"{where}.messages[{i}]") for i, m in enumerate(items)]
            system = value.get("system")
            if system not in (None, "", []) and not (out and out[0].role == "system"):
                parts = _content(system, f"{where}.system")
                out.insert(0, Message("system", tuple(parts), source_path=f"{where}.system"))
            return out
        if "role" in value:
            return [chat_message(value, where)]
        return [Message("user", (unknown_part(value),), source_path=where)]
    return [Message("user", (Part.text(text_of(value)),), source_path=where)]


def output_messages(value: Any, where: str) -> list[Message]:
    """A model call's output: the assistant message (or its text, a message list, the raw
    ``choices`` response, or a list of content blocks)."""
    value = _decoded(value)
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [Message("assistant", (Part.text(value),), source_path=where)]
    if isinstance(value, list):
        if all(isinstance(m, dict) and "role" in m for m in value):
            return [chat_message(m, f"{where}[{i}]", "assistant") for i, m in enumerate(value)]
        parts = _content(value, where)
        return [Message("assistant", tuple(parts), source_path=where)] if parts else []
    if isinstance(value, dict):
        choices = value.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            message = choices[0].get("message")
            if isinstance(message, dict):
                return [chat_message(message, f"{where}.choices[0].message", "assistant")]
        if "role" in value or "content" in value or "tool_calls" in value:
            return [chat_message(value, where, "assistant")]
        return [Message("assistant", (unknown_part(value),), source_path=where)]
    return [Message("assistant", (Part.text(text_of(value)),), source_path=where)]


# --- Langfuse -------------------------------------------------------------------------------

#: observation types (``ObservationTypeDomain``)
TYPES = frozenset(
    {"GENERATION", "SPAN", "EVENT", "AGENT", "TOOL", "CHAIN", "RETRIEVER", "EVALUATOR",
     "EMBEDDING", "GUARDRAIL"}
)  # fmt: skip
#: cells of a CSV export that hold JSON text
_JSON_CELLS = frozenset(
    {"input", "output", "metadata", "usage", "usageDetails", "usage_details", "costDetails",
     "cost_details", "providedUsageDetails", "provided_usage_details", "providedCostDetails",
     "modelParameters", "model_parameters", "tags", "observations", "toolCalls",
     "toolDefinitions", "scores"}
)  # fmt: skip
_INPUT_DETAILS = ("cache_read_input_tokens", "cache_creation_input_tokens")
_CACHED = ("input_cached_tokens", "input_cache_read", "cache_read_input_tokens", "input_cached")


def _get(obj: dict[str, Any], *keys: str) -> Any:
    return next((obj[k] for k in keys if obj.get(k) is not None), None)


def is_observation(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("type"), str)
        and value["type"].upper() in TYPES
        and ("traceId" in value or "trace_id" in value or "parentObservationId" in value)
    )


def is_trace_row(value: Any) -> bool:
    """A Langfuse trace (a traces export row, or the API's trace detail)."""
    return (
        isinstance(value, dict)
        and "type" not in value
        and "traceId" not in value
        and "trace_id" not in value
        and ("id" in value)
        and any(k in value for k in ("sessionId", "session_id", "observations", "timestamp"))
    )


def langfuse_usage(obs: dict[str, Any]) -> tuple[Usage | None, bool]:
    """An observation's usage, and whether a recorded count was unusable.

    ``usageDetails`` keys are disjoint (Langfuse's ``total`` is the sum of the others, and its
    SDKs take cache and reasoning details out of ``input``/``output``), so the prompt is
    ``input`` plus the input details and the completion ``output`` plus the output details;
    when ``total`` equals ``input + output`` the details were already inside them.
    """
    details = _get(obs, "usageDetails", "usage_details")
    if not isinstance(details, dict) or not details:
        details = as_dict(obs.get("usage"))
    if not details:
        details = {
            "input": _get(obs, "inputUsage", "input_usage", "promptTokens", "prompt_tokens"),
            "output": _get(
                obs, "outputUsage", "output_usage", "completionTokens", "completion_tokens"
            ),
            "total": _get(obs, "totalUsage", "total_usage", "totalTokens", "total_tokens"),
        }
    bad = False

    def read(*keys: str) -> int | None:
        nonlocal bad
        value, wrong = count(_get(details, *keys))
        bad = bad or wrong
        return value

    inputs = read("input", "promptTokens", "prompt_tokens", "input_tokens")
    outputs = read("output", "completionTokens", "completion_tokens", "output_tokens")
    total = read("total", "totalTokens", "total_tokens")
    cached = read(*_CACHED)
    extra_in = extra_out = 0
    for k, v in details.items():
        is_detail = isinstance(k, str) and (
            k.startswith(("input_", "output_")) or k in _INPUT_DETAILS
        )
        if not is_detail or k in ("input_tokens", "output_tokens"):
            continue  # the main counts (read above), a ``unit``, costs
        n, wrong = count(v)
        bad = bad or wrong
        if n is None:
            continue
        if k.startswith("input_") or k in _INPUT_DETAILS:
            extra_in += n
        elif k.startswith("output_"):
            extra_out += n
    included = (
        total is not None and inputs is not None and outputs is not None
    ) and total == inputs + outputs
    prompt = inputs if inputs is None or included else inputs + extra_in
    completion = outputs if outputs is None or included else outputs + extra_out
    if not any((prompt, completion, cached)):  # Langfuse writes 0 where nothing was recorded
        return None, bad
    return Usage(prompt, cached, completion), bad


def _tool_call_id(obs: dict[str, Any]) -> str | None:
    meta = as_dict(obs.get("metadata"))
    attrs = as_dict(meta.get("attributes"))
    for source, keys in (
        (meta, ("tool_call_id", "toolCallId", "tool_call.id")),
        (attrs, ("gen_ai.tool.call.id", "tool_call.id")),
        (as_dict(obs.get("input")), ("tool_call_id", "toolCallId")),
    ):
        for k in keys:
            found = id_text(source.get(k))
            if found:
                return found
    return None


@importers.register("langfuse")
class LangfuseImporter(CallTreeImporter):
    """Langfuse observations (generations, tools, spans) grouped into sessions."""

    suffixes = (".json", ".jsonl", ".csv")
    key_prefix = "langfuse"

    def __init__(self) -> None:
        super().__init__()
        self._traces: dict[str, dict[str, str]] = {}

    # detection ------------------------------------------------------------------------------

    def sniff(self, path: Path, head: bytes) -> float:
        text = decode_bytes(head).lstrip("\ufeff \t\r\n")
        if text[:1] not in ("[", "{", ""):
            return _csv_score(text)
        return sample_of(path, head).mean(_record_score)

    # records ---------------------------------------------------------------------------------

    def read(self, path: Path) -> Iterator[Session | Reject]:
        self._traces = {}
        yield from super().read(path)

    def table(self, path: Path) -> Iterator[Record | Reject] | None:
        return csv_records(path, self.name) if _is_csv(path) else None

    def nodes(self, record: Record) -> list[tuple[Any, str]]:
        found: list[tuple[Any, str]] = []
        self._collect(record.value, "$", found)
        return found

    def _collect(self, value: Any, where: str, found: list[tuple[Any, str]]) -> None:
        """The observations of a value: itself, the elements of a list, or those a trace or
        an API page holds (``observations``, ``data``); a trace's session is noted."""
        if isinstance(value, list):
            for i, v in enumerate(value):
                self._collect(v, f"{where}[{i}]", found)
            return
        if not isinstance(value, dict) or is_observation(value):
            found.append((value, where))  # an observation (or something rejected as one)
            return
        trace = value.get("trace")
        if isinstance(trace, dict):
            self._trace_row(trace)
        elif is_trace_row(value):
            self._trace_row(value)
        holders = [k for k in ("observations", "data") if isinstance(value.get(k), list)]
        for key in holders:
            self._collect(value[key], f"{where}.{key}", found)
        if not holders and not isinstance(trace, dict) and not is_trace_row(value):
            found.append((value, where))  # not a trace: read as an observation (and rejected)

    def empty_reason(self, record: Record) -> str:
        return "trace_record"

    def _trace_row(self, row: dict[str, Any]) -> None:
        trace = id_text(row.get("id"))
        if trace is None:
            return
        info: dict[str, str] = {}
        for key, names in (
            ("session", ("sessionId", "session_id")),
            ("user_ids", ("userId", "user_id")),
            ("trace_names", ("name",)),
            ("environments", ("environment",)),
        ):
            found = id_text(_get(row, *names))
            if found:
                info[key] = found
        self._traces.setdefault(trace, {}).update(info)

    def session_of_trace(self, trace: str) -> str | None:
        return self._traces.get(trace, {}).get("session")

    def trace_meta(self, trace: str) -> dict[str, str]:
        return {k: v for k, v in self._traces.get(trace, {}).items() if k != "session"}

    def keys_of(self, item: Any) -> tuple[str | None, str | None]:
        obs = as_dict(item)
        return (
            id_text(_get(obs, "sessionId", "session_id")),
            id_text(_get(obs, "traceId", "trace_id")),
        )

    def node(self, record: Record, item: Any, where: str, position: int) -> Node:
        obs = expect(item, dict, where, "observation")
        kind = expect(obs.get("type"), str, f"{where}.type", "observation type").upper()
        session, trace = self.keys_of(obs)
        order, flags = start_order(_get(obs, "startTime", "start_time"), record, position)
        meta: dict[str, str] = {}
        for key, names in (
            ("user_ids", ("userId", "user_id")),
            ("trace_names", ("traceName", "trace_name")),
            ("environments", ("environment",)),
        ):
            found = id_text(_get(obs, *names))
            if found:
                meta[key] = found
        base = Node(record, where, order, kind, session, trace, meta=meta)
        base.ident = id_text(obs.get("id"))
        if kind == "GENERATION":
            return self._generation(base, obs, flags)
        if kind == "TOOL":
            ended, bad_end = timestamp_of(_get(obs, "endTime", "end_time"))
            return base.as_tool(
                ToolRun(
                    call_id=_tool_call_id(obs),
                    name=id_text(obs.get("name")),
                    text=text_of(obs.get("output")),
                    is_error=obs.get("level") == "ERROR",
                    ended=None if bad_end else ended,
                )
            )
        base.kind = "not_a_model_call"
        return base

    def _generation(self, base: Node, obs: dict[str, Any], flags: tuple[str, ...]) -> Node:
        where = base.where
        if obs.get("input") is None and obs.get("output") is None:
            base.kind = "no_messages"
            return base
        history = input_messages(obs.get("input"), f"{where}.input")
        output = output_messages(obs.get("output"), f"{where}.output")
        if not history and not output:
            base.kind = "no_messages"
            return base
        found: list[str] = list(flags)
        ended, bad_end = timestamp_of(_get(obs, "endTime", "end_time"))
        if bad_end and FLAG_TIMESTAMP_INVALID not in found:
            found.append(FLAG_TIMESTAMP_INVALID)
        usage, bad_usage = langfuse_usage(obs)
        if bad_usage:
            found.append(FLAG_USAGE_OUT_OF_RANGE)
        model = _get(obs, "providedModelName", "provided_model_name", "model")
        return base.as_call(
            history, output, usage, ended, model if isinstance(model, str) else None, found
        )


# --- CSV ------------------------------------------------------------------------------------


def _is_csv(path: Path) -> bool:
    if path.suffix.lower() == ".csv":
        return True
    try:
        with path.open("rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    text = decode_bytes(head).lstrip("\ufeff \t\r\n")
    return bool(text) and text[0] not in "[{" and _csv_score(text) > 0


def _csv_header(text: str) -> list[str]:
    try:
        return next(csv.reader(io.StringIO(text)), [])
    except csv.Error:
        return []


#: detection: observations with their timing or parent (alone, or a list under ``observations``
#: or ``data``)
OBSERVATION_SCORE = 0.95
#: a trace with its observations, or a bare list of observations
TRACE_SCORE = 0.9
#: an observation without timing or parent
BARE_OBSERVATION_SCORE = 0.8
#: a traces row (a trace without observations) naming its session
TRACE_ROW_SCORE = 0.5
#: a CSV export of observations with their start times
CSV_OBSERVATIONS_SCORE = 0.9
#: a CSV export of observations without start times
CSV_BARE_OBSERVATIONS_SCORE = 0.7
#: a CSV export of traces
CSV_TRACES_SCORE = 0.6


def _csv_score(text: str) -> float:
    columns = set(_csv_header(text))
    if {"id", "type"} <= columns and columns & {"traceId", "trace_id"}:
        return (
            CSV_OBSERVATIONS_SCORE
            if columns & {"startTime", "start_time"}
            else CSV_BARE_OBSERVATIONS_SCORE
        )
    if {"id", "timestamp"} <= columns and columns & {"sessionId", "session_id"}:
        return CSV_TRACES_SCORE
    return 0.0


def _cell(column: str, cell: str) -> Any:
    if cell == "":
        return None
    if column in _JSON_CELLS:
        start = cell.lstrip()[:1]
        if start in ("[", "{", '"'):
            try:
                found = json.loads(cell)
            except (ValueError, RecursionError):
                return cell
            if isinstance(found, list | dict | str):
                return found
        return cell
    if cell.isdigit() and column.lower().endswith(("usage", "tokens")):
        return int(cell)
    return cell


def csv_records(path: Path, fmt: str) -> Iterator[Record | Reject]:
    """The rows of a CSV export as records (the header names the fields; JSON cells decoded).
    A row is its exact lines of the file; a row with the wrong number of cells, or that the CSV
    reader refuses, is rejected."""
    limit = min(sys.maxsize, 2**31 - 1)
    if csv.field_size_limit() < limit:
        csv.field_size_limit(limit)
    try:
        f = path.open("rb")
    except OSError as e:
        yield Reject(str(path), "unreadable_file", str(e), b"", fmt)
        return
    with f:
        taken: list[bytes] = []
        first_line = [1]
        line_no = [0]

        def lines() -> Iterator[str]:
            decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
            for n, raw in enumerate(f):
                if n == 0 and raw.startswith(codecs.BOM_UTF8):
                    raw = raw[len(codecs.BOM_UTF8) :]
                taken.append(raw)
                line_no[0] += 1
                yield decoder.decode(raw)

        reader = csv.reader(lines())
        try:
            header = next(reader)
        except StopIteration:
            yield Reject(str(path), "empty_session", "the file is empty", b"", fmt)
            return
        except csv.Error as e:
            yield Reject(str(path), "malformed", f"CSV header: {e}", b"".join(taken), fmt, 0, 1)
            return
        taken.clear()
        first_line[0] = line_no[0] + 1
        index = 0
        while True:
            try:
                row = next(reader)
                problem = None
            except StopIteration:
                return
            except csv.Error as e:
                row, problem = None, f"not CSV: {e}"
            raw = b"".join(taken)
            taken.clear()
            line = first_line[0]
            first_line[0] = line_no[0] + 1
            if row is not None and not row:
                continue  # a blank line
            if row is not None and len(row) != len(header):
                problem = f"the row has {len(row)} cells, the header {len(header)}"
            if problem is not None:
                yield Reject(str(path), "malformed", problem, raw, fmt, index, line)
                index += 1
                continue
            assert row is not None
            value = {col: _cell(col, cell) for col, cell in zip(header, row, strict=True)}
            record = Record(index, value, raw, line)
            bad = inspect_value(value)
            if bad is not None:
                reason, json_path = bad
                yield Reject(
                    str(path),
                    reason,
                    "the row contains bytes that are not valid UTF-8"
                    if reason == "invalid_utf8"
                    else "the row nests JSON too deep",
                    raw,
                    fmt,
                    index,
                    line,
                    id_text(value.get("id")),
                    json_path,
                )
            else:
                yield record
            index += 1


# --- detection ----------------------------------------------------------------------------------


def _shape_score(record: Any) -> float:
    if is_observation(record):
        obs = record
        fields = ("startTime", "start_time", "parentObservationId", "parent_observation_id")
        return OBSERVATION_SCORE if any(f in obs for f in fields) else BARE_OBSERVATION_SCORE
    if isinstance(record, list):
        inner = [r for r in record[:16] if isinstance(r, dict)]
        return TRACE_SCORE if inner and all(is_observation(r) for r in inner) else 0.0
    if not isinstance(record, dict):
        return 0.0
    for key in ("observations", "data"):
        items = record.get(key)
        if isinstance(items, list) and items and is_observation(items[0]):
            return OBSERVATION_SCORE
    if isinstance(record.get("trace"), dict) and isinstance(record.get("observations"), list):
        return TRACE_SCORE
    if is_trace_row(record) and any(k in record for k in ("sessionId", "session_id")):
        return TRACE_ROW_SCORE
    return 0.0


def _record_score(record: Any) -> float:
    return capped(_shape_score(record), record)


__all__ = [
    "LangfuseImporter",
    "chat_message",
    "input_messages",
    "output_messages",
]
