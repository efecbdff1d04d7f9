"""The policy plugin contract.

A policy is a class registered with ``@policy("name")``; its parameters are a frozen dataclass
nested in it (``Params``, each field a ``registry.param`` with its default, meaning and range), so
``--policy tool-prune:keep=3,clear_at_least=20000`` parses into it, out-of-range values are
refused, and a run manifest can rebuild the policy from ``name + params``. ``plan`` sees only the
prefix (``PrefixContext``), never the future.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

from ..registry import Plugin, Registry
from ..replay.context import CommitDecision, PrefixContext
from ..replay.plan import Plan, Rehearsal
from ..replay.view import View


class Policy(Plugin, ABC):
    """Base class. Subclasses set ``Params`` and implement ``plan``."""

    kind: ClassVar[str] = "policy"

    @abstractmethod
    def plan(self, ctx: PrefixContext) -> Plan:
        """The one method a plugin must write."""

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
    return policies.rebuild(described)


def all_policies() -> list[str]:
    return policies.names()
