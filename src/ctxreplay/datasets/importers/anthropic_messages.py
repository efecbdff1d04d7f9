"""Anthropic Messages API conversations (JSON or JSONL).

A session is shaped like a Messages API request (``POST /v1/messages``) or a log of one:
``{system, messages: [{role, content}], id | session_id, metadata, model}``, a bare list of
messages, or ``{request: {...}, response: {...}}`` (the response becomes the last assistant
message). A JSON file holds one session, or an array of sessions; JSONL holds one per line.

``content`` is a string or a list of blocks: ``text``; ``tool_use{id, name, input}`` → tool call
(``input`` kept as JSON text); ``tool_result{tool_use_id, content, is_error}`` → a
``tool_call_response`` part that stays in its ``user`` message (the provider's role is kept;
``is_error`` marks the message); ``thinking`` and ``redacted_thinking`` → ``reasoning`` parts (the
opaque data of a redacted block is kept, the part named ``redacted_thinking``); ``image`` and
``document`` → ``blob``/``uri``/``file`` parts, counted and never dropped. Server-side tools
(``server_tool_use``, ``mcp_tool_use``, ``*_tool_result``) map the same way. An unknown block is
kept as the text of its JSON. ``system`` (string or text blocks) becomes a first ``system`` message.

``usage`` on an assistant message (as the API returns it) is recorded: Anthropic's
``input_tokens`` excludes cached input, so the prompt is ``input_tokens +
cache_creation_input_tokens + cache_read_input_tokens`` and the cached part is
``cache_read_input_tokens``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..messages import Message, Part, Session, Usage
from ..rejects import RecordError, Reject
from ..validate import FLAG_TIMESTAMP_INVALID
from .base import Importer, expect, importers, require
from .openai_chat import ANTHROPIC_BLOCKS, file_digest, is_message_array
from .parts import media_part, unknown_part
from .records import Record
from .sniffing import Sample, capped, content_types, is_message, message_list, sample_of
from .times import timestamp_of

#: message fields only OpenAI-shaped messages have
_OPENAI_FIELDS = ("tool_calls", "tool_call_id", "function_call", "reasoning_content", "refusal")
#: content part types only OpenAI's APIs use
_OPENAI_PARTS = frozenset({"image_url", "input_audio", "input_text", "input_image", "file"})
#: keys of an Anthropic request or response besides ``messages``
_REQUEST_KEYS = ("max_tokens", "stop_reason", "stop_sequence", "anthropic_version", "tools")


def anthropic_usage(obj: Any) -> Usage | None:
    """Usage from an Anthropic ``usage`` object (prompt includes cache reads and writes)."""
    if not isinstance(obj, dict):
        return None
    values = {
        k: obj.get(k)
        for k in (
            "input_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
            "output_tokens",
        )
    }
    if not all(
        v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in values.values()
    ):
        return None
    if all(v is None for v in values.values()):
        return None
    inputs = [
        values[k]
        for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    ]
    prompt = sum(v for v in inputs if v is not None) if values["input_tokens"] is not None else None
    return Usage(prompt, values["cache_read_input_tokens"], values["output_tokens"])


def _text_of(content: Any, where: str) -> tuple[str, list[Part]]:
    """A tool result's ``content``: its text, and its media parts (kept after the result)."""
    if content is None:
        return "", []
    if isinstance(content, str):
        return content, []
    expect(content, list, where, "tool result content")
    texts: list[str] = []
    media: list[Part] = []
    for i, block in enumerate(content):
        for part in _block_parts(block, f"{where}[{i}]"):
            if part.type == "text":
                texts.append(part.content or "")
            else:
                media.append(part)
    return "\n".join(texts), media


def _block_parts(block: Any, where: str) -> list[Part]:
    """Canonical parts of one content block (a ``tool_result`` may give several)."""
    if isinstance(block, str):
        return [Part.text(block)] if block else []
    expect(block, dict, where, "content block")
    kind = expect(require(block, "type", where), str, f"{where}.type", "block type")
    if kind == "text":
        text = expect(require(block, "text", where), str, f"{where}.text", "text")
        return [Part.text(text)] if text else []
    if kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
        call_id = expect(require(block, "id", where), str, f"{where}.id", "tool_use id")
        name = expect(require(block, "name", where), str, f"{where}.name", "tool name")
        args = expect(require(block, "input", where), (dict, str), f"{where}.input", "input")
        return [Part.call(call_id, name, args)]
    if kind == "tool_result" or (kind.endswith("_tool_result") and "tool_use_id" in block):
        call_id = expect(
            require(block, "tool_use_id", where), str, f"{where}.tool_use_id", "tool_use_id"
        )
        content = block.get("content")
        if kind != "tool_result" and not isinstance(content, str | list | None):
            content = json.dumps(content, ensure_ascii=False)  # server tool results are objects
        text, media = _text_of(content, f"{where}.content")
        return [Part.response(call_id, text), *media]
    if kind == "thinking":
        return [
            Part("reasoning", content=expect(block.get("thinking", ""), str, where, "thinking"))
        ]
    if kind == "redacted_thinking":
        data = expect(block.get("data", ""), str, f"{where}.data", "data")
        return [Part("reasoning", content=data, name="redacted_thinking")]
    if kind == "image":
        expect(require(block, "source", where), dict, f"{where}.source", "source")
        return [media_part(block, "image", where)]
    if kind == "document":
        source = expect(require(block, "source", where), dict, f"{where}.source", "source")
        if source.get("type") == "text":  # plain-text document: the text is the payload
            data = expect(source.get("data", ""), str, f"{where}.source.data", "data")
            return [
                Part(
                    "blob",
                    content=data,
                    mime_type=source.get("media_type") or "text/plain",
                    modality="file",
                )
            ]
        if source.get("type") == "content":
            return [Part("file", content=json.dumps(source, ensure_ascii=False), modality="file")]
        return [media_part(block, "file", where)]
    return [unknown_part(block)]  # kept, never dropped (flagged unknown_part_type)


def _message(raw: Any, where: str) -> Message:
    expect(raw, dict, where, "message")
    role = expect(require(raw, "role", where), str, f"{where}.role", "role")
    if role not in ("user", "assistant", "system"):
        raise RecordError(
            "unknown_role", f"role {role!r} is not an Anthropic role", f"{where}.role"
        )
    content = require(raw, "content", where)
    if isinstance(content, str):
        parts = [Part.text(content)] if content else []
        is_error = False
    else:
        expect(content, list, f"{where}.content", "content")
        blocks = [
            (block, _block_parts(block, f"{where}.content[{i}]")) for i, block in enumerate(content)
        ]
        parts = [p for _, ps in blocks for p in ps]
        is_error = any(
            isinstance(b, dict) and b.get("type") == "tool_result" and b.get("is_error") is True
            for b, _ in blocks
        )
    recorded = raw.get("timestamp")
    timestamp, bad_time = timestamp_of(recorded if recorded is not None else raw.get("created_at"))
    return Message(
        role=role,
        parts=tuple(parts),
        is_error=is_error,
        usage=anthropic_usage(raw.get("usage")) if role == "assistant" else None,
        timestamp=timestamp,
        flags=(FLAG_TIMESTAMP_INVALID,) if bad_time else (),
        source_path=where,
    )


def _system(system: Any, where: str) -> list[Message]:
    if system is None or system == "":
        return []
    if isinstance(system, str):
        return [Message("system", (Part.text(system),), source_path=where)]
    expect(system, list, where, "system")
    parts = [p for i, b in enumerate(system) for p in _block_parts(b, f"{where}[{i}]")]
    return [Message("system", tuple(parts), source_path=where)] if parts else []


def messages_from_anthropic(record: Any) -> tuple[list[Message], dict[str, Any], Any]:
    """Messages, metadata and the source id of one Anthropic session record."""
    if isinstance(record, list):
        return [_message(m, f"$[{i}]") for i, m in enumerate(record)], {}, None
    expect(record, dict, "$", "record")
    body, base = record, "$"
    if "messages" not in record and isinstance(record.get("request"), dict):
        body, base = record["request"], "$.request"
    items = expect(require(body, "messages", base), list, f"{base}.messages", "messages")
    if not items:  # a response to no messages, or a system prompt alone, is no conversation
        raise RecordError("empty_session", f"{base}.messages is empty", base)
    messages = _system(body.get("system"), f"{base}.system")
    messages += [_message(m, f"{base}.messages[{i}]") for i, m in enumerate(items)]
    response = record.get("response") if body is not record else None
    if isinstance(response, dict) and "content" in response:
        messages.append(_message({"role": "assistant", **response}, "$.response"))
    meta = dict(record["metadata"]) if isinstance(record.get("metadata"), dict) else {}
    model = body.get("model") or (response or {}).get("model")
    if isinstance(model, str):
        meta.setdefault("model", model)
    sid = next(
        (
            record[k]
            for k in ("session_id", "id", "conversation_id")
            if isinstance(record.get(k), str | int) and not isinstance(record.get(k), bool)
        ),
        None,
    )
    return messages, meta, sid


#: detection: Anthropic content blocks (``tool_use``, ``thinking``, ...)
BLOCKS_SCORE = 0.9
#: Anthropic usage fields (``input_tokens``, ``output_tokens``) on the messages
USAGE_SCORE = 0.85
#: a logged request whose response holds only Anthropic blocks
RESPONSE_SCORE = 0.85
#: plain turns in an Anthropic request body (a top-level ``system``, request keys)
REQUEST_SCORE = 0.75


def anthropic_messages_score(messages: list[dict[str, Any]], top: dict[str, Any] | None) -> float:
    """How surely a message list (and the object holding it) is an Anthropic conversation."""
    roles = {m["role"] for m in messages}
    if not roles <= {"user", "assistant", "system"}:
        return 0.0
    types = set().union(*(content_types(m) for m in messages))
    if types & _OPENAI_PARTS or any(f in m for m in messages for f in _OPENAI_FIELDS):
        return 0.0
    if any("x-ctxreplay" in m for m in messages):
        return 0.0
    if types & ANTHROPIC_BLOCKS:
        return BLOCKS_SCORE
    usage: list[dict[str, Any]] = [m["usage"] for m in messages if isinstance(m.get("usage"), dict)]
    if any("input_tokens" in u or "output_tokens" in u for u in usage):
        return USAGE_SCORE
    if top is not None:
        system = top.get("system")
        if isinstance(system, str) or (
            isinstance(system, list) and all(isinstance(b, dict) for b in system)
        ):
            return REQUEST_SCORE  # a top-level system prompt: Anthropic's shape
        if any(k in top for k in _REQUEST_KEYS):
            return REQUEST_SCORE
    return 0.0  # plain text turns: OpenAI chat reads them the same


def _record_score(record: Any) -> float:
    return capped(_shape_score(record), record)


def _shape_score(record: Any) -> float:
    messages = message_list(record)
    if messages is not None:
        return anthropic_messages_score(messages, None)
    if not isinstance(record, dict):
        return 0.0
    score = _messages_score(record)
    request = record.get("request")
    if isinstance(request, dict):  # a logged request, and maybe its response
        score = max(score, _messages_score(request))
        response = record.get("response")
        blocks = response.get("content") if isinstance(response, dict) else None
        if isinstance(blocks, list) and {
            b.get("type") for b in blocks if isinstance(b, dict)
        } <= ANTHROPIC_BLOCKS | {"text"}:
            score = max(score, RESPONSE_SCORE, _messages_score(request))
    return score


def _messages_score(body: dict[str, Any]) -> float:
    messages = message_list(body.get("messages"))
    return anthropic_messages_score(messages, body) if messages is not None else 0.0


def sniff_anthropic(sample: Sample) -> float:
    if sample.layout == "array" and sample.records and all(is_message(r) for r in sample.records):
        return anthropic_messages_score(list(sample.records), None)  # one bare message list
    return sample.mean(_record_score)


@importers.register("anthropic-messages")
class AnthropicMessagesImporter(Importer):
    """Anthropic Messages API requests and logs: ``system`` plus ``messages`` of content blocks."""

    suffixes = (".json", ".jsonl")

    def sniff(self, path: Path, head: bytes) -> float:
        return sniff_anthropic(sample_of(path, head))

    def read(self, path: Path) -> Iterator[Session | Reject]:
        self._digest = file_digest(path)
        records: Iterator[Record | Reject]
        if is_message_array(path, self.name):  # a top-level array of messages is one session
            records = iter([self.document(path)])
        else:
            records = self.records(path)
        for record in records:
            if isinstance(record, Reject):
                yield record
                continue
            yield from self.guarded(
                path, record, lambda rec=record: self.sessions_from_record(path, rec)
            )

    def sessions_from_record(self, path: Path, record: Record) -> Iterator[Session]:
        messages, meta, sid = messages_from_anthropic(record.value)
        source_id = str(sid) if sid is not None else f"{path.stem}:{record.index}"
        yield Session(
            source_format=self.name,
            source_session_id=source_id,
            messages=messages,
            key=f"{self._digest}:{record.index}:{source_id}",
            source_location=str(path),
            source_record=record.index,
            metadata=meta,
        )
