"""The trade-off and frontier plots: the x axis fits the data, every point is named next to it,
coincident policies are named together, labels never overlap, and a no-impact that leans on
recovery shows its strict figure beside it.

The figures are read back from matplotlib (axis limits, texts and their extents from the Agg
renderer, the drawn markers), so what is checked is what the PNG shows.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from matplotlib.figure import Figure
from matplotlib.text import Text

from ctxreplay.reports.frontier import POINTS_SCHEMA
from ctxreplay.reports.plot import (
    STRICT_LEGEND,
    Box,
    coincident,
    frontier_figure,
    place_labels,
    tradeoff_figure,
    tradeoff_plot,
    x_upper,
)
from ctxreplay.reports.tables import NO_IMPACT_SCHEMA

PNG = b"\x89PNG\r\n\x1a\n"


def _table(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """A no-impact table of hand-written rows (other columns NaN or 0)."""
    full = []
    for r in rows:
        x, y = r["pruning_pct"], r["no_impact_pct"]
        full.append(
            {
                "n": 40,
                "pruning_lo": x - 3,
                "pruning_hi": x + 3,
                "wilson_lo": max(0.0, y - 8),
                "wilson_hi": min(100.0, y + 5),
                "strict_no_impact_pct": y,
                "recovery_pct": 0.0,
                **r,
            }
        )
    schema = {**NO_IMPACT_SCHEMA, "strict_no_impact_pct": pl.Float64}
    frame = pl.DataFrame(full, schema={k: v for k, v in schema.items() if k in full[0]})
    return frame


def _labels(fig: Figure) -> list[Text]:
    """The point labels of a figure (axes texts; titles and tick labels are not among them)."""
    return [t for ax in fig.axes for t in ax.texts if t.get_text()]


def _extents(fig: Figure, texts: list[Text]) -> list[Any]:
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    return [t.get_window_extent(renderer) for t in texts]


def _no_overlaps(fig: Figure) -> None:
    texts = _labels(fig)
    boxes = _extents(fig, texts)
    for (ta, a), (tb, b) in itertools.combinations(zip(texts, boxes, strict=True), 2):
        w = min(a.x1, b.x1) - max(a.x0, b.x0)
        h = min(a.y1, b.y1) - max(a.y0, b.y0)
        assert w <= 0 or h <= 0, f"labels overlap: {ta.get_text()!r} and {tb.get_text()!r}"
    for t, box in zip(texts, boxes, strict=True):
        area = t.axes.get_window_extent()
        assert area.x0 <= box.x0 and box.x1 <= area.x1, t.get_text()
        assert area.y0 <= box.y0 and box.y1 <= area.y1, t.get_text()


# --- pure layout --------------------------------------------------------------------------------


def test_x_upper_is_a_margin_past_the_data() -> None:
    assert x_upper([10.0, 55.0]) == 65.0  # not 100: the data stop at 55
    assert x_upper([40.0, 61.2, float("nan")]) == 70.0
    assert x_upper([99.0]) == 102.0  # a share never passes 100 % (+ room for the marker)
    assert x_upper([]) == 102.0
    assert x_upper([0.0]) == 5.0


def test_coincident_groups_points_within_the_radius() -> None:
    assert coincident([(0, 0), (10, 0), (0.5, 0.5), (10, 0.9), (30, 30)], 1.0) == [
        [0, 2],
        [1, 3],
        [4],
    ]
    assert coincident([], 1.0) == []


def test_place_labels_avoids_labels_obstacles_and_bounds() -> None:
    bounds = Box(0, 0, 400, 300)
    anchors = [(100.0, 100.0)] * 5 + [(395.0, 150.0)]  # five on one spot, one at the right edge
    sizes = [(60.0, 12.0)] * 6
    marker = Box.around(100, 100, 5)
    boxes = place_labels(anchors, sizes, [marker], bounds, gap=7)
    assert all(b is not None for b in boxes)
    placed = [b for b in boxes if b is not None]
    for a, b in itertools.combinations(placed, 2):
        assert a.overlap(b) == 0
    for b in placed:
        assert b.within(bounds) and b.overlap(marker) == 0
    assert placed[-1].x1 <= 395.0  # no room on the right: the label goes left
    assert placed[0].x0 == pytest.approx(107.0)  # the nearest spot: right of the point
    # an optional label with no free spot is left out; a required one still placed
    tight = Box(0, 0, 100, 20)
    out = place_labels(
        [(35.0, 10.0)] * 2, [(60.0, 12.0)] * 2, [], tight, gap=2, required=[True, False]
    )
    assert out[0] is not None and out[1] is None


# --- the trade-off plot ---------------------------------------------------------------------------


def test_tradeoff_x_axis_tracks_the_data(report) -> None:
    fig = tradeoff_figure(report.no_impact)
    lo, hi = fig.axes[0].get_xlim()
    top = max(report.no_impact["pruning_hi"].max(), report.no_impact["pruning_pct"].max())
    assert top < hi < 100  # the run's data stop well short of 100 %
    assert hi <= top + 15
    assert lo < 0


def test_every_policy_is_named_next_to_its_point(report) -> None:
    fig = tradeoff_figure(report.no_impact)
    texts = [t.get_text() for t in _labels(fig)]
    assert sorted(texts) == sorted(report.no_impact["policy"].to_list())
    assert not any(t.strip().isdigit() for t in texts)  # no numbers standing for names
    assert fig.axes[0].get_legend() is not None  # the legend explains symbols, not points
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert not any(p in legend for p in report.no_impact["policy"].to_list())
    _no_overlaps(fig)


def test_coincident_policies_are_drawn_once_and_named_together() -> None:
    table = _table(
        [
            {"policy": "twin-a", "pruning_pct": 30.0, "no_impact_pct": 70.0},
            {"policy": "twin-b", "pruning_pct": 30.0, "no_impact_pct": 70.0},
            {"policy": "other", "pruning_pct": 45.0, "no_impact_pct": 40.0},
        ]
    )
    fig = tradeoff_figure(table)
    texts = [t.get_text() for t in _labels(fig)]
    assert "other" in texts
    [twins] = [t for t in texts if "twin-a" in t]
    assert "twin-b" in twins  # one label names both, so neither hides the other
    ax = fig.axes[0]
    at_twins = [
        line
        for line in ax.get_lines()
        if line.get_marker() == "o" and list(line.get_xdata()) == [30.0]
    ]
    assert len(at_twins) == 1  # one marker for the shared spot


def test_labels_of_a_crowded_plot_do_not_overlap() -> None:
    rows = [
        {"policy": f"policy-{i}", "pruning_pct": 40.0 + (i % 3) * 0.8, "no_impact_pct": 60 + i}
        for i in range(9)
    ]
    rows += [
        {"policy": "tool-prune:keep=1", "pruning_pct": 72.0, "no_impact_pct": 16.0},
        {"policy": "tool-prune:keep=2", "pruning_pct": 70.5, "no_impact_pct": 18.5},
        {"policy": "noop", "pruning_pct": 0.0, "no_impact_pct": 100.0},
    ]
    fig = tradeoff_figure(_table(rows))
    texts = [t.get_text() for t in _labels(fig)]
    for r in rows:
        assert any(r["policy"] in t.split("\n") for t in texts), r["policy"]
    _no_overlaps(fig)


def test_strict_no_impact_beside_a_no_impact_that_leans_on_recovery() -> None:
    table = _table(
        [
            {"policy": "fold", "pruning_pct": 50.0, "no_impact_pct": 90.0},
            {"policy": "prune", "pruning_pct": 60.0, "no_impact_pct": 30.0},
        ]
    ).with_columns(
        strict_no_impact_pct=pl.Series([55.0, 30.0]), recovery_pct=pl.Series([35.0, 0.0])
    )
    fig = tradeoff_figure(table)
    ax = fig.axes[0]
    hollow = [
        line
        for line in ax.get_lines()
        if line.get_marker() == "o" and line.get_markerfacecolor() in ("white", (1, 1, 1, 1))
    ]
    assert [(list(h.get_xdata()), list(h.get_ydata())) for h in hollow] == [([50.0], [55.0])]
    joins = [line for line in ax.get_lines() if line.get_linestyle() == ":"]
    assert [list(j.get_ydata()) for j in joins] == [[55.0, 90.0]]  # strict joined to its point
    assert STRICT_LEGEND in [t.get_text() for t in ax.get_legend().get_texts()]
    # no policy leans on recovery: no hollow marker and no legend entry for it
    plain = tradeoff_figure(table.with_columns(strict_no_impact_pct=pl.col("no_impact_pct")))
    assert STRICT_LEGEND not in [t.get_text() for t in plain.axes[0].get_legend().get_texts()]


def test_tradeoff_plot_png_is_the_figure(report, tmp_path: Path) -> None:
    data = tradeoff_plot(report.no_impact, tmp_path / "t.png")
    assert data.startswith(PNG) and (tmp_path / "t.png").read_bytes() == data
    assert tradeoff_plot(report.no_impact) == data  # label placement is deterministic


# --- the frontier plot ----------------------------------------------------------------------------


def _points(rows: list[dict[str, Any]]) -> pl.DataFrame:
    full = []
    for r in rows:
        y = r["no_impact_pct"]
        full.append(
            {
                "measure": "judge",
                "judge": "flow",
                "default": False,
                "cases": 40,
                "unscored": 0,
                "n": 40,
                "no_impact": 0,
                "wilson_lo": max(0.0, y - 8),
                "wilson_hi": min(100.0, y + 5),
                "recovery_pct": 0.0,
                "strict_no_impact_pct": y,
                **r,
            }
        )
    return pl.DataFrame(full, schema={k: POINTS_SCHEMA[k] for k in full[0]})


def test_frontier_points_are_named_by_their_setting() -> None:
    def point(family: str, setting: str, x: float, y: float, pareto: bool, **more: Any):
        label = family if setting == "defaults" else f"{family}:{setting}"
        return {
            "family": family,
            "policy": label,
            "setting": setting,
            "pruning_pct": x,
            "no_impact_pct": y,
            "pareto": pareto,
            **more,
        }

    rows = [
        point("tool-prune", "defaults", 53.0, 27.0, False),
        point("tool-prune", "keep=2", 65.0, 20.5, True),
        point("tool-prune", "keep=1", 76.0, 16.0, True),
        point("tool-prune", "keep=3", 58.0, 24.0, False),
        point(
            "self-gc",
            "commit_threshold=0, fold_min_tokens=50, short_tokens=10",
            61.0,
            83.5,
            True,
            strict_no_impact_pct=20.5,
            recovery_pct=63.0,
        ),
        point("self-gc", "defaults", 49.0, 90.4, True),
        {**point("noop", "--policy", 0.0, 100.0, True), "policy": "noop"},
    ]
    fig = frontier_figure(_points(rows), titles={"judge": "judge flow"})
    ax = fig.axes[0]
    texts = [t.get_text() for t in _labels(fig)]
    # Pareto points and the two ends of each family always; their settings, not numbers
    for wanted in ("keep=2", "keep=1", "defaults", "noop"):
        assert wanted in texts, wanted
    assert "commit_threshold=0\nfold_min_tokens=50\nshort_tokens=10" in texts
    assert texts.count("defaults") == 2  # tool-prune's (a family end) and self-gc's
    _no_overlaps(fig)
    assert 76.0 < ax.get_xlim()[1] < 100
    hollow = [
        line
        for line in ax.get_lines()
        if line.get_marker() == "o" and line.get_markerfacecolor() in ("white", (1, 1, 1, 1))
    ]
    assert [(list(h.get_xdata()), list(h.get_ydata())) for h in hollow] == [([61.0], [20.5])]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert STRICT_LEGEND in legend and "Pareto set" in legend


def test_the_sweep_frontier_plot_names_its_points(sweep_run: Path) -> None:
    from ctxreplay.reports import build_report

    report = build_report(sweep_run, judge=None, bootstrap=50)
    frontier = report.frontier
    assert frontier is not None
    fig = frontier_figure(frontier.points, titles={m: frontier.title(m) for m in frontier.measures})
    panels = [ax for ax in fig.axes if ax.axison]
    assert len(panels) == len(frontier.measures) == 3
    for ax, measure in zip(panels, frontier.measures, strict=True):
        texts = [line for t in ax.texts for line in t.get_text().split("\n")]
        pts = frontier.points.filter(pl.col("measure") == measure)
        for r in pts.filter(pl.col("pareto")).iter_rows(named=True):
            name = r["policy"] if r["setting"] == "--policy" else r["setting"].split(", ")[0]
            assert name in texts, (measure, name)
        assert ax.get_xlim()[1] < 100
    _no_overlaps(fig)
