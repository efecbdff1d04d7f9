"""Rejected records: what could not be imported, why, and the raw bytes so nothing is lost.

Every record an importer reads ends as exactly one of: a session, a reject (this module), or a
skip counted by reason (``SKIPS``: a record that is not a conversation, like an OTel span with no
model call). ``Tally`` is an importer's count of the records it read and of those it skipped; the
import checks, file by file, that records seen = sessions + rejects + skipped.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

#: Reason codes a reject can carry, with a one-line meaning (shown by ``ctxreplay info``).
REASONS: dict[str, str] = {
    "invalid_json": "the record is not valid JSON",
    "truncated": "the file ends in the middle of a record",
    "invalid_utf8": "the record contains bytes that are not valid UTF-8",
    "wrong_type": "a field has the wrong JSON type",
    "missing_field": "a required field is absent",
    "unknown_role": "a message role the format does not define",
    "orphan_tool_result": "a tool result answers a call that was never made",
    "duplicate_tool_call_id": "two tool calls share one id",
    "duplicate_tool_result": "a tool call has more than one result",
    "oversize_message": "a single message is larger than the limit (10 MB by default)",
    "empty_session": "the record holds no messages",
    "duplicate_session": "the same session was imported twice",
    "unreadable_file": "the file could not be read",
    "unknown_format": "no importer recognises the file",
    "empty_file": "the file holds no bytes (or only whitespace)",
    "malformed": "the record does not follow its format",
    "nesting_too_deep": "the record nests JSON deeper than the limit (200 levels)",
    "out_of_range": "a number in the record is too large to use",
    "unstorable": "a value of the session cannot be stored in the corpus",
    "import_error": "the importer failed on this record or file (a bug: report it with the raw bytes)",
}

#: Reasons a record can be skipped (read, counted, not a conversation), with their meaning.
SKIPS: dict[str, str] = {
    "no_model_call": "an OTel span or log record that carries no gen_ai messages",
    "no_spans": "an OTel record that holds no span or log record",
    "in_session": "a model call (an OTel span or event, a Langfuse generation, an OpenInference LLM span, a LangSmith llm run) or a tool run whose messages are all in the session another of its records stands for",
    "in_call": "an OTel per-message event (gen_ai.user.message, gen_ai.choice... of v1.36 and earlier) whose message is in the model call another event of its span stands for",
    "not_a_model_call": "a Langfuse observation, OpenInference span or LangSmith run that is not a model call or a tool run (span, event, agent, chain, retriever, embedding...): trace structure, no messages; its trace and thread still group the calls",
    "tool_in_history": "a Langfuse TOOL observation or OpenInference TOOL span whose result its session already holds (a later model call's input) or that answers no call of its session",
    "no_messages": "a Langfuse generation or OpenInference LLM span that records no input or output messages",
    "trace_record": "a Langfuse trace row (not an observation): its session id, name and user are applied to the observations of its trace",
    "result_in_session": "a LangSmith tool run whose ToolMessage answers a call its session's last model call left open: appended to that session as the call's result",
    "no_session": "a record its importer read without error but made no session of",
    "of_rejected_row": "a database row (an OpenCode message or part, a Goose message) or a Goose log line that belongs to a session or message rejected by another record: that reject holds its parent, the source keeps this one",
    "part_of_session": "a line, row or element holding more of a session another record of its file stands for: its messages (Claude Code, Codex CLI, Gemini CLI and Goose log lines, OpenCode and Goose database rows, logged Responses calls)",
    "no_message": "a Claude Code log line that is not a message (titles, snapshots, hook, queue and mode records), counted in its session's metadata",
    "persisted_output": "a Claude Code tool output saved to <session>/tool-results/: linked to its call (metadata persisted_outputs) and copied into the corpus, not a session of its own",
    "subagent_meta": "a Claude Code sub-agent's agent-<id>.meta.json: read into the sub-agent session's metadata (agent_meta)",
    "sessions_index": "a Claude Code project folder's sessions-index.json (the CLI's list of sessions)",
    "duplicate_record": "a Claude Code log line repeating a uuid already read (re-emitted at a compaction): the first is kept",
    "task_sidecar": "a Cline / Roo Code / Kilo Code task file beside api_conversation_history.json (ui_messages.json, task_metadata.json, ...): read as that task session's metadata",
    "task_index": "a Cline (state/taskHistory.json) or Roo Code (tasks/_index.json) list of the extension's tasks: the task folders hold the conversations",
    "task_without_history": "a Cline / Roo Code / Kilo Code task file whose folder holds no api_conversation_history.json: no model context was recorded",
    "cli_message": "a Gemini CLI chat log line holding one of the CLI's own notices (info, error, warning) or a slash command, never sent to the model: counted in its session's metadata (cli_messages)",
    "empty_chat": "a Gemini CLI chat log (or checkpoint) holding no message the model saw: the CLI writes the file as a session starts",
    "prompt_log": "an entry of a Gemini CLI logs.json: a prompt the user typed, kept for the input history (the chat logs hold the conversation)",
}

#: Flags an import sets on messages (and sessions), with their meaning (shown by ``ctxreplay info``).
FLAGS: dict[str, str] = {
    "arguments_not_json": "tool-call arguments that are not JSON, kept byte for byte",
    "unanswered_tool_call": "a tool call with no result in the session",
    "call_id_renamed": "a reused tool-call id renamed <id>#<n> after the earlier call was answered",
    "timestamp_invalid": "a recorded time that is not a time: numbers (NaN, infinite, out of range) dropped, text kept as written",
    "usage_out_of_range": "a token count that is negative, not an integer or implausibly large: dropped",
    "unknown_part_type": "a content part of a type the importer does not know, kept as the text of its JSON",
    "unknown_event_kind": "an event of a kind the importer does not know was left out (counted in metadata)",
    "conversation_split": "model calls sharing a conversation (OTel, Langfuse, OpenInference, LangSmith) disagree: each consistent history is a session",
    "conversation_incomplete": "a model call of this conversation was rejected; the rest made the session",
    "metadata_non_finite": "NaN or infinite numbers in the session metadata, stored as null",
    "metadata_escaped": "session metadata held bytes that are not UTF-8, stored \\u-escaped",
    "system_rebuilt": "the system prompt was rebuilt from the recorded policy",
    "generation_retried": "the provider rejected earlier generations of this message",
    "from_instruction": "the task instruction inserted as the first user message",
    "demo": "a demonstration that was in the model's context",
    "textual_command": "a command written in the assistant's text, made an explicit tool call",
    "command_in_text": "the command could not be cut out of the assistant's prose",
    "cli_meta": "text the Claude Code CLI injected as a user message (isMeta), which the model reads",
    "api_error": "the Claude Code CLI's own assistant message for a failed request (isApiErrorMessage)",
    "local_command": "a Claude Code slash command and its output, kept as the user message older versions wrote",
    "compaction_summary": "a recorded compaction: the summary that replaced the context before it (cases start their prefix here; --trigger compactions cuts before it)",
    "abandoned_branch": "a message of a branch the session left (an edited or retried turn): kept, not visible",
    "turn_aborted": "the user interrupted the turn this message belongs to",
    "unlogged_input": "an Aider reply to input the CLI sent the model but did not write to its chat history (files the user let in, lint/test or /run output, the architect's plan for the editor)",
    "command_output": "command or lint output an Aider chat history records and the user let into the chat: the user message the model was given (Aider wrapped it in its own prompt)",
    "request_error": "an assistant message whose request ended in an error (OpenCode's message error): kept, not visible, as the agent leaves it out of later requests",
    "orphan_tool_result": "a tool result whose call is not in the log (a resumed or compacted session): kept as text with the same content, so the request stays valid",
}


@dataclass
class Tally:
    """What an importer read from one file: records seen, and those skipped by reason."""

    seen: int = 0
    skipped: Counter[str] = field(default_factory=Counter)

    def skip(self, reason: str, n: int = 1) -> None:
        if n > 0:
            self.skipped[reason] += n


class RecordError(ValueError):
    """Raised by importers for a record they cannot turn into a session."""

    def __init__(self, reason: str, detail: str, json_path: str = "$") -> None:
        super().__init__(f"{reason} at {json_path}: {detail}")
        self.reason = reason
        self.detail = detail
        self.json_path = json_path


@dataclass(slots=True)
class Reject:
    """One rejected record; ``raw`` is the exact bytes of the record as it stood in the file."""

    source_location: str
    reason: str
    detail: str
    raw: bytes
    source_format: str | None = None
    record: int | None = None
    line: int | None = None
    session_id: str | None = None
    json_path: str | None = None

    def where(self) -> str:
        at = [self.source_location]
        if self.line is not None:
            at.append(f"line {self.line}")
        if self.record is not None:
            at.append(f"record {self.record}")
        if self.json_path:
            at.append(self.json_path)
        return ", ".join(at)

    def to_row(self) -> dict[str, Any]:
        """The row of the rejects table; text that is not UTF-8 (a file name, an id read from
        the damaged record) is stored with its bad bytes escaped, so the row always stores."""
        return {
            "source_format": storable(self.source_format),
            "source_location": storable(self.source_location),
            "record": _int64(self.record),
            "line": _int64(self.line),
            "session_id": storable(self.session_id),
            "json_path": storable(self.json_path),
            "reason": storable(self.reason),
            "detail": storable(clip(self.detail)),
            "raw": self.raw,
        }


def _int64(value: Any) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63
    return value if ok else None


def storable(text: Any) -> Any:
    """``text`` as valid UTF-8 (undecodable bytes as ``\\xNN``); non-strings unchanged."""
    if not isinstance(text, str) or text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:  # bytes read from the file come back as they were, then escaped
            data = text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:  # a lone surrogate written as a JSON escape
            data = text.encode("utf-8", "surrogatepass")
        return data.decode("utf-8", "backslashreplace")
    return text


def clip(text: str, limit: int = 2000) -> str:
    """A detail message cut to ``limit`` characters (exception texts can embed whole values)."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"


#: the deepest JSON nesting a record may have (deeper input is rejected ``nesting_too_deep``)
MAX_JSON_DEPTH = 200
_END = object()


def _items(value: Any) -> Any:
    return iter(value.items()) if isinstance(value, dict) else enumerate(value)


def _json_path(keys: list[Any], root: str = "$") -> str:
    out = root
    for k in keys:
        out += f"[{k}]" if isinstance(k, int) else f".{k}"
    return out


def inspect_value(
    value: Any, max_depth: int = MAX_JSON_DEPTH, utf8: bool = True, root: str = "$"
) -> tuple[str, str] | None:
    """``(reason, json_path)`` of the first problem of a parsed JSON value, or None: a string
    (value or key) holding bytes that are not UTF-8 (``invalid_utf8``, when ``utf8``), or nesting
    deeper than ``max_depth`` (``nesting_too_deep``). Iterative: any depth is safe to inspect."""
    if isinstance(value, str):
        return ("invalid_utf8", root) if utf8 and not _is_utf8(value) else None
    if not isinstance(value, dict | list):
        return None
    path: list[Any] = []
    stack = [_items(value)]
    while stack:
        item: Any = next(stack[-1], _END)
        if item is _END:
            stack.pop()
            if path:
                path.pop()
            continue
        key, v = item
        if utf8 and isinstance(key, str) and not _is_utf8(key):
            return "invalid_utf8", _json_path(path, root)
        if isinstance(v, str):
            if utf8 and not _is_utf8(v):
                return "invalid_utf8", _json_path([*path, key], root)
        elif isinstance(v, dict | list):
            if len(stack) >= max_depth:
                return "nesting_too_deep", _json_path([*path, key], root)
            path.append(key)
            stack.append(_items(v))
    return None


def _is_utf8(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
