"""The price of recovery: what a no-impact that leans on recovering archived payloads costs.

A verdict's ``recoverable`` counts the dependencies the view holds only in an archive whose
pointer it shows (a fold, an agent note). The view is judged no-impact, but the agent must first
recover them. Per (policy, case), read from the run's ``views`` (archives and whether their pointer
is visible) and ``decisions`` (each archived object's tokens) tables:

- **recoveries** = recoverable dependencies, at most one per archive whose pointer the view shows
  (one recovery returns a whole archived object; a case with recoverable dependencies but no
  visible archive keeps its count);
- **extra requests** = recoveries: each recovery is one more request to the model;
- **payload tokens** = recoveries × the mean archived payload (the archived object's tokens) of
  the case's pointer-visible archives — which archive holds which dependency is not recorded, so
  the mean stands for it;
- **request tokens** = recoveries × the view's tokens: the extra request re-sends the prefix as
  the view has it (no caching assumed);
- **recovery tokens** = payload + request tokens.

Per policy, each is a mean over the scored cases (cases without recovery count as 0), and
**strict no-impact** counts the verdicts with no loss *and* no recovery (Wilson 95% interval).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import polars as pl

from . import stats

#: What the recovery price assumes, for the report's notes.
ASSUMPTION = (
    "Recovery price: one recovery per recoverable dependency, at most one per archive whose "
    "pointer the view shows; each recovery is one extra request that re-sends the view (its "
    "tokens counted once per recovery, no caching) and brings back the archived payload "
    "(the mean archived-object tokens of the case's visible archives). Per-case figures are "
    "means over scored cases. Strict no-impact = no loss and no recovery."
)

#: Columns appended to the no-impact table (and the frontier points).
RECOVERY_SCHEMA: dict[str, Any] = {
    "strict_no_impact": pl.Int64,
    "strict_no_impact_pct": pl.Float64,
    "strict_lo": pl.Float64,
    "strict_hi": pl.Float64,
    "recoveries_per_case": pl.Float64,
    "extra_requests_per_case": pl.Float64,
    "recovery_payload_tokens_per_case": pl.Float64,
    "recovery_request_tokens_per_case": pl.Float64,
    "recovery_tokens_per_case": pl.Float64,
}

ARCHIVE_COSTS_SCHEMA: dict[str, Any] = {
    "policy": pl.String,
    "case_id": pl.String,
    "visible_archives": pl.Int64,
    "visible_payload_tokens": pl.Int64,
}


def archive_costs(run: Any, policies: Sequence[str] | None = None) -> pl.DataFrame:
    """Per (policy, case) with archives: how many have a visible pointer, and their tokens.

    ``run``: a ``runs.Run`` (or its path); ``policies``: these policy labels only
    (default: every policy of the run). Reads only the needed columns.
    """
    from ..runs import Run, slug

    r = run if isinstance(run, Run) else Run(run)
    frames = []
    for label in r.policies if policies is None else policies:
        views = r.path / "views" / slug(label)
        decisions = r.path / "decisions" / slug(label)
        if not views.exists() or not decisions.exists():
            continue
        archived = (
            pl.scan_parquet(views / "*.parquet")
            .select("policy", "case_id", "archives")
            .filter(pl.col("archives").list.len() > 0)
            .explode("archives")
            .select(
                "policy",
                "case_id",
                pl.col("archives").struct.field("object_id").alias("object_id"),
                pl.col("archives").struct.field("pointer_visible").alias("visible"),
            )
            .filter(pl.col("visible").fill_null(False))
        )
        tokens = (
            pl.scan_parquet(decisions / "*.parquet")
            .filter(pl.col("ref").is_not_null())
            .select("policy", "case_id", "object_id", "tokens_before")
        )
        frames.append(
            archived.join(tokens, on=["policy", "case_id", "object_id"], how="left")
            .group_by("policy", "case_id")
            .agg(
                pl.len().cast(pl.Int64).alias("visible_archives"),
                pl.col("tokens_before")
                .fill_null(0)
                .sum()
                .cast(pl.Int64)
                .alias("visible_payload_tokens"),
            )
            .collect()
        )
    if not frames:
        return pl.DataFrame(schema=ARCHIVE_COSTS_SCHEMA)
    return pl.concat(frames, how="vertical_relaxed")


def with_recovery_cost(outcomes: pl.DataFrame, costs: pl.DataFrame) -> pl.DataFrame:
    """``outcomes`` (one row per policy and case, with ``recoverable`` and ``view_tokens``) plus
    ``recoveries``, ``recovery_payload_tokens`` and ``recovery_request_tokens`` per case."""
    frame = outcomes.drop(
        [c for c in ("visible_archives", "visible_payload_tokens") if c in outcomes.columns]
    ).join(costs, on=["policy", "case_id"], how="left")
    recoverable = pl.col("recoverable").fill_null(0).cast(pl.Int64)
    visible = pl.col("visible_archives").fill_null(0)
    recoveries = (
        pl.when(visible > 0)
        .then(pl.min_horizontal(recoverable, visible))
        .otherwise(recoverable)
        .alias("recoveries")
    )
    frame = frame.with_columns(recoveries)
    mean_payload = pl.col("visible_payload_tokens").fill_null(0) / visible
    return frame.with_columns(
        pl.when(pl.col("recoveries") == 0)
        .then(0.0)
        .when(visible > 0)
        .then(pl.col("recoveries") * mean_payload)
        .otherwise(None)
        .alias("recovery_payload_tokens"),
        (pl.col("recoveries") * pl.col("view_tokens").fill_null(0))
        .cast(pl.Float64)
        .alias("recovery_request_tokens"),
    )


def recovery_price(scored: pl.DataFrame, alpha: float = 0.05) -> dict[str, Any]:
    """The ``RECOVERY_SCHEMA`` columns for one policy's scored rows (label no_impact | impact).

    Rows without the per-case cost columns (``with_recovery_cost``) still give strict no-impact
    and recoveries (uncapped); the token columns are then undefined.
    """
    n = scored.height
    recoverable = _recoverable(scored)
    ok = scored["label"] == "no_impact"
    strict = int((ok & (recoverable == 0)).sum()) if n else 0
    w = stats.wilson(strict, n, alpha)
    recoveries = scored["recoveries"] if "recoveries" in scored.columns else recoverable
    per_case = float(recoveries.cast(pl.Float64).mean()) if n else math.nan  # type: ignore[arg-type]
    payload = stats.mean_or_nan(scored.get_column("recovery_payload_tokens", default=None))
    request = stats.mean_or_nan(scored.get_column("recovery_request_tokens", default=None))
    return {
        "strict_no_impact": strict,
        "strict_no_impact_pct": stats.pct(w.estimate),
        "strict_lo": stats.pct(w.low),
        "strict_hi": stats.pct(w.high),
        "recoveries_per_case": per_case,
        "extra_requests_per_case": per_case,
        "recovery_payload_tokens_per_case": payload,
        "recovery_request_tokens_per_case": request,
        "recovery_tokens_per_case": payload + request,
    }


def _recoverable(scored: pl.DataFrame) -> pl.Series:
    if "recoverable" in scored.columns:
        return scored["recoverable"].fill_null(0)
    return pl.Series([0] * scored.height)


def via_recovery_pct(scored: pl.DataFrame) -> float:
    """% of one policy's scored rows whose no-impact holds only because a folded payload can be
    recovered through its visible pointer (``recoverable`` > 0); NaN without a scored row."""
    n = scored.height
    if not n:
        return math.nan
    leaning = int(((scored["label"] == "no_impact") & (_recoverable(scored) > 0)).sum())
    return stats.pct(leaning / n)


def row_leans_on_recovery(row: dict[str, Any]) -> bool:
    """Whether one ranked row (a policy of the no-impact table, a sweep point, a level's leader
    read through its columns) passes in part only through recovery: some scored case is
    no-impact only because a folded payload can be recovered (``recovery_pct`` > 0), or, where
    that column is absent, its strict no-impact is below its no-impact."""
    via = _finite(row.get("recovery_pct"))
    if via is not None:
        return via > 0
    strict, plain = _finite(row.get("strict_no_impact_pct")), _finite(row.get("no_impact_pct"))
    return strict is not None and plain is not None and strict < plain


def _finite(x: Any) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def leans_on_recovery(table: pl.DataFrame) -> bool:
    """Whether any row of a table with ``recoveries_per_case`` needs a recovery."""
    if "recoveries_per_case" not in table.columns or table.height == 0:
        return False
    return bool((table["recoveries_per_case"].fill_nan(0.0).fill_null(0.0) > 0).any())


def add_costs(run: Any, outcomes: pl.DataFrame) -> pl.DataFrame:
    """``with_recovery_cost`` with the run's own archive costs."""
    return with_recovery_cost(outcomes, archive_costs(run))


__all__ = [
    "ARCHIVE_COSTS_SCHEMA",
    "ASSUMPTION",
    "RECOVERY_SCHEMA",
    "add_costs",
    "archive_costs",
    "leans_on_recovery",
    "recovery_price",
    "row_leans_on_recovery",
    "via_recovery_pct",
    "with_recovery_cost",
]
