"""Every benchmark still runs against the package as it is: importing each one (its top-level
imports, not its main) and asking for its help. A benchmark that names a module that moved
fails here, not the day someone needs its figures."""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

import pytest

FOLDER = Path(__file__).resolve().parents[1] / "benchmarks"
#: the scripts (``_name.py`` are modules they share, as ``_shared.py``)
BENCHMARKS = sorted(p for p in FOLDER.glob("*.py") if not p.name.startswith("_"))


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: p.name)
def test_benchmark_imports(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(FOLDER))  # as running the script puts its folder first
    namespace = runpy.run_path(str(path), run_name="benchmark_import_check")
    assert callable(namespace.get("main")), f"{path.name} has no main()"


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: p.name)
def test_benchmark_help(path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(path), "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage" in done.stdout.lower()
