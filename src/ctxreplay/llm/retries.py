"""Bounded retries of transient failures, with ``tenacity``.

A failure is transient on 429, 408/409, 5xx, a timeout or a connection error; anything else
fails at once. Between attempts the client waits what a 429/503 asks (``retry-after-ms``, else
``Retry-After`` in seconds or as an HTTP date; at most ``max_wait``), else a capped exponential
backoff with deterministic jitter (the same request waits the same). The wait is done by the
``sleep`` the client was given, so tests record the waits instead of sleeping them.

The openai SDK's own retries are off (``max_retries=0``): every attempt goes through the
per-endpoint limiter (:mod:`.limiter`), which must see each 429 to back the endpoint off.
"""

from __future__ import annotations

import email.utils
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import tenacity

from .limiter import Sleep

RETRYABLE_STATUS = frozenset({408, 409, 429})
T = TypeVar("T")


class TransientFailure(Exception):
    """An attempt that failed in a way worth another attempt."""

    def __init__(self, failure: str, status: int | None, wait: float | None) -> None:
        super().__init__(failure)
        self.failure = failure  # "http 503", "timeout", "connection error"
        self.status = status
        self.wait = wait  # what the endpoint asked us to wait, when it said


def is_retryable(status: int | None) -> bool:
    """Transient: no status (timeout, connection error), 408/409/429 or 5xx."""
    return status is None or status in RETRYABLE_STATUS or status >= 500


def retry_after_seconds(
    headers: Mapping[str, str] | Any, now: datetime | None = None
) -> float | None:
    """Seconds a 429/503 asks us to wait: ``retry-after-ms``, or ``Retry-After`` (seconds or
    HTTP-date); None when absent or unreadable."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def backoff_seconds(attempt: int, base: float, cap: float, salt: str) -> float:
    """Capped exponential backoff with deterministic jitter (half to full of the step)."""
    step = min(cap, base * float(2 ** max(0, attempt - 1)))
    jitter = random.Random(f"{salt}:{attempt}").random()
    return step * (0.5 + 0.5 * jitter)


@dataclass
class Backoff:
    """How long to wait before retry number ``n`` (1 for the first retry)."""

    base: float = 0.5
    cap: float = 20.0
    max_wait: float = 120.0  # the most a Retry-After is honoured for

    def asked(self, wait: float | None) -> float | None:
        """What the endpoint asked, bounded by ``max_wait``."""
        return min(wait, self.max_wait) if wait is not None else None

    def delay(self, n: int, failure: TransientFailure, salt: str) -> float:
        asked = self.asked(failure.wait)
        return asked if asked is not None else backoff_seconds(n, self.base, self.cap, salt)


def with_retries(
    attempt: Callable[[], T],
    *,
    max_retries: int,
    backoff: Backoff,
    salt: str,
    sleep: Sleep,
) -> T:
    """``attempt()``, again after each :class:`TransientFailure` up to ``max_retries`` times;
    the last failure is raised as it is."""

    def wait(state: tenacity.RetryCallState) -> float:
        failure = state.outcome.exception() if state.outcome else None
        assert isinstance(failure, TransientFailure)
        return backoff.delay(state.attempt_number, failure, salt)

    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(max_retries + 1),
        wait=wait,
        retry=tenacity.retry_if_exception_type(TransientFailure),
        sleep=sleep,
        reraise=True,
    )
    return retrying(attempt)
