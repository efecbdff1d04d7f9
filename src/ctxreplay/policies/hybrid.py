"""``hybrid``: observation masking, with summarisation of the oldest turns as a last resort."""

from __future__ import annotations

from dataclasses import dataclass

from ..replay.objects import ContextObject
from ..replay.plan import Edit, Plan
from . import _select as sel
from .base import Policy, PrefixContext, policy
from .observation_masking import observation_masks


def summary_line(ctx: PrefixContext, f: ContextObject, args_chars: int, digest_chars: int) -> str:
    """One deterministic summary line for a folded call: what was called, what came back."""
    body = sel.result_body(ctx, f)
    args = sel.clip(" ".join((f.arguments or "").split()), args_chars)
    status = "error" if f.is_error else f"{sel.line_count(body)} lines"
    digest = sel.clip(sel.first_line(body), digest_chars) or "(empty)"
    return f"[summary] {f.tool_name}({args}) -> {status}: {digest}"


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
    """

    @dataclass(frozen=True)
    class Params:
        window: int = 10
        summarize_after: int = 43
        keep_recent: int = 10
        digest_chars: int = 160
        args_chars: int = 80
        trigger_tokens: int = 0

    def plan(self, ctx: PrefixContext) -> Plan:
        p = self.params
        if ctx.tokens < p.trigger_tokens:
            return Plan()
        edits = observation_masks(ctx, p.window, True, "outside_window")
        functions = ctx.index.functions()
        summarised = 0
        if len(functions) > p.summarize_after:
            recent = sel.most_recent(functions, p.keep_recent)
            for f in sel.editable_functions(ctx):
                if f.id in recent:
                    continue
                note = summary_line(ctx, f, p.args_chars, p.digest_chars)
                edits[f.id] = Edit(f.id, "fold", note=note, route=False, reason="summarised")
                summarised += 1
        order = {f.id: i for i, f in enumerate(functions)}
        ordered = tuple(sorted(edits.values(), key=lambda e: order[e.object_id]))
        return Plan(ordered, meta={"summarised": summarised})
