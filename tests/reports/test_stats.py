"""Statistics against published figures and hand computations."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest

from ctxreplay.reports import stats
from ctxreplay.reports.stats import (
    cluster_bootstrap_mean,
    holm,
    mcnemar,
    mcnemar_exact,
    paired_bootstrap_diff,
    wilson,
)


@pytest.mark.parametrize(
    ("k", "estimate", "low", "high"),
    [
        (28, 84.85, 69.08, 93.35),  # Self-GC, Hard Set
        (22, 66.67, 49.61, 80.25),  # oldest-turn
        (23, 69.70, 52.66, 82.62),  # tool-prune
        (18, 54.55, 37.99, 70.16),  # tool-mask+prune
        (19, 57.58, 40.81, 72.76),  # hybrid
    ],
)
def test_wilson_reproduces_the_self_gc_hard_set(k: int, estimate: float, low: float, high: float):
    w = wilson(k, 33)
    assert (w.k, w.n, w.method) == (k, 33, "wilson")
    assert round(100 * w.estimate, 2) == estimate
    assert round(100 * w.low, 2) == low
    assert round(100 * w.high, 2) == high


def test_wilson_is_not_the_normal_approximation():
    w = wilson(33, 33)
    assert w.high == pytest.approx(1.0)
    assert w.low < 1.0  # the normal (Wald) interval collapses to [1, 1] here
    assert round(100 * w.low, 2) == 89.57


def test_wilson_without_cases_is_undefined_not_zero():
    w = wilson(0, 0)
    assert math.isnan(w.estimate) and math.isnan(w.low) and math.isnan(w.high)
    with pytest.raises(ValueError):
        wilson(4, 3)


def _exact_two_sided(b: int, c: int) -> float:
    n = b + c
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2 * tail)


@pytest.mark.parametrize(("b", "c"), [(1, 6), (6, 1), (0, 5), (3, 3), (2, 9), (0, 1), (10, 14)])
def test_mcnemar_exact_is_the_binomial_test(b: int, c: int):
    r = mcnemar_exact(b, c)
    assert r.method == "exact"
    assert r.pvalue == pytest.approx(_exact_two_sided(b, c), abs=1e-12)


def test_mcnemar_hand_value_and_no_discordant_pairs():
    assert mcnemar_exact(1, 6).pvalue == pytest.approx(0.125)  # 2·P(X ≤ 1 | 7, ½) = 2·8/128
    r = mcnemar(0, 0)
    assert (r.method, r.pvalue, r.discordant) == ("exact", 1.0, 0)


def test_mcnemar_switches_to_chi_square_with_continuity_correction():
    assert mcnemar(14, 10).method == "exact"  # 24 discordant pairs
    r = mcnemar(20, 10)
    assert r.method == "chi2-cc"
    assert r.statistic == pytest.approx((abs(20 - 10) - 1) ** 2 / 30)  # 2.7
    # chi-square with 1 df: P(X > s) = erfc(sqrt(s / 2))
    assert r.pvalue == pytest.approx(math.erfc(math.sqrt(2.7 / 2)))
    assert mcnemar(20, 10, exact_below=None).method == "exact"
    assert mcnemar(20, 10, exact_below=None).pvalue == pytest.approx(_exact_two_sided(20, 10))


def test_holm_against_a_hand_computation():
    # sorted: .005×4 = .02, .01×3 = .03, .03×2 = .06, .04×1 = .04 → .06 (monotone)
    r = holm([0.01, 0.04, 0.03, 0.005])
    assert r.adjusted == pytest.approx((0.03, 0.06, 0.06, 0.02))
    assert r.reject == (True, False, False, True)
    assert holm([0.9, 0.8]).adjusted == pytest.approx((1.0, 1.0))  # capped at 1


def test_holm_leaves_untestable_comparisons_out():
    r = holm([0.01, float("nan"), 0.04])
    assert r.adjusted[0] == pytest.approx(0.02)
    assert math.isnan(r.adjusted[1])
    assert r.adjusted[2] == pytest.approx(0.04)
    assert holm([]).adjusted == ()


def _sample(seed: int = 0) -> tuple[np.ndarray, list[str]]:
    rng = np.random.default_rng(seed)
    clusters = [f"s{i // 4}" for i in range(80)]
    return (rng.random(80) < 0.7).astype(float), clusters


def test_cluster_bootstrap_is_seeded_and_reproducible():
    values, clusters = _sample()
    a = cluster_bootstrap_mean(values, clusters, seed=7, n_boot=500)
    b = cluster_bootstrap_mean(values, clusters, seed=7, n_boot=500)
    c = cluster_bootstrap_mean(values, clusters, seed=8, n_boot=500)
    assert a == b
    assert (a.low, a.high) != (c.low, c.high)
    assert a.estimate == pytest.approx(values.mean())
    assert a.low < a.estimate < a.high
    assert (a.n, a.clusters, a.n_boot, a.seed) == (80, 20, 500, 7)


def test_cluster_bootstrap_collapses_on_identical_clusters():
    values = [1, 0, 0] * 6
    clusters = [f"s{i // 3}" for i in range(18)]
    r = cluster_bootstrap_mean(values, clusters, seed=1, n_boot=300)
    assert r.estimate == pytest.approx(1 / 3)
    assert r.low == r.high == r.estimate
    one = cluster_bootstrap_mean([0.2, 0.4, 0.9], ["only"] * 3, seed=1, n_boot=50)
    assert one.low == one.high == one.estimate


def test_cluster_bootstrap_resamples_sessions_not_cases():
    # two sessions, perfectly correlated inside: the interval spans both session means
    values = [1.0] * 10 + [0.0] * 10
    clusters = ["a"] * 10 + ["b"] * 10
    r = cluster_bootstrap_mean(values, clusters, seed=0, n_boot=400)
    assert r.low == 0.0 and r.high == 1.0


def test_cluster_bootstrap_empty_input():
    r = cluster_bootstrap_mean([], [], seed=0, n_boot=10)
    assert math.isnan(r.estimate) and r.n == 0


def test_paired_bootstrap_difference_has_the_sign_of_x_minus_y():
    x, clusters = _sample(1)
    y = np.zeros_like(x)
    y[: len(y) // 4] = x[: len(y) // 4]  # y keeps only a quarter of x's successes
    up = paired_bootstrap_diff(x, y, clusters, seed=3, n_boot=500)
    down = paired_bootstrap_diff(y, x, clusters, seed=3, n_boot=500)
    assert up.estimate == pytest.approx(x.mean() - y.mean()) and up.estimate > 0
    assert up.low > 0
    assert down.estimate == pytest.approx(-up.estimate)
    assert down.high < 0
    assert (down.low, down.high) == pytest.approx((-up.high, -up.low))
    with pytest.raises(ValueError):
        paired_bootstrap_diff([1, 0], [1], ["a", "b"])


def test_docstring_examples_run():
    failures, _ = doctest.testmod(stats)
    assert failures == 0


def test_wilson_bounds_are_exact_at_the_ends() -> None:
    # floating point gave 0.9999999999999999, printed as 99.99999999999999 % in CSV and JSON
    assert stats.wilson(5, 5).high == 1.0
    assert stats.wilson(0, 5).low == 0.0
    assert 0.0 < stats.wilson(3, 5).low < stats.wilson(3, 5).high < 1.0
