"""``judge --retry-unscored`` asks again the pairs a transient model failure left unscored (never
those the model answered), replacing their rows; the summary says how many there are.

The issue's case: a call that ran out of retries was stored ``unscored`` and never retried by a
re-run.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from ctxreplay.cli import main
from ctxreplay.engines.judge import run_judge
from ctxreplay.engines.replay import run_replay
from ctxreplay.llm.completion import is_transient
from ctxreplay.runs import read_verdicts

from fake_openai import FakeOpenAI, Reply, chat_body

pytestmark = pytest.mark.usefixtures("fresh_endpoints")

GOOD = json.dumps({"facts": [], "verdict": "no_impact", "explanation": "nothing lost"})


def kind(body: dict) -> int:
    """Which way the first run's server fails a prompt (stable across runs)."""
    text = json.dumps(body["messages"], sort_keys=True)
    return int(hashlib.sha256(text.encode()).hexdigest(), 16) % 5


def flaky(body: dict) -> Reply:
    k = kind(body)
    if k == 0:
        return Reply(status=503, body={"error": {"message": "overloaded"}})
    if k == 1:
        return Reply(status=429, body={"error": {"message": "slow down"}})
    if k == 2:
        return Reply(body=chat_body("this is not JSON"))  # answered: never asked again
    if k == 3:
        return Reply(status=400, body={"error": {"message": "bad request"}})  # not transient
    return Reply(body=chat_body(GOOD))


@pytest.mark.parametrize(
    ("reason", "transient"),
    [
        ("model call failed: http 503 after 4 attempts", True),
        ("model call failed: http 429 after 1 attempt", True),
        ("model call failed: timeout after 2 attempts", True),
        ("model call failed: connection error after 3 attempts", True),
        ("http 500 after 3 attempts", True),
        ("model call failed: http 400: bad request", False),
        ("model call failed: bad response: body is not JSON", False),
        ("unparseable answer: no JSON object found", False),
        ("answer outside the schema: facts[0].status 'gone' is not one of …", False),
        ("prompt over budget: 9,000 tokens > 8,000", False),
        ("archived payload damaged: payload sha256:ab is corrupt", False),
        ("judge error: KeyError: 'x'", False),
        (None, False),
    ],
)
def test_which_reasons_are_transient(reason, transient) -> None:
    assert is_transient(reason) is transient


@pytest.fixture
def judged(synth_corpus, synth_cases, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    run = tmp_path / "run"
    run_replay(synth_corpus, synth_cases, ["tool-prune:keep=1"], run, workers=1, progress=False)
    with FakeOpenAI(default=flaky) as server:
        overrides = {
            "base_url": server.base_url,
            "model": "fake",
            "max_retries": "0",
            "concurrency": "4",
        }
        summary = run_judge(run, "llm", overrides=overrides, progress=False)
    verdicts = read_verdicts(run, "llm")
    assert summary.judged == verdicts.height
    retryable = verdicts.filter(pl.col("retryable"))
    assert retryable.height == summary.retryable > 0
    assert (retryable["label"] == "unscored").all()
    assert set(retryable["unscored_reason"]) <= {
        "model call failed: http 503 after 1 attempt",
        "model call failed: http 429 after 1 attempt",
    }
    assert (
        f"{summary.retryable} unscored after transient failures: re-run with --retry-unscored"
        in summary.render()
    )
    return run, overrides


def test_a_plain_rerun_asks_nothing_again_but_says_how_many_could_be(judged) -> None:
    run, overrides = judged
    with FakeOpenAI(default=Reply(body=chat_body(GOOD))) as server:
        summary = run_judge(
            run, "llm", overrides={**overrides, "base_url": server.base_url}, progress=False
        )
    assert summary.judged == 0 and not server.requests
    assert summary.retryable == read_verdicts(run, "llm")["retryable"].sum()


def test_retry_unscored_asks_only_the_transient_failures_again(judged) -> None:
    run, _ = judged
    before = read_verdicts(run, "llm")
    retry = before.filter(pl.col("retryable"))
    answered = before.filter(pl.col("label") == "unscored").filter(~pl.col("retryable"))
    assert answered.height  # malformed answers and 400s: kept as they are
    with FakeOpenAI(default=Reply(body=chat_body(GOOD))) as server:
        result = CliRunner().invoke(
            main,
            [
                "judge",
                str(run),
                "--judge",
                "llm",
                "--base-url",
                server.base_url,
                "--model",
                "fake",
                "--retry-unscored",
                "--quiet",
            ],
        )
    assert result.exit_code == 0, result.output
    assert f"asked again {retry.height} pairs" in result.output
    assert "re-run with --retry-unscored" not in result.output  # none left
    assert len(server.requests) == retry["prompt_hash"].n_unique()
    after = read_verdicts(run, "llm")
    assert after.height == before.height
    assert not after.select("policy", "case_id").is_duplicated().any()
    assert not after["retryable"].any()
    key = ["policy", "case_id"]
    redone = after.join(retry.select(key), on=key)
    assert (redone["label"] == "no_impact").all()
    kept = after.join(answered.select(key), on=key).sort(key)
    assert kept["unscored_reason"].to_list() == answered.sort(key)["unscored_reason"].to_list()
    # every pair has exactly one row on disk, not just after reading deduplicates
    folder = next((run / "verdicts").iterdir())
    assert pl.read_parquet(folder / "*.parquet").height == before.height


def test_retryable_pairs_are_read_as_read_verdicts_keeps_each_pair(tmp_path: Path) -> None:
    """The retryable pairs come from two filtered scans (issue 15): the first row of a pair, in
    the order ``read_verdicts`` reads, is its verdict, whatever later parts say."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ctxreplay.engines.judge import retryable_pairs
    from ctxreplay.schema import VERDICTS

    def part(judge: str, name: str, rows: list[tuple[str, str, bool | None, str | None]]) -> None:
        folder = tmp_path / "verdicts" / judge
        folder.mkdir(parents=True, exist_ok=True)
        table = pa.Table.from_pylist(
            [
                {"judge": judge, "policy": "p", "case_id": c, "label": label,
                 "retryable": retryable, "unscored_reason": reason}
                for c, label, retryable, reason in rows
            ],
            schema=VERDICTS,
        )  # fmt: skip
        pq.write_table(table, folder / name)

    busy = "model call failed: http 503 after 1 attempt"
    part("llm", "a.parquet", [
        ("scored-first", "impact", None, None),
        ("unscored-first", "unscored", True, busy),
        ("old-row", "unscored", None, busy),  # written before the column: from the reason
        ("not-transient", "unscored", False, "unparseable answer: no JSON object found"),
    ])  # fmt: skip
    part("llm", "b.parquet", [
        ("scored-first", "unscored", True, busy),  # a later row: not the pair's verdict
        ("unscored-first", "no_impact", None, None),
    ])  # fmt: skip
    part("flow", "a.parquet", [("other-judge", "unscored", True, busy)])
    got = retryable_pairs(tmp_path, "llm").sort("case_id")
    assert got["case_id"].to_list() == ["old-row", "unscored-first"]
    kept = read_verdicts(tmp_path, "llm")
    assert set(kept.filter(pl.col("label") == "unscored")["case_id"]) == {
        "old-row", "unscored-first", "not-transient",
    }  # fmt: skip
