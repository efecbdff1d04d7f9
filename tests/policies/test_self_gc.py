import pytest

from ctxreplay.policies.base import make_policy
from ctxreplay.replay.view import mask_text

from sessions import (
    Session,
    count,
    diff_body,
    log_body,
    prose,
    shape,
    table_body,
    trace_body,
    with_result,
)


def shaped_bodies() -> Session:
    s = Session()
    s.system("You are a coding agent.")
    s.user("Find out why the nightly job fails.")
    s.step("bash", {"cmd": "python job.py"}, trace_body())
    s.step("sql", {"q": "select * from cities"}, table_body())
    s.step("bash", {"cmd": "git diff"}, diff_body())
    s.step("bash", {"cmd": "tail -n 60 worker.log"}, log_body())
    s.step("bash", {"cmd": "echo a"}, "a")
    s.step("bash", {"cmd": "echo b"}, "b")
    return s


def test_masks_a_repetitive_log_but_never_a_trace_a_table_or_a_diff():
    s = shaped_bodies()
    out = s.replay("self-gc:commit_threshold=0,fold_min_tokens=100000")
    changes = [(e.object_id, e.action, e.reason) for e in out.plan.edits if e.action != "keep"]
    assert changes == [("function:bash:4", "mask", "repetitive_log")]
    log = log_body()
    cut = len(log) // 10
    m = s.messages
    expected = [*m[:9], with_result(m[9], mask_text(log, cut, cut, count)), *m[10:]]
    assert shape(out.view.messages) == shape(expected)
    masked = out.view.messages[9].parts[0].content
    assert masked.startswith(log[:cut]) and masked.endswith(log[-cut:])
    for i in (3, 5, 7):  # trace, table, diff untouched
        assert out.view.messages[i] == s.messages[i]


def test_lifecycle_rules_and_their_reasons():
    s = Session()
    s.system("agent")
    s.user("Make the tests pass.")
    failed = s.step("bash", {"cmd": "pytest"}, "E   ImportError: no module named foo", error=True)
    s.step("bash", {"cmd": "pip install foo"}, "Successfully installed foo-1.0")
    lost = s.step(
        "bash",
        {"cmd": "curl -s api"},
        "Error: see https://status.example.com/incidents/8812 for details",
        error=True,
    )
    stale = s.step("read_file", {"path": "src/app.py"}, prose(30, "app v1"))
    big = s.step("read_file", {"path": "docs/spec.md"}, prose(400, "spec"))
    s.step("read_file", {"path": "src/app.py"}, prose(30, "app v2"))
    s.step("bash", {"cmd": "pytest -x"}, "1 passed")
    out = s.replay("self-gc:commit_threshold=0")
    assert [(e.object_id, e.action, e.reason) for e in out.plan.edits] == [
        (failed, "prune", "failed_attempt"),
        (lost, "keep", "unique_locators: https://status.example.com/incidents/8812"),
        (stale, "prune", "superseded by function:read_file:6"),
        (big, "fold", "large_stable_body"),
    ]
    assert out.committed
    text = out.view.text()
    assert "ImportError" not in text and "app v1" not in text
    assert "https://status.example.com/incidents/8812" in text
    [archive] = out.view.archives
    assert archive.object_id == big and f'context_recover("{archive.short}")' in text
    # the failed call is stripped with its envelope; the view stays a valid request
    assert all(p.id != "call_1" for m in out.view.messages for p in m.parts)


def test_threshold_commit_at_the_papers_operating_point():
    assert make_policy("self-gc").params.commit_threshold == 0.3
    s = shaped_bodies()
    out = s.replay("self-gc:fold_min_tokens=100000")
    pruning = out.rehearsal.estimated_saving / s.total()
    assert pruning > 0.3 and out.committed
    assert out.commit_reason == f"pruning {pruning:.3f} > 0.3"
    above = round(pruning + 0.01, 2)
    held = s.replay(f"self-gc:fold_min_tokens=100000,commit_threshold={above}")
    assert not held.committed and held.commit_reason == f"pruning {pruning:.3f} <= {above}"
    assert shape(held.view.messages) == shape(s.messages)
    assert held.pruning_rate == 0.0


def test_cost_rule_weighs_future_savings_against_the_cache_break():
    s = shaped_bodies()
    many = s.replay("self-gc:commit_rule=cost,expected_requests=50,fold_min_tokens=100000")
    assert many.committed and many.commit_reason.startswith("cost: net saving")
    none = s.replay("self-gc:commit_rule=cost,expected_requests=0,fold_min_tokens=100000")
    assert not none.committed and none.pruning_rate == 0.0
    policy = make_policy("self-gc:commit_rule=cost,expected_requests=10")
    view = many.view
    value = policy.commit_value(s.total(), view)
    saved = 10 * 0.30e-6 * (s.total() - view.tokens)
    first_edit = next(i for i, o in enumerate(view.origins) if o.edited)
    broken = sum(m.tokens for m in view.messages[first_edit:])
    assert value == pytest.approx(saved - (3.75 - 0.30) * 1e-6 * broken)
