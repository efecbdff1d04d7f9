"""The ``ctxreplay`` command. Commands are thin: parse options, call the library, print.

Every option can also come from an environment variable ``CTXREPLAY_<COMMAND>_<OPTION>``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from . import __version__


def _fail(message: str, code: int = 1) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


@click.group(
    context_settings={"auto_envvar_prefix": "CTXREPLAY", "help_option_names": ["-h", "--help"]}
)
@click.version_option(__version__, prog_name="ctxreplay")
def main() -> None:
    """Replay recorded agent traces through context-management policies, offline."""


# --- corpus ---------------------------------------------------------------------------------


@main.command("import")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "-o", "--out", "out", required=True, type=click.Path(path_type=Path), help="Corpus folder."
)
@click.option("--format", "fmt", default=None, help="Force a format instead of detecting it.")
@click.option(
    "--tokenizer",
    default="o200k_base",
    show_default=True,
    type=click.Choice(["o200k_base", "cl100k_base"]),
)
@click.option("--buckets", type=int, default=None, help="Hash buckets (default: one per ~128 MB).")
@click.option("--max-message-mb", type=float, default=10.0, show_default=True)
@click.option("--strict", is_flag=True, help="Exit non-zero if any record is rejected.")
@click.option("--overwrite", is_flag=True, help="Replace an existing corpus folder.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def import_cmd(
    paths: tuple[Path, ...],
    out: Path,
    fmt: str | None,
    tokenizer: str,
    buckets: int | None,
    max_message_mb: float,
    strict: bool,
    overwrite: bool,
    quiet: bool,
) -> None:
    """Import trace files (formats auto-detected) into a Parquet corpus."""
    from .datasets.ingest import import_paths
    from .datasets.store import CorpusError
    from .registry import UnknownPluginError

    try:
        summary = import_paths(
            paths,
            out,
            fmt=fmt,
            tokenizer=tokenizer,
            overwrite=overwrite,
            buckets=buckets,
            max_message_bytes=int(max_message_mb * 1024 * 1024),
            progress=not quiet,
        )
    except (CorpusError, UnknownPluginError, FileNotFoundError) as e:
        _fail(str(e), 2)
    click.echo(summary.render())
    if summary.sessions == 0:
        _fail("nothing was imported", 1)
    if strict and summary.rejects:
        _fail(f"{summary.rejects} records rejected (--strict)", 1)


@main.command("sql")
@click.argument("folder", type=click.Path(exists=True, path_type=Path))
@click.argument("query")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "csv", "json"]),
    default="table",
    show_default=True,
)
@click.option("--max-rows", type=int, default=50, show_default=True)
def sql_cmd(folder: Path, query: str, fmt: str, max_rows: int) -> None:
    """Run SQL (DuckDB) over a corpus or run folder; its tables are views."""
    import polars as pl

    from .sqlview import connect_folder

    with connect_folder(folder) as con:
        try:
            frame = con.sql(query).pl()
        except Exception as e:  # DuckDB raises many error types; all are user errors here
            _fail(str(e).splitlines()[0], 2)
    if fmt == "csv":
        click.echo(frame.write_csv(), nl=False)
    elif fmt == "json":
        click.echo(frame.write_json())
    else:
        with pl.Config(tbl_rows=max_rows, tbl_cols=-1, fmt_str_lengths=60, tbl_width_chars=200):
            click.echo(frame)


if __name__ == "__main__":
    main()
