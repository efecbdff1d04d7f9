"""Cells and display tables: how a number, an interval or a p-value is written, shared by every
text renderer and by the frontier's section."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from .recovery import ASSUMPTION, leans_on_recovery
from .stats import is_nan as _nan


def num(x: Any, digits: int = 2) -> str:
    return "–" if _nan(x) else f"{x:.{digits}f}"


def ci(lo: Any, hi: Any, digits: int = 2) -> str:
    return "–" if _nan(lo) or _nan(hi) else f"[{lo:.{digits}f}, {hi:.{digits}f}]"


def pval(p: Any) -> str:
    if _nan(p):
        return "–"
    return f"{p:.1e}" if p < 0.001 else f"{p:.3g}"


def count(x: Any) -> str:
    return "–" if _nan(x) else f"{int(x):,}"


def usd(x: Any) -> str:
    return "–" if _nan(x) else f"{x:,.4f}"


def usd_range(lo: Any, hi: Any) -> str:
    return "–" if _nan(lo) or _nan(hi) else f"{lo:,.4f}–{hi:,.4f}"


def usd_delta(cached: Any, uncached: Any) -> str:
    """Policy − baseline under perfect caching and under no caching (not an ordered range)."""
    return "–" if _nan(cached) or _nan(uncached) else f"{cached:+,.4f} / {uncached:+,.4f}"


def category_title(c: str) -> str:
    return c.replace("_", " ")


@dataclass(frozen=True)
class Display:
    """A titled table of formatted cells; ``numeric`` marks right-aligned columns."""

    key: str
    title: str
    note: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    numeric: tuple[bool, ...]
    footer: tuple[str, ...] = ()  # lines printed under the table


def display(
    key: str,
    title: str,
    note: str,
    columns: Sequence[tuple[str, Callable[[dict[str, Any]], str], bool]],
    rows: Sequence[dict[str, Any]],
    footer: Sequence[str] = (),
) -> Display:
    return Display(
        key,
        title,
        note,
        tuple(h for h, _, _ in columns),
        tuple(tuple(f(r) for _, f, _ in columns) for r in rows),
        tuple(n for _, _, n in columns),
        tuple(footer),
    )


def recovery_columns(
    table: pl.DataFrame,
) -> list[tuple[str, Callable[[dict[str, Any]], str], bool]]:
    """The price of recovery (``recovery.py``) of a table with its columns (the no-impact table,
    the frontier points), shown when some row leans on recovery."""
    if not leans_on_recovery(table):
        return []
    return [
        ("strict no-impact %", lambda r: num(r["strict_no_impact_pct"]), True),
        ("strict 95% CI", lambda r: ci(r["strict_lo"], r["strict_hi"]), True),
        ("recoveries/case", lambda r: num(r["recoveries_per_case"]), True),
        ("extra requests/case", lambda r: num(r["extra_requests_per_case"]), True),
        ("recovery tokens/case", lambda r: num(r["recovery_tokens_per_case"], 0), True),
    ]


def recovery_lines(table: pl.DataFrame) -> tuple[str, ...]:
    """What the recovery price columns of ``table`` assume (none when no row leans on
    recovery)."""
    return (ASSUMPTION,) if leans_on_recovery(table) else ()
