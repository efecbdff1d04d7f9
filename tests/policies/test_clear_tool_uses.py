import pytest

from ctxreplay.policies.base import make_policy
from ctxreplay.policies.clear_tool_uses import PLACEHOLDER, ClearToolUses

from sessions import Session, count, prose, shape, with_arguments, with_result


def four_reads() -> tuple[Session, list[str]]:
    s = Session()
    s.system("You are a coding agent.")
    s.user("Look at the four modules and tell me which one parses dates.")
    ids = [
        s.step("read_file", {"path": f"src/mod{i}.py"}, prose(30, f"mod{i}"), text=f"Reading {i}.")
        for i in range(4)
    ]
    return s, ids


def test_defaults_are_anthropics_but_the_trigger():
    # the API's trigger is 100,000 input tokens; the registered default acts at every request
    # point (replayed prefixes are mostly shorter), trigger=100000 gives the API's behaviour
    p = ClearToolUses.Params()
    assert (p.trigger, p.keep, p.clear_at_least, p.exclude_tools, p.clear_tool_inputs) == (
        0,
        3,
        0,
        (),
        False,
    )
    assert PLACEHOLDER == "[cleared]"


def test_keep_one_clears_exactly_the_older_results_and_keeps_the_envelopes():
    s, _ = four_reads()
    out = s.replay("clear-tool-uses:trigger=10,keep=1")
    m = s.messages
    # messages: 0 system, 1 user, then (assistant call, tool result) × 4 at 2..9
    expected = [*m[:3], with_result(m[3], PLACEHOLDER), m[4], with_result(m[5], PLACEHOLDER)]
    expected += [m[6], with_result(m[7], PLACEHOLDER), m[8], m[9]]
    assert shape(out.view.messages) == shape(expected)
    assert out.committed
    assert out.view.actions == {
        "function:read_file:1": "prune",
        "function:read_file:2": "prune",
        "function:read_file:3": "prune",
    }
    freed = sum(count(m[i].parts[0].content) - count(PLACEHOLDER) for i in (3, 5, 7))
    assert out.plan.meta == {"cleared_input_tokens": freed, "cleared_tool_uses": 3}
    assert out.view.tokens == s.total() - freed


def test_trigger_above_the_prefix_does_nothing():
    s, _ = four_reads()
    out = s.replay(f"clear-tool-uses:trigger={s.total() + 1},keep=1")
    assert out.plan.edits == ()
    assert shape(out.view.messages) == shape(s.messages)
    # the API's 100k trigger is far above this small session too
    idle = s.replay("clear-tool-uses:trigger=100000")
    assert idle.plan.edits == ()
    assert idle.plan.no_edit == (f"the prefix holds {s.total():,} tokens, below trigger=100,000")


def test_the_apis_trigger_fires_above_100k_tokens():
    s = Session()
    s.system("agent")
    s.user("read everything")
    for i in range(6):
        s.step("read_file", {"path": f"big{i}.txt"}, prose(1700, f"big{i}"))
    assert s.total() >= 100_000
    out = s.replay("clear-tool-uses:trigger=100000")
    assert [e.object_id for e in out.plan.edits] == [f"function:read_file:{i}" for i in (1, 2, 3)]


def test_clear_at_least_too_high_means_no_edit_at_all():
    s, _ = four_reads()
    freed = sum(count(s.messages[i].parts[0].content) - count(PLACEHOLDER) for i in (3, 5, 7))
    exact = s.replay(f"clear-tool-uses:trigger=0,keep=1,clear_at_least={freed}")
    assert len(exact.plan.edits) == 3
    too_high = s.replay(f"clear-tool-uses:trigger=0,keep=1,clear_at_least={freed + 1}")
    assert too_high.plan.edits == ()
    assert shape(too_high.view.messages) == shape(s.messages)
    assert too_high.pruning_rate == 0.0


def test_exclude_tools_are_never_cleared_but_count_as_recent():
    s = Session()
    s.system("agent")
    s.user("go")
    s.step("read_file", {"path": "a.py"}, prose(20, "a"))
    s.step("search", {"q": "dates"}, prose(20, "hits"))
    s.step("read_file", {"path": "b.py"}, prose(20, "b"))
    s.step("search", {"q": "times"}, prose(20, "hits2"))
    out = s.replay("clear-tool-uses:trigger=0,keep=1,exclude_tools=search")
    # the most recent use is search:4; both reads are older than it and get cleared
    assert [e.object_id for e in out.plan.edits] == ["function:read_file:1", "function:read_file:3"]
    assert [m.parts[0].content for m in out.view.messages if m.role == "tool"] == [
        PLACEHOLDER,
        s.messages[5].parts[0].content,
        PLACEHOLDER,
        s.messages[9].parts[0].content,
    ]


def test_clear_tool_inputs_empties_the_arguments_too():
    s, _ = four_reads()
    out = s.replay("clear-tool-uses:trigger=0,keep=3,clear_tool_inputs=true")
    m = s.messages
    expected = [
        *m[:2],
        with_arguments(m[2], "call_1", "{}"),
        with_result(m[3], PLACEHOLDER),
        *m[4:],
    ]
    assert shape(out.view.messages) == shape(expected)
    assert out.view.messages[2].parts[0].type == "text"  # the assistant's words stay


def test_already_cleared_results_are_not_cleared_again():
    s = Session()
    s.system("agent")
    s.user("go")
    s.step("read_file", {"path": "a"}, PLACEHOLDER)
    s.step("read_file", {"path": "b"}, prose(10))
    s.step("read_file", {"path": "c"}, prose(10, "c"))
    out = s.replay("clear-tool-uses:trigger=0,keep=1")
    assert [e.object_id for e in out.plan.edits] == ["function:read_file:2"]


@pytest.mark.parametrize("bad", ["clear-tool-uses:keep=many", "clear-tool-uses:placeholder=x"])
def test_parameter_surface_is_exact(bad):
    with pytest.raises(ValueError):
        make_policy(bad)
