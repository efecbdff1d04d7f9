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

from .. import storage
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
        #: a local folder, or a URI (a run on object storage keeps its responses there)
        self.directory = storage.location(directory)

    def path(self, key: str) -> str | Path:
        return storage.join(self.directory, key[:2], f"{key}.json")

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored record, or None on a miss (an unreadable entry counts as a miss)."""
        try:
            path = self.path(key)
            if isinstance(path, Path):
                text = path.read_text(encoding="utf-8")
            else:
                text = storage.read_text(path)
        except (OSError, UnicodeDecodeError, storage.StorageError):  # missing or unreadable
            return None
        try:
            doc = json.loads(text)
        except ValueError:
            return None
        if not isinstance(doc, dict) or doc.get("key") != key:
            return None
        record = doc.get("record")
        return record if isinstance(record, dict) else None

    def put(self, key: str, record: dict[str, Any]) -> str | Path:
        """Store ``record`` under ``key`` atomically (tmp file + rename; on object storage a
        temporary key, then published)."""
        target = self.path(key)
        payload = json.dumps({"key": key, "record": record}, ensure_ascii=False, indent=1)
        if isinstance(target, Path):
            atomic_write_text(target, payload, fsync=True)
        else:
            storage.write_text(target, payload)
        return target

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def __len__(self) -> int:
        if not isinstance(self.directory, Path):
            return sum(1 for n in storage.list_files(self.directory) if n.endswith(".json"))
        if not self.directory.exists():
            return 0
        return sum(1 for _ in self.directory.glob("*/*.json"))
