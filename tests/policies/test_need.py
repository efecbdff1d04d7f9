"""Need prediction from the prefix alone, one test per signal, and the lossless compaction."""

from __future__ import annotations

import json
from dataclasses import asdict

from ctxreplay.policies.budget import spend
from ctxreplay.policies.need import predict, priority
from ctxreplay.replay.compact import compact_json
from ctxreplay.replay.context import PrefixContext
from ctxreplay.replay.objects import build_index
from ctxreplay.replay.plan import Edit, Plan, rehearse
from ctxreplay.replay.view import commit, view_problems

from builders import call, count, counted, result, say, system, user


def context(messages: list) -> PrefixContext:
    msgs = tuple(counted(messages))
    return PrefixContext("c", "s", msgs, build_index(msgs, count), count)


def needs(messages: list) -> dict[str, object]:
    ctx = context(messages)
    return {n.obj.id: n for n in predict(ctx, ctx.index.functions())}


def test_a_result_superseded_by_the_same_call_again_is_stale() -> None:
    n = needs(
        [
            system(),
            user("Check the config."),
            call("c1", "read_config", {"name": "limits"}),
            result("c1", "cap = 1000"),
            call("c2", "read_config", {"name": "limits"}),
            result("c2", "cap = 2500"),
        ]
    )
    assert (n["function:read_config:1"].action, n["function:read_config:1"].score) == ("prune", 0.0)
    assert n["function:read_config:2"].action != "prune"


def test_an_error_a_later_success_superseded_is_stale() -> None:
    n = needs(
        [
            system(),
            user("Run the tests."),
            call("c1", "run_tests", {"target": "tests/a.py"}),
            result("c1", "ERROR: collection failed", error=True),
            call("c2", "run_tests", {"target": "tests/"}),
            result("c2", "12 passed"),
        ]
    )
    assert n["function:run_tests:1"].reason == "failed_attempt"
    assert n["function:run_tests:1"].action == "prune"


def test_a_file_view_a_later_edit_replaced_is_stale() -> None:
    body = "\n".join(f"{i}: line {i}" for i in range(40))
    n = needs(
        [
            system(),
            user("Fix app.py."),
            call("c1", "read_file", {"path": "src/app.py"}),
            result("c1", body),
            call("c2", "edit_file", {"path": "src/app.py", "old_str": "a", "new_str": "b"}),
            result("c2", "edited"),
            call("c3", "read_file", {"path": "src/other.py"}),
            result("c3", body),
        ]
    )
    assert n["function:read_file:1"].action == "prune"
    assert "replaced by function:edit_file:2" in n["function:read_file:1"].reason
    assert n["function:read_file:3"].action != "prune"  # no edit of other.py since


def lookup_session(follow: list) -> list:
    record = {"order_id": "ORD-88213-KX", "status": "shipped", "total": "1284.50"}
    return [
        system(),
        user("Where is my order?"),
        call("c1", "get_order", {"order_id": "ORD-88213-KX"}),
        result("c1", json.dumps(record)),
        *follow,
        call("c9", "ping", {}),
        result("c9", "pong"),
    ]


def test_values_the_agent_restated_lower_the_need_and_live_handles_raise_it() -> None:
    plain = needs(lookup_session([]))["function:get_order:1"]
    restated = needs(lookup_session([say("Order ORD-88213-KX totals 1284.50 and has shipped.")]))[
        "function:get_order:1"
    ]
    live = needs(
        lookup_session([call("c2", "refund", {"order_id": "ORD-88213-KX"}), result("c2", "queued")])
    )["function:get_order:1"]
    assert restated.score < plain.score < live.score
    assert "restated by the agent" in restated.reason
    assert "live handles: ord-88213-kx" in live.reason


def test_recent_results_are_more_needed_than_old_ones() -> None:
    messages = [system(), user("Go.")]
    for i in range(6):
        messages += [call(f"c{i}", "search", {"q": f"term {i}"}), result(f"c{i}", f"hit {i}")]
    ctx = context(messages)
    scores = [n.score for n in predict(ctx, ctx.index.functions())]
    assert scores == sorted(scores)


def ordered(sizes: list[int]) -> list[str]:
    messages = [system(), user("Go.")]
    for i, n in enumerate(sizes):
        messages += [call(f"c{i}", "search", {"q": f"t{i}"}), result(f"c{i}", "word " * n)]
    ctx = context(messages)
    return [e.obj.id.rsplit(":", 1)[1] for e in priority(predict(ctx, ctx.index.functions()))]


def test_size_and_need_order_what_is_spent() -> None:
    assert ordered([100, 100, 100, 100]) == ["1", "2", "3", "4"]  # equal sizes: oldest first
    assert ordered([50, 800, 50, 50]) == ["2", "1", "3", "4"]  # a large body buys more
    messages = [system(), user("Go.")]
    for i in range(3):
        messages += [call(f"c{i}", "search", {"q": f"t{i}"}), result(f"c{i}", "word " * 100)]
    ctx = context(messages)
    order = priority(predict(ctx, ctx.index.functions()))
    spent = spend(((e.obj.id, e.saving) for e in order), order[0].saving)
    assert spent.edits == ("function:search:1",) and spent.met
    spent = spend(((e.obj.id, e.saving) for e in order), 10**6)
    assert len(spent.edits) == 3 and not spent.met and spent.reason


def test_compaction_is_lossless_and_counts_what_it_drops() -> None:
    body = json.dumps(
        {"user_id": "u1", "name": "Ann", "email": None, "tags": [], "meta": {}, "n": 3}, indent=2
    )
    out = compact_json(body)
    assert out == '{"user_id": "u1", "name": "Ann", "n": 3}\n[ctxreplay: 3 empty fields dropped]'
    assert compact_json('{"a": 1}') is None  # already compact: nothing to gain
    assert compact_json("plain text") is None


def test_the_compact_action_rewrites_the_result_in_a_valid_view() -> None:
    record = {"reservation_id": "M20IZO", "cabin": "economy", "note": None}
    flights = [{"flight_number": f"HAT{i:03d}", "date": "2024-05-20"} for i in range(3)]
    body = json.dumps({**record, "flights": flights}, indent=4)
    ctx = context(
        [
            system(),
            user("Show my reservation."),
            call("c1", "get_reservation", {"id": "M20IZO"}),
            result("c1", body),
            user("Thanks."),
        ]
    )
    plan = Plan.of(Edit("function:get_reservation:1", "compact"))
    view = commit(rehearse(plan, ctx.index), ctx.messages, ctx.index, count)
    assert view_problems(view.messages) == []
    texts = [p.content for m in view.messages for p in m.parts if p.type == "tool_call_response"]
    assert texts == [
        '{"reservation_id": "M20IZO", "cabin": "economy", "flights": '
        '[{"flight_number": "HAT000", "date": "2024-05-20"}, '
        '{"flight_number": "HAT001", "date": "2024-05-20"}, '
        '{"flight_number": "HAT002", "date": "2024-05-20"}]}\n[ctxreplay: 1 empty field dropped]'
    ]
    assert view.actions == {"function:get_reservation:1": "compact"}
    assert view.tokens < ctx.tokens
    # compaction applies to tool results only
    bad = rehearse(Plan.of(Edit("conversation:user:1", "compact")), ctx.index)
    assert [d.reason for d in bad.dropped] == ["not_applicable"]


def budget_session() -> list:
    record = json.dumps({"id": "u1", "name": "Ann", "email": None, "notes": ""}, indent=4)
    return [
        system(),
        user("Tidy up the workspace."),
        call("c1", "read_config", {"name": "limits"}),
        result("c1", "cap = 1000"),
        call("c2", "get_user", {"id": "u1"}),
        result("c2", record),
        call("c3", "search", {"q": "old"}),
        result("c3", "alpha " * 600),
        call("c4", "read_config", {"name": "limits"}),
        result("c4", "cap = 2500"),
        call("c5", "search", {"q": "new"}),
        result("c5", "beta " * 300),
        call("c6", "ping", {}),
        result("c6", "pong"),
        user("Continue."),
    ]


def test_self_gc_spends_a_target_by_predicted_need() -> None:
    from ctxreplay.policies.base import make_policy
    from ctxreplay.replay.outcome import replay_case

    ctx = context(budget_session())
    outcome = replay_case(make_policy("self-gc:target=0.3"), ctx)
    edits = {e.object_id: e.action for e in outcome.plan.edits}
    # stale and lossless first, then the large old search; the recent ones stay
    assert edits == {
        "function:read_config:1": "prune",
        "function:get_user:2": "compact",
        "function:search:3": "fold",
    }
    budget = asdict(outcome.plan.budget)
    assert budget["met"] and budget["planned"] >= budget["need"] > 0
    assert outcome.committed and outcome.commit_reason.startswith("budget")
    # a target no result can meet says why
    short = asdict(replay_case(make_policy("self-gc:target=0.95"), ctx).plan.budget)
    assert not short["met"] and "keep_recent" in short["reason"]


def test_agent_forgetting_archives_by_need_when_given_a_target() -> None:
    from ctxreplay.policies.base import make_policy
    from ctxreplay.replay.outcome import replay_case

    ctx = context(budget_session())
    outcome = replay_case(make_policy("agent-forgetting:target=0.3,min_chars=100"), ctx)
    assert [(e.object_id, e.action) for e in outcome.plan.edits] == [("function:search:3", "fold")]
    assert outcome.plan.budget.met
    assert outcome.view.archives and outcome.view.archives[0].handle == "r3"
