"""The HTML report in a real browser: headless Chromium, driven by Selenium, at 1,400 and
1,000 px wide, on the report of a judged run, of a sweep and of a run whose trace holds markup.

Checked in the DOM the browser laid out: the page never scrolls sideways (a table wider than the
page scrolls inside its own region); every id and command (``.tok``) is one line, and one click
selects all of it (what a person copies is the whole string, compared with the report's frames);
the summary, above the plot, names the leader of each pruning level; markup from a trace does not
run. A screenshot of each page at each width is saved in the test's folder.

Skipped, with the reason, where Chromium, its driver or the ``selenium`` package is missing. In
CI they are installed (Debian: ``apt-get install -y chromium chromium-driver``; ``pip install
selenium``). Selenium Manager is kept offline: the driver and the browser are given by path.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browser import chromium
from ctxreplay.reports import build_report
from ctxreplay.reports.leaders import level_leaders, merged_levels

from judged_run import XSS, XSS_SESSION

WIDTHS = (1400, 1000)


#: what the page's layout is, read in one call: the viewport and the document's widths, each
#: table with the region around it, each id or command, the summary's rows
LAYOUT = """
const style = (e) => getComputedStyle(e);
const out = {
  inner: window.innerWidth,
  doc: document.documentElement.scrollWidth,
  body: document.body.scrollWidth,
  title: document.title,
  pwned: typeof window.__pwned,
  scripts: document.scripts.length,
  images: document.images.length,
  text: document.body.innerText,
  tables: [],
  toks: [],
};
for (const t of document.querySelectorAll('table')) {
  const box = t.parentElement;
  const r = box.getBoundingClientRect();
  out.tables.push({
    id: t.id, region: box.classList.contains('scroll'), overflow: style(box).overflowX,
    table: t.getBoundingClientRect().width, client: box.clientWidth, scroll: box.scrollWidth,
    left: r.left, right: r.right,
  });
}
for (const e of document.querySelectorAll('.tok')) {
  const table = e.closest('table');
  out.toks.push({
    text: e.textContent, lines: e.getClientRects().length, select: style(e).userSelect,
    space: style(e).whiteSpace, table: table ? table.id : null, show: e.classList.contains('show'),
  });
}
const summary = document.getElementById('summary');
out.summaryAbovePlot = summary !== null && summary.getBoundingClientRect().top
  < document.querySelector('img.plot').getBoundingClientRect().top;
out.summary = summary ? [...summary.querySelectorAll('tbody .tok')].map((e) => e.textContent) : [];
return out;
"""


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Headless Chromium through its system driver, with a fresh profile; nothing fetched."""
    with chromium(tmp_path_factory.mktemp("chromium-profile")) as driver:
        yield driver


@pytest.fixture(scope="module")
def pages(
    small_run: Path, sweep_run: Path, xss_run: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[Any, Path]]:
    """Each report and its HTML file."""
    folder = tmp_path_factory.mktemp("html-pages")
    reports = {
        "run": build_report(small_run, bootstrap=50),
        "sweep": build_report(sweep_run, judge=None, bootstrap=50),
        "xss": build_report(xss_run, bootstrap=20),
    }
    out = {}
    for name, report in reports.items():
        [path] = report.save(folder / f"{name}.html")
        out[name] = (report, path)
    return out


def _open(browser: Any, path: Path, width: int, screenshot: Path) -> dict[str, Any]:
    """The page at ``width`` px: its layout (``LAYOUT``), and a full-page screenshot."""
    metrics = {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False}
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    browser.get(path.as_uri())
    layout: dict[str, Any] = browser.execute_script(LAYOUT)
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {**metrics, "height": min(int(height), 12000)}
    )
    assert browser.save_screenshot(str(screenshot))
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    return layout


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", ["run", "sweep"])
def test_the_page_fits_its_width_and_ids_copy_whole(
    browser: Any, pages: dict[str, tuple[Any, Path]], name: str, width: int, tmp_path: Path
) -> None:
    report, path = pages[name]
    shot = tmp_path / f"{name}-{width}.png"
    layout = _open(browser, path, width, shot)
    assert shot.read_bytes().startswith(b"\x89PNG")
    assert layout["inner"] == width
    # the page never scrolls sideways
    assert layout["doc"] <= width and layout["body"] <= width, layout["doc"]
    # every table fits its region, or its region scrolls it (and shows it all when scrolled)
    tables = {t["id"]: t for t in layout["tables"]}
    assert {"summary", "no_impact", "paired", "examples", "policy-params"} <= set(tables)
    if name == "sweep":
        assert {"frontier_judge", "frontier_levels_judge"} <= set(tables)
    for t in layout["tables"]:
        assert t["region"] and t["overflow"] in ("auto", "scroll"), t
        assert t["left"] >= 0 and t["right"] <= width + 0.5, t
        assert t["table"] <= t["client"] + 1 or t["scroll"] >= t["table"] - 1, t
    # every id and command: one line, never wrapped, selected whole
    toks = layout["toks"]
    assert toks
    for tok in toks:
        assert tok["lines"] == 1, tok
        assert tok["space"] == "nowrap" and tok["select"] == "all", tok
    shows = [t["text"] for t in toks if t["show"]]
    assert shows == report.examples["show"].to_list()
    in_table = {(t["table"], t["text"]) for t in toks}
    for policy in report.no_impact["policy"].to_list():
        assert ("no_impact", policy) in in_table, policy
    for case in report.examples["case_id"].to_list():
        assert ("examples", case) in in_table, case
    # the summary, above the plot, names each level's leaders
    assert layout["summaryAbovePlot"]
    leaders = merged_levels(level_leaders(report.no_impact))
    expected = set()
    for r in leaders:
        expected |= {r["leader"], r["strict_leader"]}
    assert set(layout["summary"]) == expected
    assert "leans on recovery" in layout["text"]  # self-gc's no-impact leans on recovery


@pytest.mark.parametrize("width", WIDTHS)
def test_one_click_selects_a_whole_command(
    browser: Any, pages: dict[str, tuple[Any, Path]], width: int
) -> None:
    """What a person copies after clicking a ``show`` command or a policy id is the whole
    string, even where the command runs past the edge of its scrolling region."""
    from selenium.webdriver.common.by import By

    report, path = pages["sweep"]
    metrics = {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False}
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    browser.get(path.as_uri())
    longest = max(report.examples["show"].to_list(), key=len)
    targets = [
        e
        for e in browser.find_elements(By.CSS_SELECTOR, "#examples code.show")
        if e.get_attribute("textContent") == longest
    ][:1]
    assert targets, "the longest show command is not in the examples table"
    targets += browser.find_elements(By.CSS_SELECTOR, "#no_impact .tok")
    assert len(targets) == 1 + report.no_impact.height
    for element in targets:
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
        element.click()
        selected = browser.execute_script("return window.getSelection().toString()")
        assert selected == element.get_attribute("textContent")


@pytest.mark.parametrize("width", WIDTHS)
def test_markup_from_a_trace_does_not_run(
    browser: Any, pages: dict[str, tuple[Any, Path]], width: int, tmp_path: Path
) -> None:
    report, path = pages["xss"]
    assert any(XSS in a for a in report.examples["anchor"].to_list())  # the payload is shown
    layout = _open(browser, path, width, tmp_path / f"xss-{width}.png")
    assert layout["pwned"] == "undefined"
    assert layout["title"] == f"ctxreplay report: {report.run.name}"
    assert layout["scripts"] == 0 and layout["images"] == 1  # the trade-off plot only
    assert XSS in layout["text"] and XSS_SESSION in layout["text"]  # as text, whole
    assert layout["doc"] <= width
