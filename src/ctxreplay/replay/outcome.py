"""One case through one policy: plan → rehearse → commit → decide. Pure; no I/O here."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..datasets.messages import Message
from .objects import build_index
from .plan import Plan, PlannerError, Rehearsal, rehearse
from .view import Origin, View, commit

if TYPE_CHECKING:
    from ..policies.base import Policy, PrefixContext


@dataclass(frozen=True)
class Outcome:
    case_id: str
    policy: str
    plan: Plan
    rehearsal: Rehearsal
    view: View
    committed: bool
    commit_reason: str
    planner_failure: str | None = None
    planner: dict[str, Any] = field(default_factory=dict)

    @property
    def pruning_rate(self) -> float:
        return self.view.pruning_rate


def identity_view(messages: Sequence[Message]) -> View:
    tokens = sum(m.tokens for m in messages)
    return View(
        tuple(messages), tuple(Origin(i) for i in range(len(messages))), (), {}, tokens, tokens
    )


def replay_case(policy: Policy, ctx: PrefixContext) -> Outcome:
    """Run ``policy`` on one prefix. A planner failure leaves the prefix unchanged, recorded."""
    failure = None
    try:
        plan = policy.plan(ctx)
    except PlannerError as e:
        # a failed call still cost tokens: keep its bookkeeping (tokens, prompt hash, params)
        plan, failure = Plan(meta={**getattr(e, "meta", {}), "failure": str(e)}), str(e)
    rehearsal = rehearse(plan, ctx.index)
    view = commit(
        rehearsal,
        ctx.messages,
        ctx.index,
        ctx.count,
        handles=policy.handles(ctx),
        summary=plan.summary,
    )
    if failure is not None:
        decision_commit, reason = False, "planner_failed"
    elif rehearsal.batch_rejected:
        decision_commit, reason = False, "batch_rejected"
    elif rehearsal.is_empty:
        decision_commit, reason = False, "nothing_to_do"
    else:
        decision = policy.decide(ctx, rehearsal, view, plan)
        decision_commit, reason = decision.commit, decision.reason
    if not decision_commit:
        view = identity_view(ctx.messages)
    return Outcome(
        case_id=ctx.case_id,
        policy=policy.label,
        plan=plan,
        rehearsal=rehearsal,
        view=view,
        committed=decision_commit,
        commit_reason=reason,
        planner_failure=failure,
        planner=dict(plan.meta),
    )


def context_for(
    messages: Sequence[Message],
    count: Callable[[str], int],
    case_id: str = "case",
    session_id: str = "session",
) -> PrefixContext:
    from ..policies.base import PrefixContext

    prefix = tuple(m for m in messages if m.visible)
    return PrefixContext(case_id, session_id, prefix, build_index(prefix, count), count)


def replay_messages(
    messages: Sequence[Message], policy: str | Policy, count: Callable[[str], int] | None = None
) -> Outcome:
    """Three-line use: ``replay_messages(prefix, "tool-prune:keep=1").view.messages``.

    Messages without stored token counts get them from ``count`` (default: o200k_base).
    """
    from dataclasses import replace

    from ..policies.base import make_policy
    from .objects import part_tokens

    if count is None:
        from ..datasets.tokenizer import get_tokenizer

        count = get_tokenizer().count
    counted = [
        m if m.tokens else replace(m, tokens=sum(part_tokens(p, count) for p in m.parts))
        for m in messages
    ]
    return replay_case(make_policy(policy), context_for(counted, count))
