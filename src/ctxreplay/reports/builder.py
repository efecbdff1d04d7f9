"""A run's report built as data: its run folder and one judge's verdicts read into a ``ReportData``.

``build_report_data(run)`` reads the run through DuckDB (``aggregates.RunTables``) and renders
nothing: the renderers (``render``) format what it returns, and ``report.build_report`` gives
the same data with its renderings as methods.
"""

from __future__ import annotations

import json
import math
import os
import shlex
from datetime import UTC, datetime
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
from ..tariffs import Tariff
from ..version import __version__
from . import stats
from .aggregates import RunTables
from .correction import JudgeAccuracy, explanation
from .frontier import VERDICT_READ as FRONTIER_READ
from .frontier import build_frontier
from .recovery import archive_costs, with_recovery_cost
from .report_data import ReportData
from .tables import (
    AGREEMENT_SCHEMA,
    EXAMPLES,
    JUDGES_SCHEMA,
    PAIRED_SCHEMA,
    REFERENCE_MIN_PRUNING,
    ReportError,
    as_run,
    best_policy,
    judge_names,
    outcomes,
    resolve_judge,
    verdict_index,
)


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


#: the verdict columns a report's per-case rows read (its losses are read apart, policy by policy)
REPORT_COLUMNS = ["label", "recoverable", "unscored_reason"]


def build_report_data(
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
) -> ReportData:
    """Every table of a run's report, as data (``report.build_report`` adds the renderings).

    ``judge``: a judge label, or a name with one label in the run (None: a sweep's judge, else
    the run's only judge, else ``DEFAULT_JUDGE``). ``reference``: the policy the
    paired comparisons are against (default: the best no-impact rate, ties to more pruning).
    ``seed`` and ``bootstrap`` set the session-cluster bootstraps. ``examples``: how many
    example losses the report shows in all (``tables.example_losses``: one per policy first, then
    one per category; ``ctxreplay audit`` lists every loss of a category). ``calibration_file``:
    the judge's calibration from elsewhere (a labelled set judged by the same judge) instead of
    the one the run holds; it corrects the no-impact table for the judge's error.

    The run is read by DuckDB over its parts, one policy at a time (``aggregates.RunTables``):
    Python holds per-session and per-policy aggregates, never one row per view (a sweep's
    frontier still reads the whole run).
    """
    run = as_run(run_path)
    sweep = sweep_of(run.manifest)
    if judge is None and sweep is not None:
        judge = sweep.get("judge")  # a sweep's report defaults to the judge it swept with
    index = verdict_index(run.path)  # which judges, by which names, of which policies
    label = resolve_judge(judge_names(index), judge)
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
    run.check()  # every policy's parts, before any is read
    judges = sorted(set(index["judge"].to_list()))
    several = len(judges) > 1  # each judge's no-impact beside the others', and their agreement
    with RunTables(
        run,
        label,
        judges if several else [],
        seed=seed,
        bootstrap=bootstrap,
        alpha=alpha,
        examples=examples,
        calibration=calibration,
        tariff=run_tariff(run),
    ) as every:
        table = every.no_impact()
        not_judged = int(table["not_judged"].sum()) if table.height else 0
        if label is not None and not_judged:
            notes.append(f"{not_judged} (case, policy) pairs have no verdict from {label}")
        if reference is not None:
            reference = run.resolve_policy(reference)
            chosen = "given"
        else:
            reference = best_policy(table)
            chosen = (
                f"best no-impact rate among policies pruning at least "
                f"{REFERENCE_MIN_PRUNING:g}% (ties: more pruning)"
            )
        paired = (
            every.paired(reference, exact_below)
            if reference is not None
            else pl.DataFrame(schema=PAIRED_SCHEMA)
        )
        notes.extend(every.same_views())
        reasons = every.commit_reasons()
        parts = {
            "taxonomy": every.taxonomy(),
            "examples": every.examples(),
            "cost": every.cost(reasons),
            "failures": every.failures(),
            "judges": every.judges() if several else pl.DataFrame(schema=JUDGES_SCHEMA),
            "agreement": every.agreement() if several else pl.DataFrame(schema=AGREEMENT_SCHEMA),
        }
        verdict_count = every.verdicts
    frontier = None
    if sweep is not None:
        figures = run.table("figures")
        # the frontier's gold measures read every judge: its few columns, not every verdict's text
        verdicts = read_verdicts(run.path, columns=FRONTIER_READ)
        costs = archive_costs(run)
        frontier = build_frontier(
            run,
            sweep,
            with_recovery_cost(outcomes(run, label, verdicts, figures=figures), costs),
            label,
            verdicts,
            costs=costs,
            figures=figures,
            alpha=alpha,
        )
        notes.extend(frontier.notes)
    meta = _metadata(
        run,
        label,
        verdict_count,
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
    return ReportData(
        run=run.path,
        judge=label,
        reference=reference,
        seed=seed,
        bootstrap=bootstrap,
        alpha=alpha,
        no_impact=table,
        paired=paired,
        taxonomy=parts["taxonomy"],
        examples=parts["examples"],
        cost=parts["cost"],
        commit_reasons=reasons,
        failures=parts["failures"],
        meta=json.loads(json.dumps(meta, default=str)),
        notes=tuple(notes),
        frontier=frontier,
        judges=parts["judges"],
        agreement=parts["agreement"],
    )


def run_tariff(run: Run) -> Tariff | None:
    """The tariff the run's costs were computed with (its manifest), None where unrecorded."""
    t = run.manifest.get("tariff")
    if not isinstance(t, dict):
        return None
    try:
        return Tariff(**t)
    except TypeError:
        return None
