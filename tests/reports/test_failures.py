"""Failures are never numbers: a case whose planner failed is kept out of no-impact and counted
with its reason; unscored reasons reach every format; twin rows are named; the default reference
prunes something."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from ctxreplay.engines.judge import run_judge
from ctxreplay.engines.replay import run_replay
from ctxreplay.policies.base import Policy, policies, policy
from ctxreplay.policies.budget import Need
from ctxreplay.replay.context import PrefixContext
from ctxreplay.replay.plan import Plan, PlannerError
from ctxreplay.reports import build_report


class AlwaysFails(Policy):
    """A planner that fails on every case (as a dead model endpoint would)."""

    def propose(self, ctx: PrefixContext, need: Need) -> Plan:
        raise PlannerError("connection refused by http://127.0.0.1:9/v1")


@pytest.fixture(scope="module")
def failing_run(synth_corpus: Path, synth_cases: Path, tmp_path_factory) -> Iterator[Path]:
    policy("test-always-fails")(AlwaysFails)  # registered for this module only
    try:
        yield _failing_run(synth_corpus, synth_cases, tmp_path_factory)
    finally:
        policies._items.pop("test-always-fails", None)


def _failing_run(synth_corpus: Path, synth_cases: Path, tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("fail") / "run"
    policies = ["noop", "test-always-fails", "tool-prune", "tool-prune:keep=3,placeholder=x"]
    run_replay(synth_corpus, synth_cases, policies, run, workers=1, progress=False)
    run_judge(run, "flow", workers=1, progress=False)
    return run


def test_planner_failures_leave_no_impact_and_are_counted(failing_run: Path) -> None:
    report = build_report(failing_run, bootstrap=20)
    row = report.no_impact.filter(pl.col("policy") == "test-always-fails").row(0, named=True)
    assert row["planner_failed"] == row["cases"] > 0
    assert row["n"] == 0 and row["no_impact"] == 0
    assert row["no_impact_pct"] != row["no_impact_pct"]  # NaN: nothing to score, never 100.00
    failures = report.failures.filter(pl.col("policy") == "test-always-fails")
    assert failures.rows() == [
        (
            "test-always-fails",
            "planner_failed",
            "connection refused by http://127.0.0.1:9/v1",
            row["cases"],
        )
    ]
    terminal = report.render("terminal", width=0)  # one line per row
    assert "Cases without a score, and why" in terminal
    lines = terminal.splitlines()
    after = lines[lines.index("No-impact and pruning by policy") :]
    header = next(line for line in after if line.startswith("policy "))
    assert "planner failed" in header


@pytest.mark.parametrize("fmt", ["terminal", "markdown", "csv", "json", "html"])
def test_failure_reasons_reach_every_format(failing_run: Path, fmt: str) -> None:
    report = build_report(failing_run, bootstrap=20)
    assert "connection refused by http://127.0.0.1:9/v1" in report.render(fmt)


def test_twin_policies_are_named_in_the_notes(failing_run: Path) -> None:
    report = build_report(failing_run, bootstrap=20)
    twins = [n for n in report.notes if "made the same view as" in n]
    assert not any(n.startswith("tool-prune:placeholder=x") for n in twins)  # a real change
    assert any(n.startswith("test-always-fails made the same view as noop on all ") for n in twins)


def test_the_default_reference_prunes_at_least_ten_percent(failing_run: Path) -> None:
    report = build_report(failing_run, bootstrap=20)
    assert report.reference not in ("noop", "test-always-fails")
    row = report.no_impact.filter(pl.col("policy") == report.reference).row(0, named=True)
    assert row["pruning_pct"] >= 10
    assert json.loads(json.dumps(report.meta))["reference_chosen"].startswith(
        "best no-impact rate among policies pruning at least 10%"
    )
