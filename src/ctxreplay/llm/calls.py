"""The ``calls`` table of a run: one row per model call, success, failure or cache hit.

A client given a run folder appends a row for every :meth:`~.client.ModelClient.complete`
(schema :data:`ctxreplay.schema.CALLS`): who called (the policy or judge label), the request
hash (the cache key), endpoint, model, ``status`` (``ok`` | ``cached`` | ``error``), the reason of
a failure, attempts, tokens, cost, latency. ``ctxreplay sql RUN "SELECT status, count(*) FROM
calls GROUP BY 1"`` reads it.

Rows are buffered and written as Parquet parts ``RUN/calls/part-<pid>-<token>-<n>.parquet``, one
per flush, each written atomically (temporary file + rename), so any number of processes and
threads can append at once and a reader never sees half a file. A log flushes every
``flush_rows`` rows or ``flush_seconds`` seconds (checked as rows arrive), when closed (the
client's ``close``, which the engines call at the end of a chunk or a judge run), and at the
interpreter's exit as a last resort.

No secret reaches a row: error reasons are redacted again here, and the endpoint is written
without user info or query string.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
import weakref
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .. import storage
from ..schema import CALLS
from .completion import Completion, ModelCallError, Secrets, redact

FOLDER = "calls"


def safe_endpoint(base_url: str) -> str:
    """``base_url`` without credentials or query string (keys sometimes travel there)."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


@dataclass(frozen=True)
class CallSource:
    """What every row of one client shares."""

    caller: str
    endpoint: str
    model: str
    secret: Secrets = None

    def row(
        self,
        request_hash: str,
        status: str,
        latency_s: float,
        outcome: Completion | ModelCallError,
    ) -> dict[str, Any]:
        """One row of the table: ``outcome`` is the answer (ok, cached) or the failure."""
        row: dict[str, Any] = {
            "finished_at": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "caller": self.caller,
            "request_hash": request_hash,
            "endpoint": self.endpoint,
            "model": self.model,
            "status": status,
            "error": None,
            "attempts": outcome.attempts,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "usd": None,
            "latency_s": round(latency_s, 6),
            "cache_hit": status == "cached",
        }
        if isinstance(outcome, ModelCallError):
            row["error"] = redact(outcome.reason, self.secret)[:500]
            return row
        row["prompt_tokens"] = outcome.usage.prompt_tokens
        row["completion_tokens"] = outcome.usage.completion_tokens
        row["usd"] = 0.0 if outcome.cache_hit else outcome.usd  # a cache hit spent nothing
        return row


class _Parts:
    """The buffer and the part files of one log; kept apart so the exit hook can flush it."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = folder
        self.token = uuid.uuid4().hex[:8]
        self.rows: list[dict[str, Any]] = []
        self.written = 0
        self.lock = threading.Lock()

    def flush(self) -> str | Path | None:
        with self.lock:
            rows, self.rows = self.rows, []
            if not rows:
                return None
            name = f"part-{os.getpid()}-{self.token}-{self.written:05d}.parquet"
            path = storage.join(self.folder, name)
            self.written += 1
        storage.write_table(path, rows, CALLS)
        return path


class CallLog:
    """Appends rows to ``RUN/calls/``; safe for threads, one set of part files per log."""

    def __init__(
        self,
        run_dir: str | os.PathLike[str],
        *,
        flush_rows: int = 256,
        flush_seconds: float = 30.0,
    ) -> None:
        self.folder = storage.join(storage.location(run_dir), FOLDER)
        self.flush_rows = max(1, flush_rows)
        self.flush_seconds = flush_seconds
        self._parts = _Parts(self.folder)
        self._last_flush = time.monotonic()
        self._finalizer = weakref.finalize(self, self._parts.flush)

    def add(self, row: dict[str, Any]) -> None:
        with self._parts.lock:
            self._parts.rows.append(row)
            due = len(self._parts.rows) >= self.flush_rows
        if due or time.monotonic() - self._last_flush >= self.flush_seconds:
            self.flush()

    def flush(self) -> str | Path | None:
        """Write the buffered rows as one part; the part's path, or None when there were none."""
        self._last_flush = time.monotonic()
        return self._parts.flush()

    def close(self) -> None:
        self.flush()
