"""Canonical messages → OpenAI Responses API input items (the counterpart of ``openai_format``).

``to_responses_items`` writes the items a view becomes when it is sent to ``POST /v1/responses``
as ``input``; ``ctxreplay export --format openai-responses`` writes a corpus as items. The
``openai-responses`` importer's reader (``messages_from_items``) is the reference: items it reads
are written back as the same items, up to what it does not keep (``canonical_item``: server
``id``/``status``, empty ``annotations``), and messages of any importer written as items read
back into the same parts, except what the item model cannot say (below).

* ``system``/``developer``/``user`` messages → ``message`` items with ``input_text`` parts (and
  ``input_image``/``input_file``/``input_audio`` for media); ``assistant`` text → a ``message``
  with ``output_text`` (a refusal part → ``refusal``); consecutive text and media parts share one
  ``message`` item, so two assistant messages of one response that were adjacent come back as one.
* ``reasoning`` parts → ``reasoning`` items: summary parts → ``summary_text``, encrypted parts →
  ``encrypted_content``, other reasoning text → ``reasoning_text`` content (so Anthropic thinking
  survives; a redacted-thinking name does not). A new item starts where the order summary,
  text, encrypted would go backwards.
* tool calls → ``function_call`` (or the item their ``mime_type`` names: ``custom_tool_call``,
  ``computer_call``…; an item that held its own result, like ``mcp_call``, is rebuilt whole from
  the call and its result); results → ``<call type>_output`` with ``call_id``. Media right after a
  result (an OpenHands screenshot, an Anthropic tool-result image) make its output a list of
  parts; text after results (Anthropic's user text beside ``tool_result`` blocks) becomes a
  ``user`` message. ``is_error`` has no place in the item model and is not written, nor has
  the media type of a file id or a URL (a data URL keeps it).
* an unknown part (the JSON of something the importer did not know) is written back as that JSON:
  an item when its ``type`` names one, else a content part.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from .importers.openai_responses import (
    INLINE,
    ITEM_TYPES,
    OUTPUT_JSON_MIME,
    OUTPUT_LIST_MIME,
    OUTPUT_MEDIA_FIRST_MIME,
    OUTPUT_SCREENSHOT_MIME,
    REFUSAL_MIME,
    SUMMARY,
    item_type_of,
)
from .messages import ENCRYPTED_REASONING_MIME, MEDIA_PART_TYPES, Message, Part
from .validate import UNKNOWN_PART_MIME

__all__ = ["to_responses_items"]

_LIST_MIMES = (OUTPUT_LIST_MIME, OUTPUT_MEDIA_FIRST_MIME, OUTPUT_SCREENSHOT_MIME)


def _json(text: str | None) -> Any:
    try:
        return json.loads(text or "")
    except ValueError:
        return None


def media_item(p: Part) -> dict[str, Any]:
    """A media part as an ``input_image``/``input_file``/``input_audio`` content part."""
    mime = p.mime_type or ""
    image = p.modality == "image" or mime.startswith("image/")
    if p.type == "blob" and (p.modality == "audio" or mime.startswith("audio/")):
        audio: dict[str, Any] = {"data": p.content or ""}
        if mime.startswith("audio/"):
            audio["format"] = mime[6:]
        return {"type": "input_audio", "input_audio": audio}
    data_url = f"data:{mime or 'application/octet-stream'};base64,{p.content or ''}"
    if image:
        out: dict[str, Any] = {"type": "input_image"}
        if p.type == "blob":
            out["image_url"] = data_url
        elif p.type == "uri":
            out["image_url"] = p.uri or ""
        else:
            out["file_id"] = p.id
        out["detail"] = p.name or "auto"
        return out
    out = {"type": "input_file"}
    if p.type == "blob":
        out["file_data"] = data_url if p.mime_type else p.content or ""
    elif p.type == "uri":
        out["file_url"] = p.uri or ""
    else:
        out["file_id"] = p.id
    if p.name:
        out["filename"] = p.name
    return out


def _content_part(p: Part, role: str) -> Any:
    """A text, refusal, media or unknown part as a message content part."""
    if p.type in MEDIA_PART_TYPES:
        return media_item(p)
    if p.mime_type == UNKNOWN_PART_MIME:
        found = _json(p.content)
        if found is not None:
            return found
    if p.mime_type == REFUSAL_MIME:
        return {"type": "refusal", "refusal": p.content or ""}
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": kind, "text": p.content or ""}


def _is_item(p: Part) -> dict[str, Any] | None:
    """The item an unknown part holds, when its ``type`` names an item."""
    if p.mime_type != UNKNOWN_PART_MIME:
        return None
    found = _json(p.content)
    if not isinstance(found, dict):
        return None
    kind = found.get("type")
    if isinstance(kind, str) and (kind in ITEM_TYPES or kind.endswith(("_call", "_output"))):
        return found
    return None


_RANK = {"summary": 0, "content": 1, "encrypted": 2}


class _Writer:
    """Items of a message sequence, in order."""

    def __init__(self, messages: Sequence[Message]) -> None:
        self.items: list[dict[str, Any]] = []
        self.call_types: dict[str, str | None] = {}
        self.inline_results: dict[str, tuple[Part, bool]] = {}
        for m in messages:
            for p in m.parts:
                if p.type == "tool_call" and p.id:
                    self.call_types[p.id] = item_type_of(p.mime_type)
        for m in messages:
            for p in m.parts:
                if p.type == "tool_call_response" and self.call_types.get(p.id or "") in INLINE:
                    self.inline_results[p.id or ""] = (p, m.is_error)
        self._message: dict[str, Any] | None = None
        self._reasoning: dict[str, Any] | None = None
        self._rank = -1

    def close(self) -> None:
        self._message = None
        self._reasoning = None
        self._rank = -1

    def write(self, m: Message) -> None:
        self.close()
        role = "user" if m.role == "tool" else m.role
        parts = list(m.parts)
        i = 0
        while i < len(parts):
            p = parts[i]
            if p.type == "tool_call_response":
                i = self._output(parts, i)
                continue
            i += 1
            if p.type == "reasoning":
                self._add_reasoning(p)
            elif p.type == "tool_call":
                self.close()
                self.items.append(self._call(p))
            elif (item := _is_item(p)) is not None:
                self.close()
                self.items.append(item)
            else:
                self._add_content(p, role)
        self.close()

    def _add_content(self, p: Part, role: str) -> None:
        self._reasoning, self._rank = None, -1
        if self._message is None:
            self._message = {"type": "message", "role": role, "content": []}
            self.items.append(self._message)
        self._message["content"].append(_content_part(p, role))

    def _add_reasoning(self, p: Part) -> None:
        self._message = None
        if p.content is None and p.name is None and p.mime_type is None:
            self.close()  # an empty reasoning item
            self.items.append({"type": "reasoning", "summary": []})
            return
        if p.mime_type == ENCRYPTED_REASONING_MIME:
            rank = _RANK["encrypted"]
        elif p.name == SUMMARY:
            rank = _RANK["summary"]
        else:
            rank = _RANK["content"]
        item = self._reasoning
        if item is None or rank < self._rank or self._rank == _RANK["encrypted"]:
            item = {"type": "reasoning", "summary": []}
            self.items.append(item)
            self._reasoning = item
        self._rank = rank
        if rank == _RANK["summary"]:
            item["summary"].append({"type": "summary_text", "text": p.content or ""})
        elif rank == _RANK["content"]:
            item.setdefault("content", []).append(
                {"type": "reasoning_text", "text": p.content or ""}
            )
        else:
            item["encrypted_content"] = p.content or ""

    def _call(self, p: Part) -> dict[str, Any]:
        kind = item_type_of(p.mime_type)
        call_id = p.id or ""
        if kind is None:
            return {
                "type": "function_call",
                "call_id": call_id,
                "name": p.name or "",
                "arguments": p.arguments or "{}",
            }
        if kind == "custom_tool_call":
            return {
                "type": kind,
                "call_id": call_id,
                "name": p.name or "",
                "input": p.arguments or "",
            }
        if kind in INLINE:
            return self._inline(p, kind)
        fields = _json(p.arguments)
        rest = fields if isinstance(fields, dict) else {"arguments": p.arguments}
        return {"type": kind, "call_id": call_id, **rest}

    def _inline(self, p: Part, kind: str) -> dict[str, Any]:
        fixed, arg_fields, result_fields = INLINE[kind]
        item: dict[str, Any] = {"type": kind, "id": p.id or ""}
        if fixed is None:
            item["name"] = p.name or ""
            item[arg_fields[0]] = p.arguments or ""
        else:
            found = _json(p.arguments)
            item.update(found if isinstance(found, dict) else {})
        result, is_error = self.inline_results.get(p.id or "", (None, False))
        if result is None:
            return item
        envelope = _json(result.arguments)
        envelope = envelope if isinstance(envelope, dict) else {}
        missing = [f for f in result_fields if f not in envelope]
        used = "error" if is_error and "error" in missing else (missing or list(result_fields))[0]
        value: Any = result.content or ""
        if result.mime_type == OUTPUT_JSON_MIME:
            value = _json(result.content)
        item.update(envelope)
        item[used] = value
        return item

    def _output(self, parts: list[Part], i: int) -> int:
        """The output item of the result at ``parts[i]``; the index after what it took."""
        self.close()
        p = parts[i]
        i += 1
        call_id = p.id or ""
        kind = self.call_types.get(call_id)
        follow: list[Part] = []
        if p.mime_type in _LIST_MIMES:
            while i < len(parts) and parts[i].type != "tool_call_response":
                follow.append(parts[i])
                i += 1
        else:
            while i < len(parts) and parts[i].type in MEDIA_PART_TYPES:
                follow.append(parts[i])
                i += 1
        if kind in INLINE:
            return i  # written with its call
        output: Any
        if p.mime_type == OUTPUT_SCREENSHOT_MIME and follow:
            shot = media_item(follow[0])
            output = {"type": "computer_screenshot"}
            output.update({k: v for k, v in shot.items() if k in ("image_url", "file_id")})
        elif p.mime_type == OUTPUT_JSON_MIME:
            output = _json(p.content)
        elif p.mime_type in (OUTPUT_LIST_MIME, OUTPUT_MEDIA_FIRST_MIME) or follow:
            lead = [] if p.mime_type == OUTPUT_MEDIA_FIRST_MIME else [p]
            output = [_content_part(q, "user") for q in [*lead, *follow]]
        else:
            output = p.content or ""
        item: dict[str, Any] = {
            "type": f"{kind}_output" if kind else "function_call_output",
            "call_id": call_id,
            "output": output,
        }
        envelope = _json(p.arguments)
        if isinstance(envelope, dict):
            item.update(envelope)
        self.items.append(item)
        return i


def to_responses_items(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Responses API ``input`` items of ``messages``, in order (see the module docstring)."""
    listed = list(messages)
    writer = _Writer(listed)
    for m in listed:
        writer.write(m)
    return writer.items
