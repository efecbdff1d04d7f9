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
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    data = buf.getvalue()
    if path is not None:
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
    return data
