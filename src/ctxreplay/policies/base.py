"""The policy plugin contract.

A policy is a class registered with ``@policy("name")``; its parameters are a frozen dataclass
(``Params``) with typed defaults, so ``--policy tool-prune:keep=3,clear_at_least=20000`` parses
into it and a run manifest can rebuild the policy from ``name + params``. ``plan`` sees only the
prefix (``PrefixContext``), never the future.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from ..datasets.messages import Message
from ..registry import NoParams, Registry, params_label, params_to_dict, parse_params, parse_spec
from ..replay.objects import ObjectIndex
from ..replay.plan import Plan, Rehearsal
from ..replay.view import View


@dataclass(frozen=True)
class PrefixContext:
    """Everything a planner may look at: the prefix, its objects, a token counter."""

    case_id: str
    session_id: str
    messages: tuple[Message, ...]
    index: ObjectIndex
    count: Callable[[str], int]

    @property
    def tokens(self) -> int:
        return sum(m.tokens for m in self.messages)


@dataclass(frozen=True)
class CommitDecision:
    commit: bool
    reason: str


class Policy(ABC):
    """Base class. Subclasses set ``Params`` and implement ``plan``."""

    name: ClassVar[str] = ""
    Params: ClassVar[type] = NoParams
    #: agent-controlled forgetting validates its batch all-or-nothing
    all_or_nothing: ClassVar[bool] = False

    def __init__(self, params: Any = None) -> None:
        self.params = params if params is not None else self.Params()

    #: parameters that say how a policy runs (its model endpoint), not what it decides
    operational: ClassVar[frozenset[str]] = frozenset()

    @property
    def label(self) -> str:
        return params_label(self.name, self.params, self.operational)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "label": self.label, "params": params_to_dict(self.params)}

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


policies: Registry[type[Policy]] = Registry("policy", "ctxreplay.policies")


def policy(name: str) -> Callable[[type[Policy]], type[Policy]]:
    """Register a policy class under ``name``."""
    return policies.register(name)


def make_policy(spec: str | Policy) -> Policy:
    """A policy from ``name:key=value,...`` (or an instance, returned as is)."""
    if isinstance(spec, Policy):
        return spec
    _load_builtins()
    name, raw = parse_spec(spec)
    cls = policies.get(name)
    try:
        params = parse_params(cls.Params, raw)
    except (ValueError, TypeError) as e:
        raise ValueError(f"policy {name}: {e}") from None
    return cls(params)


def rebuild_policy(described: dict[str, Any]) -> Policy:
    """The inverse of ``Policy.describe()``: the manifest entry back into a policy."""
    _load_builtins()
    cls = policies.get(described["name"])
    fields = {f.name for f in dataclasses.fields(cls.Params)}
    values = {
        k: tuple(v) if isinstance(v, list) else v
        for k, v in described.get("params", {}).items()
        if k in fields
    }
    return cls(cls.Params(**values))


_BUILTIN = (
    "noop",
    "oldest_turn",
    "tool_prune",
    "tool_mask_prune",
    "hybrid",
    "observation_masking",
    "clear_tool_uses",
    "recorded",
    "self_gc",
    "agent_forgetting",
)
_loaded = False


def _load_builtins() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    from importlib import import_module

    for module in _BUILTIN:
        import_module(f"ctxreplay.policies.{module}")


def all_policies() -> list[str]:
    _load_builtins()
    return policies.names()
