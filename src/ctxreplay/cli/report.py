"""Report commands: report, audit, export-verdicts."""

from __future__ import annotations

from pathlib import Path

import click

from .app import echo_text, fail, main
from .defaults import DEFAULT_JUDGE, DEFAULT_WIDTH, EXAMPLES, MIN_WIDTH
from .labels import deps_labels
from .options import folder, judge, option, out, seed

REPORT_FORMATS = ["terminal", "markdown", "csv", "json", "html"]


@main.command("report")
@folder("run")
@judge(
    default=None,
    help=f"Which judge's verdicts [default: the run's only judge, else {DEFAULT_JUDGE}].",
)
@option(
    "--reference",
    default=None,
    help="Policy the others are compared with [default: best no-impact].",
)
@option(
    "--format",
    type=click.Choice(REPORT_FORMATS),
    default=None,
    help="[default: terminal, or from the -o file's suffix]",
)
@out("Write to a file (or a folder for csv).", required=False)
@seed
@option("--bootstrap", type=click.IntRange(min=1), default=2000, help="Bootstrap resamples.")
@option(
    "--calibration",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="The judge's calibration from a labelled run (RUN/calibration/*.json) to correct "
    "no-impact with [default: the run's own, if any].",
)
@option(
    "--examples",
    type=click.IntRange(min=0),
    default=EXAMPLES,
    help="Example losses shown, in all, in every format: one per policy first, then one per "
    "category (every loss of a category: `ctxreplay audit RUN --category C`).",
)
@option(
    "--width",
    type=click.IntRange(min=0),
    default=None,
    help=f"Line width of the terminal format; tables wrap their text and split into column "
    f"groups that repeat each row's policy, never cutting a number, an id or a command (a label "
    f"too long for its column heads its row); 0: no limit, one line per row [default: the "
    f"terminal's, {DEFAULT_WIDTH} when the output is not a terminal; at least {MIN_WIDTH}].",
)
def report_cmd(
    run: Path,
    judge: str | None,
    reference: str | None,
    format: str | None,
    out: Path | None,
    seed: int,
    bootstrap: int,
    calibration: Path | None,
    examples: int,
    width: int | None,
) -> None:
    """No-impact with Wilson intervals, paired tests, taxonomy audit, cost, trade-off plot."""
    from ..reports import build_report
    from ..reports.formatting import terminal_width

    width = terminal_width(width)  # a bad width fails before any work
    if out is not None and format is None:
        from ..reports.render import format_for

        format_for(out)  # so does an output name of no known kind (report.pdf)
    report = build_report(
        run,
        judge=judge,
        reference=reference,
        seed=seed,
        bootstrap=bootstrap,
        examples=examples,
        calibration_file=calibration,
    )
    if out is None:
        echo_text(report.render(format or "terminal", width))
    else:
        for path in report.save(out, format, width):
            click.echo(f"wrote {path}")


@main.command("audit")
@folder("run")
@option(
    "--category",
    default=None,
    help="evidence_detail · locator_handle · behavioural_contract · verbatim_source · "
    "live_state · recovery_routing",
)
@option(
    "--missed",
    default=None,
    help="deps:LABELS — list instead the gold-required dependencies the judge missed.",
)
@option(
    "--disagreements",
    is_flag=True,
    default=False,
    help="List instead the (case, policy) pairs where the run's judges disagree, with each "
    "judge's label and reason and the `ctxreplay show` command.",
)
@option(
    "--judges",
    default=None,
    help="With --disagreements: these judges only, comma-separated labels or names "
    "[default: every judge of the run].",
)
@option("--policy", default=None, help="Only this policy.")
@judge()
@option("--max-rows", type=click.IntRange(min=1), default=50, help="Rows shown.")
def audit_cmd(
    run: Path,
    category: str | None,
    missed: str | None,
    disagreements: bool,
    judges: str | None,
    policy: str | None,
    judge: str,
    max_rows: int,
) -> None:
    """List the losses of one category with their evidence, (``--missed deps:LABELS``) the
    labelled dependencies the judge missed, or (``--disagreements``) the cases where judges
    disagree, for a person to inspect."""
    from ..reports import audit

    if judges is not None and not disagreements:
        fail("--judges goes with --disagreements", 2)
    if disagreements:
        from ..reports.formatting import terminal_width
        from ..reports.render import render_disagreements
        from ..reports.tables import disagreements as disagreeing

        names = [j.strip() for j in judges.split(",") if j.strip()] if judges else None
        frame = disagreeing(run, names, policy=policy)
        echo_text(render_disagreements(frame, max_rows, terminal_width(None)))
        return
    if missed is not None:
        from ..engines.calibrate import missed_dependencies, render_missed

        frame = missed_dependencies(run, judge, deps_labels(missed, "--missed"), policy=policy)
        echo_text(render_missed(frame, judge, max_rows))
        return
    if category is None:
        fail("give --category CATEGORY, --missed deps:LABELS or --disagreements", 2)
    frame = audit(run, category, policy=policy, judge=judge)
    under = f" under {policy}" if policy else ""
    if frame.height == 0:
        click.echo(f"no {category} losses{under}")
        return
    click.echo(f"{frame.height} {category} losses{under}")
    from ..reports.formatting import terminal_width
    from ..reports.render import render_audit

    # each loss's `show` command on a line of its own, whole: a table would cut it to fit
    echo_text(render_audit(frame, max_rows, terminal_width(None)))


@main.command("export-verdicts")
@folder("run")
@option("--to", required=True, type=click.Choice(["otel", "phoenix", "langfuse"]), help="Format.")
@out("File to write.")
@judge()
def export_verdicts_cmd(run: Path, to: str, out: Path, judge: str) -> None:
    """Verdicts as OpenTelemetry gen_ai.evaluation.result events, Phoenix Parquet or Langfuse
    scores."""
    from ..reports import export_verdicts

    click.echo(export_verdicts(run, to, out, judge=judge).render())
