"""A real two-node Ray cluster on this machine, whose worker node cannot see the driver's disk:
for the multi-node tests and ``benchmarks/bench_ray.py --nodes 2``.

The head node (``ray start --head``, 127.0.0.1's host address) runs the GCS and, by default, no
CPUs, so every task lands on the worker node; the worker node (``ray start --address``, at
127.0.0.2) runs in a mount namespace of its own (``unshare -m``) with a private tmpfs over
``/tmp``: the driver's temporary folders, its run copies and its cache do not exist there, as on
another machine. Both share the code (the installed package), the network (the S3 server on
127.0.0.1) and a token for Ray's authentication; each node gets the S3 endpoint and
credentials from its own environment, as a real node would.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

TESTS = Path(__file__).resolve().parent
#: the ray CLI of this interpreter's environment
RAY = str(Path(sys.executable).with_name("ray"))


def can_isolate() -> str | None:
    """Why a worker node cannot be given a private ``/tmp`` here (None: it can)."""
    if shutil.which("unshare") is None:
        return "no `unshare` on this machine"
    probe = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", "mount -t tmpfs tmpfs /tmp"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        return f"`unshare -m` with a private tmpfs is not allowed here: {probe.stderr.strip()}"
    return None


def _killpg(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def _stop(proc: subprocess.Popen[bytes] | None) -> None:
    """A node's process group ended: asked, then told."""
    if proc is None or proc.poll() is not None:
        return
    _killpg(proc, signal.SIGTERM)
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        _killpg(proc, signal.SIGKILL)
        proc.wait(10)


@dataclass
class TwoNodes:
    """The cluster's address, and its nodes' processes (each a process group of its own)."""

    address: str
    env: dict[str, str]  # what a driver process needs to join (Ray's token, no RAY_ADDRESS)
    worker_cpus: int
    worker_env: dict[str, str]
    head_cpus: int = 0
    head: subprocess.Popen[bytes] | None = None
    worker: subprocess.Popen[bytes] | None = None
    logs: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="ray-nodes-")))

    def start_worker(self) -> None:
        """The worker node, in its own mount namespace with a private ``/tmp``; returns once
        the cluster counts its CPUs."""
        script = 'mount -t tmpfs tmpfs /tmp && exec "$@"'
        cmd = [
            "unshare", "-m", "--propagation", "private", "--", "sh", "-c", script, "sh",
            RAY, "start", f"--address={self.address}", "--node-ip-address=127.0.0.2",
            f"--num-cpus={self.worker_cpus}", "--block", "--disable-usage-stats",
        ]  # fmt: skip
        log = (self.logs / "worker.log").open("ab")
        self.worker = subprocess.Popen(
            cmd, env=self.worker_env, stdout=log, stderr=log, start_new_session=True
        )
        self.wait_for_cpus(self.worker_cpus + self.head_cpus)

    def kill_worker(self) -> None:
        """The worker node lost at once (SIGKILL to every process of it), as a machine dies."""
        if self.worker is not None:
            _killpg(self.worker, signal.SIGKILL)
            self.worker.wait(20)
            self.worker = None

    def cpus(self) -> float:
        """The CPUs of the cluster's live nodes (asked in a driver process of its own)."""
        probe = (
            f"import ray; ray.init(address={self.address!r}, log_to_driver=False); "
            "print(sum(n['Resources'].get('CPU', 0) for n in ray.nodes() if n['Alive']))"
        )
        r = subprocess.run(
            [sys.executable, "-c", probe], env=self.env, capture_output=True, text=True
        )
        return float(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else -1.0

    def wait_for_cpus(self, want: float, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.cpus() == want:
                return
            time.sleep(1.0)
        raise RuntimeError(f"the Ray cluster did not reach {want} CPUs (logs: {self.logs})")

    def stop(self) -> None:
        _stop(self.worker)
        _stop(self.head)


def driver_env(token: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token, RAY_USAGE_STATS_ENABLED="0")
    return env


@contextlib.contextmanager
def two_nodes(
    port: int, *, head_cpus: int = 0, worker_cpus: int = 2, worker_env: dict[str, str]
) -> Iterator[TwoNodes]:
    """Start a head node on ``port`` and a worker node that sees none of this machine's
    ``/tmp``; ``worker_env``: what the worker node's processes (and so its tasks) get besides
    Ray's token (the S3 endpoint and credentials, a cache folder inside its private ``/tmp``,
    ``PYTHONPATH``). Both are stopped when the block ends."""
    env = driver_env(secrets.token_hex(16))
    head_dir = tempfile.mkdtemp(prefix="rh", dir="/tmp")  # short: Ray's socket paths
    cluster = TwoNodes(
        f"127.0.0.1:{port}",
        env,
        worker_cpus,
        {**env, **worker_env},
        head_cpus=head_cpus,
    )
    log = (cluster.logs / "head.log").open("ab")
    cluster.head = subprocess.Popen(
        [RAY, "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}",
         f"--num-cpus={head_cpus}", "--include-dashboard=false", f"--temp-dir={head_dir}",
         "--block", "--disable-usage-stats"],
        env=env, stdout=log, stderr=log, start_new_session=True,
    )  # fmt: skip
    try:
        cluster.wait_for_cpus(head_cpus)
        cluster.start_worker()
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(head_dir, ignore_errors=True)
