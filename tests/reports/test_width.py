"""Terminal reports fit a width (text wraps, numbers never cut, wide tables split into column
groups that repeat the policy), and ``--examples N`` bounds the example losses in every format."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shlex
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from ctxreplay.cli import main
from ctxreplay.reports import RenderError, build_report
from ctxreplay.reports.formatting import Display, fit_table, terminal_width, wrap_command
from ctxreplay.reports.render import displays

RULE = re.compile(r"─+")


def _squeeze(text: str) -> str:
    return "".join(text.split())


def parse_table(lines: list[str], d: Display, end: str) -> dict[tuple[int, str], str]:
    """The cells of ``d`` read back from its terminal lines (from its title to the line
    ``end``), by (row, header without spaces): column groups joined, wrapped headers and cells
    put together again. Checks that every group repeats the identity columns (``d.identity``)
    with the same cells."""
    section = lines[lines.index(d.title) + 1 : lines.index(end)]
    chunks: list[list[str]] = [[]]
    for line in section:
        if line:
            chunks[-1].append(line)
        elif chunks[-1]:
            chunks.append([])
    numeric_headers = {_squeeze(h) for h, n in zip(d.headers, d.numeric, strict=True) if n}
    cells: dict[tuple[int, str], str] = {}
    seen: list[str] = []
    first: list[str] | None = None
    for chunk in filter(None, chunks):
        rule = next(k for k, line in enumerate(chunk) if line.startswith("─"))
        spans = [m.span() for m in RULE.finditer(chunk[rule])]
        headers = [
            " ".join(chunk[k][a:b].strip() for k in range(rule) if chunk[k][a:b].strip())
            for a, b in spans
        ]
        numeric = [_squeeze(h) in numeric_headers for h in headers]
        rows: list[list[str]] = []
        for line in chunk[rule + 1 :]:
            parts = [line[a:b].strip() for a, b in spans]
            has_number = any(p for p, n in zip(parts, numeric, strict=True) if n)
            if has_number or (not any(numeric) and parts[0]):
                if len(rows) == len(d.rows):
                    break  # a footer under the table
                rows.append(parts)
            elif rows and len(line) <= len(chunk[rule]):  # a wrapped cell's next line
                rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], parts, strict=True)]
            else:
                break
        assert len(rows) == len(d.rows), (d.title, rows)
        column = [tuple(r[: d.identity]) for r in rows]
        assert first is None or column == first  # the identity columns, repeated
        first = column
        for i, header in enumerate(headers[d.identity :], d.identity):
            seen.append(_squeeze(header))
            for n, r in enumerate(rows):
                cells[(n, _squeeze(header))] = r[i]
    for n, r in enumerate(first or []):
        for header, cell in zip(d.headers, r, strict=False):
            cells[(n, _squeeze(header))] = cell
    assert sorted(seen) == sorted(_squeeze(h) for h in d.headers[d.identity :])  # each once
    return cells


def expected(d: Display) -> dict[tuple[int, str], str]:
    return {
        (n, _squeeze(h)): cell
        for n, row in enumerate(d.rows)
        for h, cell in zip(d.headers, row, strict=True)
    }


def read_back(report, width: int) -> list[tuple[Display, dict, dict]]:
    """Each display table of the report: (display, cells read back, cells expected)."""
    lines = report.render("terminal", width=width).splitlines()
    tables = displays(report)
    ends = [d.title for d in tables[1:]] + ["Example losses (open one with the command under it)"]
    return [
        (d, parse_table(lines, d, end), expected(d)) for d, end in zip(tables, ends, strict=True)
    ]


@pytest.fixture(scope="module")
def edited(small_run: Path):
    """The report of the ``edited`` judge: unscored cases, so a failures table with reasons."""
    return build_report(small_run, judge="edited", bootstrap=50)


@pytest.mark.parametrize("width", [80, 120, 200])
@pytest.mark.parametrize("which", ["report", "edited"])
def test_every_line_fits_and_every_figure_survives(request, which: str, width: int) -> None:
    report = request.getfixturevalue(which)
    lines = report.render("terminal", width=width).splitlines()
    assert [line for line in lines if len(line) > width] == []
    for d, got, want in read_back(report, width):
        numeric = {_squeeze(h) for h, n in zip(d.headers, d.numeric, strict=True) if n}
        numbers = {k: v for k, v in want.items() if k[1] in numeric}
        assert {k: got[k] for k in numbers} == numbers, d.title  # every number, whole
        texts = {k: _squeeze(v) for k, v in want.items() if k[1] not in numeric}
        assert {k: _squeeze(got[k]) for k in texts} == texts, d.title  # wrapped, not lost
    if which == "edited":
        assert "Cases without a score, and why" in lines


def test_the_no_impact_figures_read_back_at_80_columns(report) -> None:
    lines = report.render("terminal", width=80).splitlines()
    section = lines[
        lines.index("No-impact and pruning by policy") : lines.index(
            "Paired comparisons against self-gc"
        )
    ]
    assert sum(line.startswith("policy ") for line in section) >= 3  # column groups
    [(_, got, _)] = [t for t in read_back(report, 80) if t[0].key == "no_impact"]
    for n, row in enumerate(report.no_impact.iter_rows(named=True)):
        assert got[(n, "policy")] == row["policy"]
        assert got[(n, "n")] == str(row["n"])
        assert got[(n, "prune%")] == f"{row['pruning_pct']:.2f}"
        mark = " †" if row["leans_on_recovery"] else ""  # a pass leaning on recovery
        assert got[(n, "no-impact%")] == f"{row['no_impact_pct']:.2f}{mark}"
        assert got[(n, "Wilson95%CI")] == f"[{row['wilson_lo']:.2f}, {row['wilson_hi']:.2f}]"
        assert got[(n, "cluster95%CI")] == f"[{row['boot_lo']:.2f}, {row['boot_hi']:.2f}]"


def test_a_table_that_fits_is_unchanged_and_one_that_does_not_is_split() -> None:
    d = Display(
        "t",
        "T",
        "",
        ("policy", "first number", "second number", "reason"),
        (
            (
                "observation-masking",
                "1.00",
                "[0.00, 100.00]",
                "planner failed: " + " ".join(["x"] * 30),
            ),
            ("noop", "12,345", "–", "ok"),
        ),
        (False, True, True, False),
    )
    wide = fit_table(d, 0)
    assert wide[0] == "policy               first number   second number  reason"
    assert len(wide) == 4 and fit_table(d, len(wide[2])) == wide
    narrow = fit_table(d, 44)
    assert narrow == [
        "                      first",
        "policy               number   second number",
        "───────────────────  ──────  ──────────────",
        "observation-masking    1.00  [0.00, 100.00]",
        "noop                 12,345               –",
        "",
        "policy               reason",
        "───────────────────  ───────────────────────",
        "observation-masking  planner failed: x x x x",
        "                     x x x x x x x x x x x x",
        "                     x x x x x x x x x x x x",
        "                     x x",
        "noop                 ok",
    ]
    assert all(len(line) <= 44 for line in narrow)


def test_widths_and_their_default(report, monkeypatch: pytest.MonkeyPatch) -> None:
    assert terminal_width(0) == 0 and terminal_width(64) == 64
    for bad in (-1, 1, 39):
        with pytest.raises(RenderError, match="at least 40"):
            terminal_width(bad)
    monkeypatch.setenv("COLUMNS", "90")
    assert terminal_width() == 90
    assert max(len(line) for line in report.render().splitlines()) <= 90
    monkeypatch.delenv("COLUMNS")

    def no_terminal(*_: object) -> os.terminal_size:
        raise OSError("not a terminal")

    monkeypatch.setattr(os, "get_terminal_size", no_terminal)
    assert terminal_width() == 100
    lines = report.render().splitlines()
    assert max(len(line) for line in lines) <= 100
    assert lines == report.render("terminal", width=100).splitlines()


def test_commands_break_between_arguments_and_still_paste() -> None:
    cmd = "ctxreplay show '/tmp/a run/with a long path/run' synth-sql-00001@24 --policy tool-prune"
    lines = wrap_command(cmd, 60, "    $ ", "        ")
    assert lines == [
        "    $ ctxreplay show '/tmp/a run/with a long path/run' \\",
        "        synth-sql-00001@24 --policy tool-prune",
    ]
    pasted = " ".join(line.removesuffix("\\").strip() for line in lines)
    assert shlex.split(pasted.removeprefix("$ ")) == shlex.split(cmd)
    assert wrap_command(cmd, 0, "$ ") == ["$ " + cmd]


def test_labels_are_never_cut_and_text_wraps_at_parameter_boundaries() -> None:
    """A policy label longer than its column heads its row whole on a line of its own (it was
    cut mid-word: ``self-gc:short_tokens=10,fo`` / ``ld_min_tokens``); free text wraps after
    ``,`` ``;`` ``:`` and spaces, never inside a word; a † after a figure keeps the column
    aligned."""
    d = Display(
        "t",
        "T",
        "",
        ("policy", "n", "no-impact %", "reason"),
        (
            (
                "self-gc:short_tokens=10,fold_min_tokens=50",
                "12",
                "96.08 †",
                "planner failed: fold_min_tokens=50;short_tokens=10,commit_threshold=0 over budget",
            ),
            ("oldest-turn:target=0.1", "3", "100.00", "ok"),
        ),
        (False, True, True, False),
    )
    assert fit_table(d, 60) == [
        "policy                                       n  no-impact %",
        "──────────────────────────────────────────  ──  ───────────",
        "self-gc:short_tokens=10,fold_min_tokens=50  12      96.08 †",
        "oldest-turn:target=0.1                       3     100.00",
        "",
        "policy                  reason",
        "──────────────────────  ────────────────────────────────────",
        "self-gc:short_tokens=10,fold_min_tokens=50",
        "                        planner failed: fold_min_tokens=50;",
        "                        short_tokens=10,commit_threshold=0",
        "                        over budget",
        "oldest-turn:target=0.1  ok",
    ]


def test_every_column_group_repeats_the_row_identity() -> None:
    """A frontier point is named by its family and its setting: every column group repeats
    both (it repeated the family alone, so ``self-gc`` rows could not be told apart), and a
    setting too long for its column heads the row whole."""
    d = Display(
        "f",
        "F",
        "",
        (
            "family",
            "point",
            "n",
            "prune %",
            "no-impact %",
            "strict no-impact %",
            "recoveries/case",
            "extra requests/case",
        ),
        (
            ("tool-prune", "keep=1", "73", "75.71", "15.69", "15.69", "0.00", "0.00"),
            (
                "self-gc",
                "fold_min_tokens=50, short_tokens=10",
                "73",
                "44.93",
                "96.08 †",
                "67.16",
                "0.57",
                "0.57",
            ),
        ),
        (False, False, True, True, True, True, True, True),
        identity=2,
    )
    assert fit_table(d, 64) == [
        "family      point                   n  prune %  no-impact %",
        "──────────  ─────────────────────  ──  ───────  ───────────",
        "tool-prune  keep=1                 73    75.71      15.69",
        "self-gc     fold_min_tokens=50, short_tokens=10",
        "                                   73    44.93      96.08 †",
        "",
        "                                      strict",
        "                                   no-impact",
        "family      point                          %  recoveries/case",
        "──────────  ─────────────────────  ─────────  ───────────────",
        "tool-prune  keep=1                     15.69             0.00",
        "self-gc     fold_min_tokens=50, short_tokens=10",
        "                                       67.16             0.57",
        "",
        "                                                         extra",
        "family      point                                requests/case",
        "──────────  ───────────────────────────────────  ─────────────",
        "tool-prune  keep=1                                        0.00",
        "self-gc     fold_min_tokens=50, short_tokens=10           0.57",
    ]


def test_audit_prints_anchors_whole_and_every_show_command_on_a_line_of_its_own() -> None:
    """``audit --category``'s losses as records: ids whole, the anchor as the trace wrote it,
    and the ``show`` command whole on its own line at any width (a table cut it)."""
    from ctxreplay.reports.render import render_audit

    show = (
        "ctxreplay show '/tmp/a run/with a long path/that goes on/run' synth-docs-00001@24 "
        "--policy 'self-gc:short_tokens=10,fold_min_tokens=50' --judge flow"
    )
    frame = pl.DataFrame(
        {
            "policy": ["self-gc:short_tokens=10,fold_min_tokens=50"] * 2,
            "category": ["verbatim_source"] * 2,
            "case_id": ["synth-docs-00001@24", "synth-docs-00001@30"],
            "session_id": ["synth-docs-00001"] * 2,
            "anchor": ['"Project Alpha", type', "line one\n  line two"],
            "source_object": ["function:read_file:3", None],
            "need_seq": [27, 31],
            "detail": ['copy of prefix message 5, used by copy: "Project Alpha", type', None],
            "show": [show, show.replace("@24", "@30")],
        }
    )
    assert render_audit(frame, max_rows=1, width=60).splitlines() == [
        "self-gc:short_tokens=10,fold_min_tokens=50 · synth-docs-00001@24 · from "
        "function:read_file:3, needed at seq 27",
        '  lost: "Project Alpha", type',
        '  how: copy of prefix message 5, used by copy: "Project',
        '       Alpha", type',
        f"  $ {show}",
        "… 1 more (--max-rows)",
    ]
    assert render_audit(frame, width=0).splitlines()[4:] == [
        "self-gc:short_tokens=10,fold_min_tokens=50 · synth-docs-00001@30 · from –, needed at "
        "seq 31",
        "  lost: line one line two",
        f"  $ {show.replace('@24', '@30')}",
    ]


def test_audit_cli_never_cuts_a_command(small_run: Path) -> None:
    from ctxreplay.reports import audit

    category = audit(small_run, "verbatim_source")
    assert category.height
    out = CliRunner().invoke(
        main,
        ["audit", str(small_run), "--category", "verbatim_source", "--max-rows", "500"],
        env={"COLUMNS": "60"},
    )
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0] == f"{category.height} verbatim_source losses"
    assert [line for line in lines if line.startswith("  $ ")] == [
        f"  $ {cmd}" for cmd in category["show"].to_list()
    ]
    assert "…" not in "".join(line for line in lines if "$" in line)


# --- examples -------------------------------------------------------------------------------


def test_examples_default_spreads_over_policies_then_categories(report) -> None:
    ex = report.examples
    assert ex.height == 10 and report.losses.height == 123
    assert report.meta["examples"] == 10
    # every policy with a loss, and every (policy, category) with a loss, before any repeat
    pairs = report.losses.select("policy", "category").unique()
    assert pairs.height <= ex.height
    assert set(ex.select("policy", "category").unique().rows()) == set(pairs.rows())
    counts = ex.group_by(["policy", "category"]).len()["len"].to_list()
    assert max(counts) - min(counts) <= 1
    assert ex.unique(["policy", "category", "case_id"]).height == ex.height


def test_examples_n_bounds_every_format(small_run: Path, tmp_path: Path) -> None:
    report = build_report(small_run, bootstrap=20, examples=3)
    ex = report.examples
    assert ex.height == 3
    # one per policy with losses first (self-gc, tool-prune), then tool-prune's next category
    assert sorted(ex["policy"].to_list()) == ["self-gc", "tool-prune", "tool-prune"]
    assert ex.filter(pl.col("policy") == "tool-prune")["category"].n_unique() == 2
    terminal = report.render("terminal", width=0).splitlines()
    assert sum(line.startswith("    $ ctxreplay show ") for line in terminal) == 3
    run = shlex.quote(str(small_run))
    assert terminal[-1] == (
        f"3 of 123 losses shown; more: `ctxreplay report {run} --examples N`; every loss of one "
        f"category: `ctxreplay audit {run} --category CATEGORY [--policy POLICY]`."
    )
    md = report.render("markdown")
    section = md.split("## Example losses\n")[1]
    assert section.startswith(f"\n3 of 123 losses shown; more: `ctxreplay report {run}")
    assert (
        sum(
            line.startswith("| self-gc |") or line.startswith("| tool-prune |")
            for line in section.splitlines()
        )
        == 3
    )
    assert len(json.loads(report.render("json"))["tables"]["examples"]) == 3
    report.save(tmp_path / "csv", "csv")
    rows = list(csv.reader(io.StringIO((tmp_path / "csv" / "examples.csv").read_text())))
    assert len(rows) == 1 + 3
    page = report.render("html")
    table = page.split('<table id="examples">')[1].split("</table>")[0]
    assert table.count('<tr class="loss">') == 3  # each loss's command on the row under it
    assert "3 of 123 losses shown" in page
    none = build_report(small_run, bootstrap=20, examples=0)
    lines = none.render("terminal", width=0).splitlines()
    assert lines[-2:] == [
        "(none)",
        f"0 of 123 losses shown; more: `ctxreplay report {run} --examples N`; every loss of one "
        f"category: `ctxreplay audit {run} --category CATEGORY [--policy POLICY]`.",
    ]


def test_report_cli_width_and_examples(small_run: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(
        main,
        ["report", str(small_run), "--bootstrap", "20", "--width", "80", "--examples", "2"],
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert sum(line.startswith("    $ ctxreplay show ") for line in lines) == 2
    assert any(line.startswith("2 of 123 losses shown; more:") for line in lines)
    bad = runner.invoke(main, ["report", str(small_run), "--width", "20"])
    assert bad.exit_code == 2
    assert bad.output.strip().splitlines() == [
        "error: width must be 0 (no limit) or at least 40, not 20"
    ]
    help_text = runner.invoke(main, ["report", "--help"]).output
    assert "--examples" in help_text and "CTXREPLAY_REPORT_EXAMPLES" in help_text
    assert "--width" in help_text and "CTXREPLAY_REPORT_WIDTH" in help_text
