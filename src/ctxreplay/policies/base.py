"""The policy plugin contract.

A policy is a class registered with ``@policy("name")``; its parameters are a frozen dataclass
nested in it (``Params``, each field a ``registry.param`` with its default, meaning and range), so
``--policy tool-prune:keep=3,clear_at_least=20000`` parses into it, out-of-range values are
refused, and a run manifest can rebuild the policy from ``name + params``. ``propose`` sees only
the prefix (``PrefixContext``), never the future.

``plan`` is a template method: it works out the need that ``target``/``budget`` set
(``budget.need_for``), asks ``propose`` for the plan, and holds the budget contract: when a need
is set the plan must say what it made of it (``Plan.budget``), so no policy can ignore a target
without a word.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar, cast

from ..errors import CtxreplayError
from ..registry import Plugin, Registry
from ..replay.context import CommitDecision, PrefixContext
from ..replay.plan import Plan, Rehearsal
from ..replay.view import View
from .budget import Need, need_for


class BudgetIgnored(CtxreplayError):
    """A policy given a target or budget returned a plan that does not say what it made of it:
    a bug of the policy, which would otherwise be compared at a removal it never tried."""


class Policy(Plugin, ABC):
    """Base class. Subclasses set ``Params`` and implement ``propose``."""

    kind: ClassVar[str] = "policy"

    def plan(self, ctx: PrefixContext) -> Plan:
        """The plan for one prefix: ``propose`` under the need ``target``/``budget`` set."""
        need = need_for(ctx, self.params)
        plan = self.propose(ctx, need)
        if need.active and plan.budget is None:
            raise BudgetIgnored(
                f"policy {self.label}: {need.describe()}, but its plan records no budget "
                "outcome (Plan.budget; see policies/budget.py)"
            )
        return plan

    @abstractmethod
    def propose(self, ctx: PrefixContext, need: Need) -> Plan:
        """The one method a plugin must write. ``need``: the tokens ``target``/``budget`` ask
        to remove (inactive when neither is set, or the policy takes neither); when active,
        the plan records what it made of it (``Plan.budget``, ``budget.budget_of``)."""

    def handles(self, ctx: PrefixContext) -> dict[str, str] | None:
        """Object id → the result id the agent knows it by (agent-controlled forgetting)."""
        return None

    def decide(
        self, ctx: PrefixContext, rehearsal: Rehearsal, view: View, plan: Plan
    ) -> CommitDecision:
        """Whether to commit now. Heuristic policies always do; Self-GC is cache-aware."""
        return CommitDecision(True, "always")

    def close(self) -> None:
        """Release what the policy holds (model clients)."""
        return None


#: the built-in policies, name → ``module:Class`` (each module registers its class with
#: ``@policy(name)``; a lookup imports the one module it names)
BUILTIN = {
    "agent-forgetting": "ctxreplay.policies.agent_forgetting:AgentForgetting",
    "clear-tool-uses": "ctxreplay.policies.clear_tool_uses:ClearToolUses",
    "hybrid": "ctxreplay.policies.hybrid:Hybrid",
    "noop": "ctxreplay.policies.noop:Noop",
    "observation-masking": "ctxreplay.policies.observation_masking:ObservationMasking",
    "oldest-turn": "ctxreplay.policies.oldest_turn:OldestTurn",
    "prune-summarise": "ctxreplay.policies.prune_summarise:PruneSummarise",
    "recorded": "ctxreplay.policies.recorded:Recorded",
    "self-gc": "ctxreplay.policies.self_gc:SelfGC",
    "tool-mask+prune": "ctxreplay.policies.tool_mask_prune:ToolMaskPrune",
    "tool-prune": "ctxreplay.policies.tool_prune:ToolPrune",
    "working-set": "ctxreplay.policies.working_set:WorkingSet",
}
policies: Registry[type[Policy]] = Registry("policy", "ctxreplay.policies", BUILTIN)


def policy(name: str) -> Callable[[type[Policy]], type[Policy]]:
    """Register a policy class under ``name``."""
    return policies.register(name)


def make_policy(spec: str | Policy) -> Policy:
    """A policy from ``name:key=value,...`` (or an instance, returned as is)."""
    return spec if isinstance(spec, Policy) else policies.create(spec)


def rebuild_policy(described: dict[str, Any]) -> Policy:
    """The inverse of ``Policy.describe()``: the manifest entry back into a policy."""
    return cast(Policy, policies.rebuild(described))


def all_policies() -> list[str]:
    return policies.names()
