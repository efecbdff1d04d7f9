"""Judge commands: judges, judge, calibrate."""

from __future__ import annotations

import json
from pathlib import Path

import click

from .app import fail, main
from .labels import deps_labels
from .options import engine, folder, judge, judging, option, quiet, workers


@main.command("judges")
def judges_cmd() -> None:
    """List the registered judges: what each does, and each parameter's type, default, range
    and meaning."""
    from ..judges.base import judges
    from ..registry import plugin_lines

    for name, cls in judges.items():
        click.echo("\n".join(plugin_lines(name, cls)))


@main.command("judge")
@folder("run", remote="native")
@judge(help="The judge.")
@judging
@workers
@engine
@quiet
def judge_cmd(
    run: Path | str,
    judge: str,
    policy: tuple[str, ...],
    base_url: str | None,
    model: str | None,
    api_key_env: str | None,
    concurrency: str | None,
    workers: int,
    engine: str,
    ray_address: str | None,
    limit: int | None,
    retry_unscored: bool,
    quiet: bool,
) -> None:
    """Give every (case, policy) of a run a verdict; re-runs judge only what is missing (and,
    with --retry-unscored, what failed for transient reasons)."""
    from ..engines.judge import run_judge

    endpoint = {
        "base_url": base_url,
        "model": model,
        "api_key_env": api_key_env,
        "concurrency": concurrency,
    }
    overrides = {k: v for k, v in endpoint.items() if v is not None}
    summary = run_judge(
        run,
        judge,
        policies=policy or None,
        workers=workers,
        limit=limit,
        progress=not quiet,
        overrides=overrides,
        retry_unscored=retry_unscored,
        engine=engine,
        ray_address=ray_address,
    )
    click.echo(summary.render())


@main.command("calibrate")
@folder("run")
@judge(help="The judge to calibrate.")
@option(
    "--against",
    required=True,
    help="Another judge, a labels CSV (case_id,policy,label[,category]), truth, or "
    "deps:LABELS (dependency labels on real traces: a folder with cases.jsonl and "
    "dependencies.jsonl; compared in the strict, whitespace and recovery variants).",
)
@option("--policy", multiple=True, help="Only these policies.")
@option("--format", type=click.Choice(["table", "csv", "json"]), default="table", help="Output.")
def calibrate_cmd(
    run: Path, judge: str, against: str, policy: tuple[str, ...], format: str
) -> None:
    """Confusion matrix, sensitivity/specificity, Cohen's kappa with CI, per-category accuracy."""
    import polars as pl

    from ..engines.calibrate import calibrate_against_deps, compare, judged_by, read_labels
    from ..engines.judge import run_judge
    from ..runs import Run, calibration_path, read_verdicts

    labels = deps_labels(against)
    if labels is not None:
        gold = calibrate_against_deps(run, judge, labels, policies=policy or None)
        if format == "csv":
            click.echo(gold.table().write_csv(), nl=False)
        elif format == "json":
            click.echo(json.dumps(gold.as_dict(), indent=2))
        else:
            click.echo(gold.render())
            click.echo(
                f"\nstored the recovery calibration (what the report corrects by) in "
                f"{calibration_path(run, gold.judge)}"
            )
        return
    if against == "truth" and not (Run(run).corpus.path / "ground_truth").is_dir():
        fail(
            "this run's corpus has no planted ground truth (only synthetic corpora do); "
            "calibrate against deps:LABELS, a labels CSV or another judge",
            2,
        )
    _, judged = judged_by(run, judge)
    if against.endswith(".csv"):
        reference = read_labels(against)
    else:
        if against == "truth":
            run_judge(run, "truth", progress=False)
        reference = read_verdicts(run, against)
        if reference.height == 0:
            fail(f"no verdicts from {against!r} in {run}", 2)
    if policy:
        judged = judged.filter(pl.col("policy").is_in(list(policy)))
        reference = reference.filter(pl.col("policy").is_in(list(policy)))
    result = compare(judged, reference, judge, against)
    if format == "csv":
        click.echo(result.table().write_csv(), nl=False)
    elif format == "json":
        click.echo(result.table().write_json())
    else:
        click.echo(result.render())
