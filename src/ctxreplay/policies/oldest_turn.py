"""``oldest-turn``: drop (or fold) whole oldest units until a token target is met."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..registry import param
from ..replay.context import PrefixContext
from ..replay.objects import ContextObject
from ..replay.plan import Edit, Plan
from ..replay.view import fold_pointer, make_archive
from . import _select as sel
from .base import Policy, policy
from .budget import BudgetParams, Need, budget_of, estimate_meta, not_triggered, spend


@policy("oldest-turn")
class OldestTurn(Policy):
    """Chronological baseline: remove the oldest units first until the view fits a target.

    Anchors: the chronological folding baseline of Self-GC (Hao et al. 2026), and OpenHands'
    ``RecentEventsCondenser`` / ``AmortizedForgettingCondenser`` (keep the first events and the
    most recent ones, forget the middle, oldest first).

    While the estimated view is above ``target_ratio`` × prefix tokens (and the prefix holds at
    least ``trigger_tokens``), it removes units in chronological order: first whole user turns
    (``conversation:user:K`` with their execution), never the first user turn (OpenHands'
    ``keep_first``) nor the latest; then, because a single-task agent session is one long turn,
    the oldest tool calls of the latest turn, keeping its last ``keep_last_steps`` calls
    (OpenHands' recent window). The system prompt is never an object, so it always stays.

    Parameters → knobs: ``mode`` prune (drop, like RecentEvents) or fold (sidecar pointer, like
    Self-GC's folding baseline); ``target_ratio`` the condensers' target size as a fraction of
    the prefix; ``keep_last_steps`` the recent window; ``trigger_tokens`` the condenser's
    ``max_size`` expressed in tokens.

    Budget (``target``/``budget``, ``policies/budget.py``): when either is set, the need replaces
    ``target_ratio``: units are removed in the same order until the need is met (``target`` is
    a fraction of the editable tokens, not of the prefix), and if the old units are not enough
    the recent window shrinks: the latest turn's last ``keep_last_steps`` calls go too, oldest
    first (the most recent is the last to go). The first and the latest user turns stay, and
    ``trigger_tokens`` still gates the edit.
    """

    @dataclass(frozen=True)
    class Params(BudgetParams):
        mode: Literal["prune", "fold"] = param(
            "prune", "drop the oldest units, or fold them behind a sidecar pointer"
        )
        target_ratio: float = param(
            0.5, "remove units until the view is at most this fraction of the prefix", ge=0, le=1
        )
        trigger_tokens: int = param(
            0, "act only when the prefix holds at least this many tokens (0: always)", ge=0
        )
        keep_last_steps: int = param(
            3, "most recent tool calls of the latest turn that stay (the recent window)", ge=0
        )

    def propose(self, ctx: PrefixContext, need: Need) -> Plan:
        p = self.params
        total = ctx.tokens
        if total <= 0 or total < p.trigger_tokens:
            return not_triggered(need, total, p.trigger_tokens, "trigger_tokens")
        units, recent = self._units(ctx)
        if need.active:
            spent = spend(
                (
                    (Edit(unit.id, p.mode, reason=reason), self._saving(ctx, unit))
                    for unit, reason in units + [(f, "budget") for f in recent]
                ),
                need,
                why="only the system prompt, the first and the latest user turns, and what "
                "rehearsal would refuse stay",
            )
            meta = estimate_meta(need, spent.planned)
            return Plan(spent.edits, meta=meta, budget=budget_of(need, spent))
        target = p.target_ratio * total
        estimate = total
        edits: list[Edit] = []
        for unit, reason in units:
            if estimate <= target:
                break
            saving = self._saving(ctx, unit)
            if saving <= 0:
                continue
            edits.append(Edit(unit.id, p.mode, reason=reason))
            estimate -= saving
        return Plan(tuple(edits), meta={"estimated_tokens": estimate, "target_tokens": target})

    def _units(
        self, ctx: PrefixContext
    ) -> tuple[list[tuple[ContextObject, str]], list[ContextObject]]:
        """Removable units in order (old turns, then old steps of the latest turn), and the
        latest turn's recent steps (oldest first) that only a budget removes."""
        turns = ctx.index.turns()
        old = [
            t
            for t in turns[1:]
            if t.id != ctx.index.latest_turn and not _splits_pair(ctx, t) and t.tokens > 0
        ]
        units = [(t, "oldest_turn") for t in old]
        latest = ctx.index.latest_turn
        steps = [f for f in sel.editable_functions(ctx) if f.parent == latest]
        recent = sel.most_recent(steps, self.params.keep_last_steps)
        units += [(f, "oldest_step_of_latest_turn") for f in steps if f.id not in recent]
        return units, [f for f in steps if f.id in recent]

    def _saving(self, ctx: PrefixContext, obj: ContextObject) -> int:
        if self.params.mode == "prune":
            return obj.tokens
        pointer = fold_pointer(obj, make_archive(obj, ctx.messages))
        if obj.kind == "user_turn":
            return obj.tokens - ctx.count(pointer)
        return sel.replaced_saving(ctx, obj, pointer)


def _splits_pair(ctx: PrefixContext, turn: ContextObject) -> bool:
    """Rehearsal refuses a turn edit that would separate a call from its result; so do we."""
    span = set(turn.messages)
    return any((f.call_index in span) != (f.result_index in span) for f in ctx.index.functions())
