"""No-impact corrected for judge error: Rogan–Gladen, its two-sample bootstrap, and the report."""

from __future__ import annotations

import csv
import html
import io
import json
import math
import shutil
from pathlib import Path

import polars as pl
import pytest

from ctxreplay.reports import build_report
from ctxreplay.reports.correction import (
    JudgeAccuracy,
    corrected_interval,
    corrected_no_impact,
    explanation,
    rogan_gladen,
)
from ctxreplay.runs import CalibrationError, calibration_path, read_calibration

# --- Rogan–Gladen ------------------------------------------------------------------------------


def test_rogan_gladen_hand_computed():
    # (0.30 + 0.95 - 1) / (0.90 + 0.95 - 1) = 0.25 / 0.85
    assert rogan_gladen(0.30, 0.90, 0.95) == pytest.approx(0.25 / 0.85)
    assert rogan_gladen(0.30, 0.90, 0.95) == pytest.approx(0.2941176470588)
    assert corrected_no_impact(0.70, 0.90, 0.95) == pytest.approx(0.7058823529412)
    # a perfect judge changes nothing
    assert rogan_gladen(0.42, 1.0, 1.0) == pytest.approx(0.42)
    # (0.5 + 0.8 - 1) / (0.7 + 0.8 - 1) = 0.3 / 0.5
    assert corrected_no_impact(0.5, 0.7, 0.8) == pytest.approx(1 - 0.6)


def test_rogan_gladen_clips_to_the_unit_interval():
    # fewer judged impacts than the false-positive rate alone would give: (0.02 - 0.05) / 0.85 < 0
    assert rogan_gladen(0.02, 0.90, 0.95) == 0.0
    assert corrected_no_impact(0.98, 0.90, 0.95) == 1.0
    # more judged impacts than sensitivity allows: (0.95 + 0.9 - 1) / 0.7 > 1
    assert rogan_gladen(0.95, 0.80, 0.90) == 1.0
    assert corrected_no_impact(0.05, 0.80, 0.90) == 0.0


@pytest.mark.parametrize(("sens", "spec"), [(0.5, 0.5), (0.3, 0.6), (0.0, 1.0)])
def test_a_chance_level_judge_gives_no_correction(sens, spec):
    assert math.isnan(rogan_gladen(0.3, sens, spec))
    assert math.isnan(corrected_no_impact(0.7, sens, spec))


def test_missing_rates_give_no_correction():
    assert math.isnan(rogan_gladen(0.3, None, 0.9))
    assert math.isnan(rogan_gladen(0.3, 0.9, float("nan")))
    assert math.isnan(corrected_no_impact(float("nan"), 0.9, 0.9))


# --- the bootstrap ------------------------------------------------------------------------------

# 60 cases in 20 sessions, 42 no-impact (judged no-impact rate 0.70)
OUTCOMES = [1.0] * 42 + [0.0] * 18
SESSIONS = [f"s{i % 20}" for i in range(60)]
BIG = JudgeAccuracy("flow", "deps:gold.csv", tp=180, fn=20, fp=10, tn=190)  # 0.90 / 0.95
SMALL = JudgeAccuracy("flow", "deps:gold.csv", tp=18, fn=2, fp=1, tn=19)  # 0.90 / 0.95


def test_interval_holds_the_point_estimate():
    r = corrected_interval(OUTCOMES, SESSIONS, BIG, seed=3, n_boot=1000)
    assert r.observed == pytest.approx(0.70)
    assert r.estimate == pytest.approx(corrected_no_impact(0.70, 0.90, 0.95))
    assert r.low <= r.estimate <= r.high and r.low < r.high
    assert r.low >= 0.0 and r.high <= 1.0
    assert (r.n, r.clusters, r.calibration_n, r.dropped) == (60, 20, 400, 0)


def test_interval_is_reproducible_for_a_seed():
    a = corrected_interval(OUTCOMES, SESSIONS, SMALL, seed=7, n_boot=500)
    b = corrected_interval(OUTCOMES, SESSIONS, SMALL, seed=7, n_boot=500)
    c = corrected_interval(OUTCOMES, SESSIONS, SMALL, seed=8, n_boot=500)
    assert a == b
    assert (a.low, a.high) != (c.low, c.high)


def test_interval_widens_when_the_calibration_sample_is_smaller():
    big = corrected_interval(OUTCOMES, SESSIONS, BIG, seed=1, n_boot=2000)
    small = corrected_interval(OUTCOMES, SESSIONS, SMALL, seed=1, n_boot=2000)
    assert big.estimate == pytest.approx(small.estimate)  # same rates, same point
    assert small.high - small.low > big.high - big.low


def test_resamples_no_better_than_chance_are_dropped_and_counted():
    weak = JudgeAccuracy("flow", "deps:gold.csv", tp=3, fn=2, fp=4, tn=6)  # 0.6 / 0.6
    r = corrected_interval(OUTCOMES, SESSIONS, weak, seed=0, n_boot=1000)
    assert 0 < r.dropped < 1000
    assert not math.isnan(r.low)


def test_undefined_point_gives_an_undefined_interval():
    chance = JudgeAccuracy("flow", "deps:gold.csv", tp=5, fn=5, fp=5, tn=5)
    r = corrected_interval(OUTCOMES, SESSIONS, chance, n_boot=100)
    assert math.isnan(r.estimate) and math.isnan(r.low) and math.isnan(r.high)
    none = corrected_interval([], [], BIG, n_boot=100)
    assert math.isnan(none.estimate) and none.n == 0


# --- the calibration file -----------------------------------------------------------------------


def calibration_doc(judge: str, tp: int, fn: int, fp: int, tn: int) -> dict:
    sens, spec = tp / (tp + fn), tn / (tn + fp)
    return {
        "judge": judge,
        "against": "deps:gold-dev/labels.csv",
        "tp": tp,
        "fn": fn,
        "fp": fp,
        "tn": tn,
        "sensitivity": sens,
        "specificity": spec,
        "kappa": 0.71,
        "created": "2025-01-01T00:00:00+00:00",
    }


def write_calibration(run: Path, doc: dict) -> Path:
    path = calibration_path(run, doc["judge"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def test_read_calibration(tmp_path: Path):
    assert read_calibration(tmp_path, "flow") is None
    doc = calibration_doc("flow", 40, 10, 5, 45)
    write_calibration(tmp_path, doc)
    assert read_calibration(tmp_path, "flow") == doc
    acc = JudgeAccuracy.from_mapping(doc)
    assert (acc.sensitivity, acc.specificity, acc.n) == (0.8, 0.9, 100)
    calibration_path(tmp_path, "llm").write_text(json.dumps(calibration_doc("flow", 1, 1, 1, 1)))
    with pytest.raises(CalibrationError, match="not 'llm'"):
        read_calibration(tmp_path, "llm")
    calibration_path(tmp_path, "flow").write_text("{")
    with pytest.raises(CalibrationError, match="unreadable"):
        read_calibration(tmp_path, "flow")


# --- in the report ------------------------------------------------------------------------------

TP, FN, FP, TN = 40, 10, 5, 45  # sensitivity 0.8, specificity 0.9


@pytest.fixture(scope="module")
def calibrated(small_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the shared judged run, with a calibration of its flow judge."""
    run = tmp_path_factory.mktemp("calibrated") / "run"
    shutil.copytree(small_run, run)
    write_calibration(run, calibration_doc("flow", TP, FN, FP, TN))
    return run


@pytest.fixture(scope="module")
def report(calibrated: Path):
    return build_report(calibrated, judge="flow", bootstrap=300)


@pytest.fixture(scope="module")
def plain(small_run: Path):
    return build_report(small_run, judge="flow", bootstrap=300)


def test_report_adds_corrected_columns_with_the_hand_computed_point(report):
    sens, spec = TP / (TP + FN), TN / (TN + FP)
    table = report.no_impact
    assert {"corrected_no_impact_pct", "corrected_lo", "corrected_hi"} <= set(table.columns)
    impacted = 0
    for row in table.iter_rows(named=True):
        p_obs = 1 - row["no_impact"] / row["n"]  # the table's own judged impact rate
        assert p_obs == pytest.approx(1 - row["no_impact_pct"] / 100)
        prevalence = min(1.0, max(0.0, (p_obs + spec - 1) / (sens + spec - 1)))
        assert row["corrected_no_impact_pct"] == pytest.approx(100 * (1 - prevalence))
        assert row["corrected_lo"] <= row["corrected_no_impact_pct"] <= row["corrected_hi"]
        impacted += p_obs > 0.1
    assert impacted == 1  # tool-prune (34 of 44 impacted): the correction moved its rate
    noop = table.filter(pl.col("policy") == "noop").row(0, named=True)
    assert (
        noop["corrected_no_impact_pct"] == 100.0
    )  # no judged impact: below the false-positive floor


def test_report_metadata_holds_the_calibration(report):
    cal = report.meta["calibration"]
    assert cal["against"] == "deps:gold-dev/labels.csv" and cal["judge"] == "flow"
    assert cal["n"] == TP + FN + FP + TN
    assert cal["sensitivity"] == pytest.approx(0.8) and cal["specificity"] == pytest.approx(0.9)
    assert cal["explanation"] == explanation(JudgeAccuracy.from_mapping(cal))
    assert "dependency labels" in cal["explanation"]


def test_every_format_shows_the_corrected_columns(report):
    line = report.meta["calibration"]["explanation"]
    assert line.startswith("Corrected no-impact: the judged rate adjusted for the judge's")
    for fmt in ("terminal", "markdown"):
        text = report.render(fmt, width=0)  # terminal: one line per row
        assert "corrected no-impact %" in text and "corrected 95% CI" in text
        assert line in text
        assert "calibration of flow against deps:gold-dev/labels.csv" in text
        # under the no-impact table: after its header, before the next table's title
        assert text.index("corrected 95% CI") < text.index(line) < text.index("Paired comparisons")
    page = report.render("html")
    assert html.escape(line) in page and "corrected 95% CI" in page
    assert "sensitivity 0.800, specificity 0.900" in page
    section = report.render("csv").split("# no_impact\n")[1].split("\n# ")[0]
    header = next(csv.reader(io.StringIO(section)))
    assert {"corrected_no_impact_pct", "corrected_lo", "corrected_hi"} <= set(header)
    doc = json.loads(report.render("json"))
    assert all("corrected_no_impact_pct" in r for r in doc["tables"]["no_impact"])
    assert doc["meta"]["calibration"]["specificity"] == pytest.approx(0.9)


def test_without_a_calibration_the_columns_are_absent(plain):
    assert not any(c.startswith("corrected") for c in plain.no_impact.columns)
    assert plain.meta["calibration"] is None
    for fmt in ("terminal", "markdown", "html", "csv", "json"):
        text = plain.render(fmt)
        assert "corrected" not in text.lower(), fmt
    assert "Rogan" not in plain.render("html")


def test_a_calibration_of_another_judge_is_ignored_with_a_note(small_run: Path, tmp_path: Path):
    run = tmp_path / "run"
    shutil.copytree(small_run, run)
    calibration_path(run, "flow").parent.mkdir()
    calibration_path(run, "flow").write_text(json.dumps(calibration_doc("llm", 1, 1, 1, 1)))
    r = build_report(run, judge="flow", bootstrap=50)
    assert "corrected_no_impact_pct" not in r.no_impact.columns
    assert any("calibration ignored" in n for n in r.notes)


def test_a_chance_level_calibration_leaves_the_columns_undefined(small_run: Path, tmp_path: Path):
    run = tmp_path / "run"
    shutil.copytree(small_run, run)
    write_calibration(run, calibration_doc("flow", 5, 5, 5, 5))
    r = build_report(run, judge="flow", bootstrap=50)
    assert r.no_impact["corrected_no_impact_pct"].is_nan().all()
    assert "no better than chance" in r.meta["calibration"]["undefined"]
    assert "correction undefined" in r.render("terminal")


def test_report_takes_a_calibration_from_another_run(small_run: Path, tmp_path: Path):
    """A corpus without labels is corrected with the calibration of the same judge measured on a
    labelled set (``report --calibration``); the run's own folder stays untouched."""
    from click.testing import CliRunner

    from ctxreplay.cli import main

    labelled = tmp_path / "labelled-run"
    path = write_calibration(labelled, calibration_doc("flow", TP, FN, FP, TN))
    runner = CliRunner()
    out = runner.invoke(
        main,
        [
            "report",
            str(small_run),
            "--judge",
            "flow",
            "--bootstrap",
            "50",
            "--format",
            "json",
            "--calibration",
            str(path),
        ],
    )
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    rows = doc["tables"]["no_impact"]
    assert all(r["corrected_no_impact_pct"] is not None for r in rows)
    assert doc["meta"]["calibration"]["n"] == TP + FN + FP + TN
    assert not (small_run / "calibration").exists()
    other = write_calibration(tmp_path / "other", calibration_doc("anchor", 1, 1, 1, 1))
    wrong = runner.invoke(
        main, ["report", str(small_run), "--judge", "flow", "--calibration", str(other)]
    )
    assert wrong.exit_code == 2 and "not 'flow'" in wrong.output
