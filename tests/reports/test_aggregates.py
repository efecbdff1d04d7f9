"""The report's tables come from per-session aggregates DuckDB computes over the run's parts
(``aggregates.RunTables``): each must be the table today's per-row functions (``tables.*_table``
over every row of the run at once) give, on the demo's run and on gold-dev's real traces, with a
calibrated judge and several judges side by side; and DuckDB spilling to disk changes nothing."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from ctxreplay.datasets.cases import cut_corpus
from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.store import Corpus
from ctxreplay.engines.calibrate import calibrate_against_deps
from ctxreplay.engines.judge import run_judge
from ctxreplay.engines.pipeline import DEMO_POLICIES, PipelineConfig, run_pipeline
from ctxreplay.engines.replay import run_replay
from ctxreplay.reports import aggregates, build_report
from ctxreplay.runs import read_calibration

from builders import corpus_path, shared_path
from judged_run import BOOT, assert_report_is_whole, whole

#: policies that fold, mask and summarise, beyond the defaults: recoveries, archive costs
GRID = ("tool-prune:target=0.3", "oldest-turn:mode=fold,target=0.4", "self-gc:target=0.5")
GOLD_DEV = ("tau-bench", "tau2-bench", "swe-agent", "openhands")


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What ``ctxreplay demo`` runs (the pipeline on the built-in corpus, every built-in policy,
    the flow judge), smaller, with a second judge."""
    out = tmp_path_factory.mktemp("demo")
    cfg = PipelineConfig(out=out, synth_sessions=16, workers=1, bootstrap=BOOT, progress=False)
    run = run_pipeline(cfg, echo=lambda _: None)
    run_judge(run, "anchor", workers=1, progress=False)
    return run


@pytest.fixture(scope="module")
def gold_dev_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """gold-dev's 48 labelled cases of four real corpora, every built-in policy and a budget
    grid, judged by flow and calibrated against the labels (the ``deps`` judges join the run)."""
    root = tmp_path_factory.mktemp("gold-dev")
    import_paths([corpus_path(c) for c in GOLD_DEV], root / "corpus", progress=False)
    labels = shared_path("gold-dev")
    cases = cut_corpus(
        Corpus(root / "corpus"), root / "cases.parquet", cuts=labels / "cases.jsonl"
    )[1]
    run = root / "run"
    run_replay(root / "corpus", cases, [*DEMO_POLICIES, *GRID], run, workers=1, progress=False)
    run_judge(run, "flow", workers=1, progress=False)
    calibrate_against_deps(run, "flow", labels, workers=1)
    return run


def test_the_demos_report_is_the_per_row_report(demo_run: Path) -> None:
    for judge, examples in (("flow", 10), ("anchor", 25)):
        report = build_report(demo_run, judge=judge, bootstrap=BOOT, examples=examples)
        assert report.agreement.height == 1  # flow and anchor side by side
        assert report.paired.height == len(DEMO_POLICIES) - 1
        assert_report_is_whole(report, whole(demo_run, judge, examples))


@pytest.mark.corpora
def test_gold_devs_report_is_the_per_row_report(gold_dev_run: Path) -> None:
    assert read_calibration(gold_dev_run, "flow") is not None
    report = build_report(gold_dev_run, judge="flow", bootstrap=BOOT)
    assert "corrected_lo" in report.no_impact.columns  # the calibration corrects the table
    assert report.agreement.height >= 6  # flow and three gold variants, every pair
    assert report.no_impact["recoveries_per_case"].max() > 0  # folds lean on recovery
    assert report.examples.height > 0
    assert_report_is_whole(report, whole(gold_dev_run, "flow", 10))


def test_the_reports_temporary_folder_is_removed(
    demo_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DuckDB spills to a temporary folder of its own past ``MEMORY_LIMIT``: it is gone once
    the report is built, and when reading the run fails half way."""
    made: list[str] = []
    real = aggregates.tempfile.mkdtemp

    def mkdtemp(**kwargs: str) -> str:
        made.append(real(**kwargs))
        return made[-1]

    monkeypatch.setattr(aggregates.tempfile, "mkdtemp", mkdtemp)
    build_report(demo_run, judge="flow", bootstrap=BOOT)
    assert len(made) == 1 and not Path(made[0]).exists()

    def broken(self: aggregates.RunTables) -> None:
        raise RuntimeError("read failed")

    monkeypatch.setattr(aggregates.RunTables, "_load", broken)
    with pytest.raises(RuntimeError, match="read failed"):
        build_report(demo_run, judge="flow", bootstrap=BOOT)
    assert len(made) == 2 and not Path(made[1]).exists()


def test_a_run_without_verdicts_reports_its_figures(tmp_path: Path, demo_run: Path) -> None:
    """No verdicts yet: the figures are counted, every case not judged, nothing paired."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(demo_run, run)
    shutil.rmtree(run / "verdicts")
    report = build_report(run, bootstrap=BOOT)
    assert report.judge is None
    table = report.no_impact
    assert (table["not_judged"] == table["cases"]).all() and (table["n"] == 0).all()
    assert table["pruning_pct"].is_not_nan().all()
    assert report.taxonomy["losses"].sum() == 0 and report.examples.height == 0
    assert pl.Series(report.notes).str.contains("no verdicts yet").any()
