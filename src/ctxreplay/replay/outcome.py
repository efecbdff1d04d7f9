"""One case through one policy: plan → rehearse → commit → decide. Pure; no I/O here."""

from __future__ import annotations

from dataclasses import dataclass

from .context import Planner, PrefixContext
from .plan import Plan, PlannerError, Rehearsal, rehearse
from .view import View, commit, identity_view


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

    @property
    def pruning_rate(self) -> float:
        return self.view.pruning_rate


def replay_case(policy: Planner, ctx: PrefixContext) -> Outcome:
    """Run ``policy`` on one prefix. A planner failure leaves the prefix unchanged, recorded."""
    failure = None
    try:
        plan = policy.plan(ctx)
    except PlannerError as e:
        # a failed call still cost tokens: keep its bookkeeping (tokens, prompt hash, params)
        failure = str(e)
        plan = Plan(meta={**e.meta, "failure": failure}, planner=e.report)
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
    )
