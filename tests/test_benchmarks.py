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


def test_the_import_benchmark_measures_named_folders() -> None:
    """``bench_import.py FOLDER`` measures that folder against a bare tokenisation pass."""
    from builders import FIXTURES, run_benchmark

    done = run_benchmark("bench_import", "--repeat", "1", str(FIXTURES / "aider"))
    assert done.returncode == 0, done.stderr[-3000:]
    row = next(ln for ln in done.stdout.splitlines() if ln.startswith("aider "))
    files, _mb, sessions = row.split()[1:4]
    assert (files, sessions) == ("4", "7")
    assert "reject empty_session: 2" in done.stdout


def test_the_floor_benchmark_puts_every_stage_against_its_work_floor(tmp_path: Path) -> None:
    """``bench_floor.py --source DIR``: every stage of a run in a process of its own, each with
    its time against the floor; the floor is the tokens every view handles (its prefix and
    itself) at the measured one-core rate."""
    import json

    import polars as pl

    from builders import FIXTURES, run_benchmark

    out = tmp_path / "figures.json"
    done = run_benchmark(
        "bench_floor", "--source", str(FIXTURES / "tau-bench"), "--trigger", "every:2",
        "--policies", "noop,tool-prune", "--workers", "1", "--keep", str(tmp_path / "run"),
        "--json", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(out.read_text())
    assert list(figures["stages"]) == ["import", "cases", "replay", "judge", "report"]
    rows = pl.read_parquet(tmp_path / "run" / "run" / "figures" / "**" / "*.parquet")
    handled = int((rows["prefix_tokens"] + rows["view_tokens"]).sum())
    floor = figures["floor"]
    assert floor["handled"] == handled > 0
    assert floor["floor_seconds"] == pytest.approx(handled / floor["rate"])
    assert figures["stages"]["replay"]["views"] == rows.height
    lines = done.stdout.splitlines()
    whole = next(line for line in lines if line.startswith("run "))
    total = sum(s["seconds"] for s in figures["stages"].values())
    assert float(whole.split()[2]) == pytest.approx(total / floor["floor_seconds"], abs=1e-3)
    for stage in figures["stages"]:
        assert any(line.startswith(f"{stage} ") for line in lines), stage
