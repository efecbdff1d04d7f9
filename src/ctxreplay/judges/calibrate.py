"""Judge calibration: agreement between judges, accuracy against labels or planted truth.

Positive = ``impact``. Pairs where either side is unscored leave the comparison and are counted.
Cohen's kappa and its asymptotic 95% interval come from statsmodels
(``statsmodels.stats.inter_rater.cohens_kappa``). Per category, a judge "reports" a category when
one of its losses carries it; sensitivity and specificity are computed for each category against
the reference's losses.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from statsmodels.stats.inter_rater import cohens_kappa

from ..datasets.schema import CATEGORIES


@dataclass(frozen=True)
class Rates:
    tp: int
    fn: int
    fp: int
    tn: int

    @property
    def sensitivity(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def specificity(self) -> float | None:
        return self.tn / (self.tn + self.fp) if self.tn + self.fp else None

    @property
    def accuracy(self) -> float | None:
        n = self.tp + self.fn + self.fp + self.tn
        return (self.tp + self.tn) / n if n else None


@dataclass(frozen=True)
class Calibration:
    judge: str
    against: str
    n: int
    unscored: int  # pairs left out because one side was unscored
    missing: int  # pairs the reference has and the judge does not (or the reverse)
    overall: Rates
    kappa: float | None
    kappa_ci: tuple[float, float] | None
    per_category: dict[str, Rates] = field(default_factory=dict)

    def table(self) -> pl.DataFrame:
        rows = [_rates_row("overall (impact)", self.overall)]
        rows += [_rates_row(c, r) for c, r in self.per_category.items()]
        return pl.DataFrame(rows)

    def render(self) -> str:
        o = self.overall
        lines = [
            f"{self.judge} against {self.against}: {self.n} pairs compared"
            f" ({self.unscored} left out as unscored, {self.missing} without a counterpart)",
            "confusion (rows: reference, columns: judge)",
            "                 judge impact   judge no_impact",
            f"  ref impact     {o.tp:>12}   {o.fn:>15}",
            f"  ref no_impact  {o.fp:>12}   {o.tn:>15}",
        ]
        if self.kappa is not None:
            ci = (
                f"[{self.kappa_ci[0]:.3f}, {self.kappa_ci[1]:.3f}] (95% CI)"
                if self.kappa_ci
                else "(CI undefined)"
            )
            lines.append(f"Cohen's kappa {self.kappa:.3f} {ci}")
        else:
            lines.append("Cohen's kappa undefined (one class only)")
        table = self.table().drop("tp", "fn", "fp", "tn")
        with pl.Config(
            tbl_rows=20,
            tbl_cols=-1,
            tbl_width_chars=160,
            tbl_hide_dataframe_shape=True,
            float_precision=3,
        ):
            lines.append(str(table))
        return "\n".join(lines)


def _rates_row(name: str, r: Rates) -> dict[str, Any]:
    return {
        "category": name,
        "positives": r.tp + r.fn,
        "negatives": r.tn + r.fp,
        "tp": r.tp,
        "fn": r.fn,
        "fp": r.fp,
        "tn": r.tn,
        "sensitivity": r.sensitivity,
        "specificity": r.specificity,
        "accuracy": r.accuracy,
    }


def _rates(truth: list[bool], guess: list[bool]) -> Rates:
    t = np.array(truth, dtype=bool)
    g = np.array(guess, dtype=bool)
    return Rates(int((t & g).sum()), int((t & ~g).sum()), int((~t & g).sum()), int((~t & ~g).sum()))


def _categories(losses: Any) -> set[str]:
    return {loss["category"] for loss in (losses or [])}


def compare(judged: pl.DataFrame, reference: pl.DataFrame, judge: str, against: str) -> Calibration:
    """``judged`` and ``reference``: frames with policy, case_id, label and (optionally) losses."""
    ref = (
        reference.select(
            "policy",
            "case_id",
            pl.col("label").alias("ref_label"),
            pl.col("losses").alias("ref_losses"),
        )
        if "losses" in reference.columns
        else reference.select(
            "policy",
            "case_id",
            pl.col("label").alias("ref_label"),
            pl.lit(None).alias("ref_losses"),
        )
    )
    both = judged.select("policy", "case_id", "label", "losses").join(
        ref, on=["policy", "case_id"], how="full", coalesce=True
    )
    missing = both.filter(pl.col("label").is_null() | pl.col("ref_label").is_null()).height
    both = both.drop_nulls(["label", "ref_label"])
    scored = both.filter((pl.col("label") != "unscored") & (pl.col("ref_label") != "unscored"))
    unscored = both.height - scored.height
    truth = (scored["ref_label"] == "impact").to_list()
    guess = (scored["label"] == "impact").to_list()
    overall = _rates(truth, guess)
    kappa = ci = None
    if scored.height:
        table = np.array([[overall.tp, overall.fn], [overall.fp, overall.tn]], dtype=float)
        # kappa is undefined when both raters put everything in one class
        if not ((table.sum(axis=0) == 0).any() and (table.sum(axis=1) == 0).any()):
            with np.errstate(invalid="ignore", divide="ignore"):
                res = cohens_kappa(table)
            if np.isfinite(res.kappa):
                kappa = float(res.kappa)
                low, high = float(res.kappa_low), float(res.kappa_upp)
                ci = (low, high) if np.isfinite(low) and np.isfinite(high) else None
    per: dict[str, Rates] = {}
    if "losses" in reference.columns and scored.height:
        ref_cats = [_categories(x) for x in scored["ref_losses"].to_list()]
        got_cats = [_categories(x) for x in scored["losses"].to_list()]
        for c in CATEGORIES:
            per[c] = _rates([c in r for r in ref_cats], [c in g for g in got_cats])
    return Calibration(judge, against, scored.height, unscored, missing, overall, kappa, ci, per)


def read_labels(path: str | os.PathLike[str]) -> pl.DataFrame:
    """Human labels: a CSV with case_id, policy, label (impact|no_impact) and optional category."""
    frame = pl.read_csv(Path(path), infer_schema_length=0)
    need = {"case_id", "policy", "label"}
    if not need <= set(frame.columns):
        raise ValueError(f"{path}: needs columns {', '.join(sorted(need))}")
    bad = frame.filter(~pl.col("label").is_in(["impact", "no_impact", "unscored"]))
    if bad.height:
        raise ValueError(f"{path}: label must be impact or no_impact (row {bad.row(0)})")
    if "category" in frame.columns:
        frame = frame.with_columns(
            losses=pl.when(pl.col("category").is_not_null() & (pl.col("category") != ""))
            .then(pl.concat_list(pl.struct(category=pl.col("category"))))
            .otherwise(None)
        )
    return frame
