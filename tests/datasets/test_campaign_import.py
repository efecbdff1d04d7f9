"""A small run of the import campaign (``benchmarks/campaign_import.py``) on the fixtures alone:
every importer, every mutation kind, no crash, no silent loss, no silent accept."""

from __future__ import annotations

import importlib.util
import sys

from builders import ROOT


def test_small_campaign_on_the_fixtures_finds_nothing() -> None:
    path = ROOT / "benchmarks" / "campaign_import.py"
    spec = importlib.util.spec_from_file_location("campaign_import", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["campaign_import"] = module
    spec.loader.exec_module(module)
    table = module.campaign(None, per_kind=4, seed=11, small=2, echo=False)
    assert {fmt for fmt, _ in table} == set(module.FORMATS)
    assert {kind for _, kind in table} == set(module.KINDS)
    problems = {
        key: (cell.crashes, cell.silent_losses, cell.silent_accepts, cell.examples)
        for key, cell in table.items()
        if cell.crashes or cell.silent_losses or cell.silent_accepts
    }
    assert problems == {}
    assert sum(cell.records for cell in table.values()) > 300
    assert sum(cell.rejected for cell in table.values()) > 100
