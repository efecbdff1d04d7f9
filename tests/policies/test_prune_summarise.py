"""``prune-summarise``: the last K tool pairs kept, the evicted ones replaced by one summary where
the first of them was. Exact views on hand-built sessions; the llm planner against a scripted
server."""

from __future__ import annotations

import hashlib
import json
import pickle

import pytest

from ctxreplay.datasets.messages import Message, Part
from ctxreplay.policies.base import all_policies, make_policy, rebuild_policy
from ctxreplay.policies.prune_summarise import (
    PruneSummarise,
    clip_tokens,
    render_summary_prompt,
    rules_digest,
    summary_title,
)
from ctxreplay.replay.outcome import replay_case
from ctxreplay.replay.sidecar import payload_messages
from ctxreplay.replay.view import view_problems

from fake_openai import FakeOpenAI, Reply, chat_body
from sessions import Session, count, prose, shape, with_result

pytestmark = pytest.mark.usefixtures("fresh_endpoints")


ORDER = {
    "order_id": "ORD-1001",
    "status": "delivered",
    "total": 1234.5,
    "sku": "SKU-77A",
    "note": prose(6, "note"),
}


def eight_pairs() -> Session:
    """System, one user turn, 8 tool pairs; the agent says what it decided after pair 3."""
    s = Session()
    s.system("You are a support agent.")  # 0
    s.user("Refund order ORD-1001 for alice@example.com.")  # 1
    s.step("get_order", {"order_id": "ORD-1001"}, json.dumps(ORDER))  # 2, 3
    refunds = prose(8, "policy") + "\nSee https://example.com/refunds for details."
    s.step("read_file", {"path": "/srv/policy/refunds.md"}, refunds)  # 4, 5
    s.step(
        "bash",
        {"command": "cat /srv/log.txt"},
        "cat: /srv/log.txt: No such file or directory",
        error=True,
    )  # 6, 7
    s.say("The log is missing; I will query the payments API instead.")  # 8
    for i in range(4, 9):  # 9 .. 18
        s.step("bash", {"command": f"grep -n token{i} app.py"}, prose(6, f"out{i}"))
    return s


SUMMARY = """\
[Summary of 3 earlier tool calls; their full results were removed]
- get_order(order_id=ORD-1001) → 1 line
  "status": "delivered", "total": 1234.5, "sku": "SKU-77A"
- read_file(path=/srv/policy/refunds.md) → 9 lines
  ids: https://example.com/refunds
- bash(command=cat /srv/log.txt) → error
  error: cat: /srv/log.txt: No such file or directory
  then: The log is missing; I will query the payments API instead."""


def test_registered_with_the_studys_defaults():
    assert "prune-summarise" in all_policies()
    p = make_policy("prune-summarise").params
    assert (p.keep, p.summary_tokens, p.trigger_tokens, p.planner) == (5, 400, 0, "rules")
    assert make_policy("prune-summarise").label == "prune-summarise"
    assert make_policy("prune-summarise:keep=3").label == "prune-summarise:keep=3"
    assert "arXiv:2606.10209" in (PruneSummarise.__doc__ or "")


def test_eight_pairs_keep_five_gives_one_summary_where_pair_one_was():
    s = eight_pairs()
    out = s.replay("prune-summarise")
    assert out.committed and out.planner_failure is None
    assert [(e.object_id, e.action, e.route) for e in out.plan.edits] == [
        ("function:get_order:1", "fold", False),
        ("function:read_file:2", "prune", True),
        ("function:bash:3", "prune", True),
    ]
    assert out.plan.edits[0].note == SUMMARY
    m = s.messages
    expected = [
        m[0],  # the system prompt
        m[1],  # the user's turn, unchanged
        m[2],  # pair 1's call stays ...
        with_result(m[3], SUMMARY),  # ... and its result is the summary
        # pairs 2 and 3 (m[4] .. m[7]) are gone with their call envelopes
        m[8],  # the agent's own words stay
        *m[9:],  # pairs 4 .. 8 intact
    ]
    assert shape(out.view.messages) == shape(expected)
    assert view_problems(out.view.messages) == []
    summaries = [
        msg
        for msg in out.view.messages
        if any("[Summary of" in t for p in msg.parts for t in p.token_texts())
    ]
    assert len(summaries) == 1
    assert out.view.actions == {
        "function:get_order:1": "fold",
        "function:read_file:2": "prune",
        "function:bash:3": "prune",
    }
    assert out.plan.meta["summarised"] == 3 and out.plan.meta["planner"] == "rules"
    assert out.plan.meta["summary_tokens"] == count(SUMMARY) <= 400
    assert (out.view.prefix_tokens, out.view.tokens) == (788, 639)
    assert out.pruning_rate == pytest.approx(1 - 639 / 788)


def test_the_archive_is_the_exact_original_with_no_visible_route():
    s = eight_pairs()
    out = s.replay("prune-summarise")
    (archive,) = out.view.archives
    assert archive.object_id == "function:get_order:1" and archive.pointer_visible is False
    assert archive.ref == "sha256:" + hashlib.sha256(archive.payload).hexdigest()
    call, result = s.messages[2], s.messages[3]
    assert payload_messages(archive.payload) == [
        (call.seq, "assistant", call.parts),
        (result.seq, "tool", result.parts),
    ]
    assert json.loads(payload_messages(archive.payload)[1][2][0].content) == ORDER
    text = out.view.text()
    assert "sha256:" not in text and "context_recover" not in text


@pytest.mark.parametrize("keep", [8, 9, 50])
def test_nothing_to_evict_means_no_edit(keep):
    s = eight_pairs()
    out = s.replay(f"prune-summarise:keep={keep}")
    assert out.plan.edits == () and not out.committed
    assert out.view.messages == tuple(s.messages)


def test_the_trigger_gates_the_policy():
    s = eight_pairs()
    below = s.replay(f"prune-summarise:trigger_tokens={s.total() + 1}")
    assert below.plan.edits == () and below.view.messages == tuple(s.messages)
    at = s.replay(f"prune-summarise:trigger_tokens={s.total()}")
    assert at.committed and len(at.plan.edits) == 3


def test_no_edit_when_the_summary_would_not_be_smaller():
    s = Session()
    s.system("agent")
    s.user("Go.")
    for i in range(7):
        s.step("bash", {"command": f"echo {i}"}, f"ok {i}")
    out = s.replay("prune-summarise")
    assert out.plan.edits == () and out.plan.meta["skipped"] == "no_saving"
    assert out.view.messages == tuple(s.messages)


def many_ids() -> Session:
    s = Session()
    s.system("agent")
    s.user("List the accounts and find the broken one.")
    listing = "\n".join(f"account ACC-{1000 + i}-X{i} active" for i in range(40))
    s.step("list_accounts", {"region": "eu"}, listing + "\nError: account ACC-9999-Z locked")
    for i in range(5):
        s.step("bash", {"command": f"echo {i}"}, prose(6, f"k{i}"))
    return s


def test_the_summary_fits_its_bound_and_keeps_errors_first():
    s = many_ids()
    out = s.replay("prune-summarise:summary_tokens=70")
    note = out.plan.edits[0].note
    assert count(note) <= 70
    lines = note.splitlines()
    assert lines[:3] == [
        summary_title(1),
        "- list_accounts(region=eu) → 41 lines",
        "  error: Error: account ACC-9999-Z locked",
    ]
    assert lines[3].startswith("  ids: ACC-1000-X0, ACC-1001-X1")  # ids in the order shown
    kept = lines[3].removeprefix("  ids: ").split(", ")
    assert 1 < len(kept) < 40 and kept == [f"ACC-{1000 + i}-X{i}" for i in range(len(kept))]
    assert out.plan.meta["digest_items"] < out.plan.meta["digest_items_total"]
    # the same pair with room for everything lists every candidate it keeps
    roomy = s.replay("prune-summarise:summary_tokens=400").plan.edits[0].note
    assert count(roomy) <= 400 and len(roomy.splitlines()[3].split(", ")) == 12


def test_when_the_pairs_do_not_all_fit_the_summary_says_how_many_are_missing():
    s = eight_pairs()
    ctx = s.ctx()
    evicted = [ctx.index[f"function:{n}"] for n in ("get_order:1", "read_file:2", "bash:3")]
    digest = rules_digest(ctx, evicted, 50)
    assert count(digest.text) <= 50
    assert digest.text == (
        "[Summary of 3 earlier tool calls, 2 not listed; their full results were removed]\n"
        "- bash(command=cat /srv/log.txt) → error\n"
        "  error: cat: /srv/log.txt: No such file or directory"
    )
    assert digest.meta["listed_pairs"] == 1
    assert rules_digest(ctx, evicted, 5).text == clip_tokens(summary_title(3, 3), 5, count)


def test_json_fields_keep_their_form_and_order_and_ids_keep_their_keys():
    user = {
        "user_id": "amelia_davis_8890",
        "name": {"first_name": "Amelia", "last_name": "Davis"},
        "payment_methods": {
            "credit_card_3563913": {"source": "credit_card", "id": "credit_card_3563913"}
        },
        "reservations": ["8C8K4E", "UDMOP1", "XAZ3C0"],
        "membership": "gold",
        "bio": prose(4, "bio"),  # too long to be a field
    }
    s = Session()
    s.system("agent")
    s.user("Book a flight.")
    s.step("get_user_details", {"user_id": "amelia_davis_8890"}, json.dumps(user))
    ctx = s.ctx()
    digest = rules_digest(ctx, [ctx.index["function:get_user_details:1"]], 400)
    assert digest.text == (
        f"{summary_title(1)}\n"
        "- get_user_details(user_id=amelia_davis_8890) → 1 line\n"
        '  "first_name": "Amelia", "last_name": "Davis", "source": "credit_card", '
        '"id": "credit_card_3563913", "reservations": ["8C8K4E", "UDMOP1", "XAZ3C0"], '
        '"membership": "gold"'
    )
    # the ids the fields carry are not repeated bare; the user id is in the call already
    assert "ids:" not in digest.text and digest.text.count("amelia_davis_8890") == 1


def test_parallel_calls_and_results_in_the_latest_user_message_stay_valid():
    s = Session()
    s.system("agent")
    s.user("Check the three services.")
    s.parallel([(f"probe_{k}", {"host": f"svc{k}"}, prose(8, f"svc{k}"), False) for k in "abc"])
    for i in range(3):
        s.step("bash", {"command": f"echo {i}"}, prose(8, f"e{i}"))
    # Anthropic style: the latest user message carries the last result
    s.add("assistant", [Part.call("call_x", "probe_d", {"host": "svcd"})])
    s.add("user", [Part.response("call_x", prose(8, "svcd")), Part.text("Now restart svcd.")])
    # keep counts every pair, the one the latest user message carries included
    out = s.replay("prune-summarise:keep=4")
    assert [(e.object_id, e.action) for e in out.plan.edits] == [
        ("function:probe_a:1", "fold"),
        ("function:probe_b:2", "prune"),
        ("function:probe_c:3", "prune"),
    ]
    assert view_problems(out.view.messages) == []
    assert out.view.messages[-1] == s.messages[-1]  # the latest user message, untouched
    call = out.view.messages[2]
    assert [p.name for p in call.calls] == ["probe_a"]  # the other calls went with their pairs


# --- the llm planner ----------------------------------------------------------------------------

MODEL_SUMMARY = (
    "get_order ORD-1001: delivered, total 1234.5, SKU-77A. Refund policy at "
    "https://example.com/refunds. /srv/log.txt does not exist; the agent moved to the payments API."
)


def llm(server: FakeOpenAI, extra: str = "") -> PruneSummarise:
    spec = (
        f"prune-summarise:planner=llm,base_url={server.base_url},model=fake-model,"
        "cache_dir=off,max_retries=0,timeout=5"
    )
    policy = make_policy(spec + (f",{extra}" if extra else ""))
    policy.client.backoff_base = 0.01
    return policy


def test_llm_summary_is_placed_where_the_first_evicted_pair_was():
    s = eight_pairs()
    with FakeOpenAI([Reply(body=chat_body(MODEL_SUMMARY, usage=(700, 40, 0)))]) as server:
        out = replay_case(llm(server), s.ctx())
    assert out.planner_failure is None and out.committed
    note = f"{summary_title(3)}\n{MODEL_SUMMARY}"
    assert [(e.object_id, e.action, e.note) for e in out.plan.edits] == [
        ("function:get_order:1", "fold", note),
        ("function:read_file:2", "prune", None),
        ("function:bash:3", "prune", None),
    ]
    m = s.messages
    assert shape(out.view.messages) == shape([*m[:3], with_result(m[3], note), *m[8:]])
    assert view_problems(out.view.messages) == []
    meta = out.plan.meta
    assert (out.plan.planner.prompt_tokens, out.plan.planner.completion_tokens) == (700, 40)
    assert meta["planner"] == "llm" and meta["summary_clipped"] is False
    [sent] = server.requests
    assert out.plan.planner.params_sent == sent
    assert [x["role"] for x in sent["messages"]] == ["system", "user"]
    user = sent["messages"][1]["content"]
    for oid in ("function:get_order:1", "function:read_file:2", "function:bash:3"):
        assert f"{oid} | tool" in user
    assert "function:bash:4" not in user  # kept pairs are not sent
    assert "agent next: The log is missing" in user
    rendered = render_summary_prompt(s.ctx(), [s.ctx().index["function:bash:3"]], 400, 4000)
    assert f"nonce={rendered.nonce}>>>" in rendered.messages[1]["content"]
    assert "identifiers" in sent["messages"][0]["content"]
    assert sent["temperature"] == 0 and sent["seed"] == 0


def test_llm_summary_longer_than_the_bound_is_cut_to_it():
    s = eight_pairs()
    long = " ".join(f"fact{i}=ORD-{i}" for i in range(400))
    with FakeOpenAI([Reply(body=chat_body(long))]) as server:
        out = replay_case(llm(server, "summary_tokens=80"), s.ctx())
    note = out.plan.edits[0].note
    assert count(note) <= 80 and note.endswith("…") and out.plan.meta["summary_clipped"]
    assert note.startswith(summary_title(3) + "\nfact0=ORD-0")


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (Reply(status=500, body={"error": {"message": "boom"}}), "model call failed: http 500"),
        (Reply(body=chat_body(None, refusal="I cannot help with that.")), "refused: I cannot"),
        (Reply(body=chat_body("   ")), "empty summary"),
    ],
)
def test_a_failing_server_is_a_recorded_planner_failure(reply, reason):
    s = eight_pairs()
    with FakeOpenAI(default=reply) as server:
        out = replay_case(llm(server), s.ctx())
    assert out.planner_failure is not None and out.planner_failure.startswith(reason)
    assert out.plan.meta["failure"] == out.planner_failure
    assert not out.committed and out.commit_reason == "planner_failed"
    assert out.view.messages == tuple(s.messages) and out.view.archives == ()


@pytest.mark.local_model
def test_local_model_summary_is_placed_in_a_valid_view(local_model, tmp_path):
    s = eight_pairs()
    spec = (
        f"prune-summarise:planner=llm,base_url={local_model.base_url},model={local_model.model},"
        f"tariff=local,cache_dir={tmp_path},max_tokens=96,timeout=120,summary_tokens=120"
    )
    out = replay_case(make_policy(spec), s.ctx())
    assert view_problems(out.view.messages) == []
    if out.planner_failure is not None:  # a 135M model may well write nothing usable
        assert out.planner_failure.startswith(("empty summary", "refused", "model call failed"))
        assert out.view.messages == tuple(s.messages)
        return
    note = out.plan.edits[0].note
    assert note.startswith(summary_title(3)) and count(note) <= 120
    assert out.view.messages[3].parts[0].content == note
    assert out.plan.planner.prompt_tokens > 0 and out.plan.planner.usd == 0.0


def test_llm_is_not_called_when_nothing_is_evicted():
    s = eight_pairs()
    with FakeOpenAI() as server:
        out = replay_case(llm(server, "keep=8"), s.ctx())
        assert server.requests == []
    assert out.plan.edits == () and out.planner_failure is None


def test_label_manifest_and_pickling_keep_the_endpoint_out_of_the_label():
    policy = make_policy(
        "prune-summarise:planner=llm,base_url=http://10.0.0.1:9/v1,model=m,cache_dir=off,keep=3"
    )
    assert policy.label == "prune-summarise:keep=3,planner=llm,model=m"
    described = policy.describe()
    assert described["endpoint"]["model"] == "m"
    assert rebuild_policy(described).params == policy.params
    clone = pickle.loads(pickle.dumps(policy))
    assert clone.params == policy.params and clone._client._client is None
    assert "endpoint" not in make_policy("prune-summarise").describe()


def test_the_view_messages_keep_their_token_counts():
    s = eight_pairs()
    out = s.replay("prune-summarise")
    summary: Message = out.view.messages[3]
    assert summary.tokens == sum(count(t) for p in summary.parts for t in p.token_texts())
    assert out.view.tokens == sum(m.tokens for m in out.view.messages)
