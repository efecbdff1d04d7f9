"""The headline of the HTML report: the best policy per pruning level, by no-impact and by strict
no-impact, on hand-built no-impact tables (every leader worked out by hand)."""

from __future__ import annotations

import math

import polars as pl

from ctxreplay.reports.leaders import LEADERS_SCHEMA, leans, level_leaders, merged_levels


def _table() -> pl.DataFrame:
    # policy: pruning %, no-impact %, strict no-impact %, via recovery %
    rows = [
        ("noop", 0.0, 100.0, 100.0, 0.0),
        ("fold", 32.0, 95.0, 40.0, 55.0),  # leans on recovery
        ("mask", 35.0, 70.0, 70.0, 0.0),
        ("mask-2", 38.0, 70.0, 70.0, 0.0),  # ties mask on no-impact, prunes more
        ("prune", 51.0, 20.0, 20.0, 0.0),
        ("silent", 90.0, math.nan, math.nan, math.nan),  # no scored verdict: no part
    ]
    return pl.DataFrame(
        {
            "policy": [r[0] for r in rows],
            "n": [40, 40, 40, 40, 40, 0],
            "pruning_pct": [r[1] for r in rows],
            "no_impact_pct": [r[2] for r in rows],
            "strict_no_impact_pct": [r[3] for r in rows],
            "recovery_pct": [r[4] for r in rows],
        }
    )


def test_the_leader_of_each_level_by_no_impact_and_strictly() -> None:
    levels = level_leaders(_table())
    assert levels.columns == list(LEADERS_SCHEMA)
    # levels up to the most a scored policy prunes (51 %, not the unscored 90 %)
    assert levels["level_pct"].to_list() == [0.0, 10.0, 20.0, 30.0, 40.0, 50.0]
    got = levels.select("leader", "leader_leans", "strict_leader").rows()
    assert got == [
        ("noop", False, "noop"),
        ("fold", True, "mask-2"),  # fold's 95 % leans on recovery; strictly mask-2 leads
        ("fold", True, "mask-2"),
        ("fold", True, "mask-2"),
        ("prune", False, "prune"),
        ("prune", False, "prune"),
    ]
    ten = levels.row(1, named=True)
    assert (ten["leader_strict_pct"], ten["leader_recovery_pct"]) == (40.0, 55.0)
    assert (ten["strict_leader_pruning_pct"], ten["strict_leader_strict_pct"]) == (38.0, 70.0)


def test_consecutive_levels_with_the_same_leaders_share_a_row() -> None:
    shown = merged_levels(level_leaders(_table()))
    assert [(r["_levels"], r["leader"], r["strict_leader"]) for r in shown] == [
        ("≥ 0%", "noop", "noop"),
        ("≥ 10…30%", "fold", "mask-2"),
        ("≥ 40…50%", "prune", "prune"),
    ]
    # undefined figures (NaN) at both levels do not keep them apart
    bare = level_leaders(_table().drop("strict_no_impact_pct", "recovery_pct"))
    assert [r["_levels"] for r in merged_levels(bare)] == ["≥ 0%", "≥ 10…30%", "≥ 40…50%"]
    assert bare["strict_leader"].null_count() == bare.height


def test_no_scored_policy_no_levels() -> None:
    table = _table().with_columns(n=pl.lit(0))
    assert level_leaders(table).height == 0
    assert level_leaders(table.clear()).height == 0
    assert merged_levels(level_leaders(table)) == []


def test_leans_on_recovery() -> None:
    assert leans({"recovery_pct": 12.5, "no_impact_pct": 90.0, "strict_no_impact_pct": 80.0})
    assert not leans({"recovery_pct": 0.0, "no_impact_pct": 90.0, "strict_no_impact_pct": 90.0})
    # without the via-recovery column, strict below no-impact says it
    assert leans({"no_impact_pct": 90.0, "strict_no_impact_pct": 80.0})
    assert not leans({"no_impact_pct": 90.0})
