"""``hybrid``: observation masking, with summarisation of the oldest turns as a last resort."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..registry import param
from ..replay.context import PrefixContext
from ..replay.objects import ContextObject
from ..replay.plan import Edit, Plan
from . import _select as sel
from .base import Policy, policy
from .budget import BudgetParams, Need, extend, not_triggered
from .observation_masking import mask_saving, observation_masks, window_masks


def summary_line(ctx: PrefixContext, f: ContextObject, args_chars: int, digest_chars: int) -> str:
    """One deterministic summary line for a folded call: what was called, what came back."""
    body = sel.result_body(ctx, f)
    args = sel.one_line(f.arguments or "", args_chars)
    digest = sel.clip(sel.first_line(body), digest_chars) or "(empty)"
    return f"[summary] {sel.call_line(f, body, args, arrow='->', exact=False)}: {digest}"


@policy("hybrid")
class Hybrid(Policy):
    """Observation masking with a window, plus summarisation of the oldest turns as a last resort.

    Anchor: the hybrid strategy of JetBrains Research's "The Complexity Trap" (Lindenbauer et
    al., 2025): observation masking (window W = 10) runs always; once the trajectory is long, an
    LLM summary replaces the oldest turns (N = 43 summarised, the last M = 10 kept).

    Offline and deterministic: observations outside the last ``window`` tool uses (and the
    first, as in ``observation-masking``) become ``Old environment output: (<k> lines
    omitted)``. When the prefix holds more than ``summarize_after`` tool uses (agent turns),
    every tool use but the last ``keep_recent`` is folded into a summary line of its own (the
    call, its status, the first line of its result) with **no recovery route** (``route=False``):
    like the study's summaries, the original cannot be fetched back, and a judge counts what the
    future needs from it as lost.

    Parameters → knobs: ``window`` ↔ W; ``summarize_after`` ↔ N (the summariser's trigger, in
    tool uses); ``keep_recent`` ↔ M; ``digest_chars``/``args_chars`` bound each summary line;
    ``trigger_tokens``: the prefix must hold at least this many tokens.

    Budget (``target``/``budget``, ``policies/budget.py``): the rules above apply first; if they
    free less than the need, the masking window shrinks (the observations inside it are masked,
    oldest first, the first kept), then, as the last resort, the oldest tool uses are summarised
    (folded into their summary line, no recovery route), oldest first, whatever
    ``summarize_after`` says, until the need is met; the most recent tool use is the last to go.
    """

    @dataclass(frozen=True)
    class Params(BudgetParams):
        window: int = param(10, "most recent tool uses whose observations are not masked", ge=0)
        summarize_after: int = param(
            43, "summarise once the prefix holds more than this many tool uses", ge=0
        )
        keep_recent: int = param(
            10, "most recent tool uses left out of the summary once it starts", ge=0
        )
        digest_chars: int = param(
            160, "characters of a result's first line in its summary line", ge=1
        )
        args_chars: int = param(80, "characters of a call's arguments in its summary line", ge=1)
        trigger_tokens: int = param(
            0, "act only when the prefix holds at least this many tokens (0: always)", ge=0
        )

    def propose(self, ctx: PrefixContext, need: Need) -> Plan:
        p = self.params
        if ctx.tokens < p.trigger_tokens:
            return not_triggered(need, ctx.tokens, p.trigger_tokens, "trigger_tokens")
        edits = observation_masks(ctx, p.window, True, "outside_window")
        functions = ctx.index.functions()
        summarised = 0
        if len(functions) > p.summarize_after:
            recent = sel.most_recent(functions, p.keep_recent)
            for f in sel.editable_functions(ctx):
                if f.id in recent:
                    continue
                edits[f.id] = self._summary(ctx, f, "summarised")
                summarised += 1
        saving = {oid: self._saving(ctx, e) for oid, e in edits.items()} if need.active else {}
        ext = extend(
            ctx,
            need,
            edits.values(),
            self._budget(ctx, edits, saving),
            planned=sum(saving.values()),
            why="every tool use is summarised; call envelopes, summary lines and the latest "
            "user message stay",
        )
        summarised += sum(e.action == "fold" for e in ext.spent.edits)
        return Plan(ext.edits, meta={"summarised": summarised}, budget=ext.budget)

    def _summary(self, ctx: PrefixContext, f: ContextObject, reason: str) -> Edit:
        note = summary_line(ctx, f, self.params.args_chars, self.params.digest_chars)
        return Edit(f.id, "fold", note=note, route=False, reason=reason)

    def _saving(self, ctx: PrefixContext, edit: Edit) -> int:
        if edit.action == "fold":
            return sel.replaced_saving(ctx, ctx.index[edit.object_id], edit.note or "")
        return mask_saving(ctx, edit)

    def _budget(
        self, ctx: PrefixContext, edits: dict[str, Edit], saving: dict[str, int]
    ) -> Iterator[tuple[Edit, int]]:
        """Budget candidates once the rules are applied (``saving``: what each of their
        ``edits`` frees): the window's observations masked, oldest first, then, as the last
        resort, the oldest tool uses not yet summarised folded into their summary line (what
        each frees beyond its mask, if it has one)."""
        for edit, gain in window_masks(ctx, edits, True):
            yield edit, gain
            if gain > 0:  # read on: spend took this mask (it takes every one that frees tokens)
                saving[edit.object_id] = gain
        for f in sel.editable_functions(ctx):
            current = edits.get(f.id)
            if current is not None and current.action == "fold":
                continue
            edit = self._summary(ctx, f, "budget")
            yield edit, self._saving(ctx, edit) - saving.get(f.id, 0)
