"""Where corpora, cases and runs live: a local path or any URI ``pyarrow.fs`` opens
(``s3://bucket/prefix``, ``gs://…``, ``hdfs://…``), through one small layer.

A location is resolved to ``(pyarrow.fs.FileSystem, path)`` by :func:`resolve`. For ``s3://`` the
endpoint and credentials come from the environment only (``AWS_ENDPOINT_URL_S3`` or
``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``,
``AWS_REGION``/``AWS_DEFAULT_REGION``) and are never written anywhere: what is stored is the URI.

Writes are atomic on both sides: locally a temporary file renamed into place
(:mod:`ctxreplay.files`), on object storage an object written under a temporary key
(``.NAME.<random>.tmp``, which no listing here returns) and then published under its name, so a
writer killed in between leaves nothing a reader takes for a file.

A run on object storage is written by its tasks directly, each part published as it is made
(:func:`write_bytes`, :func:`write_table`), wherever the task runs; the command that drives the
run works on a :class:`Mirror` of what it reads (not the payloads, responses and call logs the
tasks alone read or write) and publishes what it writes itself (the manifest). Other commands on
folders work on a local copy, :class:`Staged`: the prefix is downloaded, the stage runs on it
unchanged, and new or changed files are uploaded (files removed locally are deleted remotely).
Read-only corpora are copied once per content into the cache (:func:`cached_copy`), keyed by
their manifest's hash.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import uuid
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any, cast
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .errors import CtxreplayError
from .files import TMP_SUFFIX, atomic_write_bytes, cache_dir, parquet_bytes

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+)://")

#: the keys of a run manifest that name other folders or files (see :meth:`Staged._relocate`)
RELOCATED_KEYS = ("corpus_path", "cases_path")

#: threads that upload or download the files of a folder at once
TRANSFER_THREADS = 8


class StorageError(CtxreplayError):
    """A location that cannot be opened or does not hold what was asked (the message names the
    URI, never a credential)."""


def is_uri(location: str | os.PathLike[str]) -> bool:
    """Whether ``location`` names object storage (``scheme://…``) rather than a local path;
    ``file://`` URIs are local paths."""
    m = _SCHEME.match(os.fspath(location)) if isinstance(location, str) else None
    return m is not None and m.group(1).lower() != "file"


def local_path(location: str | os.PathLike[str]) -> Path:
    """A local location as a path (``file://`` stripped)."""
    text = os.fspath(location)
    return Path(text[len("file://") :] if text.startswith("file://") else text)


def location(value: str | os.PathLike[str]) -> str | Path:
    """A user's path-or-URI as the code carries it: a URI stays a string (``Path`` would fold
    ``s3://`` into ``s3:/``), a local path becomes a ``Path``."""
    return str(value).rstrip("/") if is_uri(value) else local_path(value)


def join(base: str | os.PathLike[str], *names: str) -> str | Path:
    """``base/name/…`` for a URI or a local path."""
    if is_uri(base):
        return "/".join([str(base).rstrip("/"), *names])
    return local_path(base).joinpath(*names)


def _endpoint() -> tuple[str | None, str | None]:
    """(host[:port], scheme) of the S3 endpoint named by the environment, if any."""
    url = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if not url:
        return None, None
    parts = urlsplit(url if "://" in url else f"https://{url}")
    return parts.netloc or None, parts.scheme or None


#: the environment variables an S3 filesystem is made from
S3_ENV = (
    "AWS_ENDPOINT_URL_S3",
    "AWS_ENDPOINT_URL",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
)


def _s3() -> pafs.FileSystem:
    """An S3 filesystem from the environment (one per distinct environment and process)."""
    return _s3_from(tuple(os.environ.get(k) for k in S3_ENV))


@functools.lru_cache(maxsize=4)
def _s3_from(_env: tuple[str | None, ...]) -> pafs.FileSystem:
    """Credentials are passed through to pyarrow, never kept anywhere else."""
    endpoint, scheme = _endpoint()
    key, secret = os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY")
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    return pafs.S3FileSystem(
        access_key=key if key and secret else None,
        secret_key=secret if key and secret else None,
        session_token=os.environ.get("AWS_SESSION_TOKEN") if key and secret else None,
        region=region or ("us-east-1" if endpoint else None),
        endpoint_override=endpoint,
        scheme=scheme,
    )


def resolve(location: str | os.PathLike[str]) -> tuple[pafs.FileSystem, str]:
    """``(filesystem, path in it)`` for a local path or a URI. ``s3://`` URIs without query
    options use the environment's endpoint and credentials; anything else goes to
    ``FileSystem.from_uri``."""
    if not is_uri(location):
        return pafs.LocalFileSystem(), str(local_path(location).resolve())
    uri = str(location)
    parts = urlsplit(uri)
    try:
        if parts.scheme.lower() == "s3" and not parts.query:
            return _s3(), f"{parts.netloc}{parts.path}".rstrip("/")
        fs, path = pafs.FileSystem.from_uri(uri)
    except (OSError, ValueError) as e:
        raise StorageError(f"cannot open {redact(uri)}: {_gist(e)}") from None
    return fs, path.rstrip("/")


def redact(uri: str) -> str:
    """A URI without user info or query (where credentials could be spelled)."""
    if not is_uri(uri):
        return uri
    p = urlsplit(uri)
    return f"{p.scheme}://{p.hostname or ''}{f':{p.port}' if p.port else ''}{p.path}"


def _gist(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return lines[0][:200] if lines else type(e).__name__


def _info(location: str | os.PathLike[str]) -> pafs.FileInfo:
    fs, path = resolve(location)
    try:
        return fs.get_file_info(path)
    except OSError as e:
        raise StorageError(f"cannot read {redact(str(location))}: {_gist(e)}") from None


def exists(location: str | os.PathLike[str]) -> bool:
    """Whether a file or a folder (on object storage: a prefix holding objects) is there."""
    return bool(_info(location).type != pafs.FileType.NotFound)


def is_file(location: str | os.PathLike[str]) -> bool:
    if not is_uri(location):
        return local_path(location).is_file()
    return bool(_info(location).type == pafs.FileType.File)


def is_dir(location: str | os.PathLike[str]) -> bool:
    """A folder: locally a directory; on object storage a prefix with at least one object
    below it (S3 has no empty folders)."""
    return bool(_info(location).type == pafs.FileType.Directory)


def _files(location: str | os.PathLike[str], temps: bool = False) -> dict[str, pafs.FileInfo]:
    """Every file under a folder by its path relative to it (``/``-separated), temporary files
    of unfinished writes left out unless ``temps``."""
    fs, root = resolve(location)
    try:
        infos = fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True))
    except OSError as e:
        raise StorageError(f"cannot list {redact(str(location))}: {_gist(e)}") from None
    found = {}
    for i in infos:
        rel = i.path[len(root) :].lstrip("/")
        if i.type == pafs.FileType.File and (temps or not is_temp(rel)):
            found[rel] = i
    return found


def list_files(location: str | os.PathLike[str]) -> list[str]:
    """Every file under a folder, as paths relative to it (``/``-separated, sorted)."""
    return sorted(_files(location))


def is_temp(name: str) -> bool:
    """Whether a file name (or relative path) is a temporary file of an unfinished write, here
    or in :mod:`ctxreplay.files`: never a file for a reader."""
    base = name.rsplit("/", 1)[-1]
    return base.startswith(".") and base.endswith(TMP_SUFFIX)


def size(location: str | os.PathLike[str]) -> int | None:
    """A file's size in bytes; None when there is no file."""
    if not is_uri(location):
        try:
            st = os.stat(local_path(location))
        except OSError:
            return None
        return st.st_size if stat.S_ISREG(st.st_mode) else None
    info = _info(location)
    return int(info.size) if info.type == pafs.FileType.File and info.size is not None else None


def read_bytes(location: str | os.PathLike[str]) -> bytes:
    if not is_uri(location):  # a local file: read as it is, no filesystem object resolved
        try:
            return local_path(location).read_bytes()
        except OSError as e:
            raise StorageError(f"cannot read {location}: {_gist(e)}") from None
    fs, path = resolve(location)
    try:
        with fs.open_input_stream(path) as f:
            return cast(bytes, f.read())
    except OSError as e:
        raise StorageError(f"cannot read {redact(str(location))}: {_gist(e)}") from None


def read_text(location: str | os.PathLike[str]) -> str:
    return read_bytes(location).decode("utf-8")


def write_bytes(location: str | os.PathLike[str], data: bytes) -> None:
    """Write a whole file atomically: locally temp + rename; on object storage under a
    temporary key, then published under its own (:func:`_publish`)."""
    if not is_uri(location):
        atomic_write_bytes(local_path(location), data)
        return
    fs, path = resolve(location)
    parent, _, name = path.rpartition("/")
    tmp = f"{parent}/.{name}.{uuid.uuid4().hex[:12]}{TMP_SUFFIX}"
    try:
        with fs.open_output_stream(tmp) as f:
            f.write(data)
        _publish(fs, tmp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            fs.delete_file(tmp)
        raise StorageError(f"cannot write {redact(str(location))}: {_gist(e)}") from None


def _publish(fs: pafs.FileSystem, tmp: str, path: str) -> None:
    """A written temporary object under its name (on S3 a server-side copy, then the temporary
    one deleted): readers see the whole object or none."""
    fs.move(tmp, path)


def write_table(
    location: str | os.PathLike[str],
    rows: Sequence[Mapping[str, Any]] | pa.Table,
    schema: pa.Schema | None,
) -> tuple[int, int]:
    """One Parquet part (``files.atomic_write_table``'s bytes) written atomically wherever it
    goes; its (rows, bytes)."""
    data, n = parquet_bytes(rows, schema)
    write_bytes(location, data)
    return n, len(data)


def read_parquet(
    location: str | os.PathLike[str], columns: Sequence[str] | None = None
) -> pa.Table:
    """A Parquet file, local or remote (only ``columns``, those it has, when given)."""
    if not is_uri(location):
        file = pq.ParquetFile(local_path(location))
    else:
        fs, path = resolve(location)
        file = pq.ParquetFile(fs.open_input_file(path))
    if columns is not None:
        names = set(file.schema_arrow.names)
        columns = [c for c in columns if c in names]
    return file.read(columns=columns)


def remove_stale_temps(location: str, started: float) -> int:
    """Remove the temporary objects under a remote folder that writers killed before
    ``started`` left (one whose writer lives is younger); how many."""
    fs, _ = resolve(location)
    stale = [
        i.path
        for rel, i in _files(location, temps=True).items()
        if is_temp(rel) and i.mtime is not None and i.mtime.timestamp() < started - 1  # whole s
    ]
    for path in stale:
        with contextlib.suppress(OSError):
            fs.delete_file(path)
    return len(stale)


def write_text(location: str | os.PathLike[str], text: str) -> None:
    write_bytes(location, text.encode("utf-8"))


def makedirs(location: str | os.PathLike[str]) -> None:
    fs, path = resolve(location)
    fs.create_dir(path, recursive=True)


def delete(location: str | os.PathLike[str]) -> None:
    """Remove a file, or a folder and everything below it; nothing there is no error."""
    fs, path = resolve(location)
    info = fs.get_file_info(path)
    if info.type == pafs.FileType.File:
        fs.delete_file(path)
    elif info.type == pafs.FileType.Directory:
        fs.delete_dir_contents(path, missing_dir_ok=True)
        with contextlib.suppress(OSError):
            fs.delete_dir(path)


def fingerprint(location: str | os.PathLike[str]) -> str:
    """The first 16 hex digits of a file's sha256 (as ``files.file_fingerprint``), wherever it is."""
    return hashlib.sha256(read_bytes(location)).hexdigest()[:16]


def _copy(src: str, dst: str, src_fs: pafs.FileSystem, dst_fs: pafs.FileSystem) -> None:
    with src_fs.open_input_stream(src) as fin, dst_fs.open_output_stream(dst) as fout:
        shutil.copyfileobj(cast(IO[bytes], fin), cast(IO[bytes], fout), 8 << 20)


def download(location: str | os.PathLike[str], target: Path) -> int:
    """Copy a file, or every file of a folder, to ``target``; returns the files copied."""
    fs, root = resolve(location)
    info = fs.get_file_info(root)
    if info.type == pafs.FileType.File:
        target.parent.mkdir(parents=True, exist_ok=True)
        _copy(root, str(target), fs, pafs.LocalFileSystem())
        return 1
    names = list_files(location)
    for d in {(target / n).parent for n in names}:
        d.mkdir(parents=True, exist_ok=True)
    local = pafs.LocalFileSystem()
    with ThreadPoolExecutor(TRANSFER_THREADS) as pool:
        list(pool.map(lambda n: _copy(f"{root}/{n}", str(target / n), fs, local), names))
    return len(names)


Snapshot = dict[str, tuple[int, int]]


def snapshot(folder: Path) -> Snapshot:
    """relative path → (size, mtime ns) of every file under a local folder, temporary files of
    unfinished writes left out."""
    out: Snapshot = {}
    if not folder.is_dir():
        return out
    for dirpath, _dirs, names in os.walk(folder):
        for name in names:
            if name.startswith(".") and name.endswith(TMP_SUFFIX):
                continue
            path = Path(dirpath) / name
            st = path.stat()
            out[path.relative_to(folder).as_posix()] = (st.st_size, st.st_mtime_ns)
    return out


def upload(folder: Path, location: str | os.PathLike[str], before: Snapshot | None = None) -> int:
    """Copy the files of a local folder that are new or changed since ``before`` to
    ``location``, and delete there those that were in ``before`` and are gone; returns the files
    uploaded."""
    fs, root = resolve(location)
    now = snapshot(folder)
    old = before or {}
    changed = [n for n, st in now.items() if old.get(n) != st]
    gone = [n for n in old if n not in now]
    local = pafs.LocalFileSystem()
    with ThreadPoolExecutor(TRANSFER_THREADS) as pool:
        list(pool.map(lambda n: _copy(str(folder / n), f"{root}/{n}", local, fs), changed))
    for n in gone:
        with contextlib.suppress(FileNotFoundError):
            fs.delete_file(f"{root}/{n}")
    return len(changed)


class Staged:
    """A remote file or folder worked on as a local copy: ``path`` is where the stage reads and
    writes; :meth:`close` uploads what changed and removes the copy. A local location is used in
    place (``path`` is it, and close does nothing).

    ``fetch=False`` starts from an empty copy; ``replace=True`` too, but what the folder held is
    listed (``existing``), and whatever the stage does not write again is deleted when it is
    uploaded (a corpus written with ``--overwrite``: the old one is never downloaded)."""

    def __init__(
        self, location: str | os.PathLike[str], *, fetch: bool = True, replace: bool = False
    ) -> None:
        self.location = location
        self.remote = is_uri(location)
        self._tmp: Path | None = None
        self._before: Snapshot = {}
        #: the files a remote folder held when staged with ``replace``
        self.existing: list[str] = []
        if not self.remote:
            self.path = local_path(location)
            return
        self._tmp = Path(tempfile.mkdtemp(prefix="ctxreplay-stage-"))
        name = str(location).rstrip("/").rsplit("/", 1)[-1] or "root"
        self.path = self._tmp / name
        if replace:
            self.existing = list_files(location)
            self._before = {n: (-1, -1) for n in self.existing}
        elif fetch:
            if is_file(location):
                download(location, self.path)
            elif download(location, self.path):
                self._before = snapshot(self.path)

    def close(self, *, upload_changes: bool = True) -> None:
        """Upload what the stage wrote (a file, or a folder's new and changed files) and remove
        the local copy."""
        if self._tmp is None:
            return
        try:
            if upload_changes:
                self._relocate()
                if self.path.is_file():  # the file, and any file written beside it
                    fs, path = resolve(self.location)
                    parent = path.rsplit("/", 1)[0]
                    local = pafs.LocalFileSystem()
                    for p in sorted(self._tmp.iterdir()):
                        if p.is_file() and not p.name.startswith("."):
                            _copy(str(p), f"{parent}/{p.name}", local, fs)
                elif self.path.is_dir() or self._before:
                    upload(self.path, self.location, self._before)
        finally:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def _relocate(self) -> None:
        """A run manifest written here names its corpus and cases by where they are; those
        inside this local copy (``ctxreplay run -o s3://…`` makes all three) are named by their
        URI before upload, so a later command on any machine finds them."""
        if not self.path.is_dir():
            return
        local = str(self.path)
        for manifest in self.path.rglob("manifest.json"):
            try:
                doc = json.loads(manifest.read_text())
            except (OSError, ValueError):
                continue
            if not isinstance(doc, dict) or doc.get("kind") != "ctxreplay-run":
                continue
            moved = False
            for key in RELOCATED_KEYS:
                value = doc.get(key)
                if isinstance(value, str) and (value == local or value.startswith(local + "/")):
                    doc[key] = str(self.location).rstrip("/") + value[len(local) :]
                    moved = True
            if moved:
                atomic_write_bytes(
                    manifest, (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode()
                )

    def __enter__(self) -> Path:
        return self.path

    def __exit__(self, *exc: object) -> None:
        self.close()


#: the folders of a run that only its tasks read and write: archived payloads, model responses,
#: call logs (a :class:`Mirror` leaves them on the store)
TASK_FOLDERS = ("sidecar", "llm-cache", "calls")


class Mirror(Staged):
    """A run on object storage as the command that drives it sees it: a local copy of every
    file but those under ``TASK_FOLDERS``, refreshed by :meth:`pull` (after tasks published
    their parts), and the command's own writes — the manifest, the judge's state, a part it
    rewrote or set aside — published by :meth:`push` (before tasks are handed out, and at the
    end). It is a cache: everything of the run is on the store, and any node rebuilds it.
    A local run is used in place (``path`` is it; pull and push do nothing)."""

    def __init__(self, location: str | os.PathLike[str]) -> None:
        super().__init__(location, fetch=False)
        #: relative path → (size, mtime) of the remote files as last pulled or pushed
        self._remote: dict[str, tuple[int, float]] = {}
        if self.remote:
            self.path.mkdir(parents=True)
            self.pull()

    def _listing(self) -> dict[str, tuple[int, float]]:
        """relative path → (size, mtime) of the remote files the mirror holds."""
        return {
            rel: (int(i.size or 0), i.mtime.timestamp() if i.mtime else 0.0)
            for rel, i in _files(self.location).items()
            if rel.split("/", 1)[0] not in TASK_FOLDERS
        }

    def pull(self, only: Sequence[str] | None = None) -> int:
        """Download what is new or changed on the store since the last pull; remove what is
        gone from it. ``only``: these top folders alone (what the command reads next; the
        others stay as they were). Returns the files downloaded."""
        if not self.remote:
            return 0
        now = self._listing()
        if only is not None:
            kept = {n: st for n, st in self._remote.items() if n.split("/", 1)[0] not in only}
            now = {**kept, **{n: st for n, st in now.items() if n.split("/", 1)[0] in only}}
        fetch = [n for n, st in now.items() if self._remote.get(n) != st]
        fs, root = resolve(self.location)
        for d in {(self.path / n).parent for n in fetch}:
            d.mkdir(parents=True, exist_ok=True)
        local = pafs.LocalFileSystem()
        with ThreadPoolExecutor(TRANSFER_THREADS) as pool:
            list(pool.map(lambda n: _copy(f"{root}/{n}", str(self.path / n), fs, local), fetch))
        for n in set(self._remote) - set(now):
            with contextlib.suppress(FileNotFoundError):
                (self.path / n).unlink()
        self._remote = now
        self._before = snapshot(self.path)
        return len(fetch)

    def push(self) -> int:
        """Publish what the command wrote or removed in the copy since the last pull or push
        (each file atomically, :func:`write_bytes`). Returns the files published."""
        if not self.remote:
            return 0
        self._relocate()
        now = snapshot(self.path)
        changed = sorted(n for n, st in now.items() if self._before.get(n) != st)
        for n in changed:
            write_bytes(join(self.location, n), (self.path / n).read_bytes())
        for n in sorted(set(self._before) - set(now)):
            delete(join(self.location, n))
        self._before = now
        if changed:
            listed = self._listing()
            self._remote.update({n: listed[n] for n in changed if n in listed})
        return len(changed)

    def close(self, *, upload_changes: bool = True) -> None:
        if self._tmp is None:
            return
        try:
            if upload_changes:
                self.push()
        finally:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


@contextlib.contextmanager
def staged(location: str | os.PathLike[str], *, fetch: bool = True) -> Iterator[Path]:
    """``with staged(uri) as path:`` work on ``path``; changes are uploaded when the block ends
    (also when it raises: what finished is kept, as a local run keeps its finished parts)."""
    stage = Staged(location, fetch=fetch)
    try:
        yield stage.path
    finally:
        stage.close()


def cached_copy(location: str, key: str, kind: str = "remote") -> Path:
    """A local read-only copy of a remote folder whose content ``key`` names (e.g. its
    manifest's hash), made once in the cache (``files.cache_dir(kind)``) and reused by every
    process and command; built beside and renamed into place, so readers never see half."""
    name = hashlib.sha256(str(location).rstrip("/").encode()).hexdigest()[:16]
    target = cache_dir(kind) / f"{name}-{key}"
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        download(location, build / "copy")
        try:
            os.replace(build / "copy", target)
        except OSError:  # another process put it there first
            if not target.is_dir():
                raise
    finally:
        shutil.rmtree(build, ignore_errors=True)
    return target
