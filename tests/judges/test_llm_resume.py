"""A judge run killed half way resumes with one verdict per pair and no repeated model call."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import polars as pl

from ctxreplay.engines.judge import run_judge
from ctxreplay.engines.replay import run_replay
from ctxreplay.runs import read_verdicts
from ctxreplay.sqlview import connect_folder

from fake_openai import FakeOpenAI, Reply, chat_body

ANSWER = json.dumps(
    {"facts": [], "verdict": "no_impact", "explanation": "all anchors still visible"}
)


def test_killed_judge_run_resumes_without_paying_twice(synth_corpus, synth_cases, tmp_path) -> None:
    run = tmp_path / "run"
    summary = run_replay(
        synth_corpus, synth_cases, ["noop", "tool-prune"], run, workers=1, progress=False
    )
    pairs = summary.cases * 2
    stop_after = pairs // 2
    answered: list[str] = []
    calls = 0
    blocked = threading.Event()
    release = threading.Event()
    lock = threading.Lock()

    def reply(body: dict) -> Reply:
        nonlocal calls
        with lock:
            calls += 1
            n = calls
        if n == stop_after + 1 and not release.is_set():  # the first run is killed while this waits
            blocked.set()
            release.wait(30)
            return Reply(status=500, body={"error": {"message": "gone"}})
        with lock:
            answered.append(json.dumps(body, sort_keys=True))
        return Reply(body=chat_body(ANSWER))

    with FakeOpenAI(default=reply) as server:
        cmd = [
            sys.executable,
            "-c",
            "from ctxreplay.cli import main; main()",
            "judge",
            str(run),
            "--judge",
            "llm",
            "--base-url",
            server.base_url,
            "--model",
            "fake",
            "--concurrency",
            "1",
            "--quiet",
        ]
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "OPENAI_API_KEY": "sk-test"},
        )
        assert blocked.wait(120), proc.communicate(timeout=5)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        release.set()
        first = read_verdicts(run, "llm").height
        assert first < pairs  # it really was stopped half way
        time.sleep(0.1)
        done = run_judge(
            run,
            "llm",
            overrides={"base_url": server.base_url, "model": "fake", "concurrency": "1"},
            progress=False,
        )
    verdicts = read_verdicts(run, "llm")
    assert verdicts.height == pairs
    assert verdicts.select("policy", "case_id").is_duplicated().sum() == 0
    assert (verdicts["label"] == "no_impact").all()
    # every answered model call was asked once (identical prompts, e.g. two policies leaving the
    # same view, share one call): what the killed run paid for came back from the cache
    assert len(answered) == len(set(answered)) == verdicts["prompt_hash"].n_unique()
    assert done.judged == pairs - first
    assert verdicts.filter(pl.col("cache_hit")).height >= stop_after - first > 0
    # the resumed run's calls are rows of the run's calls table (the killed one's may be lost)
    counts = dict(
        connect_folder(run).sql("SELECT status, count(*) FROM calls GROUP BY 1").fetchall()
    )
    assert set(counts) <= {"ok", "cached", "error"}
    assert counts.get("ok", 0) + counts.get("cached", 0) >= done.judged
    assert counts.get("cached", 0) >= stop_after - first
