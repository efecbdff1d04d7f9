"""Every format against every other: each fixture of each format is detected as its format with no
``--format``, and never as another (nor as ambiguous: no rival within ``AMBIGUITY_MARGIN``); files that are no trace (a fixture's README,
the scripts that build the SQLite fixtures) are no format's."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlite_fixtures import load_fixture

from ctxreplay.datasets.importers import MIN_SCORE, detect, importers, scores
from ctxreplay.datasets.ingest import walk

from builders import FIXTURES

#: fixture folder → the format of every trace file in it
FORMAT_OF = {
    "aider": "aider",
    "anthropic": "anthropic-messages",
    "claude-code": "claude-code",
    "claude-code-2x": "claude-code",
    "cline": "cline",
    "codex-cli": "codex-cli",
    "gemini-cli": "gemini-cli",
    "goose": "goose",
    "inspect-ai": "inspect-ai",
    "langfuse": "langfuse",
    "langsmith": "langsmith",
    "openai-responses": "openai-responses",
    "openai_chat": "openai-chat",
    "openhands": "openhands",
    "opencode": "opencode",
    "otel": "otel-genai",
    "phoenix": "phoenix",
    "swe-agent": "swe-agent",
    "tau-bench": "tau-bench",
    "tau2-bench": "tau2-bench",
}
#: files of those folders that are no trace
NOT_TRACES = {"README.md", "make_fixture.py"}
#: the SQLite fixtures, built by their folder's script: (folder, builder)
DATABASES = [("opencode", "build_main"), ("opencode", "build_bad"), ("goose", "build_main"),
             ("goose", "build_bad")]  # fmt: skip


def _cases() -> list[tuple[str, str | None]]:
    out = []
    for folder, fmt in sorted(FORMAT_OF.items()):
        for f in sorted(p for p in (FIXTURES / folder).rglob("*") if p.is_file()):
            out.append((str(f.relative_to(FIXTURES)), None if f.name in NOT_TRACES else fmt))
    return out


CASES = _cases()


def test_every_format_has_fixtures_here() -> None:
    found = {fmt for _, fmt in CASES if fmt}
    assert found == set(importers.names()), "each registered format needs a fixture folder"


@pytest.mark.parametrize(("name", "expected"), CASES, ids=[n[-60:] for n, _ in CASES])
def test_each_fixture_is_its_format_and_no_other(name: str, expected: str | None) -> None:
    path = FIXTURES / name
    assert detect(path) == expected  # a rival within the ambiguity margin would raise


@pytest.mark.parametrize(("folder", "build"), DATABASES)
def test_each_database_is_its_format_and_no_other(folder: str, build: str, tmp_path: Path) -> None:
    path = getattr(load_fixture(folder), build)(tmp_path / "db")
    assert detect(path) == FORMAT_OF[folder]
    assert [f for f, s in scores(path) if s > MIN_SCORE] == [FORMAT_OF[folder]]


def test_a_folder_walk_reads_every_trace_file_and_names_the_rest() -> None:
    """Walking all fixture folders offers each trace file to detection and counts the others."""
    files, not_read = walk([FIXTURES / folder for folder in FORMAT_OF])
    offered = {str(f.relative_to(FIXTURES)) for f in files}
    traces = {name for name, fmt in CASES if fmt}
    assert traces <= offered
    assert not_read == {"not a trace file: *.py": 3}  # the fixture builders
    assert {name for name in offered - traces} == {"claude-code-2x/README.md"}
