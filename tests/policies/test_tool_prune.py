from ctxreplay.datasets.messages import Part
from ctxreplay.policies.base import make_policy
from ctxreplay.replay.plan import Edit, Plan, rehearse

from sessions import Session, count, prose, reads, shape, with_result

CLEARED = "[Old tool result content cleared]"


def test_defaults_follow_opencode_and_anthropic():
    p = make_policy("tool-prune").params
    assert (p.keep, p.protect_tokens, p.placeholder, p.clear_at_least, p.trigger_tokens) == (
        3,
        None,
        CLEARED,
        0,
        0,
    )
    q = make_policy("tool-prune:protect_tokens=40000,clear_at_least=20000,exclude_tools=skill|todo")
    assert (q.params.protect_tokens, q.params.clear_at_least, q.params.exclude_tools) == (
        40_000,
        20_000,
        ("skill", "todo"),
    )


def test_clears_results_outside_the_most_recent_k_oldest_first():
    s = reads(5)
    out = s.replay("tool-prune:keep=2")
    m = s.messages
    expected = [*m[:3], with_result(m[3], CLEARED), m[4], with_result(m[5], CLEARED)]
    expected += [m[6], with_result(m[7], CLEARED), *m[8:]]
    assert shape(out.view.messages) == shape(expected)
    assert [e.object_id for e in out.plan.edits] == [f"function:bash:{i}" for i in (1, 2, 3)]


def test_protect_tokens_keeps_the_newest_tool_output_like_opencode():
    s = reads(5)
    bodies = [s.messages[3 + 2 * i].parts[0].content for i in range(5)]
    sizes = [count(b) for b in bodies]
    # protect exactly the newest two outputs: the third from the end crosses the budget
    budget = sizes[4] + sizes[3]
    out = s.replay(f"tool-prune:protect_tokens={budget}")
    assert [e.object_id for e in out.plan.edits] == [f"function:bash:{i}" for i in (1, 2, 3)]
    # one token more still crosses with the third output: OpenCode prunes the crossing part
    out = s.replay(f"tool-prune:protect_tokens={budget + 1}")
    assert [e.object_id for e in out.plan.edits] == [f"function:bash:{i}" for i in (1, 2, 3)]
    out = s.replay(f"tool-prune:protect_tokens={budget + sizes[2]}")
    assert [e.object_id for e in out.plan.edits] == ["function:bash:1", "function:bash:2"]


def test_clear_at_least_is_all_or_nothing():
    s = reads(5)
    freed = sum(count(s.messages[i].parts[0].content) - count(CLEARED) for i in (3, 5))
    assert len(s.replay(f"tool-prune:keep=3,clear_at_least={freed}").plan.edits) == 2
    out = s.replay(f"tool-prune:keep=3,clear_at_least={freed + 1}")
    assert out.plan.edits == ()
    assert shape(out.view.messages) == shape(s.messages)


def test_exclusions_trigger_and_tiny_results():
    s = Session()
    s.system("agent")
    s.user("go")
    s.step("skill", {"name": "pdf"}, prose(30, "skill"))
    s.step("bash", {"cmd": "true"}, "ok")
    s.step("bash", {"cmd": "ls"}, prose(30, "ls"))
    s.step("bash", {"cmd": "pwd"}, "/work")
    out = s.replay("tool-prune:keep=1,exclude_tools=skill")
    # "ok" is shorter than the placeholder: clearing it would free nothing
    assert [e.object_id for e in out.plan.edits] == ["function:bash:3"]
    assert s.replay(f"tool-prune:keep=1,trigger_tokens={s.total() + 1}").plan.edits == ()


def test_a_result_inside_the_latest_user_message_is_protected():
    """Anthropic keeps tool results in user messages; the latest user turn's message may carry
    one. Editing it would change the protected message, so neither the policies nor rehearsal
    touch it."""
    s = reads(2)
    s.add("assistant", [Part.call("call_x", "bash", {"cmd": "make"})])
    s.add("user", [Part.response("call_x", prose(30, "make")), Part.text("Why did make fail?")])
    ctx = s.ctx()
    latest = ctx.index[ctx.index.latest_turn]
    assert latest.messages[0] == len(s.messages) - 1
    out = s.replay("tool-prune:keep=0")
    assert [e.object_id for e in out.plan.edits] == ["function:bash:1", "function:bash:2"]
    assert out.view.messages[-1] == s.messages[-1]
    r = rehearse(Plan.of(Edit("function:bash:3", "prune")), ctx.index)
    assert r.accepted == () and r.dropped[0].reason == "protected"
