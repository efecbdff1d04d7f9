"""Cline, Roo Code and Kilo Code task folders (``<global storage>/tasks/<task id>/``).

These VS Code agents (Cline ``saoudrizwan.claude-dev``; its forks Roo Code
``rooveterinaryinc.roo-cline`` and Kilo Code ``kilocode.kilo-code``) keep one folder per task
(cline/cline ``src/core/storage/disk.ts`` ``GlobalFileNames``; RooCodeInc/Roo-Code
``src/shared/globalFileNames.ts``):

* ``api_conversation_history.json``: the messages sent to the model, a JSON array of Anthropic
  ``MessageParam`` objects ``{role, content: string | blocks}`` with the agents' own keys. This
  file is the session: one per task, key ``<variant>/<task id>`` (variant ``cline``,
  ``roo-code`` or ``kilo-code``, from the extension id in the path, else from the keys only one
  variant writes, else ``cline``). Keys: ``ts`` (ms; Roo on every message, Cline on newer
  assistant messages), Cline's ``modelInfo {modelId, providerId, mode}`` and ``metrics {tokens
  {prompt, completion, cached}, cost}`` (``src/shared/messages/content.ts``, ``metrics.ts``),
  Roo's ``reasoning_details`` / ``reasoning_content`` / ``id`` and its non-destructive context
  edits (``src/core/task-persistence/apiMessages.ts``, ``src/core/condense/index.ts``):
  ``condenseParent``/``condenseId``/``isSummary`` and ``truncationParent``/``truncationId``/
  ``isTruncationMarker``. Roo's newest versions write ``{version: 2, messages: [...]}`` of AI SDK
  ``ModelMessage``s (``rooMessage.ts``: ``tool-call``/``tool-result`` parts, ``role: tool``
  messages, standalone ``{type: reasoning, encrypted_content}`` items); read the same way.
* ``ui_messages.json`` (``claude_messages.json`` in the oldest Cline): the UI's event list
  ``[{ts, type: say|ask, say|ask, text, ...}]`` (``ClineMessage``, ``src/shared/ExtensionMessage.ts``).
* ``task_metadata.json``: ``{files_in_context, model_usage, environment_history}``
  (``src/core/context/context-tracking/ContextTrackerTypes.ts``).
* Sidecars read for metadata only: Roo's ``history_item.json`` (workspace, mode, parent task),
  Cline's ``context_history.json`` (edits Cline applies to old messages at request time:
  which messages it edited) and ``settings.json`` (per-task settings: not read).

Messages. Content blocks map as in ``anthropic_messages`` (``_block_parts``): text, images,
documents, ``thinking``, and native ``tool_use``/``tool_result`` as paired tool calls and results
(the result stays in its ``user`` message). Roo's ``reasoning`` blocks, message-level
``reasoning_content`` and OpenRouter ``reasoning_details`` become ``reasoning`` parts (encrypted
data kept, not tokenised: ``ENCRYPTED_REASONING_MIME``, as is Gemini's ``thoughtSignature``).
Older histories use tools written as XML in the assistant's text and answer them in the next user
message as text blocks (``[read_file for 'x'] Result:``): they stay text, no call is made up.

Compactions. Roo's condense tags the messages a summary replaced with ``condenseParent`` and
inserts the summary (``isSummary``, ``condenseId``) after them; its sliding-window truncation
tags hidden messages with ``truncationParent`` and inserts a marker (``isTruncationMarker``,
``truncationId``). Hidden messages stay in the session, in order and visible, before the summary
or marker, which is flagged ``compaction_summary``; session metadata ``compactions`` lists each
(kind ``condense`` or ``truncation``, tokens before and after from the UI's ``condense_context`` /
``sliding_window_truncation`` events, time, ``summary_seq_index``, messages it hid). Roo keeps the
task's first message in the context after either (``getEffectiveApiHistory``), which a case
prefix starting at the summary leaves out. A summary may repeat a condensed ``tool_use`` so the
kept ``tool_result`` stays paired; the hidden copy's id is renamed ``<id>#condensed-<seq>`` (flag
``call_id_renamed``) and the result pairs with the summary's copy, the one the model saw. Cline
truncates without rewriting the file (``conversationHistoryDeletedRange`` of the UI messages):
the ranges are listed in ``deleted_ranges``; nothing is flagged (Cline keeps the first two
messages, so no single message starts the context again).

Orphans (``orphan_results = "as_text"``): a tool result whose call is not in the file is kept as
text (flag ``orphan_tool_result``): Roo's condense and truncation before they became
non-destructive deleted messages from the file, and deleting or rewinding a message in the UI
does too, so a history can hold a result whose call is gone.

Usage. ``api_req_started`` UI events hold ``tokensIn``/``tokensOut``/``cacheWrites``/
``cacheReads``/``cost`` per request; each goes on the assistant message the request produced (the
last assistant message timed before the next request, where messages carry ``ts``; else in order,
when there are as many requests with counts as assistant messages). ``tokensIn`` excludes cached
input in Cline and older Roo versions (Anthropic's convention) and includes it in newer Roo
versions and OpenAI-protocol providers: a file where some request has fewer ``tokensIn`` than
cache reads plus writes is read as excluding (prompt = in + writes + reads), else as including
(prompt = in); ``token_convention`` says which. Totals as recorded are in ``token_totals`` and
``cost_usd``. A message's own ``metrics`` (newer Cline) is used when no event pairs with it.

Accounting. The history file is one record (a bare message list is one session); when the file is
damaged, each malformed stretch is a further record, rejected with its bytes, and the session is
made of the elements that parse. A message that cannot be read rejects the session. A sidecar met
as a file of its own is counted record by record (array elements, JSONL lines or the document)
as skipped ``task_sidecar`` (``task_without_history`` when no history lies beside it): its content
is read as the metadata of the history's session, never as a second session.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..messages import ENCRYPTED_REASONING_MIME, Message, Part, Session, Usage, as_dict
from ..rejects import RecordError, Reject
from ..validate import FLAG_CALL_ID_RENAMED, FLAG_COMPACTION_SUMMARY, FLAG_TIMESTAMP_INVALID
from .anthropic_messages import _block_parts
from .base import Importer, exception_reason, expect, importers, require
from .parts import unknown_part
from .reader import iter_records
from .records import Record, sub_record
from .sniffing import SNIFF_BYTES, Sample, sample_of
from .times import iso_of_nanos, nanos_of, timestamp_of

HISTORY = "api_conversation_history.json"
UI_MESSAGES = "ui_messages.json"
#: the name of ``ui_messages.json`` in the oldest Cline versions (Claude Dev)
OLD_UI_MESSAGES = "claude_messages.json"
TASK_METADATA = "task_metadata.json"
#: Roo Code's copy of the task's history item
HISTORY_ITEM = "history_item.json"
#: Cline's edits to old messages, applied when a request is built
CONTEXT_HISTORY = "context_history.json"
#: Cline's per-task settings
SETTINGS = "settings.json"
SIDECARS = (UI_MESSAGES, OLD_UI_MESSAGES, TASK_METADATA, HISTORY_ITEM, CONTEXT_HISTORY, SETTINGS)
#: the extension's list of its tasks, by the folder it lies in: Cline's ``state/taskHistory.json``
#: and Roo Code's ``tasks/_index.json`` (the task folders hold the conversations)
TASK_INDEXES = {"taskHistory.json": "state", "_index.json": "tasks"}
#: sidecars whose presence beside a history file makes its folder a task folder
_SIBLINGS = (UI_MESSAGES, OLD_UI_MESSAGES, TASK_METADATA, HISTORY_ITEM)
#: message keys only Roo Code (and Kilo Code) write: its non-destructive context edits
ROO_KEYS = frozenset(
    {"condenseId", "condenseParent", "isSummary", "truncationId", "truncationParent",
     "isTruncationMarker"}
)  # fmt: skip
#: extension ids (folder names of VS Code's global storage) and CLI folders, by variant
_PATH_MARKS = (
    ("kilo-code", ("kilocode.kilo-code", "kilo-code", ".kilocode", "kilocode")),
    ("roo-code", ("rooveterinaryinc.roo-cline", "roo-cline", "roo-code")),
    ("cline", ("saoudrizwan.claude-dev", "claude-dev", ".cline")),
)
#: UI events only Roo Code (and its forks) write
_ROO_SAYS = frozenset(
    {"condense_context", "condense_context_error", "sliding_window_truncation",
     "checkpoint_saved", "subtask_result", "api_req_retry_delayed", "api_req_deleted"}
)  # fmt: skip
#: UI events only Cline writes
_CLINE_SAYS = frozenset({"checkpoint_created", "deleted_api_reqs", "task"})
ENC = ENCRYPTED_REASONING_MIME
#: paths of files in context listed in the metadata, at most
MAX_FILE_PATHS = 200
__all__ = ["ClineImporter"]


# --- where a file stands ------------------------------------------------------------------------


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:
        return False


def has_siblings(path: Path) -> bool:
    """The history file lies in a task folder: a UI message list or task metadata beside it."""
    return path.name == HISTORY and any(_is_file(path.parent / n) for n in _SIBLINGS)


def _has_history(path: Path) -> bool:
    return _is_file(path.parent / HISTORY)


def _roo_keys(records: Any) -> bool:
    return any(isinstance(r, dict) and not ROO_KEYS.isdisjoint(r) for r in records)


def _history_records(sample: Sample) -> tuple[Any, ...] | None:
    """The sampled messages when the sample looks like a task history, else None."""
    records: tuple[Any, ...]
    if sample.layout == "array":
        records = sample.records
    elif sample.layout == "document" and sample.records:
        doc = sample.records[0]
        if not (
            isinstance(doc, dict) and isinstance(doc.get("version"), int)
            and isinstance(doc.get("messages"), list)
        ):  # fmt: skip
            return None
        records = tuple(doc["messages"][:8])
    else:
        return None
    if not all(_is_history_item(r) for r in records):
        return None
    return records


def _is_history_item(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    if "role" not in value:
        return value.get("type") == "reasoning"  # a standalone reasoning item (Roo)
    return value.get("role") in ("user", "assistant", "tool", "system")


def _is_ui_event(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and value.get("type") in ("say", "ask")
        and isinstance(value.get(value.get("type")), str)
        and isinstance(value.get("ts"), int | float)
        and "role" not in value
    )


def _looks_like_ui(sample: Sample) -> bool:
    return (
        sample.layout == "array"
        and bool(sample.records)
        and _is_ui_event(sample.records[0])
        and all(isinstance(r, dict) and r.get("type") in ("say", "ask") for r in sample.records)
    )


def _looks_like_task_metadata(sample: Sample) -> bool:
    if sample.layout != "document" or not sample.records:
        return False
    doc = sample.records[0]
    if not isinstance(doc, dict) or not isinstance(doc.get("files_in_context"), list):
        return False
    return set(doc) <= {"files_in_context", "model_usage", "environment_history"} or all(
        isinstance(f, dict) and "path" in f and "record_state" in f
        for f in doc["files_in_context"][:8]
    )


def _sidecar_kind(path: Path, sample: Sample) -> str | None:
    """Which sidecar ``path`` is (by name, or by structure for a renamed UI list), or None."""
    if path.name in SIDECARS:
        return path.name
    if _looks_like_ui(sample):
        return UI_MESSAGES
    if _looks_like_task_metadata(sample):
        return TASK_METADATA
    return None


def variant_of(path: Path, found: _TaskFiles | None = None) -> tuple[str, str]:
    """The agent that wrote a task folder and the evidence: ``path`` (its extension id),
    ``structure`` (keys only that agent writes) or ``default``."""
    try:
        parts = [p.lower() for p in path.resolve().parts[:-1]]
    except (OSError, RuntimeError):
        parts = [p.lower() for p in path.parts[:-1]]
    for variant, marks in _PATH_MARKS:
        if any(p in marks for p in parts):
            return variant, "path"
    if found is not None:
        if found.roo_evidence:
            return "roo-code", "structure"
        if found.cline_evidence:
            return "cline", "structure"
    return "cline", "default"


# --- detection ----------------------------------------------------------------------------------


#: detection: a task's own file (history, UI messages, metadata) in a folder with its others
TASK_FOLDER_SCORE = 0.95
#: a file named like a task's, with the task's history beside it, or the task index
NAMED_SCORE = 0.9
#: a file shaped like a task's (UI messages, Roo's history keys), wherever it is
SHAPED_SCORE = 0.9
#: a file shaped like a task's metadata, wherever it is
METADATA_SHAPED_SCORE = 0.85


def is_task_index(path: Path) -> bool:
    return TASK_INDEXES.get(path.name) == path.parent.name


def sniff_cline(path: Path, sample: Sample) -> float:
    if is_task_index(path) and sample.layout in ("array", "document"):
        return NAMED_SCORE
    if path.name == HISTORY:
        records = _history_records(sample)
        if records is None:
            return 0.0
        if has_siblings(path):
            return TASK_FOLDER_SCORE
        return SHAPED_SCORE if _roo_keys(records) else 0.0
    if path.name in SIDECARS:
        if path.name in (UI_MESSAGES, OLD_UI_MESSAGES) and _looks_like_ui(sample):
            return TASK_FOLDER_SCORE
        if path.name == TASK_METADATA and _looks_like_task_metadata(sample):
            return TASK_FOLDER_SCORE
        return NAMED_SCORE if _has_history(path) else 0.0
    if _looks_like_ui(sample):
        return SHAPED_SCORE
    if _looks_like_task_metadata(sample):
        return METADATA_SHAPED_SCORE
    records = _history_records(sample)
    return SHAPED_SCORE if records and _roo_keys(records) else 0.0


# --- the history's messages ---------------------------------------------------------------------


def _reasoning_details(details: Any, where: str) -> list[Part]:
    """OpenRouter ``reasoning_details`` (``reasoning.text`` / ``.summary`` / ``.encrypted``)."""
    parts: list[Part] = []
    for i, d in enumerate(expect(details, list, where, "reasoning_details")):
        expect(d, dict, f"{where}[{i}]", "reasoning detail")
        kind = d.get("type")
        if kind == "reasoning.encrypted" and isinstance(d.get("data"), str):
            parts.append(Part("reasoning", content=d["data"], mime_type=ENC))
        elif kind == "reasoning.summary" and isinstance(d.get("summary"), str):
            parts.append(Part("reasoning", content=d["summary"], name="summary"))
        elif isinstance(d.get("text"), str):
            parts.append(Part("reasoning", content=d["text"]))
        else:
            parts.append(unknown_part(d))
    return parts


def _reasoning_item(item: dict[str, Any], where: str) -> list[Part]:
    """A ``reasoning`` item or block: its summary, its text, its encrypted content."""
    parts: list[Part] = []
    summary = item.get("summary")
    if summary is not None:
        for i, s in enumerate(expect(summary, list, f"{where}.summary", "summary")):
            text = s.get("text") if isinstance(s, dict) else s
            if isinstance(text, str) and text:
                parts.append(Part("reasoning", content=text, name="summary"))
            elif text is not None:
                raise RecordError(
                    "wrong_type", "a summary entry has no text", f"{where}.summary[{i}]"
                )
    text = item.get("text")
    if text is not None and expect(text, str, f"{where}.text", "reasoning text"):
        parts.append(Part("reasoning", content=text))
    encrypted = item.get("encrypted_content")
    if encrypted is not None and expect(encrypted, str, f"{where}.encrypted_content", "data"):
        parts.append(Part("reasoning", content=encrypted, mime_type=ENC))
    return parts


def _tool_output(output: Any, where: str) -> tuple[str, list[Part], bool]:
    """An AI SDK tool result ``output`` (``{type: text|json|error-text|error-json|content,
    value}``): its text, its media parts, and whether it is an error."""
    if isinstance(output, str):
        return output, [], False
    expect(output, dict, where, "tool output")
    kind = output.get("type")
    value = output.get("value")
    error = isinstance(kind, str) and kind.startswith("error")
    if kind in ("text", "error-text"):
        return expect(value, str, f"{where}.value", "output text"), [], error
    if kind == "content":
        texts: list[str] = []
        media: list[Part] = []
        for i, item in enumerate(expect(value, list, f"{where}.value", "output content")):
            at = f"{where}.value[{i}]"
            expect(item, dict, at, "output part")
            if item.get("type") == "text":
                texts.append(expect(item.get("text", ""), str, f"{at}.text", "text"))
            elif isinstance(item.get("data"), str):
                media.append(
                    Part("blob", content=item["data"], mime_type=item.get("mediaType"),
                         modality="image" if str(item.get("mediaType", "")).startswith("image/") else "file")
                )  # fmt: skip
            else:
                media.append(unknown_part(item))
        return "\n".join(texts), media, error
    return json.dumps(value if kind else output, ensure_ascii=False), [], error


def _sdk_media(block: dict[str, Any], kind: str, where: str) -> Part:
    """An AI SDK ``image`` (``image``) or ``file`` (``data``) part: a data URL, a URL or base64."""
    data = block.get("image" if kind == "image" else "data")
    mime = block.get("mediaType") or block.get("mimeType")
    modality = "image" if kind == "image" or str(mime or "").startswith("image/") else "file"
    if isinstance(data, str):
        if data.startswith("data:"):
            header, _, payload = data.partition(",")
            return Part("blob", content=payload, mime_type=header[5:].split(";")[0] or mime,
                        modality=modality)  # fmt: skip
        if data.startswith(("http://", "https://")):
            return Part("uri", uri=data, mime_type=mime, modality=modality)
        return Part("blob", content=data, mime_type=mime, modality=modality)
    return Part("file", content=json.dumps(block, ensure_ascii=False), mime_type=mime,
                modality=modality)  # fmt: skip


def _block(block: Any, where: str) -> tuple[list[Part], bool]:
    """Parts of one content block, and whether it is a tool result marked as an error."""
    if isinstance(block, dict):
        kind = block.get("type")
        if kind == "text" and block.get("reasoning_details") is not None:
            details = _reasoning_details(block["reasoning_details"], f"{where}.reasoning_details")
            return [*details, *_block_parts(block, where)], False
        if kind == "reasoning":
            return _reasoning_item(block, where), False
        if kind == "thoughtSignature":
            signature = expect(block.get("thoughtSignature", ""), str, where, "thoughtSignature")
            return [
                Part("reasoning", content=signature, name="thoughtSignature", mime_type=ENC)
            ], False
        if kind == "tool-call":
            call_id = expect(require(block, "toolCallId", where), str, f"{where}.toolCallId", "id")
            name = expect(require(block, "toolName", where), str, f"{where}.toolName", "name")
            args = block.get("input", block.get("args", {}))
            return [
                Part.call(call_id, name, expect(args, (dict, str, list), f"{where}.input", "input"))
            ], False
        if kind == "tool-result":
            call_id = expect(require(block, "toolCallId", where), str, f"{where}.toolCallId", "id")
            named = block.get("toolName")
            tool = named if isinstance(named, str) else None
            text, media, error = _tool_output(
                block.get("output", block.get("result")), f"{where}.output"
            )
            return [Part.response(call_id, text, tool), *media], error
        if kind in ("image", "file") and "source" not in block:
            return [_sdk_media(block, kind, where)], False
        error = kind == "tool_result" and block.get("is_error") is True
        return _block_parts(block, where), error
    return _block_parts(block, where), False


@dataclass
class _Entry:
    """One message of the history and the agent's keys on it."""

    index: int
    message: Message
    value: dict[str, Any]

    def key(self, name: str) -> Any:
        return self.value.get(name)

    @property
    def ts(self) -> int | None:
        try:
            return nanos_of(self.value.get("ts"))
        except ValueError:
            return None

    @property
    def is_response(self) -> bool:
        """An assistant message a model request produced (not a summary or a marker)."""
        return (
            self.message.role == "assistant"
            and self.value.get("isSummary") is not True
            and self.value.get("isTruncationMarker") is not True
            and "role" in self.value
        )


def _entry(value: Any, index: int, where: str) -> _Entry:
    expect(value, dict, where, "message")
    if "role" not in value and value.get("type") == "reasoning":  # a standalone reasoning item
        parts, role, is_error = _reasoning_item(value, where), "assistant", False
    else:
        role = expect(require(value, "role", where), str, f"{where}.role", "role")
        if role not in ("user", "assistant", "system", "tool"):
            raise RecordError(
                "unknown_role", f"role {role!r} is not a message role", f"{where}.role"
            )
        content = require(value, "content", where)
        parts, is_error = [], False
        if isinstance(content, str):
            parts = [Part.text(content)] if content else []
        else:
            for i, block in enumerate(expect(content, list, f"{where}.content", "content")):
                made, error = _block(block, f"{where}.content[{i}]")
                parts.extend(made)
                is_error = is_error or error
        front: list[Part] = []
        if value.get("reasoning_details") is not None:
            front = _reasoning_details(value["reasoning_details"], f"{where}.reasoning_details")
        thought = value.get("reasoning_content")
        if (
            isinstance(thought, str)
            and thought
            and not any(p.type == "reasoning" and p.content == thought for p in parts)
        ):
            front.insert(0, Part("reasoning", content=thought))
        parts = [*front, *parts]
    timestamp, bad_time = timestamp_of(value.get("ts", value.get("timestamp")))
    message = Message(
        role=role,
        parts=tuple(parts),
        is_error=is_error,
        timestamp=timestamp,
        flags=(FLAG_TIMESTAMP_INVALID,) if bad_time else (),
        source_path=where,
    )
    return _Entry(index, message, value)


# --- the sidecars --------------------------------------------------------------------------------


@dataclass
class _Request:
    ts: int | None
    info: dict[str, Any]

    def count(self, key: str) -> int | None:
        v = self.info.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None

    @property
    def has_counts(self) -> bool:
        return any(self.count(k) is not None for k in ("tokensIn", "tokensOut"))


@dataclass
class _TaskFiles:
    """What the sidecars of a task folder say."""

    found: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    requests: list[_Request] = field(default_factory=list)
    deleted_requests: list[dict[str, Any]] = field(default_factory=list)
    condenses: list[tuple[int | None, dict[str, Any]]] = field(default_factory=list)
    truncations: list[tuple[int | None, dict[str, Any]]] = field(default_factory=list)
    deleted_ranges: list[dict[str, Any]] = field(default_factory=list)
    events: Counter[str] = field(default_factory=Counter)
    ui_messages: int = 0
    models: list[str] = field(default_factory=list)
    providers: list[str] = field(default_factory=list)
    modes: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    roo_evidence: bool = False
    cline_evidence: bool = False


def _add(seen: list[str], value: Any) -> None:
    if isinstance(value, str) and value and value not in seen:
        seen.append(value)


def _values(path: Path, files: _TaskFiles) -> list[Any]:
    """The readable records of a sidecar (array elements, lines or the document); a damaged
    sidecar is noted in ``sidecar_errors``, what parses is used."""
    values: list[Any] = []
    bad = 0
    for item in iter_records(path, "cline"):
        if isinstance(item, Reject):
            bad += 1
        else:
            values.append(item.value)
    files.found.append(path.name)
    if bad:
        files.errors[path.name] = f"{bad} unreadable record(s)"
    return values


def _read_sidecars(folder: Path) -> _TaskFiles:
    """What the task folder's sidecars say; one that cannot be read is noted in
    ``sidecar_errors``, never a reason to refuse the session."""
    files = _TaskFiles()
    readers = (
        (UI_MESSAGES, _read_ui_file),
        (TASK_METADATA, _read_task_metadata_file),
        (HISTORY_ITEM, _read_history_item),
        (CONTEXT_HISTORY, _read_context_history),
    )
    for name, reader in readers:
        path = folder / name
        if name == UI_MESSAGES and not _is_file(path):
            path = folder / OLD_UI_MESSAGES
        if not _is_file(path):
            continue
        try:
            reader(_values(path, files), files)
        except Exception as e:  # a sidecar of an unexpected shape: the history still imports
            files.errors[path.name] = f"not read: {type(e).__name__}: {e}"[:200]
    if _is_file(folder / SETTINGS):
        files.found.append(SETTINGS)
    return files


def _first_object(values: list[Any]) -> dict[str, Any]:
    return values[0] if values and isinstance(values[0], dict) else {}


def _read_ui_file(values: list[Any], files: _TaskFiles) -> None:
    _read_ui(values, files)


def _read_task_metadata_file(values: list[Any], files: _TaskFiles) -> None:
    _read_task_metadata(_first_object(values), files)


def _read_history_item(values: list[Any], files: _TaskFiles) -> None:
    item = _first_object(values)
    files.roo_evidence = True
    for key, out in (
        ("workspace", "cwd"),
        ("parentTaskId", "parent_task_id"),
        ("rootTaskId", "root_task_id"),
        ("number", "task_number"),
    ):
        if isinstance(item.get(key), str | int) and not isinstance(item.get(key), bool):
            files.meta[out] = item[key]
    _add(files.modes, item.get("mode"))


def _read_context_history(values: list[Any], files: _TaskFiles) -> None:
    files.cline_evidence = True
    files.meta["context_edited_messages"] = _edited_messages(values)


def _edited_messages(values: list[Any]) -> list[int]:
    """Indexes of the messages Cline's ``context_history.json`` edits (``[[index, [type,
    [[block, updates]]]], ...]``, or JSONL ``{kind: snapshot, updates}`` records)."""
    entries: Any = values
    snapshots = [v for v in values if isinstance(v, dict) and v.get("kind") == "snapshot"]
    if snapshots:
        entries = snapshots[-1].get("updates")
    if not isinstance(entries, list):
        return []
    out = [e[0] for e in entries if isinstance(e, list) and e and isinstance(e[0], int)]
    return sorted(set(out))


def _read_ui(events: list[Any], files: _TaskFiles) -> None:
    files.ui_messages = len(events)
    for e in events:
        if not isinstance(e, dict):
            continue
        kind = e.get("type")
        name = e.get(kind) if kind in ("say", "ask") else None
        if not isinstance(name, str):
            continue
        files.events[f"{kind}:{name}"] += 1
        if name in _ROO_SAYS:
            files.roo_evidence = True
        elif name in _CLINE_SAYS or "conversationHistoryDeletedRange" in e:
            files.cline_evidence = True
        try:
            ts = nanos_of(e.get("ts"))
        except ValueError:
            ts = None
        info = as_dict(e.get("modelInfo"))
        _add(files.models, info.get("modelId"))
        _add(files.providers, info.get("providerId"))
        _add(files.modes, info.get("mode"))
        deleted = e.get("conversationHistoryDeletedRange")
        if (
            isinstance(deleted, list) and len(deleted) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) for x in deleted)
            and not any(r["range"] == deleted for r in files.deleted_ranges)
        ):  # fmt: skip
            files.deleted_ranges.append(
                {"range": deleted, "timestamp": iso_of_nanos(ts) if ts is not None else None}
            )
        if e.get("partial") is True:
            continue
        if kind == "say" and name in ("api_req_started", "deleted_api_reqs"):
            try:
                parsed = json.loads(e.get("text") or "{}")
            except (ValueError, TypeError, RecursionError):
                parsed = {}
            if not isinstance(parsed, dict):
                parsed = {}
            if name == "api_req_started":
                files.requests.append(_Request(ts, parsed))
            else:
                files.deleted_requests.append(parsed)
        elif name == "condense_context" and isinstance(e.get("contextCondense"), dict):
            files.condenses.append((ts, e["contextCondense"]))
        elif name == "sliding_window_truncation" and isinstance(e.get("contextTruncation"), dict):
            files.truncations.append((ts, e["contextTruncation"]))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _read_task_metadata(doc: dict[str, Any], files: _TaskFiles) -> None:
    entries = [f for f in _list(doc.get("files_in_context")) if isinstance(f, dict)]
    paths: list[str] = []
    sources: Counter[str] = Counter()
    for f in entries:
        _add(paths, f.get("path"))
        if isinstance(f.get("record_source"), str):
            sources[f["record_source"]] += 1
        if "cline_read_date" in f or "cline_edit_date" in f:
            files.cline_evidence = True
        if "roo_read_date" in f or "roo_edit_date" in f:
            files.roo_evidence = True
    if entries:
        files.meta["files_in_context"] = len(entries)
        files.meta["files_in_context_paths"] = paths[:MAX_FILE_PATHS]
        if len(paths) > MAX_FILE_PATHS:
            files.meta["files_in_context_paths_left_out"] = len(paths) - MAX_FILE_PATHS
        files.meta["files_in_context_sources"] = dict(sorted(sources.items()))
    for use in _list(doc.get("model_usage")):
        if isinstance(use, dict):
            files.cline_evidence = True
            _add(files.models, use.get("model_id"))
            _add(files.providers, use.get("model_provider_id"))
            _add(files.modes, use.get("mode"))
    versions: list[str] = []
    hosts: list[str] = []
    systems: list[str] = []
    for env in _list(doc.get("environment_history")):
        if isinstance(env, dict):
            files.cline_evidence = True
            _add(versions, env.get("cline_version"))
            host = " ".join(str(env[k]) for k in ("host_name", "host_version") if env.get(k))
            _add(hosts, host)
            system = " ".join(
                str(env[k]) for k in ("os_name", "os_version", "os_arch") if env.get(k)
            )
            _add(systems, system)
    for key, values in (("versions", versions), ("hosts", hosts), ("os", systems)):
        if values:
            files.meta[key] = values


# --- usage ---------------------------------------------------------------------------------------


def _convention(requests: list[_Request]) -> str | None:
    cached = [r for r in requests if (r.count("cacheReads") or 0) + (r.count("cacheWrites") or 0)]
    if not cached:
        return None
    if any(
        (r.count("tokensIn") or 0) < (r.count("cacheReads") or 0) + (r.count("cacheWrites") or 0)
        for r in cached
    ):
        return "input_excludes_cache"
    return "input_includes_cache"


def _request_usage(r: _Request, convention: str | None) -> Usage:
    tokens_in, reads, writes = r.count("tokensIn"), r.count("cacheReads"), r.count("cacheWrites")
    prompt = tokens_in
    if tokens_in is not None and convention == "input_excludes_cache":
        prompt = tokens_in + (reads or 0) + (writes or 0)
    return Usage(prompt, reads, r.count("tokensOut"))


def _metrics_usage(metrics: Any, convention: str | None) -> Usage | None:
    """A message's own ``metrics.tokens`` (newer Cline): ``cached`` is reads plus writes."""
    tokens = as_dict(as_dict(metrics).get("tokens"))
    prompt, completion, cached = (tokens.get(k) for k in ("prompt", "completion", "cached"))
    if not all(
        v is None or (isinstance(v, int) and not isinstance(v, bool))
        for v in (prompt, completion, cached)
    ):
        return None
    if prompt is None and completion is None:
        return None
    excludes = convention == "input_excludes_cache" or (
        convention is None and prompt is not None and cached is not None and prompt < cached
    )
    if prompt is not None and cached and excludes:
        prompt += cached
    return Usage(prompt, None, completion)


def _pair_usage(
    entries: list[_Entry], requests: list[_Request], convention: str | None
) -> dict[int, Usage]:
    """Usage by position in ``entries`` of the assistant messages the requests produced."""
    counted = [r for r in requests if r.has_counts]
    responses = [i for i, e in enumerate(entries) if e.is_response]
    out: dict[int, Usage] = {}
    if not counted or not responses:
        return out
    timed = all(entries[i].ts is not None for i in responses) and all(
        r.ts is not None for r in counted
    )
    if timed:
        starts = [r.ts for r in requests if r.ts is not None]
        for r in counted:
            if r.ts is None:
                continue
            later = [t for t in starts if t > r.ts]
            end = min(later) if later else None
            window = [
                i for i in responses
                if (t := entries[i].ts) is not None and t >= r.ts and (end is None or t < end)
            ]  # fmt: skip
            if window and window[-1] not in out:
                out[window[-1]] = _request_usage(r, convention)
    elif len(counted) == len(responses):
        for r, i in zip(counted, responses, strict=True):
            out[i] = _request_usage(r, convention)
    return out


# --- compactions ---------------------------------------------------------------------------------


def _rename_preserved_calls(messages: list[Message], entries: list[_Entry]) -> list[Message]:
    """A summary repeating an earlier ``tool_use`` (Roo keeps the call of a kept result): the
    earlier copy's id becomes ``<id>#condensed-<seq>`` so the result pairs with the summary's."""
    out = list(messages)
    for s, entry in enumerate(entries):
        if entry.key("isSummary") is not True:
            continue
        repeated = {p.id for p in out[s].calls if p.id}
        for j in range(s):
            m = out[j]
            if not any(p.id in repeated for p in m.calls):
                continue
            parts = tuple(
                replace(p, id=f"{p.id}#condensed-{s}")
                if p.type == "tool_call" and p.id in repeated
                else p
                for p in m.parts
            )
            flags = m.flags if FLAG_CALL_ID_RENAMED in m.flags else (*m.flags, FLAG_CALL_ID_RENAMED)
            out[j] = replace(m, parts=parts, flags=flags)
    return out


def _match(
    ids: list[Any], events: list[tuple[int | None, dict[str, Any]]], key: str
) -> list[tuple[int | None, dict[str, Any]] | None]:
    """The UI event of each summary or marker: by id, else in order when the counts agree."""
    by_id = {e[1].get(key): e for e in events if isinstance(e[1].get(key), str)}
    if by_id:
        return [by_id.get(i) if isinstance(i, str) else None for i in ids]
    if len(events) == len(ids):
        return list(events)
    return [None] * len(ids)


def _compactions(entries: list[_Entry], files: _TaskFiles) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for kind, flag_key, id_key, parent_key, events, event_key in (
        ("condense", "isSummary", "condenseId", "condenseParent", files.condenses, "condenseId"),
        ("truncation", "isTruncationMarker", "truncationId", "truncationParent", files.truncations,
         "truncationId"),
    ):  # fmt: skip
        marked = [i for i, e in enumerate(entries) if e.key(flag_key) is True]
        ids = [entries[i].key(id_key) for i in marked]
        for i, own, event in zip(marked, ids, _match(ids, events, event_key), strict=True):
            ts, data = event if event is not None else (None, {})
            hidden = (
                sum(1 for e in entries if e.key(parent_key) == own)
                if isinstance(own, str)
                else None
            )
            out.append(
                {
                    "kind": kind,
                    "trigger": None,
                    "pre_tokens": data.get("prevContextTokens"),
                    "post_tokens": data.get("newContextTokens"),
                    "timestamp": iso_of_nanos(ts)
                    if ts is not None
                    else entries[i].message.timestamp,
                    "summary_seq_index": i,
                    "hidden_messages": hidden,
                }
            )
    return sorted(out, key=lambda c: c["summary_seq_index"])


# --- the importer --------------------------------------------------------------------------------


@importers.register("cline")
class ClineImporter(Importer):
    """Cline / Roo Code / Kilo Code task folders: the API history is the session, the UI
    messages and task metadata beside it are its metadata."""

    suffixes = (".json",)
    #: a task's API history is an Anthropic (or, in Roo's v2, OpenAI-style) message array
    refines = ("anthropic-messages", "openai-chat")
    orphan_results = "as_text"

    def sniff(self, path: Path, head: bytes) -> float:
        return sniff_cline(path, sample_of(path, head))

    def read(self, path: Path) -> Iterator[Session | Reject]:
        try:
            with path.open("rb") as f:
                sample = sample_of(path, f.read(SNIFF_BYTES))
        except OSError:
            sample = Sample(path, "empty", ())
        if is_task_index(path):  # the extension's task list: one record, counted
            self.tally.seen += 1
            self.tally.skip("task_index")
            return
        if path.name != HISTORY and _sidecar_kind(path, sample) is not None:
            yield from self._sidecar(path)
            return
        yield from self._history(path, sample.layout == "document")

    def _sidecar(self, path: Path) -> Iterator[Reject]:
        """A sidecar met as a file of its own: its records are counted, never a session."""
        reason = "task_sidecar" if _has_history(path) else "task_without_history"
        for item in self.records(path):
            if isinstance(item, Reject):
                yield item
            else:
                self.tally.skip(reason)

    def _history(self, path: Path, is_document: bool) -> Iterator[Session | Reject]:
        good: list[Record] = []
        damaged = 0
        document: Record | None = None
        for item in iter_records(path, self.name):
            if isinstance(item, Reject):
                self.tally.seen += 1
                damaged += 1
                yield item
                continue
            good.append(item)
        if is_document and len(good) == 1 and isinstance(good[0].value, dict):
            document = good[0]  # a versioned document (Roo's ``{version: 2, messages}``)
        if not good:
            if not damaged:  # ``[]``: a task that never reached the model
                self.tally.seen += 1
                self.tally.skip("no_session")
            return
        self.tally.seen += 1  # the history document
        try:
            size = path.stat().st_size
        except OSError:
            size = 0
        anchor = Record(0, None, line=1, where=(path, 0, size))
        if document is not None:
            anchor = Record(0, document.value, document.raw, 1)
        yield from self._guarded_whole(
            path, anchor, lambda: self._session(path, good, document, damaged)
        )

    def _guarded_whole(
        self, path: Path, anchor: Record, produce: Any
    ) -> Iterator[Session | Reject]:
        """``guarded`` for the whole history: a reject stands for the file (``record`` None)."""
        try:
            sessions = [self.validated(s) for s in produce()]
        except Exception as e:
            reason, detail = exception_reason(e)
            where = e.json_path if isinstance(e, RecordError) else "$"
            reject = self.reject(path, anchor, reason, detail, where)
            reject.record = None
            yield reject
            return
        if not sessions:
            self.tally.skip("no_session")
        yield from sessions

    def _session(
        self, path: Path, good: list[Record], document: Record | None, damaged: int
    ) -> list[Session]:
        if document is not None:
            doc = document.value
            items = expect(require(doc, "messages", "$"), list, "$.messages", "messages")
            records = [sub_record(i, v) for i, v in enumerate(items)]
            base = "$.messages"
        else:
            records, base = good, "$"
        entries = [_entry(r.value, r.index, f"{base}[{r.index}]") for r in records]
        if not entries:
            return []
        task_id = path.parent.name if path.name == HISTORY else path.stem
        files = _read_sidecars(path.parent) if path.name == HISTORY else _TaskFiles()
        if _roo_keys(e.value for e in entries):
            files.roo_evidence = True
        if any("modelInfo" in e.value or "metrics" in e.value for e in entries):
            files.cline_evidence = True
        variant, evidence = variant_of(path, files)
        convention = _convention(files.requests)
        paired = _pair_usage(entries, files.requests, convention)
        messages: list[Message] = []
        for i, e in enumerate(entries):
            m = e.message
            usage = paired.get(i)
            if usage is None and e.is_response and e.key("metrics") is not None:
                usage = _metrics_usage(e.key("metrics"), convention)
            flags = m.flags
            if e.key("isSummary") is True or e.key("isTruncationMarker") is True:
                flags = (*flags, FLAG_COMPACTION_SUMMARY)
            info = as_dict(e.key("modelInfo"))
            _add(files.models, info.get("modelId"))
            _add(files.providers, info.get("providerId"))
            _add(files.modes, info.get("mode"))
            messages.append(replace(m, usage=usage, flags=flags))
        messages = _rename_preserved_calls(messages, entries)
        meta = self._metadata(
            variant, evidence, task_id, entries, files, convention, paired, damaged
        )
        meta["records"] = [r.index for r in good]
        return [
            Session(
                source_format=self.name,
                source_session_id=task_id,
                messages=messages,
                key=f"{variant}/{task_id}",
                source_location=str(path),
                source_record=0,
                workload=variant,
                metadata=meta,
            )
        ]

    def _metadata(
        self,
        variant: str,
        evidence: str,
        task_id: str,
        entries: list[_Entry],
        files: _TaskFiles,
        convention: str | None,
        paired: dict[int, Usage],
        damaged: int,
    ) -> dict[str, Any]:
        totals = {"tokens_in": 0, "tokens_out": 0, "cache_writes": 0, "cache_reads": 0}
        cost = 0.0
        costed = False
        counted = 0
        for info in [r.info for r in files.requests] + files.deleted_requests:
            req = _Request(None, info)
            if req.has_counts:
                counted += 1
            for key, out in (("tokensIn", "tokens_in"), ("tokensOut", "tokens_out"),
                             ("cacheWrites", "cache_writes"), ("cacheReads", "cache_reads")):  # fmt: skip
                totals[out] += req.count(key) or 0
            if isinstance(info.get("cost"), int | float) and not isinstance(info.get("cost"), bool):
                cost += info["cost"]
                costed = True
        condense_cost: list[float] = [
            c["cost"]
            for _, c in files.condenses
            if isinstance(c.get("cost"), int | float) and not isinstance(c.get("cost"), bool)
        ]
        protocols: list[str] = []
        for r in files.requests:
            _add(protocols, r.info.get("apiProtocol"))
        compactions = _compactions(entries, files)
        meta: dict[str, Any] = {
            "variant": variant,
            "variant_evidence": evidence,
            "task_id": task_id,
            "models": files.models,
            "providers": files.providers,
            "modes": files.modes,
            "api_protocols": protocols,
            **files.meta,
            "requests": len(files.requests) or None,
            "deleted_requests": len(files.deleted_requests) or None,
            "token_totals": totals if counted else None,
            "token_convention": convention,
            "usage_messages": len(paired) or None,
            "cost_usd": round(cost, 6) if costed else None,
            "condense_cost_usd": round(sum(condense_cost), 6) if condense_cost else None,
            "compactions": compactions,
            "condensed_messages": sum(1 for e in entries if e.key("condenseParent") is not None),
            "truncated_messages": sum(1 for e in entries if e.key("truncationParent") is not None),
            "deleted_ranges": files.deleted_ranges,
            "ui_messages": files.ui_messages or None,
            "ui_events": dict(sorted(files.events.items())),
            "sidecars": files.found,
            "sidecar_errors": files.errors,
            "rejected_records": damaged or None,
        }
        return {k: v for k, v in meta.items() if v not in (None, [], {}, 0)}
