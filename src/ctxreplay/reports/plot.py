"""The trade-off plot (pruning against no-impact, one point per policy) and a sweep's frontier.

Bars are the Wilson 95% interval on y and, in the trade-off plot, the session-cluster bootstrap
interval on x. A dependency-aware policy sits up and to the left of heuristics that remove more
and lose more.

Each point is named next to it, not numbered against a legend: a reader should not have to look
a number up to know what a point is. The labels are placed after the axes are laid out, in
display pixels, by a greedy search (``place_labels``): each label takes the nearest free spot
around its point that overlaps no other label, no marker and stays inside the axes. Policies at
the same spot (``coincident``) are drawn once and named together, so none hides another. Where
a policy's no-impact leans on recovering archived payloads, its strict no-impact (no loss and no
recovery) is a hollow marker below the point, joined to it by a dotted line. The x axis ends a
margin past the data (``x_upper``), not at 100 %.

Drawn with matplotlib's object API on an Agg canvas: no display, no pyplot global state, so it is
safe in worker threads and in tests. ``tradeoff_figure`` and ``frontier_figure`` return the laid
out figure (tests read its limits, labels and their extents); ``tradeoff_plot`` and
``frontier_plot`` give its PNG.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ..files import atomic_write_bytes

#: marker size of a point, in points (a frontier point is smaller)
MARKER = 6.0
FRONTIER_MARKER = 4.5
#: label font size, in points
LABEL_SIZE = 7.5
#: strict no-impact this far (percentage points) below no-impact is drawn as its own marker
STRICT_GAP = 0.05
#: the y axis: no-impact is a share, so always 0–100 % with a little room
Y_LIMITS = (-2.0, 105.0)
X_LOW = -2.0

STRICT_LEGEND = "strict no-impact (no loss, no recovery),\nwhere no-impact leans on recovery"


# --- layout, pure -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Box:
    """An axis-aligned rectangle in display pixels (y grows upwards, as matplotlib's)."""

    x0: float
    y0: float
    x1: float
    y1: float

    @classmethod
    def around(cls, x: float, y: float, half: float) -> Box:
        return cls(x - half, y - half, x + half, y + half)

    def overlap(self, other: Box) -> float:
        """The area both boxes cover (0 when they only touch)."""
        w = min(self.x1, other.x1) - max(self.x0, other.x0)
        h = min(self.y1, other.y1) - max(self.y0, other.y0)
        return w * h if w > 0 and h > 0 else 0.0

    def within(self, bounds: Box) -> bool:
        return (
            self.x0 >= bounds.x0
            and self.y0 >= bounds.y0
            and self.x1 <= bounds.x1
            and self.y1 <= bounds.y1
        )

    def nearest(self, x: float, y: float) -> tuple[float, float]:
        """The point of the box nearest to (x, y)."""
        return min(max(x, self.x0), self.x1), min(max(y, self.y0), self.y1)

    def distance(self, x: float, y: float) -> float:
        nx, ny = self.nearest(x, y)
        return math.hypot(nx - x, ny - y)


def _strict_handle(size: float) -> Line2D:
    """The legend's entry for a point whose strict no-impact is drawn apart (open, dotted)."""
    return Line2D(
        [], [], marker="o", linestyle=":", color="0.35", markerfacecolor="white",
        markersize=size, label=STRICT_LEGEND,
    )  # fmt: skip


def x_upper(values: Sequence[float], *, step: float = 5.0, cap: float = 102.0) -> float:
    """The x axis's upper limit: a margin past the largest finite value (a tenth of it, at least
    one ``step``), rounded up to a ``step``; at most ``cap`` (a share cannot pass 100 %), and
    ``cap`` when there is no value. The data decide the scale, so points at 10–55 % do not
    crowd into the left half of a 0–100 axis.

    >>> x_upper([12.0, 55.2]), x_upper([98.0]), x_upper([]), x_upper([0.0])
    (65.0, 102.0, 102.0, 5.0)
    """
    finite = [float(v) for v in values if v is not None and math.isfinite(v)]
    if not finite:
        return cap
    top = max(finite)
    return min(cap, step * math.ceil((top + max(step, 0.1 * top)) / step))


def coincident(points: Sequence[tuple[float, float]], radius: float) -> list[list[int]]:
    """Indices of ``points`` grouped when within ``radius`` of each other (in both coordinates,
    chained: a group holds every point linked to it), in order of first appearance. Points of a
    group are drawn as one marker named by all of them.

    >>> coincident([(0, 0), (5, 5), (0.5, 0.2), (5.4, 5)], 1.0)
    [[0, 2], [1, 3]]
    """
    parent = list(range(len(points)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, (xi, yi) in enumerate(points):
        for j in range(i):
            xj, yj = points[j]
            if abs(xi - xj) <= radius and abs(yi - yj) <= radius:
                parent[root(i)] = root(j)
    groups: dict[int, list[int]] = {}
    for i in range(len(points)):
        groups.setdefault(root(i), []).append(i)
    return list(groups.values())


#: directions tried around a point, the preferred first: right, left, then the diagonals,
#: above and below
_DIRECTIONS = ((1, 0), (-1, 0), (1, 1), (1, -1), (-1, 1), (-1, -1), (0, 1), (0, -1))
#: distances tried, in multiples of the gap
_STEPS = (1.0, 1.8, 2.8, 4.0, 5.5, 7.5, 10.0, 13.0, 17.0, 22.0)


def _candidates(x: float, y: float, w: float, h: float, gap: float) -> list[Box]:
    """Label boxes around (x, y), nearest first (ties: the order of ``_DIRECTIONS``)."""
    out: list[tuple[float, int, Box]] = []
    k = 0
    for step in _STEPS:
        d = gap * step
        for dx, dy in _DIRECTIONS:
            diag = 0.75 if dx and dy else 1.0
            x0 = x + d * diag if dx > 0 else x - d * diag - w if dx < 0 else x - w / 2
            y0 = y + d * diag if dy > 0 else y - d * diag - h if dy < 0 else y - h / 2
            for slide in (0.0, 0.6, -0.6) if not dy else (0.0,):
                box = Box(x0, y0 + slide * h, x0 + w, y0 + slide * h + h)
                out.append((box.distance(x, y), k, box))
                k += 1
    out.sort(key=lambda t: (round(t[0], 6), t[1]))
    return [b for _, _, b in out]


def place_labels(
    anchors: Sequence[tuple[float, float]],
    sizes: Sequence[tuple[float, float]],
    obstacles: Sequence[Box],
    bounds: Box,
    *,
    gap: float,
    required: Sequence[bool] | None = None,
) -> list[Box | None]:
    """Where each label goes: a box per label (display pixels), placed greedily in order.

    Label i, of size ``sizes[i]`` (width, height), takes the nearest candidate spot around
    ``anchors[i]`` (at least ``gap`` away) that lies inside ``bounds`` and overlaps no label
    already placed and no ``obstacle`` (markers, lines). When there is none, a ``required``
    label (default: all) takes the spot that overlaps least, inside ``bounds`` where one fits
    (so every point stays named); an optional one is left out (None). Greedy and deterministic: the same input gives
    the same boxes, so the PNG bytes are reproducible.
    """
    need = list(required) if required is not None else [True] * len(anchors)
    placed: list[Box] = []
    out: list[Box | None] = []
    for (x, y), (w, h), must in zip(anchors, sizes, need, strict=True):
        boxes = _candidates(x, y, w, h, gap)
        inside = [b for b in boxes if b.within(bounds)]
        chosen: Box | None = None
        for b in inside:
            if not any(b.overlap(p) for p in placed) and not any(b.overlap(o) for o in obstacles):
                chosen = b
                break
        if chosen is None and must:
            chosen = min(
                inside or boxes,
                key=lambda b: (
                    10.0 * (w * h - b.overlap(bounds))  # outside the axes: worst of all
                    + 3.0 * sum(b.overlap(p) for p in placed)
                    + sum(b.overlap(o) for o in obstacles),
                    b.distance(x, y),
                ),
            )
        out.append(chosen)
        if chosen is not None:
            placed.append(chosen)
    return out


# --- drawing ------------------------------------------------------------------------------------


def _png(fig: Figure, path: str | os.PathLike[str] | None) -> bytes:
    """The (laid out) figure as PNG bytes (no Software stamp, so the bytes are reproducible),
    also written to ``path`` when given."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    data = buf.getvalue()
    if path is not None:
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(out, data)
    return data


def _err(value: float, lo: float, hi: float) -> tuple[float, float]:
    if any(x is None or math.isnan(x) for x in (value, lo, hi)):
        return 0.0, 0.0
    return max(0.0, value - lo), max(0.0, hi - value)


def _finite(*values: Any) -> bool:
    return all(v is not None and math.isfinite(v) for v in values)


@dataclass(frozen=True)
class _Mark:
    """One drawn point: the policies at one spot, their colour, and the strict no-impact values
    below it (each with the policies it belongs to)."""

    names: tuple[str, ...]
    x: float
    y: float
    color: str
    stricts: tuple[tuple[float, tuple[str, ...]], ...]
    required: bool = True


def _strict_of(row: dict[str, Any]) -> float | None:
    """The row's strict no-impact when its no-impact leans on recovery (strict below it)."""
    s, y = row.get("strict_no_impact_pct"), row.get("no_impact_pct")
    if s is None or y is None or not _finite(s, y):
        return None
    return float(s) if s < y - STRICT_GAP else None


def _marks(
    ax: Axes,
    rows: Sequence[dict[str, Any]],
    names: Callable[[list[dict[str, Any]]], tuple[str, ...]],
    color: Callable[[int, dict[str, Any]], str],
    marker: float,
    required: set[str] | None = None,
) -> list[_Mark]:
    """The rows grouped by where their markers fall (display pixels, after layout), one mark
    per spot named by ``names`` of its rows; ``color(i, first row)`` of the i-th spot. A mark
    must be named when one of its rows' policies is in ``required`` (None: every mark)."""
    px = [tuple(ax.transData.transform((r["pruning_pct"], r["no_impact_pct"]))) for r in rows]
    radius = marker * ax.figure.dpi / 72 / 2
    out = []
    for i, group in enumerate(coincident(px, radius)):
        members = [rows[k] for k in group]
        stricts: dict[float, list[str]] = {}
        for r in members:
            s = _strict_of(r)
            if s is not None:
                stricts.setdefault(round(s, 6), []).extend(names([r]))
        out.append(
            _Mark(
                names=names(members),
                x=members[0]["pruning_pct"],
                y=members[0]["no_impact_pct"],
                color=color(i, members[0]),
                stricts=tuple((s, tuple(n)) for s, n in stricts.items()),
                required=required is None or any(r["policy"] in required for r in members),
            )
        )
    return out


def _draw_stricts(ax: Axes, marks: Sequence[_Mark], marker: float) -> None:
    for m in marks:
        for s, _ in m.stricts:
            ax.plot([m.x, m.x], [s, m.y], linestyle=":", linewidth=1.0, color=m.color, zorder=3)
            ax.plot(
                [m.x],
                [s],
                marker="o",
                markersize=marker,
                markerfacecolor="white",
                markeredgecolor=m.color,
                markeredgewidth=1.3,
                linestyle="none",
                zorder=4,
            )


def _label_marks(ax: Axes, marks: Sequence[_Mark], marker: float, font: float) -> None:
    """Name every mark next to it (``place_labels``), and each hollow strict marker of a mark
    whose policies have more than one strict value; a label pushed away from its point gets a
    thin leader line back to it."""
    fig = ax.figure
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    to_px = ax.transData.transform
    half = marker * fig.dpi / 72 / 2 + 1.5
    obstacles: list[Box] = []
    items: list[tuple[str, float, float, str, bool]] = []  # text, x, y (data), colour, required
    for m in marks:
        px, py = to_px((m.x, m.y))
        obstacles.append(Box.around(px, py, half))
        items.append(("\n".join(m.names), m.x, m.y, m.color, m.required))
        for s, names in m.stricts:
            sx, sy = to_px((m.x, s))
            obstacles.append(Box.around(sx, sy, half))
            obstacles.append(Box(px - 1.5, min(sy, py), px + 1.5, max(sy, py)))  # the join line
            if len(m.stricts) > 1:
                items.append(("strict: " + "\n".join(names), m.x, s, m.color, True))
    texts = []
    sizes = []
    pad = 1.5
    for text, x, y, color, _ in items:
        t = ax.text(
            x,
            y,
            text,
            fontsize=font,
            color=color,
            ha="left",
            va="bottom",
            zorder=6,
            linespacing=1.1,
            bbox={
                "boxstyle": "square,pad=0.1",
                "facecolor": "white",
                "edgecolor": "none",
                "alpha": 0.75,
            },
        )
        bb = t.get_window_extent(renderer)
        texts.append(t)
        sizes.append((bb.width + 2 * pad, bb.height + 2 * pad))
    axes_box = ax.get_window_extent(renderer)
    bounds = Box(axes_box.x0 + 2, axes_box.y0 + 2, axes_box.x1 - 2, axes_box.y1 - 2)
    anchors = [tuple(to_px((x, y))) for _, x, y, _, _ in items]
    boxes = place_labels(
        anchors, sizes, obstacles, bounds, gap=half + 2, required=[r for *_, r in items]
    )
    to_data = ax.transData.inverted().transform
    for t, box, (ax_px, ay_px), (_, x, y, color, _) in zip(
        texts, boxes, anchors, items, strict=True
    ):
        if box is None:
            t.remove()
            continue
        t.set_position(tuple(to_data((box.x0 + pad, box.y0 + pad))))
        if box.distance(ax_px, ay_px) > 2.2 * half:
            nx, ny = box.nearest(ax_px, ay_px)
            end = to_data((nx, ny))
            ax.plot([x, end[0]], [y, end[1]], color=color, linewidth=0.6, alpha=0.7, zorder=2)


def _cycle(i: int, row: dict[str, Any]) -> str:
    return f"C{i % 10}"


def tradeoff_figure(table: pl.DataFrame, *, title: str | None = None, dpi: int = 120) -> Figure:
    """The trade-off plot of a no-impact table (``tables.no_impact_table``), laid out and
    labelled. Policies without scored verdicts have no y and are left out."""
    fig = Figure(figsize=(9.5, 5.6), dpi=dpi)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    shown = table.filter(pl.col("n") > 0) if table.height else table
    rows = [r for r in shown.iter_rows(named=True) if _finite(r["pruning_pct"], r["no_impact_pct"])]
    counts = {r["n"] for r in rows}
    uniform = len(counts) == 1

    def name(r: dict[str, Any]) -> str:
        return str(r["policy"]) if uniform else f"{r['policy']} (n={r['n']})"

    xs = [v for r in rows for v in (r["pruning_pct"], r["pruning_hi"])]
    ax.set_xlim(X_LOW, x_upper(xs))
    ax.set_ylim(*Y_LIMITS)
    ax.set_xlabel("pruning rate, % of prefix tokens removed (mean; bootstrap 95% CI)")
    ax.set_ylabel("no-impact, % of scored cases (Wilson 95% CI)")
    ax.grid(True, alpha=0.3)
    head = title or "pruning vs no-impact"
    if uniform:
        head += f" · n = {next(iter(counts)):,} scored cases per policy"
    ax.set_title(head, fontsize=10)
    handles = [
        Line2D(
            [],
            [],
            marker="o",
            linestyle="none",
            color="0.35",
            markersize=MARKER,
            label="policy: no-impact (Wilson 95% CI) at its mean pruning (bootstrap 95% CI)",
        ),
    ]
    if any(_strict_of(r) is not None for r in rows):
        handles.append(_strict_handle(MARKER))
    if rows:
        ax.legend(
            handles=handles,
            loc="upper center",
            bbox_to_anchor=(0.5, -0.12),
            fontsize=7.5,
            frameon=False,
            ncol=1,
        )
    fig.tight_layout()  # fixed from here on: the labels are placed in these display pixels
    marks = _marks(ax, rows, lambda group: tuple(dict.fromkeys(map(name, group))), _cycle, MARKER)
    colour = {n: m.color for m in marks for n in m.names}
    for r in rows:
        c = colour[name(r)]
        xe = _err(r["pruning_pct"], r["pruning_lo"], r["pruning_hi"])
        ye = _err(r["no_impact_pct"], r["wilson_lo"], r["wilson_hi"])
        ax.errorbar(
            [r["pruning_pct"]],
            [r["no_impact_pct"]],
            xerr=[[xe[0]], [xe[1]]],
            yerr=[[ye[0]], [ye[1]]],
            fmt="none",
            ecolor=c,
            elinewidth=1,
            capsize=3,
            zorder=2,
        )
    for m in marks:
        ax.plot(
            [m.x], [m.y], marker="o", markersize=MARKER, color=m.color, linestyle="none", zorder=5
        )
    _draw_stricts(ax, marks, MARKER)
    _label_marks(ax, marks, MARKER, LABEL_SIZE)
    return fig


def tradeoff_plot(
    table: pl.DataFrame,
    path: str | os.PathLike[str] | None = None,
    *,
    title: str | None = None,
    dpi: int = 120,
) -> bytes:
    """PNG bytes of the trade-off plot of a no-impact table (``tables.no_impact_table``; see
    ``tradeoff_figure``). Writes the PNG to ``path`` when given."""
    return _png(tradeoff_figure(table, title=title, dpi=dpi), path)


def _point_name(r: dict[str, Any]) -> str:
    """A frontier point's label: its setting (parameter values), one per line when long, or
    its policy label for a point given by --policy."""
    if r["setting"] == "--policy":
        return str(r["policy"])
    setting = str(r["setting"])
    return setting.replace(", ", "\n") if len(setting) > 24 else setting


def _point_names(group: list[dict[str, Any]]) -> tuple[str, ...]:
    """The names of frontier points at one spot: their settings, or their policy labels when
    the spot holds several families (a setting names a point only within its family)."""
    if len({r["family"] for r in group}) > 1:
        return tuple(dict.fromkeys(str(r["policy"]) for r in group))
    return tuple(dict.fromkeys(_point_name(r) for r in group))


def frontier_figure(
    points: pl.DataFrame,
    *,
    titles: dict[str, str] | None = None,
    x_label: str = "pruning, % (mean over cases)",
    dpi: int = 120,
) -> Figure:
    """A sweep's frontier (``frontier.Frontier.points``), laid out and labelled: one panel per
    measure (two to a row), pruning (x) against no-impact (y); per family a line through its
    points in pruning order with Wilson 95% bars; Pareto points ringed in black, the Pareto set
    joined by a dashed step line. Each point is named by its setting; the Pareto points and
    each family's two ends always, the others where there is room. Points without scored cases
    are left out."""
    measures = list(dict.fromkeys(points["measure"].to_list())) if points.height else ["judge"]
    ncols = min(2, len(measures))
    nrows = math.ceil(len(measures) / ncols)
    families = list(dict.fromkeys(points["family"].to_list())) if points.height else []
    colors = {f: f"C{i % 10}" for i, f in enumerate(families)}
    live = (
        points.filter(pl.col("no_impact_pct").is_not_nan() & pl.col("pruning_pct").is_not_nan())
        if points.height
        else points
    )
    leaning = any(_strict_of(r) is not None for r in live.iter_rows(named=True))
    handles: list[Any] = [
        Line2D([], [], marker="o", color=colors[f], markersize=FRONTIER_MARKER, label=f)
        for f in families
    ]
    if live.height and bool(live["pareto"].any()):
        handles.append(
            Line2D(
                [],
                [],
                marker="o",
                linestyle="--",
                color="black",
                markerfacecolor="none",
                markersize=9,
                linewidth=0.8,
                label="Pareto set",
            )
        )
    if leaning:
        handles.append(_strict_handle(FRONTIER_MARKER))
    spares = nrows * ncols - len(measures)  # an empty panel holds the legend
    legend_rows = math.ceil(len(handles) / 3) if handles and not spares else 0
    legend_in = 0.25 + 0.2 * legend_rows if legend_rows else 0.0
    height = 4.6 * nrows + legend_in
    fig = Figure(figsize=(5.9 * ncols, height), dpi=dpi)
    FigureCanvasAgg(fig)
    grid = fig.subplots(nrows, ncols, squeeze=False)
    axes = [a for row in grid for a in row]
    for spare in axes[len(measures) :]:
        spare.set_axis_off()
    x_max = x_upper(live["pruning_pct"].to_list() if live.height else [])
    for ax, measure in zip(axes, measures, strict=False):
        ax.set_xlabel(x_label)
        ax.set_ylabel("no-impact, % of scored cases (Wilson 95% CI)")
        ax.set_xlim(X_LOW, x_max)
        ax.set_ylim(*Y_LIMITS)
        ax.grid(True, alpha=0.3)
        ax.set_title((titles or {}).get(measure, measure), fontsize=10)
    if handles and spares:
        axes[-1].legend(handles=handles, loc="center", fontsize=8.5, frameon=False)
    elif handles:
        fig.legend(
            handles=handles,
            loc="lower center",
            ncol=min(3, len(handles)),
            fontsize=8,
            frameon=False,
        )
    fig.tight_layout(rect=(0.0, legend_in / height, 1.0, 1.0))
    for ax, measure in zip(axes, measures, strict=False):
        mine = live.filter(pl.col("measure") == measure) if live.height else live
        rows: list[dict[str, Any]] = []
        ends: set[str] = set()
        for family in families:
            fam = mine.filter(pl.col("family") == family).sort("pruning_pct")
            if fam.height == 0:
                continue
            xs = fam["pruning_pct"].to_list()
            ys = fam["no_impact_pct"].to_list()
            lo = [max(0.0, y - a) for y, a in zip(ys, fam["wilson_lo"].to_list(), strict=True)]
            hi = [max(0.0, b - y) for y, b in zip(ys, fam["wilson_hi"].to_list(), strict=True)]
            ax.errorbar(
                xs,
                ys,
                yerr=[lo, hi],
                fmt="-o",
                color=colors[family],
                ecolor=colors[family],
                elinewidth=0.8,
                capsize=2,
                markersize=FRONTIER_MARKER,
                linewidth=1.2,
                zorder=3,
            )
            fam_rows = fam.to_dicts()
            ends |= {fam_rows[0]["policy"], fam_rows[-1]["policy"]}
            rows += fam_rows
        front = mine.filter(pl.col("pareto")).sort("pruning_pct") if mine.height else mine
        if front.height:
            ax.scatter(
                front["pruning_pct"].to_list(),
                front["no_impact_pct"].to_list(),
                s=110,
                facecolors="none",
                edgecolors="black",
                linewidths=1.4,
                zorder=5,
            )
            ax.step(
                front["pruning_pct"].to_list(),
                front["no_impact_pct"].to_list(),
                where="pre",  # the edge of what the Pareto set dominates
                color="black",
                linestyle="--",
                linewidth=0.8,
                alpha=0.6,
            )
        marks = _marks(
            ax,
            rows,
            _point_names,
            lambda i, r: colors[r["family"]],
            FRONTIER_MARKER + 4,  # the Pareto ring is larger than the marker
            required={r["policy"] for r in rows if r["pareto"]} | ends,
        )
        _draw_stricts(ax, marks, FRONTIER_MARKER)
        _label_marks(ax, marks, FRONTIER_MARKER + 4, LABEL_SIZE)
    return fig


def frontier_plot(
    points: pl.DataFrame,
    path: str | os.PathLike[str] | None = None,
    *,
    titles: dict[str, str] | None = None,
    x_label: str = "pruning, % (mean over cases)",
    dpi: int = 120,
) -> bytes:
    """PNG bytes of a sweep's frontier (``frontier.Frontier.points``; see ``frontier_figure``).
    Writes the PNG to ``path`` when given."""
    return _png(frontier_figure(points, titles=titles, x_label=x_label, dpi=dpi), path)
