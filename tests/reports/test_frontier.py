"""The frontier section of a sweep's report, and the price of recovery.

Pure parts are checked by hand (Pareto set of six points, the leading point per level of a
hand-built frame, the recovery cost arithmetic); the report parts on a small sweep of the
synthetic corpus with a fold policy (self-gc folding everything, so no-impact leans on
recovery), gold labels included.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import polars as pl
import pytest

from ctxreplay.reports import build_report
from ctxreplay.reports.frontier import (
    LEVELS_SCHEMA,
    POINTS_SCHEMA,
    VERDICT_READ,
    build_frontier,
    collapse_levels,
    level_table,
    pareto_mask,
    pruning_column,
)
from ctxreplay.reports.recovery import (
    ARCHIVE_COSTS_SCHEMA,
    RECOVERY_SCHEMA,
    recovery_price,
    with_recovery_cost,
)
from ctxreplay.reports.render import render

FOLD = "self-gc:fold_min_tokens=50;short_tokens=10;commit_threshold=0"


# --- Pareto ---------------------------------------------------------------------------------


def test_pareto_set_of_six_points_by_hand() -> None:
    # (pruning, no-impact): P3 is beaten by P4 (same pruning, more no-impact), P4 by P5 (more
    # pruning, same no-impact), P6 by P4 and P5; P1, P2, P5 beat nobody's pair of coordinates
    x = [0.0, 10.0, 20.0, 20.0, 30.0, 15.0]
    y = [100.0, 90.0, 80.0, 85.0, 85.0, 85.0]
    assert pareto_mask(x, y) == [True, True, False, False, True, False]


def test_pareto_ties_and_missing_points() -> None:
    # two identical points dominate neither each other; a point without no-impact takes no part
    assert pareto_mask([50, 50, 40, 60], [50, 50, 50, math.nan]) == [True, True, False, False]
    assert pareto_mask([], []) == []


# --- levels ---------------------------------------------------------------------------------


def _hand_frames() -> tuple[pl.DataFrame, pl.DataFrame]:
    """Three families over ten shared cases; each point's no-impact matches its cases."""
    ok_cases = {
        "a1": 10,  # family A, pruning 5, no-impact 100
        "a2": 6,  # A, 25, 60
        "b1": 8,  # B, 15, 80
        "b2": 4,  # B, 35, 40
        "c1": 5,  # C, 0, 50
    }
    points = pl.DataFrame(
        {
            "policy": ["a1", "a2", "b1", "b2", "c1"],
            "family": ["A", "A", "B", "B", "C"],
            "pruning_pct": [5.0, 25.0, 15.0, 35.0, 0.0],
            "no_impact_pct": [100.0, 60.0, 80.0, 40.0, 50.0],
        }
    )
    scored = pl.DataFrame(
        [
            {"policy": p, "case_id": f"c{i}", "ok": i <= k}
            for p, k in ok_cases.items()
            for i in range(1, 11)
        ]
    )
    return points, scored


def test_leading_point_per_level_by_hand() -> None:
    points, scored = _hand_frames()
    table = level_table(points, scored, step=10.0)
    assert table.columns == list(LEVELS_SCHEMA)
    rows = table.to_dicts()
    by_level: dict[float, list[dict]] = {}
    for r in rows:
        by_level.setdefault(r["level_pct"], []).append(r)
    assert sorted(by_level) == [0.0, 10.0, 20.0, 30.0]  # up to the highest pruning, 35

    # ≥ 0: a1 leads; against B's best (b1) b = c9, c10; against C (c1) b = c6…c10
    zero = {r["family"]: r for r in by_level[0.0]}
    assert {r["leader"] for r in by_level[0.0]} == {"a1"}
    assert set(zero) == {"B", "C"}
    assert (zero["B"]["rival"], zero["B"]["b"], zero["B"]["c"]) == ("b1", 2, 0)
    assert zero["B"]["diff_pct"] == pytest.approx(20.0) and zero["B"]["n_shared"] == 10
    assert zero["B"]["p"] == pytest.approx(0.5)  # 2 · (1/2)^2
    assert (zero["C"]["rival"], zero["C"]["b"], zero["C"]["c"]) == ("c1", 5, 0)
    assert zero["C"]["p"] == pytest.approx(0.0625)  # 2 · (1/2)^5
    # Holm over the two: 2 · 0.0625 = 0.125; max(0.125, 1 · 0.5) = 0.5
    assert zero["C"]["p_holm"] == pytest.approx(0.125)
    assert zero["B"]["p_holm"] == pytest.approx(0.5)

    # ≥ 10: a1 (5 %) and c1 drop out; b1 leads against A's best left, a2
    (ten,) = by_level[10.0]
    assert (ten["leader"], ten["family"], ten["rival"]) == ("b1", "A", "a2")
    assert (ten["b"], ten["c"], ten["diff_pct"]) == (2, 0, pytest.approx(20.0))
    assert ten["p_holm"] == pytest.approx(ten["p"])  # one comparison

    # ≥ 20: a2 leads b2 by 20 points
    (twenty,) = by_level[20.0]
    assert (twenty["leader"], twenty["rival"], twenty["b"], twenty["c"]) == ("a2", "b2", 2, 0)
    # ≥ 30: only b2 is left, no other family reaches the level
    (thirty,) = by_level[30.0]
    assert thirty["leader"] == "b2" and thirty["family"] is None and thirty["rival"] is None


def test_level_ties_go_to_more_pruning_and_identical_levels_collapse() -> None:
    points = pl.DataFrame(
        {
            "policy": ["x1", "x2", "y1"],
            "family": ["X", "X", "Y"],
            "pruning_pct": [12.0, 31.0, 33.0],
            "no_impact_pct": [90.0, 90.0, 50.0],
        }
    )
    scored = pl.DataFrame(
        [
            {"policy": p, "case_id": f"c{i}", "ok": i <= k}
            for p, k in {"x1": 9, "x2": 9, "y1": 5}.items()
            for i in range(1, 11)
        ]
    )
    table = level_table(points, scored, step=10.0)
    assert set(table["leader"].to_list()) == {"x2"}  # x1 and x2 tie on no-impact: more pruning
    shown = collapse_levels(table)
    assert [r["_levels"] for r in shown] == ["≥ 0…30%"]
    assert level_table(points.head(0), scored).height == 0


def _priced_points() -> tuple[pl.DataFrame, pl.DataFrame]:
    """``_hand_frames`` as whole frontier points (``POINTS_SCHEMA``): a1's no-impact (100 %) leans
    on recovery, strictly 40 % with 1.5 recoveries per case; every other point pays nothing."""
    points, scored = _hand_frames()
    rows = []
    for r in points.to_dicts():
        strict, recoveries, via = r["no_impact_pct"], 0.0, 0.0
        if r["policy"] == "a1":
            strict, recoveries, via = 40.0, 1.5, 60.0
        rows.append(
            {
                **dict.fromkeys(POINTS_SCHEMA),
                **r,
                "measure": "judge",
                "judge": "flow",
                "setting": "--policy",
                "n": 10,
                "pareto": False,
                "recovery_pct": via,
                "leans_on_recovery": via > 0,
                "strict_no_impact_pct": strict,
                "recoveries_per_case": recoveries,
            }
        )
    return pl.DataFrame(rows, schema=POINTS_SCHEMA), scored


def test_each_level_names_its_leader_by_strict_no_impact_and_what_the_leader_pays() -> None:
    points, scored = _priced_points()
    table = level_table(points, scored, step=10.0)
    zero = table.filter(pl.col("level_pct") == 0.0).row(0, named=True)
    # a1 leads by no-impact (100 %), leaning on recovery; b1 leads strictly (80 % against 40 %)
    assert (zero["leader"], zero["leader_leans_on_recovery"]) == ("a1", True)
    assert (zero["leader_strict_no_impact_pct"], zero["leader_recoveries_per_case"]) == (40.0, 1.5)
    assert (zero["strict_leader"], zero["strict_leader_family"]) == ("b1", "B")
    assert zero["strict_leader_strict_no_impact_pct"] == zero["strict_leader_no_impact_pct"] == 80
    assert zero["strict_leader_leans_on_recovery"] is False
    # the rivals' price too
    assert set(table["rival_leans_on_recovery"].drop_nulls()) == {False}
    ten = table.filter(pl.col("level_pct") == 10.0).row(0, named=True)
    assert ten["leader"] == ten["strict_leader"] == "b1"
    # without the price in the points, the strict leader is empty
    assert level_table(*_hand_frames(), step=10.0)["strict_leader"].null_count() == 5


def test_the_level_tables_name_each_level_once_and_mark_a_pass_through_recovery() -> None:
    """A level has a row per other family; naming the level (and its leader) on each repeated
    ``≥ 0%`` (issue 28). The leaders have one line per level (and one for the strict leader);
    the comparisons name the level on its first line; a leader leaning on recovery is †."""
    from ctxreplay.reports.formatting import MARK_NOTE, fit_table
    from ctxreplay.reports.frontier import Frontier

    points, scored = _priced_points()
    frontier = Frontier(
        points=points,
        levels=level_table(points, scored, step=10.0),
        measures={"judge": "flow"},
        pruning_column="editable_pruning",
        sweep={},
    )
    _, leaders, rivals = frontier.displays()
    assert fit_table(leaders, 0) == [
        "level  best by           leader  prune %  no-impact %  strict no-impact %  recoveries/case",
        "─────  ────────────────  ──────  ───────  ───────────  ──────────────────  ───────────────",
        "≥ 0%   no-impact         a1         5.00     100.00 †               40.00             1.50",
        "       strict no-impact  b1        15.00      80.00                 80.00             0.00",
        "≥ 10%  no-impact         b1        15.00      80.00                 80.00             0.00",
        "       strict no-impact  b1        15.00      80.00                 80.00             0.00",
        "≥ 20%  no-impact         a2        25.00      60.00                 60.00             0.00",
        "       strict no-impact  a2        25.00      60.00                 60.00             0.00",
        "≥ 30%  no-impact         b2        35.00      40.00                 40.00             0.00",
        "       strict no-impact  b2        35.00      40.00                 40.00             0.00",
    ]
    assert leaders.footer[0] == MARK_NOTE
    assert fit_table(rivals, 0)[2:] == [
        "≥ 0%   B          b1                15.00        80.00               80.00  20.00        10"
        "  2  0      0.5       0.5",
        "       C          c1                 0.00        50.00               50.00  50.00        10"
        "  5  0   0.0625     0.125",
        "≥ 10%  A          a2                25.00        60.00               60.00  20.00        10"
        "  2  0      0.5       0.5",
        "≥ 20%  B          b2                35.00        40.00               40.00  20.00        10"
        "  2  0      0.5       0.5",
    ]
    for d in (leaders, rivals):
        named = [row[0] for row in d.rows if row[0]]
        assert len(named) == len(set(named)), d.title  # no level twice
    # split into column groups, each group repeats the level and the family compared with
    narrow = fit_table(rivals, 60)
    heads = [line for line in narrow if line.startswith("level")]
    assert len(heads) > 1 and all(h.startswith("level  vs family  ") for h in heads)
    assert sum(line.startswith("       C          ") for line in narrow) == len(heads)


# --- the price of recovery --------------------------------------------------------------------


def test_recovery_cost_arithmetic_by_hand() -> None:
    outcomes = pl.DataFrame(
        {
            "policy": ["P"] * 4,
            "case_id": ["k1", "k2", "k3", "k4"],
            "label": ["no_impact", "no_impact", "impact", "no_impact"],
            "recoverable": [3, 0, 1, 2],
            "view_tokens": [1000, 500, 800, 400],
        }
    )
    costs = pl.DataFrame(
        {
            "policy": ["P", "P"],
            "case_id": ["k1", "k3"],
            "visible_archives": [2, 3],
            "visible_payload_tokens": [600, 900],
        },
        schema=ARCHIVE_COSTS_SCHEMA,
    )
    rows = with_recovery_cost(outcomes, costs).sort("case_id")
    # k1: 3 recoverable, 2 visible archives → 2 recoveries of a 300-token payload, 2 × 1000 resent
    # k2: nothing; k3: 1 × 300 + 1 × 800; k4: no archive recorded → 2 recoveries, payload unknown
    assert rows["recoveries"].to_list() == [2, 0, 1, 2]
    assert rows["recovery_payload_tokens"].to_list() == [600.0, 0.0, 300.0, None]
    assert rows["recovery_request_tokens"].to_list() == [2000.0, 0.0, 800.0, 800.0]
    price = recovery_price(rows)
    assert price["strict_no_impact"] == 1  # k2 only: no loss and no recovery
    assert price["strict_no_impact_pct"] == pytest.approx(25.0)
    assert price["recoveries_per_case"] == pytest.approx(1.25)
    assert price["extra_requests_per_case"] == pytest.approx(1.25)
    assert price["recovery_payload_tokens_per_case"] == pytest.approx(300.0)  # known ones
    assert price["recovery_request_tokens_per_case"] == pytest.approx(900.0)
    assert price["recovery_tokens_per_case"] == pytest.approx(1200.0)
    assert set(price) == set(RECOVERY_SCHEMA)
    # without the per-case costs: recoverable counts as recoveries, tokens undefined
    bare = recovery_price(outcomes)
    assert bare["recoveries_per_case"] == pytest.approx(1.5)
    assert math.isnan(bare["recovery_tokens_per_case"])


# --- a sweep run ------------------------------------------------------------------------------


# the sweep run itself (``sweep_run``: tool-prune keep=1..2, the fold grid ``FOLD``, noop, gold
# labels) is a session fixture of conftest.py, shared with the HTML page's browser test


@pytest.fixture(scope="module")
def report(sweep_run: Path):
    return build_report(sweep_run, judge=None, bootstrap=200)


def _folded(report) -> str:
    return next(p for p in report.no_impact["policy"].to_list() if p.startswith("self-gc:"))


def test_no_impact_table_appends_the_recovery_price(report, sweep_run: Path) -> None:
    from ctxreplay.runs import Run

    table = report.no_impact
    assert table.columns[-len(RECOVERY_SCHEMA) :] == list(RECOVERY_SCHEMA)
    rows = {r["policy"]: r for r in table.to_dicts()}
    fold = rows[_folded(report)]
    assert fold["recoveries_per_case"] == pytest.approx(150 / 73)
    assert fold["recovery_tokens_per_case"] == pytest.approx(12565.407564391468)
    assert fold["extra_requests_per_case"] == fold["recoveries_per_case"]
    assert (fold["strict_no_impact_pct"], fold["no_impact_pct"]) == pytest.approx(
        (100 * 17 / 73, 100 * 62 / 73)
    )
    for plain in ("noop", "tool-prune:keep=1"):
        assert rows[plain]["recoveries_per_case"] == 0
        assert rows[plain]["strict_no_impact_pct"] == pytest.approx(rows[plain]["no_impact_pct"])

    # the same price recomputed from the run's own tables, case by case
    run = Run(sweep_run)
    label = _folded(report)
    verdicts = pl.read_parquet(sweep_run / "verdicts" / "flow-*" / "*.parquet").filter(
        pl.col("policy") == label
    )
    recoverable = dict(zip(verdicts["case_id"], verdicts["recoverable"], strict=True))
    tokens = {
        r["object_id"] + "@" + r["case_id"]: r["tokens_before"]
        for r in run.table("decisions", label).iter_rows(named=True)
    }
    view_tokens = dict(run.table("figures", label).select("case_id", "view_tokens").iter_rows())
    total = 0.0
    for v in run.table("views", label).iter_rows(named=True):
        visible = [a for a in v["archives"] or () if a["pointer_visible"]]
        need = recoverable.get(v["case_id"], 0) or 0
        n = min(need, len(visible)) if visible else need
        if n:
            payload = sum(tokens[a["object_id"] + "@" + v["case_id"]] for a in visible)
            total += n * payload / len(visible) + n * view_tokens[v["case_id"]]
    assert fold["recovery_tokens_per_case"] == pytest.approx(total / verdicts.height)


def test_frontier_points_pareto_and_basis(report) -> None:
    frontier = report.frontier
    assert frontier is not None
    assert list(frontier.measures) == ["judge", "gold", "gold_recovery"]
    assert frontier.measures["judge"] == "flow"
    points = frontier.points
    assert points.columns == list(POINTS_SCHEMA)
    judge = points.filter(pl.col("measure") == "judge")
    assert judge["family"].unique(maintain_order=True).to_list() == [
        "tool-prune",
        "self-gc",
        "noop",
    ]
    for fam in ("tool-prune", "self-gc"):
        prune = judge.filter(pl.col("family") == fam)["pruning_pct"].to_list()
        assert prune == sorted(prune)
    expected = pareto_mask(judge["pruning_pct"].to_list(), judge["no_impact_pct"].to_list())
    assert judge["pareto"].to_list() == expected
    assert judge.filter(pl.col("policy") == "noop")["setting"].to_list() == ["--policy"]
    assert set(judge.filter(pl.col("family") == "tool-prune")["setting"]) == {
        "defaults",
        "keep=1",
        "keep=2",
    }
    # pruning is the figures' editable pruning when the run has it, else the plain rate
    assert frontier.pruning_column in ("editable_pruning", "pruning_rate")
    assert frontier.pruning_column in frontier.pruning_basis
    assert report.meta["sweep"]["pruning_column"] == frontier.pruning_column
    from ctxreplay.runs import Run

    figures = Run(report.run).table("figures", "tool-prune:keep=1")
    keep1 = judge.filter(pl.col("policy") == "tool-prune:keep=1").row(0, named=True)
    assert keep1["pruning_pct"] == pytest.approx(100 * figures[frontier.pruning_column].mean())
    # Wilson interval around the point
    assert keep1["wilson_lo"] <= keep1["no_impact_pct"] <= keep1["wilson_hi"]


def test_gold_frontier_strict_and_with_recovery(report) -> None:
    points = report.frontier.points
    fold = _folded(report)

    def of(measure: str) -> dict:
        return points.filter((pl.col("measure") == measure) & (pl.col("policy") == fold)).row(
            0, named=True
        )

    strict, recovery = of("gold"), of("gold_recovery")
    assert strict["n"] == recovery["n"] == 20  # the labelled cases only
    # recovery brings folds back
    assert (strict["no_impact_pct"], recovery["no_impact_pct"]) == (20.0, 100.0)
    assert (strict["recoveries_per_case"], recovery["recoveries_per_case"]) == (0, 0.8)
    assert recovery["strict_no_impact_pct"] == pytest.approx(strict["no_impact_pct"])
    levels = report.frontier.levels
    assert set(levels["measure"]) == {"judge", "gold", "gold_recovery"}


def test_the_frontier_from_its_few_verdict_columns_is_the_frontier_from_every_column(
    report, sweep_run: Path
) -> None:
    """The report reads only ``VERDICT_READ`` of the run's verdicts for the frontier (a sweep's
    losses and explanations are never held): every measure's points and levels are those built
    from every column of every verdict."""
    from ctxreplay.reports.recovery import archive_costs
    from ctxreplay.reports.tables import outcomes
    from ctxreplay.runs import Run, read_verdicts, sweep_of

    run = Run(sweep_run)
    every = read_verdicts(sweep_run)
    assert {"losses", "explanation"} <= set(every.columns) and every.height
    few = read_verdicts(sweep_run, columns=VERDICT_READ)
    assert few.columns == VERDICT_READ
    figures, costs = run.table("figures"), archive_costs(run)
    rows = with_recovery_cost(outcomes(run, "flow", every, figures=figures), costs)
    sweep = sweep_of(run.manifest)

    def frontier(verdicts: pl.DataFrame):
        return build_frontier(run, sweep, rows, "flow", verdicts, costs=costs, figures=figures)

    whole, read = frontier(every), frontier(few)
    assert set(whole.measures) == {"judge", "gold", "gold_recovery"}
    assert read.measures == whole.measures
    assert read.points.equals(whole.points) and read.levels.equals(whole.levels)
    assert report.frontier.points.equals(whole.points)


def test_pruning_column_falls_back_without_editable_pruning() -> None:
    plain = pl.DataFrame({"pruning_rate": [0.1, 0.2]})
    assert pruning_column(plain) == "pruning_rate"
    partly = plain.with_columns(pl.Series("editable_pruning", [0.3, None]))
    assert pruning_column(partly) == "pruning_rate"
    assert pruning_column(partly.with_columns(pl.lit(0.5).alias("editable_pruning"))) == (
        "editable_pruning"
    )


# --- rendering --------------------------------------------------------------------------------

HEADINGS = (
    "Frontier (judge flow): points by family",
    "Frontier (judge flow): the leading point per pruning level",
    "Frontier (gold labels, strict): points by family",
    "Frontier (gold labels, with recovery): the leading point per pruning level",
)


def test_every_format_has_the_frontier(report, tmp_path: Path) -> None:
    terminal = render(report, "terminal", width=0)  # one line per row
    markdown = render(report, "markdown")
    html = render(report, "html")
    for text in (terminal, markdown, html):
        for heading in HEADINGS:
            assert heading in text, heading
        assert "strict no-impact %" in text and "Recovery price:" in text
    assert "## Frontier (judge flow): points by family" in markdown
    # strict no-impact and recoveries per case beside no-impact (padded where the fold's is †)
    assert (
        "noop        noop                                                     73     0.00     "
        "100.00                100.00             0.00  [95.00, 100.00]  ★       [95.00, 100.00]"
        "                 0.00                     0"
    ) in terminal.splitlines()
    # noop is on the Pareto set of the judge's points and of the strict gold labels' points
    noop_rows = [line for line in markdown.splitlines() if line.startswith("| noop | noop |")]
    assert [line for line in noop_rows if "★" in line] == [
        "| noop | noop | 73 | 0.00 | 100.00 | 100.00 | 0.00 | [95.00, 100.00] | ★ "
        "| [95.00, 100.00] | 0.00 | 0 |",
        "| noop | noop | 20 | 0.00 | 100.00 | [83.89, 100.00] | ★ |",
    ]
    assert 'id="frontier"' in html and html.count("data:image/png;base64,") == 2
    # the frontier sits right after the no-impact table
    assert terminal.index("No-impact and pruning") < terminal.index(HEADINGS[0])
    assert terminal.index(HEADINGS[0]) < terminal.index("Paired comparisons")

    csv_text = render(report, "csv")
    assert "# frontier\n" in csv_text and "# frontier_levels\n" in csv_text
    doc = json.loads(render(report, "json"))
    assert {"frontier", "frontier_levels"} <= set(doc["tables"])
    assert doc["meta"]["sweep"]["families"] == ["tool-prune", "self-gc", "noop"]
    assert doc["meta"]["sweep"]["grids"] == ["tool-prune:keep=1..2", FOLD]
    assert "one extra request" in doc["meta"]["sweep"]["recovery_price"]
    pareto = [r for r in doc["tables"]["frontier"] if r["pareto"]]
    assert pareto and all(r["measure"] in ("judge", "gold", "gold_recovery") for r in pareto)

    folder = tmp_path / "csv"
    written = {p.name for p in report.save(folder, "csv")}
    assert {"frontier.csv", "frontier_levels.csv", "frontier.png", "no_impact.csv"} <= written
    rows = list(csv.reader(io.StringIO((folder / "frontier.csv").read_text())))
    assert rows[0] == list(POINTS_SCHEMA)
    md = tmp_path / "report.md"
    written = {p.name for p in report.save(md)}
    assert written == {"report.md", "report.png", "report-frontier.png"}
    assert "(report-frontier.png)" in md.read_text()
    png = (tmp_path / "report-frontier.png").read_bytes()
    assert png.startswith(b"\x89PNG")


def test_frontier_plot_png(report, tmp_path: Path) -> None:
    from ctxreplay.reports.plot import frontier_plot

    path = tmp_path / "f.png"
    data = report.frontier.plot(path)
    assert data.startswith(b"\x89PNG") and path.read_bytes() == data
    # an empty frontier still draws
    assert frontier_plot(pl.DataFrame(schema=POINTS_SCHEMA)).startswith(b"\x89PNG")


def test_a_run_that_is_not_a_sweep_has_no_frontier(small_run: Path) -> None:
    r = build_report(small_run, judge="flow", bootstrap=50)
    assert r.frontier is None
    assert "frontier" not in r.tables() and "sweep" not in r.meta
    assert "Frontier" not in render(r, "terminal")
    assert r.no_impact.columns[-len(RECOVERY_SCHEMA) :] == list(RECOVERY_SCHEMA)
