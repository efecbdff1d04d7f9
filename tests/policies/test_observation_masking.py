from ctxreplay.policies.observation_masking import masked_observation

from sessions import Session, prose, shape, with_result


def run_session(steps: int) -> Session:
    s = Session()
    s.system("You are SWE-agent.")
    s.user("Fix the bug in the parser.")
    for i in range(steps):
        s.step("bash", {"command": f"sed -n {i},+{i + 3}p parser.py"}, prose(3 + i, f"out{i}"))
    return s


def test_masks_everything_but_the_first_and_the_last_ten():
    s = run_session(14)
    out = s.replay("observation-masking")
    m = s.messages
    # observation i (0-based) is at message 3 + 2i and has 3 + i lines
    masked = {3 + 2 * i: f"Old environment output: ({3 + i} lines omitted)" for i in (1, 2, 3)}
    expected = [with_result(msg, masked[j]) if j in masked else msg for j, msg in enumerate(m)]
    assert shape(out.view.messages) == shape(expected)
    assert out.view.actions == {f"function:bash:{i}": "prune" for i in (2, 3, 4)}


def test_short_sessions_are_untouched_and_m_is_a_parameter():
    s = run_session(11)
    assert s.replay("observation-masking").plan.edits == ()
    out = s.replay("observation-masking:keep=2,keep_first=false")
    assert [e.object_id for e in out.plan.edits] == [f"function:bash:{i}" for i in range(1, 10)]


def test_line_count_of_the_placeholder():
    assert masked_observation("a\nb\nc") == "Old environment output: (3 lines omitted)"
    assert masked_observation("a\nb\nc\n") == "Old environment output: (3 lines omitted)"
    assert masked_observation("") == "Old environment output: (0 lines omitted)"
    assert masked_observation("one line") == "Old environment output: (1 lines omitted)"
