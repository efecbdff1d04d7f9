"""Goose sessions (block/goose): ``sessions.db`` and the older per-session JSONL files.

Goose keeps its sessions in ``~/.local/share/goose/sessions/sessions.db`` (SQLite, WAL; written
by ``crates/goose/src/session/session_manager.rs``): a ``sessions`` row per session (``id`` like
``20251020_1``, ``name``/``description``, ``working_dir``, ``session_type``, ``created_at``, token
counts, ``provider_name``, ``model_config_json``, ``recipe_json`` ...) and a ``messages`` row per
message (``session_id``, ``role``, ``content_json``, ``created_timestamp``, ``metadata_json``;
read in ``id`` order, the order Goose inserts them). Before the database, each session was a JSONL
file ``sessions/<id>.jsonl`` (``crates/goose/src/session/storage.rs``, ``legacy.rs``): a first
line of metadata (``working_dir``, ``description``, ``message_count``, token counts, ...), then
one message per line ``{id, role, created, content, metadata?}``. Both are read here.

A message's ``content`` is a list of items (``crates/goose/src/conversation/message.rs``):
``text``; ``image`` (``data``, ``mimeType``) → a blob; ``toolRequest`` and
``frontendToolRequest`` ``{id, toolCall: {status: success, value: {name, arguments}}}`` → a tool
call (a call Goose could not parse, ``{status: error, error}``, keeps its id, no name, and the error
text as its arguments); ``toolResponse`` ``{id, toolResult: {status: success, value}}`` → a
``tool_call_response`` part of the ``user`` message that holds it (roles are Goose's own): the
value is a ``CallToolResult`` ``{content, isError}`` or, in older sessions, the content list itself
(``tool_result_serde.rs``); its MCP content items give the result's text (``text``, a text
``resource``) and media parts (``image``, ``audio``, a blob ``resource``, ``resource_link``); an
item whose ``annotations.audience`` leaves out the assistant was for the user only and is counted
(``user_only_content``), not sent; ``{status: error, error}`` is an error result; ``thinking`` and
``redactedThinking`` → reasoning. Items Goose never sends to the model (``toolConfirmationRequest``,
``actionRequired``, ``systemNotification``, ``contextLengthExceeded``, ``summarizationRequested``,
``conversationCompacted``) are counted in ``ui_items``; a message made only of them is kept, not
visible, with their text. An unknown item is kept as the text of its JSON.

Visibility and compactions: ``metadata`` ``{userVisible, agentVisible}`` (default both true).
Goose compacts (``crates/goose/src/context_mgmt/mod.rs``, ``compact_messages``) by marking every
message so far not agent-visible and appending the summary (a ``user`` message, agent-only) and a
continuation (``assistant``, agent-only, "Your context was compacted..."): the first agent-only
message right after an agent-invisible one is a recorded compaction, flagged ``compaction_summary``
(``compactions`` metadata: trigger ``manual`` when the continuation says "at the user's request",
else ``auto``). The messages it took out of the agent's context stay, visible, before it; any other
message the agent never saw (``agentVisible: false`` with no later summary, UI-only messages) is
kept not visible. Goose does not record the system prompt or per-request usage; the session's
token counts go to metadata.

Accounting: in the database each ``sessions`` row is a record standing for its session, each
``messages`` row folded into it is skipped ``part_of_session``; a message row that cannot be read
(``content_json`` not a JSON list, a role Goose does not write, undecodable text) is rejected by
itself with the row (its columns as a JSON object) as raw bytes, and a message row of no session
is rejected ``malformed``. The rows of a rejected session are skipped ``of_rejected_row``. In a
JSONL file every line is a record: the metadata line (or the first message line) stands for the
session, the other lines are skipped ``part_of_session``, a line that cannot be read is rejected
by itself. A database without the ``sessions`` and ``messages`` tables is one ``malformed``
reject (its schema as raw bytes). The database is never written, and committed transactions
still in its ``-wal`` file are read (``sqlite.readonly_database``).

Session keys are ``<id>:<created time of its first message>``: a JSONL session Goose migrated into
its database is one session (the second read is rejected ``duplicate_session``), and two machines'
``20251020_1`` are not.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ..messages import Message, Part, Session, as_dict
from ..rejects import RecordError, Reject, clip
from ..validate import FLAG_COMPACTION_SUMMARY, FLAG_TIMESTAMP_INVALID
from .base import exception_reason, expect, importers, require
from .parts import unknown_part
from .records import Record
from .sniffing import Sample, sample_of
from .sqlite import (
    DB_ERRORS,
    DatabaseImporter,
    Tables,
    bind,
    json_column,
    order_by,
    row_json,
    select,
    text_of,
)
from .times import timestamp_of

FORMAT = "goose"
#: content items Goose shows the user but never sends to the model
UI_ITEMS = frozenset(
    {
        "toolConfirmationRequest",
        "actionRequired",
        "systemNotification",
        "contextLengthExceeded",
        "summarizationRequested",
        "conversationCompacted",
    }
)
CALL_ITEMS = ("toolRequest", "frontendToolRequest")
#: Goose's continuation text after a compaction the user asked for (``/compact``)
MANUAL_CONTINUATION = "Your context was compacted at the user's request"
CONTINUATION = "Your context was compacted"
METADATA_KEYS = frozenset({"working_dir", "description", "message_count", "schedule_id"})
TOKEN_KEYS = (
    "total_tokens",
    "input_tokens",
    "output_tokens",
    "accumulated_total_tokens",
    "accumulated_input_tokens",
    "accumulated_output_tokens",
)
REQUIRED: Tables = {"sessions": ("id",), "messages": ("session_id", "role", "content_json")}
__all__ = ["GooseImporter"]


@dataclass
class _Msg:
    """One Goose message, read."""

    role: str
    parts: list[Part]
    ui: list[str]
    agent_visible: bool
    timestamp: str | None
    flags: tuple[str, ...]
    is_error: bool
    where: str
    counts: Counter[str] = field(default_factory=Counter)
    created: Any = None
    user_visible: bool = True


def _visibility(metadata: Any) -> tuple[bool, bool]:
    meta = as_dict(metadata)
    user, agent = meta.get("userVisible", True), meta.get("agentVisible", True)
    return user is not False, agent is not False


def read_message(
    value: Any, source: str, where: str = "$", content_path: str | None = None
) -> _Msg:
    """A message object ``{role, created, content, metadata}`` (a JSONL line, or a database row
    made into one); ``source`` names it in the session, ``where`` and ``content_path`` are the
    JSON paths of it and of its content in its record."""
    expect(value, dict, where, "message")
    role = expect(require(value, "role", where), str, f"{where}.role", "role")
    if role not in ("user", "assistant"):
        raise RecordError(
            "unknown_role", f"role {role!r} is not user or assistant", f"{where}.role"
        )
    content_path = content_path or f"{where}.content"
    content = expect(require(value, "content", where), list, content_path, "content")
    created = value.get("created")
    text, bad = timestamp_of(created)
    user_visible, agent_visible = _visibility(value.get("metadata"))
    msg = _Msg(
        role, [], [], agent_visible, text, (FLAG_TIMESTAMP_INVALID,) if bad else (), False, source
    )
    msg.created, msg.user_visible = created, user_visible
    for i, item in enumerate(content):
        _item(msg, item, f"{content_path}[{i}]")
    return msg


def _item(msg: _Msg, item: Any, where: str) -> None:
    expect(item, dict, where, "content item")
    kind = expect(require(item, "type", where), str, f"{where}.type", "content type")
    if kind == "text":
        text = expect(item.get("text", ""), str, f"{where}.text", "text")
        if text:
            msg.parts.append(Part.text(text))
    elif kind in ("image", "audio"):
        msg.parts.append(_blob(item, kind, where))
    elif kind in CALL_ITEMS:
        msg.parts.append(_call(item, where))
    elif kind == "toolResponse":
        parts, error = _response(item, msg.counts, where)
        msg.parts.extend(parts)
        msg.is_error = msg.is_error or error
    elif kind == "thinking":
        text = expect(item.get("thinking", ""), str, f"{where}.thinking", "thinking")
        msg.parts.append(Part("reasoning", content=text))
    elif kind == "redactedThinking":
        data = expect(item.get("data", ""), str, f"{where}.data", "data")
        msg.parts.append(Part("reasoning", content=data, name="redacted_thinking"))
    elif kind == "reasoning":
        text = item.get("text", item.get("content", ""))
        msg.parts.append(Part("reasoning", content=expect(text, str, where, "reasoning")))
    elif kind in UI_ITEMS:
        msg.counts[f"ui:{kind}"] += 1
        msg.ui.append(_ui_text(item))
    else:
        msg.parts.append(unknown_part(item))


def _ui_text(item: dict[str, Any]) -> str:
    for key in ("msg", "prompt", "message"):
        if isinstance(item.get(key), str):
            return cast(str, item[key])
    data = as_dict(item.get("data"))
    if isinstance(data.get("message"), str):
        return cast(str, data["message"])
    return json.dumps(item, ensure_ascii=False)


def _blob(item: dict[str, Any], modality: str, where: str) -> Part:
    data = expect(require(item, "data", where), str, f"{where}.data", "data")
    mime = item.get("mimeType")
    return Part(
        "blob", content=data, mime_type=mime if isinstance(mime, str) else None, modality=modality
    )


def _call(item: dict[str, Any], where: str) -> Part:
    call_id = expect(require(item, "id", where), str, f"{where}.id", "tool request id")
    call = expect(require(item, "toolCall", where), dict, f"{where}.toolCall", "toolCall")
    status = call.get("status")
    if status == "success":
        value = expect(require(call, "value", f"{where}.toolCall"), dict, f"{where}.toolCall.value")
        name = expect(
            require(value, "name", f"{where}.toolCall.value"),
            str,
            f"{where}.toolCall.value.name",
            "tool name",
        )
        args = value.get("arguments")
        return Part.call(call_id, name, args if args is not None else {})
    if status == "error":  # a call Goose could not parse: its error is all there is
        error = call.get("error", "")
        text = error if isinstance(error, str) else json.dumps(error)
        return Part("tool_call", id=call_id, arguments=text)
    raise RecordError("malformed", f"toolCall status {status!r} is not success or error", where)


def _response(item: dict[str, Any], counts: Counter[str], where: str) -> tuple[list[Part], bool]:
    call_id = expect(require(item, "id", where), str, f"{where}.id", "tool response id")
    result = expect(require(item, "toolResult", where), dict, f"{where}.toolResult", "toolResult")
    status = result.get("status")
    at = f"{where}.toolResult"
    if status == "error":
        error = result.get("error", "")
        text = error if isinstance(error, str) else json.dumps(error)
        return [Part.response(call_id, text)], True
    if status != "success":
        raise RecordError("malformed", f"toolResult status {status!r} is not success or error", at)
    value = require(result, "value", at)
    is_error = False
    if isinstance(value, dict):  # a CallToolResult
        items = expect(value.get("content", []), list, f"{at}.value.content", "content")
        is_error = value.get("isError") is True
        base = f"{at}.value.content"
    else:  # older sessions: the content list itself
        items = expect(value, list, f"{at}.value", "tool result")
        base = f"{at}.value"
    texts: list[str] = []
    media: list[Part] = []
    for i, content in enumerate(items):
        w = f"{base}[{i}]"
        expect(content, dict, w, "content")
        audience = as_dict(content.get("annotations")).get("audience")
        if isinstance(audience, list) and "assistant" not in audience:
            counts["user_only_content"] += 1  # shown to the user, never sent to the model
            continue
        kind = content.get("type")
        if kind == "text":
            texts.append(expect(content.get("text", ""), str, f"{w}.text", "text"))
        elif kind in ("image", "audio"):
            media.append(_blob(content, kind, w))
        elif kind == "resource":
            res = expect(require(content, "resource", w), dict, f"{w}.resource", "resource")
            if isinstance(res.get("text"), str):
                texts.append(res["text"])
            elif isinstance(res.get("blob"), str):
                mime = res.get("mimeType") if isinstance(res.get("mimeType"), str) else None
                media.append(Part("blob", content=res["blob"], mime_type=mime, modality="file"))
            else:
                texts.append(json.dumps(res, ensure_ascii=False))
        elif kind == "resource_link" and isinstance(content.get("uri"), str):
            mime = content.get("mimeType") if isinstance(content.get("mimeType"), str) else None
            media.append(Part("uri", uri=content["uri"], mime_type=mime, modality="file"))
        else:
            texts.append(json.dumps(content, ensure_ascii=False))
    return [Part.response(call_id, "\n".join(texts)), *media], is_error


# --- a session from its messages ---------------------------------------------------------------


def assemble(msgs: list[_Msg]) -> tuple[list[Message], dict[str, Any]]:
    """The session's messages, with visibility and compactions, and what metadata counts."""
    summaries = [
        i
        for i, m in enumerate(msgs)
        if i > 0
        and m.agent_visible
        and not m.user_visible
        and not msgs[i - 1].agent_visible
        and m.parts
    ]
    counts: Counter[str] = Counter()
    out: list[Message] = []
    compactions: list[dict[str, Any]] = []
    for i, m in enumerate(msgs):
        counts.update(m.counts)
        flags = m.flags
        if not m.parts:
            if not m.ui:
                counts["empty_messages"] += 1
                continue
            counts["ui_messages"] += 1
            parts = tuple(Part.text(t) for t in m.ui if t)
            out.append(
                Message(
                    m.role,
                    parts,
                    visible=False,
                    timestamp=m.timestamp,
                    flags=flags,
                    source_path=m.where,
                )
            )
            continue
        visible = m.agent_visible
        if not visible and any(s > i for s in summaries):
            visible = True  # in the agent's context until a compaction took it out
            counts["compacted_messages"] += 1
        elif not visible:
            counts["not_agent_visible"] += 1
        if i in summaries:
            flags = (*flags, FLAG_COMPACTION_SUMMARY)
            follow = msgs[i + 1] if i + 1 < len(msgs) else None
            said = "\n".join(p.content or "" for p in follow.parts) if follow else ""
            trigger = (
                "manual"
                if said.startswith(MANUAL_CONTINUATION)
                else "auto"
                if said.startswith(CONTINUATION)
                else None
            )
            compactions.append(
                {
                    "kind": "compaction",
                    "trigger": trigger,
                    "pre_tokens": None,
                    "timestamp": m.timestamp,
                    "summary_seq_index": len(out),
                }
            )
        out.append(
            Message(
                m.role,
                tuple(m.parts),
                visible=visible,
                is_error=m.is_error,
                timestamp=m.timestamp,
                flags=flags,
                source_path=m.where,
            )
        )
    meta: dict[str, Any] = {"compactions": compactions or None}
    ui = {k[3:]: v for k, v in sorted(counts.items()) if k.startswith("ui:")}
    meta["ui_items"] = ui or None
    for key in (
        "ui_messages",
        "user_only_content",
        "compacted_messages",
        "not_agent_visible",
        "empty_messages",
    ):
        meta[key] = counts[key] or None
    return out, meta


def _key(sid: str, msgs: list[_Msg]) -> str:
    first = next((m.created for m in msgs if m.created is not None), None)
    return f"{sid}:{first}" if first is not None else sid


# --- the importer ------------------------------------------------------------------------------


@importers.register(FORMAT)
class GooseImporter(DatabaseImporter):
    """Goose's ``sessions.db`` (``sessions`` and ``messages`` tables) and its older
    ``sessions/<id>.jsonl`` files: one session per session row (or file)."""

    suffixes = (".db", ".jsonl")
    required = REQUIRED
    database_name = "a Goose database"

    def sniff_file(self, path: Path, head: bytes) -> float:
        return sniff_jsonl(sample_of(path, head))

    def reset(self) -> None:
        self._unreadable = 0
        #: lines read into the session another line stands for (JSONL)
        self.ignored_records: list[int] = []

    def read_file(self, path: Path) -> Iterator[Session | Reject]:
        return self._read_jsonl(path)

    def _reject(
        self,
        path: Path,
        index: int,
        raw: bytes,
        e: BaseException,
        sid: str | None,
        label: str,
        line: int | None = None,
    ) -> Reject:
        reason, detail = exception_reason(e)
        where = e.json_path if isinstance(e, RecordError) else "$"
        return Reject(
            str(path), reason, clip(f"{label}: {detail}"), raw, self.name, index, line, sid, where
        )

    # -- the database -------------------------------------------------------------------------

    def read_tables(
        self, path: Path, conn: sqlite3.Connection, tables: Tables
    ) -> Iterator[Session | Reject]:
        s_cols, m_cols = tables["sessions"], tables["messages"]
        index = 0
        try:
            names, rows = select(
                conn, f"SELECT * FROM sessions{order_by(s_cols, 'created_at', 'id')}"
            )
        except DB_ERRORS as e:
            yield self.file_reject(path, "unreadable_file", f"reading sessions failed: {e}")
            return
        seen_ids: set[Any] = set()
        m_order = order_by(m_cols, "id")
        for row in rows:
            values = dict(zip(names, row, strict=False))
            raw = row_json(names, row)
            sid_raw = values.get("id")
            sid = text_of(sid_raw)
            sid = sid if isinstance(sid, str) else None
            self.tally.seen += 1
            unit = index
            index += 1
            rejected = self.id_reject(path, sid_raw, seen_ids, raw, unit, sid)
            if rejected is not None:
                yield rejected
                continue
            mark, key = bind(sid_raw)
            try:
                m_names, m_rows = select(
                    conn, f"SELECT * FROM messages WHERE session_id = {mark}{m_order}", (key,)
                )
            except DB_ERRORS as e:
                detail = f"reading its messages failed: {e}"
                yield self.row_reject(path, "unreadable_file", detail, raw, unit, sid)
                continue
            lines: list[tuple[int, bytes, Any]] = []
            for mrow in m_rows:
                self.tally.seen += 1
                lines.append(
                    (index, row_json(m_names, mrow), dict(zip(m_names, mrow, strict=False)))
                )
                index += 1
            yield from self._session(path, (unit, raw), sid, _row_meta(values), lines, _row_message)
        try:
            names, orphans = select(
                conn,
                "SELECT * FROM messages m WHERE NOT EXISTS "
                "(SELECT 1 FROM sessions s WHERE s.id = m.session_id)",
            )
        except DB_ERRORS as e:
            yield self.file_reject(path, "unreadable_file", f"reading message rows failed: {e}")
            return
        for row in orphans:
            self.tally.seen += 1
            values = dict(zip(names, row, strict=False))
            owner = text_of(values.get("session_id"))
            detail = (
                f"message row {text_of(values.get('id'))!r} belongs to no "
                "session: its session row is missing"
            )
            owner = owner if isinstance(owner, str) else None
            raw = row_json(names, row)
            yield self.row_reject(path, "malformed", detail, raw, index, owner, "$.session_id")
            index += 1

    # -- the JSONL files ------------------------------------------------------------------------

    def _read_jsonl(self, path: Path) -> Iterator[Session | Reject]:
        anchor: tuple[int, bytes] | None = None
        meta: dict[str, Any] = {}
        lines: list[tuple[int, bytes, Any]] = []
        self._unreadable = 0
        for record in self.records(path):
            if isinstance(record, Reject):
                self._unreadable += 1
                yield record
                continue
            if anchor is None and not lines and _is_metadata(record.value):
                anchor, meta = (record.index, record.raw), _jsonl_meta(record.value)
                continue
            lines.append((record.index, record.raw, record))
        if anchor is None and not lines:
            return
        yield from self._session(path, anchor, path.stem, meta, lines, _line_message)

    # -- one session ------------------------------------------------------------------------

    def _session(
        self,
        path: Path,
        anchor: tuple[int, bytes] | None,
        sid: str | None,
        meta: dict[str, Any],
        lines: list[tuple[int, bytes, Any]],
        parse: Any,
    ) -> Iterator[Session | Reject]:
        """The session of one record (``anchor``: its index and raw bytes; None: the first
        readable message stands for it) and its messages (``lines``: record index, raw bytes,
        source of each). A message that cannot be read is rejected by itself."""
        msgs: list[_Msg] = []
        rejects: list[Reject] = []
        good: list[tuple[int, bytes]] = []
        for index, line_raw, source in lines:
            try:
                msgs.append(parse(source))
            except Exception as e:
                label = "message"
                rejects.append(self._reject(path, index, line_raw, e, sid, label, _line_of(source)))
                continue
            good.append((index, line_raw))
        yield from rejects
        if anchor is None:
            if not good:
                return  # every line was rejected: nothing is left to stand for a session
            anchor = good[0]
        folded = [i for i, _ in good if i != anchor[0]]
        self.ignored_records = folded
        unit = anchor[0]
        record = Record(unit, {"id": sid} if sid else {}, anchor[1])
        items = list(
            self.guarded(path, record, lambda: [self._build(path, unit, sid, meta, msgs, rejects)])
        )
        made = any(isinstance(i, Session) for i in items)
        self.tally.skip("part_of_session" if made else "of_rejected_row", len(folded))
        yield from items

    def _build(
        self,
        path: Path,
        unit: int,
        sid: str | None,
        meta: dict[str, Any],
        msgs: list[_Msg],
        rejects: list[Reject],
    ) -> Session:
        if not sid:
            raise RecordError("missing_field", "the session has no id", "$.id")
        messages, counted = assemble(msgs)
        rejected = len(rejects) + getattr(self, "_unreadable", 0)
        metadata = {**meta, **counted, "rejected_records": rejected or None}
        return Session(
            source_format=self.name,
            source_session_id=sid,
            messages=messages,
            key=_key(sid, msgs),
            source_location=str(path),
            source_record=unit,
            workload=FORMAT,
            metadata={k: v for k, v in metadata.items() if v is not None},
        )


def _row_message(values: dict[str, Any]) -> _Msg:
    """A ``messages`` row as a message."""
    role = text_of(values.get("role"))
    if not isinstance(role, str):
        raise RecordError("wrong_type", "the role column should be text", "$.role")
    content = json_column(values.get("content_json"), "content_json", "$.content_json")
    metadata: Any = None
    if values.get("metadata_json") is not None:  # as Goose: unreadable metadata is the default
        try:
            metadata = json_column(values.get("metadata_json"), "metadata_json")
        except RecordError:
            metadata = None
    created = values.get("created_timestamp")
    ident = text_of(values.get("id"))
    return read_message(
        {"role": role, "content": content, "created": created, "metadata": metadata},
        f"messages[{ident}]",
        content_path="$.content_json",
    )


def _line_message(record: Record) -> _Msg:
    return read_message(record.value, f"line[{record.line}]" if record.line else "$")


def _line_of(source: Any) -> int | None:
    return source.line if isinstance(source, Record) else None


def _is_metadata(value: Any) -> bool:
    return isinstance(value, dict) and "role" not in value and bool(METADATA_KEYS & set(value))


def _tokens(values: dict[str, Any]) -> dict[str, Any] | None:
    found = {k: values[k] for k in TOKEN_KEYS if isinstance(values.get(k), int)}
    return found or None


def _jsonl_meta(value: dict[str, Any]) -> dict[str, Any]:
    meta = {
        "name": value.get("description") if isinstance(value.get("description"), str) else None,
        "cwd": value.get("working_dir") if isinstance(value.get("working_dir"), str) else None,
        "schedule_id": value.get("schedule_id")
        if isinstance(value.get("schedule_id"), str)
        else None,
        "message_count": value.get("message_count")
        if isinstance(value.get("message_count"), int)
        else None,
        "session_tokens": _tokens(value),
        "storage": "jsonl",
    }
    return {k: v for k, v in meta.items() if v is not None}


def _row_meta(values: dict[str, Any]) -> dict[str, Any]:
    v = {k: text_of(x) for k, x in values.items()}
    name = v.get("name") or v.get("description")
    model = _json_or_none(values.get("model_config_json"))
    recipe = _json_or_none(values.get("recipe_json"))
    meta = {
        "name": name if isinstance(name, str) and name else None,
        "cwd": v.get("working_dir"),
        "session_type": v.get("session_type"),
        "created": v.get("created_at"),
        "updated": v.get("updated_at"),
        "schedule_id": v.get("schedule_id"),
        "provider": v.get("provider_name"),
        "model": as_dict(model).get("model_name"),
        "context_limit": as_dict(model).get("context_limit"),
        "recipe": as_dict(recipe).get("title"),
        "session_tokens": _tokens(v),
        "storage": "sqlite",
    }
    return {k: x for k, x in meta.items() if isinstance(x, str | int | dict) and x is not None}


def _json_or_none(value: Any) -> Any:
    if value is None:
        return None
    try:
        return json_column(value, "column")
    except RecordError:
        return None


# --- detection ---------------------------------------------------------------------------------


#: detection: the session's metadata line (``description``, ``message_count``)
METADATA_SCORE = 0.95
#: a message with content only Goose writes (tool requests and responses, UI items)
CONTENT_SCORE = 0.95
#: a message with Goose's keys and nothing else
MESSAGE_KEYS_SCORE = 0.7
#: a message with Goose's ``role``, ``content`` list and integer ``created``, among other keys
LOOSE_MESSAGE_SCORE = 0.3


def _line_score(record: Any) -> float:
    if not isinstance(record, dict):
        return 0.0
    if _is_metadata(record) and {"description", "message_count"} <= set(record):
        return METADATA_SCORE
    role, content = record.get("role"), record.get("content")
    if role not in ("user", "assistant") or not isinstance(content, list):
        return 0.0
    if not isinstance(record.get("created"), int) or isinstance(record.get("created"), bool):
        return 0.0
    kinds = {c.get("type") for c in content if isinstance(c, dict)}
    if kinds & ({"toolRequest", "toolResponse", "redactedThinking", *UI_ITEMS}):
        return CONTENT_SCORE
    if set(record) <= {"id", "role", "created", "content", "metadata"}:
        return MESSAGE_KEYS_SCORE
    return LOOSE_MESSAGE_SCORE


def sniff_jsonl(sample: Sample) -> float:
    if sample.layout not in ("jsonl", "document") or not sample.records:
        return 0.0
    return sample.mean(_line_score)
