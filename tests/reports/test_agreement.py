"""Several judges on one run: Cohen's kappa against hand-computed values, the report's judge
tables, and ``audit --disagreements`` listing exactly the pairs where the judges differ.

The run is a copy of the small judged run (flow verdicts) with a second judge, ``probe``, whose
verdicts are the flow judge's with chosen pairs flipped and one made unscored: so every count of
the agreement is known.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from ctxreplay.cli import main
from ctxreplay.engines.calibrate import compare
from ctxreplay.reports import build_report
from ctxreplay.reports.stats import agreement, cohen_kappa
from ctxreplay.reports.tables import ReportError, disagreements
from ctxreplay.runs import read_verdicts, slug
from ctxreplay.schema import VERDICTS

# --- kappa ----------------------------------------------------------------------------------


def test_kappa_of_a_hand_computed_table() -> None:
    # A yes 12 (10 with B), B yes 13: p_o = 15/20 = .75; p_e = .6·.65 + .4·.35 = .53;
    # kappa = (.75 − .53) / (1 − .53) = .22/.47
    k = cohen_kappa([[10, 2], [3, 5]])
    assert (k.n, k.agree, k.agreement) == (20, 15, 0.75)
    assert k.kappa == pytest.approx(0.22 / 0.47)
    assert k.low < k.kappa < k.high
    assert k.table == ((10, 2), (3, 5))
    a = [True] * 12 + [False] * 8
    b = [True] * 10 + [False] * 2 + [True] * 3 + [False] * 5
    same = agreement(a, b)
    assert same.table == ((10, 2), (3, 5)) and same.kappa == pytest.approx(k.kappa)


def test_kappa_is_undefined_when_each_judge_gives_one_label_only() -> None:
    k = cohen_kappa([[7, 0], [0, 0]])
    assert k.agreement == 1.0 and math.isnan(k.kappa) and math.isnan(k.low)
    assert math.isnan(cohen_kappa([[0, 0], [0, 0]]).agreement)
    assert cohen_kappa([[4, 0], [0, 6]]).kappa == pytest.approx(1.0)
    with pytest.raises(ValueError, match="2x2"):
        cohen_kappa([[1, 2, 3]])


def test_calibration_uses_the_same_kappa() -> None:
    def frame(labels: list[str]) -> pl.DataFrame:
        return pl.DataFrame(
            {
                "policy": ["p"] * len(labels),
                "case_id": [f"c{i}" for i in range(len(labels))],
                "label": labels,
                "losses": [[] for _ in labels],
            },
            schema_overrides={"losses": pl.List(pl.Struct({"category": pl.String}))},
        )

    judge = ["impact"] * 10 + ["no_impact"] * 2 + ["impact"] * 3 + ["no_impact"] * 5
    ref = ["impact"] * 12 + ["no_impact"] * 8
    c = compare(frame(judge), frame(ref), "a", "b")
    assert c.kappa == pytest.approx(cohen_kappa([[10, 2], [3, 5]]).kappa)


# --- a run with two judges --------------------------------------------------------------------

#: flow verdicts flipped for probe: (policy, index in that policy's sorted cases)
FLIPPED = [("tool-prune", 0), ("tool-prune", 4), ("self-gc", 1)]
UNSCORED = ("noop", 2)


@pytest.fixture(scope="module")
def two_judges(small_run: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    run = tmp_path_factory.mktemp("agreement") / "run"
    shutil.copytree(small_run, run)
    shutil.rmtree(run / "verdicts" / slug("edited"))
    single = run.parent / "single"
    shutil.copytree(run, single)
    flow = read_verdicts(run, "flow").sort(["policy", "case_id"])
    cases = {p: flow.filter(pl.col("policy") == p)["case_id"].to_list() for p in flow["policy"]}
    flipped = {(p, cases[p][i]) for p, i in FLIPPED}
    unscored = (UNSCORED[0], cases[UNSCORED[0]][UNSCORED[1]])
    rows = flow.with_columns(
        pl.lit("probe").alias("judge"), pl.lit("probe").alias("judge_name")
    ).to_dicts()
    for row in rows:
        key = (row["policy"], row["case_id"])
        if key in flipped:
            row["label"] = "no_impact" if row["label"] == "impact" else "impact"
            row["explanation"] = "probe: flipped for the test"
        elif key == unscored:
            row.update(label="unscored", explanation=None, unscored_reason="model call failed")
    folder = run / "verdicts" / slug("probe")
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=VERDICTS), folder / "part-0.parquet")
    return {"run": run, "flow": flow, "probe": pl.DataFrame(rows), "flipped": flipped,
            "unscored": unscored, "single": single}  # fmt: skip


def expected_agreement(fx: dict) -> tuple[int, int, int, int]:
    """(both impact, flow impact only, probe impact only, both no_impact) over the pairs both
    scored, counted from the frames."""
    both = fx["flow"].join(fx["probe"], on=["policy", "case_id"], suffix="_p")
    both = both.filter(pl.col("label_p") != "unscored")
    f, p = both["label"] == "impact", both["label_p"] == "impact"
    return int((f & p).sum()), int((f & ~p).sum()), int((~f & p).sum()), int((~f & ~p).sum())


def test_the_report_shows_each_judge_and_their_kappa(two_judges: dict) -> None:
    report = build_report(two_judges["run"], judge="flow", bootstrap=50)
    tt, tf, ft, ff = expected_agreement(two_judges)
    n = tt + tf + ft + ff
    assert tf + ft == len(FLIPPED) and n == two_judges["flow"].height - 1
    row = report.agreement.row(0, named=True)
    assert (row["judge_a"], row["judge_b"], row["n"]) == ("flow", "probe", n)
    assert (row["both_impact"], row["a_impact_only"], row["b_impact_only"]) == (tt, tf, ft)
    p_o = (tt + ff) / n
    p_e = ((tt + tf) * (tt + ft) + (ft + ff) * (tf + ff)) / n**2
    assert row["agreement_pct"] == pytest.approx(100 * p_o)
    assert row["kappa"] == pytest.approx((p_o - p_e) / (1 - p_e))
    # probe's verdicts beside flow's, per policy
    judges = report.judges
    assert set(judges["judge"]) == {"flow", "probe"}
    noop = judges.filter(pl.col("policy") == "noop")
    assert dict(zip(noop["judge"], noop["unscored"], strict=True)) == {"flow": 0, "probe": 1}
    text = report.render("terminal", width=0)
    assert "No-impact by judge" in text and "Judge agreement" in text
    assert f"{row['kappa']:.3f}" in text and "--disagreements" in text
    doc = json.loads(report.render("json"))
    assert doc["tables"]["agreement"][0]["n"] == n
    assert "Judge agreement" in report.render("markdown")
    assert "judge A" in report.render("html")


def test_a_run_with_one_judge_has_no_judge_tables(two_judges: dict) -> None:
    report = build_report(two_judges["single"], bootstrap=50)
    assert report.agreement.height == 0 and report.judges.height == 0
    assert "agreement" not in report.tables() and "judges" not in report.tables()
    assert "Judge agreement" not in report.render("terminal", width=0)
    out = CliRunner().invoke(main, ["audit", str(two_judges["single"]), "--disagreements"])
    assert out.exit_code == 2 and "this run has: flow" in out.output


def test_judges_that_agree_wherever_both_scored_have_kappa_one(report) -> None:
    """The shared small run: ``edited`` is flow with some pairs unscored or left out."""
    row = report.agreement.row(0, named=True)
    assert (row["judge_a"], row["judge_b"]) == ("edited", "flow")
    assert row["agreement_pct"] == 100.0 and row["kappa"] == pytest.approx(1.0)
    assert row["n"] == report.judges.filter(pl.col("judge") == "edited")["n"].sum()


def test_audit_disagreements_lists_exactly_the_flipped_pairs(two_judges: dict) -> None:
    run = two_judges["run"]
    frame = disagreements(run)
    pairs = set(frame.select("policy", "case_id").unique().iter_rows())
    assert pairs == two_judges["flipped"]
    assert frame.height == 2 * len(pairs)  # one row per judge of each pair
    first = frame.row(0, named=True)
    assert first["show"].startswith("ctxreplay show ") and first["case_id"] in first["show"]
    probe = frame.filter(pl.col("judge") == "probe")
    assert set(probe["reason"]) == {"probe: flipped for the test"}
    only = disagreements(run, ["flow", "probe"], policy="tool-prune")
    assert {p for p, _ in only.select("policy", "case_id").iter_rows()} == {"tool-prune"}
    out = CliRunner().invoke(
        main, ["audit", str(run), "--disagreements", "--judges", "flow,probe", "--max-rows", "2"]
    )
    assert out.exit_code == 0, out.output
    assert out.output.startswith(f"{len(pairs)} (case, policy) pairs where the judges disagree")
    assert out.output.count("$ ctxreplay show") == 2 and "1 more (--max-rows)" in out.output
    with pytest.raises(ReportError, match="two judges"):
        disagreements(run, ["flow"])
    bad = CliRunner().invoke(main, ["audit", str(run), "--judges", "flow"])
    assert bad.exit_code == 2 and "--disagreements" in bad.output
