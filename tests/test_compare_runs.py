"""``tools/compare_runs.py`` says two run folders hold the same tables, whatever their parts
are named and wherever they live, and names each file whose numbers differ."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import polars as pl
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

from compare_runs import compare


def run_folder(root: Path, part: str, label: str = "no_impact", seconds: float = 1.0) -> Path:
    verdicts = root / "verdicts" / "flow"
    verdicts.mkdir(parents=True)
    pl.DataFrame({"case_id": ["b@2", "a@1"], "label": [label, "impact"]}).write_parquet(
        verdicts / f"part-{part}.parquet"
    )
    manifest = {"run": str(root), "seconds": seconds, "corpus_fingerprint": part * 4}
    (root / "manifest.json").write_text(json.dumps(manifest))
    pl.DataFrame({"policy": ["noop"], "show": [f"ctxreplay show {root} a@1"]}).write_csv(
        root / "examples.csv"
    )
    return root


def test_the_same_tables_under_other_part_names_paths_and_times_are_the_same(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = run_folder(tmp_path / "a", "0001abcd", seconds=1.0)
    b = run_folder(tmp_path / "b", "0002ef01", seconds=9.5)
    assert compare(a, b) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "3 files the same, 0 different"


def test_a_changed_label_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = run_folder(tmp_path / "a", "0001abcd")
    b = run_folder(tmp_path / "b", "0001abcd", label="impact")
    assert compare(a, b) == 1
    out = capsys.readouterr().out
    assert "DIFF  verdicts/flow/part-*.parquet  (2 rows × 2 cols)" in out
    assert out.splitlines()[-1] == "2 files the same, 1 different"
