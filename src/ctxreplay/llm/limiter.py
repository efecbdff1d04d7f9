"""The adaptive per-endpoint concurrency limit, shared by every client of one ``base_url`` in the
process.

At most ``limit`` calls are in flight to an endpoint. A 429 halves the limit (minimum 1) and
pauses new calls until its Retry-After time; each run of ``recover_after`` successes raises the
limit by one, up to the ceiling (the smallest ``concurrency`` any client of the endpoint asked
for).

Time is the caller's: :meth:`EndpointLimiter.acquire` and :meth:`EndpointLimiter.on_rate_limited`
take the client's ``clock`` and ``sleep``, so a test that injects a manual clock never waits on
the wall clock. The clients of one endpoint are expected to share one notion of time (the real
one outside tests).

Under a cluster engine the limit must hold across processes and nodes, not per process: an
engine installs a *provider* (:func:`use_provider`) in each worker, and :func:`endpoint_limiter`
then returns the provider's limiter (a proxy to state held elsewhere, e.g.
:mod:`.cluster_limiter`) with the same interface (:class:`Limiter`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

Clock = Callable[[], float]
Sleep = Callable[[float], None]


class Limiter(Protocol):
    """What a model client asks of its endpoint's limiter, in-process or cluster-wide."""

    def acquire(self, clock: Clock = ..., sleep: Sleep = ...) -> None: ...

    def release(self) -> None: ...

    def on_unreachable(self) -> int: ...

    def on_answer(self) -> None: ...

    def on_success(self) -> None: ...

    def on_rate_limited(self, wait: float, clock: Clock = ...) -> None: ...


class EndpointLimiter:
    """At most ``limit`` calls in flight to one endpoint, across every client of the process."""

    def __init__(self, ceiling: int, recover_after: int = 8) -> None:
        self.ceiling = max(1, int(ceiling))
        self.limit = self.ceiling
        self.recover_after = max(1, recover_after)
        self.in_flight = 0
        self.peak = 0
        self.rate_limited = 0
        self._successes = 0
        self._paused_until = 0.0
        #: connection errors in a row (reset by any answer): a dead endpoint stops the run
        self.unreachable = 0
        self._cond = threading.Condition()

    def acquire(self, clock: Clock = time.monotonic, sleep: Sleep = time.sleep) -> None:
        """Take a slot: wait out a pause (with ``sleep``), then for a free slot."""
        while True:
            pause = self.try_acquire(clock)
            if pause is None:
                return
            sleep(pause)

    def try_acquire(
        self, clock: Clock = time.monotonic, timeout: float | None = None
    ) -> float | None:
        """Take a slot (None), or say how long the endpoint is paused for (the caller sleeps
        that long and asks again: a remote caller sleeps on its own clock). Waits for a free
        slot, at most ``timeout`` seconds (then 0.0: ask again)."""
        with self._cond:
            while True:
                pause = self._paused_until - clock()
                if pause > 0:
                    return pause
                if self.in_flight < self.limit:
                    self.in_flight += 1
                    self.peak = max(self.peak, self.in_flight)
                    return None
                # a release or a recovery notifies
                if not self._cond.wait(timeout) and timeout is not None:
                    return 0.0

    def release(self) -> None:
        with self._cond:
            self.in_flight -= 1
            self._cond.notify_all()

    def on_unreachable(self) -> int:
        """Count one more connection error in a row; the new count."""
        with self._cond:
            self.unreachable += 1
            return self.unreachable

    def on_answer(self) -> None:
        """Any HTTP answer, even an error status: the endpoint is there."""
        with self._cond:
            self.unreachable = 0

    def on_success(self) -> None:
        with self._cond:
            self.unreachable = 0
            self._successes += 1
            if self.limit < self.ceiling and self._successes >= self.recover_after:
                self.limit += 1
                self._successes = 0
                self._cond.notify_all()

    def on_rate_limited(self, wait: float, clock: Clock = time.monotonic) -> None:
        """A 429: halve the limit and pause new calls for ``wait`` seconds."""
        with self._cond:
            self.rate_limited += 1
            self.limit = max(1, self.limit // 2)
            self._successes = 0
            self._paused_until = max(self._paused_until, clock() + max(0.0, wait))

    def lower_ceiling(self, ceiling: int) -> None:
        with self._cond:
            self.ceiling = min(self.ceiling, max(1, int(ceiling)))
            self.limit = min(self.limit, self.ceiling)


_lock = threading.Lock()
_limiters: dict[str, EndpointLimiter] = {}
#: where limiters come from instead of this process (set by a cluster engine in its workers)
Provider = Callable[[str, int], Limiter]
_provider: list[Provider] = []


def use_provider(provider: Provider | None) -> None:
    """Make :func:`endpoint_limiter` return ``provider(base_url, concurrency)`` from now on in
    this process (None: this process's own limiters again)."""
    with _lock:
        _provider[:] = [provider] if provider is not None else []


def endpoint_limiter(base_url: str, concurrency: int = 4) -> Limiter:
    """The limiter shared by every client of ``base_url``; a smaller ``concurrency`` lowers it.
    Under a cluster engine, the cluster-wide one of the installed provider."""
    key = base_url.rstrip("/")
    with _lock:
        provider = _provider[0] if _provider else None
    if provider is not None:
        return provider(key, concurrency)
    with _lock:
        limiter = _limiters.get(key)
        if limiter is None:
            limiter = _limiters[key] = EndpointLimiter(concurrency)
        elif concurrency < limiter.ceiling:
            limiter.lower_ceiling(concurrency)
        return limiter


def forget_limiters() -> None:
    with _lock:
        _limiters.clear()
