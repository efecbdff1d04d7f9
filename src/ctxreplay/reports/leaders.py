"""The report's headline: the best policy at each pruning level, by no-impact and strictly.

A reader choosing a policy asks "if I must remove at least L % of the prefix, which policy loses
least?". For each level L (0, 10, 20, … % up to the most a scored policy prunes), among the
scored policies of the no-impact table that prune at least L %:

- the *leader* has the highest no-impact (ties: more pruning, then the label, as
  ``tables.best_row`` and the frontier's levels decide);
- the *strict leader* has the highest strict no-impact (no loss *and* no recovery,
  ``recovery.py``), the same ties.

A leader *leans on recovery* when some of its no-impact verdicts hold only because a folded
payload can be recovered through its visible pointer (``recovery_pct`` > 0): the agent would have
to spend extra requests to get it back, so its strict figure, below its no-impact, is shown
beside it wherever it is ranked. ``level_leaders`` and ``merged_levels`` are pure functions of
frames.
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from .frontier import LEVEL_STEP

LEADERS_SCHEMA: dict[str, Any] = {
    "level_pct": pl.Float64,
    "leader": pl.String,
    "leader_pruning_pct": pl.Float64,
    "leader_no_impact_pct": pl.Float64,
    "leader_strict_pct": pl.Float64,
    "leader_recovery_pct": pl.Float64,  # % of scored cases no-impact only through recovery
    "leader_leans": pl.Boolean,
    "strict_leader": pl.String,
    "strict_leader_pruning_pct": pl.Float64,
    "strict_leader_strict_pct": pl.Float64,
    "strict_leader_no_impact_pct": pl.Float64,
    "strict_leader_recovery_pct": pl.Float64,
    "strict_leader_leans": pl.Boolean,
}


def _number(x: Any) -> float:
    return float(x) if x is not None and not (isinstance(x, float) and math.isnan(x)) else math.nan


def _best(frame: pl.DataFrame, by: str) -> dict[str, Any]:
    return frame.sort([by, "pruning_pct", "policy"], descending=[True, True, False]).row(
        0, named=True
    )


def level_leaders(
    table: pl.DataFrame, *, step: float = LEVEL_STEP, pruning: str = "pruning_pct"
) -> pl.DataFrame:
    """One row per pruning level (``LEADERS_SCHEMA``) of a no-impact table
    (``tables.no_impact_table``): the leader by no-impact and the leader by strict no-impact
    among the scored policies that prune at least the level (``pruning``: the table's column
    of pruning %). Without the strict column (a table made without the recovery price) the
    strict leader is empty.

    >>> t = pl.DataFrame({"policy": ["a", "b"], "n": [9, 9], "pruning_pct": [5.0, 25.0],
    ...                   "no_impact_pct": [90.0, 80.0], "strict_no_impact_pct": [60.0, 80.0],
    ...                   "recovery_pct": [30.0, 0.0]})
    >>> level_leaders(t).select("level_pct", "leader", "leader_leans", "strict_leader").rows()
    [(0.0, 'a', True, 'b'), (10.0, 'b', False, 'b'), (20.0, 'b', False, 'b')]
    """
    if table.height == 0:
        return pl.DataFrame(schema=LEADERS_SCHEMA)
    live = table.filter(
        (pl.col("n") > 0) & pl.col("no_impact_pct").is_not_nan() & pl.col(pruning).is_not_nan()
    ).with_columns(pl.col(pruning).alias("pruning_pct"))
    if live.height == 0:
        return pl.DataFrame(schema=LEADERS_SCHEMA)
    has_strict = "strict_no_impact_pct" in live.columns
    top = float(live["pruning_pct"].max())  # type: ignore[arg-type]
    rows = []
    k = 0
    while k * step <= top + 1e-9:
        level = k * step
        k += 1
        candidates = live.filter(pl.col("pruning_pct") >= level - 1e-9)
        lead = _best(candidates, "no_impact_pct")
        row: dict[str, Any] = {
            "level_pct": level,
            "leader": lead["policy"],
            "leader_pruning_pct": lead["pruning_pct"],
            "leader_no_impact_pct": lead["no_impact_pct"],
            "leader_strict_pct": _number(lead.get("strict_no_impact_pct")),
            "leader_recovery_pct": _number(lead.get("recovery_pct")),
            "leader_leans": leans(lead),
        }
        strict = (
            candidates.filter(pl.col("strict_no_impact_pct").is_not_nan()) if has_strict else None
        )
        if strict is not None and strict.height:
            best = _best(strict, "strict_no_impact_pct")
            row.update(
                strict_leader=best["policy"],
                strict_leader_pruning_pct=best["pruning_pct"],
                strict_leader_strict_pct=best["strict_no_impact_pct"],
                strict_leader_no_impact_pct=best["no_impact_pct"],
                strict_leader_recovery_pct=_number(best.get("recovery_pct")),
                strict_leader_leans=leans(best),
            )
        rows.append(row)
    return pl.DataFrame(rows, schema=LEADERS_SCHEMA)


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Equal rows, a NaN equal to a NaN (a figure undefined at both levels)."""

    def nan(x: Any) -> bool:
        return isinstance(x, float) and math.isnan(x)

    return a.keys() == b.keys() and all(a[k] == b[k] or (nan(a[k]) and nan(b[k])) for k in a)


def merged_levels(levels: pl.DataFrame) -> list[dict[str, Any]]:
    """The rows of ``level_leaders`` for display: consecutive levels with the same leaders (and
    figures) merged into one, ``_levels`` saying which (``≥ 10%`` or ``≥ 10…40%``).

    >>> t = pl.DataFrame({"level_pct": [0.0, 10.0, 20.0], "leader": ["a", "b", "b"]})
    >>> [(r["_levels"], r["leader"]) for r in merged_levels(t)]
    [('≥ 0%', 'a'), ('≥ 10…20%', 'b')]
    """

    groups: list[tuple[list[float], dict[str, Any]]] = []
    for row in levels.to_dicts():
        level = row.pop("level_pct")
        if groups and _same(groups[-1][1], row):
            groups[-1][0].append(level)
        else:
            groups.append(([level], row))
    return [
        {
            **row,
            "level_pct": lv[0],
            "_levels": f"≥ {lv[0]:g}%" if len(lv) == 1 else f"≥ {lv[0]:g}…{lv[-1]:g}%",
        }
        for lv, row in groups
    ]


def leans(row: dict[str, Any]) -> bool:
    """Whether a no-impact table row's no-impact leans on recovery: some of its scored cases are
    no-impact only through recovering a folded payload (``recovery_pct`` > 0), or, where that
    column is absent, its strict no-impact is below its no-impact."""
    via = _number(row.get("recovery_pct"))
    if not math.isnan(via):
        return via > 0
    strict, plain = _number(row.get("strict_no_impact_pct")), _number(row.get("no_impact_pct"))
    return not (math.isnan(strict) or math.isnan(plain)) and strict < plain


__all__ = ["LEADERS_SCHEMA", "leans", "level_leaders", "merged_levels"]
