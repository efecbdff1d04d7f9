"""SQLite databases of coding agents (OpenCode's ``opencode.db``, Goose's ``sessions.db``), read
without ever changing them.

Such a database is the user's own file, often held open by the agent that is writing it. Reading
it must not modify it nor create anything beside it, and must still see what the agent committed:

* no ``-wal`` or ``-journal`` file beside it: it is opened read-only (``mode=ro``), and
  ``immutable=1`` as well when its header says WAL mode, because even a read-only open of a WAL
  database creates ``-wal`` and ``-shm`` files next to it;
* a ``-wal`` file (an agent running, or one that stopped before a checkpoint) may hold committed
  transactions that are not in the main file yet, and a ``-journal`` (a hot journal) may need a
  rollback: opening the file in place would write to it. The database and those files are copied
  to a private folder and the copy is read, so the recovery happens there.

Columns come back as bytes (``text_factory = bytes``): a reject keeps a row's own bytes, and text
that is not UTF-8 is rejected by validation instead of failing the whole read. ``DatabaseImporter``
is what the importers of such databases share: the read-only open, the schema check (one
``malformed`` reject naming what the file holds), file-level and row-level rejects.
"""

from __future__ import annotations

import abc
import contextlib
import functools
import json
import shutil
import sqlite3
import tempfile
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from ..messages import Session
from ..rejects import RecordError, Reject, clip, inspect_value
from .base import Importer
from .records import loads

SQLITE_HEADER = b"SQLite format 3\x00"
#: what reading a damaged database raises (sqlite3 decodes column names strictly)
DB_ERRORS = (sqlite3.Error, UnicodeError)
#: the largest file a file-level reject keeps whole as its raw bytes
MAX_RAW_FILE = 1 << 20
#: a database's tables with their columns
Tables = dict[str, tuple[str, ...]]
__all__ = [
    "DB_ERRORS",
    "MAX_RAW_FILE",
    "SQLITE_HEADER",
    "DatabaseImporter",
    "Tables",
    "bind",
    "file_raw",
    "is_sqlite",
    "json_column",
    "missing_schema",
    "order_by",
    "readonly_database",
    "row_json",
    "schema_of",
    "schema_score",
    "select",
    "side_file",
    "sqlite_tables",
    "text_of",
]


def is_sqlite(head: bytes) -> bool:
    """A SQLite database file, by its 16-byte header."""
    return head.startswith(SQLITE_HEADER)


def side_file(path: Path, suffix: str) -> Path:
    """The file SQLite keeps beside ``path`` (``-wal``, ``-shm``, ``-journal``)."""
    return path.with_name(path.name + suffix)


def _wal_mode(path: Path) -> bool:
    """The header's read/write format versions say WAL (bytes 18 and 19 are 2)."""
    try:
        with path.open("rb") as f:
            head = f.read(20)
    except OSError:
        return False
    return len(head) == 20 and head[18] == 2 and head[19] == 2


@contextlib.contextmanager
def readonly_database(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection that cannot change ``path`` or the files beside it.

    A ``-wal`` or ``-journal`` beside the database may hold committed data (or need recovery):
    the database and that file are copied to a private folder and the copy is read. Otherwise
    the file is opened ``mode=ro``, and ``immutable=1`` as well in WAL mode (a read-only open of
    a WAL database creates ``-wal`` and ``-shm`` files). Text comes back as bytes (the raw bytes
    of a row are what a reject keeps; undecodable text is rejected, not lost)."""
    folder: tempfile.TemporaryDirectory[str] | None = None
    conn: sqlite3.Connection | None = None
    try:
        sides = [s for s in ("-wal", "-journal") if side_file(path, s).is_file()]
        if sides:
            folder = tempfile.TemporaryDirectory(prefix="ctxreplay-sqlite-")
            copy = Path(folder.name) / "copy.db"
            shutil.copyfile(path, copy)
            for suffix in sides:
                shutil.copyfile(side_file(path, suffix), side_file(copy, suffix))
            conn = sqlite3.connect(copy, timeout=5)  # a private copy: recovery happens there
        else:
            mode = "ro&immutable=1" if _wal_mode(path) else "ro"
            uri = f"file:{urllib.parse.quote(str(path.absolute()))}?mode={mode}"
            conn = sqlite3.connect(uri, uri=True, timeout=5)
        conn.text_factory = bytes
        conn.execute("PRAGMA query_only = ON")
        yield conn
    finally:
        if conn is not None:
            conn.close()
        if folder is not None:
            folder.cleanup()


def schema_of(conn: sqlite3.Connection) -> tuple[Tables, bytes]:
    """The tables of a database with their columns, and its schema text (for a reject)."""
    rows = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name"
    ).fetchall()
    tables: Tables = {}
    sql: list[bytes] = []
    for name, text in rows:
        label = text_of(name)
        if not isinstance(label, str) or label != label.encode("utf-8", "replace").decode():
            continue  # a name that is not UTF-8 (a damaged schema): not a table we read
        quoted = label.replace('"', '""')
        cols = conn.execute(f'PRAGMA table_info("{quoted}")').fetchall()
        tables[label] = tuple(str(text_of(c[1])) for c in cols)
        if isinstance(text, bytes):
            sql.append(text + b";")
    return tables, b"\n".join(sql)


@functools.lru_cache(maxsize=32)
def _tables(key: str, _signature: tuple[Any, ...]) -> Tables | None:
    try:
        with readonly_database(Path(key)) as conn:
            return schema_of(conn)[0]
    except (sqlite3.Error, OSError, ValueError):
        return None


def sqlite_tables(path: Path) -> Tables | None:
    """The tables (and their columns) of a SQLite database, or None when it cannot be read;
    remembered per file state, since every sniffer of a ``.db`` file asks."""

    def sig(p: Path) -> tuple[int, int] | None:
        try:
            st = p.stat()
        except OSError:
            return None
        return st.st_size, st.st_mtime_ns

    signature = (sig(path), sig(side_file(path, "-wal")), sig(side_file(path, "-journal")))
    return _tables(str(path), signature)


def missing_schema(tables: Tables, required: Tables) -> str:
    """What ``tables`` lacks of ``required`` ("" when nothing)."""
    missing = [t for t in required if t not in tables]
    if missing:
        found = ", ".join(sorted(tables)) or "none"
        return f"it has no table {', '.join(missing)} (its tables: {found})"
    for table, cols in required.items():
        lacking = [c for c in cols if c not in tables[table]]
        if lacking:
            return (
                f"table {table} has no column {', '.join(lacking)} "
                f"(its columns: {', '.join(tables[table])})"
            )
    return ""


def schema_score(tables: Tables, required: Tables) -> float:
    """Detection by schema: every required table present (some columns may be missing: then
    the read says what is missing, as a reject)."""
    if not set(required) <= set(tables):
        return 0.0
    return 0.99 if not missing_schema(tables, required) else 0.5


def select(
    conn: sqlite3.Connection, sql: str, params: tuple[Any, ...] = ()
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The column names and the rows of a query."""
    cur = conn.execute(sql, params)
    return [d[0] for d in cur.description], cur.fetchall()


def order_by(columns: tuple[str, ...], *wanted: str) -> str:
    """An ``ORDER BY`` of those of ``wanted`` the table has ("" when none: the table's order)."""
    found = [f'"{c}"' for c in wanted if c in columns]
    return f" ORDER BY {', '.join(found)}" if found else ""


def bind(value: Any) -> tuple[str, Any]:
    """A SQL placeholder for a key read back as bytes: the bytes compared as TEXT again."""
    return ("CAST(? AS TEXT)", value) if isinstance(value, bytes) else ("?", value)


def text_of(value: Any) -> Any:
    """A column value as Python reads it here: text (bytes) decoded, undecodable bytes kept as
    surrogates (validation rejects text holding them); other values unchanged."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return value


def row_json(columns: list[str], row: tuple[Any, ...]) -> bytes:
    """A row as the JSON object of its columns: the raw bytes of its reject."""
    obj = {c: text_of(v) for c, v in zip(columns, row, strict=False)}
    text = json.dumps(obj, ensure_ascii=False, default=repr)
    return text.encode("utf-8", "surrogateescape")


def json_column(value: Any, what: str, root: str = "$") -> Any:
    """A JSON text column, parsed and checked (UTF-8, nesting); ``root`` is its JSON path."""
    if value is None:
        raise RecordError("missing_field", f"{what} is NULL", root)
    if isinstance(value, bytes):
        text = value.decode("utf-8", "surrogateescape")
    elif isinstance(value, str):
        text = value
    else:
        got = type(value).__name__
        raise RecordError("wrong_type", f"{what} should be JSON text, got {got}", root)
    try:
        parsed = loads(text)
    except ValueError as e:
        raise RecordError("invalid_json", clip(f"{what} is not JSON: {e}"), root) from None
    problem = inspect_value(parsed, root=root)
    if problem is not None:
        reason, where = problem
        detail = (
            f"{what} holds bytes that are not valid UTF-8"
            if reason == "invalid_utf8"
            else f"{what} nests JSON deeper than the limit"
        )
        raise RecordError(reason, detail, where)
    return parsed


def file_raw(path: Path) -> bytes:
    """A whole file as a file-level reject's raw bytes, when it is small enough to keep."""
    try:
        if path.stat().st_size <= MAX_RAW_FILE:
            return path.read_bytes()
    except OSError:
        pass
    return b""


# --- an importer of a database (and of the format's other files) ------------------------------


class DatabaseImporter(Importer, abc.ABC):
    """An importer of a format kept in a SQLite database (a ``.db`` file, read read-only) and in
    files of another kind beside it: the database part both formats share.

    A subclass sets ``required`` and ``database_name`` and reads the tables
    (``read_tables``) and its other files (``sniff_file``, ``read_file``)."""

    #: the tables, and the columns of each, that the format's database must have
    required: ClassVar[Tables] = {}
    #: what a database of another schema is said not to be ("an OpenCode database")
    database_name: ClassVar[str] = "a database of this format"

    def sniff(self, path: Path, head: bytes) -> float:
        if is_sqlite(head):
            tables = sqlite_tables(path)
            return schema_score(tables, self.required) if tables is not None else 0.0
        if path.suffix == ".db":
            return 0.0
        return self.sniff_file(path, head)

    def sniff_file(self, path: Path, head: bytes) -> float:
        """Confidence that ``path``, not a database, is one of the format's other files."""
        return 0.0

    def reset(self) -> None:
        """Forget the counts of the last file read (an importer may read several)."""

    def read(self, path: Path) -> Iterator[Session | Reject]:
        self.reset()
        try:
            with path.open("rb") as f:
                head = f.read(len(SQLITE_HEADER))
        except OSError as e:
            self.tally.seen += 1
            yield Reject(str(path), "unreadable_file", str(e), b"", self.name)
            return
        if is_sqlite(head):
            yield from self._read_database(path)
        elif path.suffix == ".db":
            self.tally.seen += 1
            detail = "not a SQLite database (its first bytes are not the SQLite header)"
            yield Reject(str(path), "unreadable_file", detail, file_raw(path), self.name)
        else:
            yield from self.read_file(path)

    @abc.abstractmethod
    def read_file(self, path: Path) -> Iterator[Session | Reject]:
        """The sessions of one of the format's other files."""

    @abc.abstractmethod
    def read_tables(
        self, path: Path, conn: sqlite3.Connection, tables: Tables
    ) -> Iterator[Session | Reject]:
        """The sessions of a database whose schema has what ``required`` names."""

    def _read_database(self, path: Path) -> Iterator[Session | Reject]:
        try:
            with readonly_database(path) as conn:
                yield from self._read_connection(path, conn)
        except (*DB_ERRORS, OSError) as e:
            yield self.file_reject(path, "unreadable_file", f"the database cannot be read: {e}")

    def _read_connection(self, path: Path, conn: sqlite3.Connection) -> Iterator[Session | Reject]:
        try:
            tables, schema = schema_of(conn)
        except DB_ERRORS as e:
            yield self.file_reject(path, "unreadable_file", f"the database cannot be read: {e}")
            return
        problem = missing_schema(tables, self.required)
        if problem:
            detail = f"not {self.database_name}: {problem}"
            yield self.file_reject(path, "malformed", detail, schema)
            return
        yield from self.read_tables(path, conn, tables)

    def file_reject(self, path: Path, reason: str, detail: str, raw: bytes = b"") -> Reject:
        """A reject of the whole file (one record, counted as seen)."""
        self.tally.seen += 1
        return Reject(str(path), reason, clip(detail), raw, self.name, None, None, None, "$")

    def row_reject(
        self,
        path: Path,
        reason: str,
        detail: str,
        raw: bytes,
        index: int,
        session: str | None,
        where: str = "$",
    ) -> Reject:
        """A reject of one row (record ``index``, already counted as seen)."""
        return Reject(str(path), reason, detail, raw, self.name, index, None, session, where)

    def id_reject(
        self, path: Path, key: Any, seen: set[Any], raw: bytes, index: int, session: str | None
    ) -> Reject | None:
        """The reject of a session row with no id or with the id of an earlier row; None for a
        new id (now in ``seen``)."""
        if key is None:
            detail = "the session row has no id"
            return self.row_reject(path, "missing_field", detail, raw, index, session, "$.id")
        if key in seen:
            detail = "a second row of this id"
            return self.row_reject(path, "duplicate_session", detail, raw, index, session, "$.id")
        seen.add(key)
        return None
