"""CLI start-up: the wall time of ``ctxreplay --help`` and of ``import ctxreplay.cli``, each in a
fresh interpreter (best and median of N), and which heavy libraries the import loads.

Building the command tree needs click and the option declarations only; a library the import
loads is paid by every command, ``--help`` and a mistyped option included.

    python benchmarks/bench_cli_startup.py [--repeat 10]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

#: libraries no command's help needs (each takes tenths of a second to import)
HEAVY = (
    "statsmodels",
    "matplotlib",
    "duckdb",
    "polars",
    "pyarrow",
    "openai",
    "tiktoken",
    "ray",
    "starlette",
    "uvicorn",
    "scipy",
    "numpy",
    "pandas",
)


def ctxreplay_command() -> list[str]:
    """The installed ``ctxreplay`` script beside this interpreter (as a user runs it), else
    ``python -m ctxreplay``."""
    script = Path(sys.executable).with_name("ctxreplay")
    found = str(script) if script.is_file() else shutil.which("ctxreplay")
    return [found] if found else [sys.executable, "-m", "ctxreplay"]


def wall_times(command: Sequence[str], repeat: int) -> list[float]:
    """Seconds each of ``repeat`` fresh runs of ``command`` took, start to exit."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - started)
    return times


def heavy_modules_loaded() -> list[str]:
    """The ``HEAVY`` libraries in ``sys.modules`` after ``import ctxreplay.cli``, in a fresh
    interpreter."""
    probe = (
        "import json, sys; import ctxreplay.cli; "
        f"print(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))"
    )
    done = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True)
    loaded: list[str] = json.loads(done.stdout)
    return loaded


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--repeat", type=int, default=10, help="Fresh runs of each command.")
    args = ap.parse_args()
    commands = {
        "ctxreplay --help": [*ctxreplay_command(), "--help"],
        "import ctxreplay.cli": [sys.executable, "-c", "import ctxreplay.cli"],
        "python (bare)": [sys.executable, "-c", "pass"],
    }
    print(f"{'command':<22} {'best s':>7} {'median s':>8}  (of {args.repeat})")
    for name, command in commands.items():
        times = wall_times(command, args.repeat)
        print(f"{name:<22} {min(times):>7.3f} {statistics.median(times):>8.3f}")
    loaded = heavy_modules_loaded()
    print(f"heavy modules loaded by import ctxreplay.cli: {', '.join(loaded) or 'none'}")


if __name__ == "__main__":
    main()
