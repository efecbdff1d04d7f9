"""``agent-forgetting``: the acting model archives tool results behind its own notes."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from ..datasets.messages import Message
from ..registry import param
from ..replay.context import PrefixContext
from ..replay.objects import ContextObject
from ..replay.plan import Edit, Plan, rehearse
from ..replay.view import commit
from . import _acf as acf
from . import _select as sel
from ._model_planner import (
    ModelParams,
    ModelPlannerError,
    ModelPlannerMixin,
)
from .base import Policy, policy
from .budget import BudgetParams, Need, budget_of, spend
from .need import predict, priority
from .recorded import recorded_edits


def forgetting_note(body: str, limit: int, found: list[str] | None = None) -> str:
    """A deterministic stand-in for the model's note: the first line and the locators the
    result carries (``found``: ``sel.locators(body)`` when already found), bounded to
    ``limit`` characters."""
    head = sel.first_line(body)
    found = sel.locators(body) if found is None else found
    note = head
    if found:
        listed = sel.clip(", ".join(found), max(limit - min(len(head), limit // 2) - 12, 0))
        note = f"{sel.clip(head, limit // 2)} | locators: {listed}"
    return sel.clip(note, limit)


@dataclass(frozen=True)
class ForgettingSettings:
    """Agent-controlled forgetting's own parameters (see :class:`AgentForgetting`)."""

    planner: Literal["rules", "llm"] = param(
        "rules", "who forgets: a rules stand-in, or the acting model itself (llm)"
    )
    reminder_tokens: int = param(
        8_000,
        "the first reminder fires once the context holds this many text tokens (ACF's agents: "
        "40,000; 8,000 here, as replayed prefixes are mostly shorter)",
        ge=0,
    )
    reminder_chars: int = param(
        20_000, "the next reminder fires after this many new characters", ge=0
    )
    min_chars: int = param(
        2000, "rules planner: results shorter than this many characters are not archived", ge=0
    )
    keep_recent: int = param(3, "rules planner: most recent tool uses never archived", ge=0)
    note_chars: int = param(240, "rules planner: bound of each note in characters", ge=1)
    max_prompt_tokens: int = param(
        0, "llm planner: a longer prefix is refused as a planner failure (0: no limit)", ge=0
    )


@policy("agent-forgetting")
class AgentForgetting(ModelPlannerMixin, Policy):
    """Agent-controlled forgetting: the acting model archives tool results behind its own notes.

    Anchor: Franke, agent-controlled forgetting (ACF). A reminder fires at ``reminder_tokens``
    text tokens (or an image), the next after ``reminder_chars`` new characters; the model may
    then call ``context_apply`` with an all-or-nothing batch of ``{result_id, note}``, each
    result archived exactly behind its note (``context_recover`` brings one back).
    ``planner=llm`` is the acting model itself; ``planner=rules`` stands in for it. A
    ``target`` or ``budget`` archives by predicted need (``need.py``).

    The reminder schedule, both planners and every parameter in full:
    ``docs/policies.md#agent-forgetting``.
    """

    @dataclass(frozen=True)
    class Params(ModelParams, ForgettingSettings, BudgetParams):
        """The planner and reminder settings first, then the llm planner's endpoint."""

    def handles(self, ctx: PrefixContext) -> dict[str, str]:
        return sel.handles(ctx.index)

    def propose(self, ctx: PrefixContext, need: Need) -> Plan:
        if self.params.planner == "llm":
            return self._plan_llm(ctx)
        p = self.params
        if need.active:
            return self._plan_budget(ctx, need)
        images = any(m.image_count for m in ctx.messages)
        if ctx.tokens < p.reminder_tokens and not images:
            below = f"the prefix holds {ctx.tokens:,} tokens, below reminder_tokens={p.reminder_tokens:,}"
            return Plan(all_or_nothing=True, no_edit=below)
        functions = ctx.index.functions()
        recent = sel.most_recent(functions, p.keep_recent)
        edits = [
            Edit(
                f.id,
                "fold",
                note=forgetting_note(
                    sel.result_body(ctx, f), p.note_chars, sel.result_locators(ctx, f)
                ),
                reason="large_older_result",
            )
            for f in sel.editable_functions(ctx)
            if f.id not in recent and self._selectable(ctx, f)
        ]
        return Plan(tuple(edits), all_or_nothing=True)

    def _plan_budget(self, ctx: PrefixContext, need: Need) -> Plan:
        p = self.params
        recent = sel.most_recent(ctx.index.functions(), p.keep_recent)
        candidates = [
            f
            for f in sel.editable_functions(ctx)
            if f.id not in recent and self._selectable(ctx, f)
        ]
        order = priority(predict(ctx, candidates))
        spent = spend(
            ((e, e.tokens) for e in order),
            need,
            why=f"every other result is among the last keep_recent or under min_chars={p.min_chars}",
        )
        edits = tuple(
            Edit(
                e.obj.id,
                "fold",
                note=forgetting_note(
                    sel.result_body(ctx, e.obj), p.note_chars, sel.result_locators(ctx, e.obj)
                ),
                reason=f"{e.reason} (need {e.score:.2f})",
            )
            for e in spent.edits
        )
        budget = budget_of(need, spent.planned, spent.reason)
        return Plan(edits, all_or_nothing=True, budget=budget)

    def _selectable(self, ctx: PrefixContext, f: ContextObject) -> bool:
        body = sel.result_body(ctx, f)
        return len(body) >= self.params.min_chars and not body.startswith("<ctxreplay:archived")

    # --- the llm planner: the acting model ------------------------------------------------

    def _plan_llm(self, ctx: PrefixContext) -> Plan:

        p = self.params
        prior, rejected = recorded_edits(ctx)
        meta: dict[str, Any] = {"planner": "llm", "n_recorded": len(prior)}
        if rejected:
            meta["recorded_rejected"] = rejected
        reminder = acf.reminder_due(ctx.messages, p.reminder_tokens, p.reminder_chars)
        if reminder is None:
            meta["decision"] = "no reminder due"
            return Plan(tuple(prior), all_or_nothing=True, meta=meta)
        meta["reminder"] = {"why": reminder.why, "tokens": reminder.tokens}
        seen = self._as_seen(ctx, prior)
        request = acf.acting_request(seen, ctx.index, reminder)
        args = {
            "tools": acf.TOOLS,
            "tool_choice": "auto",
            "temperature": p.temperature,
            "seed": p.seed,
            "max_tokens": p.max_tokens,
        }
        if p.max_prompt_tokens and ctx.tokens > p.max_prompt_tokens:
            raise ModelPlannerError(
                f"prefix of {ctx.tokens:,} tokens exceeds max_prompt_tokens "
                f"({p.max_prompt_tokens:,}); not sent",
                meta,
            )
        completion, meta, report = self.ask(request, args, meta)
        calls = [c.name for c in completion.tool_calls]
        meta["tool_calls"] = calls
        apply = next((c for c in completion.tool_calls if c.name == acf.APPLY), None)
        if apply is None:
            if _TEXT_CALL.search(completion.text or ""):
                raise ModelPlannerError(
                    "unparseable: context_apply written as text, not as a tool call", meta, report
                )
            meta["decision"] = "no context_apply call" if calls else "no tool call"
            return Plan(tuple(prior), all_or_nothing=True, planner=report, meta=meta)
        try:
            items = acf.read_batch(apply.arguments)
        except acf.ApplyBatchError as e:
            raise ModelPlannerError(f"unparseable: context_apply {e}", meta, report) from None
        meta["batch"] = [[rid, note] for rid, note in items]
        if not items:
            meta["decision"] = "empty batch"
            return Plan(tuple(prior), all_or_nothing=True, planner=report, meta=meta)
        problem = acf.batch_problem(
            ctx.index,
            items,
            archived={e.object_id for e in prior},
            protected={f.id for f in ctx.index.functions()}
            - {f.id for f in sel.editable_functions(ctx)},
        )
        meta["decision"] = "batch rejected" if problem else "batch applied"
        if problem:
            meta["batch_problem"] = problem
        edits = (*prior, *acf.batch_edits(ctx.index, items))
        return Plan(edits, all_or_nothing=True, planner=report, meta=meta)

    def _as_seen(self, ctx: PrefixContext, prior: list[Edit]) -> tuple[Message, ...]:
        """The prefix with the recorded archives in place: what the agent really saw."""
        if not prior:
            return ctx.messages
        recorded = rehearse(Plan(tuple(prior), all_or_nothing=True), ctx.index)
        view = commit(recorded, ctx.messages, ctx.index, ctx.count, handles=self.handles(ctx))
        return view.messages


#: a context_apply call the model wrote into its text instead of making it
_TEXT_CALL = re.compile(r"context_apply\s*[({]|\"result_id\"\s*:")
