"""OpenCode sessions: its SQLite database (``opencode.db``) and ``opencode export`` JSON.

OpenCode (sst/opencode, now anomalyco/opencode) keeps its sessions in
``~/.local/share/opencode/opencode.db`` (WAL mode), in the tables ``session``, ``message`` and
``part`` (``packages/opencode/src/session/session.sql.ts``): a ``session`` row has scalar columns
(``id``, ``project_id``, ``parent_id``, ``slug``, ``directory``, ``title``, ``version``,
``summary_*``, ``time_created`` ...); ``message`` and ``part`` rows hold the object in a JSON
``data`` column (``message-v2.ts``: a message is ``{role: user|assistant, time, agent, model |
modelID/providerID, tokens{input, output, reasoning, cache{read, write}}, cost, summary, error,
parentID, ...}``; a part ``{type: text|reasoning|tool|file|step-start|step-finish|snapshot|patch|
agent|subtask|retry|compaction, ...}``). ``opencode export <session>`` prints
``{info: <session>, messages: [{info: <message>, parts: [...]}], todos}``
(``packages/opencode/src/cli/cmd/export.ts``). Both are read here (the older ``storage/`` folder of
one JSON file per object is not).

What the model saw follows ``MessageV2.toModelMessages``: a user message's ``text`` parts (not
``ignored`` ones), its files (``text/plain`` and directory files are left out: OpenCode sent them
as the synthetic text parts beside them), a ``compaction`` part as the text "What did we do so
far?", a ``subtask`` part as "The following tool was executed by the user"; ``agent``,
``snapshot``, ``patch`` parts are bookkeeping (counted in ``skipped_parts``). An assistant message
is one turn of several model requests: its ``step-start`` parts split it into steps, each step one
``assistant`` message (text, reasoning, tool calls in part order) with the usage of its
``step-finish`` part (``tokens.input`` excludes the cache, so the prompt is ``input + cache.read
+ cache.write``, the cached part ``cache.read``, the completion ``output``), followed by one
``tool`` message per tool part of the step. A ``tool`` part is both the call and its result:

* ``completed``: the result is ``state.output`` (its file attachments as media parts); an output
  OpenCode's pruning cleared later (``state.time.compacted``) is kept as recorded and listed in
  ``pruned_results`` (the model read "[Old tool result content cleared]" from then on);
* ``error``: ``state.error``, an error result; an interrupted run with partial output
  (``metadata.interrupted`` and ``metadata.output``) gives that output, flagged ``turn_aborted``;
* ``pending`` / ``running`` (the run never finished): OpenCode answers such a call with
  "[Tool execution was interrupted]" in every later request, so that is its result (an error,
  flagged ``turn_aborted``) when anything follows in the session; in the session's last step the
  call stays unanswered (validation flags it ``unanswered_tool_call``).

An assistant message with an ``error`` was left out of later requests (except an abort with
content): its messages are kept, not visible, flagged ``request_error``; an abort flags the last
message of its turn ``turn_aborted``. ``retry`` parts flag their step ``generation_retried``.

Compactions: OpenCode compacts by a user message holding a ``compaction`` part (``auto``,
``overflow``), answered by an assistant message with ``summary: true`` (``mode: compaction``)
whose text is the summary the context continues from (``compaction.ts``; ``filterCompacted``).
That summary is flagged ``compaction_summary``; ``compactions`` metadata lists each (trigger auto
or manual, prompt tokens of the last request before it, time, index of the summary). Messages
before it stay, visible, in order.

Sub-agents: a session with ``parent_id`` (``parentID``) was started by a ``task`` tool call of its
parent (whose ``state.metadata.sessionId`` names it): metadata ``parent_session_id``,
``parent_source_session_id``, ``parent_call_id``; a parent lists its ``subagents``. Session keys
are the OpenCode session ids, so a session read from the database and from an export is one
session (the second is rejected ``duplicate_session``).

Accounting: every row read is a record: a ``session`` row becomes its session (or its reject); each
``message`` and ``part`` row folded into it is skipped ``part_of_session``. A message or part row
that cannot be read (not JSON, not UTF-8, wrong types) is rejected by itself, with the row as its
raw bytes (the row's columns as a JSON object); the rows of a rejected message or session are
skipped ``of_rejected_row``. Rows that belong to no session (a message whose session row, or a
part whose message row, is missing) are rejected ``malformed``. An export is read the same way:
the document stands for the session, each ``messages[i]`` and each of its parts is a record. A
database without these tables and columns is one ``malformed`` reject naming what it holds (its
schema as raw bytes); a file that is not a database (or is damaged) is ``unreadable_file``.

The database is never modified, and committed transactions still in its ``-wal`` file are read
(``sqlite.readonly_database``).
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from ..messages import Message, Part, Session, Usage, as_dict, dumps_arguments
from ..rejects import RecordError, Reject, clip, inspect_value
from ..store import session_id_for
from ..validate import (
    FLAG_COMPACTION_SUMMARY,
    FLAG_TIMESTAMP_INVALID,
    FLAG_TURN_ABORTED,
)
from .base import exception_reason, expect, importers, require
from .parts import unknown_part
from .records import Record, sub_record
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

FORMAT = "opencode"
#: what OpenCode sends the model for a ``compaction`` part and a ``subtask`` part
COMPACTION_PROMPT = "What did we do so far?"
SUBTASK_PROMPT = "The following tool was executed by the user"
#: what OpenCode sends the model for a tool part left pending or running
INTERRUPTED = "[Tool execution was interrupted]"
#: user file parts OpenCode sends as the synthetic text parts beside them
TEXT_FILES = ("text/plain", "application/x-directory")
#: parts that are bookkeeping, never sent to the model
BOOKKEEPING = frozenset({"snapshot", "patch", "agent"})
TOOL_STATES = ("pending", "running", "completed", "error")
FLAG_REQUEST_ERROR = "request_error"
FLAG_GENERATION_RETRIED = "generation_retried"
ABORTED = "MessageAbortedError"
#: the tables and columns an OpenCode database must have
REQUIRED: Tables = {
    "session": ("id",),
    "message": ("id", "session_id", "data"),
    "part": ("id", "message_id", "data"),
}
__all__ = ["OpenCodeImporter"]


# --- the units a session is read from ----------------------------------------------------------


@dataclass
class Unit:
    """One record: a database row or an element of an export, with what it holds."""

    index: int
    kind: str  # "session", "message", "part"
    ident: str | None
    raw: bytes
    load: Callable[[], Any]  # its parsed object; raises ``RecordError`` when unreadable
    where: str = "$"


@dataclass
class _Piece:
    """What one part gives its message."""

    kind: str  # content, call, step-start, step-finish, retry, compaction, skip
    part: Part | None = None
    data: dict[str, Any] = field(default_factory=dict)
    label: str = ""
    source: str = ""  # the part's own type


@dataclass
class _Info:
    """A session's own fields, from a ``session`` row or an export's ``info``."""

    id: Any
    parent: Any = None
    meta: dict[str, Any] = field(default_factory=dict)


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _iso(value: Any) -> str | None:
    text, bad = timestamp_of(value)
    return None if bad else text


def _usage(tokens: Any) -> tuple[Usage | None, dict[str, Any] | None]:
    """A message's or step's ``tokens`` as usage (None when not recorded or all zero), and the
    counts themselves (for the session's totals)."""
    if not isinstance(tokens, dict):
        return None, None
    cache = as_dict(tokens.get("cache"))
    counts = {
        "input": tokens.get("input"),
        "output": tokens.get("output"),
        "reasoning": tokens.get("reasoning"),
        "cache_read": cache.get("read"),
        "cache_write": cache.get("write"),
    }
    if all(v is None or v == 0 for v in counts.values()):
        return None, None
    pieces = [counts["input"], counts["cache_read"], counts["cache_write"]]
    if all(v is None or _int(v) for v in pieces):
        prompt: Any = sum(v or 0 for v in pieces)
    else:  # a count that is not an integer: validation drops it and flags the message
        prompt = next(v for v in pieces if v is not None and not _int(v))
    return Usage(prompt, counts["cache_read"], counts["output"]), counts


def _media(mime: Any, url: Any, where: str) -> Part:
    """A ``file`` part (or a tool attachment): a ``data:`` URL is a blob, any other a uri."""
    url = expect(url, str, f"{where}.url", "file url")
    mime = mime if isinstance(mime, str) else None
    if url.startswith("data:"):
        header, _, payload = url.partition(",")
        mime = header[5:].split(";")[0] or mime
        modality = _modality(mime)
        return Part("blob", content=payload, mime_type=mime, modality=modality)
    return Part("uri", uri=url, mime_type=mime, modality=_modality(mime))


def _modality(mime: str | None) -> str:
    for kind in ("image", "audio"):
        if (mime or "").startswith(f"{kind}/"):
            return kind
    return "file"


def _text(value: Any, where: str, what: str = "text") -> str:
    return expect(value if value is not None else "", str, where, what)


def piece_of(data: Any, where: str, role: str) -> _Piece:
    """One part's contribution to its message (``MessageV2.toModelMessages``)."""
    expect(data, dict, where, "part")
    kind = expect(require(data, "type", where), str, f"{where}.type", "part type")
    return replace(_piece(data, kind, where, role), source=kind)


def _piece(data: dict[str, Any], kind: str, where: str, role: str) -> _Piece:
    if kind == "text":
        text = _text(data.get("text"), f"{where}.text")
        if data.get("ignored") is True:
            return _Piece("skip", label="ignored_text")
        return _Piece("content", Part.text(text)) if text else _Piece("skip", label="empty_text")
    if kind == "reasoning":
        text = _text(data.get("text"), f"{where}.text")
        if not text:
            return _Piece("skip", label="empty_reasoning")
        return _Piece("content", Part("reasoning", content=text))
    if kind == "tool":
        return _tool_piece(data, where)
    if kind == "file":
        if role == "user" and data.get("mime") in TEXT_FILES:
            return _Piece("skip", label="file_sent_as_text")
        return _Piece("content", _media(data.get("mime"), require(data, "url", where), where))
    if kind == "step-start":
        return _Piece("step-start")
    if kind == "step-finish":
        usage, counts = _usage(data.get("tokens"))
        return _Piece("step-finish", data={"usage": usage, "counts": counts})
    if kind == "compaction":
        if role != "user":
            return _Piece("skip", label="compaction")
        info = {"auto": data.get("auto"), "overflow": data.get("overflow")}
        return _Piece("compaction", Part.text(COMPACTION_PROMPT), data=info)
    if kind == "subtask":
        if role != "user":
            return _Piece("skip", label="subtask")
        return _Piece("content", Part.text(SUBTASK_PROMPT), data={"agent": data.get("agent")})
    if kind == "retry":
        return _Piece("retry", data={"attempt": data.get("attempt")})
    if kind in BOOKKEEPING:
        return _Piece("skip", label=kind)
    return _Piece("content", unknown_part(data), label="unknown")


def _tool_piece(data: dict[str, Any], where: str) -> _Piece:
    call_id = expect(require(data, "callID", where), str, f"{where}.callID", "callID")
    name = expect(require(data, "tool", where), str, f"{where}.tool", "tool name")
    state = expect(require(data, "state", where), dict, f"{where}.state", "tool state")
    status = expect(require(state, "status", f"{where}.state"), str, f"{where}.state.status")
    if status not in TOOL_STATES:
        raise RecordError(
            "malformed", f"tool state {status!r} is not one of {TOOL_STATES}", f"{where}.state"
        )
    args = state.get("input", {})
    arguments = args if isinstance(args, str) else dumps_arguments(args if args is not None else {})
    meta = as_dict(state.get("metadata"))
    times = as_dict(state.get("time"))
    out: dict[str, Any] = {"status": status, "name": name, "end": times.get("end")}
    if status == "completed":
        output = state.get("output", "")
        out["content"] = output if isinstance(output, str) else json.dumps(output)
        media = []
        for i, att in enumerate(state.get("attachments") or []):
            at = f"{where}.state.attachments[{i}]"
            att = expect(att, dict, at, "attachment")
            media.append(_media(att.get("mime"), require(att, "url", at), at))
        out["media"] = media
        out["compacted"] = times.get("compacted")
    elif status == "error":
        partial = meta.get("output")
        if meta.get("interrupted") is True and isinstance(partial, str):
            out.update(content=partial, interrupted=True)
        else:
            error = state.get("error", "")
            out.update(content=error if isinstance(error, str) else json.dumps(error), error=True)
    if name == "task" and isinstance(meta.get("sessionId"), str):
        out["child"] = meta["sessionId"]
    return _Piece("call", Part.call(call_id, name, arguments), data=out)


# --- building a session --------------------------------------------------------------------------


@dataclass
class _Step:
    parts: list[Part] = field(default_factory=list)
    results: list[tuple[Message, bool]] = field(default_factory=list)  # (message, placeholder)
    usage: Usage | None = None
    counts: dict[str, Any] | None = None
    finished: bool = False
    retried: bool = False

    @property
    def empty(self) -> bool:
        return not self.parts and not self.results


class _Builder:
    """The canonical messages of one session, message by message."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.placeholders: set[int] = set()  # indexes of pending-call results
        self.skipped: Counter[str] = Counter()
        self.models: list[str] = []
        self.agents: list[str] = []
        self.totals: Counter[str] = Counter()
        self.cost = 0.0
        self.requests = 0
        self.compaction_parts: dict[str, dict[str, Any]] = {}
        self.compactions: list[dict[str, Any]] = []
        self.pruned: list[dict[str, Any]] = []
        self.children: list[tuple[str, str]] = []  # (call id, child session id)
        self.failed = 0
        self.aborted = 0
        self.retries = 0
        self.last_prompt: Any = None

    def add(self, ident: str, info: dict[str, Any], pieces: list[tuple[str, _Piece]]) -> None:
        role = info["role"]
        for _, piece in pieces:
            if piece.kind == "skip":
                self.skipped[piece.label] += 1
        agent = info.get("agent") or info.get("mode")
        if isinstance(agent, str) and agent not in self.agents:
            self.agents.append(agent)
        if role == "user":
            self._user(ident, info, pieces)
        else:
            self._assistant(ident, info, pieces)

    def _time(self, info: dict[str, Any]) -> tuple[str | None, tuple[str, ...]]:
        text, bad = timestamp_of(as_dict(info.get("time")).get("created"))
        return text, (FLAG_TIMESTAMP_INVALID,) if bad else ()

    def _user(self, ident: str, info: dict[str, Any], pieces: list[tuple[str, _Piece]]) -> None:
        parts: list[Part] = []
        for pid, piece in pieces:
            if piece.kind in ("content", "compaction") and piece.part is not None:
                parts.append(piece.part)
            if piece.kind == "compaction":
                self.compaction_parts[ident] = {**piece.data, "part": pid}
            elif piece.kind not in ("content", "skip"):
                self.skipped[f"{piece.kind}_in_user_message"] += 1
        model = as_dict(info.get("model"))
        self._model(model.get("providerID"), model.get("modelID"), requested=True)
        if not parts:
            self.skipped["empty_message"] += 1
            return
        ts, flags = self._time(info)
        self.messages.append(
            Message(
                "user", tuple(parts), timestamp=ts, flags=flags, source_path=f"message[{ident}]"
            )
        )

    def _model(self, provider: Any, model: Any, requested: bool = False) -> None:
        if isinstance(model, str) and model:
            label = f"{provider}/{model}" if isinstance(provider, str) and provider else model
            if label not in self.models and not (requested and self.models):
                self.models.append(label)

    def _assistant(
        self, ident: str, info: dict[str, Any], pieces: list[tuple[str, _Piece]]
    ) -> None:
        self._model(info.get("providerID"), info.get("modelID"))
        if isinstance(info.get("cost"), int | float) and not isinstance(info.get("cost"), bool):
            self.cost += float(info["cost"])
        error = info.get("error")
        aborted = isinstance(error, dict) and error.get("name") == ABORTED
        # OpenCode keeps an aborted message in later requests when it holds more than steps
        # and reasoning; any other error leaves the message out
        content = any(p.source not in ("step-start", "reasoning") for _, p in pieces)
        failed = error is not None and not (aborted and content)
        before = self.last_prompt
        steps = self._steps(pieces)
        ts, flags = self._time(info)
        out: list[tuple[Message, bool]] = []
        for k, step in enumerate(steps):
            usage = step.usage
            if step.counts:
                self.requests += 1
                self.totals.update({c: v for c, v in step.counts.items() if _int(v)})
            if step.usage is not None:
                self.last_prompt = step.usage.prompt_tokens
            if not step.parts:
                out.extend(step.results)
                continue
            step_flags = flags + ((FLAG_GENERATION_RETRIED,) if step.retried else ())
            where = f"message[{ident}]" if len(steps) == 1 else f"message[{ident}].step[{k}]"
            msg = Message(
                "assistant",
                tuple(step.parts),
                usage=usage,
                timestamp=ts,
                flags=step_flags,
                source_path=where,
            )
            out.append((msg, False))
            out.extend(step.results)
        if not any(s.counts for s in steps):  # no step-finish: the message's own tokens
            usage, counts = _usage(info.get("tokens"))
            last = next(
                (i for i in range(len(out) - 1, -1, -1) if out[i][0].role == "assistant"), None
            )
            if usage is not None and last is not None:
                out[last] = (replace(out[last][0], usage=usage), False)
                self.last_prompt = usage.prompt_tokens
            if counts:
                self.requests += 1
                self.totals.update({c: v for c, v in counts.items() if _int(v)})
        if not out:
            self.skipped["empty_message"] += 1
            if error is not None:
                self.failed += 1
            return
        if failed:
            self.failed += 1
            out = [
                (replace(m, visible=False, flags=(*m.flags, FLAG_REQUEST_ERROR)), ph)
                for m, ph in out
            ]
        elif aborted:
            self.aborted += 1
            m, ph = out[-1]
            if FLAG_TURN_ABORTED not in m.flags:
                out[-1] = (replace(m, flags=(*m.flags, FLAG_TURN_ABORTED)), ph)
        start = len(self.messages)
        for m, placeholder in out:
            if placeholder:
                self.placeholders.add(len(self.messages))
            self.messages.append(m)
        if info.get("summary") is True and not failed and error is None:
            first = next(i for i in range(start, len(self.messages)))
            m = self.messages[first]
            self.messages[first] = replace(m, flags=(*m.flags, FLAG_COMPACTION_SUMMARY))
            request = self.compaction_parts.get(str(info.get("parentID")))
            auto = request.get("auto") if request else None
            self.compactions.append(
                {
                    "kind": "compaction" if request else "summary",
                    "trigger": None if auto is None else ("auto" if auto else "manual"),
                    "overflow": request.get("overflow") if request else None,
                    "pre_tokens": before,
                    "timestamp": ts,
                    "summary_seq_index": first,
                }
            )

    def _steps(self, pieces: list[tuple[str, _Piece]]) -> list[_Step]:
        steps = [_Step()]
        for pid, piece in pieces:
            step = steps[-1]
            if piece.kind == "step-start":
                if not step.empty or step.finished:
                    steps.append(_Step())
                continue
            if piece.kind == "step-finish":
                if step.finished:
                    step = _Step()
                    steps.append(step)
                step.usage, step.counts = piece.data["usage"], piece.data["counts"]
                step.finished = True
                continue
            if piece.kind == "retry":
                self.retries += 1
                step.retried = True
                continue
            if piece.kind not in ("content", "call") or piece.part is None:
                continue
            if step.finished:
                step = _Step()
                steps.append(step)
            step.parts.append(piece.part)
            if piece.kind == "call":
                step.results.append(self._result(pid, piece))
        return [s for s in steps if not s.empty or s.counts]

    def _result(self, pid: str, piece: _Piece) -> tuple[Message, bool]:
        call = piece.part
        assert call is not None and call.id is not None
        d = piece.data
        if "child" in d:
            self.children.append((call.id, d["child"]))
        ts = _iso(d.get("end"))
        where = f"part[{pid}]"
        if d["status"] in ("pending", "running"):
            part = Part.response(call.id, INTERRUPTED, call.name)
            msg = Message(
                "tool", (part,), is_error=True, flags=(FLAG_TURN_ABORTED,), source_path=where
            )
            return msg, True
        if d.get("compacted") is not None:
            self.pruned.append({"call_id": call.id, "compacted_at": _iso(d["compacted"])})
        parts = (Part.response(call.id, d["content"], call.name), *d.get("media", ()))
        flags = (FLAG_TURN_ABORTED,) if d.get("interrupted") else ()
        return (
            Message(
                "tool",
                parts,
                is_error=bool(d.get("error")),
                timestamp=ts,
                flags=flags,
                source_path=where,
            ),
            False,
        )

    def finish(self) -> list[Message]:
        """The messages, without pending-call results that nothing followed."""
        real = [i for i in range(len(self.messages)) if i not in self.placeholders]
        last = real[-1] if real else -1
        dropped = {i for i in self.placeholders if i > last}
        self.skipped["interrupted_call_at_end"] += len(dropped)
        if dropped:
            kept = [m for i, m in enumerate(self.messages) if i not in dropped]
            shift = {i: i - sum(1 for d in dropped if d < i) for i in range(len(self.messages))}
            for c in self.compactions:
                c["summary_seq_index"] = shift[c["summary_seq_index"]]
            self.messages = kept
        return self.messages


# --- the importer ------------------------------------------------------------------------------


@importers.register(FORMAT)
class OpenCodeImporter(DatabaseImporter):
    """OpenCode's ``opencode.db`` (tables ``session``, ``message``, ``part``) and ``opencode
    export`` JSON: one session per session row (or export)."""

    suffixes = (".db", ".json")
    required = REQUIRED
    database_name = "an OpenCode database"

    def sniff_file(self, path: Path, head: bytes) -> float:
        return sniff_export(sample_of(path, head))

    def reset(self) -> None:
        self._index = 0

    def read_file(self, path: Path) -> Iterator[Session | Reject]:
        return self._read_export(path)

    # -- records --------------------------------------------------------------------------

    def _unit(self, kind: str, ident: Any, raw: bytes, load: Callable[[], Any], where: str) -> Unit:
        self.tally.seen += 1
        unit = Unit(self._index, kind, ident if isinstance(ident, str) else None, raw, load, where)
        self._index += 1
        return unit

    def _row_reject(self, path: Path, unit: Unit, e: BaseException, session: str | None) -> Reject:
        reason, detail = exception_reason(e)
        where = e.json_path if isinstance(e, RecordError) else "$"
        label = f"{unit.kind} {unit.ident!r}" if unit.ident else unit.kind
        return self.row_reject(
            path,
            reason,
            clip(f"{label}: {detail}"),
            unit.raw,
            unit.index,
            session,
            where if where != "$" else unit.where,
        )

    # -- the database -----------------------------------------------------------------------

    def read_tables(
        self, path: Path, conn: sqlite3.Connection, tables: Tables
    ) -> Iterator[Session | Reject]:
        s_cols, m_cols, p_cols = tables["session"], tables["message"], tables["part"]
        callers = _task_callers(conn)
        try:
            names, rows = select(
                conn, f"SELECT * FROM session{order_by(s_cols, 'time_created', 'id')}"
            )
        except DB_ERRORS as e:
            yield self.file_reject(path, "unreadable_file", f"reading sessions failed: {e}")
            return
        seen_ids: set[Any] = set()
        for row in rows:
            values = dict(zip(names, row, strict=False))
            raw = row_json(names, row)
            sid = values.get("id")
            unit = self._unit("session", text_of(sid), raw, values.copy, "$")
            rejected = self.id_reject(path, sid, seen_ids, raw, unit.index, unit.ident)
            if rejected is not None:
                yield rejected
                continue
            try:
                messages = self._message_rows(conn, sid, m_cols, p_cols)
            except DB_ERRORS as e:
                detail = f"reading its messages failed: {e}"
                yield self.row_reject(path, "unreadable_file", detail, raw, unit.index, unit.ident)
                continue
            info = _row_info(values)
            yield from self._session(path, unit, info, messages, callers)
        yield from self._orphans(path, conn)

    def _message_rows(
        self, conn: sqlite3.Connection, sid: Any, m_cols: tuple[str, ...], p_cols: tuple[str, ...]
    ) -> list[tuple[Unit, list[Unit]]]:
        mark, key = bind(sid)
        m_names, m_rows = select(
            conn,
            f"SELECT * FROM message WHERE session_id = {mark}"
            f"{order_by(m_cols, 'time_created', 'id')}",
            (key,),
        )
        p_names, p_rows = select(
            conn,
            "SELECT p.* FROM part p JOIN message m ON m.id = p.message_id "
            f"WHERE m.session_id = {mark} ORDER BY p.message_id, p.id",
            (key,),
        )
        by_message: dict[Any, list[tuple[Any, ...]]] = {}
        for prow in p_rows:
            by_message.setdefault(dict(zip(p_names, prow, strict=False))["message_id"], []).append(
                prow
            )
        out: list[tuple[Unit, list[Unit]]] = []
        for mrow in m_rows:
            mv = dict(zip(m_names, mrow, strict=False))
            m_unit = self._unit(
                "message",
                text_of(mv.get("id")),
                row_json(m_names, mrow),
                functools.partial(_row_object, mv, "message"),
                "$.data",
            )
            parts = []
            for prow in by_message.get(mv.get("id"), []):
                pv = dict(zip(p_names, prow, strict=False))
                parts.append(
                    self._unit(
                        "part",
                        text_of(pv.get("id")),
                        row_json(p_names, prow),
                        functools.partial(_row_object, pv, "part"),
                        "$.data",
                    )
                )
            out.append((m_unit, parts))
        return out

    def _orphans(self, path: Path, conn: sqlite3.Connection) -> Iterator[Reject]:
        queries = (
            (
                "message",
                "SELECT * FROM message m WHERE NOT EXISTS "
                "(SELECT 1 FROM session s WHERE s.id = m.session_id)",
                "its session row is missing",
            ),
            (
                "part",
                "SELECT * FROM part p WHERE NOT EXISTS "
                "(SELECT 1 FROM message m WHERE m.id = p.message_id)",
                "its message row is missing",
            ),
        )
        for kind, sql, why in queries:
            try:
                names, rows = select(conn, sql)
            except DB_ERRORS as e:
                yield self.file_reject(path, "unreadable_file", f"reading {kind} rows failed: {e}")
                return
            for row in rows:
                values = dict(zip(names, row, strict=False))
                unit = self._unit(
                    kind, text_of(values.get("id")), row_json(names, row), lambda: None, "$"
                )
                sid = text_of(values.get("session_id"))
                detail = f"{kind} {unit.ident!r} belongs to no session: {why}"
                owner = sid if isinstance(sid, str) else None
                yield self.row_reject(path, "malformed", detail, unit.raw, unit.index, owner)

    # -- the export -------------------------------------------------------------------------

    def _read_export(self, path: Path) -> Iterator[Session | Reject]:
        doc = self.document(path)
        self._index = 1
        if isinstance(doc, Reject):
            yield doc
            return
        value = doc.value
        try:
            expect(value, dict, "$", "export")
            info = expect(require(value, "info", "$"), dict, "$.info", "session info")
            elements = expect(require(value, "messages", "$"), list, "$.messages", "messages")
        except RecordError as e:
            yield from self.guarded(path, doc, lambda e=e: _raise(e))
            return
        unit = Unit(0, "session", None, doc.raw, lambda: info, "$")
        messages: list[tuple[Unit, list[Unit]]] = []
        for i, element in enumerate(elements):
            where = f"$.messages[{i}]"
            el = element if isinstance(element, dict) else {}
            m_info = el.get("info")
            m_unit = self._unit(
                "message",
                as_dict(m_info).get("id"),
                sub_record(i, m_info if m_info is not None else element).raw,
                functools.partial(_export_message, element, where),
                f"{where}.info",
            )
            parts = []
            raw_parts = el.get("parts")
            for j, part in enumerate(raw_parts if isinstance(raw_parts, list) else []):
                at = f"{where}.parts[{j}]"
                parts.append(
                    self._unit(
                        "part",
                        as_dict(part).get("id"),
                        sub_record(j, part).raw,
                        functools.partial(_checked_object, part, at),
                        at,
                    )
                )
            messages.append((m_unit, parts))
        todos = value.get("todos")
        extra = {"todos": len(todos)} if isinstance(todos, list) else {}
        yield from self._session(path, unit, _export_info(info, extra), messages, {})

    # -- one session --------------------------------------------------------------------------

    def _session(
        self,
        path: Path,
        unit: Unit,
        info: _Info,
        messages: list[tuple[Unit, list[Unit]]],
        callers: dict[str, str],
    ) -> Iterator[Session | Reject]:
        sid = info.id if isinstance(info.id, str) else None
        rejects: list[Reject] = []
        folded = 0
        orphaned = 0
        read: list[tuple[str, dict[str, Any], list[tuple[str, _Piece]]]] = []
        for m_unit, p_units in messages:
            try:
                m_info = m_unit.load()
                role = _role(m_info, m_unit.where)
            except Exception as e:
                rejects.append(self._row_reject(path, m_unit, e, sid))
                orphaned += len(p_units)
                continue
            pieces: list[tuple[str, _Piece]] = []
            for p_unit in p_units:
                try:
                    pieces.append(
                        (
                            p_unit.ident or str(p_unit.index),
                            piece_of(p_unit.load(), p_unit.where, role),
                        )
                    )
                except Exception as e:
                    rejects.append(self._row_reject(path, p_unit, e, sid))
                    continue
                folded += 1
            folded += 1
            read.append((m_unit.ident or str(m_unit.index), m_info, pieces))
        yield from rejects
        record = Record(unit.index, {"id": sid} if sid else {}, unit.raw)
        items = list(
            self.guarded(
                path, record, lambda: [self._build(path, unit, info, read, callers, len(rejects))]
            )
        )
        made = any(isinstance(i, Session) for i in items)
        self.tally.skip("part_of_session" if made else "of_rejected_row", folded)
        self.tally.skip("of_rejected_row", orphaned)
        yield from items

    def _build(
        self,
        path: Path,
        unit: Unit,
        info: _Info,
        read: list[tuple[str, dict[str, Any], list[tuple[str, _Piece]]]],
        callers: dict[str, str],
        rejected: int,
    ) -> Session:
        sid = info.id
        if not isinstance(sid, str) or not sid:
            raise RecordError("missing_field", "the session has no id", "$.id")
        b = _Builder()
        for ident, m_info, pieces in read:
            b.add(ident, m_info, pieces)
        messages = b.finish()
        meta = dict(info.meta)
        meta.update(
            {
                "models": b.models or None,
                "agents": b.agents or None,
                "cost_usd": round(b.cost, 6) if b.cost else None,
                "token_totals": dict(sorted(b.totals.items())) or None,
                "requests": b.requests,
                "compactions": b.compactions or None,
                "pruned_results": b.pruned or None,
                "failed_requests": b.failed or None,
                "aborted_turns": b.aborted or None,
                "retries": b.retries or None,
                "skipped_parts": dict(sorted((k, v) for k, v in b.skipped.items() if v)) or None,
                "rejected_records": rejected or None,
            }
        )
        parent = info.parent if isinstance(info.parent, str) and info.parent else None
        if parent is not None:
            meta["parent_session_id"] = _session_id(parent)
            meta["parent_source_session_id"] = parent
            meta["parent_call_id"] = callers.get(sid)
        if b.children:
            meta["subagents"] = [
                {"call_id": call, "source_session_id": child, "session_id": _session_id(child)}
                for call, child in b.children
            ]
        return Session(
            source_format=self.name,
            source_session_id=sid,
            messages=messages,
            key=sid,
            source_location=str(path),
            source_record=unit.index,
            workload=FORMAT,
            metadata={k: v for k, v in meta.items() if v is not None},
        )


def _raise(e: Exception) -> list[Session]:
    raise e


def _session_id(source_id: str) -> str:
    """The corpus id of the OpenCode session ``source_id`` (its key is its id)."""
    return session_id_for(Session(FORMAT, source_id, [], key=source_id))


def _role(info: Any, where: str) -> str:
    expect(info, dict, where, "message")
    role = expect(require(info, "role", where), str, f"{where}.role", "role")
    if role not in ("user", "assistant"):
        raise RecordError(
            "unknown_role", f"role {role!r} is not user or assistant", f"{where}.role"
        )
    return role


def _row_object(values: dict[str, Any], kind: str) -> dict[str, Any]:
    """A message or part row's object: its ``data`` JSON with the row's own id."""
    data = json_column(values.get("data"), f"the {kind}'s data", "$.data")
    expect(data, dict, "$.data", f"{kind} data")
    out = dict(data)
    if isinstance(text_of(values.get("id")), str):
        out["id"] = text_of(values["id"])
    return out


def _checked_object(value: Any, where: str) -> Any:
    problem = inspect_value(value, root=where)
    if problem is not None:
        raise RecordError(
            problem[0], "the record holds bytes that are not UTF-8 or nests too deep", problem[1]
        )
    return value


def _export_message(element: Any, where: str) -> dict[str, Any]:
    expect(element, dict, where, "message")
    info = expect(require(element, "info", where), dict, f"{where}.info", "message info")
    parts = element.get("parts", [])
    expect(parts, list, f"{where}.parts", "parts")
    return cast(dict[str, Any], _checked_object(info, f"{where}.info"))


def _row_info(values: dict[str, Any]) -> _Info:
    v = {k: text_of(x) for k, x in values.items()}
    meta: dict[str, Any] = {
        "title": v.get("title"),
        "slug": v.get("slug"),
        "cwd": v.get("directory"),
        "project_id": v.get("project_id"),
        "opencode_version": v.get("version"),
        "created": _iso(v.get("time_created")),
        "updated": _iso(v.get("time_updated")),
        "archived": _iso(v.get("time_archived")),
        "agent": v.get("agent"),
    }
    diff = {k: v.get(f"summary_{k}") for k in ("additions", "deletions", "files")}
    if any(_int(x) for x in diff.values()):
        meta["diff_summary"] = diff
    recorded = {
        k: v[k]
        for k in (
            "tokens_input",
            "tokens_output",
            "tokens_reasoning",
            "tokens_cache_read",
            "tokens_cache_write",
        )
        if _int(v.get(k))
    }
    if recorded:
        meta["session_token_columns"] = recorded
    return _Info(v.get("id"), v.get("parent_id"), {k: x for k, x in meta.items() if x is not None})


def _export_info(info: dict[str, Any], extra: dict[str, Any]) -> _Info:
    times = as_dict(info.get("time"))
    diff = as_dict(info.get("summary"))
    meta: dict[str, Any] = {
        "title": info.get("title"),
        "slug": info.get("slug"),
        "cwd": info.get("directory"),
        "project_id": info.get("projectID"),
        "opencode_version": info.get("version"),
        "created": _iso(times.get("created")),
        "updated": _iso(times.get("updated")),
        "archived": _iso(times.get("archived")),
        **extra,
    }
    if diff:
        meta["diff_summary"] = {k: diff.get(k) for k in ("additions", "deletions", "files")}
    meta = {k: x for k, x in meta.items() if isinstance(x, str | int | dict) and x is not None}
    return _Info(info.get("id"), info.get("parentID"), meta)


def _task_callers(conn: sqlite3.Connection) -> dict[str, str]:
    """Child session id -> the ``task`` call that started it (from every tool part)."""
    try:
        rows = conn.execute(
            "SELECT json_extract(data, '$.state.metadata.sessionId'), json_extract(data, '$.callID')"
            " FROM part WHERE json_valid(data) AND json_extract(data, '$.type') = 'tool'"
            " AND json_extract(data, '$.tool') = 'task'"
        ).fetchall()
    except DB_ERRORS:
        return {}
    out: dict[str, str] = {}
    for child, call in rows:
        child, call = text_of(child), text_of(call)
        if isinstance(child, str) and isinstance(call, str):
            out.setdefault(child, call)
    return out


# --- detection ---------------------------------------------------------------------------------


#: detection: an export whose messages all have their ``info`` and ``parts``
EXPORT_SCORE = 0.97
#: an export with no messages
EMPTY_EXPORT_SCORE = 0.8
#: an export some of whose messages are not shaped like OpenCode's
PARTIAL_EXPORT_SCORE = 0.6


def _export_score(record: Any) -> float:
    if not isinstance(record, dict):
        return 0.0
    info, messages = record.get("info"), record.get("messages")
    if not isinstance(info, dict) or not isinstance(messages, list):
        return 0.0
    if not isinstance(info.get("id"), str) or not {"projectID", "directory", "slug"} & set(info):
        return 0.0
    if not messages:
        return EMPTY_EXPORT_SCORE
    shaped = [
        m
        for m in messages
        if isinstance(m, dict)
        and isinstance(m.get("info"), dict)
        and isinstance(m["info"].get("role"), str)
        and isinstance(m.get("parts"), list)
    ]
    return EXPORT_SCORE if len(shaped) == len(messages) else PARTIAL_EXPORT_SCORE


def sniff_export(sample: Sample) -> float:
    if sample.layout != "document":
        return 0.0
    return sample.best(_export_score)
