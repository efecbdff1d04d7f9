"""A dead model endpoint stops the run with one line and a resume hint, instead of running on
through hours of failing calls (each recorded as unscored or as a planner failure)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxreplay.cli import main
from ctxreplay.engines.replay import run_replay
from ctxreplay.llm.endpoint import forget_endpoints


@pytest.fixture
def dead_url() -> str:
    """A local port nobody listens on: every connection is refused at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    forget_endpoints()
    return f"http://127.0.0.1:{port}/v1"


def _one_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1, output
    return lines[0]


def test_the_llm_judge_stops_on_a_dead_endpoint(
    synth_corpus: Path, synth_cases: Path, tmp_path: Path, dead_url: str
) -> None:
    run = tmp_path / "run"
    run_replay(synth_corpus, synth_cases, ["tool-prune"], run, workers=1, progress=False)
    result = CliRunner().invoke(
        main,
        [
            "judge",
            str(run),
            "--judge",
            "llm:max_retries=0",
            "--base-url",
            dead_url,
            "--model",
            "m",
            "--quiet",
        ],
        env={"OPENAI_API_KEY": "sk-test"},
    )
    assert result.exit_code == 2, result.output
    line = _one_line(result.output)
    assert line.startswith(f"error: the model endpoint {dead_url} refused 5 connections in a row")
    assert "run the same command again: finished work is kept" in line


def test_a_model_planner_stops_the_replay_on_a_dead_endpoint(
    synth_corpus: Path, synth_cases: Path, tmp_path: Path, dead_url: str
) -> None:
    spec = f"self-gc:planner=llm,base_url={dead_url},model=m,max_retries=0"
    result = CliRunner().invoke(
        main,
        [
            "replay",
            str(synth_corpus),
            "--cases",
            str(synth_cases),
            "--policy",
            spec,
            "-o",
            str(tmp_path / "run"),
            "--workers",
            "1",
            "--quiet",
        ],
        env={"OPENAI_API_KEY": "sk-test"},
    )
    assert result.exit_code == 2, result.output
    assert "refused 5 connections in a row" in _one_line(result.output)
