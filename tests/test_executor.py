"""``engines.executor.run_chunks``: one way to run chunks, in this process or in workers, with
one error policy: a chunk that raises stops the submitting, the chunks already running finish,
then the first error is raised."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from ctxreplay.engines.executor import run_chunks


def square(offset: int, x: int) -> int:
    return offset + x * x


def made(offset: int) -> dict[str, int]:
    """A setup: what a worker builds once (its pid shows how many were built)."""
    return {"offset": offset, "pid": os.getpid()}


def with_setup(prepared: dict[str, int], x: int) -> tuple[int, int]:
    return prepared["offset"] + x, prepared["pid"]


def fails_on_three(folder: str, x: int) -> int:
    if x == 3:
        raise ValueError("chunk 3 is broken")
    time.sleep(0.05)
    Path(folder, f"done-{x}").write_text("")
    return x


@pytest.mark.parametrize("workers", [1, 2])
def test_every_chunk_runs_once_whatever_the_workers(workers: int) -> None:
    got = list(run_chunks(square, [(x,) for x in range(9)], workers=workers, shared=(100,)))
    assert sorted(got) == [100 + x * x for x in range(9)]


@pytest.mark.parametrize("workers", [1, 2])
def test_setup_runs_once_per_worker_and_every_chunk_gets_what_it_built(workers: int) -> None:
    got = list(
        run_chunks(with_setup, [(x,) for x in range(12)], workers=workers, shared=(7,), setup=made)
    )
    assert sorted(v for v, _ in got) == [7 + x for x in range(12)]
    pids = {pid for _, pid in got}
    assert len(pids) == 1 if workers == 1 else 1 <= len(pids) <= workers
    assert (os.getpid() in pids) == (workers == 1)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failing_chunk_stops_the_run_after_those_running_finish(
    tmp_path: Path, workers: int
) -> None:
    results: list[int] = []
    with pytest.raises(ValueError, match="chunk 3 is broken"):
        for r in run_chunks(
            fails_on_three, [(x,) for x in range(40)], workers=workers, shared=(str(tmp_path),)
        ):
            results.append(r)
    done = sorted(int(p.name.split("-")[1]) for p in tmp_path.iterdir())
    assert 3 not in done and set(results) <= set(done)
    assert set(range(3)) <= set(done)  # those before it ran
    assert len(done) < 39  # the submitting stopped: not every later chunk ran
    if workers == 1:
        assert done == [0, 1, 2]


def test_no_calls_no_work() -> None:
    assert list(run_chunks(square, [], workers=2, shared=(0,))) == []
