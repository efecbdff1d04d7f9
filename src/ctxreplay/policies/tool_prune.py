"""``tool-prune``: clear old tool results, oldest first, behind a placeholder."""

from __future__ import annotations

from dataclasses import dataclass

from ..registry import param
from ..replay.context import PrefixContext
from ..replay.objects import ContextObject
from ..replay.plan import Edit, Plan
from . import _select as sel
from .base import Policy, policy
from .budget import BudgetParams, Need, extend, freed_too_little, not_triggered


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

    Budget (``target``/``budget``, ``policies/budget.py``): the results outside the recent window
    are cleared as above; if that frees less than the need, the recent window shrinks: results
    inside it are cleared too, oldest first, until the need is met (the most recent result is the
    last to go). Excluded tools, results already cleared and results carried by the latest user
    message stay. ``clear_at_least`` and ``trigger_tokens`` still gate the whole edit.
    """

    @dataclass(frozen=True)
    class Params(BudgetParams):
        keep: int = param(
            3, "most recent tool uses whose results stay (counted over all tool uses)", ge=0
        )
        protect_tokens: int | None = param(
            None,
            "when set, replaces keep: newest tool-output tokens protected, the rest cleared",
            ge=0,
        )
        exclude_tools: tuple[str, ...] = param((), "tools whose results are never cleared")
        placeholder: str = param(sel.CLEARED, "the text a cleared result reads")
        clear_at_least: int = param(
            0, "fewer tokens freed than this → no edit at all (0: any saving)", ge=0
        )
        trigger_tokens: int = param(
            0, "act only when the prefix holds at least this many tokens (0: always)", ge=0
        )

    def propose(self, ctx: PrefixContext, need: Need) -> Plan:
        p = self.params
        if ctx.tokens < p.trigger_tokens:
            return not_triggered(need, ctx.tokens, p.trigger_tokens, "trigger_tokens")
        old, recent = self._candidates(ctx)
        edits: list[Edit] = []
        freed = 0
        for obj in old:
            saving = sel.replaced_saving(ctx, obj, p.placeholder)
            if saving <= 0:
                continue
            freed += saving
            edits.append(sel.clear(obj, p.placeholder, "outside_recent"))
        ext = extend(
            ctx,
            need,
            edits,
            (
                (sel.clear(f, p.placeholder, "budget"), sel.replaced_saving(ctx, f, p.placeholder))
                for f in recent
            ),
            planned=freed,
            why="every clearable tool result is cleared; call envelopes, placeholders, "
            "excluded tools and the latest user message stay",
        )
        freed = ext.spent.planned
        if freed < p.clear_at_least:
            meta = {"freed_tokens": freed, "skipped": "clear_at_least"}
            return freed_too_little(need, freed, p.clear_at_least, meta)
        return Plan(ext.edits, meta={"freed_tokens": freed}, budget=ext.budget)

    def _candidates(self, ctx: PrefixContext) -> tuple[list[ContextObject], list[ContextObject]]:
        """Clearable results outside the recent window, and those inside it (oldest first)."""
        p = self.params
        functions = ctx.index.functions()
        editable = {f.id for f in sel.editable_functions(ctx)}
        excluded = set(p.exclude_tools)
        if p.protect_tokens is None:
            recent = sel.most_recent(functions, p.keep)
            old = {f.id for f in functions if f.id not in recent}
        else:
            old, total = set(), 0
            for f in reversed(functions):
                if f.tool_name in excluded:
                    continue
                total += sel.body_tokens(ctx, f)
                if total > p.protect_tokens:
                    old.add(f.id)
        clearable = [
            f
            for f in functions
            if f.id in editable
            and f.tool_name not in excluded
            and sel.result_body(ctx, f) != p.placeholder
        ]
        return [f for f in clearable if f.id in old], [f for f in clearable if f.id not in old]
