"""The figures and verdicts tables are declared once, as ``TypedDict`` rows whose annotations
carry each column's Arrow type and meaning: the schema is derived from them, and a writer that
builds such a row is type-checked against the same declaration."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Annotated, TypedDict, get_type_hints

import pyarrow as pa
import pytest

from ctxreplay.schema import (
    FIGURES,
    NOT_NULL,
    TABLES,
    VERDICTS,
    CostColumns,
    FiguresColumns,
    FiguresRow,
    VerdictRow,
    table,
    typed_columns,
)


class Example(TypedDict):
    name: Annotated[str, pa.string(), "a name", NOT_NULL]
    count: Annotated[int | None, pa.int32(), "how many"]


def test_columns_come_from_the_annotations_in_order_with_their_nullability() -> None:
    assert typed_columns(Example) == [
        ("name", pa.string(), "a name", False),
        ("count", pa.int32(), "how many"),
    ]
    schema = table("example-test", "nowhere", "a test table", typed_columns(Example))
    TABLES.pop("example-test")
    assert schema == pa.schema(
        [pa.field("name", pa.string(), nullable=False), pa.field("count", pa.int32())]
    )


def test_each_table_holds_exactly_its_row_type_s_keys_in_order() -> None:
    assert FIGURES.names == list(get_type_hints(FiguresColumns)) + list(get_type_hints(CostColumns))
    assert set(FIGURES.names) == set(get_type_hints(FiguresRow))
    assert VERDICTS.names == list(get_type_hints(VerdictRow))
    assert TABLES["figures"].docs["pruning_rate"] == "1 − view_tokens / prefix_tokens"


WRONG = """
from ctxreplay.schema import VerdictRow

def row() -> VerdictRow:
    return {
        "run": "r", "policy": "p", "case_id": "c", "session_id": "s", "judge": "j",
        "judge_name": "j", "label": "impact", "losses": [], "n_losses": 0,
        "dependencies": 0, "recoverable": 0, "unscored_reason": None, "retryable": False,
        "explanation": None, "prompt_tokens": 0, "completion_tokens": 0, "usd": 0.0,
        "calls": 0, "cache_hit": False, "prompt_hash": None, "raw_answer": None,
    }
"""


@pytest.mark.parametrize("misspelt", [True, False])
def test_a_misspelt_key_fails_type_checking(tmp_path: Path, misspelt: bool) -> None:
    source = tmp_path / "writer.py"
    source.write_text(WRONG if misspelt else WRONG.replace('"raw_answer"', '"raw"'))
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--follow-imports=silent", str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if misspelt:
        assert done.returncode == 1, done.stdout
        assert 'Extra key "raw_answer" for TypedDict "VerdictRow"' in done.stdout
        assert 'Missing key "raw"' in done.stdout
    else:
        assert done.returncode == 0, done.stdout
