"""``Policy.plan`` is a template method: it works out the need ``target``/``budget`` set, hands
it to ``propose``, and refuses a plan that does not say what it made of it. No policy can be
compared at a removal it never tried."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ctxreplay.errors import ParameterError
from ctxreplay.policies import BudgetParams, Need, Plan, Policy, PrefixContext, budget_of, need_for
from ctxreplay.policies.base import BUILTIN, BudgetIgnored, make_policy, policies
from ctxreplay.replay.outcome import replay_case

from sessions import reads

SEEN: list[Need] = []


class Careless(Policy):
    """Takes a target and a budget, and forgets them (the bug the template catches)."""

    name = "test-careless"

    @dataclass(frozen=True)
    class Params(BudgetParams):
        pass

    def propose(self, ctx: PrefixContext, need: Need) -> Plan:
        SEEN.append(need)
        return Plan()


class Careful(Careless):
    """Spends nothing, and says so."""

    def propose(self, ctx: PrefixContext, need: Need) -> Plan:
        SEEN.append(need)
        return Plan(budget=budget_of(need, 0))


def test_propose_gets_the_need_the_target_sets() -> None:
    ctx = reads(3).ctx()
    SEEN.clear()
    Careful(Careful.Params(target=0.4)).plan(ctx)
    assert [need_for(ctx, Careful.Params(target=0.4))] == SEEN
    assert SEEN[0].active and SEEN[0].tokens > 0


def test_a_plan_that_ignores_a_set_target_is_refused_naming_the_policy_and_the_need() -> None:
    ctx = reads(3).ctx()
    policy = Careless(Careless.Params(target=0.4))
    need = need_for(ctx, policy.params)
    with pytest.raises(BudgetIgnored) as e:
        policy.plan(ctx)
    assert str(e.value) == (
        f"policy test-careless:target=0.4: {need.describe()}, but its plan records no budget "
        "outcome (Plan.budget; see policies/budget.py)"
    )
    # without a target or budget there is nothing to account for
    assert Careless().plan(ctx) == Plan()


def test_what_the_careful_policy_records_reaches_the_outcome() -> None:
    ctx = reads(3).ctx()
    out = replay_case(Careful(Careful.Params(budget=10)), ctx)
    assert out.plan.budget is not None
    assert (out.plan.budget.planned, out.plan.budget.met) == (0, False)
    assert out.plan.budget.need == need_for(ctx, Careful.Params(budget=10)).tokens


TAKE_A_TARGET = [n for n in sorted(BUILTIN) if issubclass(policies.get(n).Params, BudgetParams)]


def test_all_but_the_two_that_edit_nothing_of_their_own_take_a_target() -> None:
    assert set(BUILTIN) - set(TAKE_A_TARGET) == {"noop", "recorded"}


@pytest.mark.parametrize("name", TAKE_A_TARGET)
def test_every_built_in_policy_that_takes_a_target_accounts_for_it(name: str) -> None:
    out = replay_case(make_policy(f"{name}:target=0.3"), reads(6).ctx())
    assert out.planner_failure is None
    assert out.plan.budget is not None and out.plan.budget.need > 0


@pytest.mark.parametrize("spec", ["self-gc:planner=llm", "agent-forgetting:planner=llm"])
@pytest.mark.parametrize("knob", ["target=0.3", "budget=1000"])
def test_a_planner_that_cannot_spend_a_target_refuses_it_when_built(spec: str, knob: str) -> None:
    with pytest.raises(ParameterError, match="target and budget are spent by planner=rules"):
        make_policy(f"{spec},{knob}")
    make_policy(spec)  # without the knob it is built


def test_the_summariser_s_llm_planner_spends_a_target() -> None:
    assert make_policy("prune-summarise:planner=llm,target=0.3").params.target == 0.3
