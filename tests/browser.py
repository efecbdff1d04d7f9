"""Headless Chromium for the browser tests, through Debian's chromium and chromium-driver given
by path (Selenium Manager kept offline: nothing is downloaded). Skips, with the reason, where
either or the ``selenium`` package is missing."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
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
