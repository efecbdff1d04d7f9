"""The cost model against hand-computed figures."""

from __future__ import annotations

import pytest

from ctxreplay.datasets.messages import Message, Part, Usage
from ctxreplay.replay.cost import case_cost, commit_benefit
from ctxreplay.tariffs import Tariff, TariffError, load_tariff

T = Tariff("t", input=2.0, cached_input=0.5, output=8.0)


def m(role: str, tokens: int, usage: Usage | None = None) -> Message:
    return Message(role, (Part.text("x"),), tokens=tokens, usage=usage)


PREFIX = [m("system", 100), m("user", 50), m("tool", 30)]
VIEW = [PREFIX[0], m("user", 10), PREFIX[2]]  # message 1 edited: 40 tokens saved
FUTURE = [m("assistant", 20), m("tool", 40), m("assistant", 10)]


def test_requests_and_cache_range_by_hand() -> None:
    c = case_cost(PREFIX, VIEW, 1, FUTURE, T)
    # prompts: 180 + 3·3 + 3 = 192, then + (20+3) + (40+3) = 258; the view saves 40 on each
    assert (c.requests, c.input_baseline, c.input_policy, c.output) == (2, 192 + 258, 152 + 218, 30)
    # perfect caching: the policy's first request reuses only the system message (103 tokens)
    assert (c.cached_max_baseline, c.cached_max_policy) == (192 + 192, 103 + 152)
    assert c.cache_break_tokens == 192 - 103
    assert c.usd_baseline == pytest.approx((564e-6, 1140e-6))
    assert c.usd_policy == pytest.approx((597.5e-6, 980e-6))
    assert not c.recorded_cache


def test_no_edit_costs_the_same() -> None:
    c = case_cost(PREFIX, PREFIX, None, FUTURE, T)
    assert c.usd_policy == c.usd_baseline and c.cache_break_tokens == 0


def test_recorded_cache_gives_a_point_not_a_range() -> None:
    future = [
        m("assistant", 20, Usage(192, 150, 20)),
        m("tool", 40),
        m("assistant", 10, Usage(258, 200, 10)),
    ]
    c = case_cost(PREFIX, PREFIX, None, future, T)
    assert c.recorded_cache and c.usd_baseline[0] == c.usd_baseline[1]
    assert c.usd_baseline[0] == pytest.approx(
        ((192 - 150) * 2 + 150 * 0.5 + 160 + (258 - 200) * 2 + 200 * 0.5 + 80) / 1e6
    )


def test_recorded_hits_above_our_prompt_count_are_capped_and_noop_equals_baseline() -> None:
    """Real traces record cache hits of the provider's prompt (tool schemas included), larger
    than the prompt we count: the cached share never exceeds its input, and with no edit the
    policy's every figure is the baseline's (it once cost +17.63 USD on real traces)."""
    future = [
        m("assistant", 20, Usage(400, 300, 20)),  # 300 cached > our 192-token prompt
        m("tool", 40),
        m("assistant", 10, Usage(500, 250, 10)),  # 250 cached ≤ our 258 but > our 192 before
    ]
    c = case_cost(PREFIX, PREFIX, None, future, T)
    assert (c.cached_max_baseline, c.cached_max_policy) == (192 + 250, 192 + 250)
    assert c.cached_max_baseline <= c.input_baseline
    assert c.usd_policy == c.usd_baseline and c.input_policy == c.input_baseline
    edited = case_cost(PREFIX, VIEW, 1, future, T)
    assert edited.cached_max_policy <= edited.input_policy
    assert edited.cached_max_baseline == c.cached_max_baseline


def test_commit_rule() -> None:
    assert commit_benefit(10, 40, 89, T) == pytest.approx(10 * 40 * 0.5e-6 - 89 * 1.5e-6)
    assert commit_benefit(1, 40, 89, T) < 0 < commit_benefit(10, 40, 89, T)
    assert commit_benefit(10, 40, 89, T, planner_cost=1.0) < 0
    # a provider with a cache-write premium makes the break dearer: 89 tokens at 3.75 − 0.30
    sonnet = Tariff("s", input=3.0, cached_input=0.30, output=15.0, cache_write=3.75)
    assert commit_benefit(10, 40, 89, sonnet) == pytest.approx(10 * 40 * 0.30e-6 - 89 * 3.45e-6)
    assert (
        load_tariff("claude-sonnet-4").write_rate == 3.75
        and load_tariff("gpt-4.1").write_rate == 2.0
    )


def test_tariffs_from_toml(tmp_path) -> None:
    assert load_tariff("gpt-4o").input == 2.5
    assert load_tariff().name == "gpt-4.1"
    path = tmp_path / "t.toml"
    path.write_text('default = "mine"\n[models.mine]\ninput = 1\ncached_input = 0.1\noutput = 4\n')
    assert load_tariff(path=path) == Tariff("mine", 1.0, 0.1, 4.0)
    with pytest.raises(TariffError, match="available"):
        load_tariff("nope", path)
