"""``view_problems``, the oracle for "is this view a valid provider request", against views it must
reject (orphan results, split pairs, second answers, empty messages) and views it must pass; and
the engine, which refuses to write a row for a view the oracle rejects."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from ctxreplay.datasets.cases import cut_corpus
from ctxreplay.datasets.messages import Message, Part
from ctxreplay.engines.replay import run_replay
from ctxreplay.errors import CtxreplayError
from ctxreplay.policies.base import Policy, policies
from ctxreplay.policies.budget import Need
from ctxreplay.replay.context import PrefixContext
from ctxreplay.replay.plan import Edit, Plan
from ctxreplay.replay.view import InvalidViewError, view_problems

from builders import call, coding_session, make_corpus, result, say, system, user


def without(messages: list[Message], *drop: int) -> list[Message]:
    return [m for i, m in enumerate(messages) if i not in drop]


def asked(*parts: Part) -> Message:
    return Message("assistant", parts)


# --- views that are valid -------------------------------------------------------------------


def test_a_recorded_session_and_no_messages_are_valid() -> None:
    assert view_problems([]) == []
    assert view_problems(coding_session()) == []


def test_parallel_calls_answered_by_one_tool_message_each_are_valid() -> None:
    messages = [
        system(),
        user("Read both files."),
        asked(Part.call("a", "read", {"p": 1}), Part.call("b", "read", {"p": 2})),
        result("b", "second"),  # answers may come in any order
        result("a", "first"),
        say("Both read."),
    ]
    assert view_problems(messages) == []


def test_results_in_a_user_message_with_text_are_valid() -> None:
    """Anthropic keeps tool results in the next user message, beside the user's words."""
    messages = [
        user("Look it up."),
        call("t1", "lookup", {"q": "x"}),
        Message("user", (Part.response("t1", "found"), Part.text("Thanks, and now?"))),
        say("Done."),
    ]
    assert view_problems(messages) == []


def test_an_empty_result_body_and_reasoning_beside_text_are_valid() -> None:
    messages = [
        user("Clear the cache."),
        call("c1", "clear_cache", {}),
        result("c1", ""),  # a tool that printed nothing: providers accept an empty result
        Message("assistant", (Part("reasoning", content="it worked"), Part.text("Cleared."))),
    ]
    assert view_problems(messages) == []


# --- orphan results -------------------------------------------------------------------------


def test_a_result_whose_call_is_not_in_the_view_is_an_orphan() -> None:
    messages = [system(), user("Go."), result("c9", "a result nobody asked for")]
    assert view_problems(messages) == ["message 2: result for call c9 that was not made"]


def test_removing_a_call_but_keeping_its_result_leaves_an_orphan() -> None:
    session = coding_session()  # message 4 calls c2, message 5 answers it
    assert view_problems(without(session, 4)) == ["message 4: result for call c2 that was not made"]


# --- split pairs ----------------------------------------------------------------------------


def test_a_call_whose_result_was_removed_is_split_before_the_next_request() -> None:
    session = coding_session()  # message 5 answers c2; message 6 is the agent's next request
    assert view_problems(without(session, 5)) == [
        "message 5: calls ['c2'] have no result before this assistant message"
    ]


def test_a_call_whose_result_was_removed_at_the_end_of_the_view_is_split() -> None:
    session = coding_session()  # the prefix ends with c4's result
    assert view_problems(session[:-1]) == ["calls ['c4'] have no result"]


def test_one_of_two_parallel_results_removed_splits_that_call() -> None:
    messages = [
        user("Read both."),
        asked(Part.call("a", "read", {"p": 1}), Part.call("b", "read", {"p": 2})),
        result("a", "first"),
        say("Only one came back."),
    ]
    assert view_problems(messages) == [
        "message 3: calls ['b'] have no result before this assistant message"
    ]


def test_a_user_turn_between_a_call_and_its_result_splits_the_pair() -> None:
    """Providers want the result right after its call: a user message in between is rejected,
    and the late result is reported too (as split, not as a call that was never made)."""
    messages = [
        user("Look it up."),
        call("c1", "lookup", {"q": "x"}),
        user("Hurry up."),
        result("c1", "found"),
        say("Found."),
    ]
    assert view_problems(messages) == [
        "message 2: calls ['c1'] have no result before this user message",
        "message 3: result for call c1 is split from its call",
    ]


# --- duplicate answers and ids --------------------------------------------------------------


def test_two_results_for_one_call_are_a_duplicate_answer() -> None:
    messages = [
        user("Look it up."),
        call("c1", "lookup", {"q": "x"}),
        result("c1", "found"),
        result("c1", "found again"),
        say("Found."),
    ]
    assert view_problems(messages) == ["message 3: second result for call c1"]


def test_two_results_for_one_call_in_one_message_are_a_duplicate_answer() -> None:
    messages = [
        call("c1", "lookup", {"q": "x"}),
        Message("user", (Part.response("c1", "found"), Part.response("c1", "found"))),
    ]
    assert view_problems(messages) == ["message 1: second result for call c1"]


def test_a_call_id_used_twice_is_reported() -> None:
    messages = [
        call("c1", "lookup", {"q": "x"}),
        result("c1", "found"),
        call("c1", "lookup", {"q": "y"}),
        result("c1", "found"),
    ]
    assert view_problems(messages) == [
        "message 2: call id c1 repeated",
        "message 3: second result for call c1",
    ]


# --- empty messages -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "parts",
    [
        (),
        (Part.text(""),),
        (Part.text("  \n"),),
        (Part("reasoning", content="thinking only"),),
        (Part("reasoning", content="thinking"), Part.text("")),
    ],
    ids=["no-parts", "empty-text", "blank-text", "reasoning-only", "reasoning-and-empty-text"],
)
@pytest.mark.parametrize("role", ["user", "assistant"])
def test_a_message_with_nothing_to_send_is_empty(role: str, parts: tuple[Part, ...]) -> None:
    messages = [system(), user("Hello."), Message(role, parts), user("Still there?")]
    assert view_problems(messages) == ["message 2 is empty"]


def test_a_tool_message_without_a_result_is_reported() -> None:
    messages = [user("Go."), Message("tool", (Part.text("stray output"),)), say("Done.")]
    assert view_problems(messages) == ["message 1: tool message carries no result"]


def test_every_problem_of_a_view_is_listed_in_order() -> None:
    messages = [
        Message("system", ()),
        result("x", "orphan"),
        call("c1", "lookup", {}),
        say("No result came."),
    ]
    assert view_problems(messages) == [
        "message 0 is empty",
        "message 1: result for call x that was not made",
        "message 3: calls ['c1'] have no result before this assistant message",
    ]


# --- the engine refuses an invalid view -----------------------------------------------------


class EmptyFold(Policy):
    """Deliberately broken: folds the first user turn with no recovery route and no note, which
    commit turns into a user message with empty text."""

    name = "test-empty-fold"

    def propose(self, ctx: PrefixContext, need: Need) -> Plan:
        return Plan.of(Edit("conversation:user:1", "fold", route=False))


@pytest.fixture
def empty_fold(monkeypatch: pytest.MonkeyPatch) -> str:
    policies.names()  # load the built-ins first, so the test policy is only added
    monkeypatch.setitem(policies._items, EmptyFold.name, EmptyFold)
    return EmptyFold.name


@pytest.fixture
def two_sessions(tmp_path: Path) -> tuple[Path, Path]:
    corpus = make_corpus(tmp_path / "corpus", {"a": coding_session(), "b": coding_session()})
    return corpus.path, cut_corpus(corpus, tmp_path / "cases.parquet", triggers=["user-turns"])[1]


def test_the_invalid_view_error_names_the_policy_the_case_and_the_problems() -> None:
    error = InvalidViewError(
        "p:keep=1", "s@8", ["message 1 is empty", "calls ['c'] have no result"]
    )
    assert isinstance(error, CtxreplayError)
    assert str(error) == (
        "policy p:keep=1 made an invalid view of case s@8: "
        "message 1 is empty; calls ['c'] have no result"
    )
    again = pickle.loads(pickle.dumps(error))  # raised in worker processes
    assert (type(again), str(again), again.problems) == (
        InvalidViewError,
        str(error),
        error.problems,
    )


@pytest.mark.parametrize("workers", [1, 2])
def test_a_policy_that_makes_an_invalid_view_fails_the_run_without_a_row(
    empty_fold: str, two_sessions: tuple[Path, Path], tmp_path: Path, workers: int
) -> None:
    corpus, cases = two_sessions
    out = tmp_path / "run"
    with pytest.raises(InvalidViewError) as raised:
        run_replay(
            corpus,
            cases,
            ["noop", empty_fold],
            out,
            workers=workers,
            chunk_size=1,
            progress=False,
        )
    error = raised.value
    assert error.policy == empty_fold
    assert error.case_id in {"s-a@8", "s-b@8"}  # one case per session: the second user turn
    assert error.problems == ("message 1 is empty",)
    assert str(error) == (
        f"policy test-empty-fold made an invalid view of case {error.case_id}: message 1 is empty"
    )
    assert list(out.rglob("*.parquet")) == []  # no figures, decisions or views of any policy


def test_the_same_run_with_valid_policies_writes_its_rows(
    two_sessions: tuple[Path, Path], tmp_path: Path
) -> None:
    corpus, cases = two_sessions
    summary = run_replay(corpus, cases, ["noop", "oldest-turn"], tmp_path / "run", progress=False)
    assert [(p.label, p.cases) for p in summary.policies] == [("noop", 2), ("oldest-turn", 2)]
