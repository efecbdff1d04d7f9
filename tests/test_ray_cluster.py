"""`--ray-address`: replay and judge join a Ray cluster that is already running, as on a real
cluster, and give the local engine's output; an address where none runs is one line, at once.

The cluster is started by the test process; the commands are real `ctxreplay` processes, drivers
that join it at its address (given an address, Ray never starts a cluster of its own).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctxreplay.engines.judge import run_judge
from ctxreplay.engines.replay import run_replay
from s3_server import free_port
from test_ray_engine import files, sorted_verdicts

ray = pytest.importorskip("ray")
POLICIES = ("noop", "tool-prune:keep=1", "observation-masking")


@pytest.fixture(scope="module")
def head() -> Iterator[str]:
    """A Ray cluster of 2 CPUs started by this process (a head node: GCS, raylet, workers);
    its address, which other processes join as they would a cluster's."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield str(ray.get_runtime_context().gcs_address)
    ray.shutdown()


def ctxreplay(*args: str, ray_address: str | None = None) -> subprocess.CompletedProcess[str]:
    """A ``ctxreplay`` process; ``ray_address``: the cluster ``auto`` finds (``RAY_ADDRESS``, as
    ``ray start`` leaves it for the processes of its node)."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    if ray_address:
        env["RAY_ADDRESS"] = ray_address
    return subprocess.run(
        [sys.executable, "-m", "ctxreplay", *args], env=env, capture_output=True, text=True
    )


def test_replay_and_judge_join_a_running_cluster(
    head: str, synth_corpus: Path, synth_cases: Path, tmp_path: Path
) -> None:
    local = tmp_path / "local"
    run_replay(synth_corpus, synth_cases, POLICIES, local, workers=1, progress=False)
    run_judge(local, "flow", workers=1, progress=False)

    on_ray = tmp_path / "ray"
    policies = [a for p in POLICIES for a in ("--policy", p)]
    replay = ctxreplay(
        "replay", str(synth_corpus), "--cases", str(synth_cases), *policies, "-o", str(on_ray),
        "--engine", "ray", "--ray-address", head, "--quiet",
    )  # fmt: skip
    assert replay.returncode == 0, replay.stderr
    judge = ctxreplay(
        "judge", str(on_ray), "--judge", "flow", "--engine", "ray", "--ray-address", "auto",
        "--quiet", ray_address=head,
    )  # fmt: skip
    assert judge.returncode == 0, judge.stderr

    assert files(on_ray) == files(local)
    assert (
        sorted_verdicts(on_ray, "flow")
        .drop("run")
        .equals(sorted_verdicts(local, "flow").drop("run"))
    )


def test_an_address_where_no_cluster_runs_is_one_line(tmp_path: Path, synth_corpus: Path,
                                                      synth_cases: Path) -> None:  # fmt: skip
    nowhere = f"127.0.0.1:{free_port()}"
    r = ctxreplay(
        "replay", str(synth_corpus), "--cases", str(synth_cases), "--policy", "noop",
        "-o", str(tmp_path / "run"), "--engine", "ray", "--ray-address", nowhere, "--quiet",
    )  # fmt: skip
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"error: no Ray cluster answers at {nowhere} (Connection refused); start one with "
        "`ray start --head`, or give the address it printed"
    ]
    assert not (tmp_path / "run").exists()  # nothing written
