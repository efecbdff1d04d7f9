"""Content parts shared by the formats: OpenAI-style content lists, media, unknown parts.

Nothing in a message's content disappears silently: images, audio and files are kept as
``blob``/``uri``/``file`` parts, and a part of a type no importer knows is kept as the text of
its JSON, marked so that validation flags its message.
"""

from __future__ import annotations

import json
from typing import Any

from ..messages import Part
from ..rejects import RecordError
from ..validate import UNKNOWN_PART_MIME
from .base import expect


def content_parts(content: Any, json_path: str) -> list[Part]:
    """OpenAI-style ``content`` (string, null, or list of typed parts) as canonical parts.

    Images, audio and files become ``blob``/``uri``/``file`` parts: counted and kept, never
    dropped. An unknown part type is kept as text of its JSON so nothing disappears silently.
    """
    if content is None:
        return []
    if isinstance(content, str):
        return [Part.text(content)] if content != "" else []
    if not isinstance(content, list):
        raise RecordError(
            "wrong_type",
            f"content should be string or list, got {type(content).__name__}",
            json_path,
        )
    parts: list[Part] = []
    for i, item in enumerate(content):
        where = f"{json_path}[{i}]"
        if isinstance(item, str):
            parts.append(Part.text(item))
            continue
        expect(item, dict, where, "content part")
        kind = item.get("type")
        if kind in ("text", "input_text", "output_text"):
            parts.append(Part.text(expect(item.get("text", ""), str, f"{where}.text", "text")))
        elif kind in ("image_url", "input_image", "image"):
            parts.append(media_part(item, "image", where))
        elif kind in ("input_audio", "audio"):
            parts.append(media_part(item, "audio", where))
        elif kind in ("file", "input_file", "document"):
            parts.append(media_part(item, "file", where))
        elif kind in ("reasoning", "thinking"):
            parts.append(
                Part("reasoning", content=str(item.get("text") or item.get("thinking") or ""))
            )
        else:
            parts.append(unknown_part(item))
    return parts


def unknown_part(item: Any) -> Part:
    """A part of a type the importer does not know: kept as the text of its JSON, marked so
    validation flags its message ``unknown_part_type``."""
    return Part("text", content=json.dumps(item, ensure_ascii=False), mime_type=UNKNOWN_PART_MIME)


def _media_source(item: dict[str, Any], modality: str) -> tuple[Any, Any, Any, Any]:
    """Where a media part's content is: its inner object, URL, inline data and MIME type."""
    inner = (
        item.get("image_url") or item.get("input_audio") or item.get("file") or item.get("source")
    )
    url = item.get("url") or (
        item.get("image_url") if isinstance(item.get("image_url"), str) else None
    )
    mime = None
    data = None
    if isinstance(inner, dict):
        url = inner.get("url") or url
        data = inner.get("data") or inner.get("file_data")
        mime = inner.get("media_type") or inner.get("mime_type")
        if inner.get("format") and not mime:
            mime = f"{modality}/{inner['format']}"
        if inner.get("type") == "url":
            url = inner.get("url")
    if isinstance(data, str) and data.startswith("data:"):  # OpenAI ``file_data`` is a data URL
        url, data = data, None
    return inner, url, data, mime


def media_part(item: dict[str, Any], modality: str, where: str) -> Part:
    """An image/audio/file content part: a URL becomes ``uri``, inline data a ``blob``."""
    inner, url, data, mime = _media_source(item, modality)
    if isinstance(url, str) and url.startswith("data:"):
        header, _, payload = url.partition(",")
        mime = header[5:].split(";")[0] or mime
        return Part("blob", content=payload, mime_type=mime, modality=modality)
    if isinstance(data, str):
        return Part("blob", content=data, mime_type=mime, modality=modality)
    if isinstance(url, str):
        return Part("uri", uri=url, mime_type=mime, modality=modality)
    file_id = inner.get("file_id") if isinstance(inner, dict) else None
    return Part(
        "file",
        id=file_id,
        content=json.dumps(item, ensure_ascii=False),
        mime_type=mime,
        modality=modality,
    )
