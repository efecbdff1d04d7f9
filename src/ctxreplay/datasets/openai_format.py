"""Canonical messages ⇄ OpenAI Chat Completions messages.

Views are handed to providers in this shape and ``ctxreplay export`` writes it. Whatever the
OpenAI shape cannot say (a tool result that lived in a ``user`` message, traffic the agent never
saw, recorded usage) rides along in an ``x-ctxreplay`` object per message, which the openai-chat
importer reads back, so import → export → import keeps the tables.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .messages import MEDIA_PART_TYPES, Message, Part, Usage

EXT = "x-ctxreplay"


def _content(parts: list[Part]) -> str | list[dict[str, Any]] | None:
    if not parts:
        return None
    if all(p.type == "text" for p in parts) and len(parts) == 1:
        return parts[0].content or ""
    out: list[dict[str, Any]] = []
    for p in parts:
        if p.type == "text":
            out.append({"type": "text", "text": p.content or ""})
        elif p.type in MEDIA_PART_TYPES:
            out.append(media_to_openai(p))
    return out


def media_to_openai(p: Part) -> dict[str, Any]:
    if p.type == "blob":
        url = f"data:{p.mime_type or 'application/octet-stream'};base64,{p.content or ''}"
    else:
        url = p.uri or ""
    if p.modality == "image" or (p.mime_type or "").startswith("image/"):
        if p.type == "file" and not url:
            return {"type": "file", "file": {"file_id": p.id}}
        return {"type": "image_url", "image_url": {"url": url}}
    if p.type == "file":
        return {"type": "file", "file": {"file_id": p.id, "filename": p.uri}}
    return {"type": "file", "file": {"file_data": url}}


def _ext(m: Message, role: str | None = None) -> dict[str, Any]:
    ext: dict[str, Any] = {}
    if role is not None:
        ext["role"] = role
    if not m.visible:
        ext["visible"] = False
    if m.is_error:
        ext["is_error"] = True
    if m.usage is not None:
        ext["usage"] = {
            k: v
            for k, v in (
                ("prompt_tokens", m.usage.prompt_tokens),
                ("cached_tokens", m.usage.cached_tokens),
                ("completion_tokens", m.usage.completion_tokens),
            )
            if v is not None
        }
    if m.timestamp:
        ext["timestamp"] = m.timestamp
    return ext


def to_openai(messages: Iterable[Message], *, extensions: bool = False) -> list[dict[str, Any]]:
    """Provider-shaped messages; with ``extensions`` each carries what OpenAI cannot say."""
    out: list[dict[str, Any]] = []
    for m in messages:
        responses = [p for p in m.parts if p.type == "tool_call_response"]
        calls = [p for p in m.parts if p.type == "tool_call"]
        others = [p for p in m.parts if p.type in ("text", *MEDIA_PART_TYPES)]
        reasoning = [p.content or "" for p in m.parts if p.type == "reasoning"]
        for r in responses:
            msg: dict[str, Any] = {"role": "tool", "tool_call_id": r.id, "content": r.content or ""}
            if extensions:
                ext = _ext(m, None if m.role == "tool" else m.role)
                if ext:
                    msg[EXT] = ext
            out.append(msg)
        if responses and not (others or calls or reasoning):
            continue
        role = "tool" if m.role == "tool" else m.role
        if role == "tool":  # a tool message with extra parts: they follow as user content
            role = "user"
        msg = {"role": role}
        content = _content(others)
        msg["content"] = content if content is not None or role != "assistant" else None
        if msg["content"] is None and role != "assistant":
            msg["content"] = ""
        if m.name:
            msg["name"] = m.name
        if calls:
            msg["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name or "", "arguments": c.arguments or "{}"},
                }
                for c in calls
            ]
        if reasoning:
            msg["reasoning_content"] = "\n".join(reasoning)
        if extensions:
            ext = _ext(m, m.role if role != m.role else None)
            if ext:
                msg[EXT] = ext
        out.append(msg)
    return out


def usage_from(obj: Any) -> Usage | None:
    """Usage from an OpenAI-style ``usage`` object (or our extension), when it has numbers."""
    if not isinstance(obj, dict):
        return None
    prompt = obj.get("prompt_tokens", obj.get("input_tokens"))
    completion = obj.get("completion_tokens", obj.get("output_tokens"))
    cached = obj.get("cached_tokens")
    details = obj.get("prompt_tokens_details") or obj.get("input_tokens_details")
    if cached is None and isinstance(details, dict):
        cached = details.get("cached_tokens")
    if cached is None and obj.get("cache_read_input_tokens") is not None:
        cached = obj.get("cache_read_input_tokens")
    values = [v for v in (prompt, cached, completion) if v is not None]
    if not values or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return None
    return Usage(prompt, cached, completion)
