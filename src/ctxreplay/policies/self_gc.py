"""``self-gc``: a planner over indexed objects (lifecycle rules or a model on a side channel),
committed only when it pays."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..registry import param
from ..replay.context import CommitDecision, PrefixContext
from ..replay.cost import commit_benefit
from ..replay.objects import ContextObject
from ..replay.plan import Edit, Plan, PlannerReport, Rehearsal, rehearse
from ..replay.view import View
from ..tariffs import load_tariff
from . import _select as sel
from ._model_planner import (
    ModelParams,
    ModelPlannerError,
    ModelPlannerMixin,
)
from ._selfgc_prompt import (
    SCHEMA_NAME,
    ParsedPlan,
    PlanFormatError,
    parse_plan,
    plan_schema,
    render_plan_prompt,
)
from .base import Policy, policy
from .budget import BudgetParams, Need, budget_of, spend
from .need import Estimate, predict, priority

#: rehearsal reasons that mean the planner named something that is not an object of the prefix
INVALID_REASONS = frozenset({"unknown_id", "not_target"})


@dataclass(frozen=True)
class SelfGCSettings:
    """Self-GC's own parameters (see :class:`SelfGC`)."""

    planner: Literal["rules", "llm"] = param(
        "rules", "who plans: the paper's lifecycle rules, or a model on a side channel"
    )
    keep_recent: int = param(2, "most recent tool uses never targeted", ge=0)
    short_tokens: int = param(
        500, "a result this short carrying unique locators is kept (unique_locators)", ge=0
    )
    fold_min_tokens: int = param(
        1500, "a non-error result at least this long is folded (large_stable_body)", ge=0
    )
    log_min_lines: int = param(
        20, "a log-like result has at least this many lines (repetitive_log)", ge=1
    )
    log_shape_ratio: float = param(
        0.6, "share of a log's lines that must share one shape", ge=0, le=1
    )
    mask_ratio: float = param(
        0.1, "share of a masked log kept at its head, and again at its tail", ge=0, le=0.5
    )
    commit_rule: Literal["threshold", "cost"] = param(
        "threshold", "commit by estimated pruning (threshold) or by net saving in USD (cost)"
    )
    commit_threshold: float = param(
        0.3, "threshold rule: commit when estimated pruning exceeds this share", ge=0, le=1
    )
    expected_requests: int = param(
        10, "cost rule: future requests N that read the view instead of the prefix", ge=0
    )
    # the default has a cache-write premium, as the study's provider does
    agent_tariff: str = param(
        "claude-sonnet-4", "cost rule: the acting agent's prices (a name in the tariffs file)"
    )
    agent_tariffs_path: str = param("", "cost rule: a tariffs file (empty: the built-in one)")
    # the default fits SmolLM2's 8,192-token context with room to answer
    max_prompt_tokens: int = param(
        4000, "llm planner: prompt budget in the corpus tokenizer's tokens", ge=1
    )
    plan_format: Literal["json", "xml"] = param(
        "json", "llm planner: the answer form asked for (json sends a strict json_schema)"
    )
    summary_chars: int = param(
        2000, "llm planner: bound of the summary in the schema and the instructions", ge=1
    )


@policy("self-gc")
class SelfGC(ModelPlannerMixin, Policy):
    """Self-GC (Hao et al. 2026): a planner proposes fold/mask/prune over indexed objects; the
    harness rehearses and commits; the commit is cache-aware.

    ``planner=rules`` applies the paper's prefix-only lifecycle rules (superseded,
    unique_locators, failed_attempt, repetitive_log, large_stable_body; ``Edit.reason`` names
    the rule that fired); ``planner=llm`` asks a model on a side channel for a summary and a
    plan of grouped steps, read strictly. A ``target`` or ``budget`` is spent by predicted need
    (``need.py``). ``commit_rule`` is the paper's threshold (0.3) or its cost rule
    N·(C − C′) − L_cache_break − L_GC > 0 (``replay.cost.commit_benefit``).

    The rules, the prompt, the commit and every parameter in full: ``docs/policies.md#self-gc``.
    """

    @dataclass(frozen=True)
    class Params(ModelParams, SelfGCSettings, BudgetParams):
        """The planner and commit settings first, then the llm planner's endpoint."""

    # --- plan -----------------------------------------------------------------------------

    def propose(self, ctx: PrefixContext, need: Need) -> Plan:
        if self.params.planner == "llm":
            return self._plan_llm(ctx)
        if need.active:
            return self._plan_budget(ctx, need)
        functions = ctx.index.functions()
        recent = sel.most_recent(functions, self.params.keep_recent)
        edits: list[Edit] = []
        for f in sel.editable_functions(ctx):
            if f.id in recent:
                continue
            edit = self._rule(ctx, f, functions)
            if edit is not None:
                edits.append(edit)
        return Plan(tuple(edits), meta={"planner": "rules", "l_gc": 0.0})

    def _plan_budget(self, ctx: PrefixContext, need: Need) -> Plan:
        """With a ``target`` or ``budget``: need prediction (``need.py``) chooses what goes.
        Stale results are pruned and structured output compacted whatever the need; then the
        results least likely to be needed again are masked (long logs) or folded behind a
        pointer (recoverable), least needed first, until the need is met."""
        p = self.params
        recent = sel.most_recent(ctx.index.functions(), p.keep_recent)
        candidates = [f for f in sel.editable_functions(ctx) if f.id not in recent]
        estimates = predict(
            ctx,
            candidates,
            log_min_lines=p.log_min_lines,
            log_shape_ratio=p.log_shape_ratio,
            mask_ratio=p.mask_ratio,
        )
        order = priority(estimates)
        free = [e for e in order if e.action in ("prune", "compact") and e.saving > 0]
        planned = sum(e.saving for e in free)
        spent = spend(
            ((e, e.saving) for e in order if e.action not in ("prune", "compact")),
            need,
            planned=planned,
            why="every other result is among the last keep_recent or frees nothing",
        )
        chosen = [*free, *spent.edits]
        edits = tuple(self._estimate_edit(ctx, e) for e in chosen)
        meta = {"planner": "rules", "l_gc": 0.0, "need_prediction": True}
        return Plan(edits, meta=meta, budget=budget_of(need, spent.planned, spent.reason))

    def _estimate_edit(self, ctx: PrefixContext, e: Estimate) -> Edit:
        reason = f"{e.reason} (need {e.score:.2f})"
        if e.action == "mask":
            return Edit(e.obj.id, "mask", head=e.keep, tail=e.keep, reason=reason)
        return Edit(e.obj.id, e.action, reason=reason)

    def _rule(
        self, ctx: PrefixContext, f: ContextObject, functions: list[ContextObject]
    ) -> Edit | None:
        p = self.params
        body = sel.result_body(ctx, f)
        tokens = sel.body_tokens(ctx, f)
        if f.superseded_by is not None:
            return Edit(f.id, "prune", reason=f"superseded by {f.superseded_by}")
        if tokens <= p.short_tokens:
            unique = sel.unique_locators(ctx, f)
            if unique:
                return Edit(f.id, "keep", reason="unique_locators: " + ", ".join(unique[:5]))
        if f.is_error and _later_success(f, functions):
            return Edit(f.id, "prune", reason="failed_attempt")
        if sel.result_is_log_like(ctx, f, p.log_min_lines, p.log_shape_ratio):
            head = int(len(body) * p.mask_ratio)
            return Edit(f.id, "mask", head=head, tail=head, reason="repetitive_log")
        if not f.is_error and tokens >= p.fold_min_tokens:
            return Edit(f.id, "fold", reason="large_stable_body")
        return None

    # --- the llm planner -------------------------------------------------------------------

    def _call_args(self) -> dict[str, Any]:
        p = self.params
        args: dict[str, Any] = {
            "temperature": p.temperature,
            "seed": p.seed,
            "max_tokens": p.max_tokens,
        }
        if p.plan_format == "json":
            args.update(
                response_format="json_schema",
                schema=plan_schema(p.summary_chars),
                schema_name=SCHEMA_NAME,
            )
        return args

    def _plan_llm(self, ctx: PrefixContext) -> Plan:

        p = self.params
        rendered = render_plan_prompt(
            ctx.messages,
            ctx.index,
            count=ctx.count,
            max_prompt_tokens=p.max_prompt_tokens,
            xml=p.plan_format == "xml",
            summary_chars=p.summary_chars,
        )
        prompt = {
            "prompt_rendered_tokens": rendered.tokens,
            "prompt_preview_scale": rendered.scale,
            "prompt_over_budget": rendered.over_budget,
        }
        args = self._call_args()
        completion, meta, report = self.ask(rendered.messages, args, prompt)
        try:
            parsed = parse_plan(completion.text)
        except PlanFormatError as e:
            cut = " (truncated at max_tokens)" if completion.finish_reason == "length" else ""
            raise ModelPlannerError(f"unparseable: {e}{cut}", meta, report) from None
        return self._plan_from(ctx, parsed, meta, report)

    def _plan_from(
        self,
        ctx: PrefixContext,
        parsed: ParsedPlan,
        meta: dict[str, Any],
        report: PlannerReport | None = None,
    ) -> Plan:
        """One edit per target; counted against the prefix the way the harness will see it."""
        edits = tuple(
            Edit(target, step.action, reason=step.reason or None)
            for step in parsed.steps
            for target in step.targets
        )
        trial = rehearse(Plan(edits), ctx.index)
        reasons: dict[str, int] = {}
        for d in trial.dropped:
            reasons[d.reason] = reasons.get(d.reason, 0) + 1
        meta = {
            **meta,
            "form": parsed.form,
            "n_steps": len(parsed.steps),
            "n_targets": len(edits),
            "n_invalid": sum(n for r, n in reasons.items() if r in INVALID_REASONS),
            "n_protected": reasons.get("protected", 0),
            "touched_latest_turn": trial.touched_latest_turn,
            "n_dropped": len(trial.dropped),
            "dropped": reasons,
        }
        return Plan(edits, summary=parsed.summary or None, planner=report, meta=meta)

    # --- decide ---------------------------------------------------------------------------

    def decide(
        self, ctx: PrefixContext, rehearsal: Rehearsal, view: View, plan: Plan
    ) -> CommitDecision:
        p = self.params
        prefix = ctx.tokens
        if plan.budget is not None and p.commit_rule == "threshold":
            return CommitDecision(True, "budget: the target or budget asks for this removal")
        if p.commit_rule == "threshold":
            pruning = rehearsal.estimated_saving / prefix if prefix else 0.0
            if pruning > p.commit_threshold:
                return CommitDecision(True, f"pruning {pruning:.3f} > {p.commit_threshold}")
            return CommitDecision(False, f"pruning {pruning:.3f} <= {p.commit_threshold}")
        l_gc = plan.planner.usd if plan.planner is not None else None
        value = self.commit_value(prefix, view, l_gc=float(l_gc or 0.0))
        if value > 0:
            return CommitDecision(True, f"cost: net saving {value:.6f} USD > 0")
        return CommitDecision(False, f"cost: net saving {value:.6f} USD <= 0")

    def commit_value(self, prefix_tokens: int, view: View, l_gc: float = 0.0) -> float:
        """N·(C − C′) − L_cache_break − L_GC in USD (see the class docstring); ``l_gc`` is the
        planner's cost (0 for rules)."""
        p = self.params
        tariff = load_tariff(p.agent_tariff or None, p.agent_tariffs_path or None)
        return commit_benefit(
            p.expected_requests,
            prefix_tokens - view.tokens,
            _tokens_from_first_edit(view),
            tariff,
            l_gc,
        )


def _later_success(f: ContextObject, functions: list[ContextObject]) -> bool:
    later = functions[functions.index(f) + 1 :]
    return any(g.tool_name == f.tool_name and not g.is_error for g in later)


def _tokens_from_first_edit(view: View) -> int:
    """View tokens from the first message that differs from the prefix (edited, inserted, or
    shifted because an earlier one was dropped): the part of the cache the commit breaks."""
    for i, origin in enumerate(view.origins):
        if origin.edited or origin.index != i:
            return sum(m.tokens for m in view.messages[i:])
    return 0
