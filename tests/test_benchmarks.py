"""Every benchmark still runs against the package as it is: importing each one (its top-level
imports, not its main) and asking for its help. A benchmark that names a module that moved
fails here, not the day someone needs its figures."""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: p.name)
def test_benchmark_imports(path: Path) -> None:
    namespace = runpy.run_path(str(path), run_name="benchmark_import_check")
    assert callable(namespace.get("main")), f"{path.name} has no main()"


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: p.name)
def test_benchmark_help(path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(path), "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage" in done.stdout.lower()
