"""``benchmarks/policy_loco.py``: the need model fitted with each corpus held out, and the
frontier scored on the held-out corpus only, on the labelled fixture of ``tests/fixtures/loco``
(``--quick``: three small corpora, two labels sets; see ``test_judge_loco.py`` for what each
case's labels say)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

from builders import load_benchmark, quick_twice, run_benchmark

loco = load_benchmark("policy_loco")


@dataclass
class Quick:
    out: Path
    first: subprocess.CompletedProcess[str]
    again: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> Quick:
    out = tmp_path_factory.mktemp("ploco") / "work"
    return Quick(out, *quick_twice("policy_loco", out, "--fit"))


def test_candidates_are_labelled_needed_by_the_required_dependencies(quick: Quick) -> None:
    rows = pl.read_parquet(quick.out / "candidates.parquet")
    needed = {(r["case"], r["object"]): r["needed"] for r in rows.iter_rows(named=True)}
    # shop/cancel: the profile and the pending order are required, the delivered order helpful
    assert needed[("q-shop-cancel", "function:get_user:1")] is True
    assert needed[("q-shop-cancel", "function:get_order:2")] is True
    assert needed[("q-shop-cancel", "function:get_order:3")] is False
    # build/rename: the read the edit copies is required; the test run is not
    assert needed[("q-build-rename", "function:read_file:1")] is True
    assert needed[("q-build-rename", "function:run_tests:2")] is False
    # build/docs: the searched URL is only helpful; air/cancel: the profile nothing uses
    assert needed[("q-build-docs", "function:search:1")] is False
    assert needed[("q-air-cancel", "function:get_user_details:1")] is False
    assert set(rows["corpus"]) == {"air", "build", "shop"}


def test_each_corpus_is_scored_by_weights_fitted_without_it(quick: Quick) -> None:
    rows = pl.read_parquet(quick.out / "candidates.parquet")
    views = pl.read_parquet(quick.out / "policy_views.parquet")
    ours = views.filter(pl.col("family") == loco.FAMILY)
    assert ours.height > 0
    for row in ours.iter_rows(named=True):
        held = row["corpus"]
        fitted = loco.fit(rows, sorted({"air", "build", "shop"} - {held}), 1.0)
        for name, value in fitted.weights.items():
            shown = loco.param_of(row["policy"], name)
            default = getattr(loco.WorkingSet(None).params, name)
            assert (default if shown is None else shown) == value, (held, name)
    # every labelled case has each of our points once
    assert ours.group_by("point").len()["len"].to_list() == [6] * ours["point"].n_unique()


def test_the_frontier_and_the_paired_tests_are_the_views_counted(quick: Quick) -> None:
    views = pl.read_parquet(quick.out / "policy_views.parquet")
    frontier = pl.read_parquet(quick.out / "frontier.parquet")
    here = views.filter(pl.col("corpus").is_in(["build", "shop"]))
    point = "tool-prune:target=0.1"
    mine = here.filter(pl.col("point") == point)
    row = frontier.filter((pl.col("scope") == "labels-a") & (pl.col("point") == point)).row(
        0, named=True
    )
    assert row["cases"] == mine.height == 4
    assert row["strict"] == (mine["gold_strict"] == "no_impact").mean()
    assert row["recovery"] == (mine["gold_recovery"] == "no_impact").mean()
    assert row["editable_pruning"] == pytest.approx(mine["editable_pruning"].mean())
    tests = loco.paired_tests(views, loco.QUICK_GROUPS, loco.QUICK_HEURISTICS)
    for t in tests.filter(pl.col("scope") == "labels-a").iter_rows(named=True):
        ok = here.filter(pl.col("target") == t["target"]).with_columns(
            ok=pl.col("gold_strict") == "no_impact"
        )
        a = dict(ok.filter(pl.col("family") == loco.FAMILY).select("case", "ok").iter_rows())
        b = dict(ok.filter(pl.col("family") == t["heuristic"]).select("case", "ok").iter_rows())
        assert t["ours_only"] == sum(a[c] and not b[c] for c in a)
        assert t["theirs_only"] == sum(b[c] and not a[c] for c in a)


def test_it_prints_fits_frontiers_targets_and_reuses_its_stages(quick: Quick) -> None:
    out = quick.first.stdout
    assert "need model fits" in out
    assert "labels-a: held out" in out and "labels-b: held out" in out
    assert "paired (McNemar exact" in out
    assert "≥ 90% strict at ≥ 40% editable pruned" in out
    assert "weights fitted on every corpus" in out and "w_age = " in out
    again = quick.again.stdout
    assert "corpus: reusing" in again and "already there" in again


def test_fit_finds_the_sign_of_a_feature_and_keeps_defaults_without_two_classes() -> None:
    n = 40
    rows = pl.DataFrame(
        {
            "corpus": ["a"] * n,
            "case": [f"c{i}" for i in range(n)],
            "object": [f"o{i}" for i in range(n)],
            "needed": [i % 4 == 0 or i < 10 for i in range(n)],
            **{f: [0.0] * n for f in loco.FEATURES},
        }
    ).with_columns(age=pl.Series([float(i % 10) for i in range(n)]))
    # needed mostly when young: the weight of age comes out negative
    fitted = loco.fit(rows, ["a"], 0.1)
    assert fitted.weights["w_age"] < 0 and fitted.why is None
    same = loco.fit(rows.with_columns(needed=pl.lit(False)), ["a"], 0.1)
    assert same.why is not None and "defaults kept" in same.why
    assert same.weights["w_age"] == loco.WorkingSet(None).params.w_age


def test_base_parameters_reach_every_point_and_bad_ones_stop_before_work(tmp_path: Path) -> None:
    out = tmp_path / "w"
    run_benchmark("policy_loco", "--quick", "--quiet", "--workers", "1", "--out", str(out),
                  "--base", "min_saving=0,prune_below=1.0,keep=1")  # fmt: skip
    rows = pl.read_parquet(out / "candidates.parquet")
    # keep=1: the newest result of each case is never a candidate (build/rename has two)
    assert set(rows.filter(pl.col("case") == "q-build-rename")["object"]) == {
        "function:read_file:1"
    }
    views = pl.read_parquet(out / "policy_views.parquet")
    ours = views.filter(pl.col("family") == loco.FAMILY)["policy"].unique().to_list()
    assert ours and all("keep=1" in p for p in ours)
    bad = run_benchmark("policy_loco", "--quick", "--out", str(tmp_path / "x"), "--base", "keep=-1")
    assert bad.returncode == 2 and "keep" in bad.stderr
    assert not (tmp_path / "x").exists()
