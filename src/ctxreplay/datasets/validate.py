"""Structural checks every imported session passes, whatever its format.

Importers only translate; this module decides what is acceptable, so a rule is written once.
A session that breaks a rule is rejected whole (a half-imported session would replay as a
different conversation); problems that lose nothing become message flags instead.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace

from .messages import ROLES, Message, Session
from .rejects import RecordError

MAX_MESSAGE_BYTES = 10 * 1024 * 1024

FLAG_ARGUMENTS_NOT_JSON = "arguments_not_json"
FLAG_UNANSWERED_CALL = "unanswered_tool_call"
FLAG_CALL_ID_RENAMED = "call_id_renamed"


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
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def validate_session(session: Session, max_message_bytes: int = MAX_MESSAGE_BYTES) -> Session:
    """Return the session with flags set, or raise ``RecordError`` naming the first problem."""
    if not session.messages:
        raise RecordError("empty_session", "the session has no messages")
    session = replace(session, messages=disambiguate_call_ids(session.messages))
    calls: dict[str, int] = {}
    call_names: dict[str, str | None] = {}
    answered: set[str] = set()
    out: list[Message] = []
    for index, m in enumerate(session.messages):
        where = m.source_path or f"messages[{index}]"
        if m.role not in ROLES:
            raise RecordError(
                "unknown_role", f"role {m.role!r} is not one of {sorted(ROLES)}", where
            )
        size = _message_bytes(m)
        if size > max_message_bytes:
            raise RecordError(
                "oversize_message",
                f"message is {size:,} bytes, over the {max_message_bytes:,}-byte limit",
                where,
            )
        flags = list(m.flags)
        for p in m.parts:
            for s in (p.content, p.arguments, p.name):
                if s and _has_lone_surrogate(s):
                    raise RecordError("invalid_utf8", "text holds bytes that are not UTF-8", where)
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
                if p.arguments is not None:
                    try:
                        json.loads(p.arguments)
                    except ValueError:
                        if FLAG_ARGUMENTS_NOT_JSON not in flags:
                            flags.append(FLAG_ARGUMENTS_NOT_JSON)
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
        out.append(replace(m, seq=index, parts=parts, flags=tuple(flags)))
    unanswered = set(calls) - answered
    if unanswered:
        for i, m in enumerate(out):
            if any(p.id in unanswered for p in m.calls) and FLAG_UNANSWERED_CALL not in m.flags:
                out[i] = replace(m, flags=(*m.flags, FLAG_UNANSWERED_CALL))
    return replace(session, messages=out)
