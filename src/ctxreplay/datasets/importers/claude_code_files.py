"""The files Claude Code keeps beside its session logs, and how a session links to them.

Claude Code 2.x writes a tool output too large for the conversation (about 30,000 characters)
to ``<project>/<session id>/tool-results/<call id>.txt`` and puts a ``<persisted-output>``
preview into the tool result instead: "Output too large (4.8MB). Full output saved to: <path>",
then the first 2 KB. The preview is what the model read, so the message keeps it; the full
output is linked to its call (``persisted_outputs`` in the session's metadata: the file, its
size and sha256) and copied into the corpus, so ``ctxreplay show --output <call id>`` gives it
back byte for byte. Sub-agents leave ``agent-<id>.meta.json`` beside ``agent-<id>.jsonl`` (the
agent type and description): read into the sub-agent session's ``agent_meta``. Newer versions
keep a ``sessions-index.json`` in each project folder.

When an import walks a project folder these files are reached as files of their own: they are
Claude Code's (``sidecar_kind``), read as one record each and counted, by kind, as skipped —
never an ``unknown_format`` reject, never a session.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..messages import Message
from .base import UUID_PATTERN
from .reader import file_sha256

#: skip reasons (``rejects.SKIPS``) of the files beside the logs
PERSISTED_OUTPUT = "persisted_output"
SUBAGENT_META = "subagent_meta"
SESSIONS_INDEX = "sessions_index"
#: how a tool result says its output was persisted
_PERSISTED = re.compile(r"<persisted-output>.*?Full output saved to:\s*(\S[^\r\n]*)", re.S)
#: ``agent_meta`` keeps string values up to this length
_SHORT = 500


def sidecar_kind(path: Path) -> str | None:
    """Which of Claude Code's files beside the logs ``path`` is, by where it lies and its name."""
    if path.parent.name == "tool-results" and (
        path.stem.startswith("toolu_") or UUID_PATTERN.fullmatch(path.parent.parent.name)
    ):
        return PERSISTED_OUTPUT
    if path.name.endswith(".meta.json") and path.name.startswith("agent-"):
        return SUBAGENT_META
    if path.name == "sessions-index.json":
        return SESSIONS_INDEX
    return None


def persisted_outputs(path: Path, messages: list[Message]) -> dict[str, dict[str, Any]]:
    """Each tool result of ``messages`` whose output Claude Code persisted, by call id: the path
    recorded, the file found beside the log (None when it is not there), its bytes and sha256."""
    out: dict[str, dict[str, Any]] = {}
    for m in messages:
        for p in m.responses:
            found = _PERSISTED.search(p.content or "") if p.id else None
            if found is None or p.id is None:
                continue
            recorded = found.group(1).strip()
            local = _locate(path, recorded)
            entry: dict[str, Any] = {"recorded_path": recorded, "file": None}
            if local is not None:
                entry.update(
                    file=str(local.resolve()), bytes=local.stat().st_size, sha256=file_sha256(local)
                )
            out[p.id] = entry
    return out


def _locate(log: Path, recorded: str) -> Path | None:
    """The persisted output ``recorded`` names, looked for beside the log that names it (the log
    and its folder may have moved since): ``<folder>/<session>/tool-results/<name>``, from a
    sub-agent's ``<session>/subagents/`` too."""
    parts = recorded.replace("\\", "/").split("/")
    if len(parts) < 3 or parts[-2] != "tool-results":
        return None
    session, name = parts[-3], parts[-1]
    folders = [log.parent / session, log.parent, log.parent.parent]
    for folder in folders:
        candidate = folder / "tool-results" / name
        if candidate.is_file():
            return candidate
    return None


def agent_meta(log: Path) -> dict[str, Any] | None:
    """The ``agent-<id>.meta.json`` beside a sub-agent's log: its short values, or the reason it
    could not be read."""
    meta = log.with_name(f"{log.stem}.meta.json")
    if not meta.is_file():
        return None
    try:
        value = json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as e:
        return {"file": meta.name, "error": f"{type(e).__name__}: {e}"[:300]}
    if not isinstance(value, dict):
        return {"file": meta.name, "error": f"a {type(value).__name__}, not an object"}
    kept = {
        str(k): v
        for k, v in value.items()
        if isinstance(v, bool | int | float) or (isinstance(v, str) and len(v) <= _SHORT)
    }
    return {"file": meta.name, **kept}
