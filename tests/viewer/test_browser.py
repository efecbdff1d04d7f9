"""The case browser in a real browser: headless Chromium driven by Selenium against the server
a user starts (``ctxreplay view RUN``), and against a bundle opened from disk.

Checked in the page the browser drew: the grid's rows, order and filters (and that the filter is
in the URL); a case page shows exactly the view the engine wrote and links each loss from the
future message that needed it to the span of the prefix that held it; A/B puts the discordant
cases first with the paired test; the frontier's points open the grid filtered to them; markup
in a trace never runs. Screenshots at 1,400 px are saved in the test's folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

import polars as pl
import pytest
from viewing import NEEDED, POLICIES, XSS, XSS_SESSION, Server, open_page, redraw

from ctxreplay.judges.base import rendered
from ctxreplay.runs import Run, read_verdicts


def grid_rows(driver: Any) -> list[dict[str, str]]:
    return driver.execute_script(
        "return [...document.querySelectorAll('#grid tbody tr')].map((tr) => ({case: "
        "tr.dataset.case, policy: tr.dataset.policy, cells: [...tr.children].map((td) => "
        "td.textContent)}))"
    )


def column(driver: Any, key: str) -> int:
    keys = driver.execute_script(
        "return [...document.querySelectorAll('#grid th')].map((th) => th.dataset.key)"
    )
    return keys.index(key)


def flow(run: Path) -> pl.DataFrame:
    return read_verdicts(run, "flow").select("policy", "case_id", "label", "losses")


def test_grid_loads_sorts_and_filters(
    server: Server, browser: Any, viewer_run: Path, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    figures = Run(viewer_run).table("figures")
    state = open_page(browser, server.url)
    assert state["error"] is None and state["pwned"] == "undefined"
    rows = grid_rows(browser)
    assert {(r["case"], r["policy"]) for r in rows} == set(
        zip(figures["case_id"], figures["policy"], strict=True)
    )
    browser.save_screenshot(str(tmp_path / "grid-1400.png"))

    # a click on a heading sorts by it, a second click the other way
    at = column(browser, "editable")
    redraw(browser, lambda: browser.find_element(By.CSS_SELECTOR, "th[data-key=editable]").click())
    values = [float(r["cells"][at].rstrip("%")) for r in grid_rows(browser)]
    assert values == sorted(values) and values[0] < values[-1]
    redraw(browser, lambda: browser.find_element(By.CSS_SELECTOR, "th[data-key=editable]").click())
    assert [float(r["cells"][at].rstrip("%")) for r in grid_rows(browser)] == sorted(
        values, reverse=True
    )
    assert parse_qs(urlparse(browser.current_url).query)["desc"] == ["1"]

    # a filter chosen in the page is in the URL: the URL alone gives the same rows again
    from selenium.webdriver.support.ui import Select

    redraw(
        browser, lambda: Select(browser.find_element(By.ID, "f-label")).select_by_value("impact")
    )
    impact = flow(viewer_run).filter(pl.col("label") == "impact")
    shown = {(r["case"], r["policy"]) for r in grid_rows(browser)}
    assert shown == set(zip(impact["case_id"], impact["policy"], strict=True)) and shown
    bookmark = browser.current_url
    assert parse_qs(urlparse(bookmark).query)["label"] == ["impact"]
    open_page(browser, bookmark)
    assert {(r["case"], r["policy"]) for r in grid_rows(browser)} == shown

    # filters by policy, disagreement between judges, lost category, text
    open_page(browser, server.url + "?" + urlencode({"page": "grid", "policy": POLICIES[1]}))
    assert {r["policy"] for r in grid_rows(browser)} == {POLICIES[1]}
    open_page(browser, server.url + "?page=grid&disagree=1")
    assert len(grid_rows(browser)) == 1  # the one pair the ``other`` judge flipped
    lost = flow(viewer_run).explode("losses").drop_nulls("losses")
    category = lost["losses"].struct.field("category")[0]
    open_page(browser, server.url + f"?page=grid&category={category}")
    expected = lost.filter(lost["losses"].struct.field("category") == category)
    assert {(r["case"], r["policy"]) for r in grid_rows(browser)} == set(
        zip(expected["case_id"], expected["policy"], strict=True)
    )
    open_page(browser, server.url + "?page=grid&q=plain-a")
    assert {r["case"].split("@")[0] for r in grid_rows(browser)} == {"s-plain-a"}


def test_grid_pages_through_rows(server: Server, browser: Any, viewer_run: Path) -> None:
    from selenium.webdriver.common.by import By

    total = Run(viewer_run).table("figures").height
    open_page(browser, server.url + "?page=grid&size=2")
    first = grid_rows(browser)
    assert len(first) == 2
    assert browser.find_element(By.ID, "matched").text.startswith(f"page 1 of {-(-total // 2)}")
    redraw(browser, lambda: browser.find_element(By.ID, "next").click())
    second = grid_rows(browser)
    assert len(second) == 2 and not {r["case"] + r["policy"] for r in first} & {
        r["case"] + r["policy"] for r in second
    }
    assert parse_qs(urlparse(browser.current_url).query)["p"] == ["2"]


def lost_pair(run: Path) -> dict[str, Any]:
    """The flow verdict of the markup session under tool-prune that lost ``NEEDED``."""
    verdicts = flow(run).filter(
        (pl.col("policy") == POLICIES[1]) & pl.col("case_id").str.starts_with(f"s-{XSS_SESSION}")
    )
    return next(v for v in verdicts.iter_rows(named=True) if v["losses"])


def test_case_page_shows_the_engine_view_and_links_each_loss(
    server: Server, browser: Any, viewer_run: Path, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    run = Run(viewer_run)
    v = lost_pair(viewer_run)
    url = (
        server.url + "?" + urlencode({"page": "case", "case": v["case_id"], "policy": v["policy"]})
    )
    state = open_page(browser, url)
    assert state["error"] is None
    assert state["pwned"] == "undefined" and state["title"] == "ctxreplay view"
    browser.save_screenshot(str(tmp_path / "case-1400.png"))
    head = browser.find_element(By.ID, "main").text.split("Verdicts")[0]
    assert "null" not in head and "undefined" not in head  # a missing part is left out

    # the view as the page holds it, row by row: the prefix text where kept, else the view's
    shown = browser.execute_script(
        "return [...document.querySelectorAll('#align tbody tr')].map((tr) => ({"
        "status: tr.className.slice(3), prefix: (tr.querySelector('td.prefix pre') || {}).textContent,"
        "view: [...tr.querySelectorAll('pre.view-text')].map((p) => p.textContent)}))"
    )
    texts: list[str] = []
    for row in shown:
        texts += [row["prefix"]] if row["status"] == "kept" and not row["view"] else row["view"]
    engine = [rendered(m) or "(empty)" for m in run.load_view(v["case_id"], v["policy"])]
    assert texts == engine
    assert "pruned" in {row["status"] for row in shown}
    assert any(XSS in (row["prefix"] or "") for row in shown)  # shown as text, not run

    # each loss: the future message's needed span links to the prefix span that held it
    links = browser.execute_script(
        "return [...document.querySelectorAll('a.need')].map((a) => { const t = "
        "document.getElementById(a.getAttribute('href').slice(1)); return {need: a.textContent,"
        " target: t && t.textContent, row: t && t.closest('tr').dataset.index, future: "
        "a.closest('.future').id}; })"
    )
    assert links, "no loss was linked"
    needed = [link for link in links if NEEDED in link["target"]]
    assert needed
    holder = next(
        i for i, m in enumerate(run.load_view(v["case_id"], "noop")) if NEEDED in rendered(m)
    )
    assert {link["row"] for link in needed} == {str(holder)}
    loss = next(x for x in v["losses"] if NEEDED in x["anchor"])
    assert needed[0]["future"] == f"f-{loss['need_seq']}"
    link = browser.find_element(By.CSS_SELECTOR, "a.need")
    link.click()
    assert (
        browser.execute_script("return location.hash")
        == link.get_attribute("href")[link.get_attribute("href").index("#") :]
    )

    # another policy of the case is one click away; the commands copy whole
    other = browser.find_element(By.XPATH, "//a[contains(@class,'policy-link') and text()='noop']")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", other)
    redraw(browser, other.click)
    assert parse_qs(urlparse(browser.current_url).query)["policy"] == ["noop"]
    commands = browser.execute_script(
        "return [...document.querySelectorAll('.cmd .tok')].map((e) => [e.textContent,"
        " getComputedStyle(e).userSelect, e.getClientRects().length])"
    )
    assert commands[0][0] == v["case_id"]
    assert all(c[1] == "all" and c[2] == 1 for c in commands)
    request = browser.execute_script("return document.querySelector('#request pre').textContent")
    assert '"messages"' in request


def test_ab_lists_discordant_cases_first(server: Server, browser: Any, viewer_run: Path) -> None:
    verdicts = flow(viewer_run)
    a, b = POLICIES[1], POLICIES[0]
    both = verdicts.filter(pl.col("policy") == a).join(
        verdicts.filter(pl.col("policy") == b), on="case_id", suffix="_b"
    )
    discordant = set(both.filter(pl.col("label") != pl.col("label_b"))["case_id"])
    assert discordant
    open_page(browser, server.url + "?" + urlencode({"page": "ab", "a": a, "b": b}))
    rows = browser.execute_script(
        "return [...document.querySelectorAll('#ab tbody tr')].map((tr) => [tr.dataset.case,"
        " tr.classList.contains('discordant')])"
    )
    assert {c for c, _ in rows} == set(both["case_id"])
    assert {c for c, d in rows[: len(discordant)]} == discordant and all(
        d for _, d in rows[: len(discordant)]
    )
    test = browser.execute_script("return document.getElementById('ab-test').textContent")
    lost = sum(
        1
        for r in both.iter_rows(named=True)
        if r["label"] == "impact" and r["label_b"] == "no_impact"
    )
    assert f"{both.height} cases both scored" in test and f"{lost} kept by {b} only" in test
    assert "McNemar" in test


def test_frontier_point_opens_the_grid_filtered(server: Server, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    open_page(browser, server.url + "?page=frontier")
    point = browser.find_element(By.CSS_SELECTOR, f"a.point[data-policy='{POLICIES[1]}'] text")
    redraw(browser, point.click)
    query = parse_qs(urlparse(browser.current_url).query)
    assert query["page"] == ["grid"] and query["policy"] == [POLICIES[1]]
    assert {r["policy"] for r in grid_rows(browser)} == {POLICIES[1]}


def test_markup_in_a_trace_never_runs(server: Server, browser: Any, viewer_run: Path) -> None:
    v = lost_pair(viewer_run)
    for query in (
        {"page": "grid", "q": XSS_SESSION},
        {"page": "case", "case": v["case_id"], "policy": v["policy"]},
        {"page": "ab", "a": POLICIES[0], "b": POLICIES[1]},
    ):
        state = open_page(browser, server.url + "?" + urlencode(query))
        assert state["error"] is None
        assert state["pwned"] == "undefined" and state["title"] == "ctxreplay view"
        assert browser.execute_script("return document.querySelectorAll('img').length") == 0


@pytest.mark.parametrize("redact", [False, True], ids=["plain", "redacted"])
def test_bundle_opens_from_disk(
    viewer_run: Path, browser: Any, tmp_path: Path, redact: bool
) -> None:
    import subprocess
    import sys

    out = tmp_path / "bundle"
    done = subprocess.run(
        [sys.executable, "-m", "ctxreplay", "view", str(viewer_run), "--bundle", str(out),
         "--judge", "flow", "--quiet", *(["--redact"] if redact else [])],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "index.html" in done.stdout
    written = "".join(p.read_text() for p in out.rglob("*.js") if "data" in p.parts)
    assert (NEEDED in written) is not redact
    page = (out / "index.html").as_uri()
    state = open_page(browser, page + "?page=grid&sort=editable&desc=1")
    assert state["error"] is None and state["pwned"] == "undefined"
    figures = Run(viewer_run).table("figures")
    rows = grid_rows(browser)
    assert len(rows) == figures.height
    at = column(browser, "editable")
    values = [float(r["cells"][at].rstrip("%")) for r in rows]
    assert values == sorted(values, reverse=True)
    v = lost_pair(viewer_run)
    state = open_page(
        browser,
        page + "?" + urlencode({"page": "case", "case": v["case_id"], "policy": v["policy"]}),
    )
    assert state["error"] is None and state["pwned"] == "undefined"
    text = browser.execute_script("return document.getElementById('align').innerText")
    assert (NEEDED in text) is not redact
    if redact:
        assert " chars]" in text
    open_page(browser, page + "?" + urlencode({"page": "ab", "a": POLICIES[1], "b": POLICIES[0]}))
    assert browser.execute_script("return document.querySelectorAll('#ab tr.discordant').length")
