"""Headless Chromium for the browser tests and benchmarks, through Debian's chromium and
chromium-driver given by path (Selenium Manager kept offline: nothing is downloaded; skipped, with
the reason, where either or the ``selenium`` package is missing); the case browser's server
started as a user starts it; a text selection made as a person drags over text."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path(os.environ.get("CTXREPLAY_CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("CTXREPLAY_CHROMEDRIVER", "/usr/bin/chromedriver"))


@contextmanager
def chromium(profile: Path, width: int = 1400, height: int = 1000) -> Iterator[Any]:
    """A headless Chromium with a fresh profile in ``profile``, ``width`` × ``height``."""
    webdriver = pytest.importorskip(
        "selenium.webdriver",
        reason="the browser test needs the selenium package (pip install selenium)",
    )
    for path, what in ((CHROMIUM, "Chromium"), (CHROMEDRIVER, "chromedriver")):
        if not path.exists():
            pytest.skip(
                f"{what} not found at {path} (Debian: apt-get install -y chromium "
                "chromium-driver; or set CTXREPLAY_CHROMIUM / CTXREPLAY_CHROMEDRIVER)"
            )
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    flags = [
        "--headless",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--window-size={width},{height}",
        f"--user-data-dir={profile}",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        flags.append("--no-sandbox")  # Chromium's sandbox refuses to run as root
    for flag in flags:
        options.add_argument(flag)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SE_OFFLINE", "true")  # Selenium Manager: never download a driver or browser
        mp.setenv("SE_AVOID_STATS", "true")
        driver = webdriver.Chrome(
            service=Service(executable_path=str(CHROMEDRIVER)), options=options
        )
    try:
        yield driver
    finally:
        driver.quit()


@dataclass
class Server:
    """A ``ctxreplay view`` process and the address it printed."""

    url: str
    process: subprocess.Popen[str]
    line: str  # what it printed first

    def stop(self, kill: bool = False) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL if kill else signal.SIGINT)
            self.process.wait(timeout=60)


def start_view(run: Path, *args: str) -> Server:
    """``ctxreplay view RUN --port 0 ARGS`` in a process of its own, once it prints its address."""
    process = subprocess.Popen(
        [sys.executable, "-m", "ctxreplay", "view", str(run), "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    found = re.search(r"http://127\.0\.0\.1:\d+/", line)
    if not found:
        process.kill()
        raise RuntimeError(f"ctxreplay view printed no address: {line}{process.stdout.read()}")
    return Server(found.group(0), process, line.strip())


#: select [start, end) of an element's text (``arguments``: element, start, end), as a person
#: dragging over it does
SELECT_TEXT = """
const [pre, start, end] = arguments;
const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
const range = document.createRange();
let at = 0, begun = false, node;
while ((node = walker.nextNode())) {
  const length = node.textContent.length;
  if (!begun && start <= at + length) { range.setStart(node, start - at); begun = true; }
  if (end <= at + length) { range.setEnd(node, end - at); break; }
  at += length;
}
const selection = window.getSelection();
selection.removeAllRanges();
selection.addRange(range);
"""
