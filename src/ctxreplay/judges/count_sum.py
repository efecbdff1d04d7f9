"""The sum of a corpus pass's block counts, in a process that imports nothing else.

Most keys of a corpus occur in one or two sessions, so the blocks' counts hold about one row per
distinct token of the corpus, and DuckDB's hash aggregation over them grows with the corpus (about
110 MB of resident memory for 2,000 synthetic sessions). Run in the process that then
judges, that memory would set its peak; run as ``python -m ctxreplay.judges.count_sum``, in a
fresh process holding only DuckDB, it is given back when the sum is done. This module must stay
this small: that process imports it alone.
"""

from __future__ import annotations

import subprocess
import sys


def sum_counts(pattern: str, at_least: int, spill_dir: str, memory: str, out: str) -> None:
    """Each key of the Parquet files ``pattern`` (columns key, c) whose counts add up to at
    least ``at_least``, with that sum, written to ``out`` (Parquet: key, c); DuckDB spills to
    ``spill_dir`` past ``memory``."""
    import duckdb

    db = duckdb.connect()
    try:
        db.execute(f"SET memory_limit='{memory}'")
        db.execute("SET temp_directory=?", [spill_dir])
        db.execute(
            "COPY (SELECT key, sum(c)::BIGINT AS c FROM read_parquet(?) GROUP BY key "
            f"HAVING sum(c) >= {int(at_least)}) TO '{out}' (FORMAT parquet)",
            [pattern],
        )
    finally:
        db.close()


def sum_counts_apart(pattern: str, at_least: int, spill_dir: str, memory: str, out: str) -> None:
    """:func:`sum_counts` in a new Python process (its memory goes with it)."""
    subprocess.run(
        [sys.executable, "-m", __name__, pattern, str(at_least), spill_dir, memory, out],
        check=True,
    )


if __name__ == "__main__":
    p, n, d, m, o = sys.argv[1:6]
    sum_counts(p, int(n), d, m, o)
