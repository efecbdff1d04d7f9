"""``ctxreplay sql``: ``--describe`` as the README shows it (no folder), and a query over a
corpus."""

from __future__ import annotations

from pathlib import Path
from typing import Any as Folders

from click.testing import CliRunner

from ctxreplay import schema
from ctxreplay.cli import main


def test_describe_needs_no_folder_and_lists_every_table(folders: Folders) -> None:
    bare = CliRunner().invoke(main, ["sql", "--describe"])
    assert bare.exit_code == 0, bare.output
    assert bare.output.count("\n") > len(schema.TABLES)
    for name in schema.TABLES:
        assert any(line.startswith(f"{name}  ") for line in bare.output.splitlines()), name
    given = CliRunner().invoke(main, ["sql", str(folders.corpus), "--describe"])
    assert given.output == bare.output


def test_a_query_without_a_folder_is_one_line(folders: Folders) -> None:
    out = CliRunner().invoke(main, ["sql"])
    assert out.exit_code == 2 and out.output.startswith("error: give a corpus or run FOLDER")
    assert len(out.output.strip().splitlines()) == 1


def test_a_query_over_a_corpus(folders: Folders, tmp_path: Path) -> None:
    out = CliRunner().invoke(
        main, ["sql", str(folders.corpus), "SELECT count(*) AS n FROM sessions", "--format", "csv"]
    )
    assert out.exit_code == 0, out.output
    assert out.output.splitlines()[0] == "n" and int(out.output.splitlines()[1]) > 0
