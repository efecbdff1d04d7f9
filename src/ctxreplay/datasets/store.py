"""The corpus store: writing sessions to hive-partitioned Parquet, reading them back.

Writing tokenises every message once (counts are stored, never recomputed), hashes each session
into a bucket and flushes whole sessions, so a session never spans two files. Reading goes through
pyarrow datasets and DuckDB; tables come back as polars frames, sessions as ``Message`` lists.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from ..errors import CtxreplayError
from ..schema import GROUND_TRUTH, MESSAGES, REJECTS, SESSIONS
from ..version import __version__
from .messages import Message, Session
from .rejects import Reject
from .rows import message_to_row, row_to_message
from .tokenizer import Tokenizer

TABLES = ("sessions", "messages", "rejects", "ground_truth")
_SCHEMAS = {
    "sessions": SESSIONS,
    "messages": MESSAGES,
    "rejects": REJECTS,
    "ground_truth": GROUND_TRUTH,
}
_PARTITIONED = ("sessions", "messages")


class CorpusError(CtxreplayError):
    pass


def bucket_of(session_id: str, buckets: int) -> int:
    """Stable hash bucket (not Python's salted ``hash``), so every process agrees."""
    return int.from_bytes(hashlib.blake2b(session_id.encode(), digest_size=8).digest()) % buckets


def auto_buckets(total_bytes: int, target_bytes: int = 128 * 1024 * 1024) -> int:
    """One bucket per ~128 MB of input, as a power of two between 1 and 256."""
    n = 1
    while n < 256 and n * target_bytes < total_bytes:
        n *= 2
    return n


def session_id_for(session: Session, prefix: str | None = None) -> str:
    key = (
        session.key
        or f"{session.source_location}#{session.source_record}#{session.source_session_id}"
    )
    digest = hashlib.sha256(f"{session.source_format}\0{key}".encode()).hexdigest()[:12]
    return f"{prefix or session.source_format}-{digest}"


def created_at() -> str:
    """Now, or ``SOURCE_DATE_EPOCH`` when set (reproducible builds, byte-identical corpora)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    moment = datetime.fromtimestamp(int(epoch), UTC) if epoch else datetime.now(UTC)
    return moment.isoformat(timespec="seconds")


@dataclasses.dataclass
class WriteCounts:
    sessions: int = 0
    messages: int = 0
    tokens: int = 0
    rejects: int = 0


class CorpusWriter:
    """Streams sessions into a corpus folder; ``close()`` writes the manifest."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        tokenizer: Tokenizer,
        *,
        buckets: int = 1,
        overwrite: bool = False,
        flush_messages: int = 200_000,
    ) -> None:
        self.path = Path(path)
        if self.path.exists() and any(self.path.iterdir()):
            if not overwrite:
                raise CorpusError(f"{self.path} exists and is not empty (use --overwrite)")
            shutil.rmtree(self.path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.tokenizer = tokenizer
        self.buckets = max(1, buckets)
        self.flush_messages = flush_messages
        self.counts = WriteCounts()
        self._sessions: list[dict[str, Any]] = []
        self._messages: list[dict[str, Any]] = []
        self._rejects: list[dict[str, Any]] = []
        self._truth: list[dict[str, Any]] = []
        self._seen: set[str] = set()
        self._part = 0
        self._token_cache: dict[str, int] = {}

    # --- tokenising ----------------------------------------------------------------------
    def count_tokens(self, messages: Sequence[Message]) -> list[int]:
        """Per message, the sum of tiktoken counts of its text fields (cached for long repeats)."""
        todo: list[str] = []
        for m in messages:
            for p in m.parts:
                for s in p.token_texts():
                    if s not in self._token_cache:
                        todo.append(s)
        if todo:
            unique = list(dict.fromkeys(todo))
            for s, n in zip(unique, self.tokenizer.count_many(unique), strict=True):
                if len(s) > 256:  # short strings are cheap to count and rarely repeat
                    self._token_cache[s] = n
                else:
                    self._token_cache.setdefault(s, n)
            if len(self._token_cache) > 200_000:
                self._token_cache.clear()
        return [
            sum(self._token_cache.get(s, 0) for p in m.parts for s in p.token_texts())
            for m in messages
        ]

    # --- adding -------------------------------------------------------------------------
    def add(self, session: Session) -> Reject | None:
        """Tokenise and buffer a validated session; a duplicate id comes back as a reject."""
        sid = session.session_id or session_id_for(session)
        if sid in self._seen:
            return Reject(
                source_location=session.source_location,
                reason="duplicate_session",
                detail=f"session {sid} ({session.source_session_id}) was already imported",
                raw=json.dumps({"source_session_id": session.source_session_id}).encode(),
                source_format=session.source_format,
                record=session.source_record,
                session_id=session.source_session_id,
            )
        self._seen.add(sid)
        tokens = self.count_tokens(session.messages)
        messages = [
            dataclasses.replace(m, tokens=t) for m, t in zip(session.messages, tokens, strict=True)
        ]
        self._messages.extend(message_to_row(sid, m) for m in messages)
        self._sessions.append(_session_row(sid, session, messages))
        self.counts.sessions += 1
        self.counts.messages += len(messages)
        self.counts.tokens += sum(tokens)
        if len(self._messages) >= self.flush_messages:
            self.flush()
        return None

    def add_reject(self, reject: Reject) -> None:
        self._rejects.append(reject.to_row())
        self.counts.rejects += 1

    def add_ground_truth(self, rows: Iterable[dict[str, Any]]) -> None:
        self._truth.extend(rows)

    # --- writing ------------------------------------------------------------------------
    def flush(self) -> None:
        if self._sessions:
            for table, rows in (("sessions", self._sessions), ("messages", self._messages)):
                by_bucket: dict[int, list[dict[str, Any]]] = defaultdict(list)
                for row in rows:
                    by_bucket[bucket_of(row["session_id"], self.buckets)].append(row)
                for bucket, bucket_rows in sorted(by_bucket.items()):
                    folder = self.path / table / f"bucket={bucket:03d}"
                    folder.mkdir(parents=True, exist_ok=True)
                    _write(
                        pa.Table.from_pylist(bucket_rows, schema=_SCHEMAS[table]),
                        folder,
                        self._part,
                    )
        for table, rows in (("rejects", self._rejects), ("ground_truth", self._truth)):
            if rows:
                folder = self.path / table
                folder.mkdir(parents=True, exist_ok=True)
                _write(pa.Table.from_pylist(rows, schema=_SCHEMAS[table]), folder, self._part)
        self._sessions, self._messages, self._rejects, self._truth = [], [], [], []
        self._part += 1

    def close(self, sources: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        self.flush()
        manifest = {
            "kind": "ctxreplay-corpus",
            "schema_version": 1,
            "ctxreplay_version": __version__,
            "created_at": created_at(),
            "tokenizer": {"name": self.tokenizer.name, "sha256": self.tokenizer.sha256},
            "buckets": self.buckets,
            "counts": dataclasses.asdict(self.counts),
            "sources": sources,
            **extra,
        }
        (self.path / "manifest.json").write_text(
            json.dumps(manifest, indent=2, sort_keys=True) + "\n"
        )
        return manifest


def _write(table: pa.Table, folder: Path, part: int) -> None:
    pq.write_table(table, folder / f"part-{part:05d}.parquet", compression="zstd")


def _session_row(sid: str, s: Session, messages: Sequence[Message]) -> dict[str, Any]:
    def usage_sum(attr: str) -> int | None:
        values = [
            getattr(m.usage, attr)
            for m in messages
            if m.usage and getattr(m.usage, attr) is not None
        ]
        return sum(values) if values else None

    visible = [m for m in messages if m.visible]
    flags = sorted({f for m in messages for f in m.flags})
    return {
        "session_id": sid,
        "source_format": s.source_format,
        "source_location": s.source_location,
        "source_record": s.source_record,
        "source_session_id": s.source_session_id,
        "workload": s.workload,
        "n_messages": len(messages),
        "n_visible_messages": len(visible),
        "n_user_turns": sum(1 for m in visible if m.is_user_turn),
        "n_tool_calls": sum(len(m.calls) for m in messages),
        "n_tool_results": sum(len(m.responses) for m in messages),
        "tokens": sum(m.tokens for m in messages),
        "system_tokens": sum(m.tokens for m in messages if m.role in ("system", "developer")),
        "tool_output_tokens": sum(m.tokens for m in messages if m.responses),
        "image_count": sum(m.image_count for m in messages),
        "file_count": sum(m.file_count for m in messages),
        "usage_prompt_tokens": usage_sum("prompt_tokens"),
        "usage_cached_tokens": usage_sum("cached_tokens"),
        "usage_completion_tokens": usage_sum("completion_tokens"),
        "flags": flags or None,
        "metadata": json.dumps(s.metadata, ensure_ascii=False, sort_keys=True, default=str),
    }


KINDS = {"ctxreplay-corpus": "corpus", "ctxreplay-run": "run"}
#: what to do to get each kind of folder
MAKE = {
    "corpus": "make one with `ctxreplay import TRACES -o CORPUS` or `ctxreplay synth -o CORPUS`",
    "run": "make one with `ctxreplay replay CORPUS --cases CASES -o RUN`",
}


def read_manifest(
    path: Path, kind: str, error: type[CtxreplayError] = CtxreplayError
) -> dict[str, Any]:
    """The manifest of a ``kind`` folder ("corpus" or "run"), or ``error`` saying what the path
    is instead and how to make the right thing."""
    manifest = path / "manifest.json"
    if path.is_file():
        raise error(f"{path} is a file, not a {kind} folder; {MAKE[kind]}")
    if not manifest.is_file():
        raise error(f"{path} is not a ctxreplay {kind} (no manifest.json); {MAKE[kind]}")
    try:
        doc = json.loads(manifest.read_text())
    except (OSError, ValueError) as e:
        raise error(
            f"{manifest} is damaged ({e}); re-run the command that made this {kind}"
        ) from None
    found = KINDS.get(doc.get("kind", "")) if isinstance(doc, dict) else None
    if found is None:
        raise error(f"{manifest} is not a ctxreplay manifest; {MAKE[kind]}")
    if found != kind:
        hint = f" (its corpus is {doc['corpus_path']})" if found == "run" else ""
        raise error(f"{path} is a ctxreplay {found}, not a {kind}{hint}; {MAKE[kind]}")
    return doc


def frame_of(table: pa.Table) -> pl.DataFrame:
    """An Arrow table as a polars frame (``pl.from_arrow`` is typed to maybe give a Series)."""
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame


class Corpus:
    """A corpus folder, read lazily."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.manifest: dict[str, Any] = read_manifest(self.path, "corpus", CorpusError)
        self.buckets: int = int(self.manifest.get("buckets", 1))

    @property
    def tokenizer_name(self) -> str:
        return str(self.manifest["tokenizer"]["name"])

    def fingerprint(self) -> str:
        """Hash of the manifest: changes whenever the corpus is rewritten."""
        return hashlib.sha256((self.path / "manifest.json").read_bytes()).hexdigest()[:16]

    def _dataset(self, table: str) -> ds.Dataset | None:
        folder = self.path / table
        if not folder.exists():
            return None
        if table in _PARTITIONED:
            return ds.dataset(
                folder, format="parquet", partitioning="hive", schema=_with_bucket(table)
            )
        return ds.dataset(folder, format="parquet", schema=_SCHEMAS[table])

    def table(self, table: str, columns: list[str] | None = None, filter: Any = None) -> pa.Table:
        dataset = self._dataset(table)
        if dataset is None:
            schema = _SCHEMAS[table]
            return schema.empty_table() if columns is None else schema.empty_table().select(columns)
        return dataset.to_table(columns=columns, filter=filter)

    def sessions(self) -> pl.DataFrame:
        return frame_of(self.table("sessions")).sort("session_id")

    def messages(
        self, session_ids: Sequence[str] | None = None, columns: list[str] | None = None
    ) -> pl.DataFrame:
        flt = ds.field("session_id").isin(list(session_ids)) if session_ids is not None else None
        return frame_of(self.table("messages", columns, flt)).sort(["session_id", "seq"])

    def rejects(self) -> pl.DataFrame:
        return pl.from_arrow(self.table("rejects"))  # type: ignore[return-value]

    def ground_truth(self) -> pl.DataFrame:
        return pl.from_arrow(self.table("ground_truth"))  # type: ignore[return-value]

    def load_session(self, session_id: str) -> list[Message]:
        flt = (ds.field("bucket") == bucket_of(session_id, self.buckets)) & (
            ds.field("session_id") == session_id
        )
        rows = self.table("messages", filter=flt).sort_by("seq").to_pylist()
        if not rows:
            raise CorpusError(f"no session {session_id!r} in {self.path}")
        return [row_to_message(r) for r in rows]

    def iter_sessions(
        self, session_ids: Iterable[str] | None = None
    ) -> Iterator[tuple[str, list[Message]]]:
        """Sessions in (bucket, session id) order, reading one bucket at a time."""
        wanted = set(session_ids) if session_ids is not None else None
        for bucket in range(self.buckets):
            flt = ds.field("bucket") == bucket
            if wanted is not None:
                ids = sorted(s for s in wanted if bucket_of(s, self.buckets) == bucket)
                if not ids:
                    continue
                flt = flt & ds.field("session_id").isin(ids)
            table = self.table("messages", filter=flt)
            if table.num_rows == 0:
                continue
            table = table.sort_by([("session_id", "ascending"), ("seq", "ascending")])
            current: str | None = None
            batch: list[Message] = []
            for row in table.to_pylist():
                if row["session_id"] != current:
                    if current is not None:
                        yield current, batch
                    current, batch = row["session_id"], []
                batch.append(row_to_message(row))
            if current is not None:
                yield current, batch

    def connect(self) -> duckdb.DuckDBPyConnection:
        """A DuckDB connection with one view per table (``sessions``, ``messages``, ...)."""
        from ..sqlview import connect_folder

        return connect_folder(self.path)

    def sql(self, query: str) -> pl.DataFrame:
        with self.connect() as con:
            return con.sql(query).pl()


def _with_bucket(table: str) -> pa.Schema:
    return _SCHEMAS[table].append(pa.field("bucket", pa.int32()))
