"""``agent-forgetting:planner=llm``: the acting model with the context tools, against a scripted
server and the real local model; the reminder schedule; notes in place and exact recovery."""

from __future__ import annotations

import hashlib
import json

import pytest

from ctxreplay.datasets.messages import Message, Part
from ctxreplay.llm import forget_endpoints
from ctxreplay.policies import _acf as acf
from ctxreplay.policies.agent_forgetting import AgentForgetting
from ctxreplay.policies.base import make_policy
from ctxreplay.replay.objects import build_index
from ctxreplay.replay.outcome import replay_case
from ctxreplay.replay.sidecar import original_result, recover_into_view
from ctxreplay.replay.view import archived_note, make_archive, view_problems
from ctxreplay.runs import SidecarStore

from fake_openai import FakeOpenAI, Reply, chat_body
from sessions import Session, count, prose, shape, with_result

METRICS = "Collector metrics dump\nexporter_dropped_spans 1834\n" + prose(40, "metrics")
EXPORTER = "Exporter log\n" + prose(40, "exporter")


@pytest.fixture(autouse=True)
def _fresh_endpoints():
    forget_endpoints()
    yield
    forget_endpoints()


def debugging_session() -> Session:
    s = Session()
    s.system("You are a debugging agent.")
    s.user("Why are spans missing in the collector?")
    s.step("fetch", {"url": "https://collector.example/metrics"}, METRICS)  # r1
    s.step("bash", {"cmd": "cat exporter.log"}, EXPORTER)  # r2
    s.step("bash", {"cmd": "echo ok"}, "ok")  # r3
    return s


def llm(server: FakeOpenAI, s: Session, extra: str = "", **kw) -> AgentForgetting:
    """The reminder threshold set to the prefix size: due at the outgoing request only."""
    spec = (
        f"agent-forgetting:planner=llm,base_url={server.base_url},model=fake-model,"
        f"cache_dir=off,max_retries=0,timeout={kw.pop('timeout', 5)},"
        f"reminder_tokens={kw.pop('reminder_tokens', s.total())}"
    )
    return make_policy(spec + (f",{extra}" if extra else ""))


def apply_call(*items: tuple[str, str], arguments: str | None = None) -> dict:
    args = (
        arguments
        if arguments is not None
        else json.dumps({"batch": [{"result_id": r, "note": n} for r, n in items]})
    )
    return {
        "id": "call_apply",
        "type": "function",
        "function": {"name": "context_apply", "arguments": args},
    }


def answer(*items: tuple[str, str], **kw) -> Reply:
    return Reply(body=chat_body(None, tool_calls=[apply_call(*items, **kw)]))


# --- the reminder ---------------------------------------------------------------------------


def sized(role: str, chars: int, images: int = 0) -> Message:
    parts = [Part.text("x" * chars)]
    parts += [Part("blob", content="aGk=", mime_type="image/png")] * images
    return Message(role, tuple(parts), tokens=chars // 4)


def test_the_reminder_schedule_follows_the_study():
    msgs = [
        sized("system", 400),
        sized("user", 400),
        sized("assistant", 40_000),  # point 2: 200 tokens
        sized("tool", 120_000),  # point 4 below: 40,200 tokens → first reminder
        sized("assistant", 400),
        sized("tool", 19_000),  # 19,400 new chars since: not yet
        sized("assistant", 400),
        sized("tool", 400),  # 20,200 since → second reminder at 8
        sized("assistant", 400),
        sized("tool", 100, images=1),  # a new image → third reminder at 10
        sized("assistant", 400),
        sized("user", 40),  # a new user task resets: the first rule applies again → at 12
    ]
    got = [(r.at, r.why) for r in acf.reminder_schedule(msgs)]
    assert got == [(4, "tokens"), (8, "new_chars"), (10, "new_image"), (12, "tokens")]
    assert acf.reminder_due(msgs) == acf.reminder_schedule(msgs)[-1]
    assert acf.reminder_due(msgs[:11]) is None  # the outgoing request after 10 gets none
    small = [sized("system", 40), sized("user", 40, images=1)]
    assert [(r.at, r.why) for r in acf.reminder_schedule(small)] == [(2, "images")]
    assert "1 image" in acf.reminder_text(acf.reminder_due(small))


def test_no_reminder_due_means_no_call_and_an_empty_plan():
    s = debugging_session()
    with FakeOpenAI() as server:
        out = replay_case(llm(server, s, reminder_tokens=40_000), s.ctx())
        assert server.requests == []
    assert out.plan.edits == () and out.plan.meta["decision"] == "no reminder due"
    assert out.planner_failure is None and out.commit_reason == "nothing_to_do"
    assert shape(out.view.messages) == shape(s.messages)


# --- scripted acting model --------------------------------------------------------------------


def test_a_batch_replaces_results_in_place_with_the_models_notes():
    s = debugging_session()
    notes = ("r1", "metrics: exporter_dropped_spans 1834"), ("r2", "exporter log: queue full")
    with FakeOpenAI([answer(*notes)]) as server:
        out = replay_case(llm(server, s), s.ctx())
        [sent] = server.requests
    assert out.planner_failure is None and out.committed
    assert out.plan.meta["decision"] == "batch applied"
    assert out.plan.meta["batch"] == [list(n) for n in notes]
    m = s.messages
    ctx = s.ctx()
    stubs = {
        3: archived_note("r1", make_archive(ctx.index["function:fetch:1"], m), notes[0][1]),
        5: archived_note("r2", make_archive(ctx.index["function:bash:2"], m), notes[1][1]),
    }
    expected = [with_result(msg, stubs[i]) if i in stubs else msg for i, msg in enumerate(m)]
    assert shape(out.view.messages) == shape(expected)
    assert {a.handle: a.object_id for a in out.view.archives} == {
        "r1": "function:fetch:1",
        "r2": "function:bash:2",
    }
    # what the model saw: the prefix with result ids, the two tools, the reminder last
    chat = sent["messages"]
    assert chat[0] == {"role": "system", "content": "You are a debugging agent."}
    tool_bodies = [c["content"] for c in chat if c["role"] == "tool"]
    assert tool_bodies == [f"[result r1]\n{METRICS}", f"[result r2]\n{EXPORTER}", "[result r3]\nok"]
    assert chat[-1]["role"] == "user" and chat[-1]["content"].startswith("[context reminder]")
    assert [t["function"]["name"] for t in sent["tools"]] == ["context_apply", "context_recover"]
    # the reminder went out with the request and is stored nowhere
    assert "context reminder" not in out.view.text()
    meta = out.plan.meta
    assert out.plan.planner.params_sent == sent and out.plan.planner.prompt_tokens == 100
    assert meta["reminder"] == {"why": "tokens", "tokens": s.total()}


def test_a_batch_with_one_unknown_id_is_rejected_whole():
    s = debugging_session()
    with FakeOpenAI([answer(("r1", "metrics"), ("r99", "no such result"))]) as server:
        out = replay_case(llm(server, s), s.ctx())
    assert out.planner_failure is None
    assert out.rehearsal.batch_rejected == "unknown_id: function:?:99"
    assert [(d.edit.object_id, d.reason) for d in out.rehearsal.dropped] == [
        ("function:?:99", "unknown_id"),
        ("function:fetch:1", "batch_rejected"),
    ]
    assert out.plan.meta["batch_problem"] == "unknown result id 'r99'"
    assert out.plan.meta["decision"] == "batch rejected"
    assert not out.committed and out.commit_reason == "batch_rejected"
    assert shape(out.view.messages) == shape(s.messages) and out.view.archives == ()


@pytest.mark.parametrize(
    ("items", "rejected", "problem"),
    [
        ((("r2", "a"), ("r2", "b")), "duplicate: function:bash:2", "duplicate result id 'r2'"),
        (
            (("r1", "a"), ("conversation:user:1", "b")),
            "not_target: result:conversation:user:1",
            "'conversation:user:1' is not a tool result id",
        ),
    ],
)
def test_duplicate_and_non_result_ids_reject_the_batch(items, rejected, problem):
    s = debugging_session()
    with FakeOpenAI([answer(*items)]) as server:
        out = replay_case(llm(server, s), s.ctx())
    assert out.rehearsal.batch_rejected == rejected
    assert out.plan.meta["batch_problem"] == problem
    assert shape(out.view.messages) == shape(s.messages) and not out.committed


def test_a_result_archived_by_a_recorded_apply_is_shown_as_its_note_and_cannot_be_archived_again():
    s = debugging_session()
    s.step("context_apply", {"batch": [{"result_id": "r1", "note": "metrics: 1834 dropped"}]}, "ok")
    s.step("bash", {"cmd": "cat collector.yaml"}, prose(20, "config"))  # r5
    with FakeOpenAI([answer(("r5", "config"), ("r1", "again"))]) as server:
        out = replay_case(llm(server, s), s.ctx())
        [sent] = server.requests
    first_tool = next(c for c in sent["messages"] if c["role"] == "tool")
    assert first_tool["content"].startswith('[result r1]\n<ctxreplay:archived id="r1"')
    assert first_tool["content"].endswith(">metrics: 1834 dropped</ctxreplay:archived>")
    assert out.plan.meta["n_recorded"] == 1
    assert out.plan.meta["batch_problem"] == "result id 'r1' is already archived"
    assert out.rehearsal.batch_rejected == "duplicate: function:fetch:1"
    assert shape(out.view.messages) == shape(s.messages)


def test_no_tool_call_is_a_choice_not_a_failure():
    s = debugging_session()
    with FakeOpenAI([Reply(body=chat_body("The exporter queue is full; raising it."))]) as server:
        out = replay_case(llm(server, s), s.ctx())
    assert out.planner_failure is None and out.plan.edits == ()
    assert out.plan.meta["decision"] == "no tool call" and out.plan.meta["tool_calls"] == []
    assert shape(out.view.messages) == shape(s.messages)


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (answer(arguments="{not json"), "unparseable: context_apply arguments are not JSON"),
        (
            answer(arguments='{"batch": [{"note": "x"}]}'),
            "unparseable: context_apply missing batch[0].result_id",
        ),
        (
            Reply(body=chat_body('context_apply({"batch": [{"result_id": "r1", "note": "x"}]})')),
            "unparseable: context_apply written as text",
        ),
        (Reply(body=chat_body(None, refusal="I won't.")), "refused: I won't."),
        (
            Reply(body="<html>oops</html>", content_type="text/html"),
            "model call failed: bad response",
        ),
        (Reply(body=chat_body(None), delay=1.5), "model call failed: timeout after 1 attempt"),
    ],
)
def test_garbage_refusals_and_failed_calls_leave_the_prefix_unchanged(reply, reason):
    s = debugging_session()
    with FakeOpenAI([reply]) as server:
        out = replay_case(llm(server, s, timeout=0.5), s.ctx())
    assert out.planner_failure is not None and out.planner_failure.startswith(reason), (
        out.planner_failure
    )
    assert not out.committed and out.commit_reason == "planner_failed"
    assert shape(out.view.messages) == shape(s.messages)


def test_a_note_replaces_the_result_and_recovery_brings_back_the_exact_original(tmp_path):
    s = debugging_session()
    note = "exporter log: queue full at 12:00"
    with FakeOpenAI([answer(("r2", note))]) as server:
        out = replay_case(llm(server, s), s.ctx())
    [archive] = out.view.archives
    assert archive.handle == "r2"
    assert archive.ref == "sha256:" + hashlib.sha256(archive.payload).hexdigest()
    stub = out.view.messages[5].parts[0]
    assert stub.id == "call_2" and stub.content == archived_note("r2", archive, note)
    assert EXPORTER not in out.view.text()
    # the archive goes to the sidecar; context_recover brings it back byte for byte
    store = SidecarStore(tmp_path)
    store.put_all(out.view.archives)
    payload = store.recover(archive.short)
    assert payload == archive.payload
    fresh = acf.fresh_handle(out.view.messages)
    assert fresh == "r4"
    recovered = recover_into_view(out.view.messages, payload, "r2", fresh, count)
    assert view_problems(recovered) == []
    assert recovered[5].parts[0].content == archived_note("r2", archive, note)  # the stub stays
    back = recovered[-1].parts[0]
    assert back.content == EXPORTER == original_result(payload).content
    index = build_index(recovered, count)
    new = index.functions()[-1]
    assert new.id == "function:context_recover:4" and new.call_id == back.id
    from ctxreplay.policies import _select as sel

    assert sel.handle_of(new.id) == fresh
    assert fresh not in {sel.handle_of(f.id) for f in s.ctx().index.functions()}


def test_the_acting_model_can_be_refused_a_prefix_too_long_for_it():
    s = debugging_session()
    with FakeOpenAI() as server:
        out = replay_case(llm(server, s, "max_prompt_tokens=100"), s.ctx())
        assert server.requests == []
    assert out.planner_failure.startswith(f"prefix of {s.total():,} tokens exceeds")


# --- the real local model ---------------------------------------------------------------------


@pytest.mark.local_model
def test_local_model_acting_turn_leaves_a_valid_view(local_model, tmp_path):
    s = Session()
    s.system("You are a debugging agent. You can archive tool results with context_apply.")
    s.user("Why is the service down?")
    s.step("bash", {"cmd": "systemctl status api"}, "api.service: failed (exit 1)\n" + prose(6))
    s.step("bash", {"cmd": "journalctl -u api"}, "port 8080 already in use\n" + prose(6))
    spec = (
        f"agent-forgetting:planner=llm,base_url={local_model.base_url},"
        f"model={local_model.model},tariff=local,cache_dir={tmp_path},max_tokens=64,"
        f"timeout=120,reminder_tokens={s.total()}"
    )
    out = replay_case(make_policy(spec), s.ctx())
    assert view_problems(out.view.messages) == []
    assert out.view.messages[1] == s.messages[1]  # the latest (only) user turn is untouched
    if out.planner_failure is not None:
        assert out.planner_failure.startswith(("unparseable", "refused", "model call failed"))
        assert shape(out.view.messages) == shape(s.messages)
        return
    meta = out.plan.meta
    assert (
        out.plan.planner.prompt_tokens > 0
        and out.plan.planner.usd == 0.0
        and out.plan.planner.prompt_hash
    )
    assert meta["decision"] in (
        "no tool call",
        "no context_apply call",
        "empty batch",
        "batch applied",
        "batch rejected",
    )
    if out.rehearsal.batch_rejected:
        assert shape(out.view.messages) == shape(s.messages)
