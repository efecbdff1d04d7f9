import hashlib

from ctxreplay.replay.sidecar import payload_messages

from sessions import Session, prose, shape, with_result


def traced(apply_args, *, apply_name="context_apply", apply_error=False) -> Session:
    s = Session()
    s.system("You may archive tool results with context_apply.")
    s.user("Debug the exporter.")
    s.step("read", {"path": "config.yaml"}, "endpoint: http://collector:4318")
    s.step("bash", {"cmd": "make test"}, prose(80, "test output"))
    s.step("bash", {"cmd": "git log -3"}, prose(10, "log"))
    s.step(apply_name, apply_args, "archived" if not apply_error else "error", error=apply_error)
    s.step("bash", {"cmd": "make test -k exporter"}, prose(5, "rerun"))
    return s


def test_replays_a_recorded_context_apply_in_place():
    s = traced({"results": [{"result_id": "r2", "note": "make test: 3 failures in exporter"}]})
    out = s.replay("recorded")
    assert [(e.object_id, e.action, e.note) for e in out.plan.edits] == [
        ("function:bash:2", "fold", "make test: 3 failures in exporter")
    ]
    [archive] = out.view.archives
    assert archive.handle == "r2"
    assert archive.ref == "sha256:" + hashlib.sha256(archive.payload).hexdigest()
    m = s.messages
    stub = (
        f'<ctxreplay:archived id="r2" ref="{archive.short}">'
        "make test: 3 failures in exporter</ctxreplay:archived>"
    )
    expected = [*m[:5], with_result(m[5], stub), *m[6:]]
    assert shape(out.view.messages) == shape(expected)
    (_, _, call), (_, _, result) = payload_messages(archive.payload)
    assert call == m[4].parts and result == m[5].parts


def test_other_batch_keys_and_prefixed_tool_names():
    s = traced(
        {"batch": [{"result_id": "r1", "note": "config"}, {"result_id": "r3", "note": "log"}]},
        apply_name="mcp__ctx__context_apply",
    )
    out = s.replay("recorded")
    assert [(e.object_id, e.note) for e in out.plan.edits] == [
        ("function:read:1", "config"),
        ("function:bash:3", "log"),
    ]


def test_a_batch_with_an_unknown_or_duplicate_id_replays_as_nothing():
    for items in (
        [{"result_id": "r2", "note": "x"}, {"result_id": "r99", "note": "y"}],
        [{"result_id": "r2", "note": "x"}, {"result_id": "r2", "note": "y"}],
        [{"result_id": "r5", "note": "a later result"}],
    ):
        out = traced({"items": items}).replay("recorded")
        assert out.plan.edits == ()
        assert len(out.plan.meta["rejected"]) == 1
        assert out.pruning_rate == 0.0


def test_rejected_or_unanswered_applies_and_recoveries_need_no_edit():
    assert (
        traced({"results": [{"result_id": "r2", "note": "x"}]}, apply_error=True)
        .replay("recorded")
        .plan.edits
        == ()
    )
    s = traced({"results": [{"result_id": "r2", "note": "x"}]})
    s.step("context_recover", {"result_id": "r2"}, prose(80, "test output"))
    out = s.replay("recorded")
    assert [e.object_id for e in out.plan.edits] == ["function:bash:2"]
    plain = Session()
    plain.system("agent")
    plain.user("go")
    plain.step("bash", {"cmd": "ls"}, prose(50))
    assert plain.replay("recorded").plan.edits == ()


def test_a_trace_recorded_under_agent_forgetting_replays_what_the_agent_did():
    """Apply, recover, archive the recovered copy, try the original again (rejected)."""
    original = prose(80, "test output")
    s = traced({"batch": [{"result_id": "r2", "note": "make test: 3 failures"}]})
    s.step("context_recover", {"result_id": "r2"}, original)  # the copy comes back as r6
    s.step(
        "context_apply", {"batch": [{"result_id": "r6", "note": "seen again: 3 failures"}]}, "ok"
    )
    s.step("context_apply", {"batch": [{"result_id": "r2", "note": "again"}]}, "ok")  # r8
    s.step("bash", {"cmd": "make test"}, "all passed")
    out = s.replay("recorded")
    assert [(e.object_id, e.note) for e in out.plan.edits] == [
        ("function:bash:2", "make test: 3 failures"),
        ("function:context_recover:6", "seen again: 3 failures"),
    ]
    assert out.plan.meta["rejected"] == [
        "function:context_apply:8: result id 'r2' already archived"
    ]
    by_handle = {a.handle: a for a in out.view.archives}
    m = s.messages
    stubs = {
        5: f'<ctxreplay:archived id="r2" ref="{by_handle["r2"].short}">'
        "make test: 3 failures</ctxreplay:archived>",
        13: f'<ctxreplay:archived id="r6" ref="{by_handle["r6"].short}">'
        "seen again: 3 failures</ctxreplay:archived>",
    }
    expected = [with_result(msg, stubs[i]) if i in stubs else msg for i, msg in enumerate(m)]
    assert shape(out.view.messages) == shape(expected)
    # both archives hold their exact originals: the recovered copy is the same body
    for handle in ("r2", "r6"):
        (_, _, _), (_, _, result) = payload_messages(by_handle[handle].payload)
        assert result[0].content == original


def test_a_recovered_copy_stays_a_normal_tool_result_behind_the_stub():
    original = prose(80, "test output")
    s = traced({"batch": [{"result_id": "r2", "note": "make test: 3 failures"}]})
    s.step("context_recover", {"result_id": "r2"}, original)
    out = s.replay("recorded")
    [archive] = out.view.archives
    m = s.messages
    stub = f'<ctxreplay:archived id="r2" ref="{archive.short}">make test: 3 failures</ctxreplay:archived>'
    expected = [*m[:5], with_result(m[5], stub), *m[6:]]
    assert shape(out.view.messages) == shape(expected)
    assert out.view.messages[-1].parts[0].content == original
    assert out.view.actions == {"function:bash:2": "fold"}
