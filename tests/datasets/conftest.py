"""Fixtures of the dataset tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxreplay.datasets.store import Corpus

from builders import convo, make_corpus


@pytest.fixture
def corpus(tmp_path: Path) -> Corpus:
    """Three hand-built sessions of the ``convo`` shape: s-a (3 turns), s-b (5), s-c (1)."""
    return make_corpus(
        tmp_path / "c",
        {"a": convo("a", 3, "alpha "), "b": convo("b", 5, "beta beta "), "c": convo("c", 1, "g ")},
    )
