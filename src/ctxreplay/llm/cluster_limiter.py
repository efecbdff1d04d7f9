"""The per-endpoint limit held cluster-wide under the Ray engine, not per worker process.

One named, detached Ray actor per (run, endpoint) owns an :class:`~.limiter.EndpointLimiter`:
the in-flight count, the adaptive limit, the 429 pause. Every worker's clients reach it through
:class:`ClusterLimiter`, a proxy with the limiter's interface (:class:`~.limiter.Limiter`), which
the engine makes :func:`~.limiter.endpoint_limiter` return in its workers (:func:`install`). So
``concurrency`` calls are in flight to an endpoint across the whole cluster, and one worker's
429 backs every worker off.

A slot is a *lease*: a worker killed while holding one cannot release it, so the actor takes
back leases older than :data:`LEASE_S`. Pauses are measured on the actor's clock and slept on the
caller's (``sleep``), so a paused endpoint holds no actor thread. The engine removes a run's
actors when the run ends (:func:`remove_run`). ``ray`` is imported lazily: ctxreplay works
without it.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
import uuid
from typing import Any

from .limiter import Clock, EndpointLimiter, Sleep, use_provider

NAMESPACE = "ctxreplay"
PREFIX = "ctxreplay-limiter"
#: seconds after which a slot whose holder never released it (killed) is taken back
LEASE_S = 900.0
#: seconds an actor thread waits for a free slot before the caller asks again
_POLL_S = 1.0


def actor_name(run_key: str, base_url: str) -> str:
    """The actor of one endpoint for one run (the URL hashed: it may carry credentials)."""
    digest = hashlib.sha256(base_url.rstrip("/").encode()).hexdigest()[:16]
    return f"{PREFIX}:{run_key}:{digest}"


class LimiterActor:
    """The state of one endpoint's limit, in one actor (a threaded actor: callers waiting for a
    slot block a thread of it, never the releases)."""

    def __init__(self, ceiling: int) -> None:
        self.limiter = EndpointLimiter(ceiling)
        self._leases: dict[str, float] = {}  # lease → when it is taken back
        self._lock = threading.Lock()

    def lower_ceiling(self, ceiling: int) -> None:
        self.limiter.lower_ceiling(ceiling)

    def try_acquire(self, lease: str) -> float | None:
        """None: ``lease`` holds a slot; else seconds to sleep before asking again."""
        self._reclaim()
        pause = self.limiter.try_acquire(time.monotonic, timeout=_POLL_S)
        if pause is None:
            with self._lock:
                self._leases[lease] = time.monotonic() + LEASE_S
        return pause

    def release(self, lease: str) -> None:
        with self._lock:
            held = self._leases.pop(lease, None)
        if held is not None:
            self.limiter.release()

    def _reclaim(self) -> None:
        now = time.monotonic()
        with self._lock:
            expired = [k for k, until in self._leases.items() if until < now]
            for k in expired:
                del self._leases[k]
        for _ in expired:
            self.limiter.release()

    def on_unreachable(self) -> int:
        return self.limiter.on_unreachable()

    def on_answer(self) -> None:
        self.limiter.on_answer()

    def on_success(self) -> None:
        self.limiter.on_success()

    def on_rate_limited(self, wait: float) -> None:
        self.limiter.on_rate_limited(wait, time.monotonic)

    def stats(self) -> dict[str, int]:
        lim = self.limiter
        return {
            "ceiling": lim.ceiling,
            "limit": lim.limit,
            "in_flight": lim.in_flight,
            "peak": lim.peak,
            "rate_limited": lim.rate_limited,
        }


_remote: list[Any] = []


def _actor_class() -> Any:
    import ray

    if not _remote:
        _remote.append(ray.remote(LimiterActor))
    return _remote[0]


def limiter_actor(run_key: str, base_url: str, concurrency: int) -> Any:
    """The endpoint's actor for this run, made by whichever worker asks first; a smaller
    ``concurrency`` lowers its ceiling, as in one process."""
    import ray

    handle = (
        _actor_class()
        .options(
            name=actor_name(run_key, base_url),
            namespace=NAMESPACE,
            lifetime="detached",  # outlives the worker that made it; removed with the run
            get_if_exists=True,
            num_cpus=0,
            max_concurrency=512,
        )
        .remote(concurrency)
    )
    ray.get(handle.lower_ceiling.remote(concurrency))
    return handle


class ClusterLimiter:
    """A worker's proxy to its endpoint's actor, with the in-process limiter's interface."""

    def __init__(self, actor: Any) -> None:
        self._actor = actor
        self._held = threading.local()  # the leases this thread holds (acquire/release pairs)

    def _get(self, ref: Any) -> Any:
        import ray

        return ray.get(ref)

    def acquire(self, clock: Clock = time.monotonic, sleep: Sleep = time.sleep) -> None:
        lease = uuid.uuid4().hex
        while True:
            pause = self._get(self._actor.try_acquire.remote(lease))
            if pause is None:
                break
            if pause > 0:
                sleep(pause)
        self._held.__dict__.setdefault("leases", []).append(lease)

    def release(self) -> None:
        leases = self._held.__dict__.get("leases") or []
        if leases:
            self._get(self._actor.release.remote(leases.pop()))

    def on_unreachable(self) -> int:
        return int(self._get(self._actor.on_unreachable.remote()))

    def on_answer(self) -> None:
        self._get(self._actor.on_answer.remote())

    def on_success(self) -> None:
        self._get(self._actor.on_success.remote())

    def on_rate_limited(self, wait: float, clock: Clock = time.monotonic) -> None:
        self._get(self._actor.on_rate_limited.remote(wait))

    def stats(self) -> dict[str, int]:
        return dict(self._get(self._actor.stats.remote()))


_proxies: dict[tuple[str, str], ClusterLimiter] = {}
_lock = threading.Lock()


def install(run_key: str) -> None:
    """In this (worker) process, every client's limiter is its endpoint's actor of ``run_key``."""

    def provider(base_url: str, concurrency: int) -> ClusterLimiter:
        key = (run_key, base_url.rstrip("/"))
        with _lock:
            proxy = _proxies.get(key)
            if proxy is None:
                proxy = _proxies[key] = ClusterLimiter(
                    limiter_actor(run_key, base_url, concurrency)
                )
                return proxy
        proxy._get(proxy._actor.lower_ceiling.remote(concurrency))
        return proxy

    use_provider(provider)


def uninstall() -> None:
    use_provider(None)


def run_actors(run_key: str) -> list[str]:
    """The names of this run's limiter actors alive in the cluster."""
    from ray.util import list_named_actors

    prefix = f"{PREFIX}:{run_key}:"
    return sorted(
        a["name"]
        for a in list_named_actors(all_namespaces=True)
        if a.get("namespace") == NAMESPACE and str(a.get("name", "")).startswith(prefix)
    )


def run_stats(run_key: str) -> dict[str, dict[str, int]]:
    """Each of this run's endpoint actors' counts (peak in flight, 429s, limit)."""
    import ray

    out: dict[str, dict[str, int]] = {}
    for name in run_actors(run_key):
        ref: Any = ray.get_actor(name, namespace=NAMESPACE).stats.remote()
        out[name] = dict(ray.get(ref))
    return out


def remove_run(run_key: str) -> None:
    """End this run's limiter actors (they are detached: nothing else would)."""
    import ray

    for name in run_actors(run_key):
        with contextlib.suppress(ValueError):  # already gone
            ray.kill(ray.get_actor(name, namespace=NAMESPACE))
    with _lock:
        for key in [k for k in _proxies if k[0] == run_key]:
            del _proxies[key]
