"""Tables are written from rows holding exactly their schema's columns: a misspelt key is a bug
named at once, not a column of nulls."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ctxreplay.files import atomic_write_table
from ctxreplay.schema import CASES, TABLES, SchemaMismatch, rows_table


def case_row(**change: object) -> dict[str, object]:
    row: dict[str, object] = {f.name: 0 for f in CASES}
    row.update(case_id="s@3", session_id="s", source_session_id=None, trigger="user-turns")
    row.update(cut=3, tool_share=0.0)
    row.update(change)
    return row


def test_rows_with_exactly_the_columns_become_the_table() -> None:
    table = rows_table([case_row(), case_row(case_id="s@5", cut=5)], CASES)
    assert table.schema == CASES
    assert table.column("case_id").to_pylist() == ["s@3", "s@5"]


def test_a_misspelt_key_is_refused_naming_the_table_the_row_and_both_keys() -> None:
    row = case_row()
    row["cut_at"] = row.pop("cut")
    with pytest.raises(SchemaMismatch) as e:
        rows_table([case_row(), row], CASES)
    assert str(e.value) == "row 1 of cases: missing ['cut'], not columns ['cut_at']"


def test_a_missing_key_is_refused_even_where_the_column_may_be_null() -> None:
    row = case_row()
    del row["source_session_id"]
    assert CASES.field("source_session_id").nullable
    with pytest.raises(SchemaMismatch, match=r"missing \['source_session_id'\], not columns none"):
        rows_table([row], CASES)


def test_a_writer_s_own_bookkeeping_keys_are_allowed_and_not_written() -> None:
    row = {**case_row(), "\0bytes": 120}
    with pytest.raises(SchemaMismatch):
        rows_table([row], CASES)
    assert rows_table([row], CASES, frozenset({"\0bytes"})).column_names == CASES.names


def test_a_parquet_part_is_never_written_from_a_wrong_row(tmp_path: Path) -> None:
    path = tmp_path / "part.parquet"
    with pytest.raises(SchemaMismatch):
        atomic_write_table([case_row(extra=1)], CASES, path)
    assert list(tmp_path.iterdir()) == []  # no file, no temporary left behind
    atomic_write_table([case_row()], CASES, path)
    assert pq.read_table(path).schema == CASES


def test_the_error_is_not_one_an_importer_takes_for_bad_input() -> None:
    """Importers turn ValueError/TypeError from Arrow into rejects of the record; a writer's
    bug must not hide among them."""
    assert not issubclass(SchemaMismatch, (ValueError, TypeError))
    assert "cases" in TABLES
