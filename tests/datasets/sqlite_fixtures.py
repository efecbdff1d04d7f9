"""What the tests of the SQLite importers (OpenCode, Goose) share, so that each test file holds
only what is its format's own.

* the fixture builders: ``tests/fixtures/<format>/make_fixture.py`` builds the databases into a
  test's folder (``load_fixture``), or into a folder to look at (``write_databases``);
* the promise that reading never changes the user's database: its bytes and mtime are kept, no
  ``-wal``/``-shm`` file appears, and rows committed only to a live ``-wal`` are still read;
* the property machinery: a database damaged row by row, column by column or byte by byte
  (``RowDamage``, ``damage``) must still read without raising, every row counted.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import json
import random
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_importers_property import mutate_record

from ctxreplay.datasets.importers import AmbiguousFormat, detect, get_importer
from ctxreplay.datasets.ingest import ImportSummary, import_paths
from ctxreplay.datasets.messages import Session
from ctxreplay.datasets.rejects import Reject

from builders import FIXTURES, read_items

# --- the fixture builders ------------------------------------------------------------------


@functools.cache
def load_fixture(fmt: str) -> ModuleType:
    """``tests/fixtures/<fmt>/make_fixture.py``: a script in a data folder, not a package, so it
    is loaded by its path."""
    spec = importlib.util.spec_from_file_location(
        f"{fmt.replace('-', '_')}_fixture", FIXTURES / fmt / "make_fixture.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def database_fixtures(fmt: str, main: str, bad: str) -> tuple[Any, Any]:
    """A test file's ``db`` and ``bad_db`` fixtures: ``fmt``'s main and damaged databases,
    built afresh in the test's folder under the names ``main`` and ``bad``."""
    fx = load_fixture(fmt)

    @pytest.fixture(name="db")
    def db(tmp_path: Path) -> Path:
        return Path(fx.build_main(tmp_path / main))

    @pytest.fixture(name="bad_db")
    def bad_db(tmp_path: Path) -> Path:
        return Path(fx.build_bad(tmp_path / bad))

    return db, bad_db


def write_databases(args: Sequence[str], builds: Mapping[str, Callable[[Path], Path]]) -> None:
    """``python make_fixture.py [DIR]``: build each database afresh in DIR (default: here), to
    look at what the tests read."""
    out = Path(args[0] if args else ".")
    out.mkdir(parents=True, exist_ok=True)
    for name, build in builds.items():
        target = out / name
        target.unlink(missing_ok=True)
        print(build(target))


# --- checks every test file makes -------------------------------------------------------------


def accounted(summary: ImportSummary) -> None:
    """Every record read is a session, a reject or a counted skip."""
    assert summary.records == summary.sessions + summary.rejects + sum(summary.skipped.values())
    assert summary.unaccounted == 0


def others_are_not(fmt: str) -> None:
    """No other format's fixture is taken for ``fmt``: its sniffer scores those with its file
    endings 0, and detection never names it (an ambiguity between others is not ours)."""
    own = FIXTURES / fmt
    sniffer = get_importer(fmt)
    for path in sorted(FIXTURES.rglob("*")):
        if not path.is_file() or own in path.parents:
            continue
        if not path.suffix or path.suffix in sniffer.suffixes:
            assert sniffer.sniff(path, path.read_bytes()[: 1 << 20]) == 0.0, path
        try:
            assert detect(path) != fmt, path
        except AmbiguousFormat as e:
            assert fmt not in str(e), path


def file_rejects(fmt: str, path: Path, data: bytes) -> list[str]:
    """The reasons of the rejects a file of ``data`` gives; the file must count as one record."""
    path.write_bytes(data)
    importer = get_importer(fmt)
    items = list(importer.read(path))
    assert importer.tally.seen == 1
    return [i.reason for i in items if isinstance(i, Reject)]


def schema_reject(fmt: str, path: Path, script: str, corpus: Path) -> Reject:
    """The one reject of a database made by ``script`` (a schema that is not the format's)."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.executescript(script)
    summary = import_paths([path], corpus, fmt=fmt, progress=False)
    assert (summary.sessions, summary.rejects, summary.records) == (0, 1, 1)
    _, (reject,) = read_items(fmt, path)
    return reject


# --- the user's database is never changed -----------------------------------------------------


def digest(path: Path) -> tuple[str, int]:
    """A file's content hash and mtime: both must survive a read."""
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def folder_state(folder: Path) -> dict[str, tuple[str, int]]:
    """Every file of a folder with its digest: a read may neither change nor add one."""
    return {p.name: digest(p) for p in sorted(folder.iterdir())}


def read_live_wal(
    fmt: str, db: Path, write: Callable[[sqlite3.Connection], None]
) -> tuple[list[Session], list[Reject]]:
    """What ``fmt`` reads from ``db`` while a writer holds it in WAL mode, never checkpointing,
    after ``write`` (committed: the new rows are only in ``-wal``, as in a running agent's
    database); the folder must be as it was."""
    writer = sqlite3.connect(db)
    try:
        writer.execute("PRAGMA journal_mode=wal")
        writer.execute("PRAGMA wal_autocheckpoint=0")
        write(writer)
        writer.commit()
        assert db.with_name(db.name + "-wal").stat().st_size > 0
        before = folder_state(db.parent)
        items = read_items(fmt, db)
        assert folder_state(db.parent) == before
    finally:
        writer.close()
    return items


def read_closed_wal(fmt: str, db: Path) -> list[Session]:
    """The sessions of ``db`` switched to WAL mode and left without ``-wal``: detecting and
    reading it must create no side files (a plain read-only open would) nor change it."""
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA journal_mode=wal")
    assert sorted(p.name for p in db.parent.iterdir()) == [db.name]
    before = digest(db)
    assert detect(db) == fmt
    sessions, _ = read_items(fmt, db)
    assert sorted(p.name for p in db.parent.iterdir()) == [db.name]
    assert digest(db) == before
    return sessions


# --- property: a damaged database still reads, every row counted -----------------------------


@dataclass(frozen=True)
class RowDamage:
    """How to damage one format's database: which tables an edit picks, and the edit of the JSON
    its rows hold (``json_kind``, edited by ``mutate_record``)."""

    tables: tuple[str, ...]
    json_kind: str
    json_tables: tuple[str, ...]
    json_columns: tuple[str, ...]
    json_edits: tuple[str, ...]
    #: what a ``retype`` edit writes into a column
    values: tuple[Any, ...]
    #: what a ``bytes`` edit writes: JSON the format reads holding bytes that are not UTF-8
    bad_text: bytes

    @property
    def kinds(self) -> tuple[str, ...]:
        """The edits to draw: rows and columns, then bytes of the file."""
        return (self.json_kind, "delete", "null", "retype", "bytes", "flip", "truncate")


def damage_settings(examples: int) -> settings:
    """Hypothesis settings of the damage properties: reproducible, no deadline (a database is
    built per example)."""
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


def damage(path: Path, kind: str, rng: random.Random, spec: RowDamage) -> None:
    """One edit of ``spec.kinds`` to the database at ``path``."""
    if kind in ("flip", "truncate"):
        data = bytearray(path.read_bytes())
        if kind == "truncate":
            del data[rng.randrange(len(data)) :]
        else:
            for at in rng.sample(range(len(data)), rng.randint(1, 8)):
                data[at] ^= rng.randint(1, 255)
        path.write_bytes(bytes(data))
        return
    # an edit that finds nothing to change (a file an earlier edit broke, a value not JSON)
    with contextlib.suppress(sqlite3.DatabaseError, ValueError, TypeError):
        _damage_rows(path, kind, rng, spec)


def _pick(rng: random.Random, options: tuple[str, ...]) -> str:
    """A choice that draws from ``rng`` only when there is one to make (the draws after it stay
    those of a seed)."""
    return options[0] if len(options) == 1 else rng.choice(options)


def _damage_rows(path: Path, kind: str, rng: random.Random, spec: RowDamage) -> None:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        table = _pick(rng, spec.json_tables if kind == spec.json_kind else spec.tables)
        rowids = [r[0] for r in conn.execute(f"SELECT rowid FROM {table}")]
        if not rowids:
            return
        rowid = rng.choice(rowids)
        cols = [c[1] for c in conn.execute(f"PRAGMA table_info({table})")]
        col = rng.choice(cols)
        try:
            if kind == spec.json_kind:
                col = _pick(rng, spec.json_columns)
                sql = f"SELECT {col} FROM {table} WHERE rowid = ?"
                (data,) = conn.execute(sql, (rowid,)).fetchone()
                mutated = mutate_record(json.loads(data), rng.choice(spec.json_edits), rng)
                conn.execute(
                    f"UPDATE {table} SET {col} = ? WHERE rowid = ?", (json.dumps(mutated), rowid)
                )
            elif kind == "delete":
                conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (rowid,))
            elif kind == "null":
                conn.execute(f"UPDATE {table} SET {col} = NULL WHERE rowid = ?", (rowid,))
            elif kind == "retype":
                value = rng.choice(spec.values)
                conn.execute(f"UPDATE {table} SET {col} = ? WHERE rowid = ?", (value, rowid))
            else:  # undecodable bytes inside a text column
                conn.execute(
                    f"UPDATE {table} SET {col} = CAST(? AS TEXT) WHERE rowid = ?",
                    (spec.bad_text, rowid),
                )
        except sqlite3.IntegrityError:
            pass
        conn.commit()


def damage_test(fmt: str, name: str, spec: RowDamage) -> Callable[..., None]:
    """The property test of ``fmt``'s database: its fixture database (the damaged one 3 times in
    10) built as ``name``, given one to three ``spec`` edits, still reads (``check_read``)."""

    @damage_settings(120)
    @given(kinds=st.lists(st.sampled_from(spec.kinds), min_size=1, max_size=3),
           seed=st.integers(0, 2**32 - 1))  # fmt: skip
    def test(tmp_path_factory: pytest.TempPathFactory, kinds: list[str], seed: int) -> None:
        rng = random.Random(seed)
        path = tmp_path_factory.mktemp("mut") / name
        fx = load_fixture(fmt)
        (fx.build_bad if rng.random() < 0.3 else fx.build_main)(path)
        for kind in kinds:
            damage(path, kind, rng, spec)
        check_read(fmt, path)

    return test


def check_read(fmt: str, path: Path) -> tuple[list[Session], list[Reject]]:
    """Read ``path``, whatever it holds, without raising; every record is a session, a reject
    or a counted skip, and every session is well formed."""
    importer = get_importer(fmt)
    items = list(importer.read(path))
    sessions = [i for i in items if isinstance(i, Session)]
    rejects = [i for i in items if isinstance(i, Reject)]
    assert len(sessions) + len(rejects) == len(items)
    assert importer.tally.seen == len(items) + sum(importer.tally.skipped.values())
    for r in rejects:
        assert r.reason and isinstance(r.raw, bytes)
    for s in sessions:
        assert s.messages and [m.seq for m in s.messages] == list(range(len(s.messages)))
    return sessions, rejects
