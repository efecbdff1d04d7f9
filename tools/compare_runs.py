"""Compare every table two run folders hold, row by row: a refactor must change no number.

Reads each Parquet, CSV and JSON(L) file under both folders by its relative path and compares it
with polars (rows sorted on every column, so an order the engine does not promise is ignored).
Columns that measure the machine, not the data (wall times, rates, timestamps, paths), are left
out, as are file fingerprints (they hash paths and mtimes) and the run folder's own path. Prints one line per file and exits 1 on any
difference.

    python tools/compare_runs.py BEFORE AFTER
"""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import polars as pl

#: columns and keys that differ between two runs of the same data on one machine
VOLATILE = re.compile(
    r"(^|_)(seconds|secs|elapsed|wall|duration|started|finished|created|written|time|"
    r"timestamp|mtime|at|per_s|rate|path|dir|host|pid|version|rss|fingerprint)($|_)",
    re.IGNORECASE,
)
TABLE_ENDINGS = (".parquet", ".csv")
TEXT_ENDINGS = (".json", ".jsonl", ".md", ".txt")
FINGERPRINT = re.compile(r"\b(?=\d*[a-f])[0-9a-f]{16}\b")
PART = re.compile(r"^part-.*\.parquet$")


def _stable(value: object) -> object:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in sorted(value.items()) if not VOLATILE.search(k)}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def _frame(path: Path, root: Path) -> pl.DataFrame:
    if path.suffix == ".parquet":
        frame = pl.read_parquet(path)
    else:
        frame = pl.read_csv(io.StringIO(path.read_text().replace(str(root), "RUN")))
    return _sorted(frame.select([c for c in frame.columns if not VOLATILE.search(c)]))


def _frame_set(folder: Path) -> pl.DataFrame:
    frame = pl.concat([pl.read_parquet(p) for p in sorted(folder.glob("part-*.parquet"))])
    return _sorted(frame.select([c for c in frame.columns if not VOLATILE.search(c)]))


def _sorted(frame: pl.DataFrame) -> pl.DataFrame:
    sortable = [c for c, t in frame.schema.items() if t.is_numeric() or t == pl.String]
    return frame.sort(sortable) if sortable else frame


def _text(path: Path, root: Path) -> object:
    # file fingerprints (16 hex digits) hash paths and mtimes, not data
    text = FINGERPRINT.sub("FP", path.read_text().replace(str(root), "RUN"))
    if path.suffix == ".json":
        return _stable(json.loads(text))
    if path.suffix == ".jsonl":
        rows = [_stable(json.loads(line)) for line in text.splitlines() if line]
        return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))
    # Markdown/text: drop lines that state times or rates
    return [ln for ln in text.splitlines() if not re.search(r"\d+(\.\d+)? ?(s|ms)\b|/s\b", ln)]


def _name(path: Path, root: Path) -> Path:
    """Parts of a dataset are named by when they were written: compare the folder as one table."""
    rel = path.relative_to(root)
    return rel.parent / "part-*.parquet" if PART.match(rel.name) else rel


def compare(before: Path, after: Path) -> int:
    names = sorted(
        {_name(p, before) for p in before.rglob("*") if p.is_file()}
        | {_name(p, after) for p in after.rglob("*") if p.is_file()}
    )
    differ = same = 0
    for name in names:
        a, b = before / name, after / name
        if name.suffix not in TABLE_ENDINGS + TEXT_ENDINGS or "cache" in name.parts:
            continue
        if name.name == "part-*.parquet":
            fa, fb = (_frame_set(root / name.parent) for root in (before, after))
            ok = fa.columns == fb.columns and fa.equals(fb)
            print(f"{'same' if ok else 'DIFF'}  {name}  ({fa.height} rows × {fa.width} cols)")
            same += ok
            differ += not ok
            continue
        if not (a.exists() and b.exists()):
            print(f"ONLY {'before' if a.exists() else 'after'}: {name}")
            differ += 1
            continue
        try:
            if name.suffix in TABLE_ENDINGS:
                fa, fb = _frame(a, before), _frame(b, after)
                ok = fa.columns == fb.columns and fa.equals(fb)
                detail = f"{fa.height} rows × {fa.width} cols"
            else:
                ok = _text(a, before) == _text(b, after)
                detail = "text"
        except Exception as exc:
            ok, detail = False, f"unreadable: {exc}"
        print(f"{'same' if ok else 'DIFF'}  {name}  ({detail})")
        same += ok
        differ += not ok
    print(f"{same} files the same, {differ} different")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(compare(Path(sys.argv[1]), Path(sys.argv[2])))
