"""Renderings of a report: terminal, Markdown, CSV, JSON and the self-contained HTML page."""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import re
from pathlib import Path

import polars as pl
import pytest

from ctxreplay.reports import RenderError, build_report, tradeoff_plot

from judged_run import XSS, XSS_SESSION

PNG = b"\x89PNG\r\n\x1a\n"


def test_terminal_tables_are_aligned_with_bracketed_intervals(report):
    text = report.render(width=0)  # no limit: one line per row (tests/reports/test_width.py)
    assert text == report.render("terminal", width=0)
    for title in ("No-impact and pruning by policy", "Paired comparisons", "Failure taxonomy"):
        assert title in text
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("policy "))
    widths = {len(line) for line in lines[header + 2 : header + 5]}
    assert max(widths) <= len(lines[header + 1])  # rows fit under the rule
    noop = next(line for line in lines[header:] if line.startswith("noop "))
    # strict no-impact and recoveries per case right beside no-impact (self-gc leans on
    # recovery, so the columns are there; noop's figure is padded where self-gc's carries †)
    assert noop == (
        "noop           44  44         0           0     0.00              0.00    [0.00, 0.00]"
        "     100.00                100.00             0.00  [91.97, 100.00]  [100.00, 100.00]"
        "            0.00  [91.97, 100.00]                 0.00                     0"
    )
    assert re.search(r"\[\d+\.\d\d, \d+\.\d\d\]", text)
    assert "$ ctxreplay show " in text


def test_markdown_has_pipe_tables_and_headings(report):
    md = report.render("markdown")
    assert md.startswith("# ctxreplay report")
    assert "## No-impact and pruning by policy" in md
    assert "| policy | cases | n |" in md
    assert "| --- | ---: |" in md
    assert "`ctxreplay show " in md
    tables = [line for line in md.splitlines() if line.startswith("| noop |")]
    assert tables[0] == (
        "| noop | 44 | 44 | 0 | 0 | 0.00 | 0.00 | [0.00, 0.00] | 100.00 | 100.00 | 0.00 "
        "| [91.97, 100.00] | [100.00, 100.00] | 0.00 | [91.97, 100.00] | 0.00 | 0 |"
    )
    assert all(line.endswith("|") for line in tables)


def test_the_best_policy_lines_show_strict_no_impact_and_mark_a_pass_through_recovery(report):
    """The reference (the best no-impact) is named with its strict no-impact and recoveries
    per case, marked † (self-gc's no-impact leans on recovery) with what † means; where
    another policy has the best strict no-impact it is named under it; csv/json carry the
    marker as a column."""
    from dataclasses import replace

    from ctxreplay.reports.formatting import MARK_NOTE

    self_gc = (
        "reference (best no-impact): self-gc: no-impact 93.18% †, strict no-impact 75.00%, "
        "0.39 recoveries per case, prune 39.46%"
    )
    assert report.render("terminal", width=0).splitlines()[2:4] == [self_gc, MARK_NOTE]
    assert f"- {self_gc}" in report.render("markdown").splitlines()
    table = report.no_impact.with_columns(
        pl.when(pl.col("policy") == "tool-prune")
        .then(pl.lit(80.0))
        .otherwise(pl.col("strict_no_impact_pct"))
        .alias("strict_no_impact_pct")
    )
    lines = replace(report, no_impact=table).render("terminal", width=0).splitlines()
    assert lines[2:5] == [
        self_gc,
        "best strict no-impact (no loss and no recovery): tool-prune: no-impact 29.55%, strict "
        "no-impact 80.00%, 0.00 recoveries per case, prune 50.87%",
        MARK_NOTE,
    ]
    # the headline table: † on self-gc's no-impact, its strict figure right beside it
    rows = json.loads(report.render("json"))["tables"]["no_impact"]
    assert {r["policy"]: r["leans_on_recovery"] for r in rows} == {
        "noop": False,
        "self-gc": True,
        "tool-prune": False,
    }
    md = report.render("markdown")
    header = next(line for line in md.splitlines() if line.startswith("| policy | cases |"))
    assert "| no-impact % | strict no-impact % | recoveries/case | Wilson 95% CI |" in header
    assert "| 93.18 † | 75.00 | 0.39 |" in md
    assert f"\n{MARK_NOTE}\n" in md


def test_csv_one_file_per_table(report, tmp_path: Path):
    written = report.save(tmp_path / "csv", "csv")
    names = {p.name for p in written}
    assert {f"{n}.csv" for n in report.tables()} | {"tradeoff.png"} == names
    for name, frame in report.tables().items():
        rows = list(csv.reader(io.StringIO((tmp_path / "csv" / f"{name}.csv").read_text())))
        assert rows[0] == frame.columns
        assert len(rows) == frame.height + 1
    back = pl.read_csv(tmp_path / "csv" / "no_impact.csv")
    assert back["policy"].to_list() == report.no_impact["policy"].to_list()
    assert (tmp_path / "csv" / "tradeoff.png").read_bytes().startswith(PNG)
    sections = report.render("csv")
    assert all(f"# {n}\n" in sections for n in report.tables())


def test_json_is_strict_and_complete(report, tmp_path: Path):
    text = report.render("json")
    doc = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    assert doc["kind"] == "ctxreplay-report"
    assert set(doc["tables"]) == set(report.tables())
    assert len(doc["tables"]["no_impact"]) == report.no_impact.height
    assert doc["meta"]["judge"] == "flow" and doc["meta"]["seed"] == 0
    assert doc["meta"]["policies"]["tool-prune"]["params"]
    report.save(tmp_path / "r.json")
    assert json.loads((tmp_path / "r.json").read_text())["reference"] == report.reference


def test_html_is_one_self_contained_page(report, tmp_path: Path):
    [path] = report.save(tmp_path / "report.html")
    page = path.read_text()
    assert page.startswith("<!doctype html>") and page.rstrip().endswith("</html>")
    for table in ("no_impact", "paired", "taxonomy", "cost_tokens", "cost_usd", "examples"):
        assert f'<table id="{table}"' in page
    # nothing to fetch: inline CSS, the plot inline, no scripts or stylesheets
    assert "<style>" in page
    assert not re.search(r"<(script|link)\b", page)
    assert not re.search(r'\ssrc="(?!data:)', page)
    m = re.search(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert m and base64.b64decode(m.group(1)).startswith(PNG)
    # the audit: every example loss with the command that opens it
    for cmd in report.examples["show"].to_list():
        assert html.escape(cmd) in page
    for policy in report.no_impact["policy"].to_list():
        assert f'<span class="tok">{policy}</span></td>' in page  # an id: one string, whole
    meta = report.meta
    assert meta["corpus_fingerprint"] in page and meta["cases_fingerprint"] in page
    assert "keep_recent" in page  # self-gc's parameters from the manifest
    assert "<dt>judge</dt><dd>flow (132 verdicts)</dd>" in page
    assert "<dt>seeds</dt><dd>replay 0, cases 0, report 0</dd>" in page


def test_markdown_save_links_the_plot(report, tmp_path: Path):
    md, png = report.save(tmp_path / "r.md")
    assert png.read_bytes().startswith(PNG)
    assert f"]({png.name})" in md.read_text()


def test_unknown_format(report, tmp_path: Path):
    with pytest.raises(RenderError, match="formats"):
        report.render("pdf")
    with pytest.raises(RenderError):
        report.save(tmp_path / "x", "pdf")


def test_tradeoff_plot_png(report, tmp_path: Path):
    data = tradeoff_plot(report.no_impact, tmp_path / "plot" / "t.png")
    assert data.startswith(PNG)
    assert (tmp_path / "plot" / "t.png").read_bytes() == data
    assert report.plot() == report.plot()  # deterministic bytes
    empty = tradeoff_plot(report.no_impact.clear())
    assert empty.startswith(PNG)


def _section(page: str, start: str, end: str) -> str:
    return page[page.index(start) : page.index(end, page.index(start))]


def _cells(row: str) -> list[str]:
    """The text of a table row's cells (markup stripped, entities decoded)."""
    return [
        html.unescape(re.sub(r"<[^>]+>", "", c))
        for c in re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)
    ]


def test_html_summary_names_the_best_policy_per_pruning_level(report):
    """Before the plot: per pruning level the leader by no-impact and by strict no-impact, the
    strict figure beside no-impact, and self-gc's no-impact (which leans on recovery) marked."""
    page = report.render("html")
    summary = _section(page, '<h2 id="h-summary">', "</table>")
    assert page.index('<h2 id="h-summary">') < page.index('<h2 id="tradeoff">')
    rows = [_cells(r) for r in re.findall(r"<tr>(.*?)</tr>", summary, flags=re.S)[1:]]
    both = "no-impact and strict no-impact"
    # level, ranked by, policy, prune %, no-impact %, strict no-impact % (small run's figures)
    assert rows == [
        ["≥ 0%", both, "noop", "0.00", "100.00", "100.00"],
        ["≥ 10…30%", both, "self-gc", "39.46", "93.18 †", "75.00"],
        ["≥ 40…50%", both, "tool-prune", "50.87", "29.55", "29.55"],
    ]
    assert "leans on recovery" in page[page.index("</table>", page.index('id="summary"')) :]


def test_html_summary_splits_a_level_whose_leaders_differ(report):
    """Where the strict leader is not the no-impact leader, the level has a row for each."""
    from dataclasses import replace

    table = report.no_impact.with_columns(
        pl.when(pl.col("policy") == "tool-prune")
        .then(pl.lit(80.0))
        .otherwise(pl.col("strict_no_impact_pct"))
        .alias("strict_no_impact_pct")
    )
    page = replace(report, no_impact=table).render("html")
    summary = _section(page, '<h2 id="h-summary">', "</table>")
    rows = [_cells(r) for r in re.findall(r"<tr>(.*?)</tr>", summary, flags=re.S)[1:]]
    assert rows[1] == ["≥ 10…30%", "no-impact", "self-gc", "39.46", "93.18 †", "75.00"]
    assert rows[2] == ["strict no-impact", "tool-prune", "50.87", "29.55", "80.00"]
    assert "<b>80.00</b>" in summary and "<b>93.18 †</b>" in summary


def test_html_ids_and_commands_are_whole_and_tables_scroll_in_place(report):
    """Static half of tests/reports/test_html_browser.py: ids and commands are ``.tok`` (one
    line, selected whole), never broken anywhere (no ``break-all``), and every table sits in
    its own scrolling region."""
    page = report.render("html")
    css = page[page.index("<style>") : page.index("</style>")]
    assert "break-all" not in css
    assert re.search(r"\.tok\{[^}]*white-space:nowrap", css)
    assert re.search(r"\.tok\{[^}]*user-select:all", css)
    assert page.count("<table ") == page.count('<div class="scroll" role="region"')
    assert re.search(r'<div class="scroll"[^>]*><table id="no_impact"', page)
    for r in report.examples.iter_rows(named=True):
        assert f'<code class="tok show">{html.escape(r["show"])}</code>' in page
        assert f'<code class="tok">{html.escape(r["case_id"])}</code>' in page
    assert '<meta http-equiv="Content-Security-Policy" content="default-src \'none\';' in page


def test_html_escapes_markup_of_the_trace(xss_run: Path):
    """A trace's markup (in a tool result the report quotes, and in a session id) is text in
    the page, never markup: the page has no script, no ``onerror``, one image per plot."""
    r = build_report(xss_run, bootstrap=20)
    assert r.examples.height and any(XSS in a for a in r.examples["anchor"].to_list())
    assert any(XSS_SESSION in c for c in r.examples["case_id"].to_list())
    page = r.render("html")
    assert not re.search(r"<(script|link|iframe|object)\b", page, flags=re.I)
    assert not re.search(r"<[a-zA-Z][^<>]*\son\w+=", page)  # no event handler in any tag
    assert page.count("<img ") == 1  # the trade-off plot
    assert html.escape(XSS) in page and html.escape(XSS_SESSION) in page


def test_report_output_names_say_what_is_written(small_run: Path, tmp_path: Path) -> None:
    """``report -o`` writes what the name says (the README's way to get the PNG plot): .html one
    page, .md the page and ``<stem>.png``, a folder one CSV per table and ``tradeoff.png``; a
    name of no known kind (``report.pdf``, once a folder named so) is refused before any work."""
    from click.testing import CliRunner

    from ctxreplay.cli import main

    runner = CliRunner()

    def report(out: Path) -> str:
        done = runner.invoke(main, ["report", str(small_run), "-o", str(out), "--bootstrap", "50"])
        assert done.exit_code == 0, done.output
        return done.output

    pdf = runner.invoke(main, ["report", str(small_run), "-o", str(tmp_path / "report.pdf")])
    assert pdf.exit_code == 2 and pdf.output.startswith("error: cannot write a report as .pdf")
    assert len(pdf.output.strip().splitlines()) == 1 and list(tmp_path.iterdir()) == []
    assert report(tmp_path / "report.html") == f"wrote {tmp_path / 'report.html'}\n"
    assert f"wrote {tmp_path / 'report.png'}" in report(tmp_path / "report.md")
    assert (tmp_path / "report.png").read_bytes().startswith(PNG)
    assert f"wrote {tmp_path / 'tables' / 'tradeoff.png'}" in report(tmp_path / "tables")
    assert (tmp_path / "tables" / "tradeoff.png").read_bytes().startswith(PNG)
