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
        pytest.skip(
            f"real corpora not available at {path} (set CTXREPLAY_CORPORA to run this test)"
        )
    return path


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture(autouse=True)
def _isolated_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keep the tokenizer cache out of the user's home, but shared across the session."""
    cache = tmp_path_factory.getbasetemp() / "ctxreplay-cache"
    monkeypatch.setenv("CTXREPLAY_CACHE_DIR", str(cache))


@pytest.fixture(scope="session")
def synth_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small synthetic corpus with ground truth, shared by the tests that replay and judge."""
    from ctxreplay.datasets.synth import generate

    path = tmp_path_factory.mktemp("synth") / "corpus"
    generate(path, sessions=10, seed=3, progress=False)
    return path


@pytest.fixture(scope="session")
def synth_cases(synth_corpus: Path) -> Path:
    from ctxreplay.datasets.cases import build_cases, parse_trigger, write_cases
    from ctxreplay.datasets.store import Corpus

    corpus = Corpus(synth_corpus)
    frame = build_cases(corpus, [parse_trigger("user-turns")])
    return write_cases(
        frame, synth_corpus.parent / "cases.parquet", {"corpus_fingerprint": corpus.fingerprint()}
    )


@pytest.fixture(scope="session")
def local_model():
    """The real local model (SmolLM2-135M through xllamacpp), shared by every test that needs it;
    skipped, with the reason, where it cannot start."""
    from ctxreplay.llm import LocalModelServer, local_model_available

    reason = local_model_available()
    if reason:
        pytest.skip(f"local model not available: {reason}")
    with LocalModelServer(n_ctx=8192) as server:
        yield server
