"""How much to remove: one budget surface shared by every policy.

Each heuristic policy has its own rule for what to edit (a recent window, a size target, a
trigger). ``BudgetParams`` adds the same two knobs to all of them, so policies can be compared at
the same removal:

- ``target`` — remove at least this fraction of the *editable* tokens (``editable_tokens``: the
  prefix minus system/developer messages and minus the protected latest user message);
- ``budget`` — the view must fit in this many tokens.

The need is the larger of the two (``tokens_to_remove``). Each policy maps it onto its own order
(documented in its docstring): it spends candidate edits, most expendable first, until the need
is met (``spend``; ``extend`` adds what it spends to the rule's own edits), and records the
outcome in ``Plan.budget``::

    BudgetOutcome(need=2048, planned=1310, met=False,
                  reason="target 0.40 of 5,120 editable tokens needs 2,048; only 1,310 removable: ...")

With both knobs at 0 (the defaults) a policy behaves exactly as its own rule says and records
nothing. Trigger parameters keep their meaning: a trigger not reached still means no edit (the
budget record then says so).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ..registry import param
from ..replay.context import PrefixContext
from ..replay.objects import editable_positions
from ..replay.plan import BudgetOutcome, Edit, Plan

#: the default explanation of a shortfall
KEPT_BY_RULES = "every remaining object is protected or kept by the policy's rules"


@dataclass(frozen=True)
class BudgetParams:
    """Parameters every heuristic policy shares: how much to remove, whatever its own rule."""

    target: float = param(
        0.0,
        "remove at least this share of the editable tokens (the prefix less system/developer "
        "messages and the latest user message); 0: the policy's own rule",
        ge=0,
        le=1,
    )
    budget: int = param(
        0, "the view must fit in this many tokens (remove prefix − budget); 0: no budget", ge=0
    )


# --- what may be edited ---------------------------------------------------------------------


def editable_tokens(ctx: PrefixContext) -> int:
    """Prefix tokens a policy may touch: all of them minus system/developer messages and minus
    the protected latest user message (with any tool results it carries)."""
    return sum(ctx.messages[i].tokens for i in editable_positions(ctx.messages, ctx.index))


# --- how much to remove ---------------------------------------------------------------------


@dataclass(frozen=True)
class Need:
    """Tokens a policy must remove from one prefix, and where the number comes from."""

    tokens: int
    prefix: int
    editable: int  # counted only when a target is set (0 otherwise: nothing reads it)
    target: float = 0.0
    budget: int = 0

    @property
    def active(self) -> bool:
        """Whether a target or budget is set (else the policy follows its own rule only)."""
        return self.target > 0 or self.budget > 0

    @property
    def by_target(self) -> int:
        return _by_target(self.target, self.editable)

    @property
    def by_budget(self) -> int:
        return _by_budget(self.budget, self.prefix)

    def describe(self) -> str:
        """``target 0.40 of 5,120 editable tokens needs 2,048`` (the binding one of the two)."""
        if self.budget > 0 and self.by_budget >= self.by_target:
            return (
                f"budget {self.budget:,} for a {self.prefix:,}-token prefix needs {self.tokens:,}"
            )
        return (
            f"target {self.target:.2f} of {self.editable:,} editable tokens needs {self.tokens:,}"
        )


def _by_target(target: float, editable: int) -> int:
    # 0.3 × 1000 is 300.00000000000006 in floating point: that is 300 tokens, not 301
    return math.ceil(round(target * editable, 6)) if target > 0 else 0


def _by_budget(budget: int, prefix: int) -> int:
    return max(0, prefix - budget) if budget > 0 else 0


def need_for(ctx: PrefixContext, params: Any) -> Need:
    """The need of ``params`` (any Params; those without the budget fields need nothing)."""
    target = float(getattr(params, "target", 0.0) or 0.0)
    budget = int(getattr(params, "budget", 0) or 0)
    prefix = ctx.tokens
    # the editable tokens take a pass over the prefix: only a target reads them
    editable = editable_tokens(ctx) if target > 0 else 0
    tokens = max(_by_target(target, editable), _by_budget(budget, prefix))
    return Need(tokens, prefix, editable, target, budget)


def tokens_to_remove(ctx: PrefixContext, params: Any) -> int:
    """max(ceil(target × editable tokens), prefix tokens − budget if budget else 0)."""
    return need_for(ctx, params).tokens


# --- spending candidate edits ---------------------------------------------------------------


T = TypeVar("T")


@dataclass(frozen=True)
class Spending(Generic[T]):
    """The edits ``spend`` chose, the tokens planned in all, and why the need is not met."""

    edits: tuple[T, ...]
    planned: int
    met: bool
    reason: str | None = None


def shortfall(need: Need | int, planned: int, why: str = KEPT_BY_RULES) -> str:
    """The sentence recorded when a plan falls short of its need."""
    asked = need.describe() if isinstance(need, Need) else f"the budget needs {need:,}"
    return f"{asked}; only {planned:,} removable: {why}"


def spend(
    candidates: Iterable[tuple[T, int]],
    need: Need | int,
    *,
    planned: int = 0,
    why: str = KEPT_BY_RULES,
) -> Spending[T]:
    """Take candidate edits in the given (priority) order until ``need`` tokens are planned.

    ``candidates``: (edit, tokens it frees beyond what is already planned for its object), most
    expendable first; an edit is usually an ``Edit`` (any planner item will do). They are read
    lazily: a generator is not read past the edit that meets the need. Candidates that free
    nothing are skipped. ``planned``: tokens already freed by the policy's own rule. When the
    candidates run out first, ``reason`` says by how much and ``why``.
    """
    tokens = need.tokens if isinstance(need, Need) else need
    chosen: list[T] = []
    if planned < tokens:
        for edit, saving in candidates:
            if saving <= 0:
                continue
            chosen.append(edit)
            planned += saving
            if planned >= tokens:
                break
    met = planned >= tokens
    return Spending(tuple(chosen), planned, met, None if met else shortfall(need, planned, why))


def budget_of(
    need: Need, planned: int | Spending[Any], reason: str | None = None
) -> BudgetOutcome | None:
    """``Plan.budget`` when a target or budget is set (None otherwise): the need, the tokens
    planned, whether it is met, and why not.

    ``planned``: what ``spend`` returned (recorded as it is), or the tokens planned in all
    (``reason`` then says why they fall short; by default, the policy's rules)."""
    if not need.active:
        return None
    if not isinstance(planned, Spending):
        met = planned >= need.tokens
        if not met and reason is None:
            reason = shortfall(need, planned)
        planned = Spending((), planned, met, None if met else reason)
    return BudgetOutcome(need.tokens, planned.planned, planned.met, planned.reason)


@dataclass(frozen=True)
class Extension:
    """A policy's own edits extended under a need: see ``extend``."""

    edits: tuple[Edit, ...]
    spent: Spending[Edit]
    need: Need

    @property
    def budget(self) -> BudgetOutcome | None:
        """The budget record of this extension (when a need is set)."""
        return budget_of(self.need, self.spent)


def extend(
    ctx: PrefixContext,
    need: Need,
    edits: Iterable[Edit],
    candidates: Iterable[tuple[Edit, int]],
    *,
    planned: int,
    why: str = KEPT_BY_RULES,
) -> Extension:
    """The budget step of a rule-based policy: its own ``edits`` (which free ``planned`` tokens)
    plus the ``candidates`` that ``spend`` chooses to meet ``need`` (none when no need is
    set), an edit chosen for an object replacing the rule's edit of it; in prefix order."""
    if need.active:
        spent = spend(candidates, need, planned=planned, why=why)
    else:
        spent = Spending((), planned, True)
    merged = {e.object_id: e for e in edits}
    merged.update((e.object_id, e) for e in spent.edits)
    order = {o.id: k for k, o in enumerate(ctx.index.objects)}
    ordered = tuple(sorted(merged.values(), key=lambda e: order[e.object_id]))
    return Extension(ordered, spent, need)


def estimate_meta(need: Need, planned: int) -> dict[str, Any]:
    """The view estimate of a policy whose stop is the need: the prefix less what it plans, and
    the size the need asks for."""
    return {"estimated_tokens": need.prefix - planned, "target_tokens": need.prefix - need.tokens}


def no_edit(need: Need, why: str, meta: dict[str, Any] | None = None) -> Plan:
    """The plan of a policy that edits nothing because of ``why`` (a trigger not reached, too
    little freed), whatever the need."""
    budget = budget_of(need, 0, f"{need.describe()}; no edit: {why}")
    return Plan(meta=dict(meta or {}), budget=budget, no_edit=why)


def not_triggered(need: Need, prefix: int, trigger: int, name: str) -> Plan:
    """The plan of a policy whose trigger was not reached."""
    return no_edit(need, f"the prefix holds {prefix:,} tokens, below {name}={trigger:,}")


def freed_too_little(need: Need, freed: int, clear_at_least: int, meta: dict[str, Any]) -> Plan:
    """The plan of a policy whose edits would free less than its ``clear_at_least``."""
    return no_edit(need, f"{freed:,} tokens freed < clear_at_least={clear_at_least:,}", meta)
