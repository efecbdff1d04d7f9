"""``observation-masking``: every old observation becomes a one-line placeholder."""

from __future__ import annotations

from dataclasses import dataclass

from ..replay.objects import ContextObject
from ..replay.plan import Edit, Plan
from . import _select as sel
from .base import Policy, PrefixContext, policy

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
    """

    @dataclass(frozen=True)
    class Params:
        keep: int = 10
        keep_first: bool = True
        trigger_tokens: int = 0

    def plan(self, ctx: PrefixContext) -> Plan:
        p = self.params
        if ctx.tokens < p.trigger_tokens:
            return Plan()
        edits = observation_masks(ctx, p.keep, p.keep_first, "outside_window")
        return Plan(tuple(edits.values()))
