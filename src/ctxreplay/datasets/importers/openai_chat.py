"""OpenAI Chat Completions message lists (JSON or JSONL).

Accepted shapes: a JSON list of messages (one session); a JSON list of sessions; ``{"messages":
[...]}``; JSONL with one session per line (a list, or an object with ``messages`` and optionally
``session_id``/``id``/``metadata``). ``tool_calls[].function.arguments`` is a JSON string and is
kept as written; legacy ``function_call``/``role: function`` messages become tool calls.

``ctxreplay export`` writes this format with an ``x-ctxreplay`` object per message (see
``openai_format``): its ``role``, ``name``, ``visible``, ``is_error``, ``usage``, ``timestamp`` and
``flags`` are restored, ``continues`` merges a message back into the previous one, and ``parts``
(when present) are the exact canonical parts. An exported line (it has ``session_id``,
``source_session_id`` and ``source_format``) keeps its corpus ``session_id``, so a re-import gives
the same ids.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..messages import PART_TYPES, ROLES, Message, Part, Session, as_dict, usage_from
from ..rejects import RecordError, Reject
from ..validate import FLAG_TIMESTAMP_INVALID
from .base import Importer, expect, importers, require
from .parts import content_parts
from .reader import file_sha256, first_array_element
from .records import Record
from .sniffing import Sample, capped, content_types, is_message, message_list, sample_of
from .times import timestamp_of

_ROLES = ("system", "developer", "user", "assistant", "tool", "function")
#: content part types of the OpenAI APIs
_OPENAI_PARTS = frozenset(
    {"text", "input_text", "output_text", "image_url", "input_image", "input_audio", "file",
     "input_file", "refusal"}
)  # fmt: skip
#: content block types only Anthropic's Messages API has (an OpenAI reader would lose them)
ANTHROPIC_BLOCKS = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use",
     "mcp_tool_use", "mcp_tool_result", "web_search_tool_result", "image", "document",
     "search_result", "container_upload"}
)  # fmt: skip

#: the key of the per-message object carrying what the OpenAI shape cannot say
EXT = "x-ctxreplay"


def messages_from_openai(items: Any, json_path: str) -> list[Message]:
    """Canonical messages from an OpenAI-chat message list (shared by several importers)."""
    expect(items, list, json_path, "messages")
    out: list[Message] = []
    exact: list[bool] = []  # the message's parts came whole from ``x-ctxreplay.parts``
    legacy_call: str | None = None
    for i, raw in enumerate(items):
        where = f"{json_path}[{i}]"
        expect(raw, dict, where, "message")
        role = expect(require(raw, "role", where), str, f"{where}.role", "role")
        if role not in _ROLES:
            raise RecordError(
                "unknown_role", f"role {role!r} is not an OpenAI chat role", f"{where}.role"
            )
        ext = as_dict(raw.get(EXT))
        parts = content_parts(raw.get("content"), f"{where}.content")
        if isinstance(raw.get("refusal"), str) and raw["refusal"]:
            parts.append(Part.text(raw["refusal"]))
        reasoning = raw.get("reasoning_content") or raw.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            parts.insert(0, Part("reasoning", content=reasoning))
        if role in ("tool", "function"):
            call_id = raw.get("tool_call_id") if role == "tool" else legacy_call
            if role == "tool":
                expect(
                    require(raw, "tool_call_id", where),
                    str,
                    f"{where}.tool_call_id",
                    "tool_call_id",
                )
            text = "\n".join(p.content or "" for p in parts if p.type == "text")
            media = [p for p in parts if p.type not in ("text", "reasoning")]
            name = raw.get("name") if isinstance(raw.get("name"), str) else None
            parts = [Part.response(call_id, text, name), *media]
            role = ext.get("role", "tool")
        calls = raw.get("tool_calls")
        if calls is not None:
            expect(calls, list, f"{where}.tool_calls", "tool_calls")
            for j, call in enumerate(calls):
                cw = f"{where}.tool_calls[{j}]"
                expect(call, dict, cw, "tool call")
                fn = expect(require(call, "function", cw), dict, f"{cw}.function", "function")
                name = expect(
                    require(fn, "name", f"{cw}.function"), str, f"{cw}.function.name", "name"
                )
                args = fn.get("arguments", "{}")
                if not isinstance(args, str):  # some writers store the object itself
                    args = Part.call("", name, args).arguments
                call_id = expect(require(call, "id", cw), str, f"{cw}.id", "tool call id")
                parts.append(Part.call(call_id, name, args))
        fc = raw.get("function_call")
        if isinstance(fc, dict) and role == "assistant":
            legacy_call = f"function_call_{i}"
            parts.append(Part.call(legacy_call, str(fc.get("name", "")), fc.get("arguments", "{}")))
        if ext.get("continues") and out:  # a later piece of the previous canonical message
            if not exact[-1]:
                out[-1] = replace(out[-1], parts=(*out[-1].parts, *parts))
            continue
        if "parts" in ext:
            parts = _ext_parts(ext["parts"], f"{where}.{EXT}.parts")
        if isinstance(ext.get("role"), str) and ext["role"] in ROLES:
            role = ext["role"]
        name = raw.get("name") if isinstance(raw.get("name"), str) and role != "tool" else None
        if "name" in ext:
            name = _str_or_none(ext["name"])
        flags = ext.get("flags")
        kept = tuple(f for f in flags if isinstance(f, str)) if isinstance(flags, list) else ()
        if isinstance(ext.get("timestamp"), str):  # our export: as the corpus had it
            timestamp, bad_time = ext["timestamp"], False
        else:
            timestamp, bad_time = timestamp_of(raw.get("timestamp"))
        if bad_time and FLAG_TIMESTAMP_INVALID not in kept:
            kept = (*kept, FLAG_TIMESTAMP_INVALID)
        out.append(
            Message(
                role=role if role != "function" else "tool",
                parts=tuple(parts),
                name=name,
                is_error=bool(ext.get("is_error", False)),
                visible=bool(ext.get("visible", True)),
                usage=usage_from(ext.get("usage") or raw.get("usage")),
                timestamp=timestamp,
                flags=kept,
                source_path=where,
            )
        )
        exact.append("parts" in ext)
    return out


def _ext_parts(items: Any, json_path: str) -> list[Part]:
    """Canonical parts written whole by ``to_openai(..., extensions=True)``."""
    expect(items, list, json_path, "parts")
    parts: list[Part] = []
    for i, item in enumerate(items):
        where = f"{json_path}[{i}]"
        expect(item, dict, where, "part")
        kind = item.get("type")
        if kind not in PART_TYPES:
            raise RecordError("wrong_type", f"unknown part type {kind!r}", f"{where}.type")
        fields: dict[str, str | None] = {}
        for key in ("content", "id", "name", "arguments", "mime_type", "uri", "modality"):
            value = item.get(key)
            fields[key] = None if value is None else expect(value, str, f"{where}.{key}", key)
        parts.append(Part(kind, **fields))
    return parts


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def is_message_array(path: Path, fmt: str) -> bool:
    """The file is a top-level JSON array whose first element is a chat message (one session)."""
    first = first_array_element(path, fmt)
    return is_message(first) and "messages" not in first


# --- detection ----------------------------------------------------------------------------------


#: detection: messages carrying ctxreplay's own export field
EXPORT_SCORE = 0.95
#: roles, content parts or fields only OpenAI chat has
OPENAI_SCORE = 0.85
#: plain text turns (Anthropic's plain turns look the same)
PLAIN_SCORE = 0.6
#: beside a top-level ``system`` prompt: Anthropic's shape, which OpenAI would drop
TOP_SYSTEM_SCORE = 0.2
#: messages with Anthropic content blocks: read as OpenAI they would become plain text
ANTHROPIC_BLOCKS_SCORE = 0.1


def openai_messages_score(messages: list[dict[str, Any]], top: dict[str, Any] | None) -> float:
    """How surely a message list (and the object holding it) is OpenAI chat."""
    roles = {m["role"] for m in messages}
    if not roles <= set(_ROLES):
        return 0.0
    types = set().union(*(content_types(m) for m in messages))
    if types & ANTHROPIC_BLOCKS:
        return ANTHROPIC_BLOCKS_SCORE
    if any(EXT in m for m in messages):
        return EXPORT_SCORE
    if top is not None and "system" in top:
        return TOP_SYSTEM_SCORE
    evidence = (
        roles & {"system", "developer", "tool", "function"}
        or types & _OPENAI_PARTS - {"text"}
        or any(
            isinstance(m.get("tool_calls"), list)
            or "tool_call_id" in m
            or "function_call" in m
            or "reasoning_content" in m
            or "refusal" in m
            for m in messages
        )
    )
    return OPENAI_SCORE if evidence else PLAIN_SCORE


def _record_score(record: Any) -> float:
    return capped(_shape_score(record), record)


def _shape_score(record: Any) -> float:
    messages = message_list(record)
    if messages is not None:
        return openai_messages_score(messages, None)
    if isinstance(record, dict):
        messages = message_list(record.get("messages"))
        if messages is not None:
            return openai_messages_score(messages, record)
    return 0.0


def sniff_openai(sample: Sample) -> float:
    if sample.layout == "array" and sample.records and all(is_message(r) for r in sample.records):
        return openai_messages_score(list(sample.records), None)  # the file is one message list
    return sample.mean(_record_score)


def file_digest(path: Path) -> str:
    try:
        return file_sha256(path)[:16]  # read block by block: a trace file can be large
    except OSError:  # reading will reject the file
        return "unreadable"


@importers.register("openai-chat")
class OpenAIChatImporter(Importer):
    """OpenAI Chat Completions messages; the lingua franca of agent logs and of our export."""

    suffixes = (".json", ".jsonl")

    def sniff(self, path: Path, head: bytes) -> float:
        return sniff_openai(sample_of(path, head))

    def read(self, path: Path) -> Iterator[Session | Reject]:
        self._digest = file_digest(path)
        if is_message_array(path, self.name):  # one session: an array of messages
            whole = self.document(path)
            if isinstance(whole, Reject):
                yield whole
            else:
                yield from self.guarded(path, whole, lambda: self.sessions_from_record(path, whole))
            return
        yield from super().read(path)

    def sessions_from_record(self, path: Path, record: Record) -> Iterator[Session]:
        value = record.value
        if isinstance(value, list):
            yield self._session(path, record, value, "$", {}, None)
            return
        expect(value, dict, "$", "record")
        items = require(value, "messages", "$")
        sid = value.get("source_session_id") or value.get("session_id") or value.get("id")
        meta = as_dict(value.get("metadata"))
        session = self._session(path, record, items, "$.messages", meta, sid)
        if "source_format" in value and isinstance(value.get("session_id"), str):
            session.session_id = value["session_id"]  # a ctxreplay export keeps its ids
        session.workload = _str_or_none(value.get("workload"))
        yield session

    def _session(
        self, path: Path, record: Record, items: Any, where: str, meta: dict[str, Any], sid: Any
    ) -> Session:
        source_id = str(sid) if sid is not None else f"{path.stem}:{record.index}"
        return Session(
            source_format=self.name,
            source_session_id=source_id,
            messages=messages_from_openai(items, where),
            key=f"{self._digest}:{record.index}:{source_id}",
            source_location=str(path),
            source_record=record.index,
            metadata=meta,
        )
