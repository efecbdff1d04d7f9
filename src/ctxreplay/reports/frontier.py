"""The frontier of a sweep (``ctxreplay sweep``): pruning against no-impact, point by point.

For a run whose manifest records a sweep, ``build_frontier`` gives, for each *measure* — the
report's judge, and when the sweep judged dependency labels too, the gold labels strictly
(``gold``) and with recovery (``gold_recovery``, the ``deps`` judge's recovery variant):

- ``points``: one row per sweep point — its family and setting, pruning % (the figures'
  ``editable_pruning`` when the run has it, else ``pruning_rate``; ``pruning_column`` says which),
  no-impact % with its Wilson 95% interval, whether it is on the Pareto set of the measure, and
  the price of recovery (``recovery.py``: strict no-impact, recoveries, extra requests and tokens
  per case);
- ``levels``: for each pruning level L (0, 10, 20, … %), among the points that prune at least
  L %, the one with the best no-impact (the *leader*; ties go to more pruning) against the best
  point of every other family at that level: the difference in no-impact and an exact McNemar
  test on the cases both scored, Holm-adjusted across the comparisons of that level. Beside the
  leader, what its no-impact costs (strict no-impact, recoveries per case, whether it leans on
  recovery) and the *strict leader*, the best by strict no-impact (the pick of a user who will
  not pay for recoveries); each rival's price likewise.

Rendered (``Frontier.displays``), per measure: the points by family; the leaders, one line per
level (a second for the strict leader), a no-impact that leans on recovery marked †; and the
comparisons, a level named on its first line only (it has one line per other family, and
naming it on each repeated ``≥ 0%``).

A point is *dominated* when another point has at least its pruning and at least its no-impact,
one of them strictly greater; the Pareto set is the points nobody dominates. Points without a
scored case have no no-impact and take no part.

``pareto_mask`` and ``level_table`` are pure functions of frames (tested by hand); the
``Frontier`` record also renders itself (``displays``) and draws its plot (``plot``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

from . import stats
from .formatting import (
    Column,
    Display,
    ci,
    count,
    display,
    marked,
    no_impact_cell,
    num,
    pval,
    recovery_columns,
    recovery_lines,
    strict_columns,
)
from .recovery import (
    ASSUMPTION,
    RECOVERY_SCHEMA,
    archive_costs,
    leans_on_recovery,
    row_leans_on_recovery,
    with_recovery_cost,
)
from .tables import SCORED, best_row, discordant, pairs, policy_summary
from .tables import outcomes as outcomes_of

if TYPE_CHECKING:
    from ..runs import Run

#: the verdict columns a frontier reads (``build_frontier``'s ``verdicts``): no loss, no
#: explanation, so a sweep's frontier holds a few numbers per verdict, not its text
VERDICT_READ = ["judge", "policy", "case_id", "label", "recoverable"]

#: Width of a pruning level, in percentage points.
LEVEL_STEP = 10.0

MEASURE_TITLES = {
    "judge": "judge {judge}",
    "gold": "gold labels, strict",
    "gold_recovery": "gold labels, with recovery",
}

POINTS_SCHEMA: dict[str, Any] = {
    "measure": pl.String,
    "judge": pl.String,
    "family": pl.String,
    "policy": pl.String,
    "setting": pl.String,
    "default": pl.Boolean,
    "cases": pl.Int64,
    "unscored": pl.Int64,
    "n": pl.Int64,
    "no_impact": pl.Int64,
    "pruning_pct": pl.Float64,
    "no_impact_pct": pl.Float64,
    "wilson_lo": pl.Float64,
    "wilson_hi": pl.Float64,
    "pareto": pl.Boolean,
    "recovery_pct": pl.Float64,
    "leans_on_recovery": pl.Boolean,  # some scored case passes only through recovery (†)
    **RECOVERY_SCHEMA,
}

LEVELS_SCHEMA: dict[str, Any] = {
    "measure": pl.String,
    "level_pct": pl.Float64,
    "leader": pl.String,
    "leader_family": pl.String,
    "leader_pruning_pct": pl.Float64,
    "leader_no_impact_pct": pl.Float64,
    # what the leader's no-impact costs in recoveries: strict no-impact (no loss and no
    # recovery), recoveries per case, and whether it leans on recovery (marked †)
    "leader_strict_no_impact_pct": pl.Float64,
    "leader_recoveries_per_case": pl.Float64,
    "leader_leans_on_recovery": pl.Boolean,
    # the leader by strict no-impact (ties: more pruning): a user who won't pay for recoveries
    # picks it; null where the points have no strict figure
    "strict_leader": pl.String,
    "strict_leader_family": pl.String,
    "strict_leader_pruning_pct": pl.Float64,
    "strict_leader_no_impact_pct": pl.Float64,
    "strict_leader_strict_no_impact_pct": pl.Float64,
    "strict_leader_recoveries_per_case": pl.Float64,
    "strict_leader_leans_on_recovery": pl.Boolean,
    "family": pl.String,  # the other family; null when no other family reaches the level
    "rival": pl.String,
    "rival_pruning_pct": pl.Float64,
    "rival_no_impact_pct": pl.Float64,
    "rival_strict_no_impact_pct": pl.Float64,
    "rival_recoveries_per_case": pl.Float64,
    "rival_leans_on_recovery": pl.Boolean,
    "diff_pct": pl.Float64,  # leader − rival no-impact, percentage points
    "n_shared": pl.Int64,
    "b": pl.Int64,  # leader no-impact, rival impact
    "c": pl.Int64,  # leader impact, rival no-impact
    "p": pl.Float64,  # exact McNemar
    "p_holm": pl.Float64,  # Holm across the comparisons of the level
}


# --- pure parts -----------------------------------------------------------------------------


def pareto_mask(x: Sequence[float], y: Sequence[float]) -> list[bool]:
    """True for each point no other point dominates (higher is better on both axes).

    Point j dominates point i when x_j >= x_i and y_j >= y_i with one strictly greater; points
    with a NaN coordinate are never on the set and dominate nothing.

    >>> pareto_mask([10, 20, 30, 20], [90, 80, 50, 70])
    [True, True, True, False]
    """
    pts = [
        (float(a), float(b)) if not (stats.is_nan(a) or stats.is_nan(b)) else None
        for a, b in zip(x, y, strict=True)
    ]
    out = []
    for i, p in enumerate(pts):
        if p is None:
            out.append(False)
            continue
        dominated = any(
            q is not None and q[0] >= p[0] and q[1] >= p[1] and (q[0] > p[0] or q[1] > p[1])
            for j, q in enumerate(pts)
            if j != i
        )
        out.append(not dominated)
    return out


def level_table(
    points: pl.DataFrame,
    scored: pl.DataFrame,
    *,
    step: float = LEVEL_STEP,
    alpha: float = 0.05,
    measure: str = "judge",
) -> pl.DataFrame:
    """The leading point per pruning level, against the best point of each other family.

    ``points``: policy, family, pruning_pct, no_impact_pct (NaN: no scored case, left out).
    ``scored``: policy, case_id, ok (bool: no_impact) for the scored verdicts. Levels run
    0, step, 2·step, … up to the highest pruning of a point; at level L the candidates are the
    points pruning at least L %. b = shared cases where the leader is no-impact and the rival
    not, c = the reverse; p = exact McNemar on (b, c); p_holm adjusts across the rivals of the
    level. A level where no other family has a candidate has one row with the rival empty.
    With the points' ``strict_no_impact_pct``, ``recoveries_per_case`` and ``recovery_pct``
    (``POINTS_SCHEMA``), each row also has the leader's and the rival's price and the level's
    strict leader; without them those columns are empty.
    """
    live = points.filter(pl.col("no_impact_pct").is_not_nan() & pl.col("pruning_pct").is_not_nan())
    rows: list[dict[str, Any]] = []
    if live.height == 0:
        return pl.DataFrame(schema=LEVELS_SCHEMA)
    top = float(live["pruning_pct"].max())  # type: ignore[arg-type]
    scored = scored.select("policy", "case_id", "ok")
    k = 0
    while k * step <= top + 1e-9:
        level = k * step
        k += 1
        candidates = live.filter(pl.col("pruning_pct") >= level - 1e-9)
        if candidates.height == 0:
            continue
        leader = best_row(candidates)
        base = {
            "measure": measure,
            "level_pct": level,
            "leader": leader["policy"],
            "leader_family": leader["family"],
            "leader_pruning_pct": leader["pruning_pct"],
            "leader_no_impact_pct": leader["no_impact_pct"],
            **_price("leader", leader),
            **_strict_leader(candidates),
        }
        level_rows = []
        others = candidates.filter(pl.col("family") != leader["family"])
        for family in dict.fromkeys(others["family"].to_list()):
            rival = best_row(others.filter(pl.col("family") == family))
            shared, b, c = discordant(pairs(scored, leader["policy"], rival["policy"]))
            p = stats.mcnemar_exact(b, c).pvalue if shared else math.nan
            level_rows.append(
                {
                    **base,
                    "family": family,
                    "rival": rival["policy"],
                    "rival_pruning_pct": rival["pruning_pct"],
                    "rival_no_impact_pct": rival["no_impact_pct"],
                    **_price("rival", rival),
                    "diff_pct": leader["no_impact_pct"] - rival["no_impact_pct"],
                    "n_shared": shared,
                    "b": b,
                    "c": c,
                    "p": p,
                    "p_holm": math.nan,
                }
            )
        if level_rows:
            adjusted = stats.holm([r["p"] for r in level_rows], alpha).adjusted
            for r, a in zip(level_rows, adjusted, strict=True):
                r["p_holm"] = a
        else:
            level_rows.append(
                {
                    **base,
                    **{key: None for key in LEVELS_SCHEMA if key not in base},
                }
            )
        rows.extend(level_rows)
    return pl.DataFrame(rows, schema=LEVELS_SCHEMA)


def _price(role: str, point: dict[str, Any]) -> dict[str, Any]:
    """A ranked point's strict no-impact, recoveries per case and whether it leans on recovery,
    as the ``role_…`` columns of its level row (null where the points have no price)."""
    return {
        f"{role}_strict_no_impact_pct": point.get("strict_no_impact_pct"),
        f"{role}_recoveries_per_case": point.get("recoveries_per_case"),
        f"{role}_leans_on_recovery": row_leans_on_recovery(point),
    }


def _strict_leader(candidates: pl.DataFrame) -> dict[str, Any]:
    """The ``strict_leader…`` columns of a level: its best point by strict no-impact (ties: more
    pruning, then the label), none where the points have no strict figure."""
    if "strict_no_impact_pct" not in candidates.columns:
        return {}
    strict = candidates.filter(pl.col("strict_no_impact_pct").is_not_nan())
    if strict.height == 0:
        return {}
    best = best_row(strict, "strict_no_impact_pct")
    return {
        "strict_leader": best["policy"],
        "strict_leader_family": best["family"],
        "strict_leader_pruning_pct": best["pruning_pct"],
        "strict_leader_no_impact_pct": best["no_impact_pct"],
        **_price("strict_leader", best),
    }


# --- from a run -----------------------------------------------------------------------------


def pruning_column(figures: pl.DataFrame) -> str:
    """``editable_pruning`` when the figures have it for every case, else ``pruning_rate`` (a
    run written before the column existed, or partly so)."""
    if (
        "editable_pruning" in figures.columns
        and figures.height
        and figures["editable_pruning"].null_count() == 0
    ):
        return "editable_pruning"
    return "pruning_rate"


def _setting(point: dict[str, Any]) -> str:
    if point.get("source") == "policy":
        return "--policy"
    values = point.get("values") or {}
    return ", ".join(f"{k}={v}" for k, v in values.items()) if values else "defaults"


def point_rows(
    outcomes: pl.DataFrame,
    points: Sequence[dict[str, Any]],
    column: str,
    *,
    measure: str,
    judge: str | None,
    alpha: float = 0.05,
) -> pl.DataFrame:
    """One row per sweep point (``POINTS_SCHEMA``) from per-case outcomes of one measure, with
    the Pareto set marked."""
    rows = []
    for point in points:
        frame = outcomes.filter(pl.col("policy") == point["label"])
        if frame.height == 0:
            continue
        summary = policy_summary(frame, alpha, pruning=column)
        rows.append(
            {
                "measure": measure,
                "judge": judge,
                "family": point["family"],
                "policy": point["label"],
                "setting": _setting(point),
                "default": bool(point.get("default")),
                "pareto": False,
                **{key: summary[key] for key in POINTS_SCHEMA if key in summary},
            }
        )
    frame = pl.DataFrame(rows, schema=POINTS_SCHEMA)
    if frame.height:
        mask = pareto_mask(frame["pruning_pct"].to_list(), frame["no_impact_pct"].to_list())
        frame = frame.with_columns(pl.Series("pareto", mask, dtype=pl.Boolean))
    families = list(dict.fromkeys(p["family"] for p in points))
    return _family_order(frame, families).select(list(POINTS_SCHEMA))


def _family_order(frame: pl.DataFrame, families: Sequence[str]) -> pl.DataFrame:
    order = {f: i for i, f in enumerate(families)}
    return (
        frame.with_columns(pl.col("family").replace_strict(order, default=len(order)).alias("_f"))
        .sort(["_f", "pruning_pct", "policy"])
        .drop("_f")
    )


@dataclass(frozen=True)
class Frontier:
    """The frontier section of a sweep's report."""

    points: pl.DataFrame
    levels: pl.DataFrame
    measures: dict[str, str]  # measure → the judge label behind it
    pruning_column: str
    sweep: dict[str, Any]
    step: float = LEVEL_STEP
    notes: tuple[str, ...] = field(default_factory=tuple)

    def tables(self) -> dict[str, pl.DataFrame]:
        return {"frontier": self.points, "frontier_levels": self.levels}

    @property
    def pruning_basis(self) -> str:
        if self.pruning_column == "editable_pruning":
            return (
                "pruning = editable pruning (figures column editable_pruning: tokens removed of "
                "those a policy may touch, mean over cases)"
            )
        return (
            "pruning = pruning of the whole prefix (figures column pruning_rate, mean over cases); "
            "this run's figures have no editable_pruning column"
        )

    def meta(self) -> dict[str, Any]:
        return {
            "families": self.sweep.get("families"),
            "grids": [g.get("text") for g in self.sweep.get("grids", [])],
            "policies": self.sweep.get("policies"),
            "points": len(self.sweep.get("points", [])),
            "labels": self.sweep.get("labels"),
            "measures": self.measures,
            "pruning_column": self.pruning_column,
            "pruning_basis": self.pruning_basis,
            "level_step_pct": self.step,
            "recovery_price": ASSUMPTION,
        }

    def title(self, measure: str) -> str:
        return MEASURE_TITLES.get(measure, measure).format(judge=self.measures.get(measure, "?"))

    def plot(self, path: str | os.PathLike[str] | None = None) -> bytes:
        from .plot import frontier_plot

        return frontier_plot(
            self.points,
            path,
            titles={m: self.title(m) for m in self.measures},
            x_label=(
                "editable pruning, %" if self.pruning_column == "editable_pruning" else "pruning, %"
            )
            + " (mean over cases)",
        )

    def displays(self) -> list[Display]:
        """Per measure: its points by family, the leaders per pruning level (by no-impact and
        by strict no-impact, one row per level), and each level's leader against the best
        point of every other family (the level named on its first row only)."""
        out = []
        for measure in self.measures:
            pts = self.points.filter(pl.col("measure") == measure)
            lv = self.levels.filter(pl.col("measure") == measure)
            out += [
                self._points_display(measure, pts),
                self._leaders_display(measure, pts, lv),
                self._rivals_display(measure, pts, lv),
            ]
        return out

    def _points_display(self, measure: str, pts: pl.DataFrame) -> Display:
        columns = [
            ("family", lambda r: r["family"], False),
            (
                "point",
                lambda r: r["policy"] if r["setting"] == "--policy" else r["setting"],
                False,
            ),
            ("n", lambda r: count(r["n"]), True),
            ("prune %", lambda r: num(r["pruning_pct"]), True),
            ("no-impact %", no_impact_cell, True),
            *strict_columns(pts),
            ("Wilson 95% CI", lambda r: ci(r["wilson_lo"], r["wilson_hi"]), True),
            ("Pareto", lambda r: "★" if r["pareto"] else "", False),
            *recovery_columns(pts),
        ]
        footer = [
            self.pruning_basis,
            *(
                recovery_lines(pts)
                or ("No point leans on recovery: strict no-impact = no-impact.",)
            ),
        ]
        points = display(
            f"frontier_{measure}",
            f"Frontier ({self.title(measure)}): points by family",
            "Each sweep point, by family, sorted by pruning; no-impact with its Wilson 95% "
            "CI over scored cases. ★ = on the Pareto set over all points (no other point "
            "has at least its pruning and its no-impact, one strictly more).",
            columns,
            pts.to_dicts(),
            footer,
            identity=2,
        )
        return marked(points)

    def _leaders_display(self, measure: str, pts: pl.DataFrame, lv: pl.DataFrame) -> Display:
        """One line per level: its leader by no-impact; where some point leans on recovery, a
        second line with its leader by strict no-impact (the pick of a user who will not pay
        for recoveries), each with its no-impact (marked †), strict no-impact and recoveries."""
        strict = leans_on_recovery(pts)
        levels = collapse_levels(
            lv.unique(["level_pct"], keep="first", maintain_order=True), LEADER
        )
        rows = []
        for r in levels:
            for role, by in (("leader", "no-impact"), ("strict_leader", "strict no-impact")):
                if role == "strict_leader" and (not strict or r["strict_leader"] is None):
                    continue
                rows.append(
                    {
                        "_levels": r["_levels"] if role == "leader" else "",
                        "by": by,
                        "policy": r[role],
                        "pruning_pct": r[f"{role}_pruning_pct"],
                        "no_impact_pct": r[f"{role}_no_impact_pct"],
                        "strict_no_impact_pct": r[f"{role}_strict_no_impact_pct"],
                        "recoveries_per_case": r[f"{role}_recoveries_per_case"],
                        "leans": bool(r[f"{role}_leans_on_recovery"]),
                    }
                )
        columns: list[Column] = [
            ("level", lambda r: r["_levels"], False),
            *([("best by", lambda r: r["by"], False)] if strict else []),
            ("leader", lambda r: r["policy"], False),
            ("prune %", lambda r: num(r["pruning_pct"]), True),
            ("no-impact %", lambda r: no_impact_cell(r, leans=r["leans"]), True),
            *strict_columns(pts),
        ]
        leaders = display(
            f"frontier_leaders_{measure}",
            f"Frontier ({self.title(measure)}): the leading point per pruning level",
            f"Level L: among the points that prune at least L % (steps of {self.step:g}), the "
            "leader has the best no-impact (ties: more pruning)"
            + (
                "; under it, the leader by strict no-impact (no loss and no recovery), the pick "
                "of a user who will not pay for recoveries"
                if strict
                else ""
            )
            + ". Consecutive levels with the same leaders share one line.",
            columns,
            rows,
            identity=2 if strict else 1,
            whole=("leader",),
        )
        return marked(leaders, ("No point leans on recovery: strict no-impact = no-impact.",))

    def _rivals_display(self, measure: str, pts: pl.DataFrame, lv: pl.DataFrame) -> Display:
        strict = leans_on_recovery(pts)
        columns: list[Column] = [
            ("level", lambda r: r["_levels"] if r["_first"] else "", False),
            ("vs family", lambda r: r["family"], False),
            ("its best point", lambda r: r["rival"], False),
            ("prune %", lambda r: num(r["rival_pruning_pct"]), True),
            (
                "no-impact %",
                lambda r: no_impact_cell(
                    r, "rival_no_impact_pct", leans=bool(r["rival_leans_on_recovery"])
                ),
                True,
            ),
            *(
                [("strict no-impact %", lambda r: num(r["rival_strict_no_impact_pct"]), True)]
                if strict
                else []
            ),
            ("Δ pp", lambda r: num(r["diff_pct"]), True),
            ("n shared", lambda r: count(r["n_shared"]), True),
            ("b", lambda r: count(r["b"]), True),
            ("c", lambda r: count(r["c"]), True),
            ("p exact", lambda r: pval(r["p"]), True),
            ("p (Holm)", lambda r: pval(r["p_holm"]), True),
        ]
        rows = collapse_levels(lv.filter(pl.col("family").is_not_null()))  # levels with rivals
        rivals = display(
            f"frontier_levels_{measure}",
            f"Frontier ({self.title(measure)}): each level's leader against the other families",
            "The leader of each level (the table above) compared with the best point of every "
            "other family at that level on the cases both scored. Δ = leader − rival no-impact "
            "in percentage points; b = leader no-impact where the rival lost, c = the reverse; "
            "exact McNemar, Holm across the comparisons of the level. Consecutive levels with "
            "the same comparisons share one line; a level is named on its first line; a level "
            "no other family reaches has no line.",
            columns,
            rows,
            identity=2,
            whole=("its best point",),
        )
        return marked(rivals)


#: the columns of a level row that the leaders table shows: levels whose leaders are the same
#: share one line there
LEADER = tuple(k for k in LEVELS_SCHEMA if k.startswith(("leader", "strict_leader")))


def collapse_levels(
    levels: pl.DataFrame, columns: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """The level rows for display, consecutive levels whose comparisons are the same merged into
    one (``_levels``: ``≥ 10%`` or ``≥ 10…40%``; ``_first``: the first row of its levels, the one
    that names them — a level's rows are one per other family, and naming the level on each
    repeated it). ``columns``: the columns compared (default: all but ``level_pct``)."""
    groups: list[tuple[list[float], list[dict[str, Any]]]] = []
    for row in levels.to_dicts():
        if groups and groups[-1][0][-1] == row["level_pct"]:
            groups[-1][1].append(row)
        else:
            groups.append(([row["level_pct"]], [row]))

    def same(v: Any) -> Any:  # NaN (no p, no strict figure) equals NaN here
        return None if isinstance(v, float) and math.isnan(v) else v

    def signature(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        keys = columns if columns is not None else [k for k in rows[0] if k != "level_pct"]
        return [tuple(same(r.get(k)) for k in keys) for r in rows]

    merged: list[tuple[list[float], list[dict[str, Any]]]] = []
    for lv, rows in groups:
        if merged and signature(merged[-1][1]) == signature(rows):
            merged[-1][0].append(lv[0])
        else:
            merged.append((list(lv), rows))
    out: list[dict[str, Any]] = []
    for lv, rows in merged:
        shown = f"≥ {lv[0]:g}%" if len(lv) == 1 else f"≥ {lv[0]:g}…{lv[-1]:g}%"
        out.extend({**r, "_levels": shown, "_first": k == 0} for k, r in enumerate(rows))
    return out


def build_frontier(
    run: Run,
    sweep: dict[str, Any],
    outcomes: pl.DataFrame,
    judge: str | None,
    verdicts: pl.DataFrame,
    *,
    costs: pl.DataFrame | None = None,
    figures: pl.DataFrame | None = None,
    alpha: float = 0.05,
    step: float = LEVEL_STEP,
) -> Frontier:
    """The frontier of a sweep run. ``outcomes``: the report's per-case rows for ``judge``
    (``tables.outcomes`` with ``recovery.with_recovery_cost``); ``verdicts``: every verdict of
    the run, at least its ``VERDICT_READ`` columns (for the gold measures); ``costs`` and
    ``figures``: the run's ``recovery.archive_costs`` and figures when already read (else read
    here, for the gold measures)."""
    points = list(sweep.get("points") or [])
    column = pruning_column(outcomes.filter(pl.col("policy").is_in([p["label"] for p in points])))
    measures: dict[str, str] = {}
    sources: dict[str, pl.DataFrame] = {}
    if judge is not None:
        measures["judge"] = judge
        sources["judge"] = outcomes
    present = set(verdicts["judge"].to_list()) if verdicts.height else set()
    gold = sweep.get("gold") or {}
    notes = []
    for measure, variant in (("gold", "strict"), ("gold_recovery", "recovery")):
        label = gold.get(variant)
        if not label:
            continue
        if label not in present:
            notes.append(f"no verdicts from {label} ({measure}) in this run")
            continue
        measures[measure] = label
        if costs is None:
            costs = archive_costs(run)
        if figures is None:
            figures = run.table("figures")
        sources[measure] = with_recovery_cost(
            outcomes_of(run, label, verdicts, figures=figures), costs
        )
    point_frames, level_frames = [], []
    for measure, rows in sources.items():
        pts = point_rows(
            rows, points, column, measure=measure, judge=measures[measure], alpha=alpha
        )
        point_frames.append(pts)
        scored = rows.filter(SCORED).select(
            "policy", "case_id", (pl.col("label") == "no_impact").alias("ok")
        )
        level_frames.append(level_table(pts, scored, step=step, alpha=alpha, measure=measure))
    return Frontier(
        points=pl.concat(point_frames) if point_frames else pl.DataFrame(schema=POINTS_SCHEMA),
        levels=pl.concat(level_frames) if level_frames else pl.DataFrame(schema=LEVELS_SCHEMA),
        measures=measures,
        pruning_column=column,
        sweep=sweep,
        step=step,
        notes=tuple(notes),
    )


def frontier_displays(report: Any) -> list[Display]:
    """The frontier section of a report (none when the run is not a sweep)."""
    frontier = getattr(report, "frontier", None)
    return frontier.displays() if frontier is not None else []
