"""A corpus back out, one session per JSONL line, as OpenAI chat or as Responses API items.

Each line is ``{session_id, source_session_id, source_format, metadata, workload?}`` plus the
session in the chosen shape:

* ``openai-chat``: ``messages`` is ``to_openai(messages, extensions=True)``, a valid OpenAI chat
  request body whose ``x-ctxreplay`` carries what that shape cannot say; the openai-chat importer
  reads the file back into the same messages (roles, parts, visibility, errors, usage,
  timestamps, flags) and the same session ids.
* ``openai-responses``: ``input`` is ``to_responses_items`` of the messages the agent saw
  (``visible``), a valid Responses API ``input``; the openai-responses importer reads it back
  (``session_id`` keeps each line its own conversation).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .messages import Message
from .openai_format import to_openai
from .responses_format import to_responses_items
from .store import Corpus, CorpusError


def _chat(messages: list[Message]) -> dict[str, Any]:
    return {"messages": to_openai(messages, extensions=True)}


def _responses(messages: list[Message]) -> dict[str, Any]:
    return {"input": to_responses_items(m for m in messages if m.visible)}


#: export format → the JSON fields a session becomes
EXPORT_FORMATS: dict[str, Callable[[list[Message]], dict[str, Any]]] = {
    "openai-chat": _chat,
    "openai-responses": _responses,
}


def export_corpus(
    corpus_path: str | os.PathLike[str],
    out_path: str | os.PathLike[str],
    session_ids: Iterable[str] | None = None,
    format: str = "openai-chat",
) -> int:
    """Write the sessions (all, or ``session_ids``) to ``out_path`` in ``format`` (a key of
    ``EXPORT_FORMATS``); the number written."""
    shape = EXPORT_FORMATS.get(format)
    if shape is None:
        raise CorpusError(f"unknown export format {format!r}; use {', '.join(EXPORT_FORMATS)}")
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
            line: dict[str, Any] = {
                "session_id": session_id,
                "source_session_id": row["source_session_id"],
                "source_format": row["source_format"],
                "metadata": json.loads(row["metadata"]) if row["metadata"] else {},
            }
            if row["workload"] is not None:
                line["workload"] = row["workload"]
            line.update(shape(messages))
            f.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
            written += 1
    return written
