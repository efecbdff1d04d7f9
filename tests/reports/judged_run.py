"""Constants of the judged runs that tests/reports/conftest.py builds, and how their report
tables are compared."""

from pathlib import Path
from typing import Any

import polars as pl
from polars.testing import assert_frame_equal

from ctxreplay.reports.builder import run_tariff
from ctxreplay.reports.correction import JudgeAccuracy
from ctxreplay.reports.recovery import archive_costs, with_recovery_cost
from ctxreplay.reports.report import Report
from ctxreplay.reports.tables import (
    agreement_table,
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
    same_views,
    taxonomy_table,
)
from ctxreplay.runs import Run, read_calibration, read_verdicts

POLICIES = ["noop", "tool-prune", "self-gc"]
UNSCORED = 3  # tool-prune verdicts the ``edited`` judge makes unscored
DROPPED = 2  # tool-prune verdicts the ``edited`` judge leaves out (not judged)

#: markup a trace may hold (the ``xss_run``); none of it may become markup in a report:
#: ``window.__pwned`` stays undefined in a browser
XSS = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
#: the name of a session of the ``xss_run``: it would close an attribute and open a script,
#: were ids not escaped
XSS_SESSION = 'evil"><script>window.__pwned=3</script>'


#: columns a report computes from counts and per-session sums added in the order the rows were
#: written (as the per-row computation adds them): equal to the last bit
EXACT = (
    "pruning_pct", "pruning_lo", "pruning_hi", "no_impact_pct", "wilson_lo", "wilson_hi",
    "boot_lo", "boot_hi", "corrected_no_impact_pct", "corrected_lo", "corrected_hi",
    "strict_no_impact_pct", "strict_lo", "strict_hi", "recovery_pct", "recoveries_per_case",
    "statistic", "p", "p_holm", "diff_pct", "diff_lo", "diff_hi", "kappa", "kappa_lo",
    "kappa_hi", "agreement_pct", "rate_pct", "input_saved_pct",
)  # fmt: skip


def assert_same_table(got: pl.DataFrame, expected: pl.DataFrame) -> None:
    """``got`` is ``expected``: every count, string, interval and test exactly; a sum of USD or
    a mean over cases (``editable_pruning_pct``, recovery tokens per case) to 1e-12 relative,
    since DuckDB and polars add a column's floats in different orders."""
    assert_frame_equal(got, expected, check_exact=False, rel_tol=1e-12, abs_tol=1e-12)
    exact = [c for c in EXACT if c in got.columns]
    assert_frame_equal(got.select(exact), expected.select(exact), check_exact=True)


#: session-cluster resamples in the report tests
BOOT = 50


def whole(run: Path, judge: str, examples: int, boot: int = BOOT) -> dict[str, Any]:
    """The report's tables from the whole run's frames at once (what reports did before they
    streamed), with every loss and the same-views notes."""
    r = Run(run)
    verdicts = read_verdicts(run)
    figures = r.table("figures")
    rows = with_recovery_cost(outcomes(r, judge, verdicts, figures=figures), archive_costs(r))
    policies = order_policies(r, rows)
    doc = read_calibration(run, judge)
    calibration = JudgeAccuracy.from_mapping(doc) if doc is not None else None
    table = no_impact_table(rows, policies, n_boot=boot, calibration=calibration)
    reference = best_policy(table)
    assert reference is not None
    losses = losses_frame(r, rows)
    labels = judge_labels(verdicts, figures)
    reasons = commit_reasons(rows)
    return {
        "no_impact": table,
        "paired": paired_table(rows, policies, reference, n_boot=boot),
        "taxonomy": taxonomy_table(rows, losses, policies),
        "examples": example_losses(losses, examples, policies),
        "cost": cost_table(rows, policies, reasons, run_tariff(r)),
        "commit_reasons": reasons,
        "failures": failures_table(rows, policies),
        "judges": judges_table(labels, policies),
        "agreement": agreement_table(labels),
        "losses": losses,
        "same_views": same_views(figures, policies),
        "verdicts": verdicts.filter(pl.col("judge") == judge).height,
    }


def assert_report_is_whole(report: Report, expected: dict[str, Any]) -> None:
    for name, table in report.tables().items():
        assert_same_table(table, expected[name])
    assert_frame_equal(report.losses, expected["losses"])
    assert report.loss_count == expected["losses"].height
    assert report.loss_cases == expected["losses"].unique(["policy", "category", "case_id"]).height
    assert set(expected["same_views"]) <= set(report.notes)
    assert report.meta["verdicts"] == expected["verdicts"]
