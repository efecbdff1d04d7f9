"""ModelClient against a server that misbehaves on purpose (see fake_openai.py).

Every client here gets a :class:`ManualClock`: waits (backoff, Retry-After, a paused endpoint)
are recorded and asserted, never slept on the wall clock.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from ctxreplay.llm import (
    EndpointLimiter,
    ModelCallError,
    ModelClient,
    ResponseCache,
    endpoint_limiter,
    endpoint_quirks,
    forget_endpoints,
    parse_json_answer,
    read_batch_output,
    retry_after_seconds,
    write_batch_input,
)
from ctxreplay.llm.batch import BatchFormatError
from ctxreplay.llm.retries import backoff_seconds
from ctxreplay.tariffs import load_tariff

from fake_openai import FakeOpenAI, ManualClock, Reply, chat_body, error_body

MSGS = [{"role": "user", "content": "Reply in JSON."}]
SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string"}},
    "required": ["verdict"],
    "additionalProperties": False,
}
KEY_ENV = "CTXREPLAY_TEST_API_KEY"


@pytest.fixture(autouse=True)
def _fresh_endpoints():
    forget_endpoints()
    yield
    forget_endpoints()


@pytest.fixture
def server():
    with FakeOpenAI() as s:
        yield s


def make_client(server: FakeOpenAI, clock: ManualClock | None = None, **kw) -> ModelClient:
    clock = clock or ManualClock()
    kw.setdefault("timeout", 5)
    return ModelClient(
        server.base_url,
        "fake-model",
        api_key_env=KEY_ENV,
        sleep=clock.sleep,
        clock=clock.now,
        **kw,
    )


# --- a normal call ----------------------------------------------------------------------------


def test_success_records_usage_cost_and_what_was_sent(server):
    server.default = Reply(body=chat_body('{"verdict": "impact"}', usage=(1000, 200, 400)))
    client = make_client(server, tariff="gpt-4.1")
    c = client.complete(MSGS, schema=SCHEMA, max_tokens=64, seed=7)
    assert c.parsed == {"verdict": "impact"}
    assert (c.usage.prompt_tokens, c.usage.completion_tokens, c.usage.cached_tokens) == (
        1000,
        200,
        400,
    )
    assert c.usd == pytest.approx(load_tariff("gpt-4.1").cost(1000, 400, 200))
    assert c.attempts == 1 and not c.cache_hit and len(c.prompt_hash) == 64
    sent = server.requests[0]
    assert sent["temperature"] == 0.0 and sent["seed"] == 7 and sent["max_tokens"] == 64
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["strict"] is True
    assert c.params_sent == sent
    assert c.response_format == "json_schema"


def test_unknown_model_has_unknown_cost_not_zero(server):
    c = make_client(server).complete(MSGS, max_tokens=8)
    assert c.usd is None
    assert c.parsed is None  # no structured output asked: the text is not parsed


def test_tool_calls_are_returned_for_planners(server):
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "context_apply", "arguments": '{"ids": ["r1"], "note": "x"}'},
    }
    server.default = Reply(body=chat_body(None, tool_calls=[call], finish_reason="tool_calls"))
    tools = [{"type": "function", "function": {"name": "context_apply", "parameters": {}}}]
    c = make_client(server).complete(MSGS, tools=tools, tool_choice="auto", max_tokens=32)
    assert c.tool_calls[0].name == "context_apply"
    assert c.tool_calls[0].arguments_object() == {"ids": ["r1"], "note": "x"}
    assert c.finish_reason == "tool_calls"
    assert server.requests[0]["tools"] == tools and server.requests[0]["tool_choice"] == "auto"
    assert c.as_message()["tool_calls"][0]["function"]["name"] == "context_apply"


# --- retries ----------------------------------------------------------------------------------


def test_429_waits_retry_after_seconds_then_succeeds(server):
    server.script = [Reply(429, error_body("slow down"), headers={"Retry-After": "7"})]
    clock = ManualClock()
    t0 = time.monotonic()
    c = make_client(server, clock).complete(MSGS, max_tokens=8)
    assert clock.sleeps == [7.0]  # exactly what the server asked, once (the limiter's pause too)
    assert time.monotonic() - t0 < 5  # and never on the wall clock
    assert c.attempts == 2 and len(server.requests) == 2


def test_429_honours_retry_after_ms(server):
    server.script = [Reply(429, error_body("slow down"), headers={"retry-after-ms": "300"})]
    clock = ManualClock()
    c = make_client(server, clock).complete(MSGS, max_tokens=8)
    assert clock.sleeps == [0.3]
    assert c.attempts == 2


def test_503_honours_a_retry_after_http_date(server):
    """The client reads a date (the seconds to it are ``test_retry_after_parsing``'s, against a
    fixed now): one an hour ahead makes it wait its longest, whatever this machine's speed;
    a date it could not read would leave it to a backoff of a second or so."""
    when = datetime.now(UTC) + timedelta(hours=1)
    server.script = [
        Reply(503, error_body("busy"), headers={"Retry-After": format_datetime(when, usegmt=True)})
    ]
    clock = ManualClock()
    c = make_client(server, clock, max_retry_wait=90).complete(MSGS, max_tokens=8)
    assert clock.sleeps == [90.0]
    assert c.attempts == 2


def test_retry_after_is_honoured_up_to_max_retry_wait(server):
    server.script = [Reply(429, error_body("come back later"), headers={"Retry-After": "3600"})]
    clock = ManualClock()
    make_client(server, clock, max_retry_wait=90).complete(MSGS, max_tokens=8)
    assert clock.sleeps == [90.0]


def test_without_retry_after_the_waits_are_capped_exponential_backoff(server):
    server.default = Reply(500, error_body("boom"))
    clock = ManualClock()
    client = make_client(server, clock, max_retries=3, backoff_base=0.5, backoff_cap=1.5)
    with pytest.raises(ModelCallError) as e:
        client.complete(MSGS, max_tokens=8)
    key = e.value.prompt_hash
    assert clock.sleeps == [backoff_seconds(n, 0.5, 1.5, key) for n in (1, 2, 3)]
    for wait, step in zip(clock.sleeps, (0.5, 1.0, 1.5), strict=True):
        assert step / 2 <= wait <= step  # jitter: half to all of the step, the same every run


def test_a_429_pauses_the_endpoint_for_every_client(server):
    server.script = [Reply(429, error_body("slow down"), headers={"retry-after": "2"})]
    clock = ManualClock()
    first = make_client(server, clock, max_retries=0)
    with pytest.raises(ModelCallError, match="http 429 after 1 attempt"):
        first.complete(MSGS, max_tokens=8)
    assert clock.sleeps == []  # no retry left: nothing to wait for
    second = make_client(server, clock)
    second.complete([{"role": "user", "content": "other"}], max_tokens=8)
    assert clock.sleeps == [2.0]  # the next call waited out the endpoint's pause first


NOW = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        (
            {"retry-after": format_datetime(NOW + timedelta(seconds=30), usegmt=True)},
            30.0,
        ),  # HTTP-date
        ({"retry-after": "2.5"}, 2.5),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),  # the finer header wins
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_parsing(headers, wait):
    parsed = retry_after_seconds(headers, now=NOW)
    assert parsed == (pytest.approx(wait) if wait is not None else None)


def test_500_is_retried_then_fails_with_a_short_reason(server):
    server.default = Reply(500, error_body("boom"))
    clock = ManualClock()
    client = make_client(server, clock, max_retries=2)
    with pytest.raises(ModelCallError) as e:
        client.complete(MSGS, max_tokens=8)
    assert e.value.reason == "http 500 after 3 attempts"
    assert e.value.attempts == 3 and len(server.requests) == 3
    assert client.stats.errors == 1 and len(clock.sleeps) == 2


def test_500_then_success(server):
    server.script = [Reply(503, "upstream down"), Reply(502, "bad gateway")]
    c = make_client(server, max_retries=3).complete(MSGS, max_tokens=8)
    assert c.attempts == 3 and c.text == "ok"


def test_timeout_is_retried_then_fails(server):
    server.default = Reply(body=chat_body(), delay=2.0)
    client = make_client(server, timeout=0.3, max_retries=1)
    with pytest.raises(ModelCallError) as e:
        client.complete(MSGS, max_tokens=8)
    assert e.value.reason == "timeout after 2 attempts"
    assert len(server.requests) == 2  # gave up on each slow answer instead of waiting for it


def test_connection_refused_is_retried_then_fails():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    clock = ManualClock()
    client = ModelClient(
        f"http://127.0.0.1:{port}/v1",
        "m",
        max_retries=1,
        timeout=2,
        sleep=clock.sleep,
        clock=clock.now,
    )
    with pytest.raises(ModelCallError) as e:
        client.complete(MSGS, max_tokens=8)
    assert e.value.reason == "connection error after 2 attempts" and len(clock.sleeps) == 1


def test_body_that_is_not_json(server):
    server.default = Reply(200, "<html>proxy error</html>", content_type="text/html")
    with pytest.raises(ModelCallError) as e:
        make_client(server).complete(MSGS, max_tokens=8)
    assert e.value.reason == "bad response: body is not JSON"
    assert len(server.requests) == 1


def test_json_body_that_is_not_a_completion(server):
    server.default = Reply(200, {"object": "chat.completion", "choices": []})
    with pytest.raises(ModelCallError, match="bad response: no choices"):
        make_client(server).complete(MSGS, max_tokens=8)


def test_other_400_is_not_retried(server):
    server.default = Reply(400, error_body("messages: invalid role 'robot'"))
    with pytest.raises(ModelCallError) as e:
        make_client(server).complete(MSGS, max_tokens=8)
    assert e.value.reason.startswith("http 400: messages: invalid role")
    assert len(server.requests) == 1


# --- structured output fallbacks --------------------------------------------------------------


def refuse_structured(body):
    kind = (body.get("response_format") or {}).get("type")
    if kind == "json_schema":
        return Reply(400, error_body("response_format of type json_schema is not supported"))
    if kind == "json_object":
        return Reply(400, error_body("'response_format' of type 'json_object' is not supported"))
    text = 'Sure. {"draft": 1} Final answer: {"verdict": "impact", "note": {"x": "}"}} Thanks!'
    return Reply(body=chat_body(text))


def test_json_schema_falls_back_to_json_object_then_text(server):
    server.default = refuse_structured
    client = make_client(server)
    c = client.complete(MSGS, schema=SCHEMA, max_tokens=64)
    assert server.formats() == ["json_schema", "json_object", None]
    assert c.response_format == "text" and "response_format" not in c.params_sent
    assert c.parsed == {"verdict": "impact", "note": {"x": "}"}}  # the last balanced object
    assert c.attempts == 3
    # remembered per endpoint: the next request goes straight to plain text
    client.complete([{"role": "user", "content": "again, JSON"}], schema=SCHEMA, max_tokens=64)
    assert server.formats()[3:] == [None]
    assert endpoint_quirks(server.base_url, "fake-model").format_floor == 2


def test_422_about_json_schema_steps_down_once(server):
    server.script = [Reply(422, error_body("json_schema: unsupported schema keyword"))]
    server.default = Reply(body=chat_body('{"verdict": "no_impact"}'))
    c = make_client(server).complete(MSGS, schema=SCHEMA, max_tokens=64)
    assert server.formats() == ["json_schema", "json_object"]
    assert c.response_format == "json_object" and c.parsed == {"verdict": "no_impact"}


def test_rejected_seed_is_dropped_and_remembered(server):
    def no_seed(body):
        if "seed" in body:
            return Reply(400, error_body("Unsupported parameter: 'seed'"))
        return Reply(body=chat_body("fine"))

    server.default = no_seed
    client = make_client(server)
    c = client.complete(MSGS, max_tokens=8, seed=3)
    assert "seed" not in c.params_sent and c.params_sent["temperature"] == 0.0
    assert [("seed" in r) for r in server.requests] == [True, False]
    client.complete([{"role": "user", "content": "two"}], max_tokens=8, seed=3)
    assert "seed" not in server.requests[-1] and len(server.requests) == 3


def test_max_tokens_renamed_when_the_endpoint_asks(server):
    def modern(body):
        if "max_tokens" in body:
            return Reply(
                400,
                error_body(
                    "Unsupported parameter: 'max_tokens' is not supported with this model. "
                    "Use 'max_completion_tokens' instead."
                ),
            )
        return Reply(body=chat_body("fine"))

    server.default = modern
    c = make_client(server).complete(MSGS, max_tokens=8)
    assert c.params_sent["max_completion_tokens"] == 8 and "max_tokens" not in c.params_sent


def test_parse_json_answer_last_match():
    assert parse_json_answer('{"a": 1}') == ({"a": 1}, None)
    assert parse_json_answer('```json\n{"a": 1}\n```') == ({"a": 1}, None)
    assert parse_json_answer('x {"a": 1} y {"b": "}{"} z')[0] == {"b": "}{"}
    assert parse_json_answer('{not json} then {"ok": true}')[0] == {"ok": True}
    assert parse_json_answer("no json here") == (None, "no JSON object in the answer")
    assert parse_json_answer('{"a": "cut') == (None, "unterminated JSON object")
    assert parse_json_answer("") == (None, "empty answer")


# --- the concurrency limit --------------------------------------------------------------------


def _burst(clients, n):
    errors = []

    def one(i):
        try:
            clients[i % len(clients)].complete([{"role": "user", "content": f"q{i}"}], max_tokens=8)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_never_more_than_concurrency_in_flight(server):
    server.default = Reply(body=chat_body(), delay=0.15)
    _burst([make_client(server, concurrency=2)], 8)
    assert server.max_in_flight == 2


def test_limit_is_shared_by_clients_of_the_same_endpoint(server):
    server.default = Reply(body=chat_body(), delay=0.1)
    clients = [make_client(server, concurrency=3), make_client(server, concurrency=3)]
    _burst(clients, 12)
    assert server.max_in_flight <= 3
    assert clients[0].limiter is clients[1].limiter


def test_a_paused_limiter_waits_with_the_injected_sleep():
    clock = ManualClock()
    lim = EndpointLimiter(4)
    lim.on_rate_limited(2.5, clock.now)
    assert lim.limit == 2
    lim.acquire(clock.now, clock.sleep)
    assert clock.sleeps == [2.5] and lim.in_flight == 1
    lim.release()
    lim.acquire(clock.now, clock.sleep)  # the pause is over
    assert clock.sleeps == [2.5]


def test_limiter_halves_on_429_and_recovers():
    lim = EndpointLimiter(8, recover_after=2)
    for expected in (4, 2, 1, 1):
        lim.on_rate_limited(0)
        assert lim.limit == expected
    for _ in range(2):
        lim.on_success()
    assert lim.limit == 2
    for _ in range(40):
        lim.on_success()
    assert lim.limit == 8


def test_429_backs_off_the_endpoint_limit(server):
    server.script = [Reply(429, error_body("rate"), headers={"retry-after-ms": "20"})]
    server.default = Reply(body=chat_body(), delay=0.1)
    client = make_client(server, concurrency=4)
    client.complete(MSGS, max_tokens=8)
    limiter = endpoint_limiter(server.base_url)
    assert limiter.rate_limited == 1 and limiter.limit == 2
    server.max_in_flight = 0
    _burst([client], 8)
    assert server.max_in_flight <= 3  # 2, plus at most one step of recovery


# --- the cache --------------------------------------------------------------------------------


def test_second_identical_call_is_served_from_cache(server, tmp_path):
    server.default = Reply(body=chat_body('{"verdict": "impact"}'))
    client = make_client(server, cache_dir=tmp_path)
    first = client.complete(MSGS, schema=SCHEMA, max_tokens=32)
    second = client.complete(MSGS, schema=SCHEMA, max_tokens=32)
    assert len(server.requests) == 1
    assert second.cache_hit and second.attempts == 0 and not first.cache_hit
    assert second.parsed == first.parsed and second.prompt_hash == first.prompt_hash
    assert second.params_sent == first.params_sent
    # persists across clients and processes: a fresh client hits too
    third = make_client(server, cache_dir=tmp_path).complete(MSGS, schema=SCHEMA, max_tokens=32)
    assert third.cache_hit and len(server.requests) == 1
    # anything that changes the request is a different entry
    make_client(server, cache_dir=tmp_path).complete(MSGS, schema=SCHEMA, max_tokens=33)
    assert len(server.requests) == 2


def test_errors_are_never_cached(server, tmp_path):
    server.script = [Reply(500, error_body("boom"))]
    client = make_client(server, cache_dir=tmp_path, max_retries=0)
    with pytest.raises(ModelCallError):
        client.complete(MSGS, max_tokens=8)
    assert len(ResponseCache(tmp_path)) == 0
    c = client.complete(MSGS, max_tokens=8)
    assert not c.cache_hit and len(server.requests) == 2
    assert client.complete(MSGS, max_tokens=8).cache_hit and len(server.requests) == 2


def test_cache_writes_are_atomic_and_corrupt_entries_are_misses(server, tmp_path):
    client = make_client(server, cache_dir=tmp_path)
    c = client.complete(MSGS, max_tokens=8)
    cache = ResponseCache(tmp_path)
    assert not list(tmp_path.rglob("*.tmp"))
    path = cache.path(c.prompt_hash)
    path.write_text('{"key": "', encoding="utf-8")  # what a torn write would look like
    assert cache.get(c.prompt_hash) is None
    again = client.complete(MSGS, max_tokens=8)
    assert not again.cache_hit and len(server.requests) == 2
    assert cache.get(c.prompt_hash) is not None


def test_cache_is_safe_under_concurrent_writers(tmp_path):
    cache = ResponseCache(tmp_path)
    record = {"text": "x" * 10_000}

    def write():
        for _ in range(20):
            cache.put("ab" * 32, record)
            assert cache.get("ab" * 32) in (None, record)

    threads = [threading.Thread(target=write) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert cache.get("ab" * 32) == record
    assert not list(tmp_path.rglob("*.tmp"))


def test_api_key_is_used_but_never_written(server, tmp_path, monkeypatch):
    secret = "sk-test-SECRET-0123456789abcdef"
    monkeypatch.setenv(KEY_ENV, secret)
    client = make_client(server, cache_dir=tmp_path)
    c = client.complete(MSGS, max_tokens=8)
    assert server.authorizations[-1] == f"Bearer {secret}"
    assert secret not in json.dumps(c.to_record())
    assert secret not in json.dumps(client.describe()) and secret not in repr(client)
    for f in tmp_path.rglob("*"):
        if f.is_file():
            assert secret not in f.read_text(encoding="utf-8")
    server.default = Reply(401, error_body(f"Incorrect API key provided: {secret}."))
    with pytest.raises(ModelCallError) as e:
        client.complete([{"role": "user", "content": "other"}], max_tokens=8)
    assert secret not in e.value.reason and "[redacted]" in e.value.reason


def test_missing_key_sends_a_dummy_for_local_servers(server, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    make_client(server).complete(MSGS, max_tokens=8)
    assert server.authorizations[-1].startswith("Bearer ")


# --- Batch API files --------------------------------------------------------------------------


def test_batch_input_and_output_files(tmp_path, server):
    client = make_client(server)
    body = client.request_body(MSGS, schema=SCHEMA, max_tokens=16)
    n = write_batch_input([("a", body), ("b", body)], tmp_path / "in.jsonl")
    lines = [json.loads(x) for x in (tmp_path / "in.jsonl").read_text().splitlines()]
    assert n == 2 and lines[0] == {
        "custom_id": "a",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": body,
    }
    assert body["response_format"]["type"] == "json_schema" and body["seed"] == 0
    with pytest.raises(BatchFormatError, match="duplicate"):
        write_batch_input([("a", body), ("a", body)], tmp_path / "dup.jsonl")

    out = tmp_path / "out.jsonl"
    err = tmp_path / "err.jsonl"
    ok = chat_body('{"verdict": "impact"}')
    out.write_text(
        json.dumps(
            {
                "id": "r1",
                "custom_id": "a",
                "response": {"status_code": 200, "body": ok},
                "error": None,
            }
        )
        + "\n"
        + json.dumps(
            {
                "id": "r2",
                "custom_id": "b",
                "response": {"status_code": 400, "body": error_body("bad schema", "invalid")},
                "error": None,
            }
        )
        + "\n\n"
    )
    err.write_text(
        json.dumps(
            {
                "id": "r3",
                "custom_id": "c",
                "response": None,
                "error": {"code": "expired", "message": "batch expired"},
            }
        )
        + "\n"
    )
    results = read_batch_output(out, err)
    assert results["a"] == ok
    assert results["b"]["error"]["message"] == "bad schema"
    assert results["b"]["error"]["status_code"] == 400
    assert results["c"]["error"] == {
        "code": "expired",
        "message": "batch expired",
        "status_code": None,
    }
    c = client.completion_from_body(results["a"], request_body=body)
    assert c.parsed == {"verdict": "impact"}
    (tmp_path / "bad.jsonl").write_text("not json\n")
    with pytest.raises(BatchFormatError, match=r"bad\.jsonl:1"):
        read_batch_output(tmp_path / "bad.jsonl")
