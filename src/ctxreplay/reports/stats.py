"""Statistics for reports: small typed functions that return frozen records.

Each function names its method. The report code only formats these records; nothing here reads a
run. Conventions shared by all of them:

- rates are fractions in [0, 1] (the tables multiply by 100);
- an undefined estimate (no cases, no pairs) is ``nan`` with a ``nan`` interval, never a zero;
- bootstraps are seeded (``numpy.random.default_rng(seed)``) and resample *sessions*, because
  cases cut from the same session share their prefix and are correlated; the same seed gives the
  same resamples for every policy (common random numbers), so intervals are comparable.

>>> w = wilson(28, 33)
>>> round(100 * w.low, 2), round(100 * w.high, 2)
(69.08, 93.35)
>>> mcnemar(1, 6).pvalue
0.125
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from statsmodels.stats.contingency_tables import mcnemar as _sm_mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

NAN = float("nan")


# --- small helpers shared by the report modules ---------------------------------------------


def is_nan(x: Any) -> bool:
    """Whether a cell is missing: None or a float NaN."""
    return x is None or (isinstance(x, float) and math.isnan(x))


def pct(x: float) -> float:
    """A fraction as a percentage (NaN stays NaN)."""
    return 100.0 * x if not math.isnan(x) else NAN


def mean_or_nan(values: pl.Series | None) -> float:
    """Mean of the non-null values; NaN when there are none (or no column: ``None``)."""
    if values is None:
        return NAN
    kept = values.drop_nulls()
    return float(kept.mean()) if len(kept) else NAN  # type: ignore[arg-type]


#: Below this many discordant pairs McNemar uses the exact binomial test, at or above it the
#: chi-square with continuity correction (a common rule: the normal approximation to
#: Binomial(b + c, 1/2) is adequate from about 25 discordant pairs on).
EXACT_BELOW = 25


@dataclass(frozen=True)
class Proportion:
    """k successes out of n with a confidence interval (fractions)."""

    k: int
    n: int
    estimate: float
    low: float
    high: float
    method: str
    alpha: float


def wilson(k: int, n: int, alpha: float = 0.05) -> Proportion:
    """Wilson score interval for k/n.

    Method: Wilson (1927), via ``statsmodels.stats.proportion.proportion_confint(k, n, alpha,
    method="wilson")`` — statsmodels' default method is the normal approximation, not Wilson.
    n = 0 gives ``nan`` for the estimate and both bounds.

    >>> w = wilson(22, 33)
    >>> round(100 * w.estimate, 2), round(100 * w.low, 2), round(100 * w.high, 2)
    (66.67, 49.61, 80.25)
    """
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return Proportion(k, n, NAN, NAN, NAN, "wilson", alpha)
    low, high = proportion_confint(k, n, alpha=alpha, method="wilson")
    # the bounds are exactly 0 at k = 0 and 1 at k = n; floating point gives 0.9999999999999999,
    # which CSV and JSON would print as 99.99999999999999 %
    low = 0.0 if k == 0 else max(0.0, float(low))
    high = 1.0 if k == n else min(1.0, float(high))
    return Proportion(k, n, k / n, low, high, "wilson", alpha)


@dataclass(frozen=True)
class Kappa:
    """Two raters' agreement on a yes/no label: raw agreement and Cohen's kappa (fractions)."""

    n: int  # items both rated
    agree: int  # of which rated alike
    agreement: float  # agree / n
    kappa: float  # nan when undefined (both raters put every item in one class, or n = 0)
    low: float  # asymptotic 95% interval of kappa (nan where undefined)
    high: float
    table: tuple[tuple[int, int], tuple[int, int]]  # [[yes·yes, yes·no], [no·yes, no·no]]
    method: str = "Cohen's kappa, asymptotic 95% interval (statsmodels cohens_kappa)"


def cohen_kappa(table: Sequence[Sequence[int]]) -> Kappa:
    """Cohen's kappa of a 2×2 table (rows: rater A yes/no, columns: rater B yes/no).

    Method: ``statsmodels.stats.inter_rater.cohens_kappa`` — kappa = (p_o − p_e) / (1 − p_e)
    with its asymptotic standard error, the interval clipped to [−1, 1]; undefined (``nan``)
    when both raters put every item in one class each, or there are no items.

    >>> k = cohen_kappa([[20, 5], [10, 15]])  # p_o = .7, p_e = .5
    >>> round(k.kappa, 3), k.n, k.agree
    (0.4, 50, 35)
    """
    from statsmodels.stats.inter_rater import cohens_kappa

    t = np.asarray(table, dtype=float)
    if t.shape != (2, 2) or (t < 0).any():
        raise ValueError(f"need a 2x2 table of counts, got {table!r}")
    n, agree = int(t.sum()), int(np.trace(t))
    cells = ((int(t[0, 0]), int(t[0, 1])), (int(t[1, 0]), int(t[1, 1])))
    undefined = Kappa(n, agree, agree / n if n else NAN, NAN, NAN, NAN, cells)
    if n == 0 or ((t.sum(axis=0) == 0).any() and (t.sum(axis=1) == 0).any()):
        return undefined
    with np.errstate(invalid="ignore", divide="ignore"):
        res = cohens_kappa(t)
    kappa = float(res.kappa)
    if not math.isfinite(kappa):
        return undefined
    low, high = float(res.kappa_low), float(res.kappa_upp)
    if not (math.isfinite(low) and math.isfinite(high)):
        low = high = NAN
    else:  # the normal approximation runs past kappa's range near agreement
        low, high = max(-1.0, low), min(1.0, high)
    return Kappa(n, agree, agree / n, kappa, low, high, cells)


def agreement(a: Sequence[bool], b: Sequence[bool]) -> Kappa:
    """:func:`cohen_kappa` of two raters' yes/no ratings of the same items, in order."""
    x = np.asarray(a, dtype=bool)
    y = np.asarray(b, dtype=bool)
    if x.shape != y.shape:
        raise ValueError(f"ratings of different lengths: {len(x)} and {len(y)}")
    return cohen_kappa(
        [[int((x & y).sum()), int((x & ~y).sum())], [int((~x & y).sum()), int((~x & ~y).sum())]]
    )


@dataclass(frozen=True)
class BootstrapInterval:
    """A point estimate with a percentile bootstrap interval over resampled clusters."""

    estimate: float
    low: float
    high: float
    n: int  # observations
    clusters: int
    n_boot: int
    seed: int
    alpha: float
    method: str


def _cluster_totals(
    values: Sequence[float] | np.ndarray, clusters: Sequence[object]
) -> tuple[np.ndarray, np.ndarray]:
    v = np.asarray(values, dtype=float)
    if v.ndim != 1 or len(v) != len(clusters):
        raise ValueError(f"values ({len(v)}) and clusters ({len(clusters)}) must align")
    _, inverse = np.unique(np.asarray(clusters, dtype=object).astype(str), return_inverse=True)
    sums = np.bincount(inverse, weights=v)
    counts = np.bincount(inverse).astype(float)
    return sums, counts


def _resampled_ratio(
    sums: np.ndarray, counts: np.ndarray, seed: int, n_boot: int, batch: int = 256
) -> np.ndarray:
    """Σ sums / Σ counts over ``n_boot`` resamples of the clusters, with replacement.

    A resample is drawn as multinomial cluster weights (how often each cluster was picked),
    in batches so memory stays bounded for many clusters. A batch's weights are drawn a few
    rows at a time (at most ``DRAW_CELLS`` integers) into one float matrix: the same draws and
    the same matrix products as drawing the whole batch at once, without its integer copy.
    """
    g = len(sums)
    rng = np.random.default_rng(seed)
    p = np.full(g, 1.0 / g)
    out = np.empty(n_boot)
    step = max(1, DRAW_CELLS // max(g, 1))
    weights = np.empty((min(batch, n_boot), g))
    done = 0
    while done < n_boot:
        size = min(batch, n_boot - done)
        w = weights[:size]
        for row in range(0, size, step):
            end = min(row + step, size)
            w[row:end] = rng.multinomial(g, p, size=end - row)
        out[done : done + size] = (w @ sums) / (w @ counts)
        done += size
    return out


#: the most cluster weights ``_resampled_ratio`` draws at once (integers, before they are
#: copied into the batch's float matrix)
DRAW_CELLS = 1 << 16


@dataclass(frozen=True)
class ClusterDraws:
    """The means of ``n_boot`` session-cluster resamples of one set of values.

    Drawn once, they serve every interval built on the same values, seed and ``n_boot`` (the
    report's cluster CI and the judge-corrected interval of ``correction.py``).
    """

    estimate: float  # the mean over every observation (nan: none)
    draws: np.ndarray  # one mean per resample; empty when there is no observation
    n: int  # observations
    clusters: int
    n_boot: int
    seed: int


def cluster_draws(
    values: Sequence[float] | np.ndarray,
    clusters: Sequence[object],
    seed: int = 0,
    n_boot: int = 2000,
) -> ClusterDraws:
    """Resample whole clusters (sessions) with replacement ``n_boot`` times and take the mean
    over all observations of the drawn clusters, per resample (seeded:
    ``numpy.random.default_rng(seed)``, multinomial cluster weights).

    >>> d = cluster_draws([1, 0, 1, 1], ["s1", "s1", "s2", "s3"], seed=1, n_boot=200)
    >>> d.estimate, d.clusters, len(d.draws)
    (0.75, 3, 200)
    """
    sums, counts = _cluster_totals(values, clusters)
    return totals_draws(sums, counts, seed, n_boot)


def totals_draws(
    sums: np.ndarray, counts: np.ndarray, seed: int = 0, n_boot: int = 2000
) -> ClusterDraws:
    """``cluster_draws`` from each cluster's sum of values and count of observations, the
    clusters in the order of their names (as ``numpy.unique`` sorts them): the same draws, from
    per-session aggregates instead of one value per observation."""
    sums = np.asarray(sums, dtype=float)
    counts = np.asarray(counts, dtype=float)
    n = int(counts.sum())
    if n == 0:
        return ClusterDraws(NAN, np.empty(0), 0, 0, n_boot, seed)
    estimate = float(sums.sum() / counts.sum())
    draws = _resampled_ratio(sums, counts, seed, n_boot)
    return ClusterDraws(estimate, draws, n, len(sums), n_boot, seed)


def percentile(estimate: float, draws: np.ndarray, alpha: float) -> tuple[float, float]:
    """The alpha/2 and 1 − alpha/2 percentiles of bootstrap ``draws``; when every draw equals
    the point (all clusters alike), the point itself, exactly."""
    lo, hi = np.quantile(draws, [alpha / 2, 1 - alpha / 2])
    if np.allclose(draws, estimate, rtol=0, atol=1e-12):
        return estimate, estimate
    return float(lo), float(hi)


def cluster_interval(
    draws: ClusterDraws,
    alpha: float = 0.05,
    method: str = "session-cluster percentile bootstrap",
) -> BootstrapInterval:
    """The percentile interval of drawn cluster resamples (``cluster_draws``)."""
    d = draws
    if d.n == 0:
        return BootstrapInterval(NAN, NAN, NAN, 0, 0, d.n_boot, d.seed, alpha, method)
    low, high = percentile(d.estimate, d.draws, alpha)
    return BootstrapInterval(
        d.estimate, low, high, d.n, d.clusters, d.n_boot, d.seed, alpha, method
    )


def cluster_bootstrap_mean(
    values: Sequence[float] | np.ndarray,
    clusters: Sequence[object],
    seed: int = 0,
    n_boot: int = 2000,
    alpha: float = 0.05,
) -> BootstrapInterval:
    """Mean of ``values`` with a session-cluster percentile bootstrap interval.

    Method: cluster (block) bootstrap — resample whole clusters (sessions) with replacement,
    recompute the mean over all observations of the drawn clusters, and take the alpha/2 and
    1 − alpha/2 percentiles of ``n_boot`` resamples (Davison & Hinkley 1997, §3.8; Field & Welsh
    2007). Use it for the mean pruning rate (values = per-case rates) and for the no-impact rate
    (values = 1 for no_impact, 0 for impact; unscored cases left out beforehand). The same as
    ``cluster_interval(cluster_draws(values, clusters, seed, n_boot), alpha)``.

    >>> r = cluster_bootstrap_mean([1, 0, 1, 1], ["s1", "s1", "s2", "s3"], seed=1, n_boot=200)
    >>> r.estimate, r.clusters
    (0.75, 3)
    """
    return cluster_interval(cluster_draws(values, clusters, seed, n_boot), alpha)


def paired_bootstrap_diff(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    clusters: Sequence[object],
    seed: int = 0,
    n_boot: int = 2000,
    alpha: float = 0.05,
) -> BootstrapInterval:
    """Mean of x − y over paired observations, with a session-cluster percentile bootstrap.

    ``x[i]`` and ``y[i]`` are two policies' outcomes (1 no_impact, 0 impact) on the same case;
    the estimate is the difference in no-impact rate (x − y). Pairs stay together and whole
    sessions are resampled with replacement (paired cluster bootstrap, percentile interval).

    >>> paired_bootstrap_diff([1, 1, 0, 1], [0, 1, 0, 0], ["a", "a", "b", "c"], n_boot=100).estimate
    0.5
    """
    xa = np.asarray(x, dtype=float)
    ya = np.asarray(y, dtype=float)
    if xa.shape != ya.shape:
        raise ValueError(f"x ({len(xa)}) and y ({len(ya)}) must be paired")
    r = cluster_bootstrap_mean(xa - ya, clusters, seed, n_boot, alpha)
    return BootstrapInterval(
        r.estimate,
        r.low,
        r.high,
        r.n,
        r.clusters,
        n_boot,
        seed,
        alpha,
        "paired session-cluster percentile bootstrap",
    )


@dataclass(frozen=True)
class McNemarResult:
    """McNemar's test on the discordant pairs b and c of a paired 2×2 table."""

    b: int
    c: int
    statistic: float
    pvalue: float
    method: str  # "exact" (binomial) or "chi2-cc" (chi-square with continuity correction)

    @property
    def discordant(self) -> int:
        return self.b + self.c


def mcnemar_exact(b: int, c: int) -> McNemarResult:
    """Exact McNemar test: two-sided binomial test of b against Binomial(b + c, 1/2).

    Method: McNemar (1947), exact form; via ``statsmodels.stats.contingency_tables.mcnemar(
    [[a, b], [c, d]], exact=True)`` (the concordant cells a and d do not enter the test, so they
    are passed as 0). p = min(1, 2·P(X ≤ min(b, c))) for X ~ Binomial(b + c, 1/2); with no
    discordant pairs p = 1.

    >>> mcnemar_exact(1, 6).pvalue  # 2 * (1 + 7) / 2**7
    0.125
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    r = _sm_mcnemar([[0, b], [c, 0]], exact=True)
    return McNemarResult(b, c, float(r.statistic), float(min(1.0, r.pvalue)), "exact")


def mcnemar(b: int, c: int, exact_below: int | None = EXACT_BELOW) -> McNemarResult:
    """McNemar's test, exact when discordant pairs are few.

    Method: exact binomial McNemar (``mcnemar_exact``) when b + c < ``exact_below`` (default 25)
    or when ``exact_below`` is None; otherwise the chi-square statistic with Edwards' continuity
    correction, (|b − c| − 1)² / (b + c) on 1 degree of freedom, via statsmodels'
    ``mcnemar(..., exact=False, correction=True)``. The record's ``method`` says which was used.

    >>> mcnemar(20, 10).method
    'chi2-cc'
    """
    if exact_below is None or b + c < exact_below:
        return mcnemar_exact(b, c)
    r = _sm_mcnemar([[0, b], [c, 0]], exact=False, correction=True)
    return McNemarResult(b, c, float(r.statistic), float(r.pvalue), "chi2-cc")


@dataclass(frozen=True)
class HolmResult:
    """Holm step-down adjusted p-values, in the order given."""

    pvalues: tuple[float, ...]
    adjusted: tuple[float, ...]
    reject: tuple[bool, ...]
    alpha: float
    method: str = "holm"


def holm(pvalues: Sequence[float], alpha: float = 0.05) -> HolmResult:
    """Holm–Bonferroni adjustment across a family of tests.

    Method: Holm (1979) step-down, via ``statsmodels.stats.multitest.multipletests(method=
    "holm")``: sort p ascending, adjusted p_(i) = max_{j ≤ i} min(1, (m − j + 1)·p_(j)).
    ``nan`` p-values (tests that could not be run) are left out of the family and stay ``nan``.

    >>> holm([0.01, 0.04, 0.03]).adjusted
    (0.03, 0.06, 0.06)
    """
    ps = tuple(float(p) for p in pvalues)
    keep = [i for i, p in enumerate(ps) if not math.isnan(p)]
    adjusted = [NAN] * len(ps)
    reject = [False] * len(ps)
    if keep:
        rej, adj, _, _ = multipletests([ps[i] for i in keep], alpha=alpha, method="holm")
        for i, a, r in zip(keep, adj, rej, strict=True):
            adjusted[i] = float(a)
            reject[i] = bool(r)
    return HolmResult(ps, tuple(adjusted), tuple(reject), alpha)
