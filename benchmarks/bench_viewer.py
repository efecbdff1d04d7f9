"""The case browser on a large run: how long until the grid is on screen.

Builds (or reuses, with ``--keep``) a run of the built-in corpus with ``--sessions`` synthetic
sessions under every built-in policy (700 sessions: about 50,000 (case, policy) pairs), judged by
the flow judge; starts ``ctxreplay view`` on it as a user does, and in headless Chromium (Debian's
chromium and chromium-driver) opens the grid ``--repeat`` times, then sorts it and filters it.
Prints: pairs, the server's start (grid built), and per page: time to first contentful paint,
time until the grid's rows are drawn (from navigation start), and the grid request's time and
size (one page of rows, never all of them).

    python benchmarks/bench_viewer.py [--sessions 700] [--keep DIR] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _shared import ROOT

#: read once the grid is drawn: paint and resource timings of the page
TIMINGS = """
const paint = performance.getEntriesByName('first-contentful-paint')[0];
const grid = performance.getEntriesByType('resource').filter((r) => r.name.includes('/api/grid'));
const last = grid[grid.length - 1];
return {fcp: paint ? paint.startTime : null, drawn: window.__gridPainted,
        request: last ? last.duration : null, bytes: last ? last.transferSize : null,
        rows: document.querySelectorAll('#grid tbody tr').length,
        matched: document.getElementById('matched').textContent};
"""


def build(root: Path, sessions: int) -> Path:
    """The run of ``ctxreplay run`` on ``sessions`` synthetic sessions (reused when done)."""
    run = root / "run"
    if not (run / "verdicts").is_dir():
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "ctxreplay", "run", "--out", str(root),
             "--synth-sessions", str(sessions), "--quiet"],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        print(f"built the run in {time.perf_counter() - started:.0f} s")
    return run


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sessions", type=int, default=700)
    ap.add_argument("--keep", type=Path, default=None, help="build or reuse the run here")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-viewer-"))
    run = build(root, args.sessions)

    sys.path.insert(0, str(ROOT / "tests"))
    from selenium.webdriver.support.ui import WebDriverWait

    from browser import chromium, start_view  # Debian's chromium, offline

    started = time.perf_counter()
    server = start_view(run)
    ready = time.perf_counter() - started
    url = server.url
    print(server.line)
    print(f"server up (grid of every pair built) in {ready:.2f} s")

    def page(driver: Any, query: str) -> dict[str, Any]:
        driver.get(url + query)
        WebDriverWait(driver, 60).until(
            lambda d: d.execute_script("return document.body.dataset.ready")
        )
        return driver.execute_script(TIMINGS)

    try:
        with chromium(Path(tempfile.mkdtemp(prefix="bench-viewer-profile-"))) as driver:
            for name, query in (
                ("grid", "?page=grid"),
                ("grid sorted by losses", "?page=grid&sort=losses&desc=1"),
                ("grid filtered (one policy, impact)", "?page=grid&policy=tool-prune&label=impact"),
                ("grid page 400", "?page=grid&p=400"),
            ):
                runs = [page(driver, query) for _ in range(args.repeat)]
                fcp = statistics.median(r["fcp"] for r in runs)
                drawn = statistics.median(r["drawn"] for r in runs)
                request = statistics.median(r["request"] for r in runs)
                print(
                    f"{name}: first paint {fcp:.0f} ms, rows drawn {drawn:.0f} ms "
                    f"(grid request {request:.0f} ms, {runs[0]['bytes']:,} bytes, "
                    f"{runs[0]['rows']} rows shown; {runs[0]['matched']}) — median of {len(runs)}, "
                    f"first {runs[0]['drawn']:.0f} ms"
                )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
