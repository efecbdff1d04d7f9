"""DuckDB over a ctxreplay folder (a corpus or a run): each Parquet table becomes a view.

``sessions/bucket=3/part-0.parquet`` → view ``sessions`` (hive partitions read as columns);
``verdicts.parquet`` → view ``verdicts``; ``decisions/policy=x/chunk-0.parquet`` → ``decisions``.
A run folder also exposes its corpus's tables when its manifest names the corpus.

A folder on object storage (``s3://…``, anything ``storage`` opens) is read without DuckDB's
httpfs: each table becomes a pyarrow dataset over the storage's filesystem (hive partitions and
columns added over versions unified, as ``union_by_name``) registered as the view.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import cast

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from . import storage
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


def remote_tables(uri: str) -> dict[str, tuple[list[str], bool]]:
    """view name → (Parquet files relative to ``uri``, hive partitioned) for every table of a
    folder on object storage, by the same rules as :func:`tables_in`."""
    found: dict[str, tuple[list[str], bool]] = {}
    for rel in storage.list_files(uri):
        head, _, rest = rel.partition("/")
        name = head.removesuffix(".parquet") if not rest else head
        if not rel.endswith(".parquet") or not _NAME.match(name):
            continue
        files, hive = found.get(name, ([], False))
        files.append(rel)
        found[name] = (files, hive or ("=" in rest.split("/")[0] and "/" in rest))
    return found


def remote_dataset(uri: str, name: str, files: list[str], hive: bool) -> ds.Dataset:
    """Table ``name`` of the folder ``uri`` on object storage (``files`` relative to it) as a
    pyarrow dataset: the schemas of all its parts unified (a column added since a part was
    written reads as null), hive partitions below ``uri/name/`` as columns."""
    fs, root = storage.resolve(uri)
    paths = [f"{root}/{f}" for f in files]
    options = {"partitioning": "hive", "partition_base_dir": f"{root}/{name}"} if hive else {}
    first = ds.dataset(paths, filesystem=fs, format="parquet", **options)
    with ThreadPoolExecutor(8) as pool:
        schemas = list(pool.map(lambda p: pq.read_schema(p, filesystem=fs), paths))
    schema = pa.unify_schemas([first.schema, *schemas], promote_options="permissive")
    return ds.dataset(paths, filesystem=fs, format="parquet", schema=schema, **options)


def _manifest_of(folder: Path | str) -> dict[str, object] | None:
    manifest = storage.join(folder, "manifest.json")
    if not storage.exists(manifest):
        return None
    try:
        doc = json.loads(storage.read_text(manifest))
    except (OSError, ValueError, storage.StorageError) as e:
        raise SqlError(
            f"{manifest} is damaged ({e}); re-run the command that made {folder}"
        ) from None
    return doc if isinstance(doc, dict) else None


def connect_folder(
    folder: Path | str, con: duckdb.DuckDBPyConnection | None = None
) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with the folder's tables (and its corpus's, for a run) as views; the
    folder and the corpus may each be local or on object storage."""
    con = con or duckdb.connect()
    folders = [folder if storage.is_uri(folder) else Path(folder)]
    doc = _manifest_of(folders[0])
    corpus = doc.get("corpus_path") if doc else None
    if isinstance(corpus, str) and corpus and storage.exists(corpus):
        folders.append(corpus if storage.is_uri(corpus) else Path(corpus))
    seen: set[str] = set()
    for where in folders:
        if isinstance(where, Path):
            for name, (glob, hive) in tables_in(where).items():
                if name in seen:
                    continue
                seen.add(name)
                options = (
                    ", hive_partitioning = true, union_by_name = true"
                    if hive
                    else ", union_by_name = true"
                )
                con.execute(
                    f"CREATE OR REPLACE VIEW {name} AS "
                    f"SELECT * FROM read_parquet({_quote(glob)}{options})"
                )
        else:
            for name, (files, hive) in remote_tables(where).items():
                if name not in seen:
                    seen.add(name)
                    con.register(name, remote_dataset(where, name, files, hive))
    return con


def query_folder(folder: Path | str, query: str) -> pl.DataFrame:
    """``query`` over the folder's tables; a damaged table or a bad query is one ``SqlError``."""
    try:
        with connect_folder(folder) as con:
            return run_query(con, query)
    except (duckdb.Error, pa.ArrowException, OSError) as e:
        raise SqlError(
            f"{storage.redact(str(folder))}: a table is damaged ({str(e).splitlines()[0]}); re-run the command that "
            "wrote it (a resumed replay or judge redoes damaged parts)"
        ) from None


def run_query(con: duckdb.DuckDBPyConnection, query: str) -> pl.DataFrame:
    """The query's result as a frame; any DuckDB error is the user's, said in one line."""
    try:
        return cast(pl.DataFrame, con.sql(query).pl())
    except duckdb.Error as e:
        raise SqlError(str(e).splitlines()[0]) from None
