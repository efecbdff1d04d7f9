"""The ``ctxreplay`` command. Commands are thin: parse options, call the library, print.

Every option can also come from an environment variable ``CTXREPLAY_<COMMAND>_<OPTION>``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn, overload

import click

from .version import __version__
from .judges.base import DEFAULT_JUDGE


def _fail(message: str, code: int = 1) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


@overload
def _deps_labels(value: str) -> str | None: ...
@overload
def _deps_labels(value: str, option: str) -> str: ...
def _deps_labels(value: str, option: str | None = None) -> str | None:
    """The labels path of a ``deps:LABELS`` value (a malformed one exits). Given the ``option``
    it came from, the value must be ``deps:LABELS`` (anything else exits naming the option);
    without it, anything else is None."""
    from .engines.calibrate import parse_deps_against

    try:
        labels = parse_deps_against(value)
    except ValueError as e:
        _fail(str(e), 2)
    if labels is None and option is not None:
        _fail(f"{option} takes deps:LABELS, not {value!r}", 2)
    return labels


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


@main.command("info")
@click.argument("corpus", type=click.Path(exists=True, path_type=Path))
def info_cmd(corpus: Path) -> None:
    """Sessions, messages and tokens by role, tool-output share, largest outputs, rejects."""
    from .datasets.info import render_info

    click.echo(render_info(_open_corpus(corpus)))


@main.command("export")
@click.argument("corpus", type=click.Path(exists=True, path_type=Path))
@click.option("-o", "--out", "out", required=True, type=click.Path(path_type=Path))
@click.option("--session", "sessions", multiple=True, help="Only these session ids.")
def export_cmd(corpus: Path, out: Path, sessions: tuple[str, ...]) -> None:
    """Export a corpus to OpenAI chat JSONL (one session per line)."""
    from .datasets.export import export_corpus
    from .datasets.store import CorpusError

    try:
        n = export_corpus(corpus, out, list(sessions) or None)
    except CorpusError as e:
        _fail(str(e), 2)
    click.echo(f"exported {n} sessions → {out}")


@main.command("synth")
@click.option("-o", "--out", "out", required=True, type=click.Path(path_type=Path))
@click.option("--sessions", type=int, default=200, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--overwrite", is_flag=True)
@click.option("--quiet", is_flag=True)
def synth_cmd(out: Path, sessions: int, seed: int, overwrite: bool, quiet: bool) -> None:
    """Write a synthetic corpus with planted dependencies and ground truth."""
    from .datasets.store import CorpusError
    from .datasets.synth import generate

    try:
        summary = generate(
            out, sessions=sessions, seed=seed, overwrite=overwrite, progress=not quiet
        )
    except CorpusError as e:
        _fail(str(e), 2)
    click.echo(summary.render())


@main.command("cases")
@click.argument("corpus", type=click.Path(exists=True, path_type=Path))
@click.option(
    "-o",
    "--out",
    "out",
    required=True,
    type=click.Path(path_type=Path),
    help="Cases file (.parquet).",
)
@click.option(
    "--trigger", "triggers", multiple=True, help="tokens:N · fraction:F · user-turns · every:K"
)
@click.option("--window", type=int, default=None, help="Context window for fraction triggers.")
@click.option(
    "--cuts",
    type=click.Path(exists=True, path_type=Path),
    help="Explicit cuts: a CSV (session,cut) or a labels cases.jsonl (session_id, cut, "
    "future_seqs: the future ends where the labels do; sessions not in the corpus are skipped).",
)
@click.option(
    "--horizon",
    default="all",
    show_default=True,
    help="all · turns:K (K agent requests) · messages:K (K visible messages)",
)
@click.option("--suite", default=None, help="hard (top 10% sessions by tool pressure) or hard:N")
@click.option("--sample", type=int, default=None, help="Keep N cases at random.")
@click.option("--seed", type=int, default=0, show_default=True)
def cases_cmd(
    corpus: Path,
    out: Path,
    triggers: tuple[str, ...],
    window: int | None,
    cuts: Path | None,
    horizon: str,
    suite: str | None,
    sample: int | None,
    seed: int,
) -> None:
    """Cut each session into cases (prefix + real future) at trigger points."""
    from .datasets.cases import CaseError, cut_corpus

    skipped: list[tuple[str, int]] = []
    try:
        frame, path = cut_corpus(
            _open_corpus(corpus),
            out,
            triggers=triggers,
            window=window,
            cuts=cuts,
            horizon=horizon,
            suite=suite,
            sample=sample,
            seed=seed,
            skipped=skipped,
        )
    except CaseError as e:
        _fail(str(e), 2)
    sessions = frame["session_id"].n_unique() if frame.height else 0
    click.echo(f"{frame.height} cases from {sessions} sessions → {path}")
    if skipped:
        n = len({sid for sid, _ in skipped})
        click.echo(
            f"  skipped {len(skipped)} cuts of {n} sessions not in this corpus "
            f"(e.g. {skipped[0][0]}@{skipped[0][1]})"
        )
    if frame.height:
        kinds = frame["trigger"].str.split("+").explode().str.replace(r":\d+$", "").value_counts()
        click.echo(
            "  by trigger: " + ", ".join(f"{t} {n}" for t, n in kinds.sort("trigger").iter_rows())
        )
        click.echo(
            f"  prefix tokens: median {int(frame['prefix_tokens'].median() or 0):,}, "
            f"max {int(frame['prefix_tokens'].max() or 0):,}; "
            f"tool share: mean {float(frame['tool_share'].mean() or 0):.2f}"
        )


@main.command("policies")
def policies_cmd() -> None:
    """List the registered policies with their parameters and defaults."""
    from .policies.base import all_policies, policies
    from .registry import describe_params

    for name in all_policies():
        cls = policies.get(name)
        doc = (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""
        click.echo(f"{name}: {doc}")
        for pname, ptype, default in describe_params(cls.Params):
            click.echo(f"    {pname} ({ptype}) = {default!r}")


@main.command("replay")
@click.argument("corpus", type=click.Path(exists=True, path_type=Path))
@click.option("--cases", "cases", required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--policy",
    "policy_specs",
    multiple=True,
    required=True,
    help="name[:key=value,...]; repeatable",
)
@click.option(
    "-o", "--out", "out", required=True, type=click.Path(path_type=Path), help="Run folder."
)
@click.option("--workers", type=int, default=2, show_default=True)
@click.option(
    "--tariff", default=None, help="Tariff name from the tariffs file (default: its default)."
)
@click.option(
    "--tariffs", "tariffs_path", type=click.Path(exists=True), default=None, help="Tariffs TOML."
)
@click.option("--quiet", is_flag=True)
def replay_cmd(
    corpus: Path,
    cases: Path,
    policy_specs: tuple[str, ...],
    out: Path,
    workers: int,
    tariff: str | None,
    tariffs_path: str | None,
    quiet: bool,
) -> None:
    """Replay every case through every policy into a run folder (re-runs skip finished work)."""
    from .datasets.cases import CaseError
    from .engines.replay import run_replay
    from .registry import UnknownPluginError
    from .runs import RunError
    from .tariffs import TariffError

    try:
        summary = run_replay(
            corpus,
            cases,
            policy_specs,
            out,
            workers=workers,
            tariff=tariff,
            tariffs_path=tariffs_path,
            progress=not quiet,
        )
    except (RunError, CaseError, TariffError, UnknownPluginError, ValueError) as e:
        _fail(str(e), 2)
    click.echo(summary.render())


@main.command("sweep")
@click.argument("corpus", type=click.Path(exists=True, path_type=Path))
@click.option("--cases", "cases", required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "-o", "--out", "out", required=True, type=click.Path(path_type=Path), help="Run folder."
)
@click.option(
    "--grid",
    "grids",
    multiple=True,
    required=True,
    help="family:param=values[;param=values] — values a,b,c · a..b (integers) · a..b/step; "
    "repeatable; the family's defaults are always a point.",
)
@click.option(
    "--policy", "policy_specs", multiple=True, help="Extra policies to include (e.g. noop)."
)
@click.option(
    "--judge",
    "judge_spec",
    default=DEFAULT_JUDGE,
    show_default=True,
    help="The judge every point is judged with.",
)
@click.option(
    "--labels",
    default=None,
    help="deps:LABELS — also judge every point with the gold dependency labels "
    "(strict, whitespace, recovery) and calibrate the judge against them.",
)
@click.option("--workers", type=int, default=2, show_default=True)
@click.option("--quiet", is_flag=True)
def sweep_cmd(
    corpus: Path,
    cases: Path,
    out: Path,
    grids: tuple[str, ...],
    policy_specs: tuple[str, ...],
    judge_spec: str,
    labels: str | None,
    workers: int,
    quiet: bool,
) -> None:
    """Replay and judge a grid of policy parameters into one run (re-runs do only new points);
    `ctxreplay report RUN` then adds the pruning/no-impact frontier."""
    from .engines.sweep import run_sweep
    from .registry import UnknownPluginError
    from .runs import RunError

    labels_path = _deps_labels(labels, "--labels") if labels is not None else None
    try:
        summary = run_sweep(
            corpus,
            cases,
            grids,
            out,
            policies=policy_specs,
            judge=judge_spec,
            labels=labels_path,
            workers=workers,
            progress=not quiet,
        )
    except (RunError, UnknownPluginError, ValueError) as e:  # SweepError etc. are ValueErrors
        _fail(str(e), 2)
    click.echo(summary.render())


@main.command("show")
@click.argument("run", type=click.Path(exists=True, path_type=Path))
@click.argument("case")
@click.option("--policy", required=True, help="Policy label or name in the run.")
@click.option("--width", type=int, default=160, show_default=True)
def show_cmd(run: Path, case: str, policy: str, width: int) -> None:
    """Show a case's prefix and its view side by side, object by object."""
    from .reports.show import render_show
    from .runs import Run, RunError

    try:
        click.echo(render_show(Run(run), case, policy, width))
    except RunError as e:
        _fail(str(e), 2)


@main.command("judge")
@click.argument("run", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--judge",
    "judge_spec",
    default=DEFAULT_JUDGE,
    show_default=True,
    help="flow · anchor · llm · truth · deps:path=LABELS (name[:key=value,...])",
)
@click.option(
    "--policy", "policies", multiple=True, help="Only these policies (default: all in the run)."
)
@click.option("--base-url", default=None, help="OpenAI-compatible endpoint (llm judge).")
@click.option("--model", default=None, help="Model name (llm judge).")
@click.option(
    "--api-key-env",
    default=None,
    help="Environment variable holding the API key (default OPENAI_API_KEY).",
)
@click.option("--concurrency", default=None, help="Calls in flight per endpoint (llm judge).")
@click.option("--workers", type=int, default=2, show_default=True)
@click.option(
    "--limit", type=int, default=None, help="Judge at most N pairs (for trying things out)."
)
@click.option("--quiet", is_flag=True)
def judge_cmd(
    run: Path,
    judge_spec: str,
    policies: tuple[str, ...],
    base_url: str | None,
    model: str | None,
    api_key_env: str | None,
    concurrency: str | None,
    workers: int,
    limit: int | None,
    quiet: bool,
) -> None:
    """Give every (case, policy) of a run a verdict; re-runs judge only what is missing."""
    from .engines.judge import run_judge
    from .registry import UnknownPluginError
    from .runs import RunError

    overrides = {
        "base_url": base_url,
        "model": model,
        "api_key_env": api_key_env,
        "concurrency": concurrency,
    }
    try:
        summary = run_judge(
            run,
            judge_spec,
            policies=policies or None,
            workers=workers,
            limit=limit,
            progress=not quiet,
            overrides=overrides,
        )
    except (RunError, UnknownPluginError, ValueError) as e:
        _fail(str(e), 2)
    click.echo(summary.render())


@main.command("calibrate")
@click.argument("run", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--judge",
    "judge_name",
    default=DEFAULT_JUDGE,
    show_default=True,
    help="The judge to calibrate.",
)
@click.option(
    "--against",
    required=True,
    help="Another judge, a labels CSV (case_id,policy,label[,category]), truth, or "
    "deps:LABELS (dependency labels on real traces: a folder with cases.jsonl and "
    "dependencies.jsonl; compared in the strict, whitespace and recovery variants).",
)
@click.option("--policy", "policies", multiple=True, help="Only these policies.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "csv", "json"]),
    default="table",
    show_default=True,
)
def calibrate_cmd(
    run: Path, judge_name: str, against: str, policies: tuple[str, ...], fmt: str
) -> None:
    """Confusion matrix, sensitivity/specificity, Cohen's kappa with CI, per-category accuracy."""
    import polars as pl

    from .engines.calibrate import compare, judged_by, read_labels
    from .engines.judge import run_judge
    from .runs import read_verdicts

    labels = _deps_labels(against)
    if labels is not None:
        _calibrate_deps(run, judge_name, labels, policies, fmt)
        return
    try:
        _, judged = judged_by(run, judge_name)
    except ValueError as e:
        _fail(str(e), 2)
    if against.endswith(".csv"):
        reference = read_labels(against)
    else:
        if against == "truth":
            run_judge(run, "truth", progress=False)
        reference = read_verdicts(run, against)
        if reference.height == 0:
            _fail(f"no verdicts from {against!r} in {run}", 2)
    if policies:
        judged = judged.filter(pl.col("policy").is_in(list(policies)))
        reference = reference.filter(pl.col("policy").is_in(list(policies)))
    result = compare(judged, reference, judge_name, against)
    if fmt == "csv":
        click.echo(result.table().write_csv(), nl=False)
    elif fmt == "json":
        click.echo(result.table().write_json())
    else:
        click.echo(result.render())


def _calibrate_deps(
    run: Path, judge_name: str, labels: str, policies: tuple[str, ...], fmt: str
) -> None:
    import json

    from .engines.calibrate import calibrate_against_deps
    from .runs import RunError, calibration_path

    try:
        result = calibrate_against_deps(run, judge_name, labels, policies=policies or None)
    except (RunError, ValueError) as e:  # LabelsError is a ValueError
        _fail(str(e), 2)
    if fmt == "csv":
        click.echo(result.table().write_csv(), nl=False)
    elif fmt == "json":
        click.echo(json.dumps(result.as_dict(), indent=2))
    else:
        click.echo(result.render())
        click.echo(f"\nstored the strict calibration in {calibration_path(run, result.judge)}")


@main.command("report")
@click.argument("run", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--judge",
    default=None,
    help=f"Which judge's verdicts (default: the run's only judge, else {DEFAULT_JUDGE}).",
)
@click.option(
    "--reference",
    default=None,
    help="Policy the others are compared with (default: best no-impact).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["terminal", "markdown", "csv", "json", "html"]),
    default=None,
    help="Default: terminal, or from the -o file's suffix.",
)
@click.option(
    "-o",
    "--out",
    "out",
    type=click.Path(path_type=Path),
    default=None,
    help="Write to a file (or folder for csv).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--bootstrap", type=int, default=2000, show_default=True, help="Bootstrap resamples.")
@click.option(
    "--calibration",
    "calibration_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="The judge's calibration from a labelled run (RUN/calibration/*.json) to correct "
    "no-impact with (default: the run's own, if any).",
)
def report_cmd(
    run: Path,
    judge: str | None,
    reference: str | None,
    fmt: str | None,
    out: Path | None,
    seed: int,
    bootstrap: int,
    calibration_file: Path | None,
) -> None:
    """No-impact with Wilson intervals, paired tests, taxonomy audit, cost, trade-off plot."""
    from .reports import RenderError, ReportError, build_report
    from .runs import RunError

    try:
        report = build_report(
            run,
            judge=judge,
            reference=reference,
            seed=seed,
            bootstrap=bootstrap,
            calibration_file=calibration_file,
        )
        if out is None:
            click.echo(report.render(fmt or "terminal"))
        else:
            for path in report.save(out, fmt):
                click.echo(f"wrote {path}")
    except (ReportError, RunError, RenderError) as e:
        _fail(str(e), 2)


@main.command("audit")
@click.argument("run", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--category",
    default=None,
    help="evidence_detail · locator_handle · behavioural_contract · verbatim_source · live_state · recovery_routing",
)
@click.option(
    "--missed",
    default=None,
    help="deps:LABELS — list instead the gold-required dependencies the judge missed.",
)
@click.option("--policy", default=None, help="Only this policy.")
@click.option("--judge", default=DEFAULT_JUDGE, show_default=True)
@click.option("--max-rows", type=int, default=50, show_default=True)
def audit_cmd(
    run: Path,
    category: str | None,
    missed: str | None,
    policy: str | None,
    judge: str,
    max_rows: int,
) -> None:
    """List the losses of one category with their evidence, or (``--missed deps:LABELS``) the
    labelled dependencies the judge missed, for a person to inspect."""
    import polars as pl

    from .reports import ReportError, audit
    from .runs import RunError

    if missed is not None:
        from .engines.calibrate import missed_dependencies, render_missed

        labels = _deps_labels(missed, "--missed")
        try:
            frame = missed_dependencies(run, judge, labels, policy=policy)
        except (RunError, ValueError) as e:
            _fail(str(e), 2)
        click.echo(render_missed(frame, judge, max_rows))
        return
    if category is None:
        _fail("give --category CATEGORY or --missed deps:LABELS", 2)

    try:
        frame = audit(run, category, policy=policy, judge=judge)
    except (ReportError, RunError) as e:
        _fail(str(e), 2)
    if frame.height == 0:
        click.echo(f"no {category} losses" + (f" under {policy}" if policy else ""))
        return
    click.echo(f"{frame.height} {category} losses" + (f" under {policy}" if policy else ""))
    with pl.Config(
        tbl_rows=max_rows,
        tbl_cols=-1,
        fmt_str_lengths=70,
        tbl_width_chars=220,
        tbl_hide_dataframe_shape=True,
    ):
        click.echo(frame.head(max_rows))


@main.command("export-verdicts")
@click.argument("run", type=click.Path(exists=True, path_type=Path))
@click.option("--to", "to", required=True, type=click.Choice(["otel", "phoenix", "langfuse"]))
@click.option("-o", "--out", "out", required=True, type=click.Path(path_type=Path))
@click.option("--judge", default=DEFAULT_JUDGE, show_default=True)
def export_verdicts_cmd(run: Path, to: str, out: Path, judge: str) -> None:
    """Verdicts as OpenTelemetry gen_ai.evaluation.result events, Phoenix Parquet or Langfuse scores."""
    from .reports import ReportError, export_verdicts
    from .runs import RunError

    try:
        click.echo(export_verdicts(run, to, out, judge=judge).render())
    except (ReportError, RunError) as e:
        _fail(str(e), 2)


def _load_config(ctx: click.Context, _param: click.Parameter, value: Path | None) -> None:
    if value is None:
        return
    import tomllib

    try:
        doc = tomllib.loads(value.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise click.BadParameter(f"{value}: {e}") from None
    # keys may be spelled like the flags (``policy``, ``synth-sessions``) or like the parameters
    names = {p.name for p in ctx.command.params if p.name}
    by_flag = {
        o.lstrip("-").replace("-", "_"): p.name
        for p in ctx.command.params
        for o in p.opts
        if p.name
    }
    values = {}
    for key, v in doc.items():
        name = by_flag.get(key.replace("-", "_"), key.replace("-", "_"))
        if name not in names:
            raise click.BadParameter(
                f"{value}: unknown key {key!r}; the keys are this command's options"
            )
        values[name] = v
    ctx.default_map = {**(ctx.default_map or {}), **values}


@main.command("run")
@click.option(
    "--config",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    callback=_load_config,
    is_eager=True,
    expose_value=False,
    help="TOML file whose keys are these options.",
)
@click.option(
    "-o",
    "--out",
    "out",
    type=click.Path(path_type=Path),
    required=True,
    help="Folder for every stage.",
)
@click.option(
    "--source",
    "sources",
    multiple=True,
    help="Trace files or folders to import (none: synthesise).",
)
@click.option("--synth-sessions", type=int, default=200, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--trigger", "triggers", multiple=True, default=("user-turns",), show_default=True)
@click.option("--window", type=int, default=None)
@click.option("--horizon", default="all", show_default=True)
@click.option("--suite", default=None)
@click.option("--sample", type=int, default=None)
@click.option(
    "--policy", "policies", multiple=True, help="Repeatable; default: every built-in policy."
)
@click.option("--workers", type=int, default=2, show_default=True)
@click.option("--tariff", default=None)
@click.option("--tariffs", "tariffs_path", default=None)
@click.option("--judge", default=DEFAULT_JUDGE, show_default=True)
@click.option("--base-url", default=None)
@click.option("--model", default=None)
@click.option("--api-key-env", default=None)
@click.option("--reference", default=None)
@click.option("--bootstrap", type=int, default=2000, show_default=True)
@click.option(
    "--report-format",
    type=click.Choice(["terminal", "markdown", "csv", "json"]),
    default="terminal",
    show_default=True,
)
@click.option("--quiet", is_flag=True)
def run_cmd(**opts: object) -> None:
    """Import (or synthesise) → cases → replay → judge → report, reusing stages already done."""
    from .engines.pipeline import DEMO_POLICIES, PipelineConfig

    judge_options = {
        k: str(opts[k]) for k in ("base_url", "model", "api_key_env") if opts[k] is not None
    }
    cfg = PipelineConfig(
        out=Path(str(opts["out"])),
        sources=[str(s) for s in opts["sources"]],  # type: ignore[union-attr]
        synth_sessions=int(opts["synth_sessions"]),  # type: ignore[arg-type]
        seed=int(opts["seed"]),  # type: ignore[arg-type]
        triggers=tuple(opts["triggers"]),  # type: ignore[arg-type]
        window=opts["window"],  # type: ignore[arg-type]
        horizon=str(opts["horizon"]),
        suite=opts["suite"],  # type: ignore[arg-type]
        sample=opts["sample"],  # type: ignore[arg-type]
        policies=tuple(opts["policies"]) or DEMO_POLICIES,  # type: ignore[arg-type]
        workers=int(opts["workers"]),  # type: ignore[arg-type]
        tariff=opts["tariff"],  # type: ignore[arg-type]
        tariffs_path=opts["tariffs_path"],  # type: ignore[arg-type]
        judge=str(opts["judge"]),
        judge_options=judge_options,
        reference=opts["reference"],  # type: ignore[arg-type]
        bootstrap=int(opts["bootstrap"]),  # type: ignore[arg-type]
        report_format=str(opts["report_format"]),
        progress=not opts["quiet"],
    )
    _run_pipeline(cfg)


def _run_pipeline(cfg) -> None:
    from .datasets.cases import CaseError
    from .datasets.store import CorpusError
    from .engines.pipeline import run_pipeline
    from .registry import UnknownPluginError
    from .reports import ReportError
    from .runs import RunError

    try:
        run_pipeline(cfg, echo=click.echo)
    except (
        CaseError,
        CorpusError,
        RunError,
        ReportError,
        UnknownPluginError,
        ValueError,
        FileNotFoundError,
    ) as e:
        _fail(str(e), 2)


@main.command("demo")
@click.option(
    "-o",
    "--out",
    "out",
    type=click.Path(path_type=Path),
    default=Path("ctxreplay-demo"),
    show_default=True,
)
@click.option("--sessions", type=int, default=200, show_default=True, help="Synthetic sessions.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--workers", type=int, default=2, show_default=True)
@click.option("--quiet", is_flag=True, help="No progress bars.")
def demo_cmd(out: Path, sessions: int, seed: int, workers: int, quiet: bool) -> None:
    """The whole job on the built-in synthetic corpus, offline: every policy, judged, reported."""
    from .engines.pipeline import PipelineConfig

    _run_pipeline(
        PipelineConfig(
            out=out, synth_sessions=sessions, seed=seed, workers=workers, progress=not quiet
        )
    )


def _open_corpus(path: Path):
    from .datasets.store import Corpus, CorpusError

    try:
        return Corpus(path)
    except CorpusError as e:
        _fail(str(e), 2)


def _attach_local_model() -> None:
    from .llm.cli import local_model

    main.add_command(local_model)


_attach_local_model()

if __name__ == "__main__":
    main()
