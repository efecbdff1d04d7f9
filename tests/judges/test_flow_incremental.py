"""What the flow judge carries from one case of a session to the next (the prefix's sources and
each token's latest holder, extended when a prefix only adds messages; the always-in-view text,
by the messages that hold it; the weighed tokens of a fact) gives exactly what a judge that
builds them afresh for each case gives, whatever order the cases come in (issue 15)."""

from __future__ import annotations

import json
from dataclasses import replace

from ctxreplay.judges.base import JudgeInput
from ctxreplay.judges.flow import FlowJudge
from ctxreplay.replay.plan import Edit

from builders import call, counted, result, say, system, user, view_input

RECORD = {"line_id": "LINE-1042", "status": "Suspended", "balance": "$1,339.00"}
CODE = "\n".join(f"def step_{i}(x):\n    return x * {i} + offset_{i}" for i in range(1, 6))

MESSAGES = tuple(
    counted(
        [
            system("You are a support and coding agent."),
            user("Never restart a line without asking me first. The ticket is T-88412."),
            call("c1", "get_line", {"id": RECORD["line_id"]}),
            result("c1", json.dumps(RECORD)),
            call("c2", "read_file", {"path": "steps.py"}),
            result("c2", CODE),
            say(f"Line {RECORD['line_id']} is {RECORD['status']}, balance 1339."),
            user("Go on, and quote T-88412 in the note."),
            call("c3", "edit_file", {"path": "steps.py", "new_str": CODE.split("\n", 2)[2]}),
            result("c3", "error: cannot open steps.py (permission denied)"),
            call("c4", "resume_line", {"line_id": RECORD["line_id"]}),
            result("c4", "status: Active\nbalance: 1339"),
            say("I will not restart the line without asking you first; ticket T-88412."),
            user("Now check LINE-1042 again."),
            call("c5", "get_line", {"id": RECORD["line_id"]}),
            result("c5", json.dumps({**RECORD, "status": "Active"})),
            say(f"Done: {CODE.splitlines()[1]} and LINE-1042 is Active."),
            # the file read again (18) and copied from (19): a copy the future obtained again
            # itself when cut before 18, and one from a source of the prefix when cut after it
            call("c6", "read_file", {"path": "steps.py"}),
            result("c6", CODE),
            call("c7", "edit_file", {"path": "steps.py", "new_str": CODE.split("\n", 4)[4]}),
            say("Both edits are in."),
        ]
    )
)


def case(cut: int, start: int = 0) -> JudgeInput:
    """The case cut at ``cut``; ``start`` > 0: its prefix begins there (as after a compaction),
    so it holds the same messages at other places. The session's messages are given, as the
    engine gives them (the judge's session statistics are the whole session's)."""
    item = view_input(MESSAGES[start:cut], MESSAGES[cut:], Edit("function:read_file:2", "prune"))
    return replace(item, session_id="s", case_id=f"c-{start}-{cut}", session=MESSAGES)


def as_tuples(judge: FlowJudge, item: JudgeInput) -> list[tuple]:
    return [
        (u.fact, u.source, u.source_object, u.need_seq, u.how, u.evidence) for u in judge.uses(item)
    ]


ORDERS = {
    "growing": [(c, 0) for c in range(2, len(MESSAGES))],
    "shrinking": [(c, 0) for c in range(len(MESSAGES) - 1, 1, -1)],
    "mixed": [(6, 0), (9, 0), (4, 0), (12, 0), (13, 0), (8, 0), (16, 0), (19, 0), (14, 0)],
    "compacted": [(9, 0), (12, 0), (12, 2), (14, 2), (16, 0), (16, 7), (10, 0), (19, 7)],
}


def test_cases_in_a_row_give_what_fresh_judges_give() -> None:
    used = 0
    for name, order in ORDERS.items():
        shared = FlowJudge()
        for cut, start in order:
            item = case(cut, start)
            got = as_tuples(shared, item)
            assert got == as_tuples(FlowJudge(), item), (name, cut, start)
            used += len(got)
    assert used > 50  # the cases use facts: the comparison is not of empty lists


def copies(judge: FlowJudge, item: JudgeInput) -> set[int]:
    """The sources of the code the edit at 19 copies."""
    return {
        u.source
        for u in judge.uses(item)
        if u.how == "copy" and u.need_seq == 19 and "offset_" in u.fact.text
    }


def test_a_copy_obtained_again_before_one_cut_is_used_from_its_source_after_another() -> None:
    """The edit at 19 copies the file read at 18 (and at 5). Cut at 14, the future obtained it
    again at 18 before copying it: no use. Cut at 19, 18 is in the prefix: used from there.
    What a future message shares with what the future obtained is found in the first case that
    holds it and read from there by the later cuts: each reads only its own future's tail."""
    shared = FlowJudge()
    assert copies(shared, case(14)) == copies(FlowJudge(), case(14)) == set()
    assert copies(shared, case(19)) == copies(FlowJudge(), case(19)) == {18}
    assert copies(shared, case(16)) == copies(FlowJudge(), case(16)) == set()


def test_the_sources_are_extended_only_when_the_prefix_only_adds_messages() -> None:
    judge = FlowJudge()
    judge.uses(case(8))
    before = judge.session_index.last.sources
    judge.uses(case(12))  # the same prefix and more after it: extended in place
    assert judge.session_index.last.sources is before
    # every message but the system prompt, the protected turn (7) holding its place unindexed
    assert [i for i, _ in judge.session_index.last.sources] == list(range(1, 12))
    assert list(judge.session_index.last.waiting) == [6]
    assert "quote" not in judge.session_index.last.latest_of  # said only by the protected turn
    latest = judge.session_index.last.latest_of
    fresh = FlowJudge()
    fresh.uses(case(12))
    assert latest == fresh.session_index.last.latest_of
    assert latest["t-88412"] == max(
        pos
        for pos, (_, info) in enumerate(judge.session_index.last.sources)
        if "t-88412" in info.tokens
    )
    judge.uses(case(14))  # 13 is the protected turn now: 7 is a source, put in its place
    assert judge.session_index.last.sources is before and list(
        judge.session_index.last.waiting
    ) == [12]
    fresh = FlowJudge()
    fresh.uses(case(14))
    assert judge.session_index.last.latest_of == fresh.session_index.last.latest_of
    assert judge.session_index.last.latest_gram == fresh.session_index.last.latest_gram
    assert judge.session_index.last.latest_of["quote"] == 6  # put after 11 was, and older
    assert judge.session_index.last.latest_of["t-88412"] == 11  # a later holder is not replaced
    judge.uses(case(12, 2))  # the same messages at other places: built again
    assert judge.session_index.last.sources is not before
    assert judge.session_index.last.latest_of == (
        lambda j: (j.uses(case(12, 2)), j.session_index.last.latest_of)[1]
    )(FlowJudge())


def test_what_is_always_in_view_follows_the_protected_turn() -> None:
    from ctxreplay.judges.flow.index import SessionIndex

    index = SessionIndex()
    first = index.always([MESSAGES[0], MESSAGES[1]])
    again = index.always([MESSAGES[0], MESSAGES[1]])
    later = index.always([MESSAGES[0], MESSAGES[7]])
    assert again is first
    assert first[0] == MESSAGES[0].parts[0].content + "\n" + MESSAGES[1].parts[0].content
    assert "t-88412" in first[1] and "restart" in first[1] and "restart" not in later[1]
    assert first[2] == "".join(first[0].split())


def test_a_session_begun_with_its_inputs_gives_what_fresh_judges_give() -> None:
    """Begun with every input of the session (``begin_session``), the judge keeps of what each
    message reads only the word runs that an agent message of the futures holds, and finds the
    same uses as a judge that keeps them all."""
    for name, order in ORDERS.items():
        items = [case(cut, start) for cut, start in order]
        begun = FlowJudge()
        begun.begin_session(items)
        for item in items:
            assert as_tuples(begun, item) == as_tuples(FlowJudge(), item), (name, item.case_id)
    begun = FlowJudge()
    begun.begin_session([case(14), case(19)])
    assert copies(begun, case(14)) == set() and copies(begun, case(19)) == {18}
    whole = FlowJudge()
    whole.uses(case(19))
    kept, every = begun.session_index.last.latest_gram, whole.session_index.last.latest_gram
    assert kept.keys() <= begun.session_index.copiable and kept == {g: every[g] for g in kept}
    assert 0 < len(kept) < len(every) / 4  # the runs no agent message holds are not kept


def test_an_input_its_session_was_not_begun_with_is_judged_in_full() -> None:
    """Begun with a case whose future ends before the edit at 19, the judge is then asked for
    the case cut at 19: its edit's word runs were not among those kept, so the session's
    messages are read again in full, and the copy is found as a fresh judge finds it."""
    short = replace(case(14), future=MESSAGES[14:17], case_id="short")
    judge = FlowJudge()
    judge.begin_session([short])
    assert as_tuples(judge, short) == as_tuples(FlowJudge(), short)
    assert copies(judge, case(19)) == copies(FlowJudge(), case(19)) == {18}
    index = judge.session_index
    assert index is not None and index.copiable is None  # every word run looked for
