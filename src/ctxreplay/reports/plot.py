"""The trade-off plot: pruning rate (x) against no-impact rate (y), one labelled point per policy.

Bars are the Wilson 95% interval on y and the session-cluster bootstrap interval on x. A
dependency-aware policy sits up and to the left of heuristics that remove more and lose more.

Drawn with matplotlib's object API on an Agg canvas: no display, no pyplot global state, so it is
safe in worker threads and in tests.
"""

from __future__ import annotations

import io
import math
import os
from pathlib import Path

import polars as pl
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


def _png(fig: Figure, path: str | os.PathLike[str] | None) -> bytes:
    """The figure laid out as PNG bytes (no Software stamp, so the bytes are reproducible),
    also written to ``path`` when given."""
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    data = buf.getvalue()
    if path is not None:
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
    return data


def _err(value: float, lo: float, hi: float) -> tuple[float, float]:
    if any(math.isnan(x) for x in (value, lo, hi)):
        return 0.0, 0.0
    return max(0.0, value - lo), max(0.0, hi - value)


def tradeoff_plot(
    table: pl.DataFrame,
    path: str | os.PathLike[str] | None = None,
    *,
    title: str | None = None,
    dpi: int = 120,
) -> bytes:
    """PNG bytes of the trade-off plot of a no-impact table (``tables.no_impact_table``).

    Policies without scored verdicts have no y and are left out. Writes the PNG to ``path``
    when given.
    """
    fig = Figure(figsize=(9.5, 5.0), dpi=dpi)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    points = table.filter(pl.col("n") > 0) if table.height else table
    placed: list[tuple[float, float]] = []  # label anchors already used, in display points
    for i, r in enumerate(points.iter_rows(named=True)):
        x, y = r["pruning_pct"], r["no_impact_pct"]
        xe = _err(x, r["pruning_lo"], r["pruning_hi"])
        ye = _err(y, r["wilson_lo"], r["wilson_hi"])
        color = f"C{i % 10}"
        ax.errorbar(
            [x],
            [y],
            xerr=[[xe[0]], [xe[1]]],
            yerr=[[ye[0]], [ye[1]]],
            fmt="o",
            color=color,
            ecolor=color,
            elinewidth=1,
            capsize=3,
            markersize=6,
            label=f"{r['policy']} (n={r['n']})",
        )
        # a short number next to the point; coincident points get stacked numbers, and the
        # legend on the right names them
        dy = 6 + 10 * sum(1 for px, py in placed if abs(px - x) < 4 and abs(py - y) < 4)
        placed.append((x, y))
        ax.annotate(
            str(i + 1), (x, y), xytext=(6, dy), textcoords="offset points", fontsize=8, color=color
        )
    ax.set_xlabel("pruning rate, % of prefix tokens removed (mean; bootstrap 95% CI)")
    ax.set_ylabel("no-impact, % of scored cases (Wilson 95% CI)")
    ax.set_xlim(-2, 102)
    ax.set_ylim(-2, 105)
    ax.grid(True, alpha=0.3)
    if points.height:
        handles, labels = ax.get_legend_handles_labels()
        numbered = [f"{k}. {text}" for k, text in enumerate(labels, start=1)]
        ax.legend(
            handles,
            numbered,
            loc="center left",
            bbox_to_anchor=(1.01, 0.5),
            fontsize=7,
            frameon=False,
        )
    ax.set_title(title or "pruning vs no-impact", fontsize=10)
    return _png(fig, path)


def frontier_plot(
    points: pl.DataFrame,
    path: str | os.PathLike[str] | None = None,
    *,
    titles: dict[str, str] | None = None,
    x_label: str = "pruning, % (mean over cases)",
    dpi: int = 120,
) -> bytes:
    """PNG bytes of a sweep's frontier (``frontier.Frontier.points``): one panel per measure,
    pruning (x) against no-impact (y); per family a line through its points in pruning order
    with Wilson 95% bars; Pareto points ringed in black, the Pareto set joined by a dashed step
    line. Points without scored cases are left out. Writes the PNG to ``path`` when given.
    """
    measures = list(dict.fromkeys(points["measure"].to_list())) if points.height else ["judge"]
    fig = Figure(figsize=(6.0 * len(measures) + 2.5, 5.0), dpi=dpi)
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(measures), squeeze=False)[0]
    families = list(dict.fromkeys(points["family"].to_list())) if points.height else []
    colors = {f: f"C{i % 10}" for i, f in enumerate(families)}
    xs_all = [x for x in (points["pruning_pct"].to_list() if points.height else []) if x == x]
    x_max = min(102.0, max([*xs_all, 0.0]) + 8.0) if xs_all else 102.0
    for ax, measure in zip(axes, measures, strict=True):
        mine = (
            points.filter(
                (pl.col("measure") == measure)
                & pl.col("no_impact_pct").is_not_nan()
                & pl.col("pruning_pct").is_not_nan()
            )
            if points.height
            else points
        )
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
                markersize=4,
                linewidth=1.2,
                label=f"{family} ({fam.height})",
            )
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
                label="Pareto set",
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
        ax.set_xlabel(x_label)
        ax.set_ylabel("no-impact, % of scored cases (Wilson 95% CI)")
        ax.set_xlim(-2, x_max)
        ax.set_ylim(-2, 105)
        ax.grid(True, alpha=0.3)
        ax.set_title((titles or {}).get(measure, measure), fontsize=10)
    if families:
        handles, labels = axes[-1].get_legend_handles_labels()
        for ax in axes[:-1]:
            for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
                if lab not in labels:
                    handles.append(h)
                    labels.append(lab)
        axes[-1].legend(
            handles,
            labels,
            loc="center left",
            bbox_to_anchor=(1.01, 0.5),
            fontsize=7,
            frameon=False,
        )
    return _png(fig, path)
