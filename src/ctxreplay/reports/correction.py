"""No-impact corrected for the judge's own error, from a calibration of the judge.

A judge is itself a noisy test of impact. When a run holds a calibration of the report's judge
(``RUN/calibration/<slug(judge)>.json``, written by ``ctxreplay calibrate RUN --judge J --against
deps:PATH``: the judge's confusion against reference labels, positive = ``impact``), the observed
impact rate can be corrected for the judge's sensitivity and specificity:

- **Rogan–Gladen** (Rogan & Gladen 1978): true prevalence
  π = (p_obs + spec − 1) / (sens + spec − 1), clipped to [0, 1]; undefined when
  sens + spec − 1 ≤ 0 (a judge no better than chance says nothing about prevalence).
  Corrected no-impact = 1 − π.
- **Interval**: a percentile bootstrap that carries both samples' uncertainty. Each resample
  draws the policy's judged cases again (whole sessions, as ``stats.cluster_bootstrap_mean``
  does, with the same seed so the draws match the report's cluster CI) for p_obs*, and the
  calibration sample again (sens* = Binomial(tp + fn, sens) / (tp + fn), spec* =
  Binomial(fp + tn, spec) / (fp + tn)), and corrects. Resamples where sens* + spec* − 1 ≤ 0
  are dropped and counted.

>>> round(rogan_gladen(0.30, 0.90, 0.95), 6)
0.294118
>>> round(corrected_no_impact(0.70, 0.90, 0.95), 6)
0.705882
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import stats

NAN = float("nan")

#: The one-line meaning of the corrected columns, printed wherever they appear.
EXPLANATION = (
    "Corrected no-impact: the judged rate adjusted for the judge's measured sensitivity and "
    "specificity against {against} (Rogan–Gladen); its interval also carries the calibration's "
    "own uncertainty."
)

# --- the calibration file -------------------------------------------------------------------


@dataclass(frozen=True)
class JudgeAccuracy:
    """A judge's confusion against reference labels (positive = impact)."""

    judge: str
    against: str
    tp: int
    fn: int
    fp: int
    tn: int
    kappa: float | None = None
    created: str | None = None

    @classmethod
    def from_mapping(cls, doc: Mapping[str, Any]) -> JudgeAccuracy:
        kappa = doc.get("kappa")
        return cls(
            judge=str(doc.get("judge")),
            against=str(doc.get("against")),
            tp=int(doc["tp"]),
            fn=int(doc["fn"]),
            fp=int(doc["fp"]),
            tn=int(doc["tn"]),
            kappa=None if kappa is None else float(kappa),
            created=None if doc.get("created") is None else str(doc["created"]),
        )

    @property
    def positives(self) -> int:
        return self.tp + self.fn

    @property
    def negatives(self) -> int:
        return self.fp + self.tn

    @property
    def n(self) -> int:
        return self.positives + self.negatives

    @property
    def sensitivity(self) -> float:
        return self.tp / self.positives if self.positives else NAN

    @property
    def specificity(self) -> float:
        return self.tn / self.negatives if self.negatives else NAN

    @property
    def informative(self) -> bool:
        """Whether a correction is defined: both rates measured and sens + spec − 1 > 0."""
        s, c = self.sensitivity, self.specificity
        return not (math.isnan(s) or math.isnan(c)) and s + c - 1 > 0

    def meta(self) -> dict[str, Any]:
        """The calibration as the report's metadata records it."""
        return {
            "judge": self.judge,
            "against": self.against,
            "n": self.n,
            "positives": self.positives,
            "negatives": self.negatives,
            "tp": self.tp,
            "fn": self.fn,
            "fp": self.fp,
            "tn": self.tn,
            "sensitivity": None if math.isnan(self.sensitivity) else self.sensitivity,
            "specificity": None if math.isnan(self.specificity) else self.specificity,
            "kappa": self.kappa,
            "created": self.created,
        }


# --- the correction -------------------------------------------------------------------------


def _bad(x: float | None) -> bool:
    return x is None or math.isnan(x)


def rogan_gladen(
    observed_impact_rate: float, sensitivity: float | None, specificity: float | None
) -> float:
    """True impact prevalence from the judged impact rate (Rogan & Gladen 1978).

    π = (p_obs + spec − 1) / (sens + spec − 1), clipped to [0, 1]. ``nan`` when undefined:
    sens + spec − 1 ≤ 0 (a judge no better than chance), or any input missing.

    >>> rogan_gladen(0.02, 0.9, 0.95)  # fewer impacts than the false-positive rate: clipped
    0.0
    >>> import math; math.isnan(rogan_gladen(0.3, 0.5, 0.5))
    True
    """
    if _bad(observed_impact_rate) or _bad(sensitivity) or _bad(specificity):
        return NAN
    denom = sensitivity + specificity - 1  # type: ignore[operator]
    if denom <= 0:
        return NAN
    return float(min(1.0, max(0.0, (observed_impact_rate + specificity - 1) / denom)))  # type: ignore[operator]


def corrected_no_impact(
    observed_no_impact_rate: float, sensitivity: float | None, specificity: float | None
) -> float:
    """1 − Rogan–Gladen impact prevalence, from the judged no-impact rate (``nan``: undefined)."""
    if _bad(observed_no_impact_rate):
        return NAN
    return 1.0 - rogan_gladen(1.0 - observed_no_impact_rate, sensitivity, specificity)


@dataclass(frozen=True)
class CorrectedInterval:
    """Corrected no-impact (fraction) with a percentile bootstrap over both samples."""

    observed: float  # the judged no-impact rate
    estimate: float  # corrected no-impact
    low: float
    high: float
    n: int  # judged cases
    clusters: int
    calibration_n: int
    n_boot: int
    dropped: int  # resamples where sens* + spec* − 1 <= 0
    seed: int
    alpha: float
    method: str = "Rogan–Gladen; session-cluster × calibration-binomial percentile bootstrap"


def corrected_interval(
    no_impact: Sequence[float] | np.ndarray,
    clusters: Sequence[object],
    calibration: JudgeAccuracy,
    seed: int = 0,
    n_boot: int = 2000,
    alpha: float = 0.05,
    *,
    draws: stats.ClusterDraws | None = None,
) -> CorrectedInterval:
    """Corrected no-impact of one policy and its 95% (1 − alpha) bootstrap interval.

    ``no_impact``: one value per scored case (1 no_impact, 0 impact), ``clusters`` its session.
    Cases are resampled by whole sessions (``stats.cluster_draws``, the same draws as
    ``stats.cluster_bootstrap_mean`` for the same seed; pass them as ``draws`` when already
    drawn for these values); the calibration's positives and negatives are redrawn as binomials
    around its sensitivity and specificity from a second stream of the same seed.
    """
    values = np.asarray(no_impact, dtype=float)
    n = len(values)
    if draws is not None and (draws.seed, draws.n_boot, draws.n) != (seed, n_boot, n):
        raise ValueError(
            f"draws of {draws.n} values with seed {draws.seed} and n_boot {draws.n_boot} do not "
            f"match {n} values with seed {seed} and n_boot {n_boot}"
        )
    if draws is None:
        draws = stats.cluster_draws(values, clusters, seed, n_boot)
    return corrected_from_draws(draws, calibration, alpha)


def corrected_from_draws(
    draws: stats.ClusterDraws, calibration: JudgeAccuracy, alpha: float = 0.05
) -> CorrectedInterval:
    """``corrected_interval`` of the values whose session-cluster draws these are (a report
    draws them from per-session aggregates): the observed rate is the draws' estimate."""
    n, seed, n_boot = draws.n, draws.seed, draws.n_boot
    observed = draws.estimate if n else NAN
    sens, spec = calibration.sensitivity, calibration.specificity
    estimate = corrected_no_impact(observed, sens, spec)

    def result(low: float, high: float, clusters_n: int, dropped: int) -> CorrectedInterval:
        return CorrectedInterval(
            observed,
            estimate,
            low,
            high,
            n,
            clusters_n,
            calibration.n,
            n_boot,
            dropped,
            seed,
            alpha,
        )

    if n == 0 or math.isnan(estimate):
        return result(NAN, NAN, draws.clusters, 0)
    p_no = draws.draws
    rng = np.random.default_rng([seed, 0xCA11B])
    pos, neg = calibration.positives, calibration.negatives
    sens_b = rng.binomial(pos, sens, size=n_boot) / pos
    spec_b = rng.binomial(neg, spec, size=n_boot) / neg
    denom = sens_b + spec_b - 1
    keep = denom > 0
    dropped = int((~keep).sum())
    if not keep.any():
        return result(NAN, NAN, draws.clusters, dropped)
    prevalence = np.clip(((1 - p_no[keep]) + spec_b[keep] - 1) / denom[keep], 0.0, 1.0)
    low, high = stats.percentile(estimate, 1 - prevalence, alpha)
    return result(low, high, draws.clusters, dropped)


def reference_words(against: str) -> str:
    """How the line names the reference: ``deps:PATH`` → dependency labels."""
    if against.startswith("deps:"):
        return "dependency labels"
    return f"reference labels ({against})"


def explanation(calibration: JudgeAccuracy | Mapping[str, Any]) -> str:
    """The one line that says what the corrected columns mean."""
    against = (
        calibration.against if isinstance(calibration, JudgeAccuracy) else calibration["against"]
    )
    return EXPLANATION.format(against=reference_words(str(against)))


def describe(meta: Mapping[str, Any]) -> str:
    """The calibration in one line, from the report's ``meta["calibration"]``."""

    def rate(x: Any) -> str:
        return "–" if x is None else f"{x:.3f}"

    line = (
        f"calibration of {meta.get('judge')} against {meta.get('against')}: "
        f"n {meta.get('n')} ({meta.get('positives')} impact, {meta.get('negatives')} no-impact), "
        f"sensitivity {rate(meta.get('sensitivity'))}, specificity {rate(meta.get('specificity'))}"
    )
    if meta.get("kappa") is not None:
        line += f", kappa {meta['kappa']:.3f}"
    dropped = {k: v for k, v in (meta.get("dropped_resamples") or {}).items() if v}
    if dropped:
        why = "dropped (the resampled judge was no better than chance)"
        counts = set(dropped.values())
        if len(counts) == 1:  # the calibration draws are shared by every policy
            line += f"; {counts.pop()} of {meta.get('resamples')} resamples {why}"
        else:
            line += f"; resamples {why}: " + ", ".join(
                f"{p} {d}/{meta.get('resamples')}" for p, d in dropped.items()
            )
    if meta.get("undefined"):
        line += f"; correction undefined: {meta['undefined']}"
    return line
