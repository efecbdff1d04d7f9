"""Pieces every workload uses: tool schemas in the system prompt, truncation with a saved route."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .anchor_pool import json_safe


def tool(name: str, description: str, **params: tuple[str, str]) -> dict[str, Any]:
    """An OpenAI function-tool schema; ``params`` maps name → (json type, description).

    A description starting with ``?`` marks the parameter optional.
    """
    properties = {k: {"type": t, "description": d.lstrip("?")} for k, (t, d) in params.items()}
    required = [k for k, (_, d) in params.items() if not d.startswith("?")]
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


def tools_block(tools: Sequence[dict[str, Any]]) -> str:
    """The tool schemas as the system prompt lists them: one JSON object a line."""
    return "\n".join(json.dumps(t, ensure_ascii=False) for t in tools)


READ_FILE = tool(
    "read_file",
    "Read a text file. Long files can be paged with offset and limit (in lines).",
    path=("string", "Absolute or repository-relative path."),
    offset=("integer", "?First line to return, 0-based."),
    limit=("integer", "?How many lines to return."),
)

TRUNCATION_NOTE = (
    "Outputs longer than the harness limit are cut; the harness then writes the complete output "
    "to a file under /tmp/outputs/ and tells you its path, which you can read with read_file."
)


def truncated(lines: Sequence[str], keep: int, route: str, unit: str = "lines") -> str:
    """The first ``keep`` lines and the harness's note saying where the full payload is."""
    shown = "\n".join(lines[:keep])
    return (
        f"{shown}\n[output truncated at {keep} of {len(lines):,} {unit}; "
        f"full output saved to {route}]"
    )


def numbered_slice(lines: Sequence[str], offset: int, limit: int) -> str:
    """``limit`` lines from ``offset``, numbered as read_file pages them (1-based, ``cat -n``)."""
    chunk = lines[offset : offset + limit]
    return "\n".join(f"{i:6d}\t{line}" for i, line in enumerate(chunk, offset + 1))


def middle_spans(
    text: str, pieces: Sequence[str], min_len: int = 60, edge: float = 0.32
) -> list[str]:
    """The ``pieces`` (lines or sentences of ``text``) that could be verbatim anchors.

    A candidate is at least ``min_len`` characters, JSON-safe, occurs exactly once in ``text`` and
    lies entirely inside the middle of it (at least ``edge`` of the text from both ends).
    """
    n = len(text)
    out = []
    for piece in pieces:
        p = piece.strip()
        if len(p) < min_len or not json_safe(p) or text.count(p) != 1:
            continue
        at = text.find(p)
        if at >= edge * n and at + len(p) <= (1 - edge) * n:
            out.append(p)
    return out
