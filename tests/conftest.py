"""Shared test fixtures. Helpers a test module imports (``corpus_path``, session and corpus
builders) live in ``builders.py``: a module cannot import from a conftest reliably once
sub-folders have their own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import builders
from builders import FIXTURES


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked ``corpora`` is skipped, with the reason, before any of its fixtures run
    when the shared folder is absent (a user's clone); ``builders.shared_path`` refuses a test
    that reads the folder without the mark, so no test can reach it around this."""
    builders.current_test = item
    if item.get_closest_marker("corpora") is not None:
        reason = builders.shared_missing()
        if reason:
            pytest.skip(reason)


def pytest_runtest_teardown(item: pytest.Item) -> None:
    builders.current_test = None


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture(scope="session", autouse=True)
def _no_terminal_size() -> Iterator[None]:
    """No ``COLUMNS``/``LINES`` from the environment: a report rendered without a width is
    rendered as when the output is not a terminal (``DEFAULT_WIDTH``), whoever runs the tests.
    pytest-xdist's workers have ``COLUMNS=80 LINES=24`` set, which wrapped lines the tests read
    whole; a test that wants a width sets it itself (``monkeypatch.setenv("COLUMNS", …)``)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("COLUMNS", raising=False)
        mp.delenv("LINES", raising=False)
        yield


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
    from ctxreplay.datasets.cases import cut_corpus
    from ctxreplay.datasets.store import Corpus

    out = synth_corpus.parent / "cases.parquet"
    return cut_corpus(Corpus(synth_corpus), out, triggers=["user-turns"])[1]


@pytest.fixture
def fresh_endpoints() -> Iterator[None]:
    """The model client's per-endpoint state (concurrency limits, back-off) forgotten before and
    after a test that talks to a model server: use with ``pytest.mark.usefixtures``."""
    from ctxreplay.llm import forget_endpoints

    forget_endpoints()
    yield
    forget_endpoints()


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
