"""Identical requests in flight are coalesced: each distinct prompt is sent (and paid) once.

The issue's case: in an uninterrupted run, 19 identical prompts were sent concurrently before
the first answer was cached, 37 extra paid requests out of 383.
"""

from __future__ import annotations

import json
import random
import threading
from collections import Counter
from pathlib import Path

import pytest

from ctxreplay.llm import ModelCallError, ModelClient
from ctxreplay.llm.client import _flights

from fake_openai import FakeOpenAI, Reply, chat_body

pytestmark = pytest.mark.usefixtures("fresh_endpoints")


def ask_all(client: ModelClient, prompts: list[str]) -> list[object]:
    """Every prompt asked from its own thread, all released at once."""
    barrier = threading.Barrier(len(prompts))
    out: list[object] = [None] * len(prompts)

    def ask(i: int) -> None:
        barrier.wait()
        try:
            out[i] = client.complete([{"role": "user", "content": prompts[i]}], max_tokens=8)
        except Exception as e:  # kept to be looked at
            out[i] = e

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(prompts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return out


def prompts_sent(server: FakeOpenAI) -> Counter[str]:
    return Counter(r["messages"][0]["content"] for r in server.requests)


@pytest.mark.parametrize("cache", [True, False])
def test_the_same_prompt_from_many_threads_is_sent_once(tmp_path: Path, cache: bool) -> None:
    with FakeOpenAI(default=Reply(body=chat_body("shared answer"), delay=0.3)) as server:
        client = ModelClient(
            server.base_url,
            "fake",
            concurrency=16,
            cache_dir=tmp_path / "cache" if cache else None,
            tariff="gpt-4o-mini",
        )
        answers = ask_all(client, ["the same prompt"] * 12)
    assert len(server.requests) == 1
    assert all(getattr(a, "text", None) == "shared answer" for a in answers), answers
    paid = [a for a in answers if not a.cache_hit]  # type: ignore[attr-defined]
    assert len(paid) == 1 and paid[0].attempts == 1  # type: ignore[attr-defined]
    others = [a for a in answers if a.cache_hit]  # type: ignore[attr-defined]
    assert len(others) == 11 and all(a.attempts == 0 for a in others)  # type: ignore[attr-defined]
    assert client.stats.http_requests == 1 and client.stats.calls == 12
    assert not _flights  # nothing left in flight


def test_distinct_prompts_are_sent_once_each(tmp_path: Path) -> None:
    prompts = [f"prompt {i}" for i in range(8)] * 4
    random.Random(1).shuffle(prompts)
    with FakeOpenAI(default=lambda body: Reply(body=chat_body("a"), delay=0.2)) as server:
        client = ModelClient(server.base_url, "fake", concurrency=32, cache_dir=tmp_path / "c")
        answers = ask_all(client, prompts)
    assert all(getattr(a, "text", None) == "a" for a in answers)
    assert prompts_sent(server) == Counter({f"prompt {i}": 1 for i in range(8)})


def test_a_failure_in_flight_is_shared_not_repeated(tmp_path: Path) -> None:
    with FakeOpenAI(default=Reply(status=503, body={"error": {"message": "busy"}}, delay=0.3)) as s:
        client = ModelClient(s.base_url, "fake", max_retries=0, cache_dir=tmp_path / "c")
        answers = ask_all(client, ["p"] * 6)
    assert len(s.requests) == 1
    assert all(
        isinstance(a, ModelCallError) and a.reason == "http 503 after 1 attempt" for a in answers
    )
    assert sum(a.attempts for a in answers) == 1  # type: ignore[attr-defined]
    # errors are not cached: the next ask is a new request
    with FakeOpenAI(default=Reply(body=chat_body("ok"))) as s2:
        client = ModelClient(s2.base_url, "fake", cache_dir=tmp_path / "c")
        assert client.complete([{"role": "user", "content": "p"}], max_tokens=8).text == "ok"


def test_the_llm_judge_pays_each_distinct_prompt_once(synth_corpus, synth_cases, tmp_path) -> None:
    """Two policies that leave many views identical (noop, and tool-prune keeping more pairs than
    most prefixes hold) give identical judge prompts, asked concurrently: one request each."""
    from ctxreplay.engines.judge import run_judge
    from ctxreplay.engines.replay import run_replay
    from ctxreplay.runs import read_verdicts

    run = tmp_path / "run"
    run_replay(
        synth_corpus,
        synth_cases,
        ["noop", "tool-prune:keep=50"],
        run,
        workers=1,
        progress=False,
    )
    answer = json.dumps({"facts": [], "verdict": "no_impact", "explanation": "nothing lost"})
    with FakeOpenAI(default=Reply(body=chat_body(answer), delay=0.05)) as server:
        summary = run_judge(
            run,
            "llm",
            overrides={"base_url": server.base_url, "model": "fake", "concurrency": "16"},
            progress=False,
        )
    verdicts = read_verdicts(run, "llm")
    distinct = verdicts["prompt_hash"].n_unique()
    assert verdicts.height == summary.judged > distinct  # some prompts repeat
    sent = Counter(json.dumps(r, sort_keys=True) for r in server.requests)
    assert len(server.requests) == len(sent) == distinct  # 0 extra requests
    assert summary.calls == distinct
