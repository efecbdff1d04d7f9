"""Canonical messages ⇄ OpenAI Chat Completions messages.

Views are handed to providers in this shape and ``ctxreplay export`` writes it. Whatever the
OpenAI shape cannot say (a tool result that lived in a ``user`` message, traffic the agent never
saw, recorded usage) rides along in an ``x-ctxreplay`` object per message, which the openai-chat
importer reads back, so import → export → import keeps the tables.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from .importers.openai_chat import EXT, messages_from_openai  # the reader is the reference
from .messages import ENCRYPTED_REASONING_MIME, MEDIA_PART_TYPES, Message, Part


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
        return {"type": "file", "file": {"file_id": p.id, **({"filename": p.uri} if p.uri else {})}}
    mime = p.mime_type or ""
    if p.type == "blob" and mime.startswith("audio/"):
        return {"type": "input_audio", "input_audio": {"data": p.content or "", "format": mime[6:]}}
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
    if m.flags:
        ext["flags"] = list(m.flags)
    return ext


def _pieces(m: Message) -> list[dict[str, Any]]:
    """The OpenAI messages one canonical message becomes: its tool results, then the rest."""
    out: list[dict[str, Any]] = []
    responses = [p for p in m.parts if p.type == "tool_call_response"]
    calls = [p for p in m.parts if p.type == "tool_call"]
    others = [p for p in m.parts if p.type in ("text", *MEDIA_PART_TYPES)]
    # encrypted reasoning means something only to the provider that wrote it: never sent as text
    reasoning = [
        p.content or ""
        for p in m.parts
        if p.type == "reasoning" and p.mime_type != ENCRYPTED_REASONING_MIME
    ]
    for r in responses:
        out.append({"role": "tool", "tool_call_id": r.id, "content": r.content or ""})
    if responses and not (others or calls or reasoning):
        return out
    role = "user" if m.role == "tool" else m.role  # a tool message's extra parts: user content
    msg: dict[str, Any] = {"role": role}
    content = _content(others)
    msg["content"] = content if content is not None or role == "assistant" else ""
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
    out.append(msg)
    return out


def _annotate(m: Message, pieces: list[dict[str, Any]], call_names: dict[str, str | None]) -> None:
    """Attach ``x-ctxreplay`` so the openai-chat importer rebuilds ``m`` exactly.

    The first piece carries the message's attributes; later pieces say ``continues`` (they are
    merged back into the same message). When reading the pieces back would not give ``m``'s parts
    (several reasoning parts, an unusual order, media the OpenAI shape cannot hold), the exact
    parts ride along as ``parts``.
    """
    for i, piece in enumerate(pieces):
        role = m.role if piece["role"] != m.role else None
        if i == 0:
            ext = _ext(m, role)
        else:
            ext = {"continues": True, **({"role": role} if role else {})}
            ext.update({k: v for k, v in _ext(m).items() if k in ("visible", "is_error")})
        if ext:
            piece[EXT] = ext
    for p in m.calls:
        if p.id:
            call_names[p.id] = p.name
    try:
        back = messages_from_openai(pieces, "$")
    except ValueError:
        back = []
    if len(back) != 1:
        pieces[0].setdefault(EXT, {})["parts"] = [_part_dict(p) for p in m.parts]
        return
    parts = tuple(
        replace(p, name=call_names.get(p.id or ""))
        if p.type == "tool_call_response" and not p.name
        else p
        for p in back[0].parts
    )
    if parts != m.parts:
        pieces[0].setdefault(EXT, {})["parts"] = [_part_dict(p) for p in m.parts]
    if back[0].name != m.name:
        pieces[0].setdefault(EXT, {})["name"] = m.name


def _part_dict(p: Part) -> dict[str, Any]:
    return {
        k: getattr(p, k)
        for k in ("type", "content", "id", "name", "arguments", "mime_type", "uri", "modality")
        if getattr(p, k) is not None
    }


def to_openai(messages: Iterable[Message], *, extensions: bool = False) -> list[dict[str, Any]]:
    """Provider-shaped messages; with ``extensions`` each carries what OpenAI cannot say.

    With ``extensions`` the openai-chat importer reads the result back into the same canonical
    messages (roles, parts, visibility, errors, usage, timestamps, flags).
    """
    out: list[dict[str, Any]] = []
    call_names: dict[str, str | None] = {}
    for m in messages:
        pieces = _pieces(m)
        if extensions:
            _annotate(m, pieces, call_names)
        out.extend(pieces)
    return out
