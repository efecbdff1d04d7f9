"""Lossless compaction of structured tool output: the same facts in fewer tokens.

A JSON body is re-rendered on one line with ``", "``/``": "`` separators (so a ``"key": "value"``
pair reads exactly as a single-line rendering writes it), and its empty fields — ``null``, ``""``,
``[]``, ``{}`` — are dropped and counted in a trailing marker. Nothing else changes: every
non-empty value, every key and the order of both survive, so a fact the future needs is still
there. Pure: text in, text out.
"""

from __future__ import annotations

import json
from typing import Any

MARKER = "[ctxreplay: {n} empty field{s} dropped]"


def _drop_empty(value: Any) -> tuple[Any, int]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        dropped = 0
        for k, v in value.items():
            if v is None or v == "" or v == [] or v == {}:
                dropped += 1
                continue
            out[k], n = _drop_empty(v)
            dropped += n
        return out, dropped
    if isinstance(value, list):
        items = [_drop_empty(v) for v in value]
        return [v for v, _ in items], sum(n for _, n in items)
    return value, 0


def compact_json(body: str) -> str | None:
    """The compact form of a JSON body, or None when it is not JSON or would not be shorter."""
    text = body.strip()
    if not text or text[0] not in "[{":
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    kept, dropped = _drop_empty(value)
    out = json.dumps(kept, ensure_ascii=False, separators=(", ", ": "))
    if dropped:
        out += "\n" + MARKER.format(n=dropped, s="" if dropped == 1 else "s")
    return out if len(out) < len(body) else None
