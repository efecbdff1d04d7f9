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
    #: agent-controlled forgetting validates its batch all-or-nothing
    all_or_nothing: ClassVar[bool] = False

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


_BUILTIN = (
    "noop",
    "oldest_turn",
    "tool_prune",
    "tool_mask_prune",
    "hybrid",
    "observation_masking",
    "clear_tool_uses",
    "prune_summarise",
    "recorded",
    "self_gc",
    "agent_forgetting",
    "working_set",
)
policies: Registry[type[Policy]] = Registry(
    "policy", "ctxreplay.policies", tuple(f"ctxreplay.policies.{m}" for m in _BUILTIN)
)


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
