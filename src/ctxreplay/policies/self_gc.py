"""``self-gc``: lifecycle rules over indexed objects, committed only when it pays."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..replay.objects import ContextObject
from ..replay.plan import Edit, Plan, Rehearsal
from ..replay.view import View
from . import _select as sel
from .base import CommitDecision, Policy, PrefixContext, policy


@policy("self-gc")
class SelfGC(Policy):
    """Self-GC (Hao et al. 2026): a planner proposes fold/mask/prune over indexed objects; the
    harness rehearses and commits; the commit is cache-aware.

    The ``rules`` planner is the paper's deterministic, prefix-only lifecycle rules. For each
    tool use outside the last ``keep_recent`` (the latest user turn is never a target), the
    first rule that fires decides, and ``Edit.reason`` names it:

    1. ``superseded`` → prune: the same tool was called again later with the same arguments
       (a re-read): the later result is the live one.
    2. ``unique_locators`` → keep: a short result (at most ``short_tokens``) carrying URLs,
       paths or ids found nowhere else in the prefix (not even in its own call).
    3. ``failed_attempt`` → prune: an errored result, when a later call of the same tool
       succeeded.
    4. ``repetitive_log`` → mask (first and last ``mask_ratio`` kept): at least
       ``log_min_lines`` lines, most of which share a shape once digits and hex runs are
       normalised. Tables, stack traces and diff hunks are never treated as logs.
    5. ``large_stable_body`` → fold (exact payload to the sidecar, a pointer stays): a
       non-error result of at least ``fold_min_tokens`` tokens.

    Everything else is kept. Planner cost L_GC is 0 for rules.

    Commit (``decide``): ``commit_rule="threshold"`` (default) commits when the rehearsed
    estimated pruning (estimated saving / prefix tokens) exceeds ``commit_threshold`` — 0.3, the
    paper's operating point. ``commit_rule="cost"`` commits when
    N·(C − C′) − L_cache_break − L_GC > 0, with N = ``expected_requests`` future requests,
    C = ``cached_price``·P and C′ = ``cached_price``·V the per-request cost of reading the prefix
    (P tokens) or the view (V tokens) from the prompt cache, and L_cache_break =
    (``cache_write_price`` − ``cached_price``)·S the one-off cost of writing the S view tokens
    from the first edited message on into the cache instead of reading them (the untouched head
    stays cached). Prices are USD per million tokens (defaults: Claude Sonnet's cache read and
    5-minute cache write). The fuller cost model of the replay engine can replace this later.

    Parameters → knobs: ``planner`` rules | llm (llm not built yet); ``keep_recent``,
    ``short_tokens``, ``fold_min_tokens``, ``log_min_lines``, ``log_shape_ratio``, ``mask_ratio`` the rules;
    ``commit_rule``, ``commit_threshold``, ``expected_requests``, ``cached_price``,
    ``cache_write_price`` the commit decision.
    """

    @dataclass(frozen=True)
    class Params:
        planner: Literal["rules", "llm"] = "rules"
        keep_recent: int = 2
        short_tokens: int = 500
        fold_min_tokens: int = 1500
        log_min_lines: int = 20
        log_shape_ratio: float = 0.6
        mask_ratio: float = 0.1
        commit_rule: Literal["threshold", "cost"] = "threshold"
        commit_threshold: float = 0.3
        expected_requests: int = 10
        cached_price: float = 0.30
        cache_write_price: float = 3.75

    def __init__(self, params: Any = None) -> None:
        super().__init__(params)
        if self.params.planner == "llm":
            raise ValueError(
                "self-gc planner 'llm' needs a model endpoint (an OpenAI-compatible base_url), "
                "which is not wired yet; use planner=rules"
            )

    # --- plan -----------------------------------------------------------------------------

    def plan(self, ctx: PrefixContext) -> Plan:
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
        if sel.is_log_like(body, p.log_min_lines, p.log_shape_ratio):
            head = int(len(body) * p.mask_ratio)
            return Edit(f.id, "mask", head=head, tail=head, reason="repetitive_log")
        if not f.is_error and tokens >= p.fold_min_tokens:
            return Edit(f.id, "fold", reason="large_stable_body")
        return None

    # --- decide ---------------------------------------------------------------------------

    def decide(
        self, ctx: PrefixContext, rehearsal: Rehearsal, view: View, plan: Plan
    ) -> CommitDecision:
        p = self.params
        prefix = ctx.tokens
        if p.commit_rule == "threshold":
            pruning = rehearsal.estimated_saving / prefix if prefix else 0.0
            if pruning > p.commit_threshold:
                return CommitDecision(True, f"pruning {pruning:.3f} > {p.commit_threshold}")
            return CommitDecision(False, f"pruning {pruning:.3f} <= {p.commit_threshold}")
        value = self.commit_value(prefix, view)
        if value > 0:
            return CommitDecision(True, f"cost: net saving {value:.6f} USD > 0")
        return CommitDecision(False, f"cost: net saving {value:.6f} USD <= 0")

    def commit_value(self, prefix_tokens: int, view: View) -> float:
        """N·(C − C′) − L_cache_break − L_GC in USD (see the class docstring)."""
        p = self.params
        per_token = 1e-6
        c = p.cached_price * per_token * prefix_tokens
        c_new = p.cached_price * per_token * view.tokens
        broken = _tokens_from_first_edit(view)
        cache_break = (p.cache_write_price - p.cached_price) * per_token * broken
        l_gc = 0.0  # rules cost nothing to run
        return p.expected_requests * (c - c_new) - cache_break - l_gc


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
