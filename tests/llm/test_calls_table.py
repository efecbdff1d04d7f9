"""The run's ``calls`` table: one row per model call, written as Parquet parts under RUN/calls/."""

from __future__ import annotations

import multiprocessing
import threading

import pyarrow.parquet as pq
import pytest

from ctxreplay.llm import CallLog, ModelCallError, ModelClient, forget_endpoints
from ctxreplay.llm.calls import CallSource, safe_endpoint
from ctxreplay.llm.completion import Completion, TokenUsage
from ctxreplay.schema import CALLS
from ctxreplay.sqlview import connect_folder

from fake_openai import FakeOpenAI, ManualClock, Reply, chat_body, error_body

MSGS = [{"role": "user", "content": "Reply in JSON."}]
KEY_ENV = "CTXREPLAY_TEST_CALLS_KEY"
SECRET = "sk-calls-SECRET-0123456789abcdef"


@pytest.fixture(autouse=True)
def _fresh_endpoints():
    forget_endpoints()
    yield
    forget_endpoints()


def make_client(server: FakeOpenAI, run, **kw) -> ModelClient:
    clock = ManualClock()
    return ModelClient(
        server.base_url,
        "fake-model",
        api_key_env=KEY_ENV,
        run_dir=run,
        caller=kw.pop("caller", "llm:max_tokens=64"),
        sleep=clock.sleep,
        clock=clock.now,
        timeout=5,
        **kw,
    )


def calls(run) -> list[dict]:
    con = connect_folder(run)
    return con.sql("select * from calls order by finished_at, status").pl().to_dicts()


def test_success_failure_and_cache_hit_each_give_one_row(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    run = tmp_path / "run"
    with FakeOpenAI() as server:
        base_url = server.base_url
        server.script = [Reply(body=chat_body("ok", usage=(1000, 200, 0)))]
        server.default = Reply(500, error_body(f"boom, key {SECRET}"))
        client = make_client(server, run, cache_dir=tmp_path / "cache", max_retries=2)
        first = client.complete(MSGS, max_tokens=64)  # ok
        again = client.complete(MSGS, max_tokens=64)  # served from the cache
        with pytest.raises(ModelCallError) as failed:
            client.complete([{"role": "user", "content": "other"}], max_tokens=64)
        assert len(server.requests) == 4  # 1 + 3 attempts of the failing call
        assert not (run / "calls").exists()  # buffered until the client closes
        client.close()
    rows = {r["status"]: r for r in calls(run)}
    assert sorted(rows) == ["cached", "error", "ok"]
    ok, hit, err = rows["ok"], rows["cached"], rows["error"]
    assert ok["request_hash"] == hit["request_hash"] == first.prompt_hash == again.prompt_hash
    assert (ok["attempts"], ok["prompt_tokens"], ok["completion_tokens"]) == (1, 1000, 200)
    assert ok["cache_hit"] is False and ok["error"] is None
    assert ok["usd"] is None  # no tariff for fake-model: unknown, not zero
    assert hit["cache_hit"] is True and hit["attempts"] == 0 and hit["usd"] == 0.0
    assert hit["prompt_tokens"] == 1000  # what the answer took, though nothing was spent now
    assert err["error"] == "http 500 after 3 attempts" == failed.value.reason
    assert err["attempts"] == 3 and err["request_hash"] == failed.value.prompt_hash
    assert err["prompt_tokens"] == 0 and err["usd"] is None
    for r in rows.values():
        assert r["caller"] == "llm:max_tokens=64" and r["model"] == "fake-model"
        assert r["endpoint"] == base_url and r["latency_s"] >= 0 and r["finished_at"]
    con = connect_folder(run)
    assert sorted(con.sql("SELECT status, count(*) FROM calls GROUP BY 1").fetchall()) == [
        ("cached", 1),
        ("error", 1),
        ("ok", 1),
    ]
    for part in (run / "calls").glob("*.parquet"):
        assert pq.read_schema(part).remove_metadata() == CALLS
        assert SECRET.encode() not in part.read_bytes()


def test_a_refused_key_is_never_written(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    run = tmp_path / "run"
    with FakeOpenAI(default=Reply(401, error_body(f"Incorrect API key provided: {SECRET}."))) as s:
        client = make_client(s, run)
        with pytest.raises(ModelCallError):
            client.complete(MSGS, max_tokens=8)
        client.close()
    [row] = calls(run)
    assert row["status"] == "error" and "[redacted]" in row["error"]
    assert SECRET not in str(row)
    assert not any(SECRET.encode() in p.read_bytes() for p in run.rglob("*") if p.is_file())


def test_the_endpoint_is_written_without_credentials():
    url = "https://user:sk-secret-123456@api.example.com:8443/v1?api-key=sk-secret-123456"
    assert safe_endpoint(url) == "https://api.example.com:8443/v1"


def _row(n: int, source: CallSource) -> dict:
    c = Completion("x", (), "stop", TokenUsage(n, 1), 0.0, False, f"{n:064x}", {}, 1)
    return source.row(f"{n:064x}", "ok", 0.1, c)


def test_threads_append_safely_and_flush_in_parts(tmp_path):
    log = CallLog(tmp_path, flush_rows=7)
    source = CallSource("self-gc:planner=llm", "http://x/v1", "m")

    def work(k: int) -> None:
        for i in range(50):
            log.add(_row(k * 1000 + i, source))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    log.close()
    parts = sorted((tmp_path / "calls").glob("*.parquet"))
    assert len(parts) > 8 and not list((tmp_path / "calls").glob("*.tmp"))
    tokens = connect_folder(tmp_path).sql("select prompt_tokens from calls").fetchall()
    assert sorted(t for (t,) in tokens) == sorted(k * 1000 + i for k in range(8) for i in range(50))


def test_a_log_flushes_when_its_time_is_up(tmp_path):
    log = CallLog(tmp_path, flush_rows=1000, flush_seconds=0.0)
    log.add(_row(1, CallSource("llm", "http://x/v1", "m")))
    assert len(list((tmp_path / "calls").glob("*.parquet"))) == 1  # no close needed


def _write_from_a_process(run: str, k: int) -> None:
    log = CallLog(run, flush_rows=3)
    for i in range(10):
        log.add(_row(k * 100 + i, CallSource(f"worker-{k}", "http://x/v1", "m")))
    log.close()


def test_worker_processes_write_their_own_parts(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_write_from_a_process, args=(str(tmp_path), k)) for k in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    con = connect_folder(tmp_path)
    counts = con.sql("select caller, count(*) from calls group by 1 order by 1").fetchall()
    assert counts == [("worker-0", 10), ("worker-1", 10), ("worker-2", 10)]
