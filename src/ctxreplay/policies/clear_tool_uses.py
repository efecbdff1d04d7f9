"""``clear-tool-uses``: Anthropic's ``clear_tool_uses_20250919`` context edit, offline."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..datasets.messages import Part
from ..registry import param
from ..replay.context import PrefixContext
from ..replay.objects import ContextObject, part_tokens
from ..replay.plan import Edit, Plan
from . import _select as sel
from .base import Policy, policy
from .budget import BudgetParams, Need, extend, freed_too_little, not_triggered

#: Anthropic documents only that cleared results are replaced "with placeholder text to let
#: Claude know the tool result was removed"; the text itself is not published. LangChain's
#: ``ClearToolUsesEdit``, which mirrors this edit, uses ``[cleared]``; so do we.
PLACEHOLDER = "[cleared]"


@policy("clear-tool-uses")
class ClearToolUses(Policy):
    """Anthropic context editing, strategy ``clear_tool_uses_20250919`` (beta header
    ``context-management-2025-06-27``), with its exact parameter surface and defaults.

    When the prompt (the prefix) holds at least ``trigger`` input tokens, the tool results older
    than the ``keep`` most recent tool uses are cleared in chronological order, each replaced by a
    placeholder while its ``tool_use`` envelope stays (so the request remains valid). Results of
    tools named in ``exclude_tools`` are never cleared (they still count among the ``keep`` most
    recent uses). If clearing everything eligible would free fewer than ``clear_at_least`` tokens,
    the strategy is not applied at all. With ``clear_tool_inputs`` the cleared calls' inputs
    become ``{}`` too. Anthropic does not publish its placeholder text; we use ``[cleared]``,
    the text of LangChain's mirror of this edit (``ClearToolUsesEdit``). A result that already
    reads ``[cleared]`` counts as cleared by an earlier activation.

    Parameters → knobs (one to one): ``trigger`` ↔ ``trigger: {type: input_tokens, value}``
    (the API's default is 100,000; ours is 0, so that the edit acts on replayed prefixes, which
    are mostly shorter — ``trigger=100000`` is the API's behaviour); ``keep`` ↔ ``keep: {type: tool_uses, value}`` (default 3);
    ``clear_at_least`` ↔ ``clear_at_least: {type: input_tokens, value}`` (default none = 0);
    ``exclude_tools`` ↔ ``exclude_tools`` (default none); ``clear_tool_inputs`` ↔
    ``clear_tool_inputs`` (default false; the list form of that knob is not modelled).
    Anthropic's ``tool_uses`` trigger type is not modelled either.

    Budget (``target``/``budget``, ``policies/budget.py``; not an Anthropic knob): the results
    older than the ``keep`` most recent uses are cleared as above; if that frees less than the
    need, the kept window shrinks: its results are cleared too, oldest first, until the need is
    met (the most recent result is the last to go). ``exclude_tools``, ``trigger`` and
    ``clear_at_least`` keep their meaning.
    """

    @dataclass(frozen=True)
    class Params(BudgetParams):
        trigger: int = param(
            0,
            "act only when the prefix holds at least this many input tokens (the API's default "
            "is 100,000; 0 here acts at every request point of the traces replayed)",
            ge=0,
        )
        keep: int = param(3, "most recent tool uses whose results stay", ge=0)
        clear_at_least: int = param(
            0, "fewer tokens freed than this → the strategy is not applied (0: any)", ge=0
        )
        exclude_tools: tuple[str, ...] = param((), "tools whose results are never cleared")
        clear_tool_inputs: bool = param(False, "also replace the cleared calls' inputs by {}")

    def propose(self, ctx: PrefixContext, need: Need) -> Plan:
        p = self.params
        if ctx.tokens < p.trigger:
            return not_triggered(need, ctx.tokens, p.trigger, "trigger")
        functions = ctx.index.functions()
        recent = sel.most_recent(functions, p.keep)
        editable = {f.id for f in sel.editable_functions(ctx)}
        excluded = set(p.exclude_tools)
        edits: list[Edit] = []
        freed = 0
        window: list[ContextObject] = []
        for f in functions:
            if f.id not in editable or f.tool_name in excluded:
                continue
            if sel.result_body(ctx, f) == PLACEHOLDER and not p.clear_tool_inputs:
                continue  # cleared by an earlier activation
            if f.id in recent:
                window.append(f)
                continue
            freed += self._saving(ctx, f)
            edits.append(self._clear(f))
        ext = extend(
            ctx,
            need,
            edits,
            ((self._clear(f), self._saving(ctx, f)) for f in window),
            planned=freed,
            why="every clearable tool result is cleared; call envelopes, placeholders and "
            "excluded tools stay",
        )
        freed = ext.spent.planned
        none = {"cleared_input_tokens": 0, "cleared_tool_uses": 0}
        if not ext.edits:
            return Plan(meta=none, budget=ext.budget)
        if freed < p.clear_at_least:
            return freed_too_little(need, freed, p.clear_at_least, none)
        meta = {"cleared_input_tokens": freed, "cleared_tool_uses": len(ext.edits)}
        return Plan(ext.edits, meta=meta, budget=ext.budget)

    def _clear(self, f: ContextObject) -> Edit:
        return sel.clear(f, PLACEHOLDER, "clear_tool_uses", self.params.clear_tool_inputs)

    def _saving(self, ctx: PrefixContext, f: ContextObject) -> int:
        saving = sel.replaced_saving(ctx, f, PLACEHOLDER)
        if self.params.clear_tool_inputs:
            saving += part_tokens(sel.call_part(ctx, f), ctx.count) - part_tokens(
                _cleared_call(ctx, f), ctx.count
            )
        return saving


def _cleared_call(ctx: PrefixContext, f: ContextObject) -> Part:
    """The call as the view shows it once its inputs are cleared."""
    return replace(sel.call_part(ctx, f), arguments="{}")
