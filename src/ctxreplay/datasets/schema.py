"""Arrow schemas of the corpus tables, and conversion between rows and ``Message`` objects.

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

import pyarrow as pa

from .messages import Message, Part, Usage

PART = pa.struct(
    [
        ("type", pa.string()),
        ("content", pa.string()),
        ("id", pa.string()),
        ("name", pa.string()),
        ("arguments", pa.string()),
        ("mime_type", pa.string()),
        ("uri", pa.string()),
        ("modality", pa.string()),
    ]
)

MESSAGES = pa.schema(
    [
        pa.field("session_id", pa.string(), nullable=False),
        pa.field("seq", pa.int32(), nullable=False),
        pa.field("role", pa.string(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("parts", pa.list_(PART), nullable=False),
        # derived from parts, for SQL without unnesting
        pa.field("tool_name", pa.string()),  # tool of the call(s) made or answered
        pa.field("tool_call_id", pa.string()),  # the call a tool result answers
        pa.field("tool_call_ids", pa.list_(pa.string())),  # the calls this message makes
        pa.field("is_error", pa.bool_(), nullable=False),
        pa.field("visible", pa.bool_(), nullable=False),
        pa.field("image_count", pa.int32(), nullable=False),
        pa.field("file_count", pa.int32(), nullable=False),
        pa.field("tokens", pa.int32(), nullable=False),
        pa.field("chars", pa.int64(), nullable=False),
        pa.field("usage_prompt_tokens", pa.int64()),
        pa.field("usage_cached_tokens", pa.int64()),
        pa.field("usage_completion_tokens", pa.int64()),
        pa.field("timestamp", pa.string()),
        pa.field("flags", pa.list_(pa.string())),
        pa.field("source_path", pa.string()),
    ]
)

SESSIONS = pa.schema(
    [
        pa.field("session_id", pa.string(), nullable=False),
        pa.field("source_format", pa.string(), nullable=False),
        pa.field("source_location", pa.string()),
        pa.field("source_record", pa.int64()),
        pa.field("source_session_id", pa.string()),
        pa.field("workload", pa.string()),
        pa.field("n_messages", pa.int32(), nullable=False),
        pa.field("n_visible_messages", pa.int32(), nullable=False),
        pa.field("n_user_turns", pa.int32(), nullable=False),
        pa.field("n_tool_calls", pa.int32(), nullable=False),
        pa.field("n_tool_results", pa.int32(), nullable=False),
        pa.field("tokens", pa.int64(), nullable=False),
        pa.field("system_tokens", pa.int64(), nullable=False),
        pa.field("tool_output_tokens", pa.int64(), nullable=False),
        pa.field("image_count", pa.int32(), nullable=False),
        pa.field("file_count", pa.int32(), nullable=False),
        pa.field("usage_prompt_tokens", pa.int64()),
        pa.field("usage_cached_tokens", pa.int64()),
        pa.field("usage_completion_tokens", pa.int64()),
        pa.field("flags", pa.list_(pa.string())),
        pa.field("metadata", pa.string()),  # JSON object: reward, task, model, ...
    ]
)

REJECTS = pa.schema(
    [
        pa.field("source_format", pa.string()),
        pa.field("source_location", pa.string(), nullable=False),
        pa.field("record", pa.int64()),  # index of the record inside the file
        pa.field("line", pa.int64()),  # 1-based line, for line-oriented files
        pa.field("session_id", pa.string()),  # the source's own id, when it could be read
        pa.field("json_path", pa.string()),
        pa.field("reason", pa.string(), nullable=False),
        pa.field("detail", pa.string(), nullable=False),
        pa.field("raw", pa.large_binary(), nullable=False),
    ]
)

GROUND_TRUTH = pa.schema(
    [
        pa.field("session_id", pa.string(), nullable=False),
        pa.field("dep_id", pa.string(), nullable=False),
        pa.field("category", pa.string(), nullable=False),
        pa.field("anchor", pa.string(), nullable=False),
        pa.field("source_seq", pa.int32(), nullable=False),
        pa.field("need_seq", pa.int32(), nullable=False),
        pa.field("note", pa.string()),
    ]
)

#: The six failure categories of the brief, in its order.
CATEGORIES: tuple[str, ...] = (
    "evidence_detail",
    "locator_handle",
    "behavioural_contract",
    "verbatim_source",
    "live_state",
    "recovery_routing",
)


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


def message_to_row(session_id: str, m: Message) -> dict[str, Any]:
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
