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

from ctxreplay.reports import RenderError, tradeoff_plot

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
    assert noop == (
        "noop           44  44         0           0     0.00              0.00    [0.00, 0.00]"
        "       100.00  [91.97, 100.00]  [100.00, 100.00]            0.00              100.00"
        "  [91.97, 100.00]             0.00                 0.00                     0"
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
        "| noop | 44 | 44 | 0 | 0 | 0.00 | 0.00 | [0.00, 0.00] | 100.00 | [91.97, 100.00] "
        "| [100.00, 100.00] | 0.00 | 100.00 | [91.97, 100.00] | 0.00 | 0.00 | 0 |"
    )
    assert all(line.endswith("|") for line in tables)


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
        assert f"<td>{policy}</td>" in page
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
