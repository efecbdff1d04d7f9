"""Writing files so that a killed process never leaves a half file under the real name, and the
one place that says where ctxreplay keeps its caches.

Every write goes to a temporary file beside the target (``.NAME.*.tmp``) and is renamed into
place; ``os.replace`` is atomic on POSIX and Windows, so readers see the old file or the new one.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

TMP_SUFFIX = ".tmp"


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], *, fsync: bool = False) -> Iterator[Path]:
    """A temporary path to write; renamed onto ``path`` when the block ends without error,
    removed when it raises. The folder is created when needed."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=TMP_SUFFIX, dir=target.parent)
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
    rows: Sequence[dict[str, Any]] | pa.Table,
    schema: pa.Schema | None,
    path: str | os.PathLike[str],
) -> None:
    """One Parquet file (zstd) from rows of ``schema``, or from a ready Arrow table."""
    table = rows if isinstance(rows, pa.Table) else pa.Table.from_pylist(list(rows), schema=schema)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")


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
