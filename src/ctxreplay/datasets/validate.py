"""Structural checks every imported session passes, whatever its format.

Importers only translate; this module decides what is acceptable, so a rule is written once.
A session that breaks a rule is rejected whole (a half-imported session would replay as a
different conversation); problems that lose nothing become message flags instead.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from typing import Any

from .messages import FREEFORM_CALL_MIME, PART_TYPES, ROLES, Message, Part, Session, Usage
from .rejects import RecordError, inspect_value

MAX_MESSAGE_BYTES = 10 * 1024 * 1024
#: the largest token count taken as real (a larger one is a damaged record: dropped, flagged)
MAX_TOKEN_COUNT = 10**12

FLAG_ARGUMENTS_NOT_JSON = "arguments_not_json"
FLAG_UNANSWERED_CALL = "unanswered_tool_call"
FLAG_CALL_ID_RENAMED = "call_id_renamed"
FLAG_TIMESTAMP_INVALID = "timestamp_invalid"
FLAG_USAGE_OUT_OF_RANGE = "usage_out_of_range"
FLAG_UNKNOWN_PART_TYPE = "unknown_part_type"
#: messages an importer made up rather than read (they do not make a session non-empty)
FLAG_FROM_INSTRUCTION = "from_instruction"
FLAG_SYSTEM_REBUILT = "system_rebuilt"
SYNTHESIZED = frozenset({FLAG_FROM_INSTRUCTION, FLAG_SYSTEM_REBUILT})
#: a recorded compaction: this message holds the summary that replaced the context before it.
#: Cases start their prefix at the latest one (what the agent really had), and the
#: ``compactions`` trigger cuts right before each one.
FLAG_COMPACTION_SUMMARY = "compaction_summary"
#: a message of a branch the session left (an edited or retried turn): kept, never visible
FLAG_ABANDONED_BRANCH = "abandoned_branch"
#: the user interrupted the turn this message belongs to
FLAG_TURN_ABORTED = "turn_aborted"
#: a tool result whose call is not in the log (a resumed or compacted session): kept as text
FLAG_ORPHAN_RESULT = "orphan_tool_result"
#: what validation does with a tool result whose call is not in the session
ORPHAN_RULES = ("reject", "as_text")
#: ``mime_type`` of a text part holding the JSON of a part whose type the importer did not know
UNKNOWN_PART_MIME = "application/vnd.ctxreplay.unknown-part+json"


def disambiguate_call_ids(messages: list[Message]) -> list[Message]:
    """Rename tool-call ids a provider reused after the earlier call was already answered.

    Some recorded runs (gpt-4o in tau-bench, SWE-agent replays) give a new call the id of an
    earlier, answered call. Pairing is still unambiguous (the result follows its call), so the
    later call and its result become ``<id>#<n>`` (flag ``call_id_renamed``). A reuse while the
    earlier call is still open is left alone and validation rejects the session.
    """
    uses: Counter[str] = Counter()
    current: dict[str, str] = {}  # recorded id -> the id it stands for now
    answered: set[str] = set()
    out: list[Message] = []
    for m in messages:
        parts = []
        renamed = False
        for p in m.parts:
            if p.type == "tool_call" and p.id:
                uses[p.id] += 1
                new = p.id
                if uses[p.id] > 1 and current[p.id] in answered:
                    new = f"{p.id}#{uses[p.id]}"
                current[p.id] = new
                if new != p.id:
                    p, renamed = replace(p, id=new), True
            elif p.type == "tool_call_response" and p.id in current:
                new = current[p.id]
                answered.add(new)
                if new != p.id:
                    p, renamed = replace(p, id=new), True
            parts.append(p)
        if renamed:
            m = replace(m, parts=tuple(parts), flags=(*m.flags, FLAG_CALL_ID_RENAMED))
        out.append(m)
    return out


def _message_bytes(m: Message) -> int:
    return sum(
        len(s.encode("utf-8", "surrogatepass")) for p in m.parts for s in p.token_texts()
    ) + sum(len(p.content or "") for p in m.parts if p.type in ("blob", "uri", "file"))


def _has_lone_surrogate(text: str) -> bool:
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _usage_in_range(usage: Any) -> tuple[Usage | None, bool]:
    """The usage with counts out of range (negative, not integers, absurdly large) dropped."""
    if usage is None:
        return None, False
    if not isinstance(usage, Usage):
        return None, True
    values = []
    bad = False
    for v in (usage.prompt_tokens, usage.cached_tokens, usage.completion_tokens):
        ok = v is None or (
            isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_TOKEN_COUNT
        )
        values.append(v if ok else None)
        bad = bad or not ok
    if not bad:
        return usage, False
    kept = Usage(*values)
    return (kept if any(v is not None for v in values) else None), True


def _text_fields(m: Message) -> list[tuple[str, Any]]:
    return [
        ("name", m.name),
        ("source_path", m.source_path),
        *((f"flags[{i}]", f) for i, f in enumerate(m.flags)),
    ]


def _check_session_fields(session: Session) -> None:
    for name in ("source_session_id", "source_location", "workload", "key", "session_id"):
        value = getattr(session, name)
        if value is None and name not in ("source_session_id", "source_location"):
            continue
        if not isinstance(value, str):
            raise RecordError("wrong_type", f"session {name} should be text", "$")
        if _has_lone_surrogate(value):
            raise RecordError("invalid_utf8", f"session {name} holds bytes that are not UTF-8")


def _check_types(m: Message, index: int) -> None:
    """Every field of a message has its type, and all its text is UTF-8."""
    if not isinstance(m, Message):
        raise RecordError("wrong_type", "the importer produced something that is not a message")
    where = m.source_path if isinstance(m.source_path, str) else f"messages[{index}]"
    if not isinstance(m.role, str) or m.role not in ROLES:
        raise RecordError("unknown_role", f"role {m.role!r} is not one of {sorted(ROLES)}", where)
    if not isinstance(m.flags, tuple) or not isinstance(m.parts, tuple):
        raise RecordError("wrong_type", "message parts and flags should be tuples", where)
    for field_name, value in _text_fields(m):
        if value is not None and not isinstance(value, str):
            raise RecordError("wrong_type", f"message {field_name} should be text", where)
        if value and _has_lone_surrogate(value):
            raise RecordError("invalid_utf8", f"message {field_name} is not UTF-8", where)
    if isinstance(m.timestamp, str) and _has_lone_surrogate(m.timestamp):
        raise RecordError("invalid_utf8", "message timestamp is not UTF-8", where)
    if not isinstance(m.is_error, bool) or not isinstance(m.visible, bool):
        raise RecordError("wrong_type", "is_error and visible should be booleans", where)
    for p in m.parts:
        if not isinstance(p, Part) or p.type not in PART_TYPES:
            raise RecordError("wrong_type", f"unknown part {p!r:.80}", where)
        for s in (p.content, p.arguments, p.name, p.id, p.mime_type, p.uri, p.modality):
            if s is None:
                continue
            if not isinstance(s, str):
                raise RecordError("wrong_type", "a part field is not text", where)
            if _has_lone_surrogate(s):
                raise RecordError("invalid_utf8", "text holds bytes that are not UTF-8", where)


def _check_arguments(arguments: str, flags: list[str], where: str) -> None:
    """Flag arguments that are not JSON; reject arguments nested deeper than JSON may be."""
    try:
        value = json.loads(arguments)
    except RecursionError:
        raise RecordError(
            "nesting_too_deep", "tool-call arguments nest deeper than the limit", where
        ) from None
    except ValueError:
        if FLAG_ARGUMENTS_NOT_JSON not in flags:
            flags.append(FLAG_ARGUMENTS_NOT_JSON)
        return
    problem = inspect_value(value, utf8=False)
    if problem is not None:
        raise RecordError(problem[0], "tool-call arguments nest deeper than the limit", where)


def validate_session(
    session: Session, max_message_bytes: int = MAX_MESSAGE_BYTES, orphan_results: str = "reject"
) -> Session:
    """Return the session with flags set, or raise ``RecordError`` naming the first problem.

    A tool result whose call is not in the session rejects it (``orphan_results="reject"``), or,
    for logs that legitimately start after calls they answer (``"as_text"``: a resumed or
    compacted Claude Code session), becomes a text part with the same content, so the model's
    context keeps what it read and the view stays a valid request (no result without its call);
    its message is flagged ``orphan_tool_result`` and the session's ``orphan_results`` metadata
    lists the call ids.

    A session with no message, or with only system prompts and messages the importer made up
    (the task instruction, a rebuilt system prompt), is empty. Token counts out of range and
    timestamps that are not text are dropped and flagged; a part field that is not text, or text
    that is not UTF-8, rejects the session.
    """
    if not session.messages:
        raise RecordError("empty_session", "the session has no messages")
    _check_session_fields(session)
    for index, m in enumerate(session.messages):
        _check_types(m, index)
    if all(
        m.role in ("system", "developer") or SYNTHESIZED.intersection(m.flags)
        for m in session.messages
    ):
        raise RecordError(
            "empty_session",
            "the session holds no conversation (only system prompts or inserted messages)",
        )
    if orphan_results not in ORPHAN_RULES:
        raise ValueError(f"orphan_results must be one of {ORPHAN_RULES}, not {orphan_results!r}")
    session = replace(session, messages=disambiguate_call_ids(session.messages))
    orphans: list[str | None] = []
    calls: dict[str, int] = {}
    call_names: dict[str, str | None] = {}
    answered: set[str] = set()
    out: list[Message] = []
    for index, m in enumerate(session.messages):
        where = m.source_path or f"messages[{index}]"
        size = _message_bytes(m)
        if size > max_message_bytes:
            raise RecordError(
                "oversize_message",
                f"message is {size:,} bytes, over the {max_message_bytes:,}-byte limit",
                where,
            )
        flags = list(m.flags)
        if orphan_results == "as_text":
            m = _orphans_as_text(m, calls, flags, orphans)
        usage, usage_bad = _usage_in_range(m.usage)
        if usage_bad and FLAG_USAGE_OUT_OF_RANGE not in flags:
            flags.append(FLAG_USAGE_OUT_OF_RANGE)
        timestamp = m.timestamp
        if timestamp is not None and not isinstance(timestamp, str):
            timestamp = None
            if FLAG_TIMESTAMP_INVALID not in flags:
                flags.append(FLAG_TIMESTAMP_INVALID)
        for p in m.parts:
            if p.mime_type == UNKNOWN_PART_MIME and FLAG_UNKNOWN_PART_TYPE not in flags:
                flags.append(FLAG_UNKNOWN_PART_TYPE)
            if p.type == "tool_call":
                if not p.id:
                    raise RecordError("missing_field", "tool call has no id", where)
                if p.id in calls:
                    raise RecordError(
                        "duplicate_tool_call_id",
                        f"tool call id {p.id!r} was already used by message {calls[p.id]}",
                        where,
                    )
                calls[p.id] = index
                call_names[p.id] = p.name
                if p.arguments is not None and p.mime_type != FREEFORM_CALL_MIME:
                    _check_arguments(p.arguments, flags, where)
            elif p.type == "tool_call_response":
                if not p.id or p.id not in calls:
                    raise RecordError(
                        "orphan_tool_result",
                        f"tool result for call {p.id!r} has no earlier call",
                        where,
                    )
                if p.id in answered:
                    raise RecordError(
                        "duplicate_tool_result", f"tool call {p.id!r} already has a result", where
                    )
                answered.add(p.id)
        parts = tuple(
            replace(p, name=call_names.get(p.id or ""))
            if p.type == "tool_call_response" and not p.name
            else p
            for p in m.parts
        )
        out.append(
            replace(m, seq=index, parts=parts, flags=tuple(flags), usage=usage, timestamp=timestamp)
        )
    unanswered = set(calls) - answered
    if unanswered:
        for i, m in enumerate(out):
            if any(p.id in unanswered for p in m.calls) and FLAG_UNANSWERED_CALL not in m.flags:
                out[i] = replace(m, flags=(*m.flags, FLAG_UNANSWERED_CALL))
    if orphans:
        metadata = {**session.metadata, "orphan_results": orphans}
        return replace(session, messages=out, metadata=metadata)
    return replace(session, messages=out)


def _orphans_as_text(
    m: Message, calls: dict[str, int], flags: list[str], orphans: list[str | None]
) -> Message:
    """``m`` with each result whose call is not among ``calls`` (so far) as a text part."""
    if not any(p.type == "tool_call_response" and p.id not in calls for p in m.parts):
        return m
    parts = []
    for p in m.parts:
        if p.type == "tool_call_response" and p.id not in calls:
            orphans.append(p.id)
            p = Part.text(p.content or "")
        parts.append(p)
    if FLAG_ORPHAN_RESULT not in flags:
        flags.append(FLAG_ORPHAN_RESULT)
    return replace(m, parts=tuple(parts))
