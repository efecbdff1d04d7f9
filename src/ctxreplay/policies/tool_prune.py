"""``tool-prune``: clear old tool results, oldest first, behind a placeholder."""

from __future__ import annotations

from dataclasses import dataclass

from ..replay.objects import ContextObject
from ..replay.plan import Edit, Plan
from . import _select as sel
from .base import Policy, PrefixContext, policy


@policy("tool-prune")
class ToolPrune(Policy):
    """Clear tool results outside a recent window; the call envelopes stay.

    Anchors: Anthropic context editing ``clear_tool_uses_20250919`` (keep the most recent tool
    uses, clear older results oldest first, ``exclude_tools``, ``clear_at_least``) and OpenCode's
    ``SessionCompaction.prune`` (walk back through tool outputs, protect the newest
    ``PRUNE_PROTECT = 40_000`` tokens of them, prune the rest only when more than
    ``PRUNE_MINIMUM = 20_000`` tokens would be freed; pruned outputs read
    ``[Old tool result content cleared]``).

    Parameters → knobs: ``keep`` Anthropic's ``keep`` (tool uses; counted over all tool uses,
    excluded tools included); ``protect_tokens`` OpenCode's ``PRUNE_PROTECT`` (when set it
    replaces ``keep``: walking back from the newest result, tool-output tokens are summed and
    every result from the one that crosses the budget onwards is cleared, as OpenCode does;
    excluded tools are neither counted nor cleared); ``clear_at_least`` Anthropic's
    ``clear_at_least`` / OpenCode's ``PRUNE_MINIMUM`` (fewer tokens freed → no edit at all);
    ``exclude_tools`` Anthropic's ``exclude_tools`` / OpenCode's protected tools; ``placeholder``
    the replacement text (OpenCode's, by default); ``trigger_tokens`` Anthropic's ``trigger``
    (the prefix must hold at least this many tokens). A result that already reads as the
    placeholder, or is no longer than it, is not cleared (nothing would be freed). OpenCode
    also never prunes inside the two most recent user turns and stops at an earlier compaction
    boundary; neither is modelled (``keep``/``protect_tokens`` bound the recent window).
    """

    @dataclass(frozen=True)
    class Params:
        keep: int = 3
        protect_tokens: int | None = None
        exclude_tools: tuple[str, ...] = ()
        placeholder: str = sel.CLEARED
        clear_at_least: int = 0
        trigger_tokens: int = 0

    def plan(self, ctx: PrefixContext) -> Plan:
        p = self.params
        if ctx.tokens < p.trigger_tokens:
            return Plan()
        candidates = self._candidates(ctx)
        edits: list[Edit] = []
        freed = 0
        for obj in candidates:
            saving = sel.replaced_saving(ctx, obj, p.placeholder)
            if saving <= 0:
                continue
            freed += saving
            edits.append(Edit(obj.id, "prune", placeholder=p.placeholder, reason="outside_recent"))
        if freed < p.clear_at_least:
            return Plan(meta={"freed_tokens": freed, "skipped": "clear_at_least"})
        return Plan(tuple(edits), meta={"freed_tokens": freed})

    def _candidates(self, ctx: PrefixContext) -> list[ContextObject]:
        p = self.params
        functions = ctx.index.functions()
        editable = {f.id for f in sel.editable_functions(ctx)}
        excluded = set(p.exclude_tools)
        if p.protect_tokens is None:
            recent = sel.most_recent(functions, p.keep)
            old = [f for f in functions if f.id not in recent]
        else:
            old, total = [], 0
            for f in reversed(functions):
                if f.tool_name in excluded:
                    continue
                total += sel.body_tokens(ctx, f)
                if total > p.protect_tokens:
                    old.append(f)
            old.reverse()
        return [
            f
            for f in old
            if f.id in editable
            and f.tool_name not in excluded
            and sel.result_body(ctx, f) != p.placeholder
        ]
