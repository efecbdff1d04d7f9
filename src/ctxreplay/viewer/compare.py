"""Two policies on the same cases (the discordant ones first, with the report's paired test),
and the frontier of a run's policies, from the grid's rows."""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from ..reports import stats
from ..reports.frontier import pareto_mask
from ..reports.tables import paired_row
from .grid import Grid, ViewerError, category_counts

SCORED = ("no_impact", "impact")


def _clean(v: Any) -> Any:
    return None if isinstance(v, float) and math.isnan(v) else v


def ab(grid: Grid, a: str, b: str) -> dict[str, Any]:
    """``a`` against ``b`` on the cases both scored: the discordant cases (one lost what the
    other kept) first, then the rest, and McNemar's test with the paired difference as the
    report computes them (``reports.tables.paired_row``)."""
    for p in (a, b):
        if p not in grid.policies:
            raise ViewerError(
                f"policy {p!r} is not in this run; it has: {', '.join(grid.policies)}"
            )
    cols = ["case_id", "session_id", "label", "strict", "editable", "losses", "categories"]
    left = grid.frame.filter(pl.col("policy") == a).select(cols)
    right = grid.frame.filter(pl.col("policy") == b).select(cols)
    both = left.join(right, on=["case_id", "session_id"], suffix="_b").filter(
        pl.col("label").is_in(SCORED) & pl.col("label_b").is_in(SCORED)
    )
    scored = pl.concat([
        both.select("case_id", "session_id", pl.lit(a).alias("policy"),
                    (pl.col("label") == "no_impact").alias("ok")),
        both.select("case_id", "session_id", pl.lit(b).alias("policy"),
                    (pl.col("label_b") == "no_impact").alias("ok")),
    ])  # fmt: skip
    test = paired_row(scored, a, b) if both.height else None
    order = both.with_columns(
        discordant=pl.col("label") != pl.col("label_b"),
    ).sort(["discordant", "case_id"], descending=[True, False])
    rows = [
        {
            "case_id": r["case_id"], "session_id": r["session_id"], "discordant": r["discordant"],
            "a": {"label": r["label"], "strict": r["strict"], "editable": _clean(r["editable"]),
                  "categories": category_counts(r["categories"])},
            "b": {"label": r["label_b"], "strict": r["strict_b"],
                  "editable": _clean(r["editable_b"]), "categories": category_counts(r["categories_b"])},
        }
        for r in order.iter_rows(named=True)
    ]  # fmt: skip
    return {
        "a": a,
        "b": b,
        "judge": grid.judge,
        "rows": rows,
        "test": {k: _clean(v) for k, v in test.items()} if test else None,
    }


def frontier(grid: Grid) -> dict[str, Any]:
    """Each policy as a point: mean editable pruning against strict no-impact (Wilson 95%),
    and whether no other policy beats it on both."""
    points: list[dict[str, Any]] = []
    for policy in grid.policies:
        rows = grid.frame.filter(pl.col("policy") == policy)
        scored = rows.filter(pl.col("label").is_in(SCORED))
        k = int(scored["strict"].sum()) if scored.height else 0
        w = stats.wilson(k, scored.height)
        points.append({
            "policy": policy,
            "family": rows["policy_name"][0] if rows.height else policy,
            "pruning": stats.pct(stats.mean_or_nan(rows["editable"])),
            "strict": stats.pct(w.estimate), "lo": stats.pct(w.low), "hi": stats.pct(w.high),
            "n": scored.height,
        })  # fmt: skip
    on = pareto_mask([float(p["pruning"]) for p in points], [float(p["strict"]) for p in points])
    return {
        "judge": grid.judge,
        "points": [
            {**{k: _clean(v) for k, v in p.items()}, "pareto": flag}
            for p, flag in zip(points, on, strict=True)
        ],
    }
