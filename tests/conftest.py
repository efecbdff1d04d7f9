"""Shared test fixtures: where the real public corpora are, and small helpers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
CORPORA = Path(os.environ.get("CTXREPLAY_CORPORA", ROOT.parent / "shared" / "corpora"))


def corpus_path(*parts: str) -> Path:
    """A path inside ../shared/corpora; skips the test (with the reason) when it is absent."""
    path = CORPORA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real corpora not available at {path} (set CTXREPLAY_CORPORA to run this test)")
    return path


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the tokenizer cache out of the user's home, but shared across the session."""
    cache = tmp_path_factory.getbasetemp() / "ctxreplay-cache"
    monkeypatch.setenv("CTXREPLAY_CACHE_DIR", str(cache))
