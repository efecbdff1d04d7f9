"""``ctxreplay sweep``: grid parsing, expansion against the policies' parameters, resume, labels,
the manifest record and the command end to end on the synthetic corpus."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from ctxreplay.cli import main
from ctxreplay.engines.calibrate import Rates
from ctxreplay.engines.sweep import (
    MAX_POINTS,
    SweepError,
    expand,
    families,
    parse_grid,
    parse_values,
    run_sweep,
)
from ctxreplay.runs import sweep_of
from sweep_labels import write_labels

FOLD = "self-gc:fold_min_tokens=50;short_tokens=10;commit_threshold=0"


# --- values and grids -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("1..8", tuple(str(i) for i in range(1, 9))),
        ("3..3", ("3",)),
        ("-2..1", ("-2", "-1", "0", "1")),
        ("2..10/4", ("2", "6", "10")),
        ("0.1..0.3/0.1", ("0.1", "0.2", "0.3")),
        ("0..1/0.25", ("0.0", "0.25", "0.5", "0.75", "1.0")),
        ("0.1..0.35/0.1", ("0.1", "0.2", "0.3")),  # the step does not reach 0.35: stops before
        ("1,2,5", ("1", "2", "5")),
        ("rules, llm", ("rules", "llm")),
        ("0.5", ("0.5",)),
    ],
)
def test_parse_values(text: str, values: tuple[str, ...]) -> None:
    assert parse_values(text) == values


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0.1..0.5", "needs a step"),
        ("5..1", "must go up"),
        ("1..5/0", "step of a range must be positive"),
        ("1..5/-1", "range"),
        ("a..b", "low..high"),
        ("1,,2", "empty value"),
        ("", "empty value"),
        ("1,1", "given twice"),
        (f"1..{MAX_POINTS + 1}", f"at most {MAX_POINTS}"),
    ],
)
def test_parse_values_errors(text: str, message: str) -> None:
    with pytest.raises(SweepError, match=message):
        parse_values(text)


def test_parse_grid_single_and_product() -> None:
    g = parse_grid("tool-prune:keep=1..3")
    assert g.family == "tool-prune" and g.params == (("keep", ("1", "2", "3")),)
    g = parse_grid("tool-prune:keep=1,2; clear-at-least=0,2000")
    assert g.params == (("keep", ("1", "2")), ("clear_at_least", ("0", "2000")))
    assert parse_grid("noop").params == ()
    assert g.as_dict()["params"] == {"keep": ("1", "2"), "clear_at_least": ("0", "2000")}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (":keep=1", "starts with the policy family"),
        ("tool-prune:keep", "is not param=values"),
        ("tool-prune:keep=1;keep=2", "given twice"),
    ],
)
def test_parse_grid_errors(text: str, message: str) -> None:
    with pytest.raises(SweepError, match=message):
        parse_grid(text)


def test_expand_adds_the_defaults_once_and_forms_the_product() -> None:
    points = expand(["tool-prune:keep=1..4"], ["noop"])
    labels = [p.label for p in points]
    # the defaults first; keep=3 is the default, so it is that point, not a second one
    assert labels == [
        "tool-prune",
        "tool-prune:keep=1",
        "tool-prune:keep=2",
        "tool-prune:keep=4",
        "noop",
    ]
    assert points[0].source == "defaults" and points[0].is_default
    assert points[-1].source == "policy"
    product = expand(["tool-prune:keep=1,2;clear_at_least=0,5000"])
    assert len(product) == 5  # the defaults and the 4 combinations (none of them the default)
    assert {p.label for p in product} >= {
        "tool-prune:keep=1",
        "tool-prune:keep=2,clear_at_least=5000",
        "tool-prune:keep=1,clear_at_least=5000",
    }
    two = expand(["tool-prune:keep=1", "observation-masking:keep=1,2", "tool-prune:keep=2"])
    assert families(two) == ["tool-prune", "observation-masking"]
    assert sum(p.is_default for p in two) == 2


def test_a_grid_without_parameters_is_its_defaults() -> None:
    assert [p.label for p in expand(["observation-masking"])] == ["observation-masking"]


def test_expand_lists_every_problem_at_once() -> None:
    with pytest.raises(SweepError) as err:
        expand(
            [
                "tool-prune:kep=1..3",
                "no-such-policy:keep=1",
                "tool-prune:keep=0.5..1/0.5",
                "self-gc:planner=rules,oracle",
            ]
        )
    text = str(err.value)
    assert "tool-prune has no parameter 'kep'; its parameters: " in text and ", keep," in text
    assert "unknown policy 'no-such-policy'" in text
    assert "keep=0.5 is not a valid int" in text and "keep=1.0 is not a valid int" in text
    assert "planner=oracle" in text and "one of rules | llm" in text
    with pytest.raises(SweepError, match="at least one --grid"):
        expand([])
    with pytest.raises(SweepError, match="nope"):
        expand(["tool-prune:keep=1"], ["nope"])


# --- running --------------------------------------------------------------------------------


def test_sweep_resumes_and_adds_only_new_points(
    synth_corpus: Path, synth_cases: Path, tmp_path: Path
) -> None:
    from ctxreplay.engines.replay import make_chunks

    run = tmp_path / "run"
    cases = pl.read_parquet(synth_cases)
    chunks = len(make_chunks(cases))
    grids = ["tool-prune:keep=1..2"]
    first = run_sweep(synth_corpus, synth_cases, grids, run, workers=1, progress=False)
    assert [p.label for p in first.points] == [
        "tool-prune",
        "tool-prune:keep=1",
        "tool-prune:keep=2",
    ]
    assert first.computed == 3 * chunks
    assert first.verdicts == 3 * cases.height

    again = run_sweep(synth_corpus, synth_cases, grids, run, workers=1, progress=False)
    assert again.computed == 0 and again.verdicts == 0
    assert "0 chunk-policies replayed, 0 verdicts judged" in again.render()

    more = run_sweep(
        synth_corpus, synth_cases, ["tool-prune:keep=1,2,5"], run, workers=1, progress=False
    )
    assert more.computed == chunks  # keep=5 only
    assert more.verdicts == cases.height
    manifest = json.loads((run / "manifest.json").read_text())
    sweep = sweep_of(manifest)
    assert sweep is not None
    assert sweep["families"] == ["tool-prune"]
    assert [g["text"] for g in sweep["grids"]] == ["tool-prune:keep=1,2,5"]
    assert [p["label"] for p in sweep["points"]] == [
        "tool-prune",
        "tool-prune:keep=1",
        "tool-prune:keep=2",
        "tool-prune:keep=5",
    ]
    assert sweep["points"][3]["values"] == {"keep": "5"} and sweep["judge"] == "flow"
    assert sweep["labels"] is None and sweep["gold"] == {}


def test_a_bad_grid_fails_before_any_work(
    synth_corpus: Path, synth_cases: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    with pytest.raises(SweepError):
        run_sweep(synth_corpus, synth_cases, ["tool-prune:keep=x"], run, progress=False)
    assert not run.exists()


def test_sweep_with_gold_labels_judges_and_calibrates(
    synth_corpus: Path, synth_cases: Path, tmp_path: Path
) -> None:
    from ctxreplay.runs import calibration_path, read_verdicts

    labels = write_labels(synth_corpus, synth_cases, tmp_path / "labels")
    run = tmp_path / "run"
    summary = run_sweep(
        synth_corpus,
        synth_cases,
        ["tool-prune:keep=1", FOLD],
        run,
        policies=["noop"],
        labels=labels,
        workers=1,
        progress=False,
    )
    sweep = sweep_of(json.loads((run / "manifest.json").read_text()))
    assert sweep is not None and set(sweep["gold"]) == {"strict", "whitespace", "recovery"}
    assert sweep["labels"] == str(labels.resolve())
    verdicts = read_verdicts(run)
    judges = set(verdicts["judge"].to_list())
    assert {"flow", *sweep["gold"].values()} == judges
    gold = verdicts.filter(pl.col("judge") == sweep["gold"]["strict"])
    scored = gold.filter(pl.col("label") != "unscored")
    assert scored.height == 100
    # tool-prune keep=1 clears the first tool result: gold impact in the labelled cases
    pruned = scored.filter(pl.col("policy") == "tool-prune:keep=1")
    assert sorted(pruned["label"].to_list()) == ["impact"] * 18 + ["no_impact"] * 2
    # the fold keeps it behind a visible pointer: recovery variant accepts it
    recovery = verdicts.filter(pl.col("judge") == sweep["gold"]["recovery"])
    folded = next(p.label for p in summary.points if p.spec.startswith("self-gc:"))
    assert recovery.filter(pl.col("policy") == folded)["recoverable"].sum() == 16
    calibration = summary.calibration
    assert calibration is not None and calibration.judge == "flow"
    strict = next(v for v in calibration.variants if v.variant == "strict").calibration
    assert (strict.n, strict.overall) == (100, Rates(tp=43, fn=8, fp=12, tn=37))
    assert calibration_path(run, "flow").exists()
    again = run_sweep(
        synth_corpus,
        synth_cases,
        ["tool-prune:keep=1", FOLD],
        run,
        policies=["noop"],
        labels=labels,
        workers=1,
        progress=False,
    )
    assert again.computed == 0 and again.verdicts == 0


# --- the command ----------------------------------------------------------------------------


def test_cli_sweep_then_report_end_to_end(
    synth_corpus: Path, synth_cases: Path, tmp_path: Path
) -> None:
    labels = write_labels(synth_corpus, synth_cases, tmp_path / "labels")
    run = tmp_path / "run"
    args = [
        "sweep",
        str(synth_corpus),
        "--cases",
        str(synth_cases),
        "-o",
        str(run),
        "--grid",
        "tool-prune:keep=1..2",
        "--grid",
        FOLD,
        "--policy",
        "noop",
        "--judge",
        "flow",
        "--labels",
        f"deps:{labels}",
        "--workers",
        "2",
        "--quiet",
    ]
    runner = CliRunner()
    first = runner.invoke(main, args)
    assert first.exit_code == 0, first.output
    assert "sweep: 6 points of 3 families" in first.output
    assert "judge flow against gold (strict)" in first.output
    second = runner.invoke(main, args)
    assert second.exit_code == 0, second.output
    assert "new work: 0 chunk-policies replayed, 0 verdicts judged" in second.output

    report = runner.invoke(main, ["report", str(run), "--width", "0"])  # one line per row
    assert report.exit_code == 0, report.output
    for heading in (
        "Frontier (judge flow): points by family",
        "Frontier (judge flow): the leading point per pruning level",
        "Frontier (gold labels, strict): points by family",
        "Frontier (gold labels, with recovery): points by family",
        "strict no-impact %",
        "recoveries/case",
        "Recovery price:",
    ):
        assert heading in report.output, heading

    html = tmp_path / "report.html"
    saved = runner.invoke(main, ["report", str(run), "-o", str(html)])
    assert saved.exit_code == 0, saved.output
    assert html.read_text().count("data:image/png;base64,") == 2


def test_cli_sweep_errors(synth_corpus: Path, synth_cases: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    base = ["sweep", str(synth_corpus), "--cases", str(synth_cases), "-o", str(run)]
    runner = CliRunner()
    bad = runner.invoke(main, [*base, "--grid", "tool-prune:keep=1..3;nope=1"])
    assert bad.exit_code == 2
    assert "tool-prune has no parameter 'nope'" in bad.output
    assert not run.exists()
    labels = runner.invoke(main, [*base, "--grid", "tool-prune:keep=1", "--labels", "gold/"])
    assert labels.exit_code == 2 and "--labels takes deps:LABELS" in labels.output
    missing = runner.invoke(
        main, [*base, "--grid", "tool-prune:keep=1", "--labels", f"deps:{tmp_path / 'none'}"]
    )
    assert missing.exit_code == 2 and "no labels at" in missing.output
    assert not run.exists()
