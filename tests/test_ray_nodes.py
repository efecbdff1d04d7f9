"""A run on object storage across a real two-node Ray cluster whose worker node cannot see the
driver's disk (``ray_nodes``: a private ``/tmp`` in its own mount namespace; the head node has
no CPUs, so every task runs on the worker). Replay and judge go from ``s3://`` (moto's server on
127.0.0.1) to ``s3://`` and give the local engine's output, byte for byte; a worker node killed
half way and a re-run finish the run with every part once.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from ctxreplay import storage
from ctxreplay.datasets.cases import read_cases
from ctxreplay.engines.judge import run_judge
from ctxreplay.engines.replay import make_chunks, run_replay
from ctxreplay.runs import read_verdicts
from ray_nodes import TESTS, TwoNodes, can_isolate, two_nodes
from s3_server import ENV, S3, free_port, moto_s3
from test_ray_engine import REPLAY_FOLDERS, files

ray = pytest.importorskip("ray")
_why = can_isolate()
if _why:
    pytest.skip(_why, allow_module_level=True)

POLICIES = ("noop", "tool-prune:keep=1", "observation-masking")


@pytest.fixture(scope="module")
def s3() -> Iterator[S3]:
    with moto_s3() as server:
        yield server


@pytest.fixture(scope="module")
def cluster(s3: S3) -> Iterator[TwoNodes]:
    worker_env = {k: os.environ[k] for k in ENV}
    worker_env |= {"CTXREPLAY_CACHE_DIR": "/tmp/ctxreplay-cache", "PYTHONPATH": str(TESTS)}
    with two_nodes(free_port(), worker_env=worker_env) as nodes:
        yield nodes


@pytest.fixture(scope="module")
def inputs(s3: S3, synth_corpus: Path, synth_cases: Path) -> tuple[str, str]:
    """The corpus and cases on the server."""
    storage.upload(synth_corpus, s3.uri("in/corpus"))
    storage.write_bytes(s3.uri("in/cases.parquet"), synth_cases.read_bytes())
    return s3.uri("in/corpus"), s3.uri("in/cases.parquet")


def remote_files(s3: S3, prefix: str) -> dict[str, bytes]:
    """What a run on the server holds in the replay's folders (relative key → bytes)."""
    return {
        key[len(prefix) + 1 :]: s3.get(key)
        for key in s3.keys(prefix + "/")
        if key[len(prefix) + 1 :].split("/", 1)[0] in REPLAY_FOLDERS
    }


def temp_objects(s3: S3, prefix: str) -> list[str]:
    return [k for k in s3.keys(prefix + "/") if storage.is_temp(k)]


def driver(cluster: TwoNodes, tmp: Path, *args: str, timeout: float = 300) -> str:
    """A ``ctxreplay`` command on the driver's side (its own cache and temporary folder, which
    the worker node cannot see); its stdout. Fails the test unless it exits 0."""
    env = {**cluster.env, "CTXREPLAY_CACHE_DIR": str(tmp / "cache"), "TMPDIR": str(tmp / "t")}
    (tmp / "t").mkdir(parents=True, exist_ok=True)
    r = subprocess.run(
        [sys.executable, "-m", "ctxreplay", *args], env=env, capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def test_replay_and_judge_from_s3_to_s3_on_the_worker_node(
    cluster: TwoNodes,
    s3: S3,
    inputs: tuple[str, str],
    synth_corpus: Path,
    synth_cases: Path,
    tmp_path: Path,
) -> None:
    local = tmp_path / "local" / "run"  # the same name as on the server: the same rows
    run_replay(synth_corpus, synth_cases, POLICIES, local, workers=1, progress=False)
    run_judge(local, "flow", workers=1, progress=False)

    corpus, cases = inputs
    run = s3.uri("a/run")
    on = ["--engine", "ray", "--ray-address", cluster.address, "--quiet"]
    policies = [a for p in POLICIES for a in ("--policy", p)]
    out = driver(cluster, tmp_path / "d", "replay", corpus, "--cases", cases, *policies,
                 "-o", run, *on)  # fmt: skip
    assert f"→ {run}" in out
    out = driver(cluster, tmp_path / "d", "judge", run, "--judge", "flow", *on)
    assert "judged" in out

    assert remote_files(s3, "a/run") == files(local) and len(files(local)) > 3 * len(POLICIES)
    assert temp_objects(s3, "a/run") == []
    copy = tmp_path / "copy" / "run"
    storage.download(run, copy)
    assert (
        read_verdicts(copy, "flow").sort("policy", "case_id").drop("run")
        .equals(read_verdicts(local, "flow").sort("policy", "case_id").drop("run"))
    )  # fmt: skip
    # the corpus pass's state, made on the worker, is the local one
    state = "judge-state/" + next(p.name for p in (local / "judge-state").iterdir())
    assert s3.get(f"a/run/{state}") == (local / state).read_bytes()
    # nothing of the run stayed on the driver's disk
    assert list((tmp_path / "d" / "t").iterdir()) == []
    # a re-run finds everything done, on any node
    again = driver(cluster, tmp_path / "e", "replay", corpus, "--cases", cases, *policies,
                   "-o", run, *on)  # fmt: skip
    assert "(0 chunk-policies computed" in again


def test_a_local_run_folder_the_worker_cannot_see_is_one_line(
    cluster: TwoNodes, inputs: tuple[str, str], tmp_path: Path
) -> None:
    """Never parts written where nobody reads them: a task on a node without the folder fails
    the run with what to give instead."""
    corpus, cases = inputs
    env = {**cluster.env, "CTXREPLAY_CACHE_DIR": str(tmp_path / "cache")}
    r = subprocess.run(
        [sys.executable, "-m", "ctxreplay", "replay", corpus, "--cases", cases, "--policy", "noop",
         "-o", str(tmp_path / "run"), "--engine", "ray", "--ray-address", cluster.address,
         "--quiet"],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 2, r.stderr[-2000:]
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith(f"error: the run folder {tmp_path / 'run'} is not there on this node")
    assert "s3://bucket/run" in line
    assert not list((tmp_path / "run").glob("figures/*/*.parquet"))


#: a driver that joins the cluster with the test doubles registered on its workers
DRIVER = """
import sys
sys.path.insert(0, {tests!r})
import ray, ray_helpers
ray.init(address={address!r}, log_to_driver=False,
         runtime_env={{"worker_process_setup_hook": "ray_helpers.register"}})
ray_helpers.register()
from ctxreplay.engines.judge import run_judge
from ctxreplay.engines.replay import run_replay
if {stage!r} == "replay":
    run_replay({corpus!r}, {cases!r}, {policies!r}, {run!r}, progress=False, chunk_size=4,
               engine="ray", ray_address={address!r})
else:
    run_judge({run!r}, "ray-slow:pause=0.1", progress=False, chunk_cases=4, engine="ray",
              ray_address={address!r})
"""


def _killed_half_way(
    cluster: TwoNodes, s3: S3, tmp: Path, stage: str, folder: str, args: dict[str, object]
) -> int:
    """Run ``stage`` on the cluster; once some of its parts are on the server (under
    ``folder``), kill the worker node and then the driver (its tasks could run nowhere); start
    the worker node again. Returns the parts there when it was killed."""
    script = DRIVER.format(tests=str(TESTS), address=cluster.address, stage=stage, **args)
    env = {**cluster.env, "CTXREPLAY_CACHE_DIR": str(tmp / "cache")}
    proc = subprocess.Popen([sys.executable, "-c", script], env=env)
    deadline = time.monotonic() + 240
    seen = 0
    while time.monotonic() < deadline and proc.poll() is None:
        seen = len(s3.keys(folder))
        if seen >= 2:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before the worker node could be killed"
    cluster.kill_worker()
    time.sleep(1.0)
    proc.kill()
    proc.wait(30)
    cluster.start_worker()
    return seen


def test_a_worker_node_killed_half_way_and_a_rerun_finish_with_every_part_once(
    cluster: TwoNodes, s3: S3, inputs: tuple[str, str], synth_corpus: Path,
    synth_cases: Path, tmp_path: Path,
) -> None:  # fmt: skip
    import ray_helpers

    policies = ["noop", "ray-fault:pause=0.2"]
    ray_helpers.register()
    try:
        local = tmp_path / "local" / "run"
        run_replay(synth_corpus, synth_cases, policies, local, workers=1, progress=False,
                   chunk_size=4)  # fmt: skip
        run_judge(local, "ray-slow", workers=1, progress=False)
    finally:
        ray_helpers.unregister()
    chunks = len(make_chunks(read_cases(synth_cases)[0], 4))
    corpus, cases = inputs
    run = s3.uri("b/run")
    args = {"corpus": corpus, "cases": cases, "policies": policies, "run": run}
    seen = _killed_half_way(cluster, s3, tmp_path / "d", "replay", "b/run/done/ray-fault", args)
    assert 2 <= seen < chunks  # killed in the middle
    # the re-run finishes it: every part once, as the local run made them
    rerun = DRIVER.format(tests=str(TESTS), address=cluster.address, stage="replay", **args)
    env = {**cluster.env, "CTXREPLAY_CACHE_DIR": str(tmp_path / "r" / "cache")}
    subprocess.run([sys.executable, "-c", rerun], env=env, check=True, timeout=300)
    assert remote_files(s3, "b/run") == files(local)
    assert temp_objects(s3, "b/run") == []

    # the judge, killed half way, then re-run
    pairs = pl.read_parquet(local / "figures" / "**" / "*.parquet").height
    judged = _killed_half_way(cluster, s3, tmp_path / "j", "judge", "b/run/verdicts/", args)
    assert judged >= 2
    rerun = DRIVER.format(tests=str(TESTS), address=cluster.address, stage="judge", **args)
    subprocess.run([sys.executable, "-c", rerun], env=env, check=True, timeout=300)
    copy = tmp_path / "copy" / "run"
    storage.download(run, copy)
    rows = pl.read_parquet(copy / "verdicts" / "**" / "*.parquet")
    assert rows.height == pairs  # every pair once: no verdict written twice
    assert rows.select("policy", "case_id").n_unique() == pairs
    assert (
        read_verdicts(copy, "ray-slow").sort("policy", "case_id").drop("run", "judge")
        .equals(read_verdicts(local, "ray-slow").sort("policy", "case_id").drop("run", "judge"))
    )  # fmt: skip
    assert temp_objects(s3, "b/run") == []


def readme_cluster_commands() -> list[str]:
    """The ``ctxreplay`` lines of the README's "On a cluster" block (its ``ray start`` lines are
    what :func:`ray_nodes.two_nodes` runs, with the flags a test on one machine needs)."""
    text = (TESTS.parent / "README.md").read_text()
    section = text[text.index("## On a cluster") :]
    block = section[section.index("```bash") : section.index("```", section.index("```bash") + 3)]
    return [ln.split("  #")[0].strip() for ln in block.splitlines() if ln.startswith("ctxreplay ")]


def test_the_readme_cluster_section_runs_as_written(
    cluster: TwoNodes, s3: S3, synth_corpus: Path, tmp_path: Path
) -> None:
    import shlex

    commands = readme_cluster_commands()
    assert [c.split()[1] for c in commands] == ["import", "cases", "replay", "judge", "report",
                                                "sql"]  # fmt: skip
    traces = tmp_path / "traces.jsonl"
    driver(cluster, tmp_path / "x", "export", str(synth_corpus), "-o", str(traces))
    cluster.env["RAY_ADDRESS"] = cluster.address  # what `auto` finds on a node of the cluster
    try:
        outputs = []
        for command in commands:
            words = shlex.split(command.replace("s3://b/", s3.uri("readme") + "/"))[1:]
            words = [str(traces) if w == "traces.jsonl" else w for w in words]
            outputs.append(driver(cluster, tmp_path / "d", *words))
    finally:
        del cluster.env["RAY_ADDRESS"]
    assert "tool-prune" in outputs[4]  # the report
    assert outputs[5].count("tool-prune") == 1 and "noop" in outputs[5]  # the sql
