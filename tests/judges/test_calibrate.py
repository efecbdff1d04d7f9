"""Calibration statistics against hand-computed values."""

from __future__ import annotations

import polars as pl
import pytest

from ctxreplay.engines.calibrate import compare, read_labels


def frame(labels: list[str], cats: list[str | None] | None = None) -> pl.DataFrame:
    cats = cats or [None] * len(labels)
    return pl.DataFrame(
        {
            "policy": ["p"] * len(labels),
            "case_id": [f"c{i}" for i in range(len(labels))],
            "label": labels,
            "losses": [[{"category": c, "anchor": "a"}] if c else [] for c in cats],
        }
    )


def test_confusion_sensitivity_specificity_and_kappa_by_hand() -> None:
    # reference: 25 impact, 25 no_impact; judge: 20 TP, 5 FN, 10 FP, 15 TN
    ref = ["impact"] * 25 + ["no_impact"] * 25
    got = ["impact"] * 20 + ["no_impact"] * 5 + ["impact"] * 10 + ["no_impact"] * 15
    c = compare(frame(got), frame(ref), "a", "b")
    assert (c.overall.tp, c.overall.fn, c.overall.fp, c.overall.tn) == (20, 5, 10, 15)
    assert c.overall.sensitivity == pytest.approx(0.8) and c.overall.specificity == pytest.approx(
        0.6
    )
    # p_o = 35/50 = .7; p_e = .5·.6 + .5·.4 = .5; kappa = (.7 − .5)/(1 − .5) = .4
    assert c.kappa == pytest.approx(0.4)
    lo, hi = c.kappa_ci
    assert lo < 0.4 < hi


def test_unscored_pairs_leave_the_comparison_and_are_counted() -> None:
    c = compare(
        frame(["impact", "unscored", "no_impact"]),
        frame(["impact", "impact", "no_impact"]),
        "a",
        "b",
    )
    assert c.n == 2 and c.unscored == 1 and c.overall.accuracy == 1.0


def test_per_category_rates() -> None:
    ref = frame(["impact", "impact", "no_impact"], ["live_state", "locator_handle", None])
    got = frame(
        ["impact", "impact", "impact"], ["live_state", "evidence_detail", "evidence_detail"]
    )
    c = compare(got, ref, "a", "b")
    assert c.per_category["live_state"].sensitivity == 1.0
    assert c.per_category["locator_handle"].sensitivity == 0.0
    assert c.per_category["evidence_detail"].specificity == pytest.approx(1 / 3)
    assert c.kappa == pytest.approx(0.0)  # the judge says impact every time
    assert "Cohen's kappa 0.000" in c.render()


def test_labels_csv(tmp_path) -> None:
    path = tmp_path / "labels.csv"
    path.write_text("case_id,policy,label,category\nc0,p,impact,live_state\nc1,p,no_impact,\n")
    labels = read_labels(path)
    c = compare(frame(["impact", "no_impact"], ["live_state", None]), labels, "a", str(path))
    assert c.overall.accuracy == 1.0 and c.per_category["live_state"].tp == 1
    path.write_text("case_id,policy,label\nc0,p,maybe\n")
    with pytest.raises(ValueError, match="label must be"):
        read_labels(path)
