"""A corpus back out as OpenAI chat JSONL, one session per line.

Each line is ``{session_id, source_session_id, source_format, metadata, messages}`` (and
``workload`` when set); ``messages`` is ``to_openai(messages, extensions=True)``, so the messages
are a valid OpenAI request body and carry, in ``x-ctxreplay``, what that shape cannot say. The
openai-chat importer reads the file back into the same messages (roles, parts, visibility, errors,
usage, timestamps, flags) and the same session ids.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from .openai_format import to_openai
from .store import Corpus, CorpusError


def export_corpus(
    corpus_path: str | os.PathLike[str],
    out_path: str | os.PathLike[str],
    session_ids: Iterable[str] | None = None,
) -> int:
    """Write the sessions (all, or ``session_ids``) to ``out_path``; the number written."""
    corpus = Corpus(corpus_path)
    sessions = {row["session_id"]: row for row in corpus.sessions().iter_rows(named=True)}
    wanted = None if session_ids is None else list(dict.fromkeys(session_ids))
    if wanted is not None:
        missing = [s for s in wanted if s not in sessions]
        if missing:
            raise CorpusError(f"no session {missing[0]!r} in {corpus.path}")
    written = 0
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8", newline="\n") as f:
        for session_id, messages in corpus.iter_sessions(wanted):
            row = sessions[session_id]
            line = {
                "session_id": session_id,
                "source_session_id": row["source_session_id"],
                "source_format": row["source_format"],
                "metadata": json.loads(row["metadata"]) if row["metadata"] else {},
                "messages": to_openai(messages, extensions=True),
            }
            if row["workload"] is not None:
                line["workload"] = row["workload"]
            f.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
            written += 1
    return written
