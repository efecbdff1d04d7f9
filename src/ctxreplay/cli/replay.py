"""Replay commands: policies, replay, sweep, show."""

from __future__ import annotations

import json
from pathlib import Path

import click

from .app import echo_text, main
from .labels import deps_labels
from .options import cases, engine, folder, judge, option, out, quiet, tariff, workers


@main.command("policies")
def policies_cmd() -> None:
    """List the registered policies: what each does, and each parameter's type, default, range
    and meaning."""
    from ..policies.base import policies
    from ..registry import plugin_lines

    for name, cls in policies.items():
        click.echo("\n".join(plugin_lines(name, cls)))


@main.command("replay")
@folder("corpus")
@cases
@option("--policy", multiple=True, required=True, help="name[:key=value,...] (repeatable).")
@out("Run folder (or URI: its tasks write there, wherever they run).", remote="native")
@workers
@engine
@tariff
@quiet
def replay_cmd(
    corpus: Path,
    cases: Path,
    policy: tuple[str, ...],
    out: Path | str,
    workers: int,
    engine: str,
    ray_address: str | None,
    tariff: str | None,
    tariffs: Path | None,
    quiet: bool,
) -> None:
    """Replay every case through every policy into a run folder (re-runs skip finished work)."""
    from ..engines.replay import run_replay

    summary = run_replay(
        corpus,
        cases,
        policy,
        out,
        workers=workers,
        tariff=tariff,
        tariffs_path=str(tariffs) if tariffs else None,
        progress=not quiet,
        engine=engine,
        ray_address=ray_address,
    )
    click.echo(summary.render())


@main.command("sweep")
@folder("corpus")
@cases
@out("Run folder.")
@option(
    "--grid",
    multiple=True,
    required=True,
    help="family:param=values[;param=values] — values a,b,c · a..b (integers) · a..b/step; "
    "repeatable; the family's defaults are always a point.",
)
@option("--policy", multiple=True, help="Extra policies to include (e.g. noop).")
@judge(help="The judge every point is judged with.")
@option(
    "--labels",
    default=None,
    help="deps:LABELS — also judge every point with the gold dependency labels "
    "(strict, whitespace, recovery) and calibrate the judge against them.",
)
@workers
@engine
@quiet
def sweep_cmd(
    corpus: Path,
    cases: Path,
    out: Path,
    grid: tuple[str, ...],
    policy: tuple[str, ...],
    judge: str,
    labels: str | None,
    workers: int,
    engine: str,
    ray_address: str | None,
    quiet: bool,
) -> None:
    """Replay and judge a grid of policy parameters into one run (re-runs do only new points);
    `ctxreplay report RUN` then adds the pruning/no-impact frontier."""
    from ..engines.sweep import run_sweep

    labels_path = deps_labels(labels, "--labels") if labels is not None else None
    summary = run_sweep(
        corpus,
        cases,
        grid,
        out,
        policies=policy,
        judge=judge,
        labels=labels_path,
        workers=workers,
        progress=not quiet,
        engine=engine,
        ray_address=ray_address,
    )
    click.echo(summary.render())


@main.command("show")
@folder("run")
@click.argument("case")
@option(
    "--policy", default=None, help="Policy label or name in the run (required but with --output)."
)
@judge(
    default=None,
    help="Whose losses to show [default: the run's only judge, else the default judge].",
)
@option(
    "--width",
    type=click.IntRange(min=40),
    default=None,
    help="Characters per line [default: the terminal's, 100 when the output is not a terminal].",
)
@option(
    "--request",
    type=click.Choice(["openai-chat", "openai-responses"]),
    default=None,
    help="Print the view as the JSON request body that sends it to a real API (chat "
    "`messages` or Responses `input` items) instead of the table.",
)
@option(
    "--output",
    default=None,
    metavar="CALL_ID",
    help="Print, byte for byte, the full output of this tool call of the case's session, whose "
    "log kept only a preview (a Claude Code <persisted-output>).",
)
def show_cmd(
    run: Path,
    case: str,
    policy: str | None,
    judge: str | None,
    width: int | None,
    request: str | None,
    output: str | None,
) -> None:
    """Show a case under a policy: each prefix message with its objects' full ids, what the view
    removed (pruned, masked, folded, compacted) and its tokens, and, when the run is judged, each
    loss: its category, the lost span and the future message that needed it. With ``--request``
    the view itself, as a request body a real agent or API accepts."""
    from ..runs import Run

    if output is not None:
        click.echo(Run(run).tool_output(case, output), nl=False)
        return
    if policy is None:
        raise click.UsageError("Missing option '--policy' (needed but with --output).")
    if request is not None:
        from ..api import view_request

        body = view_request(Run(run), case, policy, request)
        click.echo(json.dumps(body, ensure_ascii=False, indent=1))
        return
    from ..reports.show import render_show

    echo_text(render_show(Run(run), case, policy, width, judge))
