"""The Ray engine: the local engine's output, resumable, and model calls limited cluster-wide.

One local Ray with 2 CPUs serves the whole module (started once; about 5 s). Its workers get
this folder on their path and ``ray_helpers.register`` as their setup hook, for the test-only
``ray-fault`` policy and the limiter's load task.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner

from ctxreplay.cli import main
from ctxreplay.datasets.cases import read_cases
from ctxreplay.engines.judge import run_judge
from ctxreplay.engines.pipeline import DEMO_POLICIES
from ctxreplay.engines.ray_engine import RayEngineError, check_engine, last_tasks
from ctxreplay.engines.replay import make_chunks, run_replay
from ctxreplay.llm.cluster_limiter import LimiterActor
from ctxreplay.runs import read_verdicts

from fake_openai import FakeOpenAI, Reply, chat_body

ray = pytest.importorskip("ray")
TESTS = Path(__file__).parent
#: what a replay writes, compared file by file (the manifest holds paths and times)
REPLAY_FOLDERS = ("figures", "decisions", "views", "done", "sidecar")
ANSWER = json.dumps({"facts": [], "verdict": "no_impact", "explanation": "all still visible"})


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    import ray_helpers

    env = {
        "PYTHONPATH": os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH")) if p),
        "CTXREPLAY_CACHE_DIR": str(tmp_path_factory.getbasetemp() / "ctxreplay-cache"),
    }
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": env, "worker_process_setup_hook": "ray_helpers.register"},
    )
    ray_helpers.register()
    yield ray
    ray_helpers.unregister()
    ray.shutdown()


def files(run: Path, folders: tuple[str, ...] = REPLAY_FOLDERS) -> dict[str, bytes]:
    """Every file a replay writes (relative path → bytes)."""
    return {
        str(p.relative_to(run)): p.read_bytes()
        for folder in folders
        for p in sorted((run / folder).rglob("*"))
        if p.is_file()
    }


def sorted_verdicts(run: Path, judge: str) -> pl.DataFrame:
    return read_verdicts(run, judge).sort("policy", "case_id")


def test_ray_output_is_the_local_output(ray_cluster, synth_corpus, synth_cases, tmp_path) -> None:
    """Every deterministic policy and the default judge: the same bytes, the same verdicts."""
    local, remote = tmp_path / "local" / "run", tmp_path / "ray" / "run"  # same name: same rows
    a = run_replay(synth_corpus, synth_cases, DEMO_POLICIES, local, workers=1, progress=False)
    b = run_replay(
        synth_corpus, synth_cases, DEMO_POLICIES, remote, progress=False, chunk_size=16,
        engine="ray",
    )  # fmt: skip
    assert b.cases == a.cases > 0
    assert len(last_tasks) >= 2 and len({t.pid for t in last_tasks}) >= 1
    # other chunking: other part files, the same tables
    for table in ("figures", "decisions", "views"):
        left = pl.read_parquet(local / table / "**" / "*.parquet").sort("policy", "case_id")
        right = pl.read_parquet(remote / table / "**" / "*.parquet").sort("policy", "case_id")
        assert left.equals(right), table
    # the same chunking: the same files, byte for byte
    same = tmp_path / "ray-same" / "run"
    run_replay(synth_corpus, synth_cases, DEMO_POLICIES, same, progress=False, engine="ray")
    assert files(same) == files(local) and len(files(local)) > 3 * len(DEMO_POLICIES)
    run_judge(local, "flow", workers=1, progress=False)
    judged = run_judge(same, "flow", progress=False, engine="ray", chunk_cases=16)
    assert judged.judged == a.cases * len(DEMO_POLICIES)
    assert sorted_verdicts(same, "flow").equals(sorted_verdicts(local, "flow"))
    again = run_judge(same, "flow", progress=False, engine="ray")
    assert again.judged == 0 and again.skipped == judged.judged


def test_a_failed_task_is_redone_alone_by_a_rerun(
    ray_cluster, synth_corpus, synth_cases, tmp_path
) -> None:
    cases, _ = read_cases(synth_cases)
    chunks = make_chunks(cases, 16)
    assert len(chunks) >= 3
    victim = chunks[1]
    marker = tmp_path / "fail"
    marker.touch()
    fault = f"ray-fault:marker={marker},session={victim.sessions[0]}"
    policies = ["noop", fault]
    run = tmp_path / "ray" / "run"
    with pytest.raises(RuntimeError, match="ray-fault"):
        run_replay(synth_corpus, synth_cases, policies, run, progress=False, chunk_size=16,
                   engine="ray")  # fmt: skip
    parts = {p: p.stat().st_mtime_ns for p in (run / "figures").rglob("*.parquet")}
    done = {p.stem for p in parts}
    assert f"chunk-{victim.index:05d}" not in done  # the failed task wrote nothing
    assert done  # the others' parts are there
    marker.unlink()
    resumed = run_replay(
        synth_corpus, synth_cases, policies, run, progress=False, chunk_size=16, engine="ray"
    )
    assert resumed.skipped == len(parts)
    assert resumed.computed == len(chunks) * 2 - len(parts)
    assert {p: p.stat().st_mtime_ns for p in parts} == parts  # finished parts left alone
    local = tmp_path / "local" / "run"
    run_replay(synth_corpus, synth_cases, policies, local, workers=1, progress=False,
               chunk_size=16)  # fmt: skip
    assert files(run) == files(local)


def test_a_killed_worker_is_retried_and_the_output_is_the_same(
    ray_cluster, synth_corpus, synth_cases, tmp_path
) -> None:
    cases, _ = read_cases(synth_cases)
    victim = make_chunks(cases, 32)[0]
    marker = tmp_path / "kill"
    marker.touch()
    policies = [f"ray-fault:marker={marker},session={victim.sessions[0]},exit=true"]
    run = tmp_path / "ray" / "run"
    summary = run_replay(
        synth_corpus, synth_cases, policies, run, progress=False, chunk_size=32, engine="ray"
    )
    assert not marker.exists()  # a worker died on it, and Ray ran its task again
    local = tmp_path / "local" / "run"
    run_replay(synth_corpus, synth_cases, policies, local, workers=1, progress=False,
               chunk_size=32)  # fmt: skip
    assert summary.cases > 0 and files(run) == files(local)


def test_llm_judge_on_ray_pays_each_call_once(
    ray_cluster, synth_corpus, synth_cases, tmp_path
) -> None:
    """The response cache is in the run folder: a re-run sends nothing, and a lost part is
    judged again from the cache; the endpoint's limit holds across the workers."""
    run = tmp_path / "run"
    replayed = run_replay(
        synth_corpus, synth_cases, ["noop", "tool-prune"], run, workers=1, progress=False
    )
    pairs = replayed.cases * 2
    server = FakeOpenAI(default=Reply(body=chat_body(ANSWER), delay=0.02))
    with server:
        options = {"base_url": server.base_url, "model": "fake", "concurrency": "2"}

        def judge() -> Any:
            return run_judge(run, "llm", overrides=options, progress=False, engine="ray",
                             chunk_cases=12)  # fmt: skip

        first = judge()
        sent = len(server.requests)
        assert first.judged == pairs and read_verdicts(run, "llm").height == pairs
        assert sent == read_verdicts(run, "llm")["prompt_hash"].n_unique() > 0
        assert server.max_in_flight <= 2
        assert len({t.pid for t in last_tasks}) == 2  # both workers judged
        again = judge()
        assert again.judged == 0 and len(server.requests) == sent  # zero calls
        lost = sorted((run / "verdicts").glob("*/*.parquet"))[0]
        rows = pl.read_parquet(lost).height
        lost.unlink()  # a part whose task died after its calls were answered
        redone = judge()
        assert redone.judged == rows and redone.cache_hits == rows
        assert len(server.requests) == sent  # not paid twice
    assert read_verdicts(run, "llm").height == pairs


@pytest.mark.parametrize("cluster", [True, False])
def test_cluster_limiter_holds_the_endpoint_across_workers(ray_cluster, cluster: bool) -> None:
    """Two workers, four threads each, limit 2: at most 2 requests in flight at the server,
    with the cluster-wide limiter; more without it (each process its own limit)."""
    import ray_helpers
    from ctxreplay.llm import cluster_limiter

    key = f"test-{cluster}"
    hammer = ray.remote(num_cpus=1)(ray_helpers.hammer)
    with FakeOpenAI(default=Reply(body=chat_body("ok"), delay=0.15)) as server:
        runs = ray.get(
            [hammer.remote(server.base_url, key if cluster else None, 8, 2, 4) for _ in range(2)]
        )
        if cluster:
            stats = cluster_limiter.run_stats(key)
            assert [s["peak"] for s in stats.values()] == [2]
            cluster_limiter.remove_run(key)
            assert cluster_limiter.run_actors(key) == []
    (pid_a, start_a, end_a), (pid_b, start_b, end_b) = runs
    assert pid_a != pid_b and max(start_a, start_b) < min(end_a, end_b)  # at the same time
    assert len(server.requests) == 16
    if cluster:
        assert server.max_in_flight == 2
    else:
        assert server.max_in_flight > 2


@pytest.mark.parametrize("cluster", [True, False])
def test_a_429_pauses_every_worker(ray_cluster, cluster: bool) -> None:
    """One worker's 429 (Retry-After: 1) pauses the other worker's calls too (and, without the
    cluster-wide limiter, does not)."""
    import threading
    import time

    import ray_helpers

    arrivals: list[tuple[float, str]] = []  # (when, which worker)
    limited: list[tuple[float, str]] = []
    lock = threading.Lock()

    def reply(body: dict) -> Reply:
        pid = body["messages"][0]["content"].split()[1]  # hammer's "<key> <pid> <i>"
        with lock:
            arrivals.append((time.monotonic(), pid))
            first = not limited and len({w for _, w in arrivals}) == 2  # both are calling
            if first:
                limited.append(arrivals[-1])
        if first:
            return Reply(status=429, headers={"retry-after": "1"}, body={"error": {}})
        return Reply(body=chat_body("ok"), delay=0.05)

    key = f"test-429-{cluster}"
    hammer = ray.remote(num_cpus=1)(ray_helpers.hammer)
    with FakeOpenAI(default=reply) as server:
        ray.get(
            [
                hammer.remote(server.base_url, key if cluster else None, 16, 2, 2, 2)
                for _ in range(2)
            ]
        )
        if cluster:
            from ctxreplay.llm import cluster_limiter

            assert [s["rate_limited"] for s in cluster_limiter.run_stats(key).values()] == [1]
            cluster_limiter.remove_run(key)
    assert len(server.requests) == 33 and limited  # 32 calls, one asked twice
    at, worker = limited[0]
    others = [t for t, w in arrivals if w != worker and at + 0.1 < t < at + 0.9]
    assert (others == []) is cluster


def test_limiter_actor_pauses_on_429_and_takes_back_a_dead_holders_slot(monkeypatch) -> None:
    from ctxreplay.llm import cluster_limiter

    monkeypatch.setattr(cluster_limiter, "_POLL_S", 0.05)
    actor = LimiterActor(2)
    assert actor.try_acquire("a") is None and actor.try_acquire("b") is None
    assert actor.try_acquire("c") == 0.0  # full: ask again (after the poll wait)
    actor.release("a")
    actor.on_rate_limited(30.0)
    pause = actor.try_acquire("c")
    assert pause is not None and 29.0 < pause <= 30.0
    assert actor.stats()["limit"] == 1
    monkeypatch.setattr(cluster_limiter, "LEASE_S", -1.0)
    actor.limiter._paused_until = 0.0
    actor.try_acquire("d")  # "b" was never released: its lease is taken back
    assert actor.stats()["in_flight"] == 1


def test_the_ray_engine_without_ray_says_how_to_install_it(
    monkeypatch, synth_corpus, synth_cases, tmp_path
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray → ImportError
    with pytest.raises(RayEngineError, match=r"pip install 'ctxreplay\[ray\]'"):
        check_engine("ray")
    result = CliRunner().invoke(
        main,
        ["replay", str(synth_corpus), "--cases", str(synth_cases), "--policy", "noop",
         "-o", str(tmp_path / "run"), "--engine", "ray", "--quiet"],
    )  # fmt: skip
    assert result.exit_code == 2 and "ctxreplay[ray]" in result.output
    assert not (tmp_path / "run" / "figures").exists()
    check_engine("local")


def test_run_command_on_ray(ray_cluster, tmp_path) -> None:
    """``ctxreplay run --engine ray``: the pipeline's run is the local one's."""
    outs = {}
    for engine in ("local", "ray"):
        out = tmp_path / engine
        args = ["run", "-o", str(out), "--synth-sessions", "6", "--policy", "noop",
                "--policy", "tool-prune", "--bootstrap", "20", "--quiet", "--engine", engine]  # fmt: skip
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        outs[engine] = out / "run"
    # (the done-markers name each pipeline's own cases file)
    parts = ("figures", "decisions", "views", "sidecar")
    assert files(outs["ray"], parts) == files(outs["local"], parts) != {}
    assert sorted_verdicts(outs["ray"], "flow").equals(sorted_verdicts(outs["local"], "flow"))
    shutil.rmtree(tmp_path / "local")


def test_sweep_command_on_ray(ray_cluster, synth_corpus, synth_cases, tmp_path) -> None:
    """``ctxreplay sweep --engine ray``: every point replayed and judged as locally."""
    runs = {}
    for engine in ("local", "ray"):
        run = tmp_path / engine / "run"
        args = ["sweep", str(synth_corpus), "--cases", str(synth_cases), "-o", str(run),
                "--grid", "tool-prune:keep=1,3", "--quiet", "--engine", engine]  # fmt: skip
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        runs[engine] = run
    assert files(runs["ray"]) == files(runs["local"]) != {}
    assert sorted_verdicts(runs["ray"], "flow").equals(sorted_verdicts(runs["local"], "flow"))


def test_the_judges_corpus_pass_runs_as_ray_tasks(ray_cluster, synth_corpus, tmp_path) -> None:
    """The flow judge's document frequencies counted block by block in Ray tasks (each reading
    the corpus from where it is) equal those of the local worker processes."""
    from ctxreplay.datasets.store import Corpus
    from ctxreplay.engines.judge import ray_pass
    from ctxreplay.judges.base import PASS_BLOCK, corpus_frequencies, corpus_pass, make_judge
    from ctxreplay.judges.flow.judge import frequency_of

    corpus = Corpus(synth_corpus)
    local = corpus_frequencies(corpus, frequency_of, block=2)
    with corpus_pass(ray_pass):
        on_ray = corpus_frequencies(corpus, frequency_of, block=2)
    assert on_ray == local and local[1] == 10 and len(local[0]) > 100
    assert len(last_tasks) == 5  # ten sessions in blocks of two: one task each
    flow = make_judge("flow")
    with corpus_pass(ray_pass):
        assert flow.corpus_state(corpus) == make_judge("flow").corpus_state(corpus)
    assert len(last_tasks) == -(-10 // PASS_BLOCK)
