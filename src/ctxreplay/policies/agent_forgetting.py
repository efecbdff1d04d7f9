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
from .budget import BudgetParams, Need, budget_of, need_for, spend
from .need import predict, priority
from .recorded import recorded_edits


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

    Anchor: Franke, agent-controlled forgetting. The acting model receives a reminder once its
    context holds about 40,000 text tokens (``reminder_tokens``) or as soon as an image is
    present; the next one only after 20,000 new characters (``reminder_chars``) or a new image;
    a new user task starts the schedule again; the reminder is appended to the outgoing request
    and never stored (:mod:`._acf`). The model may then call ``context_apply`` with a batch of
    ``{result_id, note}``: each named tool result is archived exactly and replaced in place by
    the note (``<ctxreplay:archived id="rN" ref="…">note</…>``). Only tool results are
    selectable; the batch is all-or-nothing (an unknown, duplicate, already archived or
    non-result id rejects it whole and nothing changes); ``context_recover`` appends an original
    back as a new tool result with a fresh id (``sidecar.recover_into_view``). Result ids are
    ``r<N>`` (N the session-local call number): stable per session, never reused, shared with
    ``recorded``.

    The ``llm`` planner is the acting model itself, through any OpenAI-compatible endpoint. A
    replay sees one prefix, so the reminder schedule is simulated along it; when the outgoing
    request is not one where a reminder fires, the plan is empty (``meta["decision"]`` is
    ``"no reminder due"``) and no call is made. Otherwise the model gets the prefix as the agent
    saw it — as OpenAI chat messages, tool results opened by ``[result rN]``, and results that
    recorded ``context_apply`` calls had archived shown as their notes (those recorded folds
    stay in the plan, as ``recorded`` replays them) — the two context tools and the reminder.
    Its first ``context_apply`` call becomes one all-or-nothing batch; no such call means the
    model chose not to forget (an empty plan, recorded, not a failure). A refusal, arguments
    that are not ``{"batch": [{result_id, note}]}``, a tool call written as text, or a failed
    call is a planner failure: the prefix stays unchanged and the reason is recorded.

    The ``rules`` planner stands in for the model: when the prefix holds at least
    ``reminder_tokens`` (or carries images), it archives every tool result of at least
    ``min_chars`` characters outside the last ``keep_recent`` tool uses, with a note made of the
    result's first line and the locators it contains, bounded to ``note_chars``. With a
    ``target`` or ``budget`` the reminder is taken to fire on this request whatever the prefix
    size, and the rules planner archives tool results outside the last ``keep_recent`` in the
    order of predicted need (``need.py``: stale ones first, then the least likely to be needed
    again) until the need is met; ``min_chars`` still bounds what is worth a note.

    Parameters → knobs: ``reminder_tokens`` ↔ the first reminder (40,000 text tokens in ACF;
    8,000 by default here, as replayed prefixes are mostly shorter),
    ``reminder_chars`` ↔ the next one (20,000 new characters); ``min_chars``/``keep_recent``/
    ``note_chars`` shape the rules planner's choices; ``base_url``, ``model``, ``api_key_env``,
    ``timeout``, ``max_retries``, ``concurrency``, ``cache_dir``, ``tariff``, ``tariffs_path``,
    ``temperature``, ``seed``, ``max_tokens`` the llm planner's endpoint (plumbing stays out of
    the policy label); ``max_prompt_tokens`` (0: no limit) refuses, as a planner failure, a
    prefix too long for the model instead of sending it.
    """

    @dataclass(frozen=True)
    class Params(ModelParams, ForgettingSettings, BudgetParams):
        """The planner and reminder settings first, then the llm planner's endpoint."""

    def handles(self, ctx: PrefixContext) -> dict[str, str]:
        return sel.handles(ctx.index)

    def plan(self, ctx: PrefixContext) -> Plan:
        if self.params.planner == "llm":
            return self._plan_llm(ctx)
        p = self.params
        need = need_for(ctx, p)
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
                note=forgetting_note(sel.result_body(ctx, f), p.note_chars),
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
                note=forgetting_note(sel.result_body(ctx, e.obj), p.note_chars),
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
        except acf.BatchFormatError as e:
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
