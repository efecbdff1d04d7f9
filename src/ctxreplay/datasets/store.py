"""The corpus store: writing sessions to hive-partitioned Parquet, reading them back.

Writing tokenises every message once (counts are stored, never recomputed), hashes each session
into a bucket and flushes whole sessions, so a session never spans two files. Memory is bounded by
a chunk size, not by the corpus: once a chunk of rows is held it is written as one part per
bucket, sorted by (session id, seq) in row groups of a few MB, so a reader asking for some
sessions reads only the row groups whose session-id statistics can hold them. Reading goes through
pyarrow datasets and DuckDB; tables come back as polars frames, sessions as ``Message`` lists.

A corpus is written atomically: ``CorpusWriter`` builds it in a hidden sibling folder
(``.NAME.build-PID-*.tmp``) and renames it into place when it closes, so a failed or killed
import leaves no half corpus under the real name (and the folder it would have replaced stays as
it was). Build folders of processes that no longer run are removed by the next writer. A session
whose values cannot be stored (a number out of the column's range, text that is not UTF-8) comes
back as a reject (``unstorable``) instead of failing the whole write.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import hashlib
import heapq
import itertools
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
from typing import Any, Literal, cast, overload

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from .. import arrow_memory, storage
from ..errors import CtxreplayError
from ..schema import GROUND_TRUTH, MESSAGES, REJECTS, SESSIONS, rows_table
from ..version import __version__
from .importers.reader import file_sha256
from .messages import Message, Part, Session
from .rejects import Reject, clip, storable
from .rows import message_to_row, row_to_message
from .tokenizer import CountCache, Tokenizer

arrow_memory.choose_pool()  # the allocator of pyarrow's Python calls

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
#: folder of a corpus holding persisted tool outputs, by sha256
PERSISTED = "persisted"
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


#: rows held in memory before they are written as a part, in bytes of their text (``ctxreplay
#: import --chunk-mb``): the writer's memory follows this, not the size of the corpus
DEFAULT_CHUNK_BYTES = 32 * 1024 * 1024
#: about how much one row group holds: a reader asking for a few sessions reads the row groups
#: whose session-id range can hold them (parts are sorted by session), not a whole bucket
DEFAULT_ROW_GROUP_BYTES = 4 * 1024 * 1024
#: added sessions wait as Python rows until this much has gathered, then become Arrow (compact)
_STAGE_BYTES = 4 * 1024 * 1024
_STAGE_ROWS = 8192
#: what a row costs besides its text, in the estimate of buffered bytes
_ROW_BYTES = 64
#: characters of long strings the token cache keeps (repeated system prompts and tool schemas)
_TOKEN_CACHE_CHARS = 4 * 1024 * 1024
#: a buffered row's estimated size, under a key that is no column (Arrow ignores it)
_SIZE = "\0bytes"
_BOOKKEEPING = frozenset({_SIZE})


@dataclasses.dataclass(frozen=True, slots=True)
class _Span:
    """The rows of one session in a buffered Arrow batch (or of one reject)."""

    key: str
    start: int
    stop: int
    bytes: int
    #: each row's estimated bytes, kept only for a session larger than a row group
    sizes: tuple[int, ...] | None = None


class CorpusWriter:
    """Streams sessions into a corpus folder; ``close()`` writes the manifest and publishes the
    folder (built beside it, renamed into place); ``abort()`` (or leaving a ``with`` block on an
    exception) removes the build and leaves ``path`` as it was.

    Memory is bounded by ``chunk_bytes``: added sessions become Arrow tables a few MB at a time,
    and once ``chunk_bytes`` of rows (or ``flush_messages`` messages) are held they are written
    as one part per bucket, sorted by (session id, seq), in row groups of about
    ``row_group_bytes``, so that readers skip row groups by their session-id statistics.
    ``close()`` then merges each bucket's parts into one (``compact``), a few at a time, so
    that reading a chunk of sessions opens one file per bucket, not one per flush.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        tokenizer: Tokenizer,
        *,
        buckets: int = 1,
        overwrite: bool = False,
        flush_messages: int = 200_000,
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        row_group_bytes: int | None = None,
        compact: bool = True,
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
        self.chunk_bytes = max(1, chunk_bytes)
        if row_group_bytes is None:
            row_group_bytes = min(DEFAULT_ROW_GROUP_BYTES, self.chunk_bytes // 4)
        self.row_group_bytes = max(1, row_group_bytes)
        self.compact = compact
        self.counts = WriteCounts()
        # rows of added sessions not yet made Arrow, and the sessions they came from (without
        # their messages), to reject a session whose rows do not convert
        self._stage: dict[str, list[dict[str, Any]]] = {t: [] for t in _PARTITIONED}
        self._pending: dict[str, Session] = {}
        self._stage_bytes = 0
        # Arrow tables waiting for the next part, by table and bucket, with their sessions
        self._batches: dict[str, dict[int, list[tuple[pa.Table, list[_Span]]]]] = {
            t: defaultdict(list) for t in _PARTITIONED
        }
        self._rejects: list[dict[str, Any]] = []
        self._truth: list[dict[str, Any]] = []
        self._held_bytes = 0
        self._held_messages = 0
        self._seen: set[str] = set()
        self._late: list[Reject] = []
        self._part = 0
        self._token_cache = CountCache(tokenizer, _TOKEN_CACHE_CHARS)
        self.closed = False

    def __enter__(self) -> CorpusWriter:
        return self

    def __exit__(self, kind: Any, value: Any, traceback: Any) -> None:
        if not self.closed:
            self.abort()

    # --- tokenising ----------------------------------------------------------------------
    def count_tokens(self, messages: Sequence[Message]) -> list[int]:
        """Per message, the sum of tiktoken counts of its text fields (``count_part_tokens``)."""
        return [sum(counts) for counts in self.count_part_tokens(messages)]

    def count_part_tokens(self, messages: Sequence[Message]) -> list[list[int]]:
        """Per message, per part, the sum of tiktoken counts of its text fields. Counts of
        strings seen before come from a cache bounded in characters, so repeated prompts are
        counted once and no text is kept alive past the cache's budget."""
        cache = self._token_cache
        counts: dict[str, int] = {}
        todo: list[str] = []
        for m in messages:
            for p in m.parts:
                for s in p.token_texts():
                    if s in counts:
                        continue
                    found = cache.get(s)
                    if found is None:
                        todo.append(s)
                        counts[s] = -1
                    else:
                        counts[s] = found
        if todo:
            for s, n in zip(todo, self.tokenizer.count_many(todo), strict=True):
                counts[s] = n
                cache.put(s, n)
        return [[sum(counts[s] for s in p.token_texts()) for p in m.parts] for m in messages]

    # --- adding -------------------------------------------------------------------------
    def add(self, session: Session) -> Reject | None:
        """Tokenise and buffer a validated session; a duplicate id (or a session whose rows
        cannot be made) comes back as a reject. A full buffer is written first, here rather than
        after this session: by now the importer has let go of the record before."""
        if self._held_bytes >= self.chunk_bytes or self._held_messages >= self.flush_messages:
            self.flush()
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
        self._keep_payloads(session)
        per_part = self.count_part_tokens(session.messages)
        tokens = [sum(counts) for counts in per_part]
        messages = [
            dataclasses.replace(m, tokens=t) for m, t in zip(session.messages, tokens, strict=True)
        ]
        try:
            message_rows = [
                message_to_row(sid, m, counts) for m, counts in zip(messages, per_part, strict=True)
            ]
            session_row = _session_row(sid, session, messages)
        except (ValueError, TypeError, OverflowError, RecursionError) as e:
            return _unstorable(session, e)
        if any(a["seq"] > b["seq"] for a, b in itertools.pairwise(message_rows)):
            message_rows.sort(key=lambda row: row["seq"])  # a part is sorted by (session, seq)
        added = 0
        for row in message_rows:
            row[_SIZE] = size = _message_bytes(row)
            added += size
        session_row[_SIZE] = size = _ROW_BYTES + len(session_row["metadata"])
        added += size
        self._seen.add(sid)
        self._pending[sid] = dataclasses.replace(session, messages=[])
        self._stage["messages"].extend(message_rows)
        self._stage["sessions"].append(session_row)
        self._stage_bytes += added
        self._held_bytes += added
        self._held_messages += len(messages)
        self.counts.sessions += 1
        self.counts.messages += len(messages)
        self.counts.tokens += sum(tokens)
        if self._stage_bytes >= _STAGE_BYTES or len(self._stage["messages"]) >= _STAGE_ROWS:
            self._convert()
        return None

    def _keep_payloads(self, session: Session) -> None:
        """Copy each file the session links as a persisted tool output (its metadata's
        ``persisted_outputs``: ``file`` and ``sha256``) into ``persisted/<sha256>``, so the
        corpus gives it back byte for byte when the file is gone (``Corpus.persisted_output``);
        ``stored`` says whether the copy is there and matches the hash the importer read."""
        links = session.metadata.get("persisted_outputs")
        for entry in links.values() if isinstance(links, dict) else ():
            digest, source = entry.get("sha256"), entry.get("file")
            if not isinstance(digest, str) or not isinstance(source, str):
                continue
            target = self.build / PERSISTED / digest
            if not target.exists():
                target.parent.mkdir(exist_ok=True)
                try:
                    shutil.copyfile(source, target)
                except OSError:
                    entry["stored"] = False
                    continue
                if file_sha256(target) != digest:  # the file changed since it was read
                    target.unlink()
                    entry["stored"] = False
                    continue
            entry["stored"] = True

    def add_reject(self, reject: Reject) -> None:
        row = reject.to_row()
        row[_SIZE] = size = _ROW_BYTES + len(row["raw"] or b"") + len(row["detail"] or "")
        self._rejects.append(row)
        self._held_bytes += size
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
        """Write what is held as one part: a file per bucket and table, and the rejects."""
        self._convert()
        for table in _PARTITIONED:
            for bucket, batches in sorted(self._batches[table].items()):
                folder = self.build / table / f"bucket={bucket:03d}"
                folder.mkdir(parents=True, exist_ok=True)
                _write(batches, folder / f"part-{self._part:05d}.parquet", self.row_group_bytes)
            self._batches[table].clear()
        for table, rows in (("rejects", self._rejects), ("ground_truth", self._truth)):
            if rows:
                folder = self.build / table
                folder.mkdir(parents=True, exist_ok=True)
                spans = [_Span("", i, i + 1, r.pop(_SIZE, _ROW_BYTES)) for i, r in enumerate(rows)]
                arrow = rows_table(rows, _SCHEMAS[table])
                rows.clear()
                path = folder / f"part-{self._part:05d}.parquet"
                _write([(arrow, spans)], path, self.row_group_bytes, by_key=False)
                del arrow
        self._held_bytes = self._held_messages = 0
        self._part += 1

    def _convert(self) -> None:
        """Make the staged rows Arrow tables by bucket. A session whose rows do not convert is
        taken back out (a late ``unstorable`` reject), the rest are kept."""
        if not self._stage["sessions"]:
            return
        while True:
            try:
                out: dict[str, dict[int, tuple[pa.Table, list[_Span]]]] = {}
                for table in _PARTITIONED:
                    by_bucket: dict[int, list[dict[str, Any]]] = defaultdict(list)
                    for row in self._stage[table]:
                        by_bucket[bucket_of(row["session_id"], self.buckets)].append(row)
                    out[table] = {
                        b: (
                            rows_table(r, _SCHEMAS[table], _BOOKKEEPING),
                            _spans(r, self.row_group_bytes),
                        )
                        for b, r in by_bucket.items()
                    }
                break
            except _CONVERSION_ERRORS:
                bad = self._unconvertible()
                if not bad:
                    raise
                for sid, error in bad.items():
                    self._drop(sid, error)
        for table, by_table in out.items():
            for bucket, batch in by_table.items():
                self._batches[table][bucket].append(batch)
        self._stage = {t: [] for t in _PARTITIONED}
        self._pending = {}
        self._stage_bytes = 0

    def _unconvertible(self) -> dict[str, Exception]:
        """Staged sessions whose session or message rows do not convert, with the error."""
        rows: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
        for table in _PARTITIONED:
            for row in self._stage[table]:
                rows[row["session_id"]][table].append(row)
        bad: dict[str, Exception] = {}
        for sid, tables in rows.items():
            for table, session_rows in tables.items():
                try:
                    rows_table(session_rows, _SCHEMAS[table], _BOOKKEEPING)
                except _CONVERSION_ERRORS as e:
                    bad[sid] = e
                    break
        return bad

    def _drop(self, sid: str, error: Exception) -> None:
        """Take a staged session back out: it becomes a reject."""
        mine = [r for r in self._stage["messages"] if r["session_id"] == sid]
        tokens = sum(r.get("tokens") or 0 for r in mine)
        size = sum(r[_SIZE] for t in _PARTITIONED for r in self._stage[t] if r["session_id"] == sid)
        for table in _PARTITIONED:
            self._stage[table] = [r for r in self._stage[table] if r["session_id"] != sid]
        self._stage_bytes -= size
        self._held_bytes -= size
        self._held_messages -= len(mine)
        self._seen.discard(sid)
        self.counts.sessions -= 1
        self.counts.messages -= len(mine)
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
            for table in _PARTITIONED if self.compact else ():
                root = self.build / table
                for folder in sorted(root.glob("bucket=*")) if root.is_dir() else ():
                    compact_bucket(folder, _SCHEMAS[table], self.row_group_bytes)
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


def _message_bytes(row: dict[str, Any]) -> int:
    """A message row's size in the buffer: its text (parts, ids) plus a fixed cost."""
    size = _ROW_BYTES * (1 + len(row["parts"]))
    for part in row["parts"]:
        for value in part.values():
            if isinstance(value, str):
                size += len(value)
    return size


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


def _spans(rows: list[dict[str, Any]], row_group_bytes: int) -> list[_Span]:
    """The sessions of buffered rows (each session's rows are consecutive)."""
    spans: list[_Span] = []
    start = 0
    for i in range(1, len(rows) + 1):
        if i == len(rows) or rows[i]["session_id"] != rows[start]["session_id"]:
            sizes = tuple(r[_SIZE] for r in rows[start:i])
            total = sum(sizes)
            big = sizes if total > row_group_bytes and len(sizes) > 1 else None
            spans.append(_Span(rows[start]["session_id"], start, i, total, big))
            start = i
    return spans


def _write(
    batches: list[tuple[pa.Table, list[_Span]]],
    path: Path,
    row_group_bytes: int,
    by_key: bool = True,
) -> None:
    """One part file of the rows of ``batches``: sessions in id order (``by_key``; rows within
    a session are in seq order already), cut into row groups of about ``row_group_bytes``, so
    each row group covers a narrow session-id range that readers skip by. Row groups are views
    of the batches: nothing is copied before the Parquet writer encodes it."""
    spans = [(span, k) for k, (_, batch_spans) in enumerate(batches) for span in batch_spans]
    if by_key:
        spans.sort(key=lambda item: item[0].key)
    with _part_writer(path, batches[0][0].schema, by_key) as writer:
        for group in _row_groups(spans, row_group_bytes):
            pieces = [batches[k][0].slice(start, stop - start) for k, start, stop in group]
            rows = sum(stop - start for _, start, stop in group)
            writer.write_table(pa.concat_tables(pieces), row_group_size=rows)


def _part_writer(path: Path, schema: pa.Schema, by_key: bool = True) -> pq.ParquetWriter:
    """The Parquet writer of a part: zstd, statistics on the short flat columns (session-id
    ranges above all), no dictionary for long text, and ``by_key`` the sorting it holds."""
    sorting = None
    if by_key:
        names = ["session_id", "seq"] if "seq" in schema.names else ["session_id"]
        sorting = [pq.SortingColumn(schema.get_field_index(n)) for n in names]
    return pq.ParquetWriter(
        path,
        schema,
        compression="zstd",
        sorting_columns=sorting,
        write_statistics=_statistics(schema),
        use_dictionary=[c for c in _leaves(schema) if c not in _LONG_TEXT],
        data_page_version="2.0",  # a page is compressed from its encoded values, not a copy
    )


def _session_slices(path: Path, schema: pa.Schema) -> Iterator[tuple[str, list[pa.RecordBatch]]]:
    """The rows of each session of a part sorted by session, as slices of small batches read
    through a small buffer: an open part costs a few MB, whatever its size."""
    file = pq.ParquetFile(path, pre_buffer=False, buffer_size=_READ_BUFFER)
    current: str | None = None
    held: list[pa.RecordBatch] = []
    for raw in file.iter_batches(batch_size=_STREAM_ROWS, use_threads=False):
        batch = _conform(raw, schema)
        ids = batch.column("session_id").to_pylist()
        start = 0
        for i in range(1, len(ids) + 1):
            if i < len(ids) and ids[i] == ids[start]:
                continue
            if ids[start] != current:
                if current is not None:
                    yield current, held
                current, held = ids[start], []
            held.append(batch.slice(start, i - start))
            start = i
    if current is not None:
        yield current, held


#: parts merged at once when a bucket is compacted (each open part costs a few MB)
MERGE_FAN_IN = 8


def _merge_parts(paths: Sequence[Path], out: Path, schema: pa.Schema, target: int) -> None:
    """Parts sorted by session merged into one, sorted by session, in row groups of about
    ``target`` bytes; a session never spans two parts, so whole sessions are interleaved."""
    streams = [_session_slices(path, schema) for path in paths]
    with _part_writer(out, schema) as writer:
        held: list[pa.RecordBatch] = []
        size = 0
        for _, slices in heapq.merge(*streams, key=lambda item: item[0]):
            for piece in slices:
                held.append(piece)
                size += piece.nbytes
                if size >= target:
                    writer.write_table(pa.Table.from_batches(held, schema))
                    held, size = [], 0
        if held:
            writer.write_table(pa.Table.from_batches(held, schema))


def compact_bucket(
    folder: Path, schema: pa.Schema, target: int, fan_in: int = MERGE_FAN_IN
) -> None:
    """Merge a bucket's parts into one ``part-00000.parquet`` sorted by session, ``fan_in``
    parts at a time (then the merged ones, and so on): readers of a few sessions then open one
    file and read the row groups of their id range, whatever the number of flushes."""
    parts = sorted(folder.glob("part-*.parquet"))
    level = 0
    while len(parts) > 1:
        merged = []
        for i in range(0, len(parts), fan_in):
            group = parts[i : i + fan_in]
            if len(group) == 1:
                merged.extend(group)
                continue
            out = folder / f"merge-{level}-{i // fan_in:05d}.parquet"
            _merge_parts(group, out, schema, target)
            for path in group:
                path.unlink()
            merged.append(out)
        parts, level = merged, level + 1
    if parts and parts[0].name != "part-00000.parquet":
        parts[0].rename(folder / "part-00000.parquet")


#: long text columns: no statistics (computing min and max copies every value, a 50 MB tool
#: result over and over, for statistics too long to be kept) and no dictionary (values rarely
#: repeat; trying copies each value into the dictionary and its page before falling back)
_LONG_TEXT = frozenset(
    {
        "metadata",
        "raw",
        "detail",
        "source_location",
        "parts.list.element.content",
        "parts.list.element.arguments",
        "parts.list.element.uri",
    }
)


def _leaves(schema: pa.Schema) -> list[str]:
    """The Parquet column paths of a schema (``parts.list.element.content``)."""

    def walk(prefix: str, kind: pa.DataType) -> Iterator[str]:
        if pa.types.is_struct(kind):
            for child in kind:
                yield from walk(f"{prefix}.{child.name}", child.type)
        elif pa.types.is_list(kind) or pa.types.is_large_list(kind):
            yield from walk(f"{prefix}.list.element", kind.value_type)
        else:
            yield prefix

    return [path for f in schema for path in walk(f.name, f.type)]


def _statistics(schema: pa.Schema) -> list[str]:
    """Columns whose row-group statistics are written: the flat, short ones readers filter on,
    ``session_id`` ranges above all."""
    return [f.name for f in schema if not pa.types.is_nested(f.type) and f.name not in _LONG_TEXT]


def _row_groups(
    spans: list[tuple[_Span, int]], target: int
) -> Iterator[list[tuple[int, int, int]]]:
    """Row groups of about ``target`` bytes as (batch, start, stop) ranges: whole sessions, but
    a session larger than ``target`` is cut into groups of its own. Adjacent ranges of one batch
    are joined."""
    group: list[tuple[int, int, int]] = []
    held = 0

    def add(k: int, start: int, stop: int) -> None:
        if group and group[-1][0] == k and group[-1][2] == start:
            group[-1] = (k, group[-1][1], stop)
        else:
            group.append((k, start, stop))

    for span, k in spans:
        if span.sizes is None:
            if held >= target:
                yield group
                group, held = [], 0
            add(k, span.start, span.stop)
            held += span.bytes
            continue
        if group:
            yield group
            group, held = [], 0
        start = span.start
        for i, size in enumerate(span.sizes):
            held += size
            if held >= target or i == len(span.sizes) - 1:
                stop = span.start + i + 1
                yield [(k, start, stop)]
                start, held = stop, 0
    if group:
        yield group


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
    path: str | Path, kind: str, error: type[CtxreplayError] = CtxreplayError
) -> dict[str, Any]:
    """The manifest of a ``kind`` folder ("corpus" or "run"), local or on object storage, or
    ``error`` saying what the path is instead and how to make the right thing."""
    manifest = storage.join(path, "manifest.json")
    shown = storage.redact(str(path))
    if storage.is_file(path):
        raise error(f"{shown} is a file, not a {kind} folder; {MAKE[kind]}")
    if not storage.is_file(manifest):
        raise error(f"{shown} is not a ctxreplay {kind} (no manifest.json); {MAKE[kind]}")
    try:
        doc = json.loads(storage.read_text(manifest))
    except (OSError, ValueError, storage.StorageError) as e:
        raise error(
            f"{storage.redact(str(manifest))} is damaged ({e}); re-run the command that made "
            f"this {kind}"
        ) from None
    found = KINDS.get(doc.get("kind", "")) if isinstance(doc, dict) else None
    if found is None:
        raise error(f"{storage.redact(str(manifest))} is not a ctxreplay manifest; {MAKE[kind]}")
    if found != kind:
        hint = f" (its corpus is {doc['corpus_path']})" if found == "run" else ""
        raise error(f"{shown} is a ctxreplay {found}, not a {kind}{hint}; {MAKE[kind]}")
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


def _local_copy(uri: str) -> Path:
    """A corpus on object storage, read through a local copy made once per content (keyed by
    its manifest's hash, what :meth:`Corpus.fingerprint` hashes): the readers below stay the
    same code for both."""
    manifest = storage.join(uri, "manifest.json")
    try:
        data = storage.read_bytes(manifest)
    except storage.StorageError:
        if storage.is_file(uri):
            raise CorpusError(f"{uri} is a file, not a corpus folder; {MAKE['corpus']}") from None
        raise CorpusError(
            f"{uri} is not a ctxreplay corpus (no manifest.json); {MAKE['corpus']}"
        ) from None
    return storage.cached_copy(uri, hashlib.sha256(data).hexdigest()[:16], "corpora")


class Corpus:
    """A corpus folder, read lazily (on object storage: through a cached local copy). A damaged
    file raises :class:`DamagedCorpusError` naming it, never a reader's traceback."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        #: where the corpus lives, as a run's manifest records it: a URI, or the absolute path
        self.location = (
            str(path).rstrip("/")
            if storage.is_uri(path)
            else str(storage.local_path(path).resolve())
        )
        self.path = _local_copy(self.location) if storage.is_uri(path) else storage.local_path(path)
        self.manifest: dict[str, Any] = read_manifest(self.path, "corpus", CorpusError)
        #: rows read from the corpus's files so far (filtered reads count the row groups read)
        self.rows_read = 0
        try:
            self.buckets: int = max(1, int(self.manifest.get("buckets", 1)))
            str(self.manifest["tokenizer"]["name"])
        except (KeyError, TypeError, ValueError) as e:
            raise DamagedCorpusError(
                f"{self.path / 'manifest.json'} is damaged (bad {e}); {REMAKE}"
            ) from None

    @property
    def shown(self) -> str:
        """The corpus as the user named it: its URI, or its path as given (not the local copy
        of a corpus on object storage)."""
        return self.location if storage.is_uri(self.location) else str(self.path)

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

    def table(self, table: str, columns: list[str] | None = None) -> pa.Table:
        """A whole table (sessions of some ids: ``session_rows``)."""
        with self._reading(table):
            dataset = self._dataset(table)
            if dataset is None:
                schema = _SCHEMAS[table]
                empty = schema.empty_table()
                return empty if columns is None else empty.select(columns)
            out = dataset.to_table(columns=columns)
            self.rows_read += out.num_rows
            return out

    @contextlib.contextmanager
    def _reading(self, table: str) -> Iterator[None]:
        """Reader errors of a damaged file become :class:`DamagedCorpusError` naming it."""
        try:
            yield
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
        table = (
            self.table("messages", columns)
            if session_ids is None
            else self.session_rows("messages", session_ids, columns)
        )
        return frame_of(table).sort(["session_id", "seq"])

    def rejects(self) -> pl.DataFrame:
        return pl.from_arrow(self.table("rejects"))  # type: ignore[return-value]

    def ground_truth(self) -> pl.DataFrame:
        return pl.from_arrow(self.table("ground_truth"))  # type: ignore[return-value]

    def tool_output(self, session_id: str, call_id: str) -> bytes:
        """The full output of a tool call whose log kept only a preview (a Claude Code
        ``<persisted-output>``): the copy the corpus keeps, else the file the import linked,
        when it still holds what was read."""
        rows = self.session_rows("sessions", [session_id], ["metadata"]).to_pylist()
        if not rows:
            raise CorpusError(f"no session {session_id!r} in {self.shown}")
        links = json.loads(rows[0]["metadata"] or "{}").get("persisted_outputs") or {}
        entry = links.get(call_id)
        if not isinstance(entry, dict):
            held = ", ".join(sorted(links)) or "none"
            raise CorpusError(
                f"session {session_id} has no persisted output of call {call_id!r} "
                f"(its persisted outputs: {held})"
            )
        digest = entry.get("sha256")
        if entry.get("stored") and isinstance(digest, str):
            return self.persisted_output(digest)
        source = entry.get("file")
        if isinstance(source, str) and isinstance(digest, str):
            with contextlib.suppress(OSError):
                if file_sha256(Path(source)) == digest:
                    return Path(source).read_bytes()
        raise CorpusError(
            f"the full output of call {call_id} was not found when importing (recorded at "
            f"{entry.get('recorded_path')}); only its preview is in the session"
        )

    def persisted_output(self, digest: str) -> bytes:
        """The bytes of a persisted tool output the corpus keeps (``CorpusWriter._keep_payloads``)."""
        if not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise CorpusError(f"{digest!r} is not the sha256 of a persisted output")
        try:
            data = (self.path / PERSISTED / digest).read_bytes()
        except OSError:
            raise CorpusError(f"{self.shown} keeps no persisted output {digest}") from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise DamagedCorpusError(
                f"{self.path / PERSISTED / digest} no longer matches its sha256"
            )
        return data

    def load_session(self, session_id: str) -> list[Message]:
        rows = self.session_rows("messages", [session_id]).sort_by("seq").to_pylist()
        if not rows:
            raise CorpusError(f"no session {session_id!r} in {self.path}")
        return [row_to_message(r) for r in rows]

    def iter_sessions(
        self, session_ids: Iterable[str] | None = None
    ) -> Iterator[tuple[str, list[Message]]]:
        """Sessions in (bucket, session id) order. With ``session_ids``, only the row groups
        that can hold them are read (memory follows what is asked for); without, each bucket's
        files are streamed a batch at a time and merged by session id (parts are sorted by
        session and a session never spans two files), so memory follows the number of files
        and the largest session, not the corpus."""
        if session_ids is None:
            for bucket in range(self.buckets):
                yield from self._stream_bucket(bucket)
            return
        for sid, messages, _ in self.counted_sessions(session_ids):
            yield sid, messages

    def counted_sessions(
        self, session_ids: Iterable[str]
    ) -> Iterator[tuple[str, list[Message], dict[Part, int]]]:
        """``iter_sessions`` of these sessions with the token count the corpus stores for each
        of their parts (by value: an equal part has the same texts, so the same count). A
        corpus imported before parts' counts were stored gives those of one-part messages."""
        by_bucket: dict[int, list[str]] = defaultdict(list)
        for sid in set(session_ids):
            by_bucket[bucket_of(sid, self.buckets)].append(sid)
        for _, ids in sorted(by_bucket.items()):
            rows = self.session_rows("messages", ids)
            order = rows.sort_by([("session_id", "ascending"), ("seq", "ascending")])
            yield from _grouped(order.to_batches(max_chunksize=_READ_ROWS), counted=True)

    def session_rows(
        self, table: str, session_ids: Iterable[str], columns: list[str] | None = None
    ) -> pa.Table:
        """The rows of ``table`` (sessions or messages) of these sessions, in (bucket, file)
        order: only their buckets' files are opened and, in each, only the row groups whose
        session-id statistics can hold one of them are read (parts are sorted by session), in
        this thread: a dataset scan keeps native memory per call that a long loop of small
        reads (one per chunk) piles up."""
        ids = sorted(set(session_ids))
        full = _SCHEMAS[table]
        schema = full if columns is None else pa.schema([full.field(c) for c in columns])
        by_bucket: dict[int, list[str]] = defaultdict(list)
        for sid in ids:
            by_bucket[bucket_of(sid, self.buckets)].append(sid)
        wanted = pa.array(ids, pa.string())
        pieces: list[pa.RecordBatch] = []
        with self._reading(table):
            for bucket, mine in sorted(by_bucket.items()):
                folder = self.path / table / f"bucket={bucket:03d}"
                for path in sorted(folder.glob("*.parquet")) if folder.is_dir() else ():
                    file = pq.ParquetFile(path)
                    groups = _row_groups_holding(file.metadata, mine)
                    if not groups:
                        continue
                    present = set(file.schema_arrow.names)
                    read = file.read_row_groups(
                        groups,
                        columns=None
                        if columns is None
                        else [c for c in dict.fromkeys(["session_id", *columns]) if c in present],
                        use_threads=False,
                    )
                    self.rows_read += read.num_rows
                    read = read.filter(pc.is_in(read["session_id"], value_set=wanted))
                    pieces.extend(_conform(b, schema) for b in read.to_batches())
        return pa.Table.from_batches(pieces, schema=schema)

    def _stream_bucket(self, bucket: int) -> Iterator[tuple[str, list[Message]]]:
        """Every session of a bucket, merged by id from its files read a batch at a time."""
        folder = self.path / "messages" / f"bucket={bucket:03d}"
        files = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
        streams = [self._file_sessions(path) for path in files]
        yield from heapq.merge(*streams, key=lambda item: item[0])

    def _file_sessions(self, path: Path) -> Iterator[tuple[str, list[Message]]]:
        """The sessions of one part file in id order: streamed when the file says it is sorted
        by (session, seq), as parts written by current versions are; read and sorted otherwise."""
        with self._reading("messages"):
            schema = _SCHEMAS["messages"]
            if sorted_by_session(pq.ParquetFile(path)):
                for _, slices in _session_slices(path, schema):
                    self.rows_read += sum(piece.num_rows for piece in slices)
                    yield from _grouped(slices)
                return
            # written before parts were sorted: one flush of rows, read whole
            table = ds.dataset([str(path)], format="parquet", schema=schema).to_table()
            table = table.sort_by([("session_id", "ascending"), ("seq", "ascending")])
            self.rows_read += table.num_rows
            yield from _grouped(table.to_batches(max_chunksize=_READ_ROWS))

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
                return cast(pl.DataFrame, con.sql(query).pl())
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


#: rows made Python objects at a time when sessions are read
_READ_ROWS = 4096
#: rows and bytes read at a time from each file of a bucket streamed whole
_STREAM_ROWS = 256
_READ_BUFFER = 1 << 14


def sorted_by_session(file: pq.ParquetFile) -> bool:
    """Whether a message part says it is sorted by (session, seq), as parts current
    versions write are (older ones are read whole and sorted)."""
    meta = file.metadata
    names = file.schema_arrow.names
    if "session_id" not in names or "seq" not in names:
        return False
    want = [pq.SortingColumn(names.index(c)) for c in ("session_id", "seq")]
    return all(
        list(meta.row_group(i).sorting_columns or ())[:2] == want
        for i in range(meta.num_row_groups)
    )


def _row_groups_holding(meta: pq.FileMetaData, ids: Sequence[str]) -> list[int]:
    """The row groups of a part whose session-id range holds one of ``ids`` (sorted); every
    row group whose statistics are missing."""
    column = next(
        (i for i in range(meta.num_columns) if meta.schema.column(i).path == "session_id"), None
    )
    groups = []
    for g in range(meta.num_row_groups):
        stats = meta.row_group(g).column(column).statistics if column is not None else None
        if stats is None or not stats.has_min_max:
            groups.append(g)
            continue
        at = bisect.bisect_left(ids, stats.min)
        if at < len(ids) and ids[at] <= stats.max:
            groups.append(g)
    return groups


def _conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """A batch of a part file with the corpus schema: columns an older writer did not write
    are nulls (as a dataset scan with that schema gives them)."""
    if batch.schema.equals(schema):
        return batch
    names = batch.schema.names
    return pa.RecordBatch.from_arrays(
        [
            batch.column(f.name).cast(f.type) if f.name in names else pa.nulls(len(batch), f.type)
            for f in schema
        ],
        schema=schema,
    )


@overload
def _grouped(
    batches: Iterable[pa.RecordBatch], counted: Literal[False] = ...
) -> Iterator[tuple[str, list[Message]]]: ...
@overload
def _grouped(
    batches: Iterable[pa.RecordBatch], counted: Literal[True]
) -> Iterator[tuple[str, list[Message], dict[Part, int]]]: ...
def _grouped(batches: Iterable[pa.RecordBatch], counted: bool = False) -> Iterator[Any]:
    """Messages of rows sorted by (session, seq), one session at a time; ``counted``: with the
    stored token count of each part (``Corpus.counted_sessions``)."""
    current: str | None = None
    messages: list[Message] = []
    counts: dict[Part, int] = {}
    for batch in batches:
        for row in batch.to_pylist():
            if row["session_id"] != current:
                if current is not None:
                    yield (current, messages, counts) if counted else (current, messages)
                current, messages, counts = row["session_id"], [], {}
            m = row_to_message(row)
            messages.append(m)
            if counted:
                stored = row.get("part_tokens")
                if stored is not None and len(stored) == len(m.parts):
                    counts.update(zip(m.parts, stored, strict=True))
                elif len(m.parts) == 1:
                    counts[m.parts[0]] = m.tokens
    if current is not None:
        yield (current, messages, counts) if counted else (current, messages)


def _with_bucket(table: str) -> pa.Schema:
    return _SCHEMAS[table].append(pa.field("bucket", pa.int32()))
