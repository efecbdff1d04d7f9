"""One way to say how much to remove: ``target`` (a share of the editable tokens) and ``budget``
(tokens the view must fit in), shared by the heuristic policies (``policies/budget.py``).

Each policy keeps its own rule and order; the need only extends (or, for the stop rules of
``oldest-turn`` and ``tool-mask+prune``, replaces) where it stops. Sessions are hand-built, so
every expected edit set is exact."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import asdict
from functools import partial

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_policy_properties import build, session_spec

from ctxreplay.datasets.messages import Part
from ctxreplay.policies.base import make_policy
from ctxreplay.policies.budget import (
    BudgetParams,
    Need,
    budget_of,
    editable_tokens,
    need_for,
    spend,
    tokens_to_remove,
)
from ctxreplay.policies.hybrid import summary_line
from ctxreplay.policies.observation_masking import masked_observation
from ctxreplay.registry import describe_params, parse_params
from ctxreplay.replay.context import context_for
from ctxreplay.replay.outcome import Outcome, replay_case
from ctxreplay.replay.plan import Edit
from ctxreplay.replay.view import fold_pointer, make_archive, mask_text, view_problems

from sessions import Session, count, prose, reads, shape, with_result

CLEARED = "[Old tool result content cleared]"
ANTHROPIC = "[cleared]"
SIX = (
    "oldest-turn",
    "tool-prune",
    "tool-mask+prune",
    "hybrid",
    "observation-masking",
    "clear-tool-uses",
    "prune-summarise",
)
#: the heuristics, with the thresholds that would keep them idle on small sessions lowered
ACTIVE = {
    "oldest-turn": "oldest-turn",
    "tool-prune": "tool-prune",
    "tool-mask+prune": "tool-mask+prune:min_chars=300",
    "hybrid": "hybrid:window=2",
    "observation-masking": "observation-masking:keep=2",
    "clear-tool-uses": "clear-tool-uses:trigger=0",
    "prune-summarise": "prune-summarise:keep=2",
}


def with_params(spec: str, extra: str) -> str:
    return f"{spec},{extra}" if ":" in spec else f"{spec}:{extra}"


#: the build investigation, under a system prompt that states a rule of its own
budget_reads = partial(reads, system="You are a coding agent. Keep the public API unchanged.")


def results(s: Session) -> list[str]:
    """The result bodies of a ``reads`` session, oldest first."""
    return [m.parts[0].content for m in s.messages if m.role == "tool"]


def removed(out: Outcome) -> int:
    return out.view.prefix_tokens - out.view.tokens


def edited(out: Outcome) -> dict[str, str]:
    return {e.object_id: e.action for e in out.plan.edits}


def bash(*ns: int) -> set[str]:
    return {f"function:bash:{n}" for n in ns}


def target_for(s: Session, need: int) -> float:
    """The target that asks for exactly ``need`` tokens of this session."""
    return need / editable_tokens(s.ctx())


# --- the shared module ----------------------------------------------------------------------


def test_editable_tokens_exclude_system_developer_and_the_latest_user_message_exactly():
    s = Session()
    sys_i = s.system("You are a coding agent.")
    dev_i = s.add("developer", [Part.text("Never push to main.")])
    s.user("Fix the parser.")
    s.step("read_file", {"path": "app.py"}, prose(20, "app"))
    s.say("The parser fails on a missing key.")
    latest = s.user("Now also keep the public API unchanged.")
    s.step("edit_file", {"path": "app.py"}, "ok")
    total = s.total()
    fixed = sum(s.messages[i].tokens for i in (sys_i, dev_i, latest))
    assert editable_tokens(s.ctx()) == total - fixed
    # the latest turn's execution (its calls) is editable: only the user's words are protected
    assert editable_tokens(s.ctx()) > total - fixed - s.messages[-1].tokens


def test_a_tool_result_carried_by_the_latest_user_message_is_not_editable():
    s = budget_reads(2)
    s.add("assistant", [Part.call("call_x", "bash", {"cmd": "make"})])
    carrier = s.add(
        "user", [Part.response("call_x", prose(30, "make")), Part.text("Why did make fail?")]
    )
    expected = s.total() - s.messages[0].tokens - s.messages[carrier].tokens
    assert editable_tokens(s.ctx()) == expected


def test_tokens_to_remove_is_the_larger_of_target_and_budget():
    s = budget_reads(3)
    ctx = s.ctx()
    editable, prefix = editable_tokens(ctx), ctx.tokens
    P = make_policy("tool-prune").Params
    assert tokens_to_remove(ctx, P()) == 0
    assert tokens_to_remove(ctx, P(target=0.3)) == -(-3 * editable // 10)
    assert tokens_to_remove(ctx, P(budget=prefix - 100)) == 100
    assert tokens_to_remove(ctx, P(budget=prefix + 100)) == 0
    assert tokens_to_remove(ctx, P(target=0.3, budget=prefix - 1)) == -(-3 * editable // 10)
    assert tokens_to_remove(ctx, P(target=0.01, budget=prefix - 500)) == 500
    # 0.3 × 1000 is 300.00000000000006 in floating point: 300 tokens, not 301
    assert Need(0, 1000, 1000, 0.3).by_target == 300


def test_spend_takes_candidates_in_order_until_the_need_is_met():
    a, b, c = (Edit(f"function:t:{i}", "prune") for i in (1, 2, 3))
    got = spend([(a, 10), (b, 0), (c, 30)], 25, planned=5)
    assert (got.edits, got.planned, got.met, got.reason) == ((a, c), 45, True, None)
    need = Need(100, 1000, 400, target=0.25)
    short = spend(iter([(a, 10), (b, 20)]), need)
    assert short.edits == (a, b) and short.planned == 30 and not short.met
    assert short.reason == (
        "target 0.25 of 400 editable tokens needs 100; only 30 removable: every remaining "
        "object is protected or kept by the policy's rules"
    )
    # met by the rule alone: no candidate is read
    assert spend(iter(()), 10, planned=10).met
    by_budget = Need(200, 1200, 800, budget=1000)
    assert asdict(budget_of(by_budget, 150)) == {
        "need": 200,
        "planned": 150,
        "met": False,
        "reason": "budget 1,000 for a 1,200-token prefix needs 200; only 150 removable: every "
        "remaining object is protected or kept by the policy's rules",
    }


@pytest.mark.parametrize("name", SIX)
@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("target=1.5", "target must be in \\[0, 1\\]; got 1.5"),
        ("target=-0.1", "target must be in \\[0, 1\\]; got -0.1"),
        ("target=nan", "target must be in \\[0, 1\\]; got nan"),
        ("budget=-1", "budget must be >= 0; got -1"),
    ],
)
def test_out_of_range_values_are_refused_when_parsing(name, value, message):
    with pytest.raises(ValueError, match=f"^policy {re.escape(name)}: {message}"):
        make_policy(f"{name}:{value}")


@pytest.mark.parametrize("name", SIX)
def test_every_heuristic_policy_has_the_budget_fields_documented_and_defaulted(name):
    params = make_policy(name).params
    assert isinstance(params, BudgetParams)
    assert (params.target, params.budget) == (0.0, 0)
    fields = {f.name for f in dataclasses.fields(params)}
    assert {"target", "budget"} <= fields
    assert make_policy(f"{name}:target=0.25,budget=5000").label == (
        f"{name}:target=0.25,budget=5000"
    )
    parsed = parse_params(type(params), {"target": "0.4", "budget": "12_000"})
    assert (parsed.target, parsed.budget) == (0.4, 12_000)
    meaning = {info.name: info for info in describe_params(type(params))}
    assert meaning["target"].help.startswith("remove at least this share of the editable tokens")
    assert meaning["target"].range == "[0, 1]"
    assert meaning["budget"].help.startswith("the view must fit in this many tokens")
    assert meaning["budget"].range == ">= 0"
    assert "Budget (``target``/``budget``" in (make_policy(name).__doc__ or "")


@pytest.mark.parametrize("name", SIX)
def test_defaults_are_unchanged_and_record_no_budget(name):
    s = budget_reads(6)
    spec = ACTIVE[name]
    default = s.replay(spec)
    zero = s.replay(with_params(spec, "target=0,budget=0"))
    assert zero.plan == default.plan
    assert shape(zero.view.messages) == shape(default.view.messages)
    assert "budget" not in default.plan.meta


# --- prune-summarise ------------------------------------------------------------------------


def test_prune_summarise_shrinks_its_window_oldest_pair_first_until_the_need_is_met():
    """keep=2 of six reads: the rule evicts pairs 1–4 into one summary; a need beyond what that
    removes evicts pair 5 too (the most recent stays), and one no eviction can meet evicts all
    but the latest and says so."""
    s = budget_reads(6)
    rule = s.replay("prune-summarise:keep=2")
    assert set(edited(rule)) == bash(1, 2, 3, 4) and "budget" not in rule.plan.meta
    met = s.replay(f"prune-summarise:keep=2,target={target_for(s, removed(rule) + 200)}")
    assert set(edited(met)) == bash(1, 2, 3, 4, 5)
    assert edited(met)["function:bash:1"] == "fold"  # the summary's host, where pair 1 was
    assert met.plan.budget.met and removed(met) >= removed(rule) + 200
    short = s.replay("prune-summarise:keep=2,target=1")
    assert set(edited(short)) == bash(1, 2, 3, 4, 5, 6)
    budget = asdict(short.plan.budget)
    assert not budget["met"] and budget["reason"].endswith(
        "every tool pair is summarised; the latest user message's pairs stay"
    )


# --- tool-prune -----------------------------------------------------------------------------


def test_tool_prune_shrinks_its_window_oldest_first_only_as_far_as_needed():
    s = budget_reads(6)
    saving = [count(b) - count(CLEARED) for b in results(s)]
    rule = sum(saving[:3])  # keep=3: results 1-3 are cleared by the rule itself
    # a need the rule meets: exactly the rule's edits
    out = s.replay(f"tool-prune:target={target_for(s, rule - 50)}")
    assert set(edited(out)) == bash(1, 2, 3)
    assert asdict(out.plan.budget) == {
        "need": rule - 50,
        "planned": rule,
        "met": True,
        "reason": None,
    }
    # a need halfway into the fifth result: results 4 and 5 go, the most recent stays
    need = rule + saving[3] + saving[4] // 2
    out = s.replay(f"tool-prune:target={target_for(s, need)}")
    assert set(edited(out)) == bash(1, 2, 3, 4, 5)
    assert [e.reason for e in out.plan.edits][3:] == ["budget", "budget"]
    assert removed(out) >= need
    assert asdict(out.plan.budget) == {
        "need": need,
        "planned": rule + saving[3] + saving[4],
        "met": True,
        "reason": None,
    }
    m = s.messages
    cleared = {3, 5, 7, 9, 11}
    expected = [with_result(x, CLEARED) if i in cleared else x for i, x in enumerate(m)]
    assert shape(out.view.messages) == shape(expected)


def test_tool_prune_budget_fits_the_view_and_unmet_needs_say_why():
    s = budget_reads(6)
    saving = [count(b) - count(CLEARED) for b in results(s)]
    budget = s.total() - sum(saving[:4]) - 1
    out = s.replay(f"tool-prune:budget={budget}")
    assert out.view.tokens <= budget
    assert set(edited(out)) == bash(1, 2, 3, 4, 5)
    full = s.replay("tool-prune:target=1")
    assert set(edited(full)) == bash(1, 2, 3, 4, 5, 6)
    record = asdict(full.plan.budget)
    assert record["met"] is False and record["planned"] == sum(saving)
    assert record["reason"].startswith(
        f"target 1.00 of {editable_tokens(s.ctx()):,} editable tokens needs "
    )
    assert (
        f"only {sum(saving):,} removable: every clearable tool result is cleared"
        in (record["reason"])
    )
    # exclusions stay excluded whatever the need
    only_some = s.replay("tool-prune:target=1,exclude_tools=bash")
    assert only_some.plan.edits == () and only_some.plan.budget.met is False


def test_tool_prune_triggers_and_minimums_still_gate_the_edit():
    s = budget_reads(6)
    idle = s.replay(f"tool-prune:target=0.5,trigger_tokens={s.total() + 1}")
    assert idle.plan.edits == ()
    assert idle.plan.budget.met is False
    assert "no edit: the prefix holds" in idle.plan.budget.reason
    gated = s.replay("tool-prune:target=0.1,clear_at_least=1000000")
    assert gated.plan.edits == ()
    assert gated.plan.budget.planned == 0
    assert "clear_at_least=1,000,000" in gated.plan.budget.reason


# --- clear-tool-uses ------------------------------------------------------------------------


def test_clear_tool_uses_shrinks_its_kept_uses_oldest_first():
    s = budget_reads(6)
    saving = [count(b) - count(ANTHROPIC) for b in results(s)]
    need = sum(saving[:3]) + saving[3] // 2
    out = s.replay(f"clear-tool-uses:trigger=0,target={target_for(s, need)}")
    assert set(edited(out)) == bash(1, 2, 3, 4)
    assert removed(out) >= need and out.plan.budget.met is True
    assert out.plan.meta["cleared_tool_uses"] == 4
    m = s.messages
    expected = [with_result(x, ANTHROPIC) if i in {3, 5, 7, 9} else x for i, x in enumerate(m)]
    assert shape(out.view.messages) == shape(expected)
    budget = s.total() - sum(saving[:5]) - 1
    fits = s.replay(f"clear-tool-uses:trigger=0,budget={budget}")
    assert fits.view.tokens <= budget and set(edited(fits)) == bash(1, 2, 3, 4, 5, 6)
    short = s.replay("clear-tool-uses:trigger=0,target=1")
    assert short.plan.budget.met is False
    assert "only" in short.plan.budget.reason
    idle = s.replay("clear-tool-uses:trigger=100000,target=0.5")  # the API's trigger
    assert idle.plan.edits == ()
    assert "below trigger=100,000" in idle.plan.budget.reason


# --- observation-masking --------------------------------------------------------------------


def test_observation_masking_masks_into_its_window_but_keeps_the_first():
    s = budget_reads(6)
    bodies = results(s)
    saving = [count(b) - count(masked_observation(b)) for b in bodies]
    rule = sum(saving[1:4])  # keep=2 and the first kept: results 2-4 masked by the rule
    need = rule + saving[4] // 2
    out = s.replay(f"observation-masking:keep=2,target={target_for(s, need)}")
    assert set(edited(out)) == bash(2, 3, 4, 5)
    assert removed(out) >= need and out.plan.budget.met is True
    m = s.messages
    expected = [
        with_result(x, masked_observation(bodies[(i - 3) // 2])) if i in {5, 7, 9, 11} else x
        for i, x in enumerate(m)
    ]
    assert shape(out.view.messages) == shape(expected)
    budget = s.total() - rule - saving[4] - 1
    fits = s.replay(f"observation-masking:keep=2,budget={budget}")
    assert fits.view.tokens <= budget and set(edited(fits)) == bash(2, 3, 4, 5, 6)
    short = s.replay("observation-masking:keep=2,target=1")
    assert set(edited(short)) == bash(2, 3, 4, 5, 6)
    record = asdict(short.plan.budget)
    assert record["met"] is False
    assert "every observation is masked but the first (keep_first)" in record["reason"]
    all_of_them = s.replay("observation-masking:keep=2,keep_first=false,target=1")
    assert set(edited(all_of_them)) == bash(1, 2, 3, 4, 5, 6)


# --- hybrid ---------------------------------------------------------------------------------


def test_hybrid_masks_its_window_then_summarises_the_oldest():
    s = budget_reads(6)
    ctx = s.ctx()
    bodies = results(s)
    mask = [count(b) - count(masked_observation(b)) for b in bodies]
    fold = [
        count(b) - count(summary_line(ctx, f, 80, 160))
        for b, f in zip(bodies, ctx.index.functions(), strict=True)
    ]
    rule = sum(mask[1:4])  # window=2 and the first kept: results 2-4 masked
    # within the masks: results 5 then 6 masked, nothing summarised
    out = s.replay(f"hybrid:window=2,target={target_for(s, rule + mask[4] + 1)}")
    assert edited(out) == {oid: "prune" for oid in bash(2, 3, 4, 5, 6)}
    assert out.plan.meta["summarised"] == 0
    # beyond every mask the oldest are summarised: the first (never masked) first of all; a
    # summary line is longer than a mask's placeholder, so a masked result is not summarised
    masks = sum(mask[1:])
    assert all(f < m for f, m in zip(fold[1:], mask[1:], strict=True))
    need = masks + fold[0] // 2
    out = s.replay(f"hybrid:window=2,target={target_for(s, need)}")
    expected_edits = {"function:bash:1": "fold", **{o: "prune" for o in bash(2, 3, 4, 5, 6)}}
    assert edited(out) == expected_edits
    assert all(e.route is False for e in out.plan.edits if e.action == "fold")
    assert out.plan.meta["summarised"] == 1
    assert removed(out) >= need
    assert asdict(out.plan.budget) == {
        "need": need,
        "planned": masks + fold[0],
        "met": True,
        "reason": None,
    }
    m = s.messages
    note = summary_line(ctx, ctx.index["function:bash:1"], 80, 160)
    new = {3: note, **{i: masked_observation(bodies[(i - 3) // 2]) for i in (5, 7, 9, 11, 13)}}
    expected = [with_result(x, new[i]) if i in new else x for i, x in enumerate(m)]
    assert shape(out.view.messages) == shape(expected)
    budget = s.total() - masks - 1
    fits = s.replay(f"hybrid:window=2,budget={budget}")
    assert fits.view.tokens <= budget
    assert edited(fits) == expected_edits
    short = s.replay("hybrid:window=2,target=1")
    assert edited(short) == expected_edits
    assert short.plan.budget.met is False
    assert short.plan.budget.planned == masks + fold[0]
    assert "every tool use is summarised" in short.plan.budget.reason


# --- tool-mask+prune ------------------------------------------------------------------------


def test_tool_mask_prune_masks_then_clears_oldest_until_the_need_is_met():
    s = budget_reads(6)
    bodies = results(s)
    masked = [mask_text(b, len(b) // 10, len(b) // 10, count) for b in bodies]
    mask = [count(b) - count(t) for b, t in zip(bodies, masked, strict=True)]
    clear = [count(b) - count(CLEARED) for b in bodies]
    rule = sum(mask[:3])  # keep=3: results 1-3 masked (all are longer than min_chars=300)
    assert all(len(b) > 300 for b in bodies)
    # the need replaces target_ratio: a small target masks only (default would also clear)
    small = s.replay(f"tool-mask+prune:min_chars=300,target={target_for(s, rule - 10)}")
    assert edited(small) == {oid: "mask" for oid in bash(1, 2, 3)}
    default = s.replay("tool-mask+prune:min_chars=300")
    assert "prune" in edited(default).values()
    # clearing the oldest frees what a clear adds to its mask
    need = rule + (clear[0] - mask[0]) + (clear[1] - mask[1]) // 2
    out = s.replay(f"tool-mask+prune:min_chars=300,target={target_for(s, need)}")
    assert edited(out) == {
        "function:bash:1": "prune",
        "function:bash:2": "prune",
        "function:bash:3": "mask",
    }
    assert removed(out) >= need and out.plan.budget.met is True
    m = s.messages
    expected = [*m[:3], with_result(m[3], CLEARED), m[4], with_result(m[5], CLEARED)]
    expected += [m[6], with_result(m[7], masked[2]), *m[8:]]
    assert shape(out.view.messages) == shape(expected)
    # past the window: its results are cleared oldest first
    need = sum(clear[:3]) + clear[3] // 2
    into = s.replay(f"tool-mask+prune:min_chars=300,target={target_for(s, need)}")
    assert edited(into) == {oid: "prune" for oid in bash(1, 2, 3, 4)}
    budget = s.total() - sum(clear[:5]) - 1
    fits = s.replay(f"tool-mask+prune:min_chars=300,budget={budget}")
    assert fits.view.tokens <= budget
    assert edited(fits) == {oid: "prune" for oid in bash(1, 2, 3, 4, 5, 6)}
    short = s.replay("tool-mask+prune:min_chars=300,target=1")
    assert short.plan.budget.met is False
    assert "only" in short.plan.budget.reason


# --- oldest-turn ----------------------------------------------------------------------------


def turns() -> Session:
    s = Session()
    s.system("You are a research agent.")
    s.user("Project brief: compare the three vendors.")
    s.step("search", {"q": "vendor list"}, "acme, globex, initech")
    for k in ("second", "third"):
        s.user(f"{k}: read the {k} vendor's pricing page.")
        s.step("fetch", {"url": f"https://example.com/{k}"}, prose(200, k))
        s.say(f"Done with the {k} vendor.")
    s.user("Now write the comparison.")
    for i in range(4):
        s.step("notes", {"op": "read", "n": i}, prose(40, f"note{i}"))
    return s


def test_oldest_turn_target_replaces_target_ratio_and_shrinks_the_recent_window():
    s = turns()
    ctx = s.ctx()
    turn = {t.id: t.tokens for t in ctx.index.turns()}
    steps = {f.id: f.tokens for f in ctx.index.functions() if f.id.startswith("function:notes")}
    t2, t3 = turn["conversation:user:2"], turn["conversation:user:3"]
    # the default ratio (half the prefix) takes both old turns; a small target only the oldest
    assert set(edited(s.replay("oldest-turn"))) >= {"conversation:user:2", "conversation:user:3"}
    out = s.replay(f"oldest-turn:target={target_for(s, t2 - 10)}")
    assert edited(out) == {"conversation:user:2": "prune"}
    assert removed(out) >= t2 - 10
    # then the latest turn's oldest step (outside keep_last_steps=3), then the recent ones
    n4, n5, n6 = "function:notes:4", "function:notes:5", "function:notes:6"
    need = t2 + t3 + steps[n4] + steps[n5] // 2
    out = s.replay(f"oldest-turn:target={target_for(s, need)}")
    assert list(edited(out)) == ["conversation:user:2", "conversation:user:3", n4, n5]
    assert [e.reason for e in out.plan.edits] == [
        "oldest_turn",
        "oldest_turn",
        "oldest_step_of_latest_turn",
        "budget",
    ]
    assert removed(out) >= need and out.plan.budget.met is True
    m = s.messages
    kept = [0, 1, 2, 3, 12, *range(17, len(m))]
    assert shape(out.view.messages) == shape([m[i] for i in kept])
    budget = s.total() - t2 - t3 - steps[n4] - steps[n5] - 1
    fits = s.replay(f"oldest-turn:budget={budget}")
    assert fits.view.tokens <= budget
    assert list(edited(fits)) == ["conversation:user:2", "conversation:user:3", n4, n5, n6]
    short = s.replay("oldest-turn:target=1")
    record = asdict(short.plan.budget)
    assert record["met"] is False
    assert "the first and the latest user turns" in record["reason"]


def test_oldest_turn_fold_mode_counts_the_pointer_it_leaves():
    s = turns()
    ctx = s.ctx()
    t2, t3 = (ctx.index[f"conversation:user:{k}"] for k in (2, 3))

    def saving(t):
        return t.tokens - count(fold_pointer(t, make_archive(t, ctx.messages)))

    # removing turn 2 would meet the need; folding it leaves a pointer, so turn 3 folds too
    assert saving(t2) < t2.tokens - 10
    out = s.replay(f"oldest-turn:mode=fold,target={target_for(s, t2.tokens - 10)}")
    assert edited(out) == {t2.id: "fold", t3.id: "fold"}
    assert out.plan.budget.planned == saving(t2) + saving(t3)


# --- every policy, generated sessions -------------------------------------------------------


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(session_spec, st.sampled_from(["target=0.2", "target=0.6", "target=1", "budget=300"]))
def test_every_policy_meets_what_it_records_on_generated_sessions(spec, knob):
    messages = build(spec)
    ctx = context_for(messages, count)
    for name in SIX:
        policy = make_policy(with_params(ACTIVE[name], knob))
        out = replay_case(policy, ctx)
        record = asdict(out.plan.budget)
        need = need_for(ctx, policy.params)
        assert record["need"] == need.tokens, name
        assert record["met"] == (record["planned"] >= record["need"]), name
        assert (record["reason"] is None) == record["met"], name
        assert view_problems(out.view.messages) == [], name
        assert out.rehearsal.dropped == (), name
        if record["met"] and out.committed:
            assert removed(out) >= record["need"], name
