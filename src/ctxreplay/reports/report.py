"""A run's whole report: every table, the metadata that says how it was made, and its renderings.

``build_report(run)`` reads a run folder and one judge's verdicts into a ``Report``; ``render`` and
``save`` write it as terminal text, Markdown, CSV, JSON or HTML.
"""

from __future__ import annotations

import json
import math
import os
import shlex
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from ..judges.base import DEFAULT_JUDGE
from ..runs import (
    CalibrationError,
    Run,
    read_calibration,
    read_calibration_file,
    read_verdicts,
    sweep_of,
)
from ..version import __version__
from . import stats
from .correction import JudgeAccuracy, explanation
from .frontier import build_frontier
from .plot import tradeoff_plot
from .recovery import (
    archive_costs,
    with_recovery_cost,
)
from .render import render, save
from .tables import (
    AGREEMENT_SCHEMA,
    EXAMPLES,
    JUDGES_SCHEMA,
    LABEL_COLUMNS,
    PAIRED_SCHEMA,
    REFERENCE_MIN_PRUNING,
    ReportError,
    agreement_table,
    as_run,
    best_policy,
    commit_reasons,
    cost_table,
    example_losses,
    failures_table,
    judge_labels,
    judges_table,
    losses_frame,
    no_impact_table,
    order_policies,
    outcomes,
    paired_table,
    resolve_judge,
    same_views,
    taxonomy_table,
)


@dataclass(frozen=True)
class Report:
    """Every table of a run's report, and the metadata needed to reproduce it.

    Frames: ``no_impact``, ``paired``, ``taxonomy``, ``examples`` (example losses with their
    ``show`` commands), ``cost``, ``commit_reasons``; ``losses`` holds every loss (for audits).
    """

    run: Path
    judge: str | None
    reference: str | None
    seed: int
    bootstrap: int
    alpha: float
    no_impact: pl.DataFrame
    paired: pl.DataFrame
    taxonomy: pl.DataFrame
    examples: pl.DataFrame
    cost: pl.DataFrame
    commit_reasons: pl.DataFrame
    failures: pl.DataFrame  # why cases have no score: unscored reasons, planner failures
    losses: pl.DataFrame
    meta: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    frontier: Any = None  # frontier.Frontier when the run is a sweep (``ctxreplay sweep``)
    #: when the run holds several judges: each judge's no-impact per policy, and every pair's
    #: agreement (Cohen's kappa); empty otherwise
    judges: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=JUDGES_SCHEMA))
    agreement: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=AGREEMENT_SCHEMA))

    def tables(self) -> dict[str, pl.DataFrame]:
        """The tables a report shows, by name, in report order."""
        return {
            "no_impact": self.no_impact,
            "paired": self.paired,
            "taxonomy": self.taxonomy,
            "examples": self.examples,
            "cost": self.cost,
            "commit_reasons": self.commit_reasons,
            "failures": self.failures,
            **(
                {"judges": self.judges, "agreement": self.agreement}
                if self.agreement.height
                else {}
            ),
            **(self.frontier.tables() if self.frontier is not None else {}),
        }

    def plot(self, path: str | os.PathLike[str] | None = None) -> bytes:
        """The trade-off plot as PNG bytes (also written to ``path`` when given)."""
        return tradeoff_plot(self.no_impact, path, title=f"{self.run.name} · judge {self.judge}")

    def render(self, fmt: str = "terminal", width: int | None = None) -> str:
        """The report as text: terminal, markdown, csv (sections), json or html. ``width``: the
        terminal text's line width (None: the terminal's, 100 when not a terminal; 0: no
        limit)."""
        return render(self, fmt, width)

    def save(
        self, path: str | os.PathLike[str], fmt: str | None = None, width: int | None = None
    ) -> list[Path]:
        """Write the report; csv to a folder (one file per table) unless ``path`` ends in .csv."""
        return save(self, path, fmt, width)


def _metadata(run: Run, judge: str | None, verdict_count: int, **report: Any) -> dict[str, Any]:
    m = run.manifest
    return {
        "run": str(run.path),
        "report_created_at": datetime.now(UTC).replace(microsecond=0).isoformat(),
        "ctxreplay_version": __version__,
        "run_ctxreplay_version": m.get("ctxreplay_version"),
        "run_created_at": m.get("created_at"),
        "run_completed_at": m.get("completed_at"),
        "corpus_path": m.get("corpus_path"),
        "corpus_fingerprint": m.get("corpus_fingerprint"),
        "cases_path": m.get("cases_path"),
        "cases_fingerprint": m.get("cases_fingerprint"),
        "cases": m.get("cases"),
        "tokenizer": m.get("tokenizer"),
        "tariff": m.get("tariff"),
        "replay_seed": m.get("seed"),
        "policies": {
            label: {"name": d.get("name"), "params": d.get("params", {})}
            for label, d in m.get("policies", {}).items()
        },
        "judge": judge,
        "verdicts": verdict_count,
        **report,
    }


def _calibration_meta(
    calibration: JudgeAccuracy | None, table: pl.DataFrame, bootstrap: int
) -> dict[str, Any] | None:
    """The calibration behind the corrected columns, for the report's metadata (None: none)."""
    if calibration is None:
        return None
    undefined = None
    if not calibration.informative:
        undefined = (
            "the calibration lacks impact or no-impact reference cases"
            if math.isnan(calibration.sensitivity) or math.isnan(calibration.specificity)
            else "sensitivity + specificity - 1 <= 0 (the judge is no better than chance)"
        )
    dropped = (
        dict(zip(table["policy"].to_list(), table["corrected_dropped"].to_list(), strict=True))
        if "corrected_dropped" in table.columns
        else {}
    )
    return {
        **calibration.meta(),
        "method": "Rogan-Gladen; percentile bootstrap over sessions and the calibration sample",
        "resamples": bootstrap,
        "dropped_resamples": dropped,
        "undefined": undefined,
        "explanation": explanation(calibration),
    }


#: what identifies a verdict, and the verdict columns a report reads
KEYS = ["policy", "case_id"]
REPORT_COLUMNS = [
    "judge", "judge_name", *KEYS, "label", "losses", "recoverable", "explanation",
    "unscored_reason",
]  # fmt: skip


def build_report(
    run_path: Run | str | os.PathLike[str],
    judge: str | None = DEFAULT_JUDGE,
    reference: str | None = None,
    seed: int = 0,
    bootstrap: int = 2000,
    *,
    alpha: float = 0.05,
    examples: int = EXAMPLES,
    exact_below: int | None = stats.EXACT_BELOW,
    calibration_file: str | os.PathLike[str] | None = None,
) -> Report:
    """Every table of a run's report.

    ``judge``: a judge label, or a name with one label in the run (None: the run's only judge,
    else anchor). ``reference``: the policy the
    paired comparisons are against (default: the best no-impact rate, ties to more pruning).
    ``seed`` and ``bootstrap`` set the session-cluster bootstraps. ``examples``: how many
    example losses the report shows in all (``tables.example_losses``: one per policy first, then
    one per category; ``losses`` keeps every loss). ``calibration_file``: the
    judge's calibration from elsewhere (a labelled set judged by the same judge) instead of the
    one the run holds; it corrects the no-impact table for the judge's error.
    """
    run = as_run(run_path)
    sweep = sweep_of(run.manifest)
    if judge is None and sweep is not None:
        judge = sweep.get("judge")  # a sweep's report defaults to the judge it swept with
    every = read_verdicts(run.path, columns=["judge_name", *LABEL_COLUMNS])
    label = resolve_judge(every, judge)
    # a sweep's frontier compares judges; any other report reads one judge's verdicts, and
    # only the columns it shows
    verdicts = (
        read_verdicts(run.path)
        if sweep is not None
        else read_verdicts(run.path, label, columns=REPORT_COLUMNS)
        if label is not None
        else read_verdicts(run.path, columns=REPORT_COLUMNS)
    )
    notes: list[str] = []
    if label is None:
        notes.append(f"no verdicts yet: run `ctxreplay judge {shlex.quote(str(run.path))}`")
    calibration = None
    if label is not None:
        try:
            doc = (
                read_calibration_file(calibration_file, label)
                if calibration_file is not None
                else read_calibration(run.path, label)
            )
        except CalibrationError as e:
            if calibration_file is not None:
                raise ReportError(str(e)) from e
            notes.append(f"calibration ignored: {e}")
            doc = None
        calibration = JudgeAccuracy.from_mapping(doc) if doc is not None else None
    figures = run.table("figures")
    costs = archive_costs(run)  # read once: the judge's rows and the frontier's gold rows use it
    # + the price of recovery per case
    rows = with_recovery_cost(outcomes(run, label, verdicts, figures=figures), costs)
    policies = order_policies(run, rows)
    table = no_impact_table(
        rows, policies, seed=seed, n_boot=bootstrap, alpha=alpha, calibration=calibration
    )
    not_judged = int(table["not_judged"].sum()) if table.height else 0
    if label is not None and not_judged:
        notes.append(f"{not_judged} (case, policy) pairs have no verdict from {label}")
    if reference is not None:
        reference = run.resolve_policy(reference)
        chosen = "given"
    else:
        reference = best_policy(table)
        chosen = (
            f"best no-impact rate among policies pruning at least {REFERENCE_MIN_PRUNING:g}% "
            "(ties: more pruning)"
        )
    paired = (
        paired_table(
            rows,
            policies,
            reference,
            seed=seed,
            n_boot=bootstrap,
            alpha=alpha,
            exact_below=exact_below,
        )
        if reference is not None
        else pl.DataFrame(schema=PAIRED_SCHEMA)
    )
    losses = losses_frame(run, rows)
    # several judges: each one's no-impact beside the others', and how far they agree
    several = every.height > 0 and every["judge"].n_unique() > 1
    labels = judge_labels(every if several else every.head(0), figures)
    notes.extend(same_views(figures, policies))
    reasons = commit_reasons(rows)  # rows hold every figures column, one row per (policy, case)
    frontier = None
    if sweep is not None:
        frontier = build_frontier(
            run, sweep, rows, label, verdicts, costs=costs, figures=figures, alpha=alpha
        )
        notes.extend(frontier.notes)
    meta = _metadata(
        run,
        label,
        int(verdicts.filter(pl.col("judge") == label).height) if label else 0,
        calibration=_calibration_meta(calibration, table, bootstrap),
        **({"sweep": frontier.meta()} if frontier is not None else {}),
        reference=reference,
        reference_chosen=chosen,
        examples=examples,
        seed=seed,
        bootstrap=bootstrap,
        alpha=alpha,
        mcnemar=(
            "exact binomial always"
            if exact_below is None
            else f"exact binomial when b + c < {exact_below}, else chi-square with continuity correction"
        ),
    )
    return Report(
        run=run.path,
        judge=label,
        reference=reference,
        seed=seed,
        bootstrap=bootstrap,
        alpha=alpha,
        no_impact=table,
        paired=paired,
        taxonomy=taxonomy_table(rows, losses, policies),
        examples=example_losses(losses, examples, policies),
        cost=cost_table(rows, policies, reasons),
        commit_reasons=reasons,
        failures=failures_table(rows, policies),
        losses=losses,
        meta=json.loads(json.dumps(meta, default=str)),
        notes=tuple(notes),
        frontier=frontier,
        judges=judges_table(labels, policies, alpha),
        agreement=agreement_table(labels),
    )
