"""``tool-mask+prune``: soft-trim large tool bodies to head + tail, then hard-clear if needed."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

from ..registry import param
from ..replay.context import PrefixContext
from ..replay.objects import ContextObject
from ..replay.plan import Edit, Plan
from ..replay.view import mask_text
from . import _select as sel
from .base import Policy, policy
from .budget import BudgetParams, Need, estimate_meta, extend, not_triggered


@policy("tool-mask+prune")
class ToolMaskPrune(Policy):
    """Mask large old tool results to their head and tail; hard-clear the oldest if still large.

    Anchors: OpenClaw context pruning (``contextPruning``: soft-trim keeps ``headChars`` 1500 +
    ``tailChars`` 1500 of results over ``maxChars`` 4000 with a note of what was cut; hard-clear
    replaces results with ``[Old tool result content cleared]``; the last
    ``keepLastAssistants`` 3 are protected) and the Self-GC mask action (keep about the first
    and last 10% of a body).

    Step 1 (soft trim): every tool result outside the ``keep`` most recent tool uses whose body
    is longer than ``min_chars`` is masked: head and tail kept, the middle replaced by a marker
    counting the characters, lines and tokens cut. Head/tail are ``head_chars``/``tail_chars``
    when set (OpenClaw: 1500/1500), else ``head_ratio``/``tail_ratio`` of the body (Self-GC:
    0.1/0.1). Step 2 (hard clear): while the estimated view is still above ``target_ratio`` ×
    prefix tokens, the oldest results outside the recent window (masked or not) are cleared with
    ``placeholder``, envelopes kept.

    Parameters → knobs: ``keep`` ↔ ``keepLastAssistants`` (counted in tool uses here);
    ``min_chars`` ↔ ``softTrim.maxChars``; ``head_chars``/``tail_chars`` ↔
    ``softTrim.headChars``/``tailChars``; ``target_ratio`` ↔ ``hardClearRatio`` (a fraction of
    the prefix here, OpenClaw's is of the context window); ``placeholder`` ↔
    ``hardClear.placeholder``; ``exclude_tools`` ↔ ``tools.deny``; ``trigger_tokens``: the
    prefix must hold at least this many tokens.

    Budget (``target``/``budget``, ``policies/budget.py``): step 1 masks large bodies as above;
    the need then replaces ``target_ratio`` as the stop of step 2 (hard-clear the oldest results
    outside the window until the need is met); if that is not enough the recent window shrinks:
    its results are cleared too, oldest first (the most recent is the last to go). Excluded
    tools stay, and ``trigger_tokens`` still gates the edit.
    """

    @dataclass(frozen=True)
    class Params(BudgetParams):
        keep: int = param(3, "most recent tool uses whose results are left whole", ge=0)
        min_chars: int = param(4000, "results longer than this many characters are masked", ge=0)
        head_ratio: float = param(
            0.1, "share of a masked body kept at its head (when head_chars is unset)", ge=0, le=1
        )
        tail_ratio: float = param(
            0.1, "share of a masked body kept at its tail (when tail_chars is unset)", ge=0, le=1
        )
        head_chars: int | None = param(
            None, "characters kept at a masked body's head (replaces head_ratio)", ge=0
        )
        tail_chars: int | None = param(
            None, "characters kept at a masked body's tail (replaces tail_ratio)", ge=0
        )
        target_ratio: float = param(
            0.5,
            "hard-clear the oldest results until the view is at most this fraction of the prefix",
            ge=0,
            le=1,
        )
        placeholder: str = param(sel.CLEARED, "the text a hard-cleared result reads")
        exclude_tools: tuple[str, ...] = param((), "tools whose results are never edited")
        trigger_tokens: int = param(
            0, "act only when the prefix holds at least this many tokens (0: always)", ge=0
        )

    def propose(self, ctx: PrefixContext, need: Need) -> Plan:
        p = self.params
        total = ctx.tokens
        if total <= 0 or total < p.trigger_tokens:
            return not_triggered(need, total, p.trigger_tokens, "trigger_tokens")
        functions = ctx.index.functions()
        recent = sel.most_recent(functions, p.keep)
        old = [
            f
            for f in sel.editable_functions(ctx)
            if f.id not in recent and f.tool_name not in set(p.exclude_tools)
        ]
        edits: dict[str, Edit] = {}
        savings: dict[str, int] = {}
        for f in old:
            body = sel.result_body(ctx, f)
            if len(body) <= p.min_chars:
                continue
            head, tail = self._head_tail(len(body))
            saving = sel.replaced_saving(ctx, f, mask_text(body, head, tail, ctx.count))
            if saving > 0:
                edits[f.id] = Edit(f.id, "mask", head=head, tail=tail, reason="soft_trim")
                savings[f.id] = saving
        if need.active:
            return self._spend(ctx, need, old, recent, edits, savings)
        estimate = total - sum(savings.values())
        target = p.target_ratio * total
        for f in old:
            if estimate <= target:
                break
            saving = self._clear_saving(ctx, f)
            gained = saving - savings.get(f.id, 0)
            if gained <= 0:
                continue
            edits[f.id] = sel.clear(f, p.placeholder, "hard_clear")
            savings[f.id] = saving
            estimate -= gained
        ordered = tuple(edits[f.id] for f in old if f.id in edits)
        return Plan(ordered, meta={"estimated_tokens": estimate, "target_tokens": target})

    def _spend(
        self,
        ctx: PrefixContext,
        need: Need,
        old: list[ContextObject],
        recent: set[str],
        edits: dict[str, Edit],
        savings: dict[str, int],
    ) -> Plan:
        """Under a target or budget: hard-clear the oldest results outside the window (what each
        frees beyond its mask), then the window's, oldest first, until the need is met."""
        p = self.params
        excluded = set(p.exclude_tools)
        window = [
            f for f in sel.editable_functions(ctx) if f.id in recent and f.tool_name not in excluded
        ]
        hard_clears = (
            (
                sel.clear(f, p.placeholder, "hard_clear"),
                self._clear_saving(ctx, f) - savings.get(f.id, 0),
            )
            for f in old
        )
        window_clears = (
            (sel.clear(f, p.placeholder, "budget"), self._clear_saving(ctx, f)) for f in window
        )
        ext = extend(
            ctx,
            need,
            edits.values(),
            chain(hard_clears, window_clears),
            planned=sum(savings.values()),
            why="every clearable tool result is cleared; call envelopes, placeholders, excluded "
            "tools and the latest user message stay",
        )
        return Plan(ext.edits, meta=estimate_meta(need, ext.spent.planned), budget=ext.budget)

    def _head_tail(self, length: int) -> tuple[int, int]:
        p = self.params
        head = p.head_chars if p.head_chars is not None else int(length * p.head_ratio)
        tail = p.tail_chars if p.tail_chars is not None else int(length * p.tail_ratio)
        return head, tail

    def _clear_saving(self, ctx: PrefixContext, f: ContextObject) -> int:
        body = sel.result_body(ctx, f)
        if body == self.params.placeholder:
            return 0
        return sel.replaced_saving(ctx, f, self.params.placeholder)
