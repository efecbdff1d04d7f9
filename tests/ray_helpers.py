"""What the Ray tests run inside Ray workers (importable there: the tests put this folder on the
workers' ``PYTHONPATH`` and name :func:`register` as their setup hook).

- ``ray-fault``: a test-only policy that keeps everything, like ``noop``, except that on the
  sessions it names it fails while a marker file exists: it raises (a task that fails), or ends
  its worker process at once (a killed worker, which Ray retries), removing the marker first.
  With ``pause``, it sleeps that long on every case (a long run, to kill a node in the middle).
- ``ray-slow``: the truth judge, sleeping ``pause`` seconds before each verdict (likewise).
- :func:`hammer`: a task that sends model calls from several threads of one worker, through the
  cluster-wide limiter of a run (or the process's own one), for the limiter test.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ctxreplay.judges.base import JudgeInput, Verdict, judges
from ctxreplay.judges.truth import TruthJudge
from ctxreplay.policies.base import Policy, policies, policy
from ctxreplay.policies.budget import Need
from ctxreplay.registry import param
from ctxreplay.replay.context import PrefixContext
from ctxreplay.replay.plan import Plan


class RayFault(Policy):
    """Keeps everything (as ``noop``), and fails on a marker file: a test double for a killed
    or failing Ray task. Follows no public system; it exists for the tests."""

    @dataclass(frozen=True)
    class Params:
        marker: str = param("", "a file: while it exists, the named session fails")
        session: str = param("", "the session id that fails")
        exit: bool = param(False, "end the worker process (else raise)")
        pause: float = param(0.0, "seconds slept on every case")

    def propose(self, ctx: PrefixContext, need: Need) -> Plan:
        p = self.params
        time.sleep(p.pause)
        if ctx.session_id == p.session and p.marker and os.path.exists(p.marker):
            if p.exit:
                os.remove(p.marker)  # the retry succeeds
                os._exit(1)
            raise RuntimeError(f"ray-fault: {ctx.session_id}")
        return Plan()


class RaySlow(TruthJudge):
    """The truth judge, slowed down: a test double for a long judge run. Follows no public
    system; it exists for the tests."""

    @dataclass(frozen=True)
    class Params:
        pause: float = param(0.0, "seconds slept before each verdict")

    def judge(self, item: JudgeInput) -> Verdict:
        time.sleep(self.params.pause)
        return super().judge(item)


def register() -> None:
    """Register ``ray-fault`` and ``ray-slow`` (the workers' setup hook; the tests' module
    fixture)."""
    if "ray-fault" not in policies:
        policy("ray-fault")(RayFault)
    if "ray-slow" not in judges:
        judges.register("ray-slow")(RaySlow)


def unregister() -> None:
    """Forget ``ray-fault`` and ``ray-slow``: no other test sees them."""
    policies._items.pop("ray-fault", None)
    judges._items.pop("ray-slow", None)


def hammer(
    base_url: str,
    run_key: str | None,
    calls: int,
    concurrency: int,
    threads: int,
    retries: int = 0,
) -> tuple[int, float, float]:
    """``calls`` distinct model calls from ``threads`` threads of this worker; its pid and when
    it started and ended. ``run_key``: the run whose cluster-wide limiter holds them (None: this
    process's own limiter, as without the Ray engine)."""
    from ctxreplay.llm import cluster_limiter, forget_endpoints
    from ctxreplay.llm.client import ModelClient

    forget_endpoints()
    if run_key is not None:
        cluster_limiter.install(run_key)
    try:
        client = ModelClient(
            base_url, "fake", api_key_env=None, concurrency=concurrency, max_retries=retries
        )
        started = time.time()
        with ThreadPoolExecutor(threads) as pool:
            list(
                pool.map(
                    lambda i: client.complete(
                        [{"role": "user", "content": f"{run_key} {os.getpid()} {i}"}]
                    ),
                    range(calls),
                )
            )
        return os.getpid(), started, time.time()
    finally:
        cluster_limiter.uninstall()
