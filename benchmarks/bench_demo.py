"""Wall time of the README's main command (`ctxreplay demo`) on this machine.

Runs the demo in a fresh folder in a subprocess, as a user would, and prints the total wall
time and the time of each stage as the demo reports it.

    python benchmarks/bench_demo.py [--sessions 200] [--workers 2]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sessions", type=int, default=200)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    out = Path(tempfile.mkdtemp(prefix="ctxreplay-demo-")) / "demo"
    cmd = [
        sys.executable,
        "-m",
        "ctxreplay.cli",
        "demo",
        "-o",
        str(out),
        "--quiet",
        "--sessions",
        str(args.sessions),
        "--workers",
        str(args.workers),
    ]
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - started
    text = done.stdout
    stages = {
        "synthesise": r"tokens \(.*\) in ([\d.]+)s",
        "replay": r"replayed .* in ([\d.]+)s",
        "judge": r"judge \S+: .* in ([\d.]+)s",
    }
    print(f"ctxreplay demo --sessions {args.sessions} --workers {args.workers}")
    for name, pattern in stages.items():
        m = re.search(pattern, text)
        print(f"  {name:<11} {float(m.group(1)):7.1f} s" if m else f"  {name:<11}       ?")
    cases = re.search(r"cases: (\d+) from", text)
    print(f"  cases       {cases.group(1) if cases else '?':>7}")
    print(f"  total wall  {wall:7.1f} s  (report and HTML included; output in {out})")


if __name__ == "__main__":
    main()
