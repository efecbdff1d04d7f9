"""Cells and display tables: how a number, an interval or a p-value is written, shared by every
text renderer and by the frontier's section; and how a table fits a terminal's width.

Terminal width: ``terminal_width(None)`` is the terminal's (``COLUMNS`` honoured), or
``DEFAULT_WIDTH`` (100) when the output is not a terminal; 0 means no limit (one line per row,
however wide). ``fit_table`` never cuts a number, an id, a label or a command: it wraps the
free-text columns (reasons, commit decisions) at spaces and parameter boundaries, prints a
label too long for its column whole on a line of its own, and when the numbers still do not fit
it splits the table into column groups, each repeating the row's identity columns (the policy,
and the case or family where the table has one).

A pass that leans on recovery is marked ``MARK`` (†) after its no-impact figure wherever a
policy is ranked (``no_impact_cell``), with ``MARK_NOTE`` under the table.
"""

from __future__ import annotations

import re
import shlex
import shutil
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from ..errors import CtxreplayError
from .recovery import ASSUMPTION, leans_on_recovery, row_leans_on_recovery
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
    """A titled table of formatted cells; ``numeric`` marks right-aligned columns.

    ``identity``: how many leading columns name a row (the policy; the judge and the policy;
    the level and the family): every column group of a split table repeats them, and they are
    never wrapped. ``whole``: which other columns hold ids, labels or commands that are never
    wrapped either (empty: none)."""

    key: str
    title: str
    note: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    numeric: tuple[bool, ...]
    footer: tuple[str, ...] = ()  # lines printed under the table
    identity: int = 1
    whole: tuple[bool, ...] = ()

    def is_whole(self, i: int) -> bool:
        """Whether column ``i`` is printed whole, never wrapped (identity, id or label)."""
        return i < self.identity or (i < len(self.whole) and self.whole[i])


Column = tuple[str, Callable[[dict[str, Any]], str], bool]


def display(
    key: str,
    title: str,
    note: str,
    columns: Sequence[Column],
    rows: Sequence[dict[str, Any]],
    footer: Sequence[str] = (),
    *,
    identity: int = 1,
    whole: Sequence[str] = (),
) -> Display:
    """A ``Display`` from (header, cell of a row, numeric) columns; ``identity`` and ``whole``
    (headers of the columns never wrapped) as ``Display`` says."""
    headers = tuple(h for h, _, _ in columns)
    return Display(
        key,
        title,
        note,
        headers,
        tuple(tuple(f(r) for _, f, _ in columns) for r in rows),
        tuple(n for _, _, n in columns),
        tuple(footer),
        identity,
        tuple(h in whole for h in headers) if whole else (),
    )


#: the marker of a no-impact that leans on recovery, after the figure
MARK = "†"
MARK_NOTE = (
    f"{MARK} = this no-impact leans on recovery: some of its cases pass only because the agent "
    "can recover a folded payload through its visible pointer (an extra request each); strict "
    "no-impact (no loss and no recovery) and recoveries per case stand beside it."
)


def no_impact_cell(
    row: dict[str, Any], key: str = "no_impact_pct", *, leans: bool | None = None
) -> str:
    """A ranked no-impact figure, marked ``MARK`` when the row leans on recovery (``leans``, or
    ``recovery.row_leans_on_recovery(row)`` when not given)."""
    marked = row_leans_on_recovery(row) if leans is None else leans
    return num(row[key]) + (f" {MARK}" if marked else "")


def marked(d: Display, otherwise: Sequence[str] = ()) -> Display:
    """``d`` with ``MARK_NOTE`` as the first line under it when a cell carries the marker (else
    the ``otherwise`` lines there), so that the marker is explained wherever it is shown."""
    mark = f" {MARK}"
    if any(c.endswith(mark) for row in d.rows for c in row):
        return replace(d, footer=(MARK_NOTE, *d.footer))
    return replace(d, footer=(*otherwise, *d.footer)) if otherwise else d


def strict_columns(table: pl.DataFrame, prefix: str = "") -> list[Column]:
    """Strict no-impact and recoveries per case, to stand right beside no-impact wherever
    policies are ranked, when some row of ``table`` leans on recovery (else strict no-impact
    is no-impact and nothing is added). ``prefix``: the row keys' prefix (``leader_``)."""
    if not leans_on_recovery(table):
        return []
    return [
        ("strict no-impact %", lambda r: num(r[f"{prefix}strict_no_impact_pct"]), True),
        ("recoveries/case", lambda r: num(r[f"{prefix}recoveries_per_case"]), True),
    ]


def recovery_columns(table: pl.DataFrame) -> list[Column]:
    """The rest of the price of recovery (``recovery.py``) of a table with its columns (the
    no-impact table, the frontier points), shown when some row leans on recovery."""
    if not leans_on_recovery(table):
        return []
    return [
        ("strict 95% CI", lambda r: ci(r["strict_lo"], r["strict_hi"]), True),
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


def wrap(
    text: str, width: int, indent: str = "", subsequent: str | None = None, *, cut: bool = True
) -> list[str]:
    """``text`` in lines of at most ``width`` characters (0: one line), broken at spaces; a word
    longer than a line (trace text with no space) is cut where it must be, unless ``cut`` is
    false: a line naming ids, paths or commands leaves such a word whole, over the width."""
    later = indent if subsequent is None else subsequent
    if width <= 0 or len(indent) + len(text) <= width:
        return [indent + text]
    return textwrap.wrap(
        text,
        width,
        initial_indent=indent,
        subsequent_indent=later,
        break_long_words=cut,
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


#: a word's parameter boundaries: a cell may break after a run of , ; : (``a=1,b=2``)
_PARAMS = re.compile(r".+?(?:[,;:]+|$)")
#: and, in a piece still too long for its column, after a run of = (``fold_min_tokens=``)
_EQUALS = re.compile(r".+?(?:=+|$)")


def _pieces(text: str, width: int) -> list[tuple[str, bool]]:
    """The unbreakable pieces of a free-text cell, each with whether a space stood before it:
    words, cut after ``,`` ``;`` ``:``, and those still over ``width`` after ``=``; never
    inside a word."""
    out: list[tuple[str, bool]] = []
    for k, word in enumerate(text.split()):
        parts = [
            q
            for part in _PARAMS.findall(word)
            for q in (_EQUALS.findall(part) if len(part) > width else [part])
        ]
        out += [(part, j == 0 and k > 0) for j, part in enumerate(parts)]
    return out


def _cell_lines(text: str, width: int) -> list[str]:
    """A free-text cell in lines of at most ``width``, broken at spaces and parameter
    boundaries (``_pieces``); a piece longer than ``width`` is left whole, over the width (the
    table then prints the cell on lines of its own, ``_table_lines``)."""
    if len(text) <= width:
        return [text]
    lines: list[str] = []
    line = ""
    for piece, spaced in _pieces(text, width):
        joined = line + (" " if spaced and line else "") + piece
        if line and len(joined) > width:
            lines.append(line)
            line = piece
        else:
            line = joined
    return [*lines, line]


def _longest_piece(text: str, width: int) -> int:
    return max((len(p) for p, _ in _pieces(text, width)), default=0)


def _header_lines(text: str, width: int) -> list[str]:
    if len(text) <= width:
        return [text]
    return textwrap.wrap(text, width, break_long_words=True, break_on_hyphens=False) or [""]


def _marks_aligned(d: Display) -> Display:
    """``d`` with the unmarked cells of a numeric column that has ``MARK``ed ones padded by the
    marker's width, so that the figures stay aligned on their last digit."""
    mark = f" {MARK}"
    marked = [
        d.numeric[i] and any(row[i].endswith(mark) for row in d.rows) for i in range(len(d.headers))
    ]
    if not any(marked):
        return d
    rows = tuple(
        tuple(
            c + " " * len(mark) if marked[i] and not c.endswith(mark) else c
            for i, c in enumerate(row)
        )
        for row in d.rows
    )
    return replace(d, rows=rows)


def _table_lines(
    d: Display, columns: Sequence[int], widths: Sequence[int], limit: int = 0
) -> list[str]:
    """The lines of ``d``'s ``columns`` at ``widths``. A cell that does not fit its column (a
    label printed whole, a piece of text with no boundary in reach) is taken out of the row's
    grid and printed on a line of its own: when it is one of the row's identity cells, the
    whole identity heads the row on a line above it, from the left margin; another cell goes
    under the row, from its column (moved left so that it ends within ``limit`` where it can,
    never to the left margin, which starts a row)."""
    offsets = [sum(widths[:j]) + len(GAP) * j for j in range(len(widths))]

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
    ident = sum(1 for i in columns if i < d.identity)  # the identity columns come first
    for row in d.rows:
        cells = [
            [row[i]] if d.is_whole(i) or d.numeric[i] else _cell_lines(row[i], w)
            for i, w in zip(columns, widths, strict=True)
        ]
        fits = [max(len(c) for c in cell) <= w for cell, w in zip(cells, widths, strict=True)]
        above: list[str] = []
        if not all(fits[:ident]):  # the row's identity, whole, heads it on a line of its own
            head = [row[i].ljust(w) for i, w in zip(columns[:ident], widths, strict=False)]
            above.append(GAP.join(head).rstrip())
            cells[:ident] = [[""]] * ident
            fits[:ident] = [True] * ident
        below: list[str] = []
        for j, ok in enumerate(fits):
            if ok:
                continue
            for text in cells[j]:
                at = offsets[j] if not limit else min(offsets[j], limit - len(text))
                below.append(" " * max(len(GAP), at) + text)
            cells[j] = [""]
        lines += [*above, *block(cells, True), *below]
    if not d.rows:
        lines.append("(none)")
    return lines


def fit_table(d: Display, width: int) -> list[str]:
    """``d`` as aligned lines at most ``width`` wide (0: no limit, one line per row).

    A table that fits is printed as it is. Otherwise:

    - headers wrap at spaces; free-text columns wrap at spaces and parameter boundaries (after
      ``,`` ``;`` ``:``, then after ``=``), never inside a word, down to ``FIRST_FLOOR`` for the
      first column and ``TEXT_FLOOR`` for the others;
    - numbers are never cut, and neither are the identity columns (``Display.identity``) and
      the ``whole`` ones (ids, policy labels, case ids, commands): such a column gets its
      longest cell's width up to a third of ``width``, and a cell longer than its column is
      printed whole on a line of its own — an identity cell with the rest of the row's
      identity, above the row from the left margin, so that a long policy label heads its
      figures; any other under the row, from its column (a free-text piece with no boundary
      in reach, likewise);
    - when the numbers alone do not fit, the columns are split into groups printed one under
      the other, each repeating the identity columns.

    The marker ``MARK`` after a figure is aligned: unmarked figures of its column are padded.
    """
    d = _marks_aligned(d)
    n = len(d.headers)
    ident = min(max(d.identity, 1), n)
    longest = [max((len(r[i]) for r in d.rows), default=0) for i in range(n)]
    natural = [max(len(d.headers[i]), longest[i]) for i in range(n)]

    def span(widths: Sequence[int]) -> int:
        return sum(widths) + len(GAP) * (len(widths) - 1)

    if width <= 0 or span(natural) <= width:
        return _table_lines(d, range(n), natural)
    cap = max(FIRST_FLOOR, width // 3)  # the most a label column takes to stay whole
    least = []
    for i in range(n):
        word = max((len(w) for w in d.headers[i].split()), default=0)
        floor = FIRST_FLOOR if i == 0 else TEXT_FLOOR
        if d.numeric[i]:
            least.append(max(longest[i], word))
        elif d.is_whole(i):
            least.append(min(natural[i], max(word, cap)))
        else:
            piece = max((_longest_piece(r[i], cap) for r in d.rows), default=0)
            least.append(min(natural[i], max(floor, word, min(piece, cap))))
    identity = list(range(ident))
    groups: list[list[int]] = [[]]
    for i in range(ident, n):
        if groups[-1] and span([least[j] for j in (*identity, *groups[-1], i)]) > width:
            groups.append([])
        groups[-1].append(i)
    out: list[str] = []
    for group in groups:
        columns = [*identity, *group]
        widths = [least[i] for i in columns]
        # a group over the width (one column too wide beside the identity at their floors):
        # the other text columns give way down to TEXT_LEAST, then the identity columns
        text = [j for j, i in enumerate(columns) if i >= ident and not d.numeric[i]]
        for j in [*text, *reversed(range(ident))]:
            over = span(widths) - width
            if over > 0 and widths[j] > TEXT_LEAST:
                widths[j] = max(TEXT_LEAST, widths[j] - over)
        slack = width - span(widths)
        # room left goes to the text columns first (fewer wrapped rows; a whole column up to
        # its longest cell that the room lets fit: a label over its column is on a line of its
        # own however wide the column), then to the numeric columns whose header it unwraps
        for j, i in enumerate(columns):
            if d.numeric[i]:
                continue
            if d.is_whole(i):
                room = widths[j] + slack
                fit = max((len(r[i]) for r in d.rows if len(r[i]) <= room), default=0)
                extra = max(0, fit - widths[j])
            else:
                extra = max(0, min(slack, natural[i] - widths[j]))
            widths[j] += extra
            slack -= extra
        for j, i in enumerate(columns):
            if d.numeric[i] and 0 < natural[i] - widths[j] <= slack:
                slack -= natural[i] - widths[j]
                widths[j] = natural[i]
        if out:
            out.append("")
        out += _table_lines(d, columns, widths, width)
    return out


#: C0/C1 control characters and DEL, except newline and tab: shown, never sent to a terminal
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible_controls(text: str) -> str:
    """``text`` with control characters from traces (ESC, NUL, ...) written as visible escapes
    (``\\x1b``), so printing a trace cannot move the cursor, recolour or clear a terminal."""
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
