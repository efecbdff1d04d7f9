from ctxreplay.policies.base import make_policy
from ctxreplay.replay.sidecar import payload_messages

from sessions import Session, prose, shape, with_result


def run_session(steps: int) -> Session:
    s = Session()
    s.system("You are SWE-agent.")
    s.user("Fix the bug in the parser.")
    for i in range(steps):
        s.step(
            "bash", {"command": f"grep -n token{i} parser.py"}, prose(4, f"out{i}"), error=i == 1
        )
    return s


def test_defaults_are_the_studys():
    p = make_policy("hybrid").params
    assert (p.window, p.summarize_after, p.keep_recent) == (10, 43, 10)


def test_masks_outside_the_window_before_the_summariser_triggers():
    s = run_session(6)
    out = s.replay("hybrid:window=2,summarize_after=6,keep_recent=2")
    m = s.messages
    masked = {3 + 2 * i: "Old environment output: (4 lines omitted)" for i in (1, 2, 3)}
    expected = [with_result(msg, masked[j]) if j in masked else msg for j, msg in enumerate(m)]
    assert shape(out.view.messages) == shape(expected)
    assert out.view.archives == ()


def test_summary_folds_have_no_visible_route():
    s = run_session(7)
    out = s.replay("hybrid:window=3,summarize_after=6,keep_recent=2")
    folded = [f"function:bash:{i}" for i in range(1, 6)]
    assert [(e.object_id, e.action, e.route) for e in out.plan.edits] == [
        (oid, "fold", False) for oid in folded
    ]
    m = s.messages
    first_lines = {i: m[3 + 2 * i].parts[0].content.splitlines()[0] for i in range(5)}
    notes = {
        3 + 2 * i: f'[summary] bash({{"command":"grep -n token{i} parser.py"}}) -> '
        f"{'error' if i == 1 else '4 lines'}: {first_lines[i]}"
        for i in range(5)
    }
    expected = [with_result(msg, notes[j]) if j in notes else msg for j, msg in enumerate(m)]
    assert shape(out.view.messages) == shape(expected)
    text = out.view.text()
    assert "ctxreplay:folded" not in text and "context_recover" not in text
    assert "sha256:" not in text
    assert len(out.view.archives) == 5
    for archive in out.view.archives:
        assert archive.pointer_visible is False
        (_, _, call), (_, _, result) = payload_messages(archive.payload)
        assert call[0].type == "tool_call" and result[0].type == "tool_call_response"
