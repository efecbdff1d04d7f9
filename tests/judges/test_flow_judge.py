"""The flow judge on hand-built cases: one test per kind of use it must detect (a status a
decision rests on, a row chosen from a list, an error line acted on, code copied into an edit, a
rule the user stated, an output reasoned from), each with the view that keeps it (no impact) and
the view that removes it (impact), plus the facts and weights it is built on."""

from __future__ import annotations

import json

import pytest

from ctxreplay.judges.base import Verdict, make_judge
from ctxreplay.judges.flow import FlowJudge
from ctxreplay.replay.plan import Edit
from ctxreplay.text.facts import Weights, document_frequency, facts_of, normalise, tokens

from builders import call, counted, result, say, system, user, view_input


def judge_case(messages: list, cut: int, *edits: Edit, judge: FlowJudge | None = None) -> Verdict:
    """Prefix = messages before ``cut``; the view commits ``edits``; the judge sees the rest."""
    msgs = counted(messages)
    return (judge or FlowJudge()).judge(view_input(tuple(msgs[:cut]), tuple(msgs[cut:]), *edits))


def prune(object_id: str) -> Edit:
    return Edit(object_id, "prune")


def lost(v: Verdict) -> list[str]:
    return [loss.anchor for loss in v.losses]


# --- a status or field a decision rests on --------------------------------------------------

LINE = {
    "line_id": "L1002",
    "phone_number": "555-123-2002",
    "status": "Suspended",
    "contract_end_date": "2026-12-31",
}


def status_session() -> list:
    return [
        system("You are a telecom support agent."),
        user("My phone line stopped working."),
        call("c1", "get_details_by_id", {"id": "L1002"}),
        result("c1", json.dumps(LINE)),
        call("c2", "get_bills", {"customer_id": "C1001"}),
        result("c2", json.dumps({"bill_id": "B77", "description": "Charge for line L1002"})),
        say("Your line is suspended for an unpaid bill."),
        user("I have paid it now, please turn it back on."),
        call("c3", "resume_line", {"line_id": "L1002"}),
    ]


def test_status_of_the_record_acted_on_is_a_dependency() -> None:
    kept = judge_case(status_session(), 8)
    assert (kept.label, kept.dependencies, kept.recoverable) == ("no_impact", 4, 0)
    gone = judge_case(status_session(), 8, prune("function:get_details_by_id:1"))
    assert gone.label == "impact"
    # the field of the record that defines line L1002 (not its whole row: a decision on one
    # field does not need the record's others), not the bill that mentions it in passing
    assert "line_id: L1002" in lost(gone)
    assert all('"status":"Suspended"' not in a for a in lost(gone))
    assert all("B77" not in a for a in lost(gone))
    assert {loss.source_object for loss in gone.losses} == {"function:get_details_by_id:1"}
    assert {loss.need_seq for loss in gone.losses} == {8}


def test_status_named_with_its_key_in_prose() -> None:
    messages = [
        system(),
        user("What is on my reservation?"),
        call("c1", "get_reservation", {"id": "R1"}),
        result("c1", json.dumps({"reservation_id": "R1", "cabin": "economy", "insurance": "no"})),
        user("Can I get a refund for the trip?"),
        say("Your reservation has Insurance: no, so the refund is not possible."),
    ]
    assert judge_case(messages, 5).label == "no_impact"
    gone = judge_case(messages, 5, prune("function:get_reservation:1"))
    assert gone.label == "impact"
    assert "insurance: no" in lost(gone)


def test_fields_named_from_two_results_are_each_from_their_own() -> None:
    """One message names a field of each of two results by key and value: each use is the
    field of its own result (what a message names in a source is kept per source)."""
    messages = [
        system(),
        user("Compare my two reservations."),
        call("c1", "get_reservation", {"id": "R1"}),
        result("c1", json.dumps({"reservation_id": "R1", "cabin": "economy"})),
        call("c2", "get_reservation", {"id": "R2"}),
        result("c2", json.dumps({"reservation_id": "R2", "cabin": "business"})),
        user("Which is better?"),
        say("Reservation R1 has cabin: economy, and reservation R2 has cabin: business."),
    ]
    msgs = counted(messages)
    uses = FlowJudge().uses(view_input(tuple(msgs[:7]), tuple(msgs[7:])))
    keyed = {(u.source, u.fact.text) for u in uses if u.how == "key"}
    assert (3, "cabin: economy") in keyed and (5, "cabin: business") in keyed
    assert (3, "cabin: business") not in keyed and (5, "cabin: economy") not in keyed


# --- a row chosen from a list ----------------------------------------------------------------

FLIGHTS = [
    {"flight_number": "HAT136", "origin": "JFK", "destination": "ATL", "price": 1339},
    {"flight_number": "HAT290", "origin": "DEN", "destination": "LAS", "price": 92},
    {"flight_number": "HAT411", "origin": "DEN", "destination": "SEA", "price": 415},
]


def rows_session(reply: str) -> list:
    return [
        system(),
        user("Find me a flight."),
        call("c1", "search_flights", {"date": "2024-05-20"}),
        result("c1", json.dumps(FLIGHTS)),
        say("I found three flights."),
        user("Book the cheapest one to Las Vegas."),
        say(reply),
    ]


def airline_judge() -> FlowJudge:
    """A judge whose corpus weights are those of an airline corpus: airports in most sessions."""
    judge = FlowJudge()
    airports = {"jfk": 15, "atl": 14, "den": 15, "las": 13, "sea": 12}
    judge.use_state({"df": airports, "sessions": 20})
    return judge


def test_the_row_the_future_picks_is_a_dependency_the_others_are_not() -> None:
    reply = "Booking HAT290 from DEN to LAS for $92."
    assert judge_case(rows_session(reply), 6, judge=airline_judge()).label == "no_impact"
    gone = judge_case(
        rows_session(reply), 6, prune("function:search_flights:1"), judge=airline_judge()
    )
    assert gone.label == "impact"
    rows = [a for a in lost(gone) if a.startswith("{")]
    assert rows == [json.dumps(FLIGHTS[1], separators=(",", ":"))]


def test_a_future_that_uses_no_row_loses_nothing() -> None:
    reply = "Could you tell me your date of birth first?"
    gone = judge_case(
        rows_session(reply), 6, prune("function:search_flights:1"), judge=airline_judge()
    )
    assert gone.label == "no_impact"


def test_rows_the_future_compares_are_all_dependencies() -> None:
    reply = "HAT290 costs $92 and HAT411 costs $415; HAT290 is cheaper."
    gone = judge_case(
        rows_session(reply), 6, prune("function:search_flights:1"), judge=airline_judge()
    )
    rows = sorted(a for a in lost(gone) if a.startswith("{"))
    assert rows == sorted(json.dumps(f, separators=(",", ":")) for f in FLIGHTS[1:])


# --- an error line the next steps act on ----------------------------------------------------


def error_session(later: list) -> list:
    return [
        system(),
        user("Summarise /docs/travel_log_2023.csv for me."),
        call("c1", "execute_bash", {"command": "cat /docs/travel_log_2023.csv"}),
        result("c1", "cat: /docs/travel_log_2023.csv: No such file or directory\n[exit code 1]"),
        call("c2", "execute_bash", {"command": "ls /tmp"}),
        result("c2", "cache\nsession.db"),
        *later,
        call("c3", "execute_bash", {"command": "find / -name travel_log_2023.csv"}),
    ]


def test_an_error_the_future_works_around_is_a_dependency() -> None:
    cut = 6
    assert judge_case(error_session([]), cut).label == "no_impact"
    gone = judge_case(error_session([]), cut, prune("function:execute_bash:1"))
    assert gone.label == "impact"
    assert [loss.category for loss in gone.losses] == ["live_state"]
    assert "No such file or directory" in gone.losses[0].anchor


def test_an_error_a_later_message_superseded_is_not() -> None:
    # the file was found since: the error is no longer what the next step acts on
    later = [
        call("c9", "execute_bash", {"command": "ls /data"}),
        result("c9", "/data/travel_log_2023.csv"),
    ]
    v = judge_case(error_session(later), 8, prune("function:execute_bash:1"))
    assert all("No such file" not in a for a in lost(v))


# --- code that a later edit copies --------------------------------------------------------

CODE = "\n".join(
    [
        "void main(void) {",
        "  ulong local_10;",
        '  seed = _hash("flag{xxxxxxxxxxxxxx}");',
        '  puts("Totally Random Number Generator");',
        "}",
    ]
)


def copy_session() -> list:
    return [
        system(),
        user("Recover the flag."),
        call("c1", "decompile", {"binary": "katy"}),
        result("c1", CODE),
        call("c2", "run", {"command": "./katy"}),
        result("c2", "Press ENTER to continue"),
        user("Keep going."),
        call(
            "c3",
            "create",
            {"path": "solve.py", "text": "target = seed_of('_hash(\"flag{xxxxxxxxxxxxxx}\")')"},
        ),
    ]


def test_code_copied_into_an_edit_is_a_verbatim_dependency() -> None:
    assert judge_case(copy_session(), 7).label == "no_impact"
    gone = judge_case(copy_session(), 7, prune("function:decompile:1"))
    assert gone.label == "impact"
    assert any(loss.category == "verbatim_source" for loss in gone.losses)
    assert any('_hash("flag{xxxxxxxxxxxxxx}")' in a for a in lost(gone))


def test_a_copied_span_is_shown_as_written_and_judged_as_before() -> None:
    """A copied span's anchor is the text as the message wrote it, not its pieces joined by
    spaces (``name : " Project Alpha " , type``, issue 28); what decides (the pieces, their
    probe) is unchanged, so the verdict is the same."""
    card = 'name: "Project Alpha", type: "internal research", owner: "Dana Whitfield"'
    session = [
        system(),
        user("Write the project card."),
        call("c1", "read_file", {"path": "projects.yaml"}),
        result("c1", card + "\n"),
        call("c2", "run", {"command": "ls"}),
        result("c2", "projects.yaml"),
        user("Now write it."),
        call("c3", "create", {"path": "card.md", "text": f"card for {card}"}),
    ]
    assert judge_case(session, 7).label == "no_impact"
    gone = judge_case(session, 7, prune("function:read_file:1"))
    assert gone.label == "impact"
    [copy] = [x for x in gone.losses if x.category == "verbatim_source"]
    assert copy.anchor == card
    assert copy.detail == f"copy of prefix message 3, used by copy: {card}"


# --- a rule the user stated, still in force -------------------------------------------------


def rule_session() -> list:
    return [
        system(),
        user("Please clean up the config. Never touch the production database settings."),
        call("c1", "read_file", {"path": "config.toml"}),
        result("c1", "[db]\nhost = 'prod'\n"),
        say("I read the config."),
        user("Now update the logging section."),
        say("Updating logging only; I will not touch the production database settings."),
    ]


def test_a_rule_the_user_stated_earlier_is_a_contract() -> None:
    assert judge_case(rule_session(), 6).label == "no_impact"
    gone = judge_case(rule_session(), 6, Edit("conversation:user:1", "prune"))
    assert gone.label == "impact"
    contracts = [loss for loss in gone.losses if loss.category == "behavioural_contract"]
    assert contracts and "Never touch the production database settings" in contracts[0].anchor


# --- an output the agent reasons from, and re-obtained information ----------------------------


def output_session(rerun: bool) -> list:
    return [
        system(),
        user("Output of the snippet is 344, but 345 is correct. Please fix the rounding."),
        call("c1", "bash", {"command": "python reproduce.py"}),
        result("c1", "344"),
        call("c2", "edit", {"path": "fields.py", "old": "int(x)", "new": "round(x)"}),
        result("c2", "edited"),
        *(
            [call("c3", "bash", {"command": "python reproduce.py"}), result("c3", "344")]
            if rerun
            else []
        ),
        say("The output has changed from 344 to 345, so the rounding is fixed."),
    ]


def test_an_output_the_future_reasons_from_even_when_the_task_quotes_it() -> None:
    v = judge_case(output_session(False), 6, prune("function:bash:1"))
    assert v.label == "impact"
    assert "344" in lost(v)


def test_information_the_future_fetches_again_before_using_it_is_not_lost() -> None:
    v = judge_case(output_session(True), 6, prune("function:bash:1"))
    # the output was printed again before the future used it; only the command run again
    # verbatim is still a dependency
    assert "344" not in lost(v)
    assert lost(v) == ["python reproduce.py"]


BILLING = (
    "def settle(order_id, amount):\n"
    "    ledger.post(order_id, amount * RATE_2024)\n"
    "    return ledger.total(order_id)"
)


def code_session(shown_again: bool) -> list:
    """The agent reads a file, and later copies a block of it into an edit, once the file
    was printed again (``shown_again``) or not."""
    again = (
        [call("c3", "cat", {"path": "billing.py"}), result("c3", BILLING)] if shown_again else []
    )
    return [
        system(),
        user("Make settle() round the amount before posting it."),
        call("c1", "cat", {"path": "billing.py"}),
        result("c1", BILLING),
        say("I will rewrite the function."),
        *again,
        call(
            "c2",
            "edit",
            {
                "path": "billing.py",
                "old": BILLING,
                "new": BILLING.replace("amount *", "round(amount) *"),
            },
        ),
        result("c2", "edited"),
    ]


def test_a_span_copied_from_a_removed_output_is_lost_unless_obtained_again() -> None:
    def copied_code(v: Verdict) -> list[str]:
        return [x.anchor for x in v.losses if x.category == "verbatim_source" and "(" in x.anchor]

    gone = judge_case(code_session(False), 5, prune("function:cat:1"))
    assert any("ledger.post(order_id" in span for span in copied_code(gone))  # as written
    # printed again before the edit: the copy comes from what the future obtained itself
    # (the path the pruned call passed is still a dependency, as a whole argument given again)
    shown = judge_case(code_session(True), 5, prune("function:cat:1"))
    assert copied_code(shown) == [] and lost(shown) == ["billing.py"]


def test_recoverable_through_a_visible_pointer_is_not_a_loss() -> None:
    v = judge_case(status_session(), 8, Edit("function:get_details_by_id:1", "fold"))
    assert (v.label, v.dependencies, v.recoverable) == ("no_impact", 4, 1)
    hidden = judge_case(
        status_session(), 8, Edit("function:get_details_by_id:1", "fold", route=False)
    )
    assert hidden.label == "impact"
    assert {loss.category for loss in hidden.losses} == {"recovery_routing"}


# --- facts and weights ------------------------------------------------------------------------


def test_values_are_normalised_for_case_money_numbers_and_dates() -> None:
    assert normalise("Total $1,339.00 on May 20, 2024") == "total 1339 on 2024-05-20"
    assert "05-20" in tokens("2024-05-20")
    assert "travel_log.csv" in tokens("cat /docs/travel_log.csv")
    assert set(tokens("PRICE: 92")) == set(tokens('"price": 92.00'))


def test_structured_output_becomes_fields_and_rows() -> None:
    facts = facts_of(json.dumps({"reservation": {"id": "R1", "passengers": [{"name": "Ann"}]}}))
    kinds = sorted((f.kind, f.text) for f in facts)
    assert ("field", "id: R1") in kinds and ("field", "name: Ann") in kinds
    assert ("row", '{"name":"Ann"}') in kinds
    name = next(f for f in facts if f.text == "name: Ann")
    assert name.row is not None and name.row.text == '{"name":"Ann"}'
    lines = facts_of("Status: Suspended\nplain words here")
    assert ("field", ("status",)) in {(f.kind, f.key) for f in lines}


def test_idf_weights_make_boilerplate_count_for_nothing() -> None:
    sessions = [[f"bash-$ ls common words session {i} id X{i}Y"] for i in range(20)]
    df, n = document_frequency(sessions)
    w = Weights(df, n)
    assert n == 20
    assert w("common") == 0.0 and w("bash") == 0.0  # in every session
    assert w("x3y") == 1.0  # one session's own id
    assert w("the") == 0.0  # a stop word whatever the corpus says
    assert Weights({}, 2)("anything") == 1.0  # too few sessions to call anything common


def test_registered_as_the_default_judge() -> None:
    from ctxreplay.judges.base import DEFAULT_JUDGE

    assert DEFAULT_JUDGE == "flow"
    judge = make_judge("flow:threshold=2.0")
    assert isinstance(judge, FlowJudge) and judge.params.threshold == 2.0
    with pytest.raises(Exception, match="flow"):
        make_judge("flow:threshold=abc")
