"""Report tables on a small judged run (see conftest.small_run)."""

from __future__ import annotations

import html
import json
import shlex
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from ctxreplay.reports import ReportError, audit, build_report, show_command, wilson
from ctxreplay.reports.tables import commit_kind, cost_table
from ctxreplay.runs import Run, read_verdicts
from ctxreplay.schema import CATEGORIES
from ctxreplay.tariffs import Tariff

from judged_run import DROPPED, POLICIES, UNSCORED


@pytest.fixture(scope="module")
def edited(small_run: Path):
    return build_report(small_run, judge="edited", bootstrap=300)


def _row(frame: pl.DataFrame, policy: str) -> dict:
    return frame.filter(pl.col("policy") == policy).row(0, named=True)


def test_noop_prunes_nothing_and_keeps_every_dependency(report):
    noop = _row(report.no_impact, "noop")
    assert noop["pruning_pct"] == 0.0
    assert noop["pruning_lo"] == noop["pruning_hi"] == 0.0
    assert noop["no_impact_pct"] == 100.0
    assert noop["boot_lo"] == noop["boot_hi"] == 100.0
    assert (noop["n"], noop["cases"]) == (44, 44)


def test_no_impact_table_matches_figures_and_verdicts(report, small_run: Path):
    run = Run(small_run)
    verdicts = read_verdicts(small_run, "flow")
    assert report.no_impact["policy"].to_list() == sorted(POLICIES)
    for policy in POLICIES:
        row = _row(report.no_impact, policy)
        figures = run.table("figures", policy)
        mine = verdicts.filter(pl.col("policy") == policy)
        k = int((mine["label"] == "no_impact").sum())
        assert row["cases"] == figures.height
        assert row["pruning_pct"] == pytest.approx(100 * figures["pruning_rate"].mean())
        assert (row["no_impact"], row["n"], row["unscored"]) == (k, mine.height, 0)
        w = wilson(k, mine.height)
        assert (row["wilson_lo"], row["wilson_hi"]) == pytest.approx((100 * w.low, 100 * w.high))
        assert row["boot_lo"] <= row["no_impact_pct"] <= row["boot_hi"]
        assert row["pruning_lo"] <= row["pruning_pct"] <= row["pruning_hi"]
    prune = _row(report.no_impact, "tool-prune")
    assert prune["pruning_pct"] > 0 and prune["no_impact_pct"] < 100


def test_unscored_cases_leave_the_denominator_and_are_counted(report, edited):
    before = _row(report.no_impact, "tool-prune")
    after = _row(edited.no_impact, "tool-prune")
    assert after["unscored"] == UNSCORED
    assert after["not_judged"] == DROPPED
    assert after["cases"] == before["cases"]
    assert after["n"] == before["n"] - UNSCORED - DROPPED
    assert after["n"] + after["unscored"] + after["not_judged"] == after["cases"]
    w = wilson(after["no_impact"], after["n"])
    assert after["wilson_lo"] == pytest.approx(100 * w.low)
    assert _row(edited.no_impact, "noop") == {**_row(report.no_impact, "noop")}
    assert any("no verdict" in n for n in edited.notes)
    tax = edited.taxonomy.filter(pl.col("policy") == "tool-prune")
    assert set(tax["n"].to_list()) == {after["n"]}


def test_bootstrap_is_reproducible_for_a_seed(small_run: Path, report):
    again = build_report(small_run, bootstrap=200)  # as the shared report
    assert again.no_impact.equals(report.no_impact)
    assert again.paired.equals(report.paired)


def test_paired_comparisons_against_the_best_policy(report, small_run: Path):
    # the default reference is the best no-impact among the policies that prune at least 10%
    # (noop keeps every dependency trivially); ties go to the one that prunes more
    pruning = report.no_impact.filter(pl.col("pruning_pct") >= 10)
    best = pruning.sort(["no_impact_pct", "pruning_pct"], descending=[True, True])["policy"][0]
    assert best != "noop"
    assert report.reference == best
    assert "pruning at least 10%" in report.meta["reference_chosen"]
    assert set(report.paired["policy"].to_list()) == set(POLICIES) - {best}
    verdicts = read_verdicts(small_run, "flow")
    ok = {
        (r["policy"], r["case_id"]): r["label"] == "no_impact"
        for r in verdicts.iter_rows(named=True)
    }
    for row in report.paired.iter_rows(named=True):
        cases = [c for (p, c) in ok if p == row["policy"]]
        b = sum(ok[(row["policy"], c)] and not ok[(best, c)] for c in cases)
        c_ = sum(not ok[(row["policy"], c)] and ok[(best, c)] for c in cases)
        assert (row["n_paired"], row["b"], row["c"]) == (len(cases), b, c_)
        assert row["diff_pct"] == pytest.approx(100 * (b - c_) / len(cases))
        assert row["diff_lo"] <= row["diff_pct"] <= row["diff_hi"]
        assert row["test"] == ("exact" if b + c_ < 25 else "chi2-cc")
        assert row["p_holm"] >= row["p"] - 1e-15
    worse = _row(report.paired, "tool-prune")
    assert worse["c"] > worse["b"] and worse["diff_pct"] < 0


def test_paired_against_a_given_reference(small_run: Path):
    r = build_report(small_run, reference="noop", bootstrap=200)
    assert r.reference == "noop"
    assert set(r.paired["policy"].to_list()) == {"tool-prune", "self-gc"}
    assert (r.paired["reference"] == "noop").all()


def test_taxonomy_counts_and_rates(report, small_run: Path):
    tax = report.taxonomy
    assert set(tax["category"].to_list()) >= set(CATEGORIES)
    assert tax.height == len(POLICIES) * tax["category"].n_unique()
    verdicts = read_verdicts(small_run, "flow")
    for row in tax.iter_rows(named=True):
        mine = verdicts.filter(pl.col("policy") == row["policy"])
        cases = sum(
            any(loss["category"] == row["category"] for loss in (v or ()))
            for v in mine["losses"].to_list()
        )
        assert row["cases"] == cases
        assert row["rate_pct"] == pytest.approx(100 * cases / row["n"])
    assert tax.filter(pl.col("policy") == "noop")["cases"].sum() == 0
    lost = tax.filter((pl.col("policy") == "tool-prune") & (pl.col("cases") > 0))
    assert dict(zip(lost["category"], lost["cases"], strict=True)) == {
        "evidence_detail": 25,
        "locator_handle": 9,
        "verbatim_source": 12,
        "live_state": 10,
    }


def test_example_losses_open_with_their_show_command(report, small_run: Path):
    from ctxreplay.cli import main

    ex = report.examples
    assert ex.height == 10  # tables.EXAMPLES, in all (tests/reports/test_examples.py)
    assert ex.group_by(["policy", "category"]).len()["len"].max() <= 2
    for row in ex.iter_rows(named=True):
        assert row["show"] == show_command(small_run, row["case_id"], row["policy"])
    first = ex.select("policy", "category", "case_id", "anchor", "source_object", "need_seq")
    assert first.row(0) == (
        "self-gc",
        "live_state",
        "synth-sql-00001@24",
        'Candidate bindings: "gross_amount_eur", "discount_eur", "tax_eur"',
        "function:run_sql:6",
        24,
    )
    args = shlex.split(ex["show"][0])
    assert args[:2] == ["ctxreplay", "show"]
    result = CliRunner().invoke(main, args[1:])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == f"case {ex['case_id'][0]}  ·  policy {ex['policy'][0]}"


def test_cost_table_is_consistent_with_figures(report, small_run: Path):
    run = Run(small_run)
    for policy in POLICIES:
        row = _row(report.cost, policy)
        f = run.table("figures", policy)
        assert row["cases"] == f.height
        assert row["committed"] == int(f["committed"].sum())
        assert (
            row["cache_breaks"]
            == f.filter(pl.col("committed") & (pl.col("cache_break_tokens") > 0)).height
        )
        for col in ("requests", "input_baseline", "cached_max_baseline", "output_tokens"):
            assert row[col] == int(f[col].sum()), col
        # the policy's own figures plus what its recoveries cost
        assert row["input_policy"] == int(f["input_policy"].sum()) + row["recovery_tokens"]
        assert row["cached_max_policy"] >= int(f["cached_max_policy"].sum())
        for col in ("usd_baseline_low", "usd_baseline_high"):
            assert row[col] == pytest.approx(float(f[col].sum())), col
        for end in ("low", "high"):
            own = float(f[f"usd_policy_{end}"].sum())
            assert row[f"usd_policy_{end}"] == pytest.approx(own + row[f"usd_recovery_{end}"])
        assert row["usd_delta_low"] == pytest.approx(
            row["usd_policy_low"] - row["usd_baseline_low"]
        )
        assert row["usd_baseline_low"] <= row["usd_baseline_high"]
        reasons = report.commit_reasons.filter(pl.col("policy") == policy)
        assert reasons["cases"].sum() == f.height
        assert reasons.filter(pl.col("committed"))["cases"].sum() == row["committed"]
    noop = _row(report.cost, "noop")
    assert noop["input_policy"] == noop["input_baseline"] and noop["cache_breaks"] == 0
    assert noop["usd_delta_low"] == 0.0 and noop["usd_delta_high"] == 0.0
    prune = _row(report.cost, "tool-prune")
    assert prune["input_policy"] < prune["input_baseline"]


def test_commit_reasons_drop_the_measured_value():
    assert commit_kind("pruning 0.786 > 0.3") == "pruning > 0.3"
    assert commit_kind("pruning 0.013 <= 0.3") == "pruning <= 0.3"
    assert commit_kind("cost: net saving -0.000123 USD <= 0") == "cost: net saving <= 0"
    assert commit_kind("always") == "always"
    assert commit_kind(None) == "none"


def test_audit_lists_one_category_with_evidence(small_run: Path, report):
    all_losses = report.losses
    category = all_losses["category"].mode().sort()[0]
    frame = audit(small_run, category.replace("_", " ").upper())
    assert category == "evidence_detail"
    assert frame.height == all_losses.filter(pl.col("category") == category).height == 63
    assert set(frame["category"].to_list()) == {category}
    assert {"anchor", "detail", "source_object", "need_seq", "show"} <= set(frame.columns)
    one = audit(small_run, category, policy="tool-prune")
    assert set(one["policy"].to_list()) <= {"tool-prune"}
    with pytest.raises(ReportError, match="unknown category"):
        audit(small_run, "vibes")


def test_unknown_judge_is_an_error_naming_the_judges(small_run: Path):
    with pytest.raises(ReportError, match="flow"):
        build_report(small_run, judge="nope", bootstrap=10)


def test_recoveries_are_priced_and_the_saving_is_net() -> None:
    """A policy that saves 1,000 input tokens but needs two recoveries (re-sending a 300-token
    view, bringing back 100 tokens of payload) saves 600 net; the recovery's USD is added to
    the policy's: low with the re-sent view cached, high without."""
    tariff = Tariff("t", input=2.0, cached_input=0.5, output=8.0)
    rows = pl.DataFrame(
        {
            "policy": ["p", "p"],
            "committed": [True, False],
            "cache_break_tokens": [0, 0],
            "requests": [3, 2],
            "input_baseline": [2000, 1000],
            "input_policy": [1000, 1000],
            "cached_max_baseline": [1500, 800],
            "cached_max_policy": [700, 800],
            "output_tokens": [50, 20],
            "usd_baseline_low": [0.004, 0.002],
            "usd_baseline_high": [0.006, 0.003],
            "usd_policy_low": [0.003, 0.002],
            "usd_policy_high": [0.004, 0.003],
            "planner_usd": [0.0, 0.0],
            "recorded_cache": [False, False],
            "commit_reason": ["pruning 0.5 > 0.3", "no edit"],
            "recoveries": [2, 0],
            "recovery_payload_tokens": [100.0, 0.0],
            "recovery_request_tokens": [300.0, 0.0],
        }
    )
    row = cost_table(rows, ["p"], tariff=tariff).row(0, named=True)
    assert (row["recovery_requests"], row["recovery_tokens"]) == (2, 400)
    assert row["input_policy"] == 2000 + 400
    assert row["input_saved_pct"] == pytest.approx(100 * (3000 - 2400) / 3000)
    low, high = (100 * 2.0 + 300 * 0.5) / 1e6, 400 * 2.0 / 1e6
    assert (row["usd_recovery_low"], row["usd_recovery_high"]) == pytest.approx((low, high))
    assert row["usd_policy_low"] == pytest.approx(0.005 + low)
    assert row["usd_delta_high"] == pytest.approx(0.007 + high - 0.009)
    assert row["cached_max_policy"] <= row["input_policy"]


def test_a_run_without_verdicts_still_reports_pruning_and_cost(otel_run: Path, tmp_path: Path):
    import shutil

    bare = tmp_path / "run"
    shutil.copytree(otel_run, bare, ignore=shutil.ignore_patterns("verdicts"))
    r = build_report(bare, bootstrap=20)
    assert r.judge is None and r.reference is None
    assert any("ctxreplay judge" in n for n in r.notes)
    assert (r.no_impact["n"] == 0).all()
    assert (r.no_impact["not_judged"] == r.no_impact["cases"]).all()
    assert r.paired.height == 0 and r.examples.height == 0
    assert r.cost.height == r.no_impact.height
    note = f"no verdicts yet: run `ctxreplay judge {bare}`"
    assert f"note: {note}" in r.render("terminal", width=0).splitlines()
    markdown = r.render("markdown").splitlines()
    assert "- judge: `–` (0 verdicts)" in markdown and f"- note: {note}" in markdown
    assert r.render("csv").splitlines()[2:4] == [
        "noop,noop,1,1,0,0,0,0,0.0,0.0,0.0,0.0,,,,,,,false,0,,,,,,,,",
        "tool-prune,tool-prune,1,1,0,0,0,0,0.0,0.0,0.0,0.0,,,,,,,false,0,,,,,,,,",
    ]
    assert json.loads(r.render("json"))["meta"]["judge"] is None
    # in the page, the command is an id-like token: one line, selected whole by a click
    command = f'<code class="tok">{html.escape(f"ctxreplay judge {bare}")}</code>'
    assert f"note: no verdicts yet: run {command}" in r.render("html")


def test_judge_none_takes_the_only_judge(otel_run: Path, small_run: Path):
    assert build_report(otel_run, judge=None, bootstrap=20).judge == "flow"
    assert (
        build_report(small_run, judge=None, bootstrap=20).judge == "flow"
    )  # two: the default judge wins
