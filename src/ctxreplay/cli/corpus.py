"""Corpus commands: import, synth, info, sql, export, cases."""

from __future__ import annotations

import contextlib
import shutil
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import click

from .app import echo_text, fail, main
from .options import Location, folder, option, out, quiet, seed


@main.command("import")
@click.argument("paths", nargs=-1, required=True, type=Location(exists=True, remote="read"))
@out("Corpus folder.", remote="native")
@option("--format", default=None, help="Force a format instead of detecting it.")
@option("--tokenizer", default="o200k_base", type=click.Choice(["o200k_base", "cl100k_base"]))
@option(
    "--buckets",
    type=click.IntRange(min=1),
    default=None,
    help="Hash buckets [default: one per ~128 MB].",
)
@option("--max-message-mb", type=click.FloatRange(min=0, min_open=True), default=10.0)
@option(
    "--chunk-mb",
    type=click.FloatRange(min=0, min_open=True),
    default=32.0,
    help="Rows held in memory before a part of the corpus is written (memory follows this).",
)
@option("--strict", is_flag=True, help="Exit non-zero if any record is rejected.")
@option("--overwrite", is_flag=True, help="Replace an existing corpus folder.")
@quiet
def import_cmd(
    paths: tuple[Path, ...],
    out: Path | str,
    format: str | None,
    tokenizer: str,
    buckets: int | None,
    max_message_mb: float,
    chunk_mb: float,
    strict: bool,
    overwrite: bool,
    quiet: bool,
) -> None:
    """Import trace files (formats auto-detected) into a Parquet corpus."""
    from ..datasets.ingest import import_paths

    with _corpus_out(out, overwrite, keep=lambda: summary.sessions > 0) as folder:
        summary = import_paths(
            paths,
            folder,
            fmt=format,
            tokenizer=tokenizer,
            overwrite=overwrite,
            buckets=buckets,
            max_message_bytes=int(max_message_mb * 1024 * 1024),
            progress=not quiet,
            chunk_bytes=max(1, int(chunk_mb * 1024 * 1024)),
        )
    click.echo(summary.render())
    if summary.sessions == 0:
        fail(
            f"nothing was imported, so no corpus was written at {out}{_why_none(paths, format)}", 1
        )
    if strict and summary.rejects:
        fail(f"{summary.rejects} records rejected (--strict)", 1)


@main.command("synth")
@out("Corpus folder.", remote="native")
@option("--sessions", type=click.IntRange(min=1), default=200, help="Synthetic sessions.")
@seed
@option("--overwrite", is_flag=True, help="Replace an existing corpus folder.")
@quiet
def synth_cmd(out: Path | str, sessions: int, seed: int, overwrite: bool, quiet: bool) -> None:
    """Write a synthetic corpus with planted dependencies and ground truth."""
    from ..datasets.synth import generate

    with _corpus_out(out, overwrite) as folder:
        summary = generate(
            folder, sessions=sessions, seed=seed, overwrite=overwrite, progress=not quiet
        )
    click.echo(summary.render())


def _why_none(paths: tuple[Path, ...], forced: str | None) -> str:
    """What the files look like, when a forced format read none of them."""
    if forced is None:
        return ""
    from ..datasets.ingest import formats_found

    found = formats_found(paths)
    looks = ", ".join(f"{k} ({n} file{'s' if n != 1 else ''})" for k, n in found.most_common())
    usable = [k for k in found if k not in ("none", "ambiguous", "unreadable", forced)]
    hint = f"; re-run with --format {usable[0]} or without --format" if usable else ""
    return f": --format {forced} read no session; by their content the files are {looks}{hint}"


@contextlib.contextmanager
def _corpus_out(
    out: Path | str, overwrite: bool, keep: Callable[[], bool] = lambda: True
) -> Iterator[Path]:
    """Where a corpus is built: ``out`` itself, or for a URI a local folder uploaded once the
    corpus is whole (nothing is uploaded when the build fails; with ``--overwrite`` the old
    corpus's files that the new one lacks are deleted after the upload, and it is never
    downloaded). When the build fails, or ``keep()`` says the corpus is not worth keeping
    (nothing imported), nothing is left at ``out`` that was not there before, so the corrected
    command runs as it is."""
    from .. import storage
    from ..datasets.store import CorpusError

    stage = storage.Staged(out, replace=True)
    local = None if storage.is_uri(out) else Path(out)
    was_dir = local is not None and local.is_dir()
    full = stage.existing or (
        local is not None and (local.is_file() or (was_dir and any(local.iterdir())))
    )
    ours = False  # whether what is at `out` now is this build's to remove
    kept = False
    try:
        if full and not overwrite:
            raise CorpusError(f"{out} exists and is not empty (use --overwrite)")
        ours = True
        yield stage.path
        kept = keep()
        if kept:
            stage.close()
    finally:
        stage.close(upload_changes=False)
        if ours and not kept and local is not None and local.exists():
            shutil.rmtree(local) if local.is_dir() else local.unlink()
            if was_dir:
                local.mkdir()  # the (empty) folder the user made stays


@main.command("info")
@folder("corpus")
def info_cmd(corpus: Path | str) -> None:
    """Sessions, messages and tokens by role, tool-output share, largest outputs, rejects."""
    from ..datasets.info import render_info
    from ..datasets.store import Corpus

    click.echo(render_info(Corpus(corpus)))


@main.command("sql")
@click.argument("folder", type=Location(exists=True, file_okay=False), required=False)
@click.argument("query", required=False)
@option("--format", type=click.Choice(["table", "csv", "json"]), default="table", help="Output.")
@option("--max-rows", type=click.IntRange(min=1), default=50, help="Rows shown as a table.")
@option("--describe", is_flag=True, help="Print every table's columns with their meaning.")
def sql_cmd(
    folder: Path | str | None, query: str | None, format: str, max_rows: int, describe: bool
) -> None:
    """Run SQL (DuckDB) over a corpus or run folder; its tables are views.

    `--describe` lists the tables (and what each column holds) instead; it needs no folder.
    """
    import polars as pl

    from .. import schema
    from ..sqlview import query_folder

    if describe:
        click.echo(schema.describe(), nl=False)
        return
    if folder is None:
        fail("give a corpus or run FOLDER and a QUERY, or --describe to list the tables", 2)
    if not query:
        fail("give a QUERY, or --describe to list the tables and their columns", 2)
    frame = query_folder(folder, query)
    if format == "csv":
        click.echo(frame.write_csv(), nl=False)
    elif format == "json":
        click.echo(frame.write_json())
    else:
        with pl.Config(tbl_rows=max_rows, tbl_cols=-1, fmt_str_lengths=60, tbl_width_chars=200):
            echo_text(frame)


@main.command("export")
@folder("corpus")
@out("JSONL file, one session per line.")
@option("--session", multiple=True, help="Only these session ids (repeatable).")
@option(
    "--format",
    type=click.Choice(["openai-chat", "openai-responses"]),
    default="openai-chat",
    show_default=True,
    help="OpenAI chat messages, or Responses API input items.",
)
def export_cmd(corpus: Path | str, out: Path, session: tuple[str, ...], format: str) -> None:
    """Export a corpus as OpenAI chat messages or Responses API items (one session per line);
    each format's importer reads the file back."""
    from ..datasets.export import export_corpus

    n = export_corpus(corpus, out, list(session) or None, format=format)
    click.echo(f"exported {n} sessions as {format} → {out}")


@main.command("cases")
@folder("corpus")
@out("Cases file (.parquet).", remote="native")
@option(
    "--trigger",
    multiple=True,
    help="tokens:N · fraction:F · user-turns · every:K · compactions (repeatable).",
)
@option("--window", type=click.IntRange(min=1), default=None, help="Context window for fraction:F.")
@option(
    "--cuts",
    type=Location(exists=True, dir_okay=False, remote="read"),
    help="Explicit cuts: a CSV (session,cut) or a labels cases.jsonl (session_id, cut, "
    "future_seqs: the future ends where the labels do; sessions not in the corpus are skipped).",
)
@option(
    "--horizon",
    default="all",
    help="all · turns:K (K agent requests) · messages:K (K visible messages).",
)
@option("--suite", default=None, help="hard (top 10% sessions by tool pressure) or hard:N.")
@option("--sample", type=click.IntRange(min=1), default=None, help="Keep N cases at random.")
@seed
def cases_cmd(
    corpus: Path | str,
    out: Path | str,
    trigger: tuple[str, ...],
    window: int | None,
    cuts: Path | None,
    horizon: str,
    suite: str | None,
    sample: int | None,
    seed: int,
) -> None:
    """Cut each session into cases (prefix + real future) at trigger points."""
    from ..datasets.cases import cut_corpus, why_no_cases
    from ..datasets.store import Corpus

    skipped: list[tuple[str, int]] = []
    unsendable: list[tuple[str, int]] = []
    no_case: Counter[str] = Counter()
    frame, path = cut_corpus(
        Corpus(corpus),
        out,
        triggers=trigger,
        window=window,
        cuts=cuts,
        horizon=horizon,
        suite=suite,
        sample=sample,
        seed=seed,
        skipped=skipped,
        unsendable=unsendable,
        no_case=no_case,
    )
    sessions = frame["session_id"].n_unique() if frame.height else 0
    click.echo(f"{frame.height} cases from {sessions} sessions → {path}")
    if frame.height == 0 and not cuts:
        click.echo(f"  no case: {why_no_cases(Corpus(corpus), trigger, window)}")
    if no_case:
        n = sum(no_case.values())
        click.echo(f"  {n:,} session{'s' if n != 1 else ''} gave no case:")
        for why, k in no_case.most_common():
            click.echo(f"    {k:>7,} {why}")
    if (suite or sample) and frame.height:
        click.echo("  (--suite and --sample keep a selection of the cases cut)")
    if skipped:
        n = len({sid for sid, _ in skipped})
        click.echo(
            f"  skipped {len(skipped)} cuts of {n} sessions not in this corpus "
            f"(e.g. {skipped[0][0]}@{skipped[0][1]})"
        )
    if unsendable:
        n = len({sid for sid, _ in unsendable})
        click.echo(
            f"  never cut: {len(unsendable)} assistant messages of {n} sessions whose recorded "
            "context no provider accepts (a message between a tool call and its result; "
            f"e.g. {unsendable[0][0]}@{unsendable[0][1]})"
        )
    if frame.height:
        kinds = frame["trigger"].str.split("+").explode().str.replace(r":\d+$", "").value_counts()
        shared = int(frame["trigger"].str.contains("+", literal=True).sum())
        click.echo(
            "  by trigger: "
            + ", ".join(f"{t} {n}" for t, n in kinds.sort("trigger").iter_rows())
            + (
                f" ({shared} cases were cut by several triggers and count under each)"
                if shared
                else ""
            )
        )
        tokens, share = frame["prefix_tokens"], frame["tool_share"]
        click.echo(
            f"  prefix tokens: median {int(tokens.median() or 0):,}, "  # type: ignore[arg-type]
            f"max {int(tokens.max() or 0):,}; "  # type: ignore[arg-type]
            f"tool share: mean {float(share.mean() or 0):.2f}"  # type: ignore[arg-type]
        )
