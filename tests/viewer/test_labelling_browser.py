"""Labelling in the browser: every case of the fixture run labelled by selecting text in the
page, a proposal of the judge rejected, a killed server restarted with nothing lost, and the
labels read by ``calibrate --against deps:`` with the confusion worked out by hand.

The fixture: 3 sessions, each cut once, at the second user turn, after the tool calls; the
prefix holds ``NEEDED`` in the first tool result, and the next turn copies it. It is marked
required in each case. So the gold label is impact for tool-prune:keep=1 (it prunes that result)
and no-impact for noop: 3 views each. The flow judge finds those 3 losses and no other: tp 3,
fn 0, fp 0, tn 3.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from viewing import NEEDED, open_page, redraw, start_server

from browser import SELECT_TEXT
from ctxreplay.judges.labels import load_labels


def wait(driver: Any, script: str) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, 30).until(lambda d: d.execute_script(script))


def label_case(driver: Any) -> str:
    """Label the case the page shows: ``NEEDED`` marked where the prefix holds it, every
    proposal rejected; then done. Returns the case id."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    case = driver.execute_script("return document.querySelector('h1 .tok').textContent")
    while driver.find_elements(By.CSS_SELECTOR, "#proposals button.reject"):
        redraw(driver, driver.find_element(By.CSS_SELECTOR, "#proposals button.reject").click)
    for pre in driver.find_elements(By.CSS_SELECTOR, "#prefix pre[data-seq]"):
        text = driver.execute_script("return arguments[0].textContent", pre)
        if NEEDED in text:
            start = text.index(NEEDED)
            driver.execute_script(SELECT_TEXT, pre, start, start + len(NEEDED))
            wait(driver, "return !document.getElementById('mark-form').hidden")
            assert driver.find_element(By.ID, "m-text").text == NEEDED
            Select(driver.find_element(By.ID, "m-category")).select_by_value("verbatim_source")
            Select(driver.find_element(By.ID, "m-necessity")).select_by_value("required")
            button = driver.find_element(By.ID, "m-add")
            driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", button)
            redraw(driver, button.click)
            marks = driver.execute_script(
                "return [...document.querySelectorAll('mark.marked')].map((m) => m.textContent)"
            )
            assert marks == [NEEDED]
            break  # the page is drawn again: the other messages are new elements
    done = driver.find_element(By.ID, "done")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", done)
    redraw(driver, done.click)
    return case


def test_labels_made_in_the_browser_calibrate_the_judge(
    viewer_run: Path, browser: Any, tmp_path: Path
) -> None:
    import shutil

    # a copy: calibrating writes the deps judge's verdicts into the run
    run = tmp_path / "run"
    shutil.copytree(viewer_run, run)
    labels = tmp_path / "labels"
    server = start_server(run, "--label", str(labels), "--sample", "3", "--seed", "3")
    try:
        state = open_page(browser, server.url + "?page=label")
        assert state["error"] is None and state["pwned"] == "undefined"
        browser.save_screenshot(str(tmp_path / "label-1400.png"))
        sample = json.loads((labels / "labelling.json").read_text())["sample"]
        assert len(sample) == 3
        labelled = [label_case(browser) for _ in range(2)]
    finally:
        server.stop(kill=True)  # a killed server: every label made is on disk

    saved = load_labels(labels)
    assert [c.case for c in saved.cases] == [c for c in sample if c in labelled]
    marked = [d for deps in saved.dependencies.values() for d in deps]
    assert all(d.text == NEEDED and d.necessity == "required" for d in marked)

    server = start_server(run, "--label", str(labels), "--sample", "3", "--seed", "3")
    try:
        state = open_page(browser, server.url + "?page=label")
        assert state["error"] is None
        done = browser.execute_script(
            "return [...document.querySelectorAll('#sample li.done')].length"
        )
        assert done == 2  # the sample and what was labelled came back
        first = open_page(
            browser, server.url + "?" + urlencode({"page": "label", "case": labelled[0]})
        )
        assert first["error"] is None
        assert browser.execute_script(
            "return [...document.querySelectorAll('mark.marked')].map((m) => m.textContent)"
        ) == [NEEDED]
        open_page(browser, server.url + "?page=label")  # the first case not labelled yet
        labelled += [label_case(browser)]
        wait(browser, "return document.getElementById('progress').dataset.labelled === '3'")
        progress = browser.execute_script("return document.getElementById('progress').textContent")
        assert progress.startswith("3 of 3 cases labelled")
        assert "sensitivity 1.00 [" in progress and "specificity 1.00 [" in progress
        browser.save_screenshot(str(tmp_path / "label-done-1400.png"))
    finally:
        server.stop()

    assert sorted(labelled) == sorted(sample)
    out = subprocess.run(
        [sys.executable, "-m", "ctxreplay", "calibrate", str(run), "--judge", "flow",
         "--against", f"deps:{labels}", "--format", "json"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    strict = next(r for r in json.loads(out.stdout)["variants"] if r["variant"] == "strict")
    assert (strict["tp"], strict["fn"], strict["fp"], strict["tn"]) == (3, 0, 0, 3)
