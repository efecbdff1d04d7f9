"""A small run of the import campaign (``benchmarks/campaign_import.py``) on the fixtures alone:
every importer, every mutation kind, no crash, no silent loss, no silent accept."""

from __future__ import annotations

from builders import load_benchmark


def test_small_campaign_on_the_fixtures_finds_nothing() -> None:
    module = load_benchmark("campaign_import")
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
