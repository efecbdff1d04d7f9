"""The case grid: one row per (case, policy) of a run, built once from the run's tables, then
filtered, sorted and paged per request (the page never holds every row)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from ..errors import CtxreplayError
from ..reports.tables import order_policies, resolve_judge
from ..runs import Run, read_verdicts
from ..schema import CATEGORIES

#: rows a page holds unless the URL asks for another size, and the most it may ask for
PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
LABELS = ("no_impact", "impact", "unscored", "planner_failed", "not_judged")

#: the columns of a grid row, in the order the page shows them, with their headings
COLUMNS: dict[str, str] = {
    "case_id": "case",
    "session_id": "session",
    "cut": "cut",
    "corpus": "corpus",
    "workload": "workload",
    "policy": "policy",
    "pruning": "pruning",
    "editable": "editable pruning",
    "label": "label",
    "strict": "strict no-impact",
    "losses": "losses",
    "recoveries": "recoveries",
    "usd": "cost (USD)",
    "usd_saved": "saved (USD)",
}


class ViewerError(CtxreplayError, ValueError):
    """A request the viewer cannot answer: names what is wrong."""


def judge_column(judge: str) -> str:
    return f"judge:{judge}"


@dataclass(frozen=True)
class Grid:
    """Every (case, policy) row of a run, with one label column per judge."""

    frame: pl.DataFrame
    policies: list[str]
    judges: list[str]
    judge: str | None  # whose losses, strict no-impact and recoveries the grid shows
    corpora: list[str] = field(default_factory=list)

    @property
    def columns(self) -> dict[str, str]:
        return {**COLUMNS, **{judge_column(j): j for j in self.judges}}


def build_grid(run: Run, judge: str | None = None, policies: Sequence[str] | None = None) -> Grid:
    """The grid of a run (of only ``policies`` when given): figures, the cases' corpus and
    workload, and each judge's label."""
    labels = [run.resolve_policy(p) for p in policies] if policies else None
    figures = (run.table("figures") if labels is None else pl.concat(
        [run.table("figures", p) for p in labels], how="vertical_relaxed"
    )).select(
        "case_id", "session_id", "cut", "policy", "policy_name",
        pl.col("pruning_rate").alias("pruning"), pl.col("editable_pruning").alias("editable"),
        "planner_failure",
        pl.col("usd_policy_high").alias("usd"),
        (pl.col("usd_baseline_high") - pl.col("usd_policy_high")).alias("usd_saved"),
    )  # fmt: skip
    sessions = run.corpus.sessions().select(
        "session_id", pl.col("source_format").alias("corpus"), "workload"
    )
    frame = figures.join(sessions, on="session_id", how="left")
    verdicts = read_verdicts(
        run.path,
        columns=["judge", "judge_name", "policy", "case_id", "label", "losses", "recoverable"],
    ).unique(["judge", "policy", "case_id"], keep="first", maintain_order=True)
    chosen = resolve_judge(verdicts, judge)
    judges = sorted(set(verdicts["judge"].to_list()))
    for j in judges:
        mine = verdicts.filter(pl.col("judge") == j).select(
            "policy", "case_id", pl.col("label").alias(judge_column(j))
        )
        frame = frame.join(mine, on=["policy", "case_id"], how="left")
    if chosen is not None:
        mine = verdicts.filter(pl.col("judge") == chosen).select(
            "policy",
            "case_id",
            pl.col("label"),
            pl.col("recoverable").fill_null(0).alias("recoveries"),
            pl.col("losses").list.eval(pl.element().struct.field("category")).alias("categories"),
            pl.col("losses")
            .list.eval(pl.element().struct.field("anchor"))
            .list.join(" ")
            .alias("anchors"),
        )
        frame = frame.join(mine, on=["policy", "case_id"], how="left")
    else:
        frame = frame.with_columns(
            pl.lit(None, pl.String).alias("label"),
            pl.lit(None, pl.Int32).alias("recoveries"),
            pl.lit(None, pl.List(pl.String)).alias("categories"),
            pl.lit(None, pl.String).alias("anchors"),
        )
    scored = [
        pl.when(pl.col(judge_column(j)).is_in(["no_impact", "impact"])).then(
            pl.col(judge_column(j))
        )
        for j in judges
    ]
    frame = frame.with_columns(
        # as every report reads it: a failed planner has no result to score
        label=pl.when(pl.col("planner_failure").is_not_null())
        .then(pl.lit("planner_failed"))
        .otherwise(pl.col("label").fill_null("not_judged")),
        losses=pl.col("categories").list.len().fill_null(0),
        disagree=(pl.concat_list(scored).list.drop_nulls().list.n_unique() > 1)
        if scored
        else pl.lit(False),
    ).with_columns(
        strict=pl.when(pl.col("label").is_in(["no_impact", "impact"])).then(
            (pl.col("label") == "no_impact") & (pl.col("recoveries") == 0)
        ),
        search=pl.concat_str(
            ["case_id", "session_id", "policy", pl.col("anchors").fill_null("")],
            separator="\n",
        ).str.to_lowercase(),
    )
    frame = frame.with_row_index("row")
    return Grid(
        frame,
        order_policies(run, frame),
        judges,
        chosen,
        sorted({c for c in frame["corpus"].to_list() if c}),
    )


@dataclass(frozen=True)
class GridQuery:
    """What the URL asks of the grid: filters, order and page."""

    policy: tuple[str, ...] = ()
    label: str | None = None
    category: str | None = None
    disagree: bool = False
    corpus: str | None = None
    q: str = ""
    sort: str = "row"
    desc: bool = False
    page: int = 1
    size: int = PAGE_SIZE

    @classmethod
    def parse(cls, params: Mapping[str, Sequence[str]]) -> GridQuery:
        """From a URL's query (each name to its values), checked; ``p`` is the page number
        (``page`` names the browser's page)."""

        def one(name: str) -> str | None:
            values = [v for v in params.get(name, ()) if v != ""]
            return values[-1] if values else None

        def number(name: str, default: int, low: int, high: int) -> int:
            value = one(name)
            if value is None:
                return default
            try:
                n = int(value)
            except ValueError:
                raise ViewerError(f"{name} must be a whole number (got {value!r})") from None
            return min(max(n, low), high)

        label = one("label")
        if label is not None and label not in LABELS:
            raise ViewerError(f"label must be one of {', '.join(LABELS)} (got {label!r})")
        category = one("category")
        if category is not None and category not in CATEGORIES:
            raise ViewerError(f"category must be one of {', '.join(CATEGORIES)} (got {category!r})")
        return cls(
            policy=tuple(v for v in params.get("policy", ()) if v),
            label=label,
            category=category,
            disagree=one("disagree") in ("1", "true", "yes"),
            corpus=one("corpus"),
            q=(one("q") or "").strip(),
            sort=one("sort") or "row",
            desc=one("desc") in ("1", "true", "yes"),
            page=number("p", 1, 1, 10**9),
            size=number("size", PAGE_SIZE, 1, MAX_PAGE_SIZE),
        )


def select(grid: Grid, query: GridQuery) -> pl.DataFrame:
    """The rows the query keeps, in its order (every page of them)."""
    frame = grid.frame
    if query.policy:
        frame = frame.filter(pl.col("policy").is_in(list(query.policy)))
    if query.label:
        frame = frame.filter(pl.col("label") == query.label)
    if query.category:
        frame = frame.filter(pl.col("categories").list.contains(query.category))
    if query.disagree:
        frame = frame.filter(pl.col("disagree"))
    if query.corpus:
        frame = frame.filter(pl.col("corpus") == query.corpus)
    if query.q:
        frame = frame.filter(pl.col("search").str.contains(query.q.lower(), literal=True))
    if query.sort not in grid.columns and query.sort != "row":
        raise ViewerError(
            f"no column {query.sort!r} to sort by; the grid has: {', '.join(grid.columns)}"
        )
    return frame.sort([query.sort, "row"], descending=[query.desc, False], nulls_last=True)


def row_json(row: dict[str, Any], judges: Sequence[str]) -> dict[str, Any]:
    """A grid row as the page reads it (NaN as null, the judges' labels by judge)."""

    def clean(v: Any) -> Any:
        return None if isinstance(v, float) and math.isnan(v) else v

    out = {k: clean(row[k]) for k in COLUMNS}
    out["categories"] = category_counts(row["categories"])
    out["judges"] = {j: row[judge_column(j)] for j in judges}
    out["disagree"] = bool(row["disagree"])
    return out


def category_counts(categories: Sequence[str] | None) -> dict[str, int]:
    """Losses by category, in the order of the taxonomy."""
    found = list(categories or ())
    return {c: found.count(c) for c in dict.fromkeys([*CATEGORIES, *found]) if c in found}


def grid_page(grid: Grid, query: GridQuery) -> dict[str, Any]:
    """One page of the grid and what its filters can choose from."""
    rows = select(grid, query)
    pages = max(1, math.ceil(rows.height / query.size))
    page = min(query.page, pages)
    shown = rows.slice((page - 1) * query.size, query.size)
    return {
        "total": grid.frame.height,
        "matched": rows.height,
        "page": page,
        "pages": pages,
        "size": query.size,
        "rows": [row_json(r, grid.judges) for r in shown.iter_rows(named=True)],
        **facets(grid),
    }


def facets(grid: Grid) -> dict[str, Any]:
    """What the grid's filters offer: its policies, judges, corpora, labels and categories."""
    return {
        "columns": grid.columns,
        "policies": grid.policies,
        "judges": grid.judges,
        "judge": grid.judge,
        "corpora": grid.corpora,
        "labels": list(LABELS),
        "categories": list(CATEGORIES),
    }


def all_rows(grid: Grid) -> list[dict[str, Any]]:
    """Every row, in the grid's order: what a static bundle holds (it has no server to page)."""
    return [
        {**row_json(r, grid.judges), "row": r["row"], "search": r["search"]}
        for r in grid.frame.iter_rows(named=True)
    ]
