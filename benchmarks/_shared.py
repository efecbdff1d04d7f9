"""Where the benchmarks find the shared folder: the real public corpora, with the labelled sets
(gold-dev, gold-long) beside them. ``CTXREPLAY_CORPORA`` moves it, as it does for the tests."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CORPORA = Path(os.environ.get("CTXREPLAY_CORPORA", ROOT.parent / "shared" / "corpora"))
SHARED = CORPORA.parent


def require(path: Path) -> Path:
    """``path``, or exit 1 saying where the corpora were looked for."""
    if not path.exists():
        raise SystemExit(f"no corpora at {path} (set CTXREPLAY_CORPORA or --corpora)")
    return path


def in_child(command: list[str], what: str) -> dict[str, Any]:
    """``command`` in a fresh process: the JSON its last line prints, with its wall time and
    peak RSS in MB (``ru_maxrss`` of the child and the workers it waited for)."""
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    output = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - started
    if status != 0:
        raise SystemExit(f"{what} failed (status {status})")
    result: dict[str, Any] = json.loads(output.decode().strip().splitlines()[-1])
    result.update(seconds=elapsed, peak_mb=usage.ru_maxrss / 1024)  # KB on Linux
    return result
