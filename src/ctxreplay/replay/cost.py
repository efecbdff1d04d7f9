"""The cost model: what the requests after a cut would have cost with and without the view.

Request cost (ACF study): ``r_in·(P − K) + r_cache·K + r_out·O`` for prompt P, cached K and
completion O tokens. Prefix caching means K depends on what stayed identical since the previous
request: an edit breaks the cache from the first edited position, so the first request after a
commit pays full price for everything after that position (the cache-break cost).

Traces rarely record cache hits. Where they do not, K is unknown between 0 (no caching) and the
previous prompt (perfect prefix caching), so costs are given as a range [low, high], never as a
point that silently assumes one of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..datasets.messages import Message
from ..schema import CostColumns
from ..tariffs import Tariff

#: OpenAI chat framing: tokens added per message and per request (reply priming)
MESSAGE_OVERHEAD = 3
REQUEST_OVERHEAD = 3


@dataclass(frozen=True)
class Request:
    """One model call along a session: the prompt it carried and what it produced."""

    prompt: int
    completion: int
    recorded_cached: int | None = None


def prompt_tokens(messages: Sequence[Message]) -> int:
    return sum(m.tokens for m in messages) + MESSAGE_OVERHEAD * len(messages) + REQUEST_OVERHEAD


def future_requests(
    prefix_tokens: int, prefix_messages: int, future: Sequence[Message]
) -> list[Request]:
    """Requests of the future: one per assistant message, each carrying everything before it."""
    out: list[Request] = []
    running = prefix_tokens + MESSAGE_OVERHEAD * prefix_messages + REQUEST_OVERHEAD
    for m in future:
        if m.role == "assistant":
            cached = (
                m.usage.cached_tokens if m.usage and m.usage.cached_tokens is not None else None
            )
            out.append(Request(running, m.tokens, cached))
        running += m.tokens + MESSAGE_OVERHEAD
    return out


@dataclass(frozen=True)
class CaseCost:
    """Costs of a case's future requests, without and with the policy's view."""

    requests: int
    input_baseline: int  # Σ prompt tokens, no edit
    input_policy: int  # Σ prompt tokens with the view in place of the prefix
    cached_max_baseline: int  # Σ cache-served tokens under perfect prefix caching
    cached_max_policy: int
    output: int
    cache_break_tokens: int  # prefix tokens after the first edited position, re-paid once
    usd_baseline: tuple[float, float]  # (low: perfect caching, high: no caching)
    usd_policy: tuple[float, float]
    recorded_cache: bool  # the trace recorded cache hits for every future request

    def as_row(self) -> CostColumns:
        return {
            "requests": self.requests,
            "input_baseline": self.input_baseline,
            "input_policy": self.input_policy,
            "cached_max_baseline": self.cached_max_baseline,
            "cached_max_policy": self.cached_max_policy,
            "output_tokens": self.output,
            "cache_break_tokens": self.cache_break_tokens,
            "usd_baseline_low": self.usd_baseline[0],
            "usd_baseline_high": self.usd_baseline[1],
            "usd_policy_low": self.usd_policy[0],
            "usd_policy_high": self.usd_policy[1],
            "recorded_cache": self.recorded_cache,
        }


@dataclass(frozen=True)
class Baseline:
    """A case's future requests without any edit and what they cost: the same for every
    policy replayed on the case, so worked out once per case (``baseline_cost``)."""

    prefix_tokens: int
    prefix_prompt: int  # the prefix as one request's prompt (``prompt_tokens``)
    requests: tuple[Request, ...]
    cached: tuple[int, ...]  # each request's cache-served tokens, perfect prefix caching
    usd: tuple[float, float]  # (low, high)
    recorded: bool  # the trace recorded cache hits for every future request


def baseline_cost(prefix: Sequence[Message], future: Sequence[Message], tariff: Tariff) -> Baseline:
    prefix_tokens = sum(m.tokens for m in prefix)
    base = future_requests(prefix_tokens, len(prefix), future)
    recorded = bool(base) and all(r.recorded_cached is not None for r in base)
    prev = prompt_tokens(prefix)
    first = prev
    cached: list[int] = []
    low = high = 0.0
    for r in base:
        # a recorded cache hit counts the provider's prompt (tool schemas, its framing), ours
        # does not hold all of that: the cached share is at most the prompt it is part of
        k = (
            min(r.recorded_cached, r.prompt)
            if recorded and r.recorded_cached is not None
            else min(prev, r.prompt)
        )
        cached.append(k)
        low += tariff.cost(r.prompt, k, r.completion)
        high += tariff.cost(r.prompt, k if recorded else 0, r.completion)
        prev = r.prompt
    return Baseline(prefix_tokens, first, tuple(base), tuple(cached), (low, high), recorded)


def case_cost(
    prefix: Sequence[Message],
    view: Sequence[Message],
    first_edit: int | None,
    future: Sequence[Message],
    tariff: Tariff,
    planner_cost: float = 0.0,
    baseline: Baseline | None = None,
) -> CaseCost:
    """``first_edit``: index in the prefix of the first message the view changed (None: none).
    ``baseline``: the case's ``baseline_cost`` when already worked out (for another policy)."""
    b = baseline if baseline is not None else baseline_cost(prefix, future, tariff)
    base = b.requests
    view_tokens = sum(m.tokens for m in view)
    saved = (b.prefix_tokens + MESSAGE_OVERHEAD * len(prefix)) - (
        view_tokens + MESSAGE_OVERHEAD * len(view)
    )
    policy = [Request(r.prompt - saved, r.completion) for r in base]
    kept_before_edit = (
        prompt_tokens(prefix[:first_edit]) - REQUEST_OVERHEAD
        if first_edit is not None
        else b.prefix_tokens
    )
    if first_edit is None:  # the view is the prefix: the policy's requests are the baseline's
        low_p, high_p = b.usd
        cached_policy = sum(b.cached)
    else:
        # perfect prefix caching: each request reuses the previous prompt; the first request
        # after the cut reuses only what precedes the first edited message
        prev_policy = kept_before_edit
        cached_policy = 0
        low_p = high_p = 0.0
        for rp, kb in zip(policy, b.cached, strict=True):
            kp = (
                max(0, min(kb, rp.prompt, prev_policy))
                if b.recorded
                else min(prev_policy, rp.prompt)
            )
            cached_policy += kp
            low_p += tariff.cost(rp.prompt, kp, rp.completion)
            high_p += tariff.cost(rp.prompt, kp if b.recorded else 0, rp.completion)
            prev_policy = rp.prompt
    cache_break = max(0, b.prefix_prompt - kept_before_edit) if first_edit is not None else 0
    return CaseCost(
        requests=len(base),
        input_baseline=sum(r.prompt for r in base),
        input_policy=sum(r.prompt for r in policy),
        cached_max_baseline=sum(b.cached),
        cached_max_policy=cached_policy,
        output=sum(r.completion for r in base),
        cache_break_tokens=cache_break,
        usd_baseline=b.usd,
        usd_policy=(low_p + planner_cost, high_p + planner_cost),
        recorded_cache=b.recorded,
    )


def commit_benefit(
    expected_requests: float,
    saved_tokens: int,
    cache_break_tokens: int,
    tariff: Tariff,
    planner_cost: float = 0.0,
) -> float:
    """Self-GC's cache-aware commit rule, in USD: N_future·(C − C′) − L_cache_break − L_GC.

    Under prefix caching a kept token costs the cached rate on each later request, so
    C − C′ = saved·r_cache; the one-off cache break re-writes the tokens after the first edit at
    the cache-write rate (the input rate where the provider charges no premium) instead of
    reading them at the cached one.
    """
    per_request = saved_tokens * tariff.cached_input / 1e6
    break_cost = cache_break_tokens * (tariff.write_rate - tariff.cached_input) / 1e6
    return expected_requests * per_request - break_cost - planner_cost
