"""On-disk response cache for model calls, keyed by the full canonical request.

One JSON file per request under ``<dir>/<key[:2]>/<key>.json``. A write goes to a temporary
file in the same folder and is renamed into place (``os.replace`` is atomic on POSIX and
Windows), so a reader in another thread or process sees either nothing or a whole entry, and a
killed process leaves at most a stray ``.tmp`` file that is never read. Only successful
completions are stored: the client never calls :meth:`ResponseCache.put` for an error.

The key is the sha256 of the canonical request (endpoint, model, messages, tools, response
format, sampling settings); the API key is never part of it, nor of the stored entry.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from ..files import atomic_write_text, cache_dir

CACHE_VERSION = 1


def canonical_json(obj: Any) -> str:
    """Compact JSON with sorted keys: the same request always gives the same text."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_key(request: dict[str, Any]) -> str:
    """sha256 hex digest of the canonical request."""
    doc = {"v": CACHE_VERSION, **request}
    return hashlib.sha256(canonical_json(doc).encode("utf-8")).hexdigest()


def default_cache_dir() -> Path:
    """``$CTXREPLAY_CACHE_DIR/llm`` (default ``~/.cache/ctxreplay/llm``)."""
    return cache_dir("llm")


class ResponseCache:
    """Stored completions by request key; safe for concurrent threads and processes."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored record, or None on a miss (an unreadable entry counts as a miss)."""
        try:
            text = self.path(key).read_text(encoding="utf-8")
        except OSError:  # missing, or unreadable: a miss either way
            return None
        try:
            doc = json.loads(text)
        except ValueError:
            return None
        if not isinstance(doc, dict) or doc.get("key") != key:
            return None
        record = doc.get("record")
        return record if isinstance(record, dict) else None

    def put(self, key: str, record: dict[str, Any]) -> Path:
        """Store ``record`` under ``key`` atomically (tmp file + rename)."""
        target = self.path(key)
        payload = json.dumps({"key": key, "record": record}, ensure_ascii=False, indent=1)
        atomic_write_text(target, payload, fsync=True)
        return target

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def __len__(self) -> int:
        if not self.directory.exists():
            return 0
        return sum(1 for _ in self.directory.glob("*/*.json"))
