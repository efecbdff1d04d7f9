"""Dependency labels for the synthetic corpus, for the sweep and frontier tests."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl


def write_labels(corpus: Path, cases: Path, folder: Path, per_session: int = 2) -> Path:
    """A dependency labels set for the synthetic corpus: in a few cases of each session, the
    first line of the first tool result is required by the next turn."""
    from ctxreplay.datasets.store import Corpus

    folder.mkdir(parents=True, exist_ok=True)
    frame = pl.read_parquet(cases).sort("session_id", "cut")
    sessions = dict(Corpus(corpus).iter_sessions(frame["session_id"].unique().to_list()))
    case_lines, dep_lines = [], []
    for (sid,), group in frame.group_by("session_id", maintain_order=True):
        messages = [m for m in sessions[sid] if m.visible]
        tools = [m for m in messages if m.role == "tool" and m.parts[0].content]
        for row in group.tail(per_session).iter_rows(named=True):
            first = next((m for m in tools if m.seq < row["cut"]), None)
            if first is None:
                continue
            line = next(s for s in first.parts[0].content.splitlines() if s.strip())
            name = f"{sid}@{row['cut']}"
            case_lines.append({"case": name, "session_id": sid, "cut": row["cut"]})
            dep_lines.append(
                {
                    "case": name,
                    "seq": first.seq,
                    "text": line.strip()[:60],
                    "needed_by": row["cut"],
                    "category": "evidence_detail",
                    "necessity": "required",
                    "why": "test",
                }
            )
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in case_lines))
    (folder / "dependencies.jsonl").write_text("".join(json.dumps(d) + "\n" for d in dep_lines))
    return folder
