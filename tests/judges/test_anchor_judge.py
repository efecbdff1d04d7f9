"""The anchor judge on hand-built cases: which dependency, which status, which category."""

from __future__ import annotations

import pytest

from ctxreplay.judges.anchor_judge import AnchorJudge
from ctxreplay.replay.plan import Edit
from ctxreplay.text.anchors import extract

from builders import call, counted, result, say, system, user, view_input

BODY = "\n".join(
    f"{i:3d}  def handler_{i}(request): return route(request, {i})" for i in range(1, 80)
)
SPAN = " 40  def handler_40(request): return route(request, 40)"


def session() -> list:
    return counted(
        [
            system(),
            user("Refund order ORD-88213-KX. Never email the customer before the refund clears."),
            call("c1", "get_order", {"order_id": "ORD-88213-KX"}),
            result(
                "c1",
                '{"order": "ORD-88213-KX", "total": "1,284.50", "tracking": "https://track.example.com/p/ZX81"}',
            ),
            call("c2", "read_file", {"path": "src/refunds/handlers.py"}),
            result("c2", BODY),
            call("c3", "run_tests", {"target": "tests/"}),
            result(
                "c3",
                "FAILED test_refund - ValueError: amount 1,284.50 exceeds cap 1,000.00",
                error=True,
            ),
            call("c4", "read_config", {"name": "limits"}),
            result("c4", "cap = 1000.00"),
            call("c5", "read_config", {"name": "limits"}),
            result("c5", "cap = 2500.00 (raised 10:42)"),
            user("Go ahead."),
            # --- future from here (index 12 is the cut) ---
            call(
                "c6",
                "edit_file",
                {"path": "src/refunds/handlers.py", "old_str": SPAN, "new_str": "x"},
            ),
            result("c6", "ok"),
            say(
                "Refunded 1,284.50 under cap 2500.00; tracking https://track.example.com/p/ZX81. "
                "I will not email the customer before the refund clears."
            ),
        ]
    )


def judge_view(*edits: Edit, fut_from: int = 13) -> tuple:
    msgs = session()
    item = view_input(tuple(msgs[:fut_from]), tuple(msgs[fut_from:]), *edits)
    return AnchorJudge().judge(item), item.index


def test_noop_view_has_no_impact_and_finds_the_dependencies() -> None:
    verdict, _ = judge_view()
    assert verdict.label == "no_impact" and verdict.losses == ()
    # span, amount, cap from the latest config, tracking URL, the constraint; the order id and
    # the path are re-said in the future call itself but come first from the prefix too
    assert verdict.dependencies >= 5


def test_each_loss_gets_its_category() -> None:
    verdict, _ = judge_view(
        Edit("function:get_order:1", "prune"),
        Edit("function:read_file:2", "mask", head=200, tail=200),
        Edit("function:read_config:5", "prune"),
        Edit("function:run_tests:3", "prune"),
    )
    got = {(loss.category, loss.anchor) for loss in verdict.losses}
    assert ("locator_handle", "https://track.example.com/p/ZX81") in got
    assert ("verbatim_source", SPAN.strip()) in got
    assert ("live_state", "2500.00") in got  # only in the latest of two identical reads
    assert verdict.label == "impact"
    # 1,284.50 was in the order result and the error output, both pruned
    assert any(loss.anchor == "1,284.50" for loss in verdict.losses)


def test_removed_user_constraint_is_a_behavioural_contract_loss() -> None:
    verdict, _ = judge_view(Edit("conversation:user:1", "prune"))
    cats = {loss.category for loss in verdict.losses}
    assert "behavioural_contract" in cats
    contract = next(loss for loss in verdict.losses if loss.category == "behavioural_contract")
    assert (
        contract.anchor.startswith("Never email the customer")
        and contract.source_object == "conversation:user:1"
    )


def test_fold_with_visible_pointer_is_recoverable_and_without_route_is_routing_loss() -> None:
    verdict, _ = judge_view(Edit("function:get_order:1", "fold"))
    assert (verdict.label, verdict.dependencies, verdict.recoverable) == ("no_impact", 8, 1)
    verdict, _ = judge_view(
        Edit("function:get_order:1", "fold", note="order looked up", route=False)
    )
    assert {loss.category for loss in verdict.losses} == {"recovery_routing"}


def test_reobtained_anchor_is_not_a_dependency() -> None:
    msgs = session()
    msgs.insert(
        13, result("c6", "https://track.example.com/p/ZX81")
    )  # not valid as a pair; only text matters
    # re-obtained: the future's tool output shows the URL before the agent uses it
    prune = Edit("function:get_order:1", "prune")
    item = view_input(tuple(msgs[:13]), tuple(msgs[13:]), prune, case_id="c")
    verdict = AnchorJudge().judge(item)
    assert (verdict.label, list(verdict.losses)) == ("no_impact", [])  # the URL is not lost


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("see https://a.example.org/x?y=1.", {"url"}),
        ("id ORD-88213-KX and user mia_li_3668", {"id"}),
        ("mail bob.smith@example.com", {"email"}),
        ("file /var/log/app/run-8f2a.log", {"path"}),
        ("commit 3fa2c91e4b", {"hash"}),
        ("total 1,284,331.07 and 412.7 ms", {"number"}),
        ("3 items, 42 rows, in 2024", set()),  # trivial numbers and years
    ],
)
def test_extraction_kinds(text: str, kinds: set[str]) -> None:
    assert {a.kind for a in extract(text)} == kinds


def test_anchors_in_most_sessions_are_boilerplate() -> None:
    from collections import Counter

    from ctxreplay.judges.anchor_judge import anchor_document_frequency, common_anchors

    sessions = [session() for _ in range(5)]  # every session shares the same order id and URL
    df, n = anchor_document_frequency(sessions)
    assert n == 5 and df["ORD-88213-KX"] == 5
    common = common_anchors(df, n, 0.5)
    assert "https://track.example.com/p/ZX81" in common
    assert common_anchors(Counter({"x-1": 3}), 3, 0.5) == frozenset()  # too few sessions to tell
    judge = AnchorJudge()
    judge.use_state(sorted(common))
    msgs = session()
    prune = Edit("function:get_order:1", "prune")
    verdict = judge.judge(view_input(tuple(msgs[:13]), tuple(msgs[13:]), prune, case_id="c"))
    assert (verdict.label, list(verdict.losses)) == ("no_impact", [])  # the URL is not lost
