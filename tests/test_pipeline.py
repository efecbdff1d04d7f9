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
    lines = first.output.splitlines()  # markdown tables
    assert (
        "| policy | cases | n | unscored | not judged | prune % | editable prune % | prune 95% CI "
        "| no-impact % | Wilson 95% CI | cluster 95% CI | via recovery % |"
    ) in lines
    assert (
        "| tool-prune:keep=1 | 20 | 20 | 0 | 0 | 69.74 | 74.39 | [61.58, 81.50] | 10.00 "
        "| [2.79, 30.10] | [0.00, 33.33] | 0.00 |"
    ) in lines
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


def _run(out, *args: str):
    base = ["run", "-o", str(out), "--workers", "1", "--quiet", "--bootstrap", "50"]
    base += ["--policy", "noop", "--policy", "tool-prune:keep=1"]
    return CliRunner().invoke(main, [*base, *args])


def _cases(out) -> list[str]:
    import polars as pl

    triggers = pl.read_parquet(out / "cases.parquet")["trigger"].str.replace(r":\d+$", "")
    return triggers.unique().sort().to_list()


def _session(i: int) -> str:
    return json.dumps(
        {
            "session_id": f"s{i}",
            "messages": [
                {"role": "user", "content": f"question {i}"},
                {"role": "assistant", "content": f"answer {i}"},
                {"role": "user", "content": f"follow-up {i}"},
                {"role": "assistant", "content": f"second answer {i}"},
            ],
        }
    )


def test_run_redoes_the_corpus_when_the_sources_change(tmp_path) -> None:
    out, source = tmp_path / "out", tmp_path / "traces.jsonl"
    source.write_text("".join(_session(i) + "\n" for i in range(2)))
    first = _run(out, "--source", str(source), "--trigger", "every:2")
    assert first.exit_code == 0, first.output
    again = _run(out, "--source", str(source), "--trigger", "every:2")
    assert "corpus: reusing" in again.output and "cases: reusing" in again.output
    source.write_text("".join(_session(i) + "\n" for i in range(3)))  # one more session
    second = _run(out, "--source", str(source), "--trigger", "every:2")
    assert second.exit_code == 0, second.output
    assert "corpus: redoing (sources " in second.output
    assert "cases: reusing" not in second.output
    counts = json.loads((out / "corpus" / "manifest.json").read_text())["counts"]
    assert counts["sessions"] == 3


def test_run_redoes_synthetic_corpus_for_another_seed(tmp_path) -> None:
    out = tmp_path / "out"
    assert _run(out, "--synth-sessions", "3", "--seed", "1").exit_code == 0
    again = _run(out, "--synth-sessions", "3", "--seed", "1")
    assert "corpus: reusing" in again.output and "cases: reusing" in again.output
    other = _run(out, "--synth-sessions", "3", "--seed", "2")
    assert other.exit_code == 0, other.output
    assert "corpus: redoing (seed 1 → 2)" in other.output
    assert json.loads((out / "pipeline.json").read_text())["corpus"]["seed"] == 2


def test_run_redoes_cases_and_replay_for_another_trigger(tmp_path) -> None:
    out = tmp_path / "out"
    assert _run(out, "--synth-sessions", "3", "--trigger", "every:4").exit_code == 0
    assert _cases(out) == ["every"]
    other = _run(out, "--synth-sessions", "3", "--trigger", "user-turns")
    assert other.exit_code == 0, other.output
    assert "corpus: reusing" in other.output
    assert 'cases: redoing (triggers ["every:4"] → ["user-turns"])' in other.output
    assert _cases(out) == ["user-turn"]
    figures = json.loads((out / "run" / "manifest.json").read_text())["cases_fingerprint"]
    from ctxreplay.files import file_fingerprint

    assert figures == file_fingerprint(out / "cases.parquet")  # the run was redone too


def test_run_redoes_the_replay_for_another_tariff(tmp_path) -> None:
    out = tmp_path / "out"
    assert _run(out, "--synth-sessions", "3").exit_code == 0
    other = _run(out, "--synth-sessions", "3", "--tariff", "gpt-4o-mini")
    assert other.exit_code == 0, other.output
    assert "cases: reusing" in other.output
    assert 'replay: redoing (tariff null → "gpt-4o-mini")' in other.output
    manifest = json.loads((out / "run" / "manifest.json").read_text())
    assert manifest["tariff"]["name"] == "gpt-4o-mini"


def test_an_old_output_folder_without_a_record_is_not_trusted(tmp_path) -> None:
    out = tmp_path / "out"
    assert _run(out, "--synth-sessions", "3").exit_code == 0
    (out / "pipeline.json").unlink()
    again = _run(out, "--synth-sessions", "3")
    assert again.exit_code == 0, again.output
    assert "corpus: redoing (no record of how it was made)" in again.output


def test_a_config_may_give_one_value_where_a_list_is_taken(tmp_path) -> None:
    """``source = "traces.jsonl"`` is ``source = ["traces.jsonl"]`` (it once failed with "Value
    must be an iterable"), for every repeatable option."""
    from builders import FIXTURES

    config = tmp_path / "run.toml"
    out = tmp_path / "out"
    config.write_text(
        f'out = "{out}"\nsource = "{FIXTURES / "openai_chat" / "sessions.jsonl"}"\n'
        'trigger = "user-turns"\npolicy = "tool-prune:keep=1"\nworkers = 1\nquiet = true\n'
        "bootstrap = 50\n"
    )
    result = CliRunner().invoke(main, ["run", "--config", str(config)])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "run" / "manifest.json").read_text())
    assert list(manifest["policies"]) == ["tool-prune:keep=1"]
    pipeline = json.loads((out / "pipeline.json").read_text())
    assert "sessions.jsonl" in json.dumps(pipeline)
