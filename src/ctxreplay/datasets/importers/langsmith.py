"""LangSmith runs: JSON/JSONL dumps of the runs API and Parquet bulk exports.

A run (``langsmith.schemas.Run``; the "Run data format" of the LangSmith docs) is one span of a
trace: ``{id, trace_id, parent_run_id, dotted_order, run_type, name, start_time, end_time,
inputs, outputs, error, extra{metadata, invocation_params, runtime}, session_id, tags,
prompt_tokens, completion_tokens, total_tokens, prompt_token_details, ...}``. ``run_type`` is
``llm`` (a model call), ``chain``, ``tool``, ``retriever``, ``prompt``, ``parser`` or
``embedding``. ``session_id`` is the tracing *project*, not a conversation.

Files. JSONL with a run per line; a JSON array of runs, a single run, or ``{"runs": [...]}`` (the
runs query API); a run's ``child_runs`` (``list_runs(..., load_child_runs)``) are read as runs of
their own. Parquet (the bulk export: ``inputs``, ``outputs``, ``extra``, ``events``, ``tags``...
as JSON text, times as timestamps) is read row group by row group, so memory follows a row
group, not the file; a value that cannot be read rejects its row, whose raw bytes are then the
row as JSON (the readable values, the others as arrow prints them). Times are kept as ISO 8601
UTC, so a JSONL dump and a Parquet export of the same runs give the same corpus.

Model calls. An ``llm`` run's ``inputs.messages`` is LangChain's ``[[message, ...]]`` (one
prompt per run: ``on_chat_model_start``) or a flat OpenAI (``wrap_openai``) or Anthropic
(``wrap_anthropic``, with ``inputs.system``) message list; ``inputs.prompts`` / ``prompt`` are
completion prompts. A LangChain message is serialized as ``{lc: 1, type: constructor, id: [...,
"HumanMessage"], kwargs: {...}}`` (``dumpd``), ``{type: human, data: {...}}``
(``message_to_dict``), or ``{type: human, content, ...}`` (``model_dump``); ``AIMessage``
``tool_calls`` / ``invalid_tool_calls`` (or OpenAI ``additional_kwargs.tool_calls``) become tool
calls, a tool-use block of the same id in ``content`` counting once; ``ToolMessage`` becomes a
``tool`` result (``status: error`` marks it). ``outputs`` is an ``LLMResult``
(``generations[0][0].message`` or ``.text``), an OpenAI chat completion (``choices[0]``), a
message, ``{message}`` or ``{output}``; an errored run may have none. Usage: ``usage_metadata``
(of the outputs or of the message), ``llm_output.token_usage``, an OpenAI or Anthropic
``usage``, else the run's own ``prompt_tokens`` / ``completion_tokens`` /
``prompt_token_details.cache_read``; it goes, with the run's end time, onto the output message.

Sessions. Runs are grouped, per file, by the thread LangSmith's Threads view uses
(``extra.metadata`` ``thread_id``, ``session_id`` or ``conversation_id``, within its project; a
run without one takes the thread of another run of its trace), else by ``trace_id``. Calls are
ordered by ``dotted_order`` and assembled as every trace format's are (``calls``: the call
with the longest history and its output make the session; calls whose messages are not a prefix
of it make sessions of their own, all flagged ``conversation_split``; a rejected run flags its
conversation ``conversation_incomplete``; when a session fails validation every call of it is
rejected). A ``tool`` run whose output is a ``ToolMessage`` answering a call the session leaves
unanswered (the trace ended after the tool ran) is appended as that call's result
(``result_in_session``); other runs are counted ``not_a_model_call``. The request an ``llm`` run
records was sent to a provider, which refuses a tool result without its call, so a result whose
call is not in the session rejects it (``orphan_results = "reject"``). LangSmith records no
compaction; nothing is hidden (every message is visible).

Accounting unit: each run (a JSONL line, an array element, a ``child_runs`` or ``runs``
element, a Parquet row) ends as a session (the final call of a conversation), a reject, or a
skip: ``in_session`` (a call whose messages its session holds), ``result_in_session``,
``not_a_model_call`` (``no_session`` for an empty ``{"runs": []}``). A legacy ``function_call``
(no id) is named ``function_call_<n>`` by its place in the call's messages, so the call that
made it and later calls repeating it agree.

Sources: langsmith-sdk ``python/langsmith/schemas.py`` (``RunBase``, ``Run``) and
``wrappers/_openai.py``; the LangSmith docs "Run (span) data format", "Log custom LLM traces",
"Set up threads", "Bulk exporting trace data"; langchain ``langchain_core/tracers/langchain.py``
and ``tracers/core.py``.
"""

from __future__ import annotations

import copy
import json
import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any
from uuid import UUID

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..messages import Message, Part, Session, Usage, as_dict
from ..rejects import RecordError, Reject, inspect_value
from ..validate import FLAG_TIMESTAMP_INVALID, FLAG_USAGE_OUT_OF_RANGE
from .anthropic_messages import _block_parts, _message, _system, anthropic_usage
from .base import Importer, expect, importers, require
from .calls import (
    Call,
    Rejects,
    Unit,
    build_session,
    call_metadata,
    chain_messages,
    chains,
    numbered,
)
from .openai_chat import ANTHROPIC_BLOCKS, file_digest, messages_from_openai
from .parts import content_parts, unknown_part
from .records import Record, loads, sub_record
from .sniffing import PARQUET_MAGIC, capped, content_types, is_parquet, sample_of
from .times import InvalidTime, iso_of_nanos, nanos_of

RUN_TYPES = frozenset({"llm", "chain", "tool", "retriever", "prompt", "parser", "embedding"})
#: run types of a model call (``chat_model`` is what LangChain's streaming events call it)
MODEL_RUNS = frozenset({"llm", "chat_model"})
#: ``extra.metadata`` keys LangSmith's Threads view groups traces by
THREAD_KEYS = ("thread_id", "session_id", "conversation_id")
#: run fields holding JSON values, which a Parquet export stores as JSON text
JSON_FIELDS = (
    "inputs", "outputs", "extra", "events", "tags", "serialized", "feedback_stats",
    "parent_run_ids", "child_run_ids", "direct_child_run_ids", "prompt_token_details",
    "completion_token_details", "inputs_s3_urls", "outputs_s3_urls", "attachments",
)  # fmt: skip

#: LangChain message classes (the last element of a serialized ``id``) and ``type`` values
_KINDS = {
    "HumanMessage": "human", "HumanMessageChunk": "human", "AIMessage": "ai",
    "AIMessageChunk": "ai", "SystemMessage": "system", "SystemMessageChunk": "system",
    "ToolMessage": "tool", "ToolMessageChunk": "tool", "FunctionMessage": "function",
    "FunctionMessageChunk": "function", "ChatMessage": "chat", "ChatMessageChunk": "chat",
}  # fmt: skip
_TYPE_ROLES = {
    "human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "tool",
    "developer": "developer", "user": "user", "assistant": "assistant",
}  # fmt: skip
_OPENAI_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


@dataclass
class RunCall(Call):
    """A model call read from an ``llm`` run, with what LangSmith says about it."""

    project: str | None = None
    tags: tuple[str, ...] = ()
    errored: bool = False
    runtime: dict[str, Any] = field(default_factory=dict)


@dataclass
class ToolResult:
    """A ``tool`` run whose output is the result of one tool call (a ``ToolMessage``)."""

    record: Record
    where: str
    order: tuple[Any, ...]
    conversation: str | None
    trace: str | None
    project: str | None
    call_id: str
    message: Message


# --- values ---------------------------------------------------------------------------------


def _id(value: Any) -> str | None:
    """An id field as text (UUIDs are text in JSON, ``UUID`` objects from Parquet)."""
    if isinstance(value, str | UUID) and str(value) != "":
        return str(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _time(value: Any) -> tuple[str | None, bool]:
    """A recorded time as ISO 8601 UTC text (naive times are UTC, as LangSmith writes them), and
    whether it was recorded but unusable (text is then kept as written, a number dropped)."""
    if value is None:
        return None, False
    try:
        nanos = nanos_of(value)
    except InvalidTime:
        text = isinstance(value, str) and not value.strip().isdigit()
        return (value if text else None), True
    return (iso_of_nanos(nanos) if nanos is not None else None), False


def _decoded(run: dict[str, Any], where: str) -> dict[str, Any]:
    """The run with its JSON-text fields (a Parquet export's) parsed."""
    out = run
    for key in JSON_FIELDS:
        value = run.get(key)
        if not isinstance(value, str):
            continue
        text = value.strip()
        if not (text.startswith(("{", "[")) or text == "null"):
            continue
        try:
            parsed = loads(text)
        except ValueError as e:
            raise RecordError("invalid_json", f"{key} is not JSON: {e}", f"{where}.{key}") from None
        problem = inspect_value(parsed, root=f"{where}.{key}")
        if problem is not None:
            raise RecordError(problem[0], f"{key} cannot be read", problem[1])
        if out is run:
            out = dict(run)
        out[key] = parsed
    return out


def _thread(metadata: dict[str, Any]) -> str | None:
    for key in THREAD_KEYS:
        found = _id(metadata.get(key))
        if found is not None:
            return found
    return None


def _identity(run: Any) -> tuple[str | None, str | None, str | None]:
    """A run's (thread, trace, project), read without failing: what a reject of it names."""
    if not isinstance(run, dict):
        return None, None, None
    extra = run.get("extra")
    if isinstance(extra, str):
        try:
            extra = json.loads(extra)
        except (ValueError, RecursionError):
            extra = None
    thread = _thread(as_dict(as_dict(extra).get("metadata")))
    trace = _id(run.get("trace_id")) or _id(run.get("id"))
    return thread, trace, _id(run.get("session_id"))


def _group_key(thread: str | None, trace: str | None, project: str | None) -> str | None:
    if thread is not None:
        return f"thread:{project}:{thread}" if project else f"thread:{thread}"
    return f"trace:{trace}" if trace else None


# --- LangChain, OpenAI and Anthropic messages -----------------------------------------------


def _kind_of(raw: dict[str, Any]) -> tuple[str | None, dict[str, Any], str]:
    """A LangChain message's kind (``human``, ``ai``...), its fields and where they sit."""
    if raw.get("lc") is not None and "kwargs" in raw:  # ``dumpd``: a constructor
        ids = raw.get("id")
        cls = ids[-1] if isinstance(ids, list) and ids and isinstance(ids[-1], str) else None
        if raw.get("type") != "constructor":
            raise RecordError(
                "malformed", f"a serialized {cls or 'object'} that is not a constructor"
            )
        kwargs = raw["kwargs"]
        return _KINDS.get(cls or "") or as_dict(kwargs).get("type"), kwargs, ".kwargs"
    if isinstance(raw.get("data"), dict) and isinstance(raw.get("type"), str):  # message_to_dict
        return raw["type"], raw["data"], ".data"
    return raw.get("type"), raw, ""


def is_langchain_message(raw: Any) -> bool:
    """A LangChain message in one of its serialized shapes (not a ``{role, content}`` dict)."""
    if not isinstance(raw, dict):
        return False
    if raw.get("lc") is not None and "kwargs" in raw:
        return True
    kind = raw.get("type")
    return isinstance(kind, str) and kind in _TYPE_ROLES and ("data" in raw or "content" in raw)


def _content(content: Any, where: str) -> list[Part]:
    """A LangChain ``content``: text, or blocks in OpenAI, Anthropic or LangChain's own shape."""
    if content is None or isinstance(content, str):
        return content_parts(content, where)
    expect(content, list, where, "content")
    parts: list[Part] = []
    for i, block in enumerate(content):
        at = f"{where}[{i}]"
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "tool_call":  # LangChain's standard block
            parts.append(_call(block, at))
        elif kind in ANTHROPIC_BLOCKS and (kind != "image" or "source" in block):
            parts.extend(_block_parts(block, at))
        elif kind == "reasoning" and isinstance(block.get("reasoning"), str):
            parts.append(Part("reasoning", content=block["reasoning"]))
        else:
            parts.extend(content_parts([block], where))
    return parts


def _call(raw: Any, where: str) -> Part:
    """A LangChain tool call ``{name, args, id}`` (``args`` text for an invalid tool call)."""
    expect(raw, dict, where, "tool call")
    call_id = expect(require(raw, "id", where), str, f"{where}.id", "tool call id")
    name = expect(require(raw, "name", where), str, f"{where}.name", "tool name")
    args = raw.get("args")
    args = {} if args is None else expect(args, (dict, str), f"{where}.args", "args")
    return Part.call(call_id, name, args)


def _openai_calls(calls: Any, where: str) -> list[Part]:
    """``additional_kwargs.tool_calls`` in OpenAI's shape (LangChain before ``tool_calls``)."""
    expect(calls, list, where, "tool_calls")
    out = []
    for j, call in enumerate(calls):
        at = f"{where}[{j}]"
        expect(call, dict, at, "tool call")
        fn = expect(require(call, "function", at), dict, f"{at}.function", "function")
        name = expect(require(fn, "name", f"{at}.function"), str, f"{at}.function.name", "name")
        call_id = expect(require(call, "id", at), str, f"{at}.id", "tool call id")
        args = fn.get("arguments") or "{}"
        out.append(Part.call(call_id, name, args))
    return out


def _text(parts: list[Part]) -> str:
    return "\n".join(p.content or "" for p in parts if p.type == "text")


def langchain_message(raw: Any, where: str, state: dict[str, Any]) -> Message:
    """One LangChain message, in any of its serialized shapes, as a canonical message.

    A legacy ``function_call`` has no id: it is named by its message's ``position`` in the
    call's messages (``function_call_<n>``, as ``openai_chat`` names them), the same in every
    call that repeats it; ``state`` carries it to the ``FunctionMessage`` answering it."""
    expect(raw, dict, where, "message")
    kind, fields, inner = _kind_of(raw)
    base = f"{where}{inner}"
    expect(fields, dict, base, "message fields")
    kind = _KINDS.get(kind, kind) if isinstance(kind, str) else kind
    if kind == "chat":
        said = expect(require(fields, "role", base), str, f"{base}.role", "role")
        kind = {"human": "user", "ai": "assistant"}.get(said, said)
    role = _TYPE_ROLES.get(kind) if isinstance(kind, str) else None
    if role is None:
        raise RecordError(
            "unknown_role", f"message type {kind!r} is not a LangChain message", f"{base}.type"
        )
    extra = as_dict(fields.get("additional_kwargs"))
    if role == "system" and extra.get("__openai_role__") == "developer":
        role = "developer"
    parts = _content(fields.get("content"), f"{base}.content")
    name = fields.get("name") if isinstance(fields.get("name"), str) else None
    usage = None
    is_error = False
    if role == "assistant":
        reasoning = extra.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning:
            parts.insert(0, Part("reasoning", content=reasoning))
        seen = {p.id for p in parts if p.type == "tool_call"}
        calls = fields.get("tool_calls")
        found: list[Part] = []
        if calls:
            expect(calls, list, f"{base}.tool_calls", "tool_calls")
            found = [_call(c, f"{base}.tool_calls[{j}]") for j, c in enumerate(calls)]
        if not found and extra.get("tool_calls"):
            found = _openai_calls(extra["tool_calls"], f"{base}.additional_kwargs.tool_calls")
        invalid = fields.get("invalid_tool_calls")
        for j, c in enumerate(invalid if isinstance(invalid, list) else []):
            at = f"{base}.invalid_tool_calls[{j}]"
            if isinstance(c, dict) and isinstance(c.get("id"), str):
                found.append(_call(c, at))
            else:
                found.append(unknown_part(c))
        parts.extend(p for p in found if p.type != "tool_call" or p.id not in seen)
        fc = extra.get("function_call")
        if isinstance(fc, dict):
            state["legacy"] = f"function_call_{state.get('position', 0)}"
            args = fc.get("arguments") or "{}"
            parts.append(Part.call(state["legacy"], str(fc.get("name", "")), args))
        usage = _usage_metadata(fields.get("usage_metadata"))
    elif role == "tool":
        if kind == "function":
            call_id = state.get("legacy")
        else:
            call_id = expect(
                require(fields, "tool_call_id", base), str, f"{base}.tool_call_id", "tool_call_id"
            )
        media = [p for p in parts if p.type not in ("text", "reasoning")]
        parts = [Part.response(call_id, _text(parts), name), *media]
        is_error = fields.get("status") == "error"
        name = None
    return Message(role, tuple(parts), name=name, is_error=is_error, usage=usage, source_path=where)


def _anthropic_shaped(items: list[Any]) -> bool:
    """Role messages in Anthropic's shape (content blocks only its API has, no OpenAI fields)."""
    if not all(isinstance(m, dict) for m in items):
        return False
    if any(m.get("role") not in ("user", "assistant", "system") for m in items):
        return False
    if any("tool_calls" in m or "tool_call_id" in m for m in items):
        return False
    return any(content_types(m) & ANTHROPIC_BLOCKS for m in items)


def chat_messages(items: Any, where: str) -> list[Message]:
    """A message list of any shape LangSmith records: LangChain, OpenAI or Anthropic."""
    expect(items, list, where, "messages")
    if items and all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in items):
        if _anthropic_shaped(items):
            return [_message(m, f"{where}[{i}]") for i, m in enumerate(items)]
        if all(m["role"] in _OPENAI_ROLES and not is_langchain_message(m) for m in items):
            return messages_from_openai(items, where)
    state: dict[str, Any] = {}
    out = []
    for i, m in enumerate(items):
        state["position"] = i
        out.append(any_message(m, f"{where}[{i}]", state))
    return out


def any_message(raw: Any, where: str, state: dict[str, Any] | None = None) -> Message:
    """One message in any of the shapes (a LangChain one, or a ``{role, content}`` dict);
    ``state["position"]``: where it sits in its call's messages."""
    state = {} if state is None else state
    expect(raw, dict, where, "message")
    if is_langchain_message(raw) or not isinstance(raw.get("role"), str):
        return langchain_message(raw, where, state)
    role = raw["role"]
    if role in ("human", "ai"):
        return langchain_message({**raw, "type": role}, where, state)
    if _anthropic_shaped([raw]) or (raw.get("type") == "message" and role == "assistant"):
        return _message(raw, where)
    (message,) = messages_from_openai([raw], where)
    legacy = f"function_call_{state.get('position', 0)}"
    parts = tuple(
        replace(p, id=legacy) if p.type == "tool_call" and p.id == "function_call_0" else p
        for p in message.parts
    )
    return replace(message, parts=parts, source_path=where)


# --- inputs and outputs of a model call -------------------------------------------------------


def call_inputs(inputs: Any, where: str) -> list[Message]:
    """The messages an ``llm`` run sent."""
    if inputs is None:
        return []
    expect(inputs, dict, where, "inputs")
    system = _system(inputs.get("system"), f"{where}.system") if "system" in inputs else []
    if "messages" in inputs:
        items = inputs["messages"]
        at = f"{where}.messages"
        if isinstance(items, list) and items and all(isinstance(b, list) for b in items):
            if len(items) > 1:  # LangChain traces one run per prompt
                raise RecordError(
                    "malformed", f"an llm run holding {len(items)} prompts; a run is one call", at
                )
            items, at = items[0], f"{at}[0]"
        return [*system, *chat_messages(items, at)]
    for key in ("prompts", "prompt"):
        if key not in inputs:
            continue
        prompts = inputs[key]
        if isinstance(prompts, str):
            prompts = [prompts]
        expect(prompts, list, f"{where}.{key}", key)
        if len(prompts) > 1:
            raise RecordError(
                "malformed", f"an llm run holding {len(prompts)} prompts", f"{where}.{key}"
            )
        text = expect(prompts[0], str, f"{where}.{key}[0]", "prompt") if prompts else ""
        user = Message("user", (Part.text(text),) if text else (), source_path=f"{where}.{key}")
        return [*system, user]
    raise RecordError(
        "malformed", "the inputs of an llm run hold no messages, prompts or prompt", where
    )


def call_outputs(outputs: Any, where: str, position: int = 0, depth: int = 0) -> list[Message]:
    """The message an ``llm`` run returned (the first generation or choice), which follows the
    ``position`` messages it was sent."""
    state: dict[str, Any] = {"position": position}
    if outputs is None or outputs == {}:
        return []
    if isinstance(outputs, str):
        return [Message("assistant", (Part.text(outputs),), source_path=where)]
    if isinstance(outputs, list) and len(outputs) == 2 and all(isinstance(v, str) for v in outputs):
        return [any_message({"role": outputs[0], "content": outputs[1]}, where, state)]
    expect(outputs, dict, where, "outputs")
    if "generations" in outputs:
        generations = expect(outputs["generations"], list, f"{where}.generations", "generations")
        if not generations:
            return []
        first = generations[0]
        at = f"{where}.generations[0]"
        if isinstance(first, list):
            if not first:
                return []
            first, at = first[0], f"{at}[0]"
        expect(first, dict, at, "generation")
        if first.get("message") is not None:
            return [any_message(first["message"], f"{at}.message", state)]
        text = expect(first.get("text", ""), str, f"{at}.text", "text")
        return [Message("assistant", (Part.text(text),), source_path=at)] if text else []
    if "choices" in outputs:
        choices = expect(outputs["choices"], list, f"{where}.choices", "choices")
        if not choices:
            return []
        choice = expect(choices[0], dict, f"{where}.choices[0]", "choice")
        if "message" in choice:
            return [any_message(choice["message"], f"{where}.choices[0].message", state)]
        text = expect(choice.get("text", ""), str, f"{where}.choices[0].text", "text")
        at = f"{where}.choices[0]"
        return [Message("assistant", (Part.text(text),), source_path=at)] if text else []
    if isinstance(outputs.get("message"), dict):
        return [any_message(outputs["message"], f"{where}.message", state)]
    if ("role" in outputs and "content" in outputs) or is_langchain_message(outputs):
        return [any_message(outputs, where, state)]
    if "output" in outputs and depth == 0:
        return call_outputs(outputs["output"], f"{where}.output", position, 1)
    raise RecordError(
        "malformed", "the outputs of an llm run hold no message (generations, choices)", where
    )


def _usage_metadata(raw: Any) -> Usage | None:
    """LangChain ``usage_metadata`` (``input_tokens`` includes cache reads)."""
    if not isinstance(raw, dict) or ("input_tokens" not in raw and "output_tokens" not in raw):
        return None
    details = as_dict(raw.get("input_token_details"))
    return Usage(raw.get("input_tokens"), details.get("cache_read"), raw.get("output_tokens"))


def _openai_usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    if "cache_read_input_tokens" in raw or "cache_creation_input_tokens" in raw:
        return anthropic_usage(raw)
    if "prompt_tokens" not in raw and "completion_tokens" not in raw:
        return anthropic_usage(raw) if "input_tokens" in raw else None
    details = as_dict(raw.get("prompt_tokens_details"))
    cached = details.get("cached_tokens")
    return Usage(raw.get("prompt_tokens"), cached, raw.get("completion_tokens"))


def call_usage(run: dict[str, Any], output: list[Message]) -> tuple[Usage | None, bool]:
    """The usage the provider reported, else LangSmith's counts of the run; and whether a
    recorded count is unusable (not an integer)."""
    outputs = as_dict(run.get("outputs"))
    llm_output = as_dict(outputs.get("llm_output"))
    found = (
        _usage_metadata(outputs.get("usage_metadata"))
        or (output[0].usage if output else None)
        or _openai_usage(llm_output.get("token_usage") or llm_output.get("usage"))
        or _openai_usage(outputs.get("usage"))
    )
    # the run's own counts; 0 and 0 is what LangSmith shows for a call it did not count
    counts = (run.get("prompt_tokens"), run.get("completion_tokens"))
    if found is None and any(v is not None and v != 0 for v in counts):
        cached = as_dict(run.get("prompt_token_details")).get("cache_read")
        found = Usage(run.get("prompt_tokens"), cached, run.get("completion_tokens"))
    if found is None:
        return None, False
    values = [found.prompt_tokens, found.cached_tokens, found.completion_tokens]
    ok = [v if isinstance(v, int) and not isinstance(v, bool) else None for v in values]
    bad = any(v is not None and k is None for v, k in zip(values, ok, strict=True))
    return (Usage(*ok) if any(v is not None for v in ok) else None), bad


def _model(run: dict[str, Any], metadata: dict[str, Any]) -> str | None:
    extra = as_dict(run.get("extra"))
    params = as_dict(extra.get("invocation_params"))
    inputs, outputs = as_dict(run.get("inputs")), as_dict(run.get("outputs"))
    for value in (
        metadata.get("ls_model_name"),
        params.get("model"),
        params.get("model_name"),
        inputs.get("model"),
        outputs.get("model"),
        as_dict(outputs.get("llm_output")).get("model_name"),
    ):
        if isinstance(value, str) and value:
            return value
    return None


def _dotted(run: dict[str, Any], run_id: str | None, where: str) -> str | None:
    """The run's ``dotted_order``; for a run without one, the root order LangChain would give
    it (``%Y%m%dT%H%M%S%fZ`` + id)."""
    dotted = run.get("dotted_order")
    if dotted is not None and dotted != "":
        return expect(dotted, str, f"{where}.dotted_order", "dotted_order")
    try:
        nanos = nanos_of(run.get("start_time"))
    except InvalidTime:
        nanos = None
    if nanos is None:
        return None
    moment = datetime.fromtimestamp(nanos // 1_000_000_000, UTC)
    moment = moment.replace(microsecond=nanos % 1_000_000_000 // 1000)
    return moment.strftime("%Y%m%dT%H%M%S%fZ") + (run_id or "")


# --- Parquet -----------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """A value read from Parquet as a JSON value (times as ISO text, bytes as text)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        if all(isinstance(v, tuple) and len(v) == 2 for v in value) and value:  # a map column
            return {str(k): _plain(v) for k, v in value}
        return [_plain(v) for v in value]
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, date | time):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, Decimal):
        number = float(value)
        return number if math.isfinite(number) else str(value)
    return value


class _ParquetRuns:
    """A Parquet file's rows, a row group at a time, each converted to a JSON value."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file = pq.ParquetFile(path)
        self._cached: tuple[int, list[dict[str, Any]]] | None = None

    def groups(self) -> int:
        return int(self.file.num_row_groups)

    def group(self, g: int) -> tuple[list[dict[str, Any]], list[dict[str, tuple[str, str]]]]:
        """The rows of row group ``g`` and, for each, the columns whose value could not be read,
        with the reject reason and why; such a value is shown as arrow prints it."""
        n = self.file.metadata.row_group(g).num_rows
        rows: list[dict[str, Any]] = [{} for _ in range(n)]
        broken: list[dict[str, tuple[str, str]]] = [{} for _ in range(n)]
        columns: list[tuple[str, Any, str | None]] = []
        try:
            table = self.file.read_row_group(g)
            columns = [(name, table.column(name), None) for name in table.column_names]
        except Exception:  # read what can be read, column by column
            for name in self.file.schema_arrow.names:
                try:
                    column = self.file.read_row_group(g, columns=[name]).column(0)
                    columns.append((name, column, None))
                except Exception as e:
                    columns.append((name, None, f"{type(e).__name__}: {e}"))
        for name, column, error in columns:
            if column is None:
                for r in range(n):
                    rows[r][name] = None
                    broken[r][name] = ("unreadable_file", error or "unreadable")
                continue
            try:
                values = _times(column) if pa.types.is_timestamp(column.type) else None
                values = column.to_pylist() if values is None else values
            except Exception:  # a value of the column cannot be converted: find which
                values = None
            for r in range(n):
                try:
                    value = values[r] if values is not None else column[r].as_py()
                    rows[r][name] = _plain(value)
                except Exception as e:
                    broken[r][name] = (_value_reason(e), f"{type(e).__name__}: {e}")
                    try:
                        rows[r][name] = str(column[r])
                    except Exception:
                        rows[r][name] = None
        self._cached = (g, rows)
        return rows, broken

    def row_json(self, g: int, r: int) -> bytes:
        """The row as JSON: the raw bytes of its reject."""
        if self._cached is None or self._cached[0] != g:
            self.group(g)
        assert self._cached is not None
        return json.dumps(self._cached[1][r], ensure_ascii=False, default=str).encode(
            "utf-8", "surrogateescape"
        )


def _value_reason(e: Exception) -> str:
    """The reject reason of a Parquet value that cannot be read."""
    if isinstance(e, UnicodeError):
        return "invalid_utf8"
    if isinstance(e, OverflowError | ValueError | InvalidTime):
        return "out_of_range"
    return "malformed"


def _times(column: Any) -> list[str | None]:
    """A timestamp column as ISO 8601 UTC text, exactly (no conversion to ``datetime``, which
    drops nanoseconds and refuses dates Python cannot hold)."""
    scale = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}[column.type.unit]
    out: list[str | None] = []
    for v in pc.cast(column, pa.int64()).to_pylist():
        out.append(None if v is None else iso_of_nanos(v * scale))
    return out


class _RowRecord(Record):
    """A Parquet row; its raw bytes (the row as JSON) are made again when a reject needs them."""

    __slots__ = ("_source", "_spot")

    def __init__(self, index: int, value: Any, source: _ParquetRuns, spot: tuple[int, int]) -> None:
        super().__init__(index, value)
        self._source, self._spot = source, spot

    @property
    def raw(self) -> bytes:
        try:
            return self._source.row_json(*self._spot)
        except Exception:
            return b""

    @raw.setter
    def raw(self, raw: bytes) -> None:  # pragma: no cover - rows are never given bytes
        raise AttributeError("a Parquet row's bytes are its JSON")


# --- detection ----------------------------------------------------------------------------------


def _is_runs_document(value: Any) -> bool:
    """``{"runs": [...]}``, as the runs query API answers."""
    return (
        isinstance(value, dict) and "run_type" not in value and isinstance(value.get("runs"), list)
    )


#: detection: a run (or runs' Parquet columns) with its trace placement (``dotted_order``,
#: ``trace_id``)
RUN_SCORE = 0.95
#: a run with its ``start_time`` but no trace placement
LOOSE_RUN_SCORE = 0.8


def _run_score(record: Any) -> float:
    if _is_runs_document(record):
        runs = record["runs"][:8]
        return max((_run_score(r) for r in runs), default=0.0)
    if not isinstance(record, dict) or record.get("run_type") not in RUN_TYPES | MODEL_RUNS:
        return 0.0
    if not ("inputs" in record or "outputs" in record):
        return 0.0
    if "dotted_order" in record or "trace_id" in record:
        return capped(RUN_SCORE, record)
    return capped(LOOSE_RUN_SCORE, record) if "start_time" in record else 0.0


def _parquet_score(path: Path) -> float:
    try:
        names = set(pq.read_schema(path).names)
    except Exception:
        return 0.0
    if "run_type" not in names or not names & {"inputs", "outputs"}:
        return 0.0
    return RUN_SCORE if names & {"dotted_order", "trace_id"} else LOOSE_RUN_SCORE


# --- the importer -------------------------------------------------------------------------------


@importers.register("langsmith")
class LangSmithImporter(Importer):
    """LangSmith run exports: conversations assembled from model calls (``calls``), with what
    LangSmith adds: threads, tool runs, projects."""

    suffixes = (".jsonl", ".json", ".parquet")

    def __init__(self) -> None:
        #: record indexes of the last file read that made no message of a session
        self.ignored_records: list[int] = []

    def sniff(self, path: Path, head: bytes) -> float:
        if head.startswith(PARQUET_MAGIC):
            return _parquet_score(path)
        return sample_of(path, head).mean(_run_score)

    def read(self, path: Path) -> Iterator[Session | Reject]:
        digest = file_digest(path)
        self.ignored_records = []
        self._ignored: set[int] = set()
        #: each run has its own record: its bytes go with every reject of it
        self._rejects = Rejects(self, path, shared=False)
        calls: list[RunCall] = []
        results: list[ToolResult] = []
        by_trace: dict[str, tuple[str, str | None]] = {}  # trace -> (thread, project)
        troubled: list[tuple[str | None, str | None, str | None]] = []
        units = self._parquet_units(path) if is_parquet(path) else self._json_units(path)
        for item in units:
            if isinstance(item, Reject):
                yield item
                continue
            record, run, where, position = item
            thread, trace, project = _identity(run)
            if thread is not None and trace is not None:
                by_trace.setdefault(trace, (thread, project))
            try:
                found = self._unit(record, run, where, position)
            except Exception as e:
                out = self._rejects.error(record, e, where)
                out.session_id = thread or trace
                troubled.append((thread, trace, project))
                yield out
                continue
            if isinstance(found, RunCall):
                calls.append(found)
            elif isinstance(found, ToolResult):
                results.append(found)
            else:
                self._not_a_call(record)
        incomplete: Counter[str] = Counter()
        for thread, trace, project in troubled:  # the conversation each rejected run was of
            if thread is None and trace is not None and trace in by_trace:
                thread, project = by_trace[trace]
            incomplete[_group_key(thread, trace, project) or ""] += 1
        groups: dict[str, list[Call]] = {}
        pools: dict[str, list[ToolResult]] = {}
        for c in calls:
            key, conversation = self._key(path, c, by_trace, digest)
            groups.setdefault(key, []).append(replace(c, conversation=conversation))
        for r in results:
            key, _ = self._key(path, r, by_trace, digest)
            pools.setdefault(key, []).append(r)
        for key, group in groups.items():
            pool = sorted(pools.pop(key, []), key=lambda r: r.order)
            for part_key, split, (final, members) in numbered(key, chains(group)):
                used: list[ToolResult] = []
                args = (path, part_key, final, members, split, incomplete.get(key, 0), pool, used)
                items = self._rejects.chain(part_key, final, members, partial(self._session, *args))
                yield from items
                pool = [r for r in pool if all(r is not u for u in used)]
                why = items[0]
                if not isinstance(why, Reject):
                    self.tally.skip("result_in_session", len(used))
                    continue
                ran = [Unit(r.record, r.where, r.conversation or r.trace) for r in used]
                yield from self._rejects.along(why, part_key, "conversation", ran)
            for r in pool:
                self._not_a_call(r.record)
        for pool in pools.values():
            for r in pool:
                self._not_a_call(r.record)

    def _not_a_call(self, record: Record, reason: str = "not_a_model_call") -> None:
        """Count a run that makes no message of a session (its record is then ignored)."""
        self.tally.skip(reason)
        if record.index not in self._ignored:
            self._ignored.add(record.index)
            self.ignored_records.append(record.index)

    @staticmethod
    def _key(
        path: Path,
        c: RunCall | ToolResult,
        by_trace: dict[str, tuple[str, str | None]],
        digest: str,
    ) -> tuple[str, str]:
        """The conversation a call or result belongs to: its key and the source's id of it."""
        thread, project = c.conversation, c.project
        if thread is None and c.trace is not None and c.trace in by_trace:
            thread, project = by_trace[c.trace]
        key = _group_key(thread, c.trace, project)
        if key is None:  # nothing ties it to other runs: its own session, local to the file
            return f"run:{digest}:{c.record.index}:{c.where}", f"{path.stem}:{c.record.index}"
        return key, thread or c.trace or ""

    # --- reading runs ---------------------------------------------------------------------

    def _json_units(self, path: Path) -> Iterator[Reject | tuple[Record, Any, str, int]]:
        """Runs of a JSON or JSONL file: each record, with its ``child_runs`` (or a ``runs``
        document's elements) as runs of their own."""
        for record in self.records(path):
            if isinstance(record, Reject):
                yield record
                continue
            value = record.value
            if _is_runs_document(value):
                tops = [(v, f"$.runs[{i}]") for i, v in enumerate(value["runs"])]
                if not tops:
                    self._not_a_call(record, "no_session")
                    continue
            else:
                tops = [(value, "$")]
            flat: list[tuple[Any, str]] = []
            for run, where in tops:
                stack = [(run, where)]
                while stack:
                    node, at = stack.pop()
                    flat.append((node, at))
                    children = node.get("child_runs") if isinstance(node, dict) else None
                    if isinstance(children, list):
                        nested = [(c, f"{at}.child_runs[{i}]") for i, c in enumerate(children)]
                        stack.extend(reversed(nested))
            self.tally.seen += len(flat) - 1  # the record stands for its runs
            whole = len(flat) == 1 and flat[0][1] == "$"
            for position, (run, where) in enumerate(flat):
                if whole:
                    unit = copy.copy(record)
                    unit.value = None  # the run's messages are kept, not its JSON
                else:
                    inner = run
                    if isinstance(run, dict):
                        inner = {k: v for k, v in run.items() if k != "child_runs"}
                    unit = sub_record(record.index, inner, record.line)
                    unit.value = None
                yield unit, run, where, position

    def _parquet_units(self, path: Path) -> Iterator[Reject | tuple[Record, Any, str, int]]:
        """Rows of a Parquet file, a row group at a time; a row holding a value that cannot be
        read is rejected with the row as JSON."""
        try:
            source = _ParquetRuns(path)
            groups = source.groups()
        except Exception as e:
            self.tally.seen += 1
            try:
                data = path.read_bytes()
            except OSError:
                data = b""
            detail = f"not a readable Parquet file: {type(e).__name__}: {e}"
            yield Reject(str(path), "unreadable_file", detail[:2000], data, self.name, 0)
            return
        index = 0
        for g in range(groups):
            try:
                rows, broken = source.group(g)
            except Exception as e:  # the row group's size cannot even be read
                self.tally.seen += 1
                detail = f"row group {g} cannot be read: {type(e).__name__}: {e}"
                yield Reject(str(path), "unreadable_file", detail[:2000], b"", self.name, index)
                index += 1
                continue
            for r, (row, bad) in enumerate(zip(rows, broken, strict=True)):
                self.tally.seen += 1
                record = _RowRecord(index, row, source, (g, r))
                index += 1
                problem = None if bad else inspect_value(row)
                if bad or problem is not None:
                    if bad:
                        name, (reason, why) = next(iter(bad.items()))
                        at = f"$.{name}"
                        detail = f"row {r} of row group {g}: column {name!r} cannot be read ({why})"
                    else:
                        assert problem is not None
                        reason, at = problem
                        detail = f"row {r} of row group {g} cannot be read ({reason})"
                    out = self.reject(path, record, reason, detail, at)
                    thread, trace, _ = _identity(row)
                    out.session_id = thread or trace
                    yield out
                    continue
                unit = _RowRecord(record.index, None, source, (g, r))
                yield unit, row, "$", 0
            del rows, broken

    def _unit(
        self, record: Record, run: Any, where: str, position: int
    ) -> RunCall | ToolResult | None:
        """What one run is: a model call, a tool result, or neither (None)."""
        expect(run, dict, where, "run")
        if "child_runs" in run and run["child_runs"] is not None:
            expect(run["child_runs"], list, f"{where}.child_runs", "child_runs")
        run_type = expect(require(run, "run_type", where), str, f"{where}.run_type", "run_type")
        run = _decoded(run, where)
        run_id = _id(run.get("id"))
        extra = as_dict(run.get("extra"))
        metadata = as_dict(extra.get("metadata"))
        dotted = _dotted(run, run_id, where)
        order = (dotted is None, dotted or "", record.index, position)
        thread = _thread(metadata)
        trace = _id(run.get("trace_id")) or run_id
        project = _id(run.get("session_id"))
        if run_type == "tool":
            return self._result(record, run, where, order, thread, trace, project)
        if run_type not in MODEL_RUNS:
            return None
        history = call_inputs(run.get("inputs"), f"{where}.inputs")
        output = call_outputs(run.get("outputs"), f"{where}.outputs", len(history))
        flags: list[str] = []
        usage, bad_usage = call_usage(run, output)
        if bad_usage:
            flags.append(FLAG_USAGE_OUT_OF_RANGE)
        ended, bad_time = _time(run.get("end_time"))
        if bad_time:
            flags.append(FLAG_TIMESTAMP_INVALID)
        provider = metadata.get("ls_provider")
        tags = run.get("tags")
        runtime = as_dict(extra.get("runtime"))
        return RunCall(
            record=record,
            where=where,
            order=order,
            conversation=thread,
            trace=trace,
            history=history,
            output=output,
            usage=usage,
            ended=ended,
            model=_model(run, metadata),
            flags=tuple(flags),
            project=project,
            provider=provider if isinstance(provider, str) else None,
            tags=tuple(t for t in tags if isinstance(t, str)) if isinstance(tags, list) else (),
            errored=run.get("error") not in (None, ""),
            runtime={
                k: v
                for k, v in runtime.items()
                if isinstance(v, str) and k.endswith(("version", "library", "sdk"))
            },
        )

    def _result(
        self,
        record: Record,
        run: dict[str, Any],
        where: str,
        order: tuple[Any, ...],
        thread: str | None,
        trace: str | None,
        project: str | None,
    ) -> ToolResult | None:
        """A tool run whose output is a ``ToolMessage`` (LangChain's tools return one)."""
        outputs = run.get("outputs")
        if not isinstance(outputs, dict):
            return None
        at = f"{where}.outputs"
        found = outputs
        if "output" in outputs:
            found, at = outputs["output"], f"{at}.output"
        if not is_langchain_message(found):
            return None
        try:
            message = langchain_message(found, at, {})
        except RecordError:  # not a tool result after all: the run is counted as a tool run
            return None
        call_id = message.responses[0].id if message.role == "tool" and message.responses else None
        if call_id is None:
            return None
        ended, _ = _time(run.get("end_time"))
        is_error = message.is_error or run.get("error") not in (None, "")
        message = replace(message, timestamp=ended, is_error=is_error)
        return ToolResult(record, where, order, thread, trace, project, call_id, message)

    # --- sessions -------------------------------------------------------------------------

    def _session(
        self,
        path: Path,
        key: str,
        final: Call,
        members: list[Call],
        split: tuple[int, int] | None,
        incomplete: int,
        pool: list[ToolResult],
        used: list[ToolResult],
    ) -> Session:
        """The session of one consistent history, with the tool runs of ``pool`` that answer
        calls it leaves unanswered appended (and added to ``used``)."""
        messages = chain_messages(final, members)
        answered = {p.id for m in messages for p in m.responses}
        open_calls = [p.id for m in messages for p in m.calls if p.id not in answered]
        for r in pool:
            if r.call_id in open_calls and r.order > final.order:
                open_calls.remove(r.call_id)
                used.append(r)
        messages.extend(r.message for r in used)
        calls = [c for c in members if isinstance(c, RunCall)]
        source_id = final.conversation or key.split(":", 1)[1].split("#", 1)[0]
        metadata = call_metadata(members, [r.record for r in used])
        session = build_session(
            self.name, path, key, final, source_id, messages, metadata, split, incomplete
        )
        meta = session.metadata
        meta["grouping"] = key.split(":", 1)[0]
        if key.startswith("thread:") and final.conversation is not None:
            meta["thread"] = final.conversation
        projects = sorted({c.project for c in calls if c.project})
        if projects:
            meta["projects"] = projects
        tags = sorted({t for c in calls for t in c.tags})
        if tags:
            meta["tags"] = tags[:50]
        errored = sum(c.errored for c in calls)
        if errored:
            meta["errored_calls"] = errored
        if used:
            meta["tool_runs"] = len(used)
        if isinstance(final, RunCall) and final.runtime:
            meta["runtime"] = final.runtime
        return session
