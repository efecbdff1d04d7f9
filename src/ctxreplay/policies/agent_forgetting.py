"""``agent-forgetting``: the acting model archives tool results behind its own notes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ..replay.objects import ContextObject
from ..replay.plan import Edit, Plan
from . import _select as sel
from .base import Policy, PrefixContext, policy


def forgetting_note(body: str, limit: int) -> str:
    """A deterministic stand-in for the model's note: the first line and the locators the
    result carries, bounded to ``limit`` characters."""
    head = sel.first_line(body)
    found = sel.locators(body)
    note = head
    if found:
        listed = sel.clip(", ".join(found), max(limit - min(len(head), limit // 2) - 12, 0))
        note = f"{sel.clip(head, limit // 2)} | locators: {listed}"
    return sel.clip(note, limit)


@policy("agent-forgetting")
class AgentForgetting(Policy):
    """Agent-controlled forgetting, with a deterministic stand-in for the acting model.

    Anchor: Franke, agent-controlled forgetting. The acting model receives a reminder once its
    context holds about 40,000 text tokens (the next after 20,000 new characters; a replay sees
    one prefix, so only the first matters here), then calls ``context_apply`` with a batch of
    ``{result_id, note}``: each named tool result is archived exactly and replaced in place by
    the model's note. Only tool results are selectable; the batch is all-or-nothing (an
    unknown, duplicate or already archived id rejects it whole); ``context_recover`` appends an
    original back as a new tool result with a fresh id (``sidecar.recover_into_view``).

    The ``rules`` planner stands in for the model: when the prefix holds at least
    ``reminder_tokens`` (or carries images), it archives every tool result of at least
    ``min_chars`` characters outside the last ``keep_recent`` tool uses, with a note made of the
    result's first line and the locators it contains, bounded to ``note_chars``. Result ids are
    ``r<N>`` (N the session-local call number), shared with ``recorded``. The ``llm`` planner
    (the acting model itself, through an OpenAI-compatible endpoint) is not built yet.

    Parameters → knobs: ``reminder_tokens`` ↔ the reminder threshold (40,000);
    ``min_chars``/``keep_recent``/``note_chars`` shape the rules planner's choices.
    """

    all_or_nothing: ClassVar[bool] = True

    @dataclass(frozen=True)
    class Params:
        planner: Literal["rules", "llm"] = "rules"
        reminder_tokens: int = 40_000
        min_chars: int = 2000
        keep_recent: int = 3
        note_chars: int = 240

    def __init__(self, params: Any = None) -> None:
        super().__init__(params)
        if self.params.planner == "llm":
            raise ValueError(
                "agent-forgetting planner 'llm' needs a model endpoint (an OpenAI-compatible "
                "base_url), which is not wired yet; use planner=rules"
            )

    def handles(self, ctx: PrefixContext) -> dict[str, str]:
        return sel.handles(ctx.index)

    def plan(self, ctx: PrefixContext) -> Plan:
        p = self.params
        images = any(m.image_count for m in ctx.messages)
        if ctx.tokens < p.reminder_tokens and not images:
            return Plan(all_or_nothing=True)
        functions = ctx.index.functions()
        recent = sel.most_recent(functions, p.keep_recent)
        edits = [
            Edit(
                f.id,
                "fold",
                note=forgetting_note(sel.result_body(ctx, f), p.note_chars),
                reason="large_older_result",
            )
            for f in sel.editable_functions(ctx)
            if f.id not in recent and self._selectable(ctx, f)
        ]
        return Plan(tuple(edits), all_or_nothing=True)

    def _selectable(self, ctx: PrefixContext, f: ContextObject) -> bool:
        body = sel.result_body(ctx, f)
        return len(body) >= self.params.min_chars and not body.startswith("<ctxreplay:archived")
