"""The flow judge against its reference (``judges/flow/reference.py``): the same rules stated
plainly, with no session index, memo or incremental sources. Every case's uses and every view's
verdict must be the same, whatever order the engine hands the cases in, on the synthetic corpus
and on the real public corpora."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pytest

from ctxreplay.datasets.cases import cut_corpus
from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.store import Corpus
from ctxreplay.engines.judge import chunk_inputs, corpus_state, plan_work
from ctxreplay.engines.replay import run_replay
from ctxreplay.judges.flow import FlowJudge, Use
from ctxreplay.judges.flow.reference import reference_uses, reference_verdict
from ctxreplay.runs import Run, SidecarStore

from builders import corpus_path

POLICIES = ["tool-prune:keep=1", "oldest-turn:mode=fold", "self-gc:target=0.3"]


def key(uses: list[Use]) -> list[tuple]:
    return [
        (u.source, u.fact.text, u.fact.probes, u.how, u.need_seq, u.evidence, u.evidence_tokens)
        for u in uses
    ]


def verdict_key(v) -> tuple:
    return (v.label, v.recoverable, v.dependencies, [(x.anchor, x.category) for x in v.losses])


def compare(run: Path, seed: int = 0) -> int:
    """Judge every view of a run with the judge (each session's cases in a shuffled order) and
    with the reference; returns the views compared."""
    r = Run(run)
    judge = FlowJudge()
    judge.use_state(corpus_state(r, judge))
    chunks, _, _ = plan_work(r, "reference-check")
    sidecar = SidecarStore(r.path / "sidecar")
    rng = random.Random(seed)
    compared = 0
    for i in range(len(chunks)):
        for items in chunk_inputs(r.path, r.corpus, sidecar, chunks[i], False, False):
            inputs = [item for item, _ in items]
            rng.shuffle(inputs)
            judge.begin_session(inputs)
            for item in inputs:
                assert item.session is not None
                plain = reference_uses(
                    item.prefix, item.index, item.future, item.session, judge.params, judge.weights
                )
                assert key(judge.uses(item)) == key(plain), item.case_id
                assert verdict_key(judge.judge(item)) == verdict_key(
                    reference_verdict(item, plain, judge.params)
                ), (item.case_id, item.policy)
                compared += 1
            judge.end_session()
    return compared


def test_the_judge_is_its_reference_on_the_synthetic_corpus(
    synth_corpus: Path, synth_cases: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    run_replay(synth_corpus, synth_cases, POLICIES, run, workers=1, progress=False)
    assert compare(run, seed=1) > 150


@pytest.mark.corpora
def test_the_judge_is_its_reference_on_the_real_corpora(tmp_path: Path) -> None:
    sources = [corpus_path(c) for c in ("claude-code", "codex-cli", "swe-agent", "tau2-bench")]
    import_paths(sources, tmp_path / "corpus", progress=False)
    corpus = Corpus(tmp_path / "corpus")
    cases = tmp_path / "cases.parquet"
    cut_corpus(corpus, cases, triggers=["every:6"], horizon="messages:10", sample=50, seed=0)
    run = tmp_path / "run"
    run_replay(tmp_path / "corpus", cases, POLICIES, run, workers=2, progress=False)
    assert compare(run, seed=2) > 120


def test_an_index_without_the_session_is_made_for_the_input_alone() -> None:
    """Without the session's messages (a caller of ``uses`` outside the engine), the judge's
    statistics are the input's own, so its uses are the reference's over that input."""
    from builders import coding_session, view_input

    msgs = tuple(coding_session())
    item = view_input(msgs[:8], msgs[8:])
    judge = FlowJudge()
    plain = reference_uses(
        item.prefix, item.index, item.future, (*item.prefix, *item.future), judge.params,
        judge.weights,
    )  # fmt: skip
    assert key(judge.uses(item)) == key(plain)
    assert key(judge.uses(replace(item, case_id="other"))) == key(plain)
