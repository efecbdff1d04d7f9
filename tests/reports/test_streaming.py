"""A report reads its run through per-session aggregates (``aggregates.RunTables``) so its
memory does not grow with the run: every table must still be the one the whole run's frames give
(``tables.*_table`` over every row at once), chunked loss summaries must equal whole ones, and
the verdicts read must follow ``read_verdicts``' rule of one verdict per (judge, policy, case).
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal

from ctxreplay.reports import build_report, stats
from ctxreplay.reports.report import Report
from ctxreplay.reports.tables import (
    LOSS_ORDER,
    ReportError,
    audit,
    loss_counts,
    loss_summary,
    losses_frame,
    outcomes,
    policy_figures,
    policy_verdicts,
    rank_examples,
    scored_losses,
    top_ranked,
)
from ctxreplay.runs import Run, RunError, read_verdicts, slug
from ctxreplay.schema import CATEGORIES, VERDICTS

from judged_run import BOOT, POLICIES, assert_report_is_whole, whole


@pytest.mark.parametrize(("judge", "examples"), [("flow", 10), ("flow", 3), ("edited", 40)])
def test_the_streamed_report_is_the_whole_frames_report(
    small_run: Path, judge: str, examples: int
) -> None:
    report = build_report(small_run, judge=judge, bootstrap=BOOT, examples=examples)
    expected = whole(small_run, judge, examples)
    assert report.agreement.height == 1 and report.examples.height > 0  # both judges, losses
    assert_report_is_whole(report, expected)


def test_a_report_holds_counts_of_the_losses_not_the_losses(report: Report) -> None:
    assert "losses" not in {f.name for f in dataclasses.fields(Report)}
    every = report.losses  # read from the run when asked
    assert every.height == report.loss_count > report.examples.height
    assert report.taxonomy["losses"].sum() == every.height


@pytest.mark.parametrize("chunk", [1, 2, 5, 10**6])
def test_a_chunked_loss_summary_is_the_whole_one(small_run: Path, chunk: int) -> None:
    r = Run(small_run)
    chunked = 0
    for policy in POLICIES:
        figures = policy_figures(r, policy)
        assert figures is not None
        verdicts = policy_verdicts(r, policy, ["label"], "flow", losses_of="flow")
        rows = outcomes(r, "flow", verdicts.drop("losses"), figures=figures)
        losses = scored_losses(rows, verdicts)
        # the same losses as exploding the rows that carry them (``losses_frame``)
        carried = outcomes(r, "flow", read_verdicts(small_run), figures=figures)
        assert_frame_equal(losses, losses_frame(r, carried).drop("show"))
        for limit in (0, 1, 4, 1000):
            counts, candidates = loss_summary(rows, verdicts, limit, chunk=chunk)
            assert_frame_equal(
                counts.sort("category"), loss_counts(losses).sort("category"), check_exact=True
            )
            if limit == 0 or losses.height == 0:
                assert candidates.height == 0
                continue
            expected = top_ranked(rank_examples(losses), limit)
            assert_frame_equal(candidates, expected, check_column_order=False)
        chunked += losses.height > 0 and verdicts.height > chunk
    assert chunked or chunk == 10**6  # the small chunks do split a policy's losses


def test_the_bootstrap_draws_a_few_rows_at_a_time_to_the_same_numbers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def whole_batches(sums: np.ndarray, counts: np.ndarray, seed: int, n_boot: int) -> np.ndarray:
        g, rng, out, done = len(sums), np.random.default_rng(seed), np.empty(n_boot), 0
        while done < n_boot:
            size = min(256, n_boot - done)
            weights = rng.multinomial(g, np.full(g, 1.0 / g), size=size).astype(float)
            out[done : done + size] = (weights @ sums) / (weights @ counts)
            done += size
        return out

    rng = np.random.default_rng(7)
    for cells in (1, 1000, stats.DRAW_CELLS):
        monkeypatch.setattr(stats, "DRAW_CELLS", cells)
        for g, n_boot in ((1, 5), (3, 300), (125, 2000), (2000, 257)):
            sums, counts = rng.random(g) * 9, rng.integers(1, 9, g).astype(float)
            got = stats._resampled_ratio(sums, counts, 3, n_boot)
            assert np.array_equal(got, whole_batches(sums, counts, 3, n_boot)), (cells, g)


def _with_duplicate_parts(small_run: Path, tmp_path: Path) -> Path:
    """A copy of the run whose flow verdicts hold a second verdict of some pairs, in a part
    named to sort before the others and in one after them, each with other labels."""
    run = tmp_path / "run"
    shutil.copytree(small_run, run)
    flow = read_verdicts(run, "flow").sort(["policy", "case_id"])
    flipped = {"impact": "no_impact", "no_impact": "impact", "unscored": "impact"}
    for name, rows in (("part-0.parquet", flow.head(7)), ("part-~.parquet", flow.tail(9))):
        changed = rows.with_columns(
            pl.col("label").replace_strict(flipped, default=pl.col("label"))
        )
        table = pa.Table.from_pylist(changed.to_dicts(), schema=VERDICTS)
        pq.write_table(table, run / "verdicts" / slug("flow") / name)
    return run


def test_verdicts_read_policy_by_policy_keep_read_verdicts_one_per_pair(
    small_run: Path, tmp_path: Path
) -> None:
    run = _with_duplicate_parts(small_run, tmp_path)
    every = read_verdicts(run, "flow")
    assert every.height == read_verdicts(small_run, "flow").height  # still one per pair
    assert not every.equals(read_verdicts(small_run, "flow"))  # the first part's labels won
    for policy in POLICIES:
        got = policy_verdicts(run, policy, ["label", "losses"], "flow")
        mine = every.filter(pl.col("policy") == policy).select(got.columns)
        assert_frame_equal(got, mine)
    report = build_report(run, judge="flow", bootstrap=BOOT)
    assert_report_is_whole(report, whole(run, "flow", 10))


def test_an_audit_read_policy_by_policy_is_the_whole_losses_filtered(small_run: Path) -> None:
    r = Run(small_run)
    losses = losses_frame(r, outcomes(r, "flow", read_verdicts(small_run)))
    assert losses.equals(losses.sort(LOSS_ORDER, nulls_last=True, maintain_order=True))
    for category in CATEGORIES:
        mine = losses.filter(pl.col("category") == category)
        assert_frame_equal(audit(small_run, category, judge="flow"), mine)
        one = mine.filter(pl.col("policy") == "tool-prune")
        assert_frame_equal(audit(small_run, category, "tool-prune", judge="flow"), one)
    # an unknown category is named first, as before; a known one with an unknown policy next
    with pytest.raises(ReportError, match="unknown category"):
        audit(small_run, "vibes", policy="nope")
    with pytest.raises(RunError, match="not in this run"):
        audit(small_run, "live state", policy="nope")


def test_one_judges_verdicts_are_those_of_every_verdict_read_whole(
    small_run: Path, tmp_path: Path
) -> None:
    """``show``, ``export`` and ``calibrate`` read one judge's verdicts (``judge_verdicts``) or
    one pair's (``show``) with the filter applied while scanning: the same rows, first part
    first, that every verdict read whole and then filtered gives."""
    from ctxreplay.engines.calibrate import judged_by
    from ctxreplay.reports.exports import verdict_records
    from ctxreplay.reports.show import _verdict
    from ctxreplay.runs import judge_verdicts

    run = _with_duplicate_parts(small_run, tmp_path)
    every = read_verdicts(run)
    assert set(every["judge"]) == {"flow", "edited"}
    for judge in ("flow", "edited"):
        label, mine = judge_verdicts(run, judge)
        assert label == judge
        assert_frame_equal(mine, every.filter(pl.col("judge") == judge))
        assert judged_by(run, judge)[1].equals(mine)
        records = verdict_records(run, judge)
        assert records.select(mine.columns).equals(mine.sort(["policy", "case_id"]))
    assert judge_verdicts(run, None)[0] == "flow"  # the default judge among several
    with pytest.raises(ValueError, match="no verdicts from judge 'nope'"):
        judge_verdicts(run, "nope")
    # the pair a part before the others judged again: its first verdict, as read_verdicts keeps
    first = every.filter(pl.col("judge") == "flow").sort(["policy", "case_id"]).head(7)
    assert (
        first["label"].to_list()
        != read_verdicts(small_run, "flow").sort(["policy", "case_id"]).head(7)["label"].to_list()
    )
    for row in first.iter_rows(named=True):
        chosen, verdict = _verdict(Run(run), row["case_id"], row["policy"], "flow")
        assert chosen == "flow" and verdict == row
    assert _verdict(Run(run), "no-such-case", "noop", None) == ("flow", None)
    empty = tmp_path / "empty"
    (empty / "verdicts").mkdir(parents=True)
    label, none = judge_verdicts(empty, None)
    assert label is None and none.height == 0 and none.columns == every.columns
