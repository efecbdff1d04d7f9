"""Conversion between Parquet rows (``ctxreplay.schema``) and ``Message`` objects.

A corpus is a folder::

    CORPUS/
      manifest.json                 sources, tokenizer, ctxreplay version, created at, counts
      sessions/bucket=NN/part-K.parquet
      messages/bucket=NN/part-K.parquet
      rejects/part-K.parquet        every record that could not be imported, raw bytes kept
      ground_truth/part-K.parquet   (synthetic corpora only) planted dependencies

``bucket`` is a hash bucket of the session id (hive partitioning), so a session never spans two
files and a reader can stream one bucket at a time.
"""

from __future__ import annotations

from typing import Any

from .messages import Message, Part, Usage


def part_to_row(p: Part) -> dict[str, Any]:
    return {
        "type": p.type,
        "content": p.content,
        "id": p.id,
        "name": p.name,
        "arguments": p.arguments,
        "mime_type": p.mime_type,
        "uri": p.uri,
        "modality": p.modality,
    }


def row_to_part(row: dict[str, Any]) -> Part:
    return Part(
        row["type"],
        content=row["content"],
        id=row["id"],
        name=row["name"],
        arguments=row["arguments"],
        mime_type=row["mime_type"],
        uri=row["uri"],
        modality=row["modality"],
    )


def message_to_row(
    session_id: str, m: Message, part_tokens: list[int] | None = None
) -> dict[str, Any]:
    calls = m.calls
    responses = m.responses
    tool_name = next((p.name for p in (*calls, *responses) if p.name), None)
    u = m.usage or Usage()
    return {
        "session_id": session_id,
        "seq": m.seq,
        "role": m.role,
        "name": m.name,
        "parts": [part_to_row(p) for p in m.parts],
        "tool_name": tool_name,
        "tool_call_id": responses[0].id if responses else None,
        "tool_call_ids": [p.id for p in calls] if calls else None,
        "is_error": m.is_error,
        "visible": m.visible,
        "image_count": m.image_count,
        "file_count": m.file_count,
        "tokens": m.tokens,
        "part_tokens": part_tokens,
        "chars": m.chars,
        "usage_prompt_tokens": u.prompt_tokens,
        "usage_cached_tokens": u.cached_tokens,
        "usage_completion_tokens": u.completion_tokens,
        "timestamp": m.timestamp,
        "flags": list(m.flags) if m.flags else None,
        "source_path": m.source_path,
    }


def row_to_message(row: dict[str, Any]) -> Message:
    usage = None
    if any(row.get(k) is not None for k in ("usage_prompt_tokens", "usage_completion_tokens")):
        usage = Usage(
            row.get("usage_prompt_tokens"),
            row.get("usage_cached_tokens"),
            row.get("usage_completion_tokens"),
        )
    return Message(
        role=row["role"],
        parts=tuple(row_to_part(p) for p in row["parts"]),
        seq=row["seq"],
        name=row.get("name"),
        is_error=bool(row.get("is_error")),
        visible=bool(row.get("visible", True)),
        tokens=int(row.get("tokens") or 0),
        flags=tuple(row.get("flags") or ()),
        usage=usage,
        timestamp=row.get("timestamp"),
        source_path=row.get("source_path"),
    )
