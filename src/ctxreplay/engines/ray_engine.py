"""The Ray engine: the local engine's chunks as Ray tasks, on one machine or a cluster.

Replay and judge cut their work into the same fixed chunks of whole sessions as with the local
engine and hand each one to :func:`run_tasks`, which runs it as a Ray task instead of in a worker
process. A task writes its chunk's atomic Parquet parts (and done-markers) itself, into the run
folder, which every node must therefore reach (a shared file system or object storage); the
driver only tallies what each task returns. So a Ray run's output is the local engine's, and a
re-run skips what is done the same way. A task whose worker dies is retried by Ray; a task that
fails stops the run after the tasks in flight finish, and a re-run redoes only what is missing.

Model calls made in a task go through the cluster-wide limiter (:mod:`ctxreplay.llm.
cluster_limiter`): one actor per (run, endpoint), removed when the run ends.

``ray`` is imported only here and only when this engine is used: ``pip install 'ctxreplay[ray]'``.
"""

from __future__ import annotations

import logging
import os
import resource
import socket
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import CtxreplayError
from ..llm import cluster_limiter

ENGINES = ("local", "ray")
INSTALL = "pip install 'ctxreplay[ray]'"


class RayEngineError(CtxreplayError):
    pass


def check_engine(engine: str, address: str | None = None) -> None:
    """Fail before any work on an unknown engine, on ``ray`` when Ray is not installed, or
    when nothing listens at the cluster ``address`` (Ray itself would retry for minutes)."""
    if engine not in ENGINES:
        raise RayEngineError(f"unknown engine {engine!r}; the engines are {', '.join(ENGINES)}")
    if engine == "ray":
        _ray()
        if address and address != "auto":
            _reachable(address)


#: how long a cluster address is given to accept a connection
CONNECT_S = 5.0


def _reachable(address: str) -> None:
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise RayEngineError(f"--ray-address {address!r} is not auto, host:port or ray://host:port")
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_S).close()
    except OSError as e:
        raise RayEngineError(
            f"no Ray cluster answers at {address} ({e.strerror or e}); start one with "
            "`ray start --head`, or give the address it printed"
        ) from None


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RayEngineError(f"--engine ray needs Ray, which is not installed: {INSTALL}") from None
    return ray


def connect(address: str | None = None) -> Any:
    """Ray, connected: the one this process is already connected to, else the cluster at
    ``address`` (``auto``: the one ``ray start`` made on this node; ``ray://host:port``: a
    remote one), else a new local Ray of this machine's cores."""
    ray = _ray()
    if not ray.is_initialized():
        if address:
            try:
                ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
            except ConnectionError as e:  # ``auto`` with no cluster on this node, say
                raise RayEngineError(f"cannot join the Ray cluster at {address}: {e}") from None
        else:
            ray.init(include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    return ray


@dataclass(frozen=True)
class TaskInfo:
    """Where and how one task ran: for benchmarks and tests (which workers, at the same time)."""

    pid: int
    host: str
    started: float  # wall-clock seconds since the epoch
    seconds: float
    max_rss_mb: float  # the worker process's peak resident memory so far
    node: str = ""  # the Ray node it ran on (nodes of one machine share a host name)


#: the tasks of the latest :func:`run_tasks` of this process, as they finished
last_tasks: list[TaskInfo] = []


def _task(fn: Callable[..., Any], run_key: str, *args: Any) -> tuple[Any, TaskInfo]:
    """One task, in a Ray worker: model calls held by the run's cluster-wide limiters."""
    cluster_limiter.install(run_key)
    started, t0 = time.time(), time.perf_counter()
    try:
        result = fn(*args)
    finally:
        cluster_limiter.uninstall()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux
    node = _ray().get_runtime_context().get_node_id()
    info = TaskInfo(os.getpid(), socket.gethostname(), started, time.perf_counter() - t0, rss, node)
    return result, info


def run_tasks(
    fn: Callable[..., Any],
    calls: Iterable[tuple[Any, ...]],
    *,
    address: str | None = None,
    shared: tuple[Any, ...] = (),
    in_flight: int | None = None,
) -> Iterator[Any]:
    """``fn(*shared, *call)`` for each call, each as one Ray task; the results as they finish.

    ``fn`` must be importable by the workers (a module-level function of ctxreplay).
    ``shared``: arguments every call takes, put in Ray's object store once. At most
    ``in_flight`` tasks are submitted at a time (default: twice the cluster's CPUs), so the
    driver holds a bounded number of results. A task that raises stops the submitting; the
    tasks in flight still finish (and write their parts), then the first error is raised."""
    ray = connect(address)
    run_key = uuid.uuid4().hex[:16]
    remote = ray.remote(_task)
    refs = tuple(ray.put(value) for value in shared)
    limit = in_flight or max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
    last_tasks.clear()
    pending: list[Any] = []
    error: BaseException | None = None

    def finished(done: list[Any]) -> Iterator[Any]:
        nonlocal error
        for ref in done:
            try:
                result, info = ray.get(ref)
            except Exception as e:  # the task's own error (Ray re-raises it as its type)
                cause = getattr(e, "cause", None)  # a user's mistake reads as one line
                error = error or (cause if isinstance(cause, CtxreplayError) else e)
                continue
            last_tasks.append(info)
            yield result

    try:
        for call in calls:
            if error is not None:
                break
            while len(pending) >= limit:
                done, pending = ray.wait(pending, num_returns=1)
                yield from finished(done)
            pending.append(remote.remote(fn, run_key, *refs, *call))
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield from finished(done)
    finally:
        for ref in pending:  # the caller stopped early: nothing more is wanted
            ray.cancel(ref)
        if ray.is_initialized():
            cluster_limiter.remove_run(run_key)
    if error is not None:
        raise error
