"""Judging a run: one verdict per (case, policy, judge), resumable, calibrated against truth."""

from __future__ import annotations

import json

import polars as pl
import pytest
from click.testing import CliRunner

from ctxreplay.cli import main
from ctxreplay.engines.judge import run_judge
from ctxreplay.engines.replay import run_replay
from ctxreplay.runs import read_verdicts

from fake_openai import FakeOpenAI, Reply, chat_body

POLICIES = ["noop", "oldest-turn", "tool-prune", "hybrid:summarize_after=4,keep_recent=2"]


def test_judge_resume_and_one_verdict_per_pair(synth_corpus, synth_cases, tmp_path) -> None:
    run = tmp_path / "run"
    replay = run_replay(synth_corpus, synth_cases, POLICIES, run, workers=1, progress=False)
    pairs = replay.cases * len(POLICIES)
    part = run_judge(run, "anchor", limit=7, progress=False, workers=1)
    assert part.judged == 7
    rest = run_judge(run, "anchor", progress=False)
    assert rest.skipped == 7 and rest.judged == pairs - 7
    again = run_judge(run, "anchor", progress=False)
    assert again.judged == 0 and again.skipped == pairs
    verdicts = read_verdicts(run, "anchor")
    assert verdicts.height == pairs
    assert verdicts.select("policy", "case_id").is_duplicated().sum() == 0
    noop = verdicts.filter(pl.col("policy") == "noop")
    assert (noop["label"] == "no_impact").all()  # nothing removed, nothing lost
    oldest = verdicts.filter(pl.col("policy") == "oldest-turn")["label"].to_list()
    assert (oldest.count("impact"), oldest.count("no_impact")) == (57, 16)


def test_calibrate_against_truth_cli(synth_corpus, synth_cases, tmp_path) -> None:
    run = tmp_path / "run"
    run_replay(synth_corpus, synth_cases, POLICIES, run, workers=1, progress=False)
    runner = CliRunner()
    judged = runner.invoke(main, ["judge", str(run), "--quiet"])
    assert judged.exit_code == 0, judged.output
    assert "  no_impact 132, impact 160, unscored 0" in judged.output.splitlines()
    out = runner.invoke(main, ["calibrate", str(run), "--judge", "flow", "--against", "truth"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0] == (
        "flow against truth: 292 pairs compared (0 left out as unscored, 0 without a counterpart)"
    )
    assert "Cohen's kappa 0.904 [0.855, 0.953] (95% CI)" in lines
    truth = read_verdicts(run, "truth")
    assert truth.height == read_verdicts(run, "flow").height
    # a judge with no verdicts yet is an error with the command to run
    missing = runner.invoke(main, ["calibrate", str(run), "--judge", "llm", "--against", "truth"])
    assert missing.exit_code == 2
    assert missing.output == (
        f"error: no verdicts from judge 'llm' in {run}; run: ctxreplay judge {run} --judge llm\n"
    )


def _verdicts(run) -> pl.DataFrame:
    return pl.concat(
        [read_verdicts(run, j) for j in ("flow", "anchor")], how="vertical_relaxed"
    ).sort("judge", "policy", "case_id")


def test_verdicts_are_the_same_for_any_chunk_size_and_worker_count(
    synth_corpus, synth_cases, tmp_path
) -> None:
    """Judging in chunks of one case, in one chunk, or over two processes writes the same rows."""
    runs = [tmp_path / name / "run" for name in ("one", "whole", "two")]
    run_replay(synth_corpus, synth_cases, POLICIES, runs[0], workers=1, progress=False)
    import shutil

    for other in runs[1:]:
        shutil.copytree(runs[0], other)
    for run, chunk_cases, workers in zip(runs, (1, 100_000, 3), (1, 1, 2), strict=True):
        for judge in ("flow", "anchor"):
            done = run_judge(run, judge, progress=False, workers=workers, chunk_cases=chunk_cases)
            assert done.judged == 292
    one, whole, two = (_verdicts(r) for r in runs)
    assert one.height == 2 * 292
    assert one.equals(whole) and one.equals(two)


def test_the_chunk_plan_holds_whole_sessions_every_pair_once(
    synth_corpus, synth_cases, tmp_path
) -> None:
    """The plan makes each chunk when it is asked for: whole sessions, at most ``size`` cases
    unless one session alone holds more, every pending pair exactly once with its case row and
    the figures part that lists it."""
    from ctxreplay.datasets.cases import read_cases
    from ctxreplay.engines.judge import plan_work
    from ctxreplay.runs import Run

    policies = ["noop", "tool-prune:keep=1", "observation-masking"]
    run_replay(synth_corpus, synth_cases, policies, tmp_path / "run", progress=False)
    cases = read_cases(synth_cases)[0]
    per_session = dict(cases.group_by("session_id").len().iter_rows())
    for size in (1, 5, 40, 100_000):
        plan, skipped, deferred = plan_work(Run(tmp_path / "run"), "flow", chunk_cases=size)
        assert (skipped, deferred) == (0, 0)
        assert plan.pairs == cases.height * len(policies)
        chunks = list(plan)
        assert len(chunks) == len(plan) and plan[-1] == chunks[-1]
        pairs, sessions = [], []
        for chunk in chunks:
            n = sum(len(w.cases) for w in chunk.works)
            assert n <= size or len(chunk.works) == 1
            for w in chunk.works:
                sessions.append(w.session_id)
                assert len(w.cases) == per_session[w.session_id]  # the whole session
                assert {c["session_id"] for c in w.cases} == {w.session_id}
                cuts = [c["cut"] for c in w.cases]
                assert cuts == sorted(cuts)
                ids = {c["case_id"] for c in w.cases}
                assert {c for c, _, _ in w.pairs} == ids
                pairs += [(p, c) for c, p, _ in w.pairs]
            assert set(chunk.parts) == set(policies)
        assert len(sessions) == len(set(sessions)) == len(per_session)
        assert len(pairs) == len(set(pairs)) == plan.pairs
        assert set(plan.pair_keys().iter_rows()) == set(pairs)
    one, _, _ = plan_work(Run(tmp_path / "run"), "flow", chunk_cases=100_000)
    assert len(one) == 1


def test_chunks_are_handed_out_most_work_first(
    synth_corpus, synth_cases, tmp_path, monkeypatch
) -> None:
    """Worker processes take the chunks whose pairs read the most messages (prefix and future)
    first, so a long session is not judged alone at the end; where the cases do not say their
    sizes, the plan's order is kept."""
    from ctxreplay.engines.judge import ChunkPlan, plan_work
    from ctxreplay.runs import Run

    run_replay(synth_corpus, synth_cases, ["noop", "tool-prune"], tmp_path / "run", progress=False)
    plan, _, _ = plan_work(Run(tmp_path / "run"), "flow", chunk_cases=3)
    work = []
    for chunk in plan:
        size = {
            c["case_id"]: c["prefix_messages"] + c["future_messages"]
            for w in chunk.works
            for c in w.cases
        }
        work.append(sum(size[case_id] for w in chunk.works for case_id, _, _ in w.pairs))
    assert len(set(work)) > 3  # chunks of different sizes: the order says something
    order = plan.most_work_first()
    assert sorted(order) == list(range(len(plan)))
    assert [work[i] for i in order] == sorted(work, reverse=True)
    assert order != list(range(len(plan)))  # not the plan's own order here
    unsized = ChunkPlan(plan._todo, plan._cases.drop("future_messages"), plan._bounds)
    assert unsized.most_work_first() == list(range(len(plan)))
    asked: list[int] = []  # and the worker processes are handed them in that order
    ordered = ChunkPlan.most_work_first
    monkeypatch.setattr(
        ChunkPlan, "most_work_first", lambda self: asked.append(len(self)) or ordered(self)
    )
    assert run_judge(tmp_path / "run", "flow", progress=False, workers=2, chunk_cases=3).judged
    assert asked == [len(plan)]


@pytest.mark.usefixtures("fresh_endpoints")
@pytest.mark.parametrize("name", ["flow", "llm"])  # worker processes' engine, model calls' one
def test_each_session_is_begun_with_all_its_inputs_before_they_are_judged(
    name, synth_corpus, synth_cases, tmp_path, monkeypatch
) -> None:
    """``Judge.begin_session`` is handed every input of one session, once, before any of them
    is judged (the flow judge finds there which word runs its futures copy)."""
    from ctxreplay.engines import judge as engine
    from ctxreplay.judges.base import Judge
    from ctxreplay.judges.flow import FlowJudge

    begun: list[list[tuple[str, str, str]]] = []  # the pairs of each session begun
    judged: list[tuple[int, tuple[str, str, str]]] = []  # each pair, after how many begun

    def pair(item) -> tuple[str, str, str]:
        return item.session_id, item.case_id, item.policy

    def recorded(begin):
        return lambda j, items: begun.append([*map(pair, items)]) or begin(j, items)

    for cls in (Judge, FlowJudge):  # the base's, and the flow judge's own
        monkeypatch.setattr(cls, "begin_session", recorded(cls.begin_session))
    judge_one = engine.judge_one
    monkeypatch.setattr(
        engine,
        "judge_one",
        lambda j, item, problem: (
            judged.append((len(begun), pair(item))) or judge_one(j, item, problem)
        ),
    )
    run = tmp_path / "run"
    run_replay(synth_corpus, synth_cases, ["noop", "tool-prune"], run, workers=1, progress=False)
    good = json.dumps({"facts": [], "verdict": "no_impact", "explanation": "nothing lost"})
    with FakeOpenAI(default=Reply(body=chat_body(good))) as server:
        overrides = {"base_url": server.base_url, "model": "fake"} if name == "llm" else None
        done = run_judge(run, name, overrides=overrides, workers=1, progress=False)
    verdicts = read_verdicts(run, name)
    assert done.judged == verdicts.height == len(judged) > 0
    sessions = [pairs[0][0] for pairs in begun]
    assert len(sessions) == len(set(sessions)) == verdicts["session_id"].n_unique() > 1
    for pairs in begun:  # all the session's pairs, and only its own
        mine = verdicts.filter(pl.col("session_id") == pairs[0][0])
        assert sorted(pairs) == sorted(mine.select("session_id", "case_id", "policy").rows())
    for after, judged_pair in judged:  # each judged after its own session was begun, last
        assert judged_pair in begun[after - 1]
