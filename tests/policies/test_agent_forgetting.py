import hashlib

from ctxreplay.datasets.messages import Part
from ctxreplay.policies.agent_forgetting import AgentForgetting, forgetting_note
from ctxreplay.replay.outcome import replay_case
from ctxreplay.replay.plan import Edit, Plan, rehearse
from ctxreplay.replay.sidecar import payload_messages

from sessions import Session, prose, shape, with_result


def debugging_session() -> Session:
    s = Session()
    s.system("You can archive tool results with context_apply.")
    s.user("Why are spans missing in the collector?")
    s.step(
        "fetch",
        {"url": "https://collector.example/metrics"},
        "Collector metrics dump\nsee https://otel.example/docs/exporter and /etc/otel/config.yaml\n"
        + prose(60, "metrics"),
    )
    s.step("bash", {"cmd": "echo ok"}, "ok")
    s.step("bash", {"cmd": "cat huge.log"}, "Exporter log\n" + prose(60, "exporter"))
    for i in range(3):
        s.step("bash", {"cmd": f"recent {i}"}, prose(60, f"recent{i}"))
    return s


def test_waits_for_the_reminder_threshold():
    s = debugging_session()
    assert s.total() < 40_000
    assert s.replay("agent-forgetting").plan.edits == ()


def test_archives_older_large_results_behind_deterministic_notes():
    s = debugging_session()
    out = s.replay("agent-forgetting:reminder_tokens=1000")
    assert out.plan.all_or_nothing
    assert [(e.object_id, e.action) for e in out.plan.edits] == [
        ("function:fetch:1", "fold"),
        ("function:bash:3", "fold"),
    ]
    assert out.plan.edits[0].note == (
        "Collector metrics dump | locators: https://otel.example/docs/exporter, "
        "/etc/otel/config.yaml"
    )
    by_object = {a.object_id: a for a in out.view.archives}
    assert by_object["function:fetch:1"].handle == "r1"
    assert by_object["function:bash:3"].handle == "r3"
    m = s.messages
    stubs = {
        3: f'<ctxreplay:archived id="r1" ref="{by_object["function:fetch:1"].short}">'
        f"{out.plan.edits[0].note}</ctxreplay:archived>",
        7: f'<ctxreplay:archived id="r3" ref="{by_object["function:bash:3"].short}">'
        "Exporter log</ctxreplay:archived>",
    }
    expected = [with_result(msg, stubs[j]) if j in stubs else msg for j, msg in enumerate(m)]
    assert shape(out.view.messages) == shape(expected)
    for a in out.view.archives:
        assert a.ref == "sha256:" + hashlib.sha256(a.payload).hexdigest()
    (_, _, call), (_, _, result) = payload_messages(by_object["function:bash:3"].payload)
    assert call == m[6].parts and result == m[7].parts


def test_notes_are_bounded():
    body = "x" * 500 + "\n" + " ".join(f"https://h{i}.example/p" for i in range(40))
    note = forgetting_note(body, 240)
    assert len(note) <= 240 and "locators: https://h0.example/p" in note


def test_images_make_it_eligible_below_the_threshold():
    s = debugging_session()
    s.add(
        "user",
        [Part.text("Here is a screenshot."), Part("blob", content="aGk=", mime_type="image/png")],
    )
    assert len(s.replay("agent-forgetting").plan.edits) == 2


def test_an_unknown_id_rejects_the_whole_batch():
    s = debugging_session()
    ctx = s.ctx()
    plan = Plan.of(
        Edit("function:fetch:1", "fold", note="metrics"),
        Edit("function:bash:99", "fold", note="no such result"),
        all_or_nothing=True,
    )
    r = rehearse(plan, ctx.index)
    assert r.accepted == ()
    assert r.batch_rejected == "unknown_id: function:bash:99"
    assert {d.reason for d in r.dropped} == {"unknown_id", "batch_rejected"}

    class BadBatch(AgentForgetting):
        def plan(self, ctx):
            return plan

    out = replay_case(BadBatch(), ctx)
    assert not out.committed and out.commit_reason == "batch_rejected"
    assert shape(out.view.messages) == shape(s.messages)
    assert out.view.archives == ()


def test_a_duplicate_id_rejects_the_whole_batch():
    s = debugging_session()
    ctx = s.ctx()
    plan = Plan.of(
        Edit("function:fetch:1", "fold", note="a"),
        Edit("function:fetch:1", "fold", note="b"),
        all_or_nothing=True,
    )
    r = rehearse(plan, ctx.index)
    assert r.accepted == () and r.batch_rejected == "duplicate: function:fetch:1"
