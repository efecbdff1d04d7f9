"""Writing files so that a killed process never leaves a half file under the real name, and the
one place that says where ctxreplay keeps its caches.

Every write goes to a temporary file beside the target (``.NAME.<pid>-*.tmp``) and is renamed into
place; ``os.replace`` is atomic on POSIX and Windows, so readers see the old file or the new one.
A process killed mid-write leaves its temporary file behind: :func:`remove_stale_temps` removes
those of dead writers when an engine starts again.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from . import arrow_memory
from .schema import rows_table

arrow_memory.choose_pool()  # the allocator of pyarrow's Python calls

TMP_SUFFIX = ".tmp"

#: when this process started (as near as the import of this module): a temporary file last
#: written before it cannot be one this process is writing
PROCESS_STARTED = time.time()

#: ``.NAME.<pid>-<random>.tmp``; ``.NAME.<random>.tmp`` from versions that did not name the pid
_TEMP = re.compile(r"^\..+\.(?:(?P<pid>\d+)-)?[A-Za-z0-9_]+\.tmp$")


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], *, fsync: bool = False) -> Iterator[Path]:
    """A temporary path to write; renamed onto ``path`` when the block ends without error,
    removed when it raises. The folder is created when needed."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(
        prefix=f".{target.name}.{os.getpid()}-", suffix=TMP_SUFFIX, dir=target.parent
    )
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        if fsync:
            with tmp.open("rb") as fh:
                os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, *, fsync: bool = False) -> None:
    with atomic_path(path, fsync=fsync) as tmp:
        tmp.write_bytes(data)


def atomic_write_text(path: str | os.PathLike[str], text: str, *, fsync: bool = False) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), fsync=fsync)


def atomic_write_table(
    rows: Sequence[Mapping[str, Any]] | pa.Table,
    schema: pa.Schema | None,
    path: str | os.PathLike[str],
) -> None:
    """One Parquet file (zstd) from rows of ``schema`` (each holding exactly its columns), or
    from a ready Arrow table."""
    with atomic_path(path) as tmp:
        pq.write_table(_table(rows, schema), tmp, compression="zstd")


def _table(rows: Sequence[Mapping[str, Any]] | pa.Table, schema: pa.Schema | None) -> pa.Table:
    if isinstance(rows, pa.Table):
        return rows
    if schema is None:
        return pa.Table.from_pylist(list(rows))
    return rows_table(list(rows), schema)


def parquet_bytes(
    rows: Sequence[Mapping[str, Any]] | pa.Table, schema: pa.Schema | None
) -> tuple[bytes, int]:
    """What :func:`atomic_write_table` writes, in memory (for object storage), and its rows."""
    table = _table(rows, schema)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue().to_pybytes(), table.num_rows


def _alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this machine (one we may not signal counts)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it exists, under another user
        return True
    return True


def stale_temp(path: Path, started: float = PROCESS_STARTED) -> bool:
    """Whether ``path`` is a temporary file of :func:`atomic_path` left by a writer that is
    gone: last written before this process started, and its writer's pid not alive (or not
    named, as by older versions). Another live process's file is never stale, however old."""
    m = _TEMP.match(path.name)
    if m is None:
        return False
    try:
        st = path.lstat()
    except OSError:
        return False
    if not os.path.isfile(path) or os.path.islink(path) or st.st_mtime >= started:
        return False
    pid = m.group("pid")
    return pid is None or (int(pid) != os.getpid() and not _alive(int(pid)))


def remove_stale_temps(
    root: str | os.PathLike[str], started: float = PROCESS_STARTED
) -> list[Path]:
    """Remove, under ``root``, the temporary files that killed writers left behind
    (:func:`stale_temp`); real data (anything not named like a temporary file) is never touched.
    Returns what was removed."""
    removed: list[Path] = []
    base = Path(root)
    if not base.is_dir():
        return removed
    for folder, _dirs, names in os.walk(base):
        for name in names:
            if not name.endswith(TMP_SUFFIX) or not name.startswith("."):
                continue
            path = Path(folder) / name
            if stale_temp(path, started):
                with contextlib.suppress(OSError):
                    path.unlink()
                    removed.append(path)
    return removed


def file_fingerprint(path: str | os.PathLike[str]) -> str:
    """The first 16 hex digits of the file's sha256: a change of content is a change of input."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def cache_dir(kind: str) -> Path:
    """``$CTXREPLAY_CACHE_DIR/<kind>``, by default ``$XDG_CACHE_HOME/ctxreplay/<kind>``
    (``~/.cache/ctxreplay/<kind>``)."""
    root = os.environ.get("CTXREPLAY_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ctxreplay"
    )
    return Path(root) / kind
