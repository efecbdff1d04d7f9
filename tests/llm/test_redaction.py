"""The API key, and any configured secret, is redacted from everything stored.

The issue's case: an endpoint that echoes the API key got it stored in the cache, the verdicts
and the exports; redaction covered only error text.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from ctxreplay.llm import ModelCallError, ModelClient
from ctxreplay.llm.client import configured_secrets
from ctxreplay.llm.completion import Completion, TokenUsage, redact_secrets, scrub

from fake_openai import FakeOpenAI, Reply, chat_body

pytestmark = pytest.mark.usefixtures("fresh_endpoints")

KEY = "sk-live-0123456789abcdefSECRET"
OTHER = "hunter2-but-longer-than-eight"


def stored_text(folder: Path) -> str:
    """Every byte under ``folder`` that ctxreplay wrote, as text (Parquet read back as rows)."""
    out = []
    for p in sorted(folder.rglob("*")):
        if not p.is_file():
            continue
        if p.suffix == ".parquet":
            out.append(pl.read_parquet(p).write_json())
        else:
            out.append(p.read_bytes().decode("utf-8", "replace"))
    return "\n".join(out)


def echoing_answer(key: str) -> str:
    return json.dumps(
        {
            "facts": [
                {
                    "quote": f"token {key}",
                    "category": "locator_handle",
                    "source_object": None,
                    "future_message": None,
                    "status": "missing",
                    "explanation": f"the agent used {key} later",
                }
            ],
            "verdict": "impact",
            "explanation": f"Authorization: Bearer {key} (and {OTHER})",
        }
    )


def test_an_echoed_key_is_in_no_answer_cache_entry_or_call_row(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("MY_SERVICE_TOKEN", OTHER)
    monkeypatch.setenv("CTXREPLAY_SECRET_ENVS", "MY_SERVICE_TOKEN")
    body = chat_body(
        f"your key is {KEY}; other {OTHER}",
        tool_calls=[
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "f", "arguments": f'{{"k": "{KEY}"}}'},
            }
        ],
        model=f"model-{KEY}",
    )
    with FakeOpenAI(default=Reply(body=body)) as server:
        client = ModelClient(
            server.base_url, "fake", cache_dir=tmp_path / "cache", run_dir=tmp_path
        )
        c = client.complete([{"role": "user", "content": "hi"}], max_tokens=8)
        hit = client.complete([{"role": "user", "content": "hi"}], max_tokens=8)
        client.close()
    assert server.authorizations[0] == f"Bearer {KEY}"  # the key was sent, as it must be
    for answer in (c, hit):
        assert KEY not in json.dumps(answer.to_record()) and OTHER not in answer.text
        assert answer.text == "your key is [redacted]; other [redacted]"
        assert answer.tool_calls[0].arguments == '{"k": "[redacted]"}'
        assert answer.model == "model-[redacted]"
    assert hit.cache_hit
    everything = stored_text(tmp_path)
    assert "[redacted]" in everything and KEY not in everything and OTHER not in everything


def test_an_echoed_key_in_an_error_or_a_json_answer_is_redacted(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeOpenAI(
        script=[Reply(status=400, body={"error": {"message": f"bad key {KEY}"}})],
        default=Reply(body=chat_body(json.dumps({"said": KEY}))),
    ) as server:
        client = ModelClient(server.base_url, "fake", cache_dir=tmp_path / "cache")
        with pytest.raises(ModelCallError) as e:
            client.complete([{"role": "user", "content": "a"}], max_tokens=8)
        assert KEY not in e.value.reason
        c = client.complete(
            [{"role": "user", "content": "b"}], response_format="json_object", max_tokens=8
        )
    assert c.parsed == {"said": "[redacted]"} and KEY not in stored_text(tmp_path)


def test_a_cache_entry_stored_before_redaction_is_served_redacted(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    client = ModelClient("http://127.0.0.1:9/v1", "fake", cache_dir=tmp_path)
    messages = [{"role": "user", "content": "x"}]
    key = client.prompt_hash(messages, max_tokens=8)
    old = Completion(KEY, (), "stop", TokenUsage(1, 1), None, False, key, {}, 1, parsed={"k": KEY})
    assert client.cache is not None
    client.cache.put(key, old.to_record())  # as an older version stored it
    hit = client.complete(messages, max_tokens=8)
    assert hit.cache_hit and hit.text == "[redacted]" and hit.parsed == {"k": "[redacted]"}


def test_configured_secrets(monkeypatch) -> None:
    monkeypatch.setenv("CTXREPLAY_SECRET_ENVS", "A_SECRET, MISSING")
    monkeypatch.setenv("A_SECRET", "from-the-environment")
    found = configured_secrets(
        "https://user:p%40ssw0rd-long@host.example/v1?api-key=abc123def456&api-version=2024-02-01",
        KEY,
    )
    assert set(found) == {KEY, "p@ssw0rd-long", "abc123def456", "from-the-environment"}
    assert "2024-02-01" not in found and "user" not in found


def test_short_secrets_are_not_looked_for_in_answers() -> None:
    """A dummy one-letter key must not wreck every answer."""
    assert redact_secrets({"a": ["x marks the spot"]}, "x") == {"a": ["x marks the spot"]}
    c = Completion("x", (), "stop", TokenUsage(), None, False, "h", {}, 1)
    assert scrub(c, "x") is c


def test_the_llm_judge_stores_no_echoed_key(synth_corpus, synth_cases, tmp_path, monkeypatch):
    """Verdicts (raw answer, explanation, losses), the run's cache, its calls table and the
    exports: the key is in none of them."""
    from click.testing import CliRunner

    from ctxreplay.cli import main
    from ctxreplay.engines.judge import run_judge
    from ctxreplay.engines.replay import run_replay
    from ctxreplay.runs import read_verdicts

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    run = tmp_path / "run"
    run_replay(synth_corpus, synth_cases, ["tool-prune:keep=1"], run, workers=1, progress=False)
    with FakeOpenAI(default=Reply(body=chat_body(echoing_answer(KEY)))) as server:
        run_judge(
            run,
            "llm",
            overrides={"base_url": server.base_url, "model": "fake", "concurrency": "4"},
            progress=False,
        )
    verdicts = read_verdicts(run, "llm")
    assert (verdicts["label"] == "impact").all()
    assert verdicts["explanation"][0] == f"Authorization: Bearer [redacted] (and {OTHER})"
    runner = CliRunner()
    for to in ("otel", "phoenix", "langfuse"):
        out = tmp_path / f"export-{to}"
        result = runner.invoke(
            main, ["export-verdicts", str(run), "--to", to, "-o", str(out), "--judge", "llm"]
        )
        assert result.exit_code == 0, result.output
    everything = stored_text(tmp_path)
    assert KEY not in everything
    assert everything.count("[redacted]") >= 3 * verdicts.height
