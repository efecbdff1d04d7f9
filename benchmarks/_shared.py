"""Where the benchmarks find the shared folder: the real public corpora, with the labelled sets
(gold-dev, gold-long) beside them. ``CTXREPLAY_CORPORA`` moves it, as it does for the tests."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPORA = Path(os.environ.get("CTXREPLAY_CORPORA", ROOT.parent / "shared" / "corpora"))
SHARED = CORPORA.parent


def require(path: Path) -> Path:
    """``path``, or exit 1 saying where the corpora were looked for."""
    if not path.exists():
        raise SystemExit(f"no corpora at {path} (set CTXREPLAY_CORPORA or --corpora)")
    return path
