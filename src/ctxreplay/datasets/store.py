"""The corpus store: writing sessions to hive-partitioned Parquet, reading them back.

Writing tokenises every message once (counts are stored, never recomputed), hashes each session
into a bucket and flushes whole sessions, so a session never spans two files. Reading goes through
pyarrow datasets and DuckDB; tables come back as polars frames, sessions as ``Message`` lists.

A corpus is written atomically: ``CorpusWriter`` builds it in a hidden sibling folder
(``.NAME.build-PID-*.tmp``) and renames it into place when it closes, so a failed or killed
import leaves no half corpus under the real name (and the folder it would have replaced stays as
it was). Build folders of processes that no longer run are removed by the next writer. A session
whose values cannot be stored (a number out of the column's range, text that is not UTF-8) comes
back as a reject (``unstorable``) instead of failing the whole write.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import re
import shutil
import tempfile
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
from .rejects import Reject, clip, storable
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


_CONVERSION_ERRORS = (pa.ArrowException, ValueError, TypeError, OverflowError)
FLAG_METADATA_NON_FINITE = "metadata_non_finite"
FLAG_METADATA_ESCAPED = "metadata_escaped"
_BUILD = re.compile(r"^\.(?P<name>.+)\.(?:build|old)-(?P<pid>\d+)-.*\.tmp$")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def remove_stale_builds(target: Path) -> list[Path]:
    """Clean up after writers of ``target`` that were killed: remove their build folders, and
    put back a previous corpus one of them had moved aside just before it died. What was
    removed."""
    removed: list[Path] = []
    if not target.parent.is_dir():
        return removed
    for sibling in sorted(target.parent.iterdir()):
        found = _BUILD.match(sibling.name)
        if not found or found["name"] != target.name or _alive(int(found["pid"])):
            continue
        moved = sibling / "corpus"
        if ".old-" in sibling.name and moved.is_dir() and not target.exists():
            os.replace(moved, target)  # killed between moving the old corpus out and the new in
        shutil.rmtree(sibling, ignore_errors=True)
        removed.append(sibling)
    return removed


class CorpusWriter:
    """Streams sessions into a corpus folder; ``close()`` writes the manifest and publishes the
    folder (built beside it, renamed into place); ``abort()`` (or leaving a ``with`` block on an
    exception) removes the build and leaves ``path`` as it was."""

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
        self.path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_builds(self.path)
        if self.path.exists() and not self.path.is_dir():
            raise CorpusError(f"{self.path} is a file, not a folder")
        if self.path.exists() and any(self.path.iterdir()) and not overwrite:
            raise CorpusError(f"{self.path} exists and is not empty (use --overwrite)")
        self.overwrite = overwrite
        self.build = Path(
            tempfile.mkdtemp(
                prefix=f".{self.path.name}.build-{os.getpid()}-",
                suffix=".tmp",
                dir=self.path.parent,
            )
        )
        self.tokenizer = tokenizer
        self.buckets = max(1, buckets)
        self.flush_messages = flush_messages
        self.counts = WriteCounts()
        self._sessions: list[dict[str, Any]] = []
        self._messages: list[dict[str, Any]] = []
        self._rejects: list[dict[str, Any]] = []
        self._truth: list[dict[str, Any]] = []
        self._seen: set[str] = set()
        self._pending: dict[str, Session] = {}  # buffered sessions by id, until flushed
        self._late: list[Reject] = []
        self._part = 0
        self._token_cache: dict[str, int] = {}
        self.closed = False

    def __enter__(self) -> CorpusWriter:
        return self

    def __exit__(self, kind: Any, value: Any, traceback: Any) -> None:
        if not self.closed:
            self.abort()

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
        """Tokenise and buffer a validated session; a duplicate id (or a session whose rows
        cannot be made) comes back as a reject."""
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
        tokens = self.count_tokens(session.messages)
        messages = [
            dataclasses.replace(m, tokens=t) for m, t in zip(session.messages, tokens, strict=True)
        ]
        try:
            message_rows = [message_to_row(sid, m) for m in messages]
            session_row = _session_row(sid, session, messages)
        except (ValueError, TypeError, OverflowError, RecursionError) as e:
            return _unstorable(session, e)
        self._seen.add(sid)
        self._pending[sid] = session
        self._messages.extend(message_rows)
        self._sessions.append(session_row)
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

    def take_late_rejects(self) -> list[Reject]:
        """Sessions ``add`` accepted that could not be stored when flushed (already counted out
        of ``counts`` and into the rejects table); the caller corrects its own counts."""
        late, self._late = self._late, []
        return late

    # --- writing ------------------------------------------------------------------------
    def flush(self) -> None:
        if self._sessions:
            for table, by_bucket in self._arrow_tables().items():
                for bucket, arrow in sorted(by_bucket.items()):
                    folder = self.build / table / f"bucket={bucket:03d}"
                    folder.mkdir(parents=True, exist_ok=True)
                    _write(arrow, folder, self._part)
        for table, rows in (("rejects", self._rejects), ("ground_truth", self._truth)):
            if rows:
                folder = self.build / table
                folder.mkdir(parents=True, exist_ok=True)
                _write(pa.Table.from_pylist(rows, schema=_SCHEMAS[table]), folder, self._part)
        self._sessions, self._messages, self._rejects, self._truth = [], [], [], []
        self._pending = {}
        self._part += 1

    def _arrow_tables(self) -> dict[str, dict[int, pa.Table]]:
        """The buffered sessions and messages as Arrow tables by bucket. A session whose rows
        do not convert is taken back out (a late ``unstorable`` reject), the rest are written."""
        while True:
            try:
                out: dict[str, dict[int, pa.Table]] = {}
                for table, rows in (("sessions", self._sessions), ("messages", self._messages)):
                    by_bucket: dict[int, list[dict[str, Any]]] = defaultdict(list)
                    for row in rows:
                        by_bucket[bucket_of(row["session_id"], self.buckets)].append(row)
                    out[table] = {
                        b: pa.Table.from_pylist(r, schema=_SCHEMAS[table])
                        for b, r in by_bucket.items()
                    }
                return out
            except _CONVERSION_ERRORS:
                bad = self._unconvertible()
                if not bad:
                    raise
                for sid, error in bad.items():
                    self._drop(sid, error)

    def _unconvertible(self) -> dict[str, Exception]:
        """Buffered sessions whose session or message rows do not convert, with the error."""
        rows: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
        for table, buffered in (("sessions", self._sessions), ("messages", self._messages)):
            for row in buffered:
                rows[row["session_id"]][table].append(row)
        bad: dict[str, Exception] = {}
        for sid, tables in rows.items():
            for table, session_rows in tables.items():
                try:
                    pa.Table.from_pylist(session_rows, schema=_SCHEMAS[table])
                except _CONVERSION_ERRORS as e:
                    bad[sid] = e
                    break
        return bad

    def _drop(self, sid: str, error: Exception) -> None:
        """Take a buffered session back out: it becomes a reject."""
        n_messages = sum(1 for r in self._messages if r["session_id"] == sid)
        tokens = sum(r.get("tokens") or 0 for r in self._messages if r["session_id"] == sid)
        self._sessions = [r for r in self._sessions if r["session_id"] != sid]
        self._messages = [r for r in self._messages if r["session_id"] != sid]
        self._seen.discard(sid)
        self.counts.sessions -= 1
        self.counts.messages -= n_messages
        self.counts.tokens -= tokens if isinstance(tokens, int) else 0
        session = self._pending.pop(sid, None)
        if session is not None:
            reject = _unstorable(session, error)
        else:
            reject = Reject("", "unstorable", clip(str(error)), b"", session_id=sid)
        self._late.append(reject)
        self.add_reject(reject)

    def close(self, sources: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        """Flush, write the manifest, and move the finished corpus to ``path``."""
        try:
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
            (self.build / "manifest.json").write_text(
                json.dumps(manifest, indent=2, sort_keys=True) + "\n"
            )
            self._publish()
        except BaseException:
            self.abort()
            raise
        self.closed = True
        return manifest

    def _publish(self) -> None:
        old: Path | None = None
        if self.path.exists():
            if any(self.path.iterdir()) and not self.overwrite:
                raise CorpusError(f"{self.path} was filled while importing (use --overwrite)")
            old = Path(
                tempfile.mkdtemp(
                    prefix=f".{self.path.name}.old-{os.getpid()}-",
                    suffix=".tmp",
                    dir=self.path.parent,
                )
            )
            os.replace(self.path, old / "corpus")
        try:
            os.replace(self.build, self.path)
        except BaseException:
            if old is not None:  # put the previous corpus back
                os.replace(old / "corpus", self.path)
                shutil.rmtree(old, ignore_errors=True)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)

    def abort(self) -> None:
        """Remove the build folder; ``path`` stays as it was."""
        self.closed = True
        with contextlib.suppress(OSError):
            shutil.rmtree(self.build)


def _unstorable(session: Session, error: BaseException) -> Reject:
    return Reject(
        source_location=session.source_location,
        reason="unstorable",
        detail=clip(f"the session cannot be stored: {type(error).__name__}: {error}"),
        raw=json.dumps(
            {"source_session_id": storable(session.source_session_id)}, ensure_ascii=True
        ).encode(),
        source_format=session.source_format,
        record=session.source_record,
        session_id=session.source_session_id,
    )


def _finite(value: Any) -> tuple[Any, bool]:
    """``value`` with NaN and infinite numbers replaced by None, and whether any was."""
    if isinstance(value, float) and not math.isfinite(value):
        return None, True
    if isinstance(value, dict):
        out, changed = {}, False
        for k, v in value.items():
            out[k], c = _finite(v)
            changed = changed or c
        return out, changed
    if isinstance(value, list | tuple):
        items = [_finite(v) for v in value]
        return [v for v, _ in items], any(c for _, c in items)
    return value, False


def metadata_json(metadata: dict[str, Any]) -> tuple[str, list[str]]:
    """Session metadata as JSON text that any JSON reader accepts, and the flags for what had
    to change (non-finite numbers to null, bytes that are not UTF-8 escaped)."""
    flags: list[str] = []
    try:
        text = json.dumps(
            metadata, ensure_ascii=False, sort_keys=True, default=str, allow_nan=False
        )
    except ValueError:
        metadata, _ = _finite(metadata)
        flags.append(FLAG_METADATA_NON_FINITE)
        text = json.dumps(metadata, ensure_ascii=False, sort_keys=True, default=str)
    except TypeError:  # keys of mixed types cannot be sorted
        text = json.dumps(metadata, ensure_ascii=False, default=str)
    if storable(text) is not text:
        text = json.dumps(json.loads(text), ensure_ascii=True, sort_keys=True)
        flags.append(FLAG_METADATA_ESCAPED)
    return text, flags


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
    metadata, metadata_flags = metadata_json(s.metadata)
    flags = sorted({f for m in messages for f in m.flags} | set(metadata_flags))
    return {
        "session_id": sid,
        "source_format": s.source_format,
        "source_location": storable(s.source_location),
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
        "metadata": metadata,
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


class DamagedCorpusError(CorpusError):
    """A corpus file that can no longer be read as written (truncated, altered): the message
    names it and how to make the corpus again."""


#: how a damaged corpus is repaired
REMAKE = (
    "make the corpus again: re-run the `ctxreplay import` or `ctxreplay synth` that made it, "
    "with --overwrite"
)


def _damaged_part(folder: Path) -> tuple[Path, str] | None:
    """The first Parquet file under ``folder`` that does not read, and why."""
    for part in sorted(folder.rglob("*.parquet")):
        try:
            pq.read_table(part)
        except (pa.ArrowException, OSError, ValueError) as e:
            line = (str(e).strip().splitlines() or [type(e).__name__])[0]
            line = re.sub(r"^Could not open Parquet input source '[^']*': ", "", line)
            return part, line.split(". Either the file", 1)[0][:160]
    return None


class Corpus:
    """A corpus folder, read lazily. A damaged file raises :class:`DamagedCorpusError` naming
    it, never a reader's traceback."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.manifest: dict[str, Any] = read_manifest(self.path, "corpus", CorpusError)
        try:
            self.buckets: int = max(1, int(self.manifest.get("buckets", 1)))
            str(self.manifest["tokenizer"]["name"])
        except (KeyError, TypeError, ValueError) as e:
            raise DamagedCorpusError(
                f"{self.path / 'manifest.json'} is damaged (bad {e}); {REMAKE}"
            ) from None

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
        try:
            dataset = self._dataset(table)
            if dataset is None:
                schema = _SCHEMAS[table]
                empty = schema.empty_table()
                return empty if columns is None else empty.select(columns)
            return dataset.to_table(columns=columns, filter=filter)
        except (pa.ArrowException, OSError, ValueError):
            folder = self.path / table
            if folder.exists() and not folder.is_dir():
                raise DamagedCorpusError(f"{folder} is a file, not a folder; {REMAKE}") from None
            bad = _damaged_part(folder) if folder.is_dir() else None
            if bad is None:
                raise  # not damage: a bug, with its traceback
            raise DamagedCorpusError(f"{bad[0]} is damaged ({bad[1]}); {REMAKE}") from None

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

        try:
            return connect_folder(self.path)
        except duckdb.Error:
            self._raise_damaged()
            raise

    def sql(self, query: str) -> pl.DataFrame:
        with self.connect() as con:
            try:
                return con.sql(query).pl()
            except duckdb.Error:
                self._raise_damaged()
                raise

    def _raise_damaged(self) -> None:
        """:class:`DamagedCorpusError` naming the first table file that does not read, if any."""
        for table in TABLES:
            folder = self.path / table
            bad = _damaged_part(folder) if folder.is_dir() else None
            if bad is not None:
                raise DamagedCorpusError(f"{bad[0]} is damaged ({bad[1]}); {REMAKE}") from None


def _with_bucket(table: str) -> pa.Schema:
    return _SCHEMAS[table].append(pa.field("bucket", pa.int32()))
