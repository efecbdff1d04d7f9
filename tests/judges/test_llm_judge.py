"""The llm judge end to end: the real local model (SmolLM2 via xllamacpp) and a faulty server.

With the local model, tests assert plumbing and contracts (a parsed verdict or an unscored one
with a reason, usage, cache), never verdict quality: a 135M model's verdicts mean nothing.
"""

from __future__ import annotations

import json
import pickle
import sys
from dataclasses import replace

import pytest

from ctxreplay.datasets.messages import Message, Part
from ctxreplay.datasets.tokenizer import get_tokenizer
from ctxreplay.judges.base import LABELS, JudgeInput, make_judge
from ctxreplay.judges.llm import VERDICT_SCHEMA, LLMJudge, LLMJudgeParams
from ctxreplay.judges.prompt import render_prompt
from ctxreplay.llm import LocalModelServer, forget_endpoints, local_model_available
from ctxreplay.replay.objects import build_index
from ctxreplay.replay.view import Archive
from ctxreplay.schema import CATEGORIES

from builders import numbered
from fake_openai import FakeOpenAI, ManualClock, Reply, chat_body, error_body

count = get_tokenizer().count


def make_item(body: str = "", case_id: str = "s1:6", future_text: str = "") -> JudgeInput:
    """A prefix with two tool calls; the view folds the first and prunes the second."""
    body = body or "\n".join(f"row R-{1000 + i} total={i * 7}.50" for i in range(1, 12))
    prefix = numbered(
        [
            Message("system", (Part.text("You are a data agent."),)),
            Message("user", (Part.text("Total of row R-1004 in https://example.com/r.csv?"),)),
            Message(
                "assistant",
                (Part.call("c1", "fetch", {"url": "https://example.com/r.csv"}),),
            ),
            Message("tool", (Part.response("c1", body),)),
            Message("assistant", (Part.call("c2", "read_file", {"path": "notes/todo.md"}),)),
            Message("tool", (Part.response("c2", "- mail ops@example.com"),)),
        ]
    )
    index = build_index(prefix, count)
    pointer = (
        '<ctxreplay:folded object="function:fetch:1" ref="sha256:0123456789abcdef" '
        'tokens="99">The tool result of fetch was folded out of context. Recover it exactly with '
        'context_recover("sha256:0123456789abcdef").</ctxreplay:folded>'
    )
    view = (
        prefix[0],
        prefix[1],
        prefix[2],
        replace(prefix[3], parts=(Part.response("c1", pointer),)),
    )
    future = numbered(
        [
            Message(
                "assistant",
                (
                    Part.text(future_text or "R-1004 has total=28.50."),
                    Part.call("c9", "send_email", {"to": "ops@example.com", "body": "28.50"}),
                ),
            ),
            Message("tool", (Part.response("c9", "sent"),)),
        ],
        start=len(prefix),
    )
    return JudgeInput(
        case_id=case_id,
        session_id="s1",
        policy="test-policy",
        prefix=prefix,
        view=view,
        future=future,
        index=index,
        actions={"function:fetch:1": "fold", "function:read_file:2": "prune"},
        archives=(Archive("sha256:" + "0123456789abcdef" * 4, "function:fetch:1", body.encode()),),
    )


def answer(**kw) -> str:
    doc = {"facts": [], "verdict": "impact", "explanation": "because"}
    doc.update(kw)
    return json.dumps(doc)


LOST = {
    "quote": "ops@example.com",
    "category": "locator_handle",
    "source_object": "function:read_file:2",
    "future_message": 6,
    "status": "missing",
    "explanation": "the address was pruned",
}
KEPT = {
    "quote": "https://example.com/r.csv",
    "category": "locator_handle",
    "source_object": "conversation:user:1",
    "future_message": 6,
    "status": "available",
    "explanation": "the user turn is in the view",
}
FOLDED = {
    "quote": "row R-1004 total=28.50",
    "category": "evidence_detail",
    "source_object": "function:fetch:1",
    "future_message": 6,
    "status": "recoverable",
    "explanation": "behind the visible fold pointer",
}


@pytest.fixture(autouse=True)
def _fresh_endpoints():
    forget_endpoints()
    yield
    forget_endpoints()


def fake_judge(server: FakeOpenAI, **kw) -> LLMJudge:
    params = LLMJudgeParams(
        base_url=server.base_url,
        model="fake-model",
        cache_dir="off",
        max_retries=kw.pop("max_retries", 1),
        timeout=kw.pop("timeout", 5.0),
        **kw,
    )
    judge = LLMJudge(params)
    clock = ManualClock()  # retries wait on this clock, never on the wall clock
    judge.client.sleep, judge.client.clock = clock.sleep, clock.now
    return judge


# --- against a scripted server ----------------------------------------------------------------


def test_a_schema_answer_becomes_a_verdict_with_losses():
    unknown = {**LOST, "source_object": "function:nope:9", "future_message": 99}
    text = answer(facts=[KEPT, LOST, FOLDED, unknown])
    body = chat_body(text, usage=(900, 80, 0))
    with FakeOpenAI(default=Reply(body=body)) as server:
        judge = fake_judge(server, tariff="gpt-4o-mini")
        v = judge.judge(make_item())
    assert v.label == "impact" and v.reason == "because"
    first, second = v.losses  # only the missing facts are losses
    assert (first.category, first.anchor, first.source_object, first.need_seq) == (
        "locator_handle",
        "ops@example.com",
        "function:read_file:2",
        6,
    )
    assert first.detail == "the address was pruned"
    assert second.source_object is None and second.need_seq is None
    assert "function:nope:9" in second.detail
    assert v.dependencies == 4 and v.recoverable == 1
    assert v.usage.prompt_tokens == 900 and v.usage.completion_tokens == 80
    assert v.usage.usd > 0 and v.usage.calls == 1
    assert v.prompt_hash and len(v.prompt_hash) == 64 and v.raw == text
    sent = server.requests[0]
    assert sent["response_format"]["json_schema"]["schema"] == VERDICT_SCHEMA
    assert sent["temperature"] == 0.0 and sent["seed"] == 0


def test_schema_asks_for_the_needed_facts_before_the_verdict():
    props = VERDICT_SCHEMA["properties"]
    assert list(props) == ["facts", "verdict", "explanation"]
    fact = props["facts"]["items"]
    assert fact["properties"]["category"]["enum"] == list(CATEGORIES)
    assert fact["properties"]["status"]["enum"] == ["available", "recoverable", "missing"]
    assert set(fact["required"]) == set(fact["properties"]) and not fact["additionalProperties"]
    system = render_prompt(make_item(), max_prompt_tokens=4000, count=count).messages[0]["content"]
    for word in (*CATEGORIES, "available", "recoverable", "missing", '"facts"', '"quote"'):
        assert word in system, word


def test_a_missing_fact_yields_impact_with_that_fact_as_a_loss():
    status = {**FOLDED, "quote": '"status": "Suspended"', "status": "missing"}
    text = answer(facts=[KEPT, status], verdict="impact", explanation="the status is gone")
    with FakeOpenAI(default=Reply(body=chat_body(text))) as server:
        v = fake_judge(server).judge(make_item())
    assert v.label == "impact" and v.reason == "the status is gone"
    (loss,) = v.losses
    assert (loss.category, loss.anchor, loss.source_object, loss.need_seq) == (
        "evidence_detail",
        '"status": "Suspended"',
        "function:fetch:1",
        6,
    )
    assert v.dependencies == 2 and v.recoverable == 0


def test_all_facts_available_yields_no_impact():
    text = answer(facts=[KEPT, {**LOST, "status": "available"}], verdict="no_impact")
    with FakeOpenAI(default=Reply(body=chat_body(text))) as server:
        v = fake_judge(server).judge(make_item())
    assert v.label == "no_impact" and v.losses == () and v.reason == "because"
    assert v.dependencies == 2 and v.recoverable == 0


def test_no_impact_answer_with_nothing_needed():
    with FakeOpenAI(default=Reply(body=chat_body(answer(verdict="no_impact")))) as server:
        v = fake_judge(server).judge(make_item())
    assert v.label == "no_impact" and v.losses == () and v.dependencies == 0


def test_recoverable_facts_are_no_impact_via_recovery():
    text = answer(facts=[KEPT, FOLDED], verdict="no_impact")
    with FakeOpenAI(default=Reply(body=chat_body(text))) as server:
        v = fake_judge(server).judge(make_item())
    assert v.label == "no_impact" and v.losses == () and v.recoverable == 1


@pytest.mark.parametrize(
    ("stated", "facts", "derived"),
    [
        ("no_impact", [KEPT, LOST], "impact"),  # says fine, lists a missing fact
        ("impact", [KEPT, FOLDED], "no_impact"),  # says lost, lists nothing missing
    ],
)
def test_the_fact_list_wins_over_the_models_own_label(stated, facts, derived):
    text = answer(facts=facts, verdict=stated, explanation="my reasons")
    with FakeOpenAI(default=Reply(body=chat_body(text))) as server:
        v = fake_judge(server).judge(make_item())
    assert v.label == derived
    assert f"the model said {stated}" in v.reason and f"{derived} by the fact list" in v.reason
    assert v.reason.endswith("my reasons")
    assert len(v.losses) == (1 if derived == "impact" else 0)


FAULTS = {
    "http 500": [Reply(500, error_body("boom"))],
    "timeout": [Reply(body=chat_body(answer()), delay=1.5)],
    "body not JSON": [Reply(200, "<html>gateway</html>", content_type="text/html")],
    "verdict outside schema": [Reply(body=chat_body(answer(verdict="probably_fine")))],
    "unexpected key": [Reply(body=chat_body(answer(confidence=0.9)))],
    "missing facts": [Reply(body=chat_body('{"verdict": "impact", "explanation": "x"}'))],
    "old schema": [
        Reply(body=chat_body('{"verdict": "no_impact", "losses": [], "explanation": ""}'))
    ],
    "unknown category": [Reply(body=chat_body(answer(facts=[{**LOST, "category": "vibes"}])))],
    "unknown status": [Reply(body=chat_body(answer(facts=[{**LOST, "status": "gone?"}])))],
    "fact without quote": [Reply(body=chat_body(answer(facts=[{**LOST, "quote": " "}])))],
    "fact key missing": [
        Reply(body=chat_body(answer(facts=[{k: v for k, v in LOST.items() if k != "status"}])))
    ],
    "future_message not int": [
        Reply(body=chat_body(answer(facts=[{**LOST, "future_message": "six"}])))
    ],
    "prose": [Reply(body=chat_body("The view looks fine to me, no impact."))],
    "truncated": [Reply(body=chat_body('{"verdict": "no_impact", "loss', finish_reason="length"))],
    "refusal": [Reply(body=chat_body(None, refusal="I can't help with that."))],
    "content filter": [Reply(body=chat_body("", finish_reason="content_filter"))],
    "bad request": [Reply(400, error_body("context length exceeded"))],
    "array answer": [Reply(body=chat_body('["no_impact"]'))],
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_faults_become_unscored_never_no_impact(fault):
    script = FAULTS[fault]
    with FakeOpenAI(default=script[0]) as server:
        judge = fake_judge(server, timeout=0.3, max_retries=1)
        v = judge.judge(make_item())
        judge.close()
    assert v.label == "unscored", (fault, v)
    assert v.reason and len(v.reason) < 400
    if fault in ("http 500", "timeout"):
        assert v.reason.endswith("after 2 attempts") and v.usage.calls == 2
    if fault == "truncated":
        assert "truncated" in v.reason


@pytest.mark.parametrize(
    ("doc", "reason"),
    [
        (
            {"facts": [{**LOST, "status": "gone?"}], "verdict": "impact", "explanation": ""},
            "facts[0].status 'gone?' is not one of available, recoverable, missing",
        ),
        (
            {"facts": [{**LOST, "category": "vibes"}], "verdict": "impact", "explanation": ""},
            "facts[0].category 'vibes' is not one of evidence_detail, locator_handle,",
        ),
        (
            {"facts": [KEPT, {**LOST, "quote": "  "}], "verdict": "impact", "explanation": ""},
            "facts[1].quote is blank",
        ),
        (
            {"facts": [{**LOST, "future_message": "6"}], "verdict": "impact", "explanation": ""},
            "facts[0].future_message is not an integer",
        ),
        (
            {"facts": [{**LOST, "future_message": True}], "verdict": "impact", "explanation": ""},
            "facts[0].future_message is not an integer",
        ),
        (
            {"facts": [{k: v for k, v in LOST.items() if k != "status"}], "verdict": "impact"},
            "missing facts[0].status (and 1 more)",
        ),
        ({"facts": [], "verdict": "fine", "explanation": ""}, "verdict 'fine' is not one of"),
        ({"facts": "none", "verdict": "no_impact", "explanation": ""}, "facts is not a list"),
        ({"facts": [], "verdict": "no_impact", "explanation": "", "score": 1}, "unexpected key"),
        (["no_impact"], "answer is not an object"),
    ],
)
def test_a_malformed_answer_is_unscored_with_what_is_wrong(doc, reason):
    """Every answer outside the schema is unscored, never a pass, and the reason says why."""
    with FakeOpenAI(default=Reply(body=chat_body(json.dumps(doc)))) as server:
        v = fake_judge(server).judge(make_item())
    assert v.label == "unscored" and v.losses == ()
    assert v.reason.startswith(f"answer outside the schema: {reason}"), v.reason
    assert v.raw == json.dumps(doc) and v.usage.calls == 1  # kept for the audit, cost counted


def test_judge_over_a_server_without_structured_output():
    def plain_only(body):
        if "response_format" in body:
            return Reply(400, error_body("response_format is not supported"))
        return Reply(body=chat_body("Verdict follows. " + answer(facts=[LOST])))

    with FakeOpenAI(default=plain_only) as server:
        v = fake_judge(server).judge(make_item())
    assert v.label == "impact" and v.losses[0].anchor == "ops@example.com"


def test_cache_serves_a_second_run(tmp_path):
    with FakeOpenAI(default=Reply(body=chat_body(answer(facts=[LOST])))) as server:
        params = LLMJudgeParams(
            base_url=server.base_url, model="fake-model", cache_dir=str(tmp_path)
        )
        first = LLMJudge(params).judge(make_item())
        again = LLMJudge(params)
        second = again.judge(make_item())
    assert len(server.requests) == 1
    assert second.cache_hit and not first.cache_hit
    assert (second.label, second.losses, second.prompt_hash) == (
        first.label,
        first.losses,
        first.prompt_hash,
    )
    assert second.usage.calls == 0 and second.usage.usd == 0.0
    assert again.client.stats.http_requests == 0


def test_batch_request_and_ingest(tmp_path):
    with FakeOpenAI() as server:
        judge = fake_judge(server)
        item = make_item()
        custom_id, body = judge.request_for(item)
        assert custom_id == "s1:6|test-policy"
        assert body["response_format"]["type"] == "json_schema"
        assert (
            body["messages"]
            == render_prompt(
                item, max_prompt_tokens=judge.params.max_prompt_tokens, count=count
            ).messages
        )
        v = judge.verdict_from_body(item, chat_body(answer(facts=[LOST])))
        assert v.label == "impact" and v.losses[0].need_seq == 6
        assert v.prompt_hash == judge.client.prompt_hash(body["messages"], **judge._call_args())
        failed = judge.verdict_from_body(item, {"error": {"message": "expired"}})
        assert failed.label == "unscored" and "expired" in failed.reason
        garbage = judge.verdict_from_body(item, {"choices": []})
        assert garbage.label == "unscored"
        assert server.requests == []  # batch preparation and ingest make no calls


def test_registry_params_and_pickling():
    judge = make_judge("llm:base_url=http://127.0.0.1:1/v1,cache_dir=off,max_tokens=64")
    assert isinstance(judge, LLMJudge) and judge.concurrent
    assert judge.params.max_tokens == 64 and judge.params.base_url == "http://127.0.0.1:1/v1"
    assert "max_tokens=64" in judge.label
    assert "base_url" not in judge.label and "cache_dir" not in judge.label  # how, not what
    assert "Self-GC" in sys.modules[LLMJudge.__module__].__doc__
    clone = pickle.loads(pickle.dumps(judge))
    assert clone.params == judge.params


def test_prompt_shows_ids_patches_and_future_and_fits_the_budget():
    big = "\n".join(f"line {i}: filler text for a very long log" for i in range(4000))
    big += "\nrow R-1004 total=28.50\n" + big
    item = make_item(body=big)
    rendered = render_prompt(item, max_prompt_tokens=1300, count=count)
    assert rendered.tokens <= 1300 and rendered.shortened and not rendered.over_budget
    user = rendered.messages[1]["content"]
    assert "function:fetch:1 → fold" in user and "function:read_file:2 → prune" in user
    assert "(removed from the view, call and result)" in user
    assert "conversation:user:1" in user and "[#6] assistant" in user
    assert 'send_email {"to": "ops@example.com", "body": "28.50"}' in user  # future intact
    assert "row R-1004 total=28.50" in user  # the line the future needs survives shortening
    assert "characters not shown here" in user


# --- against the real local model -------------------------------------------------------------


@pytest.fixture(scope="session")
def local_model():
    reason = local_model_available()
    if reason:
        pytest.skip(f"local model not available: {reason}")
    with LocalModelServer(n_ctx=8192) as server:
        yield server


@pytest.mark.local_model
def test_local_model_judges_then_serves_from_cache(local_model, tmp_path):
    params = LLMJudgeParams(
        base_url=local_model.base_url,
        model=local_model.model,
        tariff="local",
        cache_dir=str(tmp_path),
        max_tokens=48,
        timeout=60,
    )
    rows = "row R-1003 total=21.50\nrow R-1004 total=28.50"
    items = [make_item(body=rows, case_id="s1:6")]  # one call: ~1.4k llama tokens, a few s
    judge = LLMJudge(params)
    first = [judge.judge(it) for it in items]
    for v in first:
        assert v.label in LABELS
        if v.label == "unscored":
            assert v.reason, v
        assert not v.cache_hit and v.prompt_hash
        assert v.usage.prompt_tokens > 0 and v.usage.completion_tokens > 0
        assert v.usage.calls >= 1 and v.usage.usd == 0.0
        # llama.cpp counts with its own tokenizer; the default budget keeps within its context
        assert v.usage.prompt_tokens < 8192
        assert isinstance(v.raw, str)
    assert judge.client.stats.http_requests >= 1
    judge.close()

    again = LLMJudge(params)
    second = [again.judge(it) for it in items]
    assert again.client.stats.http_requests == 0
    for a, b in zip(first, second, strict=True):
        assert b.cache_hit and (b.label, b.reason, b.raw) == (a.label, a.reason, a.raw)
    again.close()
