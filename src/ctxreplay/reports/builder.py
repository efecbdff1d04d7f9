"""A run's report built as data: its run folder and one judge's verdicts read into a ``ReportData``.

``build_report_data(run)`` reads the run policy by policy (``PolicyPass``) and renders nothing:
the renderers (``render``) format what it returns, and ``report.build_report`` gives the same
data with its renderings as methods.
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
from .correction import JudgeAccuracy, explanation
from .frontier import VERDICT_READ as FRONTIER_READ
from .frontier import build_frontier
from .recovery import (
    archive_costs,
    with_recovery_cost,
)
from .report_data import ReportData
from .tables import (
    AGREEMENT_SCHEMA,
    EXAMPLES,
    FAILURES_SCHEMA,
    JUDGES_SCHEMA,
    LABEL_COUNTS_SCHEMA,
    LOSS_COUNTS_SCHEMA,
    LOSSES_SCHEMA,
    PAIRED_SCHEMA,
    REFERENCE_MIN_PRUNING,
    PairTable,
    ReportError,
    SameViews,
    add_counts,
    agreement_counts,
    agreement_from_counts,
    as_run,
    best_policy,
    commit_reasons,
    cost_table,
    failures_table,
    judge_labels,
    judge_names,
    judges_from_counts,
    label_counts,
    loss_summary,
    no_impact_table,
    outcomes,
    paired_row,
    pick_examples,
    policy_figures,
    policy_verdicts,
    resolve_judge,
    scored_pairs,
    sort_reasons,
    taxonomy_from_counts,
    verdict_index,
    with_holm,
    with_show,
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

    The run is read policy by policy (``PolicyPass``): one policy's figures, verdicts and losses
    at a time, of which the report keeps each table's rows and the counts the others need, so
    its memory does not grow with the run (a sweep's frontier still reads the whole run).
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
    every = PolicyPass(
        run,
        label,
        judges if several else [],
        seed=seed,
        bootstrap=bootstrap,
        alpha=alpha,
        examples=examples,
        calibration=calibration,
        keep_rows=sweep is not None,
    )
    for policy in run.policies:
        every.add(policy)
    if several:  # verdicts of a policy the manifest does not name still count in the agreement
        for policy in sorted(set(index["policy"].to_list()) - set(run.policies)):
            every.add(policy)
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
            f"best no-impact rate among policies pruning at least {REFERENCE_MIN_PRUNING:g}% "
            "(ties: more pruning)"
        )
    paired = (
        every.paired(reference, exact_below)
        if reference is not None
        else pl.DataFrame(schema=PAIRED_SCHEMA)
    )
    notes.extend(every.same.lines)
    reasons = every.commit_reasons()
    frontier = None
    if sweep is not None:
        figures = pl.concat(every.figures) if every.figures else run.table("figures")
        rows = pl.concat(every.rows, how="vertical_relaxed") if every.rows else None
        # the frontier's gold measures read every judge: its few columns, not every verdict's text
        verdicts = read_verdicts(run.path, columns=FRONTIER_READ)
        if rows is None:
            rows = outcomes(run, label, verdicts, figures=figures)
        frontier = build_frontier(
            run,
            sweep,
            rows,
            label,
            verdicts,
            costs=archive_costs(run),
            figures=figures,
            alpha=alpha,
        )
        notes.extend(frontier.notes)
    verdict_count = every.verdicts
    if label is not None:  # the judge's verdicts of policies without figures count too
        judged = index.filter(pl.col("judge") == label)["policy"].unique().to_list()
        for policy in sorted(set(judged) - every.counted):
            verdict_count += policy_verdicts(run.path, policy, [], label).height
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
        taxonomy=every.taxonomy(),
        examples=every.examples(),
        cost=every.cost(),
        commit_reasons=reasons,
        failures=every.failures(),
        meta=json.loads(json.dumps(meta, default=str)),
        notes=tuple(notes),
        frontier=frontier,
        judges=every.judges() if several else pl.DataFrame(schema=JUDGES_SCHEMA),
        agreement=every.agreement() if several else pl.DataFrame(schema=AGREEMENT_SCHEMA),
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


class PolicyPass:
    """A report's tables, built policy by policy.

    ``add(policy)`` reads one policy's figures (``tables.FIGURE_COLUMNS``), its verdicts from
    ``judge`` (and the labels of every judge in ``judges``, for their agreement) and its losses,
    and keeps what the tables need of it: its row of the no-impact, cost and failures tables,
    its commit reasons, its scored (case, session, no-impact) for the paired tests, its loss
    counts, its candidate examples (``tables.top_ranked``) and its label counts. Every table is
    the one the whole run's frames give (``tables.*_table``): each policy's rows depend on that
    policy alone, and what crosses policies (Holm, the reference, the examples' turns, the
    taxonomy's extra categories, kappa) is computed from the kept parts at the end.
    """

    def __init__(
        self,
        run: Run,
        judge: str | None,
        judges: list[str],
        *,
        seed: int,
        bootstrap: int,
        alpha: float,
        examples: int,
        calibration: JudgeAccuracy | None,
        keep_rows: bool = False,
    ) -> None:
        self.run, self.judge, self.every_judge = run, judge, judges
        self.seed, self.bootstrap, self.alpha = seed, bootstrap, alpha
        self.limit, self.calibration = examples, calibration
        self.keep_rows = keep_rows  # a sweep's frontier reads the whole run's rows
        self.tariff = run_tariff(run)  # prices the recoveries in the cost table
        self.policies: list[str] = []  # with figures, in manifest order
        self.rows: list[pl.DataFrame] = []
        self.figures: list[pl.DataFrame] = []
        self.same = SameViews()
        self._no_impact: list[pl.DataFrame] = []
        self._failures: list[pl.DataFrame] = []
        self._reasons: list[pl.DataFrame] = []
        self._cost: list[pl.DataFrame] = []
        self._scored: dict[str, pl.DataFrame] = {}  # per policy: (case, ok), see _keep_scored
        self._cases = pl.DataFrame(schema={"case_id": pl.String, "session_id": pl.String})
        self._loss_counts: list[pl.DataFrame] = []
        self._candidates: list[pl.DataFrame] = []
        self._label_counts: list[pl.DataFrame] = []
        self._pairs: dict[tuple[str, str], PairTable] = {}
        self.verdicts = 0  # the judge's verdicts of the policies read (``counted``)
        self.counted: set[str] = set()

    def add(self, policy: str) -> None:
        """Read one policy and keep its parts of the tables."""
        figures = policy_figures(self.run, policy)
        present = figures is not None and figures.height > 0
        verdicts = self._verdicts(policy, figures, present)
        if figures is None or not present:
            return
        self.policies.append(policy)
        # the rows without the losses: those of the scored cases are joined apart (``_losses``)
        rows = outcomes(
            self.run,
            self.judge,
            verdicts.drop("losses") if verdicts is not None else None,
            figures=figures,
        ).drop("losses", strict=False)
        if verdicts is not None:
            self._losses(rows, verdicts)
        del verdicts
        rows = with_recovery_cost(rows, archive_costs(self.run, [policy]))
        self._no_impact.append(
            no_impact_table(
                rows,
                [policy],
                seed=self.seed,
                n_boot=self.bootstrap,
                alpha=self.alpha,
                calibration=self.calibration,
            )
        )
        self._failures.append(failures_table(rows, [policy]))
        reasons = commit_reasons(rows)
        self._reasons.append(reasons)
        self._cost.append(cost_table(rows, [policy], reasons, self.tariff))
        self.same.add(policy, figures)
        self._keep_scored(policy, scored_pairs(rows))
        if self.keep_rows:
            self.rows.append(rows)
            self.figures.append(figures)

    def _verdicts(
        self, policy: str, figures: pl.DataFrame | None, present: bool
    ) -> pl.DataFrame | None:
        """The judge's verdicts of the policy, with their losses when it has figures; with
        several judges, every judge's labels of it counted first (as ``judge_labels``: a
        planner failure is ``planner_failed``)."""
        losses_of = self.judge if present else None
        if self.every_judge:
            every = policy_verdicts(self.run, policy, REPORT_COLUMNS, losses_of=losses_of)
            labels = judge_labels(every, figures)
            self._label_counts.append(label_counts(labels))
            add_counts(self._pairs, agreement_counts(labels, self.every_judge))
            del labels
            verdicts = every.filter(pl.col("judge") == self.judge) if self.judge else None
        elif self.judge is None or not present:
            return None
        else:
            verdicts = policy_verdicts(
                self.run, policy, REPORT_COLUMNS, self.judge, losses_of=self.judge
            )
        if verdicts is not None:
            self.verdicts += verdicts.height
            self.counted.add(policy)
        return verdicts

    def _losses(self, rows: pl.DataFrame, verdicts: pl.DataFrame) -> None:
        """The policy's loss counts and candidate examples, from its losses alone."""
        counts, candidates = loss_summary(rows, verdicts, self.limit)
        if counts.height:
            self._loss_counts.append(counts)
        if candidates.height:
            self._candidates.append(candidates)

    def _keep_scored(self, policy: str, scored: pl.DataFrame) -> None:
        """Keep a policy's scored ``ok`` for the paired tests against a reference not yet
        known, by index into the (case, session) pairs shared by every policy: the policies
        replay the same cases, so each adds a column of booleans, not its case ids again."""
        keys = scored.select("case_id", "session_id")
        fresh = keys.join(self._cases, on=["case_id", "session_id"], how="anti")
        if fresh.height:
            self._cases = pl.concat([self._cases, fresh.unique(maintain_order=True)], rechunk=True)
        index = self._cases.with_row_index("case")
        found = keys.join(index, on=["case_id", "session_id"], how="left", maintain_order="left")
        self._scored[policy] = pl.DataFrame({"case": found["case"], "ok": scored["ok"]})

    def scored(self, policy: str) -> pl.DataFrame:
        """``tables.scored_pairs`` of one policy, from what ``_keep_scored`` kept."""
        kept = self._scored[policy]
        return (
            self._cases[kept["case"]]
            .with_columns(pl.lit(policy, pl.String).alias("policy"), kept["ok"])
            .select("policy", "case_id", "session_id", "ok")
        )

    def no_impact(self) -> pl.DataFrame:
        if not self._no_impact:  # the table's empty schema, with the corrected columns or not
            return no_impact_table(pl.DataFrame(), [], calibration=self.calibration)
        return pl.concat(self._no_impact)

    def paired(self, reference: str, exact_below: int | None) -> pl.DataFrame:
        """Each policy against ``reference`` (``tables.paired_table``)."""
        ref = self.scored(reference) if reference in self._scored else None
        rows = []
        for policy in self.policies:
            if policy == reference:
                continue
            mine = self.scored(policy)
            rows.append(
                paired_row(
                    mine if ref is None else pl.concat([mine, ref]),
                    policy,
                    reference,
                    seed=self.seed,
                    n_boot=self.bootstrap,
                    alpha=self.alpha,
                    exact_below=exact_below,
                )
            )
        return with_holm(rows, self.alpha)

    def failures(self) -> pl.DataFrame:
        found = [f for f in self._failures if f.height]
        return pl.concat(found) if found else pl.DataFrame(schema=FAILURES_SCHEMA)

    def commit_reasons(self) -> pl.DataFrame:
        return (
            sort_reasons(pl.concat(self._reasons))
            if self._reasons
            else commit_reasons(pl.DataFrame())
        )

    def cost(self) -> pl.DataFrame:
        return pl.concat(self._cost) if self._cost else cost_table(pl.DataFrame(), [])

    def taxonomy(self) -> pl.DataFrame:
        counts = (
            pl.concat(self._loss_counts)
            if self._loss_counts
            else pl.DataFrame(schema=LOSS_COUNTS_SCHEMA)
        )
        scored = {p: frame.height for p, frame in self._scored.items()}
        return taxonomy_from_counts(scored, counts, self.policies)

    def examples(self) -> pl.DataFrame:
        if not self._candidates or self.limit <= 0:
            return pl.DataFrame(schema=LOSSES_SCHEMA)
        picked = pick_examples(pl.concat(self._candidates), self.limit, self.policies)
        return with_show(self.run, picked)

    def judges(self) -> pl.DataFrame:
        counts = (
            pl.concat(self._label_counts)
            if self._label_counts
            else pl.DataFrame(schema=LABEL_COUNTS_SCHEMA)
        )
        return judges_from_counts(counts, self.policies, self.alpha)

    def agreement(self) -> pl.DataFrame:
        return agreement_from_counts(self._pairs, self.every_judge)
