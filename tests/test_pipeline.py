"""The one-command pipeline: demo and run (with a TOML config), stages reused on re-run."""

from __future__ import annotations

import json

from click.testing import CliRunner

from ctxreplay.cli import main


def test_demo_end_to_end(tmp_path) -> None:
    out = tmp_path / "demo"
    result = CliRunner().invoke(
        main, ["demo", "-o", str(out), "--sessions", "5", "--quiet", "--workers", "1"]
    )
    assert result.exit_code == 0, result.output
    for heading in (
        "No-impact and pruning by policy",
        "Paired comparisons",
        "Failure taxonomy",
        "Cost",
    ):
        assert heading in result.output
    html = (out / "report.html").read_text()
    assert "data:image/png;base64," in html and "self-gc" in html
    manifest = json.loads((out / "run" / "manifest.json").read_text())
    assert {"noop", "self-gc", "tool-prune"} <= set(manifest["policies"])


def test_run_from_toml_config_and_reuse(tmp_path) -> None:
    config = tmp_path / "ctxreplay.toml"
    out = tmp_path / "out"
    config.write_text(
        f'out = "{out}"\n'
        "synth-sessions = 4\nseed = 5\nworkers = 1\nquiet = true\n"
        'trigger = ["every:4"]\npolicy = ["noop", "tool-prune:keep=1"]\nbootstrap = 200\n'
        'report-format = "markdown"\n'
    )
    runner = CliRunner()
    first = runner.invoke(main, ["run", "--config", str(config)])
    assert first.exit_code == 0, first.output
    assert "| policy" in first.output  # markdown tables
    assert "tool-prune:keep=1" in first.output
    second = runner.invoke(main, ["run", "--config", str(config)])
    assert second.exit_code == 0, second.output
    assert "corpus: reusing" in second.output and "cases: reusing" in second.output
    assert "0 chunk-policies computed" in second.output and "0 verdicts" in second.output
    audit = runner.invoke(main, ["audit", str(out / "run"), "--category", "evidence_detail"])
    assert audit.exit_code == 0, audit.output
    exported = runner.invoke(
        main,
        ["export-verdicts", str(out / "run"), "--to", "langfuse", "-o", str(tmp_path / "s.jsonl")],
    )
    assert exported.exit_code == 0, exported.output
    lines = (tmp_path / "s.jsonl").read_text().splitlines()
    assert lines and all(json.loads(line)["dataType"] == "CATEGORICAL" for line in lines)
