"""Nothing skipped without a word: a folder's files that no importer reads are counted in the
import summary and the manifest with the reason; naming one with ``--format`` reads it."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner

from ctxreplay.cli import main
from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.store import Corpus

from builders import FIXTURES


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "traces"
    shutil.copytree(FIXTURES / "aider", folder / "aider")
    (folder / "README.md").write_text("# My traces\n\nCollected last week.\n")
    (folder / "notes.txt").write_text("nothing to see\n")
    (folder / "run.log").write_text("2026-01-01 started\n")
    return folder


def test_files_no_importer_reads_are_counted_by_reason(tmp_path: Path) -> None:
    summary = import_paths([_folder(tmp_path)], tmp_path / "c", progress=False)
    assert summary.by_format == {"aider": 7}
    assert summary.not_read == {
        "not a trace file: *.md": 1,  # README.md: .md is read by aider, but this one is not aider's
        "not a trace file: *.txt": 1,
        "not a trace file: *.log": 1,
    }
    assert "unknown_format" not in summary.rejected
    assert Corpus(tmp_path / "c").manifest["not_read"] == dict(sorted(summary.not_read.items()))
    text = summary.render()
    assert "not read: 3 files (not a trace file: *.log: 1, not a trace file: *.md: 1" in text


def test_the_cli_prints_them_and_format_reads_a_file_named(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    runner = CliRunner()
    result = runner.invoke(main, ["import", str(folder), "-o", str(tmp_path / "c"), "--quiet"])
    assert result.exit_code == 0, result.output
    assert "not read: 3 files" in result.output
    # named with --format, the README is read as that format: a reject that says why
    summary = import_paths([folder / "README.md"], tmp_path / "d", fmt="aider", progress=False)
    assert (summary.sessions, summary.not_read, dict(summary.rejected)) == (0, {}, {"malformed": 1})
