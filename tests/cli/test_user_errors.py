"""The error contract: every command given the wrong kind of path or an out-of-range value stops
before any work with one line ``error: …`` and a non-zero exit, and leaves nothing behind."""

from __future__ import annotations

from pathlib import Path
from typing import Any as Folders

import click
import pytest
from click.testing import CliRunner

from ctxreplay.cli import main

#: every command that reads a corpus / a run, with the arguments it needs besides that path
CORPUS_COMMANDS = [
    ["info"],
    ["cases", "-o", "{out}/c.parquet", "--trigger", "user-turns"],
    ["export", "-o", "{out}/x.jsonl"],
    ["replay", "--cases", "{cases}", "--policy", "noop", "-o", "{out}/run"],
    ["sweep", "--cases", "{cases}", "--grid", "tool-prune:keep=1,2", "-o", "{out}/run"],
]
RUN_COMMANDS = [
    ["report"],
    ["judge"],
    ["show", "case-x", "--policy", "noop"],
    ["audit", "--category", "live_state"],
    ["calibrate", "--against", "anchor"],
    ["export-verdicts", "--to", "otel", "-o", "{out}/v.json"],
]


def _invoke(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(main, args)
    return result.exit_code, result.output


def _fill(args: list[str], f: Folders, out: Path) -> list[str]:
    return [a.format(out=out, cases=f.cases) for a in args]


def _assert_one_line(code: int, output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    assert code == 2, output
    assert len(lines) == 1 and lines[0].startswith("error: "), output
    assert "Traceback" not in output
    return lines[0]


#: (the kind of path a command expects, the command, another kind of path to give it)
WRONG_KIND = [
    (kind, command, wrong)
    for kind, commands in (("corpus", CORPUS_COMMANDS), ("run", RUN_COMMANDS))
    for command in commands
    for wrong in ("corpus", "run", "cases", "other_parquet", "text_file")
    if wrong != kind
]


@pytest.mark.parametrize(
    ("kind", "command", "wrong"), WRONG_KIND, ids=[f"{c[0]}-{w}" for _, c, w in WRONG_KIND]
)
def test_commands_reject_other_kinds_of_path(
    kind: str, command: list[str], wrong: str, folders: Folders, tmp_path: Path
) -> None:
    path = getattr(folders, wrong)
    code, output = _invoke([command[0], str(path), *_fill(command[1:], folders, tmp_path)])
    line = _assert_one_line(code, output)
    assert str(path) in line and kind in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("wrong", ["corpus", "run", "other_parquet", "text_file"])
def test_replay_rejects_a_cases_option_that_is_not_a_cases_file(
    wrong: str, folders: Folders, tmp_path: Path
) -> None:
    path = getattr(folders, wrong)
    args = ["replay", str(folders.corpus), "--cases", str(path), "--policy", "noop"]
    code, output = _invoke([*args, "-o", str(tmp_path / "run")])
    line = _assert_one_line(code, output)
    assert "cases" in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["cases", "{corpus}", "-o", "{out}/c.parquet", "--trigger", "tokens:-5"], "tokens:N"),
        (
            [
                "cases",
                "{corpus}",
                "-o",
                "{out}/c.parquet",
                "--trigger",
                "fraction:1.7",
                "--window",
                "1000",
            ],
            "fraction:F",
        ),
        (["cases", "{corpus}", "-o", "{out}/c.csv", "--trigger", "user-turns"], "Parquet"),
        (["cases", "{corpus}", "-o", "{out}/c.parquet", "--sample", "-3"], "--sample"),
        (["cases", "{corpus}", "-o", "{out}/c.parquet", "--horizon", "turns:0"], "horizon"),
        (["report", "{run}", "--bootstrap", "0"], "--bootstrap"),
        (["judge", "{run}", "--workers", "0"], "--workers"),
        (["judge", "{run}", "--limit", "0"], "--limit"),
        (
            [
                "replay",
                "{corpus}",
                "--cases",
                "{cases}",
                "--policy",
                "tool-prune:target=1.5",
                "-o",
                "{out}/run",
            ],
            "target",
        ),
        (
            [
                "replay",
                "{corpus}",
                "--cases",
                "{cases}",
                "--policy",
                "no-such-policy",
                "-o",
                "{out}/run",
            ],
            "no-such-policy",
        ),
        (["sql", "{corpus}", "SELECT * FROM no_such_table"], "no_such_table"),
        (["calibrate", "{run}", "--against", "truth"], None),
        # click's usage errors, each with where its help is
        (
            ["cases", "{corpus}", "-o", "{out}/c.parquet", "--sample", "0"],
            "(see 'ctxreplay cases --help')",
        ),
        (["info", "{out}/nowhere"], "does not exist. (see 'ctxreplay info --help')"),
        (["cases"], "Missing argument 'CORPUS'"),
        (["info", "{corpus}", "--no-such-flag"], "No such option '--no-such-flag'"),
        (["no-such-command"], "No such command 'no-such-command'. (see 'ctxreplay --help')"),
        (
            [
                "replay",
                "{corpus}",
                "--cases",
                "{cases}",
                "--policy",
                "tool-prune:keep=three",
                "-o",
                "{out}/run",
            ],
            "policy tool-prune: keep must be an integer; got 'three'",
        ),
    ],
)
def test_out_of_range_values_are_one_line_and_leave_nothing(
    args: list[str], needle: str | None, folders: Folders, tmp_path: Path
) -> None:
    filled = [
        a.format(out=tmp_path, corpus=folders.corpus, run=folders.run, cases=folders.cases)
        for a in args
    ]
    code, output = _invoke(filled)
    if args[0] == "calibrate":  # a synthetic run has ground truth: this one must succeed
        assert code == 0, output
        return
    # click's own usage errors (IntRange, a missing path) too: one line, exit 2
    assert needle in _assert_one_line(code, output)
    assert list(tmp_path.iterdir()) == []


def test_calibrate_against_truth_on_a_corpus_without_ground_truth(
    folders: Folders, tmp_path: Path
) -> None:
    import shutil

    from ctxreplay.datasets.store import Corpus
    from ctxreplay.engines.replay import run_replay

    corpus = tmp_path / "corpus"
    shutil.copytree(folders.corpus, corpus)
    shutil.rmtree(corpus / "ground_truth")
    run_replay(corpus, folders.cases, ["noop"], tmp_path / "run", progress=False)
    assert Corpus(corpus).path.exists()
    code, output = _invoke(["calibrate", str(tmp_path / "run"), "--against", "truth"])
    line = _assert_one_line(code, output)
    assert "no planted ground truth" in line
    assert not (tmp_path / "run" / "verdicts").exists() or not any(
        "truth" in p.name for p in (tmp_path / "run" / "verdicts").iterdir()
    )


def test_a_trigger_that_cuts_nothing_says_why(folders: Folders, tmp_path: Path) -> None:
    code, output = _invoke(
        [
            "cases",
            str(folders.corpus),
            "-o",
            str(tmp_path / "c.parquet"),
            "--trigger",
            "tokens:10000000",
        ]
    )
    assert code == 0, output
    assert "0 cases from 0 sessions" in output
    assert "  no case: the largest session holds " in output
    assert "< trigger 10,000,000 tokens" in output


def test_judge_limit_counts_what_it_left_for_later(folders: Folders, tmp_path: Path) -> None:
    import shutil

    run = tmp_path / "run"
    shutil.copytree(folders.run, run)
    shutil.rmtree(run / "verdicts")
    code, output = _invoke(["judge", str(run), "--limit", "2", "--quiet", "--workers", "1"])
    assert code == 0, output
    total = output  # noqa: F841
    assert "judge flow: 2 verdicts in " in output
    assert "(0 already judged, " in output and " left for later by --limit)" in output


def _commands(group: click.Group, path: tuple[str, ...] = ()):
    for name, cmd in sorted(group.commands.items()):
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, (*path, name))
        else:
            yield (*path, name), cmd


@pytest.mark.parametrize(("path", "command"), list(_commands(main)), ids=lambda x: str(x))
def test_every_option_shows_its_environment_variable(
    path: tuple[str, ...], command: click.Command
) -> None:
    help_text = " ".join(CliRunner().invoke(main, [*path, "--help"]).output.split())
    prefix = "CTXREPLAY_" + "_".join(path).replace("-", "_").upper()
    for param in command.params:
        if not isinstance(param, click.Option) or param.name in (None, "help"):
            continue
        flag = max(param.opts, key=len).lstrip("-").replace("-", "_")
        assert param.name == flag, f"{path}: {param.opts} is named {param.name}"
        if param.expose_value:
            assert f"env var: {prefix}_{flag.upper()}" in help_text, (path, flag)


def test_an_unknown_audit_category_lists_each_category_once(folders: Folders) -> None:
    code, output = _invoke(["audit", str(folders.run), "--category", "nope"])
    line = _assert_one_line(code, output)
    names = line.split("categories: ", 1)[1].split(", ")
    assert len(names) == len(set(names)) >= 6


def test_info_on_a_run_says_it_is_a_run(folders: Folders) -> None:
    code, output = _invoke(["info", str(folders.run)])
    line = _assert_one_line(code, output)
    assert f"{folders.run} is a ctxreplay run, not a corpus (its corpus is " in line


def test_cases_cut_by_several_triggers_are_said(folders: Folders, tmp_path: Path) -> None:
    code, output = _invoke(
        [
            "cases",
            str(folders.corpus),
            "-o",
            str(tmp_path / "c.parquet"),
            "--trigger",
            "every:2",
            "--trigger",
            "user-turns",
        ]
    )
    assert code == 0, output
    total = int(output.split(" cases from ", 1)[0])
    by = output.split("  by trigger: ", 1)[1].splitlines()[0]
    counts = [int(part.rsplit(" ", 1)[1]) for part in by.split(" (", 1)[0].split(", ")]
    shared = int(by.split(" (", 1)[1].split(" ", 1)[0])
    assert sum(counts) == total + shared > total
    assert by.endswith("cases were cut by several triggers and count under each)")
