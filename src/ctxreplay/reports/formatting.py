"""Cells and display tables: how a number, an interval or a p-value is written, shared by every
text renderer and by the frontier's section; and how a table fits a terminal's width.

Terminal width: ``terminal_width(None)`` is the terminal's (``COLUMNS`` honoured), or
``DEFAULT_WIDTH`` (100) when the output is not a terminal; 0 means no limit (one line per row,
however wide). ``fit_table`` never cuts a number: it wraps the text columns (policy labels,
reasons, commit decisions) and the headers at spaces, and when the numbers still do not fit it
splits the table into column groups, each repeating the first column (the policy).
"""

from __future__ import annotations

import re
import shlex
import shutil
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from ..errors import CtxreplayError
from .recovery import ASSUMPTION, leans_on_recovery
from .stats import is_nan as _nan


class RenderError(CtxreplayError, ValueError):
    pass


#: line width when the output is not a terminal and no width is given
DEFAULT_WIDTH = 100
#: the narrowest width a renderer accepts (0 means no limit)
MIN_WIDTH = 40
#: the narrowest a wrapped text column gets: the first one (the policy) and the others
FIRST_FLOOR = 20
TEXT_FLOOR = 30
#: the narrowest a text column gets when a group is still too wide
TEXT_LEAST = 10
GAP = "  "


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


# --- fitting a width ------------------------------------------------------------------------


def terminal_width(width: int | None = None) -> int:
    """The line width to render at: ``width`` when given (0: no limit), else the terminal's
    columns (``COLUMNS`` honoured), ``DEFAULT_WIDTH`` when the output is not a terminal."""
    if width is None:
        return max(MIN_WIDTH, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)
    if width < 0 or 0 < width < MIN_WIDTH:
        raise RenderError(f"width must be 0 (no limit) or at least {MIN_WIDTH}, not {width}")
    return width


def wrap(text: str, width: int, indent: str = "", subsequent: str | None = None) -> list[str]:
    """``text`` in lines of at most ``width`` characters (0: one line), broken at spaces, long
    words (paths, ids) cut where they must be."""
    later = indent if subsequent is None else subsequent
    if width <= 0 or len(indent) + len(text) <= width:
        return [indent + text]
    return textwrap.wrap(
        text,
        width,
        initial_indent=indent,
        subsequent_indent=later,
        break_long_words=True,
        break_on_hyphens=False,
    ) or [indent]


def wrap_command(command: str, width: int, first: str = "", later: str = "") -> list[str]:
    """A shell command after ``first``, in lines of at most ``width`` (0: one line), broken
    between arguments with a trailing backslash so that it still pastes as one command;
    continuation lines start with ``later``. An argument longer than a line is left whole."""
    if width <= 0 or len(first) + len(command) <= width:
        return [first + command]
    words = [shlex.quote(w) for w in shlex.split(command)]
    lines: list[str] = []
    line = first + words[0]
    for word in words[1:]:
        if len(line) + 1 + len(word) + 2 > width:
            lines.append(line + " \\")
            line = later + word
        else:
            line += " " + word
    return [*lines, line]


def _cell_lines(text: str, width: int) -> list[str]:
    if len(text) <= width:
        return [text]
    return textwrap.wrap(text, width, break_long_words=True, break_on_hyphens=True) or [""]


def _header_lines(text: str, width: int) -> list[str]:
    if len(text) <= width:
        return [text]
    return textwrap.wrap(text, width, break_long_words=True, break_on_hyphens=False) or [""]


def _table_lines(d: Display, columns: Sequence[int], widths: Sequence[int]) -> list[str]:
    def block(cells: Sequence[list[str]], top: bool) -> list[str]:
        height = max(len(c) for c in cells)
        padded = [
            (c + [""] * (height - len(c))) if top else ([""] * (height - len(c)) + c) for c in cells
        ]
        out = []
        for k in range(height):
            parts = [
                padded[j][k].rjust(w) if d.numeric[i] else padded[j][k].ljust(w)
                for j, (i, w) in enumerate(zip(columns, widths, strict=True))
            ]
            out.append(GAP.join(parts).rstrip())
        return out

    # headers sit on the rule (wrapped headers grow upwards); wrapped cells grow downwards
    lines = block(
        [_header_lines(d.headers[i], w) for i, w in zip(columns, widths, strict=True)], False
    )
    lines.append(GAP.join("─" * w for w in widths))
    for row in d.rows:
        lines += block([_cell_lines(row[i], w) for i, w in zip(columns, widths, strict=True)], True)
    if not d.rows:
        lines.append("(none)")
    return lines


def fit_table(d: Display, width: int) -> list[str]:
    """``d`` as aligned lines at most ``width`` wide (0: no limit, one line per row).

    A table that fits is printed as it is. Otherwise headers wrap at spaces and text columns
    wrap (down to ``FIRST_FLOOR`` for the first column, ``TEXT_FLOOR`` for the others); numbers
    are never cut. When the numbers alone do not fit, the columns are split into groups, each
    repeating the first column, printed one under the other.
    """
    n = len(d.headers)
    longest = [max((len(r[i]) for r in d.rows), default=0) for i in range(n)]
    natural = [max(len(d.headers[i]), longest[i]) for i in range(n)]

    def span(widths: Sequence[int]) -> int:
        return sum(widths) + len(GAP) * (len(widths) - 1)

    if width <= 0 or span(natural) <= width:
        return _table_lines(d, range(n), natural)
    least = []
    for i in range(n):
        word = max((len(w) for w in d.headers[i].split()), default=0)
        if d.numeric[i]:
            least.append(max(longest[i], word))
        else:
            floor = FIRST_FLOOR if i == 0 else TEXT_FLOOR
            least.append(min(natural[i], max(floor, word)))
    groups: list[list[int]] = [[]]
    for i in range(1, n):
        if groups[-1] and span([least[j] for j in (0, *groups[-1], i)]) > width:
            groups.append([])
        groups[-1].append(i)
    out: list[str] = []
    for group in groups:
        columns = [0, *group]
        widths = [least[i] for i in columns]
        # a group over the width (one column too wide beside the first at their floors): the text
        # columns give way down to TEXT_LEAST, then the first column down to TEXT_LEAST
        for j in [*(j for j, i in enumerate(columns) if j and not d.numeric[i]), 0]:
            over = span(widths) - width
            if over > 0 and widths[j] > TEXT_LEAST:
                widths[j] = max(TEXT_LEAST, widths[j] - over)
        slack = width - span(widths)
        # room left goes to the text columns first (fewer wrapped rows), then to the numeric
        # columns whose header it unwraps whole
        for j, i in enumerate(columns):
            if not d.numeric[i]:
                extra = max(0, min(slack, natural[i] - widths[j]))
                widths[j] += extra
                slack -= extra
        for j, i in enumerate(columns):
            if d.numeric[i] and 0 < natural[i] - widths[j] <= slack:
                slack -= natural[i] - widths[j]
                widths[j] = natural[i]
        if out:
            out.append("")
        out += _table_lines(d, columns, widths)
    return out


#: C0/C1 control characters and DEL, except newline and tab: shown, never sent to a terminal
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible_controls(text: str) -> str:
    """``text`` with control characters from traces (ESC, NUL, ...) written as visible escapes
    (``\\x1b``), so printing a trace cannot move the cursor, recolour or clear a terminal."""
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
