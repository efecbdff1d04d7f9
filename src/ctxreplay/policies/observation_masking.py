"""``observation-masking``: every old observation becomes a one-line placeholder."""

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

_PREFIX = "Old environment output: ("


def masked_observation(body: str) -> str:
    """The JetBrains placeholder for one observation: its line count, nothing else."""
    return f"Old environment output: ({sel.line_count(body)} lines omitted)"


def observation_masks(
    ctx: PrefixContext, window: int, keep_first: bool, reason: str
) -> dict[str, Edit]:
    """Mask edits for every tool observation outside the last ``window`` (and the first)."""
    functions = ctx.index.functions()
    keep = sel.most_recent(functions, window)
    if keep_first and functions:
        keep.add(functions[0].id)
    edits: dict[str, Edit] = {}
    for f in sel.editable_functions(ctx):
        if f.id in keep or _already_masked(ctx, f):
            continue
        text = masked_observation(sel.result_body(ctx, f))
        edits[f.id] = Edit(f.id, "prune", placeholder=text, reason=reason)
    return edits


def mask_saving(ctx: PrefixContext, edit: Edit) -> int:
    """Tokens a mask edit of ``observation_masks`` frees (the placeholder replaces the body)."""
    return sel.replaced_saving(ctx, ctx.index[edit.object_id], edit.placeholder or "")


def window_masks(
    ctx: PrefixContext, planned: dict[str, Edit], keep_first: bool
) -> Iterator[tuple[Edit, int]]:
    """Budget candidates once the window rule is applied: every other observation, oldest first
    (the window shrinks; the most recent is the last to go; the first stays with ``keep_first``)."""
    for object_id, edit in observation_masks(ctx, 0, keep_first, "budget").items():
        if object_id not in planned:
            yield edit, mask_saving(ctx, edit)


def _already_masked(ctx: PrefixContext, f: ContextObject) -> bool:
    body = sel.result_body(ctx, f)
    return body.startswith(_PREFIX) and body.endswith(" lines omitted)") and "\n" not in body


@policy("observation-masking")
class ObservationMasking(Policy):
    """Replace each tool observation outside a recent window with a line-count placeholder.

    Anchors: JetBrains Research, "The Complexity Trap: Simple Observation Masking Is as
    Efficient as LLM Summarization for Agent Context Management" (Lindenbauer et al., 2025):
    observations older than the last M = 10 turns are replaced by
    ``Old environment output: (<k> lines omitted)``; OpenHands ``ObservationMaskingCondenser``
    (``attention_window``). The agent's reasoning and actions (the call envelopes) stay; only
    the observation body changes. The first observation is kept, as in the study's setup
    (the task's opening context).

    Parameters → knobs: ``keep`` ↔ M (the masking window, in tool uses; default 10) /
    OpenHands' ``attention_window``; ``keep_first`` keeps the first observation;
    ``trigger_tokens``: the prefix must hold at least this many tokens (the study masks always:
    default 0).

    Budget (``target``/``budget``, ``policies/budget.py``): the observations outside the window
    are masked as above; if that frees less than the need, the window shrinks: the observations
    inside it are masked too, oldest first, until the need is met (the most recent is the last
    to go; the first stays when ``keep_first``). ``trigger_tokens`` still gates the edit.
    """

    @dataclass(frozen=True)
    class Params(BudgetParams):
        keep: int = param(
            10, "the masking window: most recent tool uses whose observations stay", ge=0
        )
        keep_first: bool = param(True, "keep the first observation (the task's opening context)")
        trigger_tokens: int = param(
            0, "act only when the prefix holds at least this many tokens (0: always)", ge=0
        )

    def propose(self, ctx: PrefixContext, need: Need) -> Plan:
        p = self.params
        if ctx.tokens < p.trigger_tokens:
            return not_triggered(need, ctx.tokens, p.trigger_tokens, "trigger_tokens")
        edits = observation_masks(ctx, p.keep, p.keep_first, "outside_window")
        if not need.active:
            return Plan(tuple(edits.values()))
        ext = extend(
            ctx,
            need,
            edits.values(),
            window_masks(ctx, edits, p.keep_first),
            planned=sum(mask_saving(ctx, e) for e in edits.values()),
            why="every observation is masked"
            + (" but the first (keep_first)" if p.keep_first else "")
            + "; call envelopes, placeholders and the latest user message stay",
        )
        return Plan(ext.edits, meta={}, budget=ext.budget)
