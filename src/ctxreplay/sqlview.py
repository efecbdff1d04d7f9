"""DuckDB over a ctxreplay folder (a corpus or a run): each Parquet table becomes a view.

``sessions/bucket=3/part-0.parquet`` → view ``sessions`` (hive partitions read as columns);
``verdicts.parquet`` → view ``verdicts``; ``decisions/policy=x/chunk-0.parquet`` → ``decisions``.
A run folder also exposes its corpus's tables when its manifest names the corpus.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import polars as pl

from .errors import CtxreplayError

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class SqlError(CtxreplayError):
    """A query DuckDB could not run (syntax, unknown table or column, ...)."""


def _quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def tables_in(folder: Path) -> dict[str, tuple[str, bool]]:
    """view name → (glob, hive partitioned) for every Parquet table directly in ``folder``."""
    found: dict[str, tuple[str, bool]] = {}
    for entry in sorted(folder.iterdir()):
        name = entry.stem if entry.is_file() else entry.name
        if not _NAME.match(name):
            continue
        if entry.is_file() and entry.suffix == ".parquet":
            found[name] = (str(entry), False)
        elif entry.is_dir():
            files = sorted(entry.rglob("*.parquet"))
            if files:
                hive = any("=" in p.name for p in entry.iterdir() if p.is_dir())
                found[name] = (str(entry / "**" / "*.parquet"), hive)
    return found


def connect_folder(
    folder: Path, con: duckdb.DuckDBPyConnection | None = None
) -> duckdb.DuckDBPyConnection:
    con = con or duckdb.connect()
    folder = Path(folder)
    views = tables_in(folder)
    manifest = folder / "manifest.json"
    if manifest.exists():
        try:
            doc = json.loads(manifest.read_text())
        except (OSError, ValueError) as e:
            raise SqlError(
                f"{manifest} is damaged ({e}); re-run the command that made {folder}"
            ) from None
        corpus = doc.get("corpus_path") if isinstance(doc, dict) else None
        if corpus and Path(corpus).exists():
            for name, spec in tables_in(Path(corpus)).items():
                views.setdefault(name, spec)
    for name, (glob, hive) in views.items():
        options = (
            ", hive_partitioning = true, union_by_name = true" if hive else ", union_by_name = true"
        )
        con.execute(
            f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet({_quote(glob)}{options})"
        )
    return con


def query_folder(folder: Path, query: str) -> pl.DataFrame:
    """``query`` over the folder's tables; a damaged table or a bad query is one ``SqlError``."""
    try:
        with connect_folder(folder) as con:
            return run_query(con, query)
    except duckdb.Error as e:
        raise SqlError(
            f"{folder}: a table is damaged ({str(e).splitlines()[0]}); re-run the command that "
            "wrote it (a resumed replay or judge redoes damaged parts)"
        ) from None


def run_query(con: duckdb.DuckDBPyConnection, query: str) -> pl.DataFrame:
    """The query's result as a frame; any DuckDB error is the user's, said in one line."""
    try:
        return con.sql(query).pl()
    except duckdb.Error as e:
        raise SqlError(str(e).splitlines()[0]) from None
