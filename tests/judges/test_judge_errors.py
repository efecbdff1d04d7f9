"""One error policy for every way the judge engine runs: a judge that raises on one pair makes
that pair ``unscored`` with the error as its reason, and the rest of the run is judged, whether
the judge runs in this process, in worker processes or (a model judge) in threads. An endpoint
that cannot be reached still stops the run (a re-run resumes), in every way too."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from ctxreplay.engines.judge import run_judge
from ctxreplay.engines.replay import run_replay
from ctxreplay.judges.base import Judge, JudgeInput, Verdict, judges
from ctxreplay.llm.completion import EndpointUnreachable
from ctxreplay.runs import read_verdicts


@dataclass(frozen=True)
class Params:
    pass


class Brittle(Judge):
    """Raises on every prefix whose length is a multiple of 3; no impact elsewhere."""

    Params = Params

    def judge(self, item: JudgeInput) -> Verdict:
        if len(item.prefix) % 3 == 0:
            raise KeyError("x")
        return Verdict("no_impact", reason="fine")


class BrittleThreaded(Brittle):
    concurrent: ClassVar[bool] = True


class Unreachable(Judge):
    Params = Params

    def judge(self, item: JudgeInput) -> Verdict:
        raise EndpointUnreachable("http://127.0.0.1:9/v1 refused 5 connections in a row")


@pytest.fixture(scope="module", autouse=True)
def registered() -> Iterator[None]:
    """Registered before any worker process forks, as an entry point's judge would be."""
    names = {"test-brittle": Brittle, "test-brittle-threads": BrittleThreaded}
    names["test-unreachable"] = Unreachable
    for name, cls in names.items():
        judges.register(name)(cls)
    yield
    for name in names:
        judges._items.pop(name, None)


@pytest.fixture(scope="module")
def replayed(
    synth_corpus: Path, synth_cases: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    out = tmp_path_factory.mktemp("errors") / "run"
    run_replay(synth_corpus, synth_cases, ["noop"], out, workers=1, progress=False)
    return out


@pytest.fixture
def run(replayed: Path, tmp_path: Path) -> Path:
    """A run of its own per test: no verdict of another engine's run."""
    return Path(shutil.copytree(replayed, tmp_path / "run"))


@pytest.mark.parametrize(
    ("name", "workers"),
    [("test-brittle", 1), ("test-brittle", 2), ("test-brittle-threads", 1)],
    ids=["in-process", "processes", "threads"],
)
def test_a_judge_that_raises_leaves_that_pair_unscored_and_judges_the_rest(
    run: Path, name: str, workers: int
) -> None:
    summary = run_judge(run, name, workers=workers, progress=False, chunk_cases=4)
    verdicts = read_verdicts(run, name)
    assert verdicts.height == summary.judged > 0
    unscored = verdicts.filter(verdicts["label"] == "unscored")
    assert 0 < unscored.height < verdicts.height
    assert set(unscored["unscored_reason"]) == {"judge error: KeyError: 'x'"}
    assert set(verdicts.filter(verdicts["label"] != "unscored")["label"]) == {"no_impact"}
    assert summary.unscored == {"judge error: KeyError: 'x'": unscored.height}


@pytest.mark.parametrize("workers", [1, 2], ids=["in-process", "processes"])
def test_an_unreachable_endpoint_stops_the_run_in_every_engine(run: Path, workers: int) -> None:
    with pytest.raises(EndpointUnreachable):
        run_judge(run, "test-unreachable", workers=workers, progress=False, chunk_cases=4)
