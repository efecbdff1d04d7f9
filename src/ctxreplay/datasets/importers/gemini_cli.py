"""Google Gemini CLI chat logs (``~/.gemini/tmp/<project hash>/chats/session-<time>-<id>.json[l]``).

Shapes from google-gemini/gemini-cli, ``packages/core/src/services/chatRecordingService.ts`` and
``chatRecordingTypes.ts`` (``ConversationRecord``, ``MessageRecord``, ``ToolCallRecord``,
``TokensSummary``), ``conversationRecordSchema.ts`` (the zod schema of a record) and
``packages/core/src/utils/sessionUtils.ts`` (``convertSessionToClientHistory``: how the CLI turns
a record back into the Gemini API history when it resumes a session, which this reader follows).

Two layouts, one session per file:

* **JSON** (versions up to early 2026): one document ``{sessionId, projectHash, startTime,
  lastUpdated, summary?, directories?, kind?, messages[]}``, rewritten whole at every change.
  The accounting unit is the document: it is one record, and anything in it that cannot be read
  rejects it.
* **JSONL** (later versions): a metadata line ``{sessionId, projectHash, startTime, lastUpdated,
  kind?, directories?}``, then a line per message write. A message is appended again, whole,
  each time it changes (its tool calls complete, its tokens arrive): the last version of an
  ``id`` is kept, at the position of its first line, like the CLI's loader (a JavaScript
  ``Map`` keeps a key's first position). ``{"$set": {...}}`` lines update metadata (a title
  ``summary``, ``directories``, ``lastUpdated``); a ``$set`` holding ``messages`` is the whole
  history the CLI now sends (``updateMessagesFromHistory``): its messages replace theirs by id,
  new ones are inserted where they stand in it. ``{"$rewindTo": id}`` (``/rewind``) drops that
  message and all after it: they stay in the session, flagged ``abandoned_branch`` and not
  visible. Each line is one record: a line that cannot be read is rejected by itself (with its
  bytes) and the session is made of the others.

Messages (``type``):

* ``user``: a user message; ``content`` is a string or a Gemini ``Part`` list (text,
  ``inlineData`` → blob, ``fileData`` → uri). ``functionResponse`` parts in it (the CLI's own
  copy of a tool-response turn, written into some ``$set`` histories) become ``tool`` messages;
  one answering a call that already has its result is a copy and is dropped (counted,
  ``duplicate_results``). ``displayContent`` is what the UI showed, not what the model read.
* ``gemini``: an assistant message. Its parts are, as the CLI rebuilds them: when ``content``
  holds ``functionCall`` or ``thought`` parts (newer versions), the content itself (``thought``
  text → reasoning); else the ``thoughts`` summaries (reasoning, ``**subject** description``),
  the content, and a tool call per ``toolCalls`` entry (``id``, ``name``, ``args``). Each tool
  call's ``result`` (a list of Gemini parts: ``functionResponse`` ``{id, name, response}`` and
  whatever parts followed it, text or media) becomes a ``tool`` message right after: one
  ``tool_call_response`` part with the call id and the text the tool returned
  (``response.output``, else ``response.error``, else the response's JSON), then the following
  parts. ``status`` ``error`` or ``cancelled`` sets ``is_error``. A call with no result stays
  unanswered (flagged). ``tokens`` ``{input, output, cached, thoughts, tool, total}`` becomes
  the message usage: prompt = ``input`` (Gemini's ``promptTokenCount``, cached included),
  cached = ``cached``, completion = ``output + thoughts`` (``candidatesTokenCount`` does not
  count thinking tokens; OpenAI's and Anthropic's output counts do). ``model`` goes to metadata.
* ``info``, ``error``, ``warning``: the CLI's notices to the user, never sent to the model;
  and ``user`` messages that are slash commands (text starting with ``/`` or ``?``, as
  ``isIgnoredUserContent`` says). The rule: they are left out of the session and counted in
  its metadata ``cli_messages`` by kind; in the JSONL layout their lines are skipped
  ``cli_message``. A message with no content at all is left out too (``empty_messages``).

Compactions. ``/compress`` and automatic compression replace the history with a summary (a
``user`` message holding a ``<state_snapshot>``, then the model's acknowledgement, then the
latest turns kept). Versions that write the history back (a ``$set`` ``messages``) record it:
when such a history no longer holds messages that were in the context and starts with a message
never seen before, that message is flagged ``compaction_summary`` and the messages it replaced
stay before it, in order, visible (``compactions`` metadata, ``trigger`` ``manual`` after a
``/compress`` command). A history that drops messages without a new first one is counted
``context_truncations``. Older versions did not write the compressed history
(google-gemini/gemini-cli#21335): their ``/compress`` commands are counted
(``compress_commands``) but nothing can be flagged.

Besides chats, the CLI keeps in the same folders (``packages/core/src/core/logger.ts``):

* ``logs.json``: every prompt typed, ``[{sessionId, messageId, type, message, timestamp}]``, for
  the input history. Not a session (the prompts are in the chats): each entry is skipped
  ``prompt_log``. An empty ``[]`` named ``logs.json`` is taken as one (the CLI writes that).
* ``checkpoint-<tag>.json`` (``/chat save <tag>``): the Gemini API history itself, ``Content[]``
  ``[{role: user|model, parts[]}]``, or ``{history: Content[], authType?}``. It imports as a
  session (``checkpoint-<tag>``): model turns are assistant messages, ``functionResponse`` parts
  tool messages. Calls and responses without ids are paired by name within adjacent turns, as
  the CLI's ``ensureStableToolIds`` does. The document (or each array element) is the unit.

Tool results always follow their calls in these logs, so a result without its call rejects the
session (the default ``orphan_results``).
"""

from __future__ import annotations

import json
import urllib.parse
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from ..messages import Message, Part, Session, Usage
from ..rejects import RecordError, Reject
from ..validate import FLAG_ABANDONED_BRANCH, FLAG_COMPACTION_SUMMARY, FLAG_TIMESTAMP_INVALID
from .base import Importer, expect, importers, raising, require, uuid_in_name
from .openai_chat import file_digest
from .parts import unknown_part as _unknown_part
from .records import Record
from .sniffing import SNIFF_BYTES, Sample, sample_of
from .times import timestamp_of

__all__ = ["GeminiCliImporter"]

MESSAGE_TYPES = ("user", "gemini", "info", "error", "warning")
#: messages the CLI shows the user and never sends to the model
CLI_TYPES = frozenset({"info", "error", "warning"})
#: tool call statuses whose result reports a failure
ERROR_STATUSES = frozenset({"error", "cancelled"})
#: keys of a Gemini API ``Part``
PART_KEYS = frozenset(
    {"text", "thought", "thoughtSignature", "inlineData", "fileData", "functionCall",
     "functionResponse", "executableCode", "codeExecutionResult", "videoMetadata"}
)  # fmt: skip
#: metadata of the first line / document kept in the session metadata
_META_KEYS = (
    ("projectHash", "project_hash"),
    ("startTime", "start_time"),
    ("lastUpdated", "last_updated"),
    ("summary", "summary"),
    ("directories", "directories"),
    ("kind", "kind"),
)
_TOKEN_KEYS = ("input", "output", "cached", "thoughts", "tool", "total")


# --- Gemini parts -------------------------------------------------------------------------------


def _modality(mime: Any) -> str:
    mime = mime if isinstance(mime, str) else ""
    for kind in ("image", "audio", "video"):
        if mime.startswith(f"{kind}/"):
            return kind
    return "file"


def response_text(response: Any) -> str:
    """The text a tool returned, from a ``functionResponse.response``: its ``output``, else its
    ``error`` (the CLI's two keys), else the response's JSON."""
    if isinstance(response, str):
        return response
    if isinstance(response, dict):
        for key in ("output", "error"):
            if isinstance(response.get(key), str):
                return cast(str, response[key])
    if response is None:
        return ""
    return json.dumps(response, ensure_ascii=False)


def _part(item: Any, where: str) -> list[Part]:
    """One Gemini ``Part`` (or a bare string) as canonical parts (none for empty text)."""
    if isinstance(item, str):
        return [Part.text(item)] if item else []
    expect(item, dict, where, "part")
    if "functionCall" in item:
        call = expect(item["functionCall"], dict, f"{where}.functionCall", "functionCall")
        name = expect(
            require(call, "name", f"{where}.functionCall"), str, f"{where}.functionCall.name"
        )
        cid = expect(call.get("id"), (str, type(None)), f"{where}.functionCall.id", "call id")
        args = call.get("args")
        return [Part.call(cid or "", name, {} if args is None else args)]
    if "functionResponse" in item:
        resp = expect(
            item["functionResponse"], dict, f"{where}.functionResponse", "functionResponse"
        )
        rid = expect(resp.get("id"), (str, type(None)), f"{where}.functionResponse.id", "id")
        name = expect(resp.get("name"), (str, type(None)), f"{where}.functionResponse.name")
        out = [Part.response(rid or None, response_text(resp.get("response")), name)]
        extra = resp.get("parts")
        if isinstance(extra, list):  # a multimodal function response
            out.extend(parts_of(extra, f"{where}.functionResponse.parts"))
        return out
    if "text" in item:
        text = expect(item["text"], str, f"{where}.text", "text")
        if not text:
            return []
        return [Part("reasoning", content=text) if item.get("thought") is True else Part.text(text)]
    if "inlineData" in item:
        data = expect(item["inlineData"], dict, f"{where}.inlineData", "inlineData")
        payload = expect(data.get("data", ""), str, f"{where}.inlineData.data", "data")
        mime = data.get("mimeType") if isinstance(data.get("mimeType"), str) else None
        return [Part("blob", content=payload, mime_type=mime, modality=_modality(mime))]
    if "fileData" in item:
        data = expect(item["fileData"], dict, f"{where}.fileData", "fileData")
        uri = expect(
            require(data, "fileUri", f"{where}.fileData"), str, f"{where}.fileData.fileUri"
        )
        mime = data.get("mimeType") if isinstance(data.get("mimeType"), str) else None
        return [Part("uri", uri=uri, mime_type=mime, modality=_modality(mime))]
    if set(item) <= {"thought", "thoughtSignature"}:
        return []  # a bare thought signature: opaque, no text
    return [_unknown_part(item)]


def parts_of(content: Any, where: str) -> list[Part]:
    """A Gemini ``PartListUnion`` (a string, a part, or a list of them) as canonical parts."""
    if content is None:
        return []
    if isinstance(content, str | dict):
        return _part(content, where)
    expect(content, list, where, "content")
    out: list[Part] = []
    for i, item in enumerate(content):
        out.extend(_part(item, f"{where}[{i}]"))
    return out


def _groups(parts: list[Part]) -> list[list[Part]]:
    """Parts holding tool responses, grouped a response each: the parts after a response go
    with it, those before the first one with the first (the CLI's ``partsMap``)."""
    groups: list[list[Part]] = []
    leading: list[Part] = []
    for p in parts:
        if p.type == "tool_call_response":
            groups.append([p, *leading])
            leading = []
        elif groups:
            groups[-1].append(p)
        else:
            leading.append(p)
    return groups


# --- chat messages ------------------------------------------------------------------------------


@dataclass
class _Result:
    """The parts a tool call's ``result`` gave, as groups of one response each."""

    groups: list[list[Part]]
    is_error: bool
    timestamp: Any
    where: str


@dataclass(eq=False)
class _Entry:
    """One chat message record, read; ``state``: live, compacted (out of the context by a
    recorded compaction, still in the session), or rewound (abandoned)."""

    id: str
    type: str
    where: str
    timestamp: Any
    parts: list[Part] = field(default_factory=list)
    results: list[_Result] = field(default_factory=list)
    usage: Usage | None = None
    tokens: dict[str, Any] | None = None
    model: str | None = None
    command: str | None = None  # a slash command's text
    state: str = "live"
    summary: bool = False
    calls_added: int = 0

    @property
    def cli(self) -> str | None:
        """The kind of CLI-only message this is, or None when the model saw it."""
        if self.type in CLI_TYPES:
            return self.type
        return "slash_command" if self.command is not None else None

    @property
    def in_context(self) -> bool:
        """Whether the history the CLI sends holds it (CLI notices and messages without parts
        never are)."""
        return self.cli is None and self.state == "live" and bool(self.parts)


def _usage(tokens: Any) -> Usage | None:
    if not isinstance(tokens, dict):
        return None
    prompt, cached, output, thoughts = (
        tokens.get(k) for k in ("input", "cached", "output", "thoughts")
    )
    if all(v is None for v in (prompt, cached, output)):
        return None
    if (
        isinstance(output, int)
        and isinstance(thoughts, int)
        and _is_int(output)
        and _is_int(thoughts)
    ):
        output = output + thoughts
    return Usage(prompt, cached, output)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _text(parts: list[Part]) -> str:
    return "".join(p.content or "" for p in parts if p.type == "text")


def entry_of(value: Any, where: str) -> _Entry:
    """A ``MessageRecord``, checked and converted (a bad one raises ``RecordError``)."""
    expect(value, dict, where, "message")
    mid = expect(require(value, "id", where), str, f"{where}.id", "message id")
    kind = expect(require(value, "type", where), str, f"{where}.type", "message type")
    if kind not in MESSAGE_TYPES:
        raise RecordError(
            "unknown_role",
            f"message type {kind!r} is not one of {list(MESSAGE_TYPES)}",
            f"{where}.type",
        )
    entry = _Entry(mid, kind, where, value.get("timestamp"))
    content = parts_of(value.get("content"), f"{where}.content")
    if kind in CLI_TYPES:
        return entry
    if kind == "user":
        text = _text(content).strip()
        if text.startswith(("/", "?")) and not any(p.type == "tool_call_response" for p in content):
            entry.command = text
        entry.parts = content
        return entry
    _gemini(entry, value, content, where)
    return entry


def _gemini(entry: _Entry, value: dict[str, Any], content: list[Part], where: str) -> None:
    calls = expect(value.get("toolCalls") or [], list, f"{where}.toolCalls", "toolCalls")
    recorded: list[tuple[str, str, Any]] = []
    for k, tc in enumerate(calls):
        tw = f"{where}.toolCalls[{k}]"
        expect(tc, dict, tw, "tool call")
        cid = expect(require(tc, "id", tw), str, f"{tw}.id", "tool call id")
        name = expect(require(tc, "name", tw), str, f"{tw}.name", "tool name")
        recorded.append((cid, name, tc.get("args")))
        status = tc.get("status")
        result = _result_parts(tc.get("result"), cid, name, f"{tw}.result")
        if result:
            entry.results.append(
                _Result(
                    _groups(result), status in ERROR_STATUSES, tc.get("timestamp"), f"{tw}.result"
                )
            )
    if any(p.type in ("tool_call", "reasoning") for p in content):
        entry.parts = _with_call_ids(content, recorded, entry)  # newer: the content is the turn
    else:
        thoughts = expect(value.get("thoughts") or [], list, f"{where}.thoughts", "thoughts")
        parts: list[Part] = []
        for k, thought in enumerate(thoughts):
            expect(thought, dict, f"{where}.thoughts[{k}]", "thought")
            subject, description = thought.get("subject"), thought.get("description")
            subject = subject if isinstance(subject, str) else ""
            description = description if isinstance(description, str) else ""
            text = f"**{subject}** {description}" if subject else description
            if text:
                parts.append(Part("reasoning", content=text))
        parts.extend(content)
        parts.extend(
            Part.call(cid, name, {} if args is None else args) for cid, name, args in recorded
        )
        entry.parts = parts
    entry.tokens = value.get("tokens") if isinstance(value.get("tokens"), dict) else None
    entry.usage = _usage(entry.tokens)
    entry.model = value.get("model") if isinstance(value.get("model"), str) else None


def _result_parts(result: Any, cid: str, name: str, where: str) -> list[Part]:
    """A tool call's ``result`` as parts: a string is the output; a response without an id
    answers this call; parts without any response get one (empty) so they stay answered."""
    if result is None or result == []:
        return []
    if isinstance(result, str):
        return [Part.response(cid, result, name)]
    parts = parts_of(result, where)
    parts = [
        replace(p, id=cid, name=p.name or name)
        if p.type == "tool_call_response" and not p.id
        else p
        for p in parts
    ]
    if parts and not any(p.type == "tool_call_response" for p in parts):
        parts.insert(0, Part.response(cid, "", name))
    return parts


def _with_call_ids(
    content: list[Part], recorded: list[tuple[str, str, Any]], entry: _Entry
) -> list[Part]:
    """The content's parts, each ``functionCall`` without an id given the id of the recorded
    tool call of its name (in order), and the recorded calls it lacks appended."""
    unused = list(recorded)
    named = {p.id for p in content if p.type == "tool_call" and p.id}
    unused = [r for r in unused if r[0] not in named]
    out: list[Part] = []
    for i, p in enumerate(content):
        if p.type == "tool_call" and not p.id:
            match = next((r for r in unused if r[1] == p.name), None)
            if match is not None:
                unused.remove(match)
                p = replace(p, id=match[0])
            else:
                p = replace(p, id=f"synth_{p.name}_{entry.id}_{i}")
        out.append(p)
    for cid, name, args in unused:
        out.append(Part.call(cid, name, {} if args is None else args))
        entry.calls_added += 1
    return out


def _fresh(entry: _Entry) -> _Entry:
    """``entry`` as a new message: a copy when it already stands somewhere (an identical
    record read again, ``_entry_once``)."""
    if entry.state == "live" and not entry.summary:
        return entry
    return replace(entry, state="live", summary=False)


class _Chat:
    """A chat's messages as its records are applied in order."""

    def __init__(self) -> None:
        self.entries: list[_Entry] = []
        self.by_id: dict[str, _Entry] = {}
        self.meta: dict[str, Any] = {}
        self.superseded = 0
        self.rewinds = 0
        self.truncations = 0
        self.compactions: list[dict[str, Any]] = []
        self.compress_pending = False
        #: the id of the summary message of each recorded compaction
        self.summary_ids: list[str] = []

    def metadata_record(self, value: dict[str, Any]) -> None:
        for key, value_ in value.items():
            if key != "messages":
                self.meta[key] = value_

    def _replace(self, old: _Entry, new: _Entry) -> None:
        """``new`` in the place of ``old`` (a later version of one message: it is usually the
        last one, so the search starts from the end)."""
        new.state, new.summary = old.state, old.summary
        for i in range(len(self.entries) - 1, -1, -1):
            if self.entries[i] is old:
                self.entries[i] = new
                break
        self.by_id[new.id] = new

    def add(self, entry: _Entry) -> None:
        old = self.by_id.get(entry.id)
        if old is not None and old.state != "rewound":
            self._replace(old, entry)
            self.superseded += 1
            return
        entry = _fresh(entry)
        self.entries.append(entry)
        self.by_id[entry.id] = entry
        if entry.command is not None and entry.command.split()[:1] == ["/compress"]:
            self.compress_pending = True

    def rewind(self, target: str) -> None:
        self.rewinds += 1
        kept = [e for e in self.entries if e.state != "rewound"]
        at = next((i for i, e in enumerate(kept) if e.id == target), 0)  # not found: all go
        for e in kept[at:]:
            e.state = "rewound"

    def history(self, snapshot: list[_Entry]) -> None:
        """A ``$set`` of the whole history the CLI now sends: its versions replace the messages
        of their ids; a message it holds first is put right after the one before it there
        (or, at its head, before the first message it keeps)."""
        ids = {e.id for e in snapshot}
        live = [e for e in self.entries if e.in_context]
        dropped = [e for e in live if e.id not in ids]
        known = {e.id for e in self.entries if e.state != "rewound"}
        first_new = bool(snapshot) and snapshot[0].id not in known
        pre_tokens = next(
            (e.tokens.get("input") for e in reversed(live) if e.tokens is not None), None
        )
        for e in dropped:
            e.state = "compacted"
        position = {id(e): i for i, e in enumerate(self.entries)}
        head: list[_Entry] = []  # new messages before the first kept one
        after: dict[int, list[_Entry]] = {}  # id() of a kept message -> new ones after it
        bucket = head
        first_kept: _Entry | None = None
        for e in snapshot:
            old = self.by_id.get(e.id)
            if old is not None and old.state != "rewound" and id(old) in position:
                e.state = "live"
                e.summary = old.summary
                self.entries[position[id(old)]] = e
                position[id(e)] = position.pop(id(old))
                self.by_id[e.id] = e
                first_kept = first_kept or e
                bucket = after.setdefault(id(e), [])
                continue
            e = _fresh(e)
            bucket.append(e)
            self.by_id[e.id] = e
        if head or after:
            rebuilt: list[_Entry] = []
            for e in self.entries:
                if e is first_kept:
                    rebuilt.extend(head)
                rebuilt.append(e)
                rebuilt.extend(after.get(id(e), ()))
            if first_kept is None:
                rebuilt.extend(head)
            self.entries = rebuilt
        if dropped and first_new:
            self.by_id[snapshot[0].id].summary = True
            self.summary_ids.append(snapshot[0].id)
            self.compactions.append(
                {
                    "kind": "compress",
                    "trigger": "manual" if self.compress_pending else None,
                    "pre_tokens": pre_tokens,
                    "timestamp": timestamp_of(snapshot[0].timestamp)[0],
                    "summary_seq_index": None,
                    "replaced_messages": len(dropped),
                }
            )
            self.compress_pending = False
        elif dropped:
            self.truncations += 1

    def messages(self) -> tuple[list[Message], dict[str, Any]]:
        """The session's messages, and what was counted making them."""
        out: list[Message] = []
        counts: Counter[str] = Counter()
        answered: set[str] = set()
        summaries: dict[str, int] = {}  # a summary message's id -> where its message is
        for e in self.entries:
            if e.cli is not None:
                counts[f"cli:{e.cli}"] += 1
                continue
            made = self._messages_of(e, answered, counts)
            if not made:
                counts["empty"] += not e.parts  # not a copy of results already read
                continue
            if e.summary:
                summaries.setdefault(e.id, len(out))
                made[0] = replace(made[0], flags=(*made[0].flags, FLAG_COMPACTION_SUMMARY))
            if e.state == "rewound":
                made = [
                    replace(m, visible=False, flags=(*m.flags, FLAG_ABANDONED_BRANCH)) for m in made
                ]
            out.extend(made)
        for compaction, sid in zip(self.compactions, self.summary_ids, strict=True):
            compaction["summary_seq_index"] = summaries.get(sid)
        return out, dict(counts)

    def _messages_of(self, e: _Entry, answered: set[str], counts: Counter[str]) -> list[Message]:
        ts, bad = timestamp_of(e.timestamp)
        flags = (FLAG_TIMESTAMP_INVALID,) if bad else ()
        out: list[Message] = []
        if e.type == "user":
            plain = [p for p in e.parts if p.type != "tool_call_response"]
            if len(plain) == len(e.parts):
                if plain:
                    out.append(
                        Message(
                            "user", tuple(plain), timestamp=ts, flags=flags, source_path=e.where
                        )
                    )
                return out
            for group in _groups(e.parts):
                if group[0].id in answered:
                    counts["duplicate_results"] += 1
                    continue
                answered.add(group[0].id or "")
                out.append(
                    Message(
                        "tool",
                        tuple(group),
                        timestamp=ts,
                        flags=flags,
                        source_path=f"{e.where}.content",
                    )
                )
            return out
        if not e.parts:
            return out  # the CLI sends no model turn without parts, nor its results
        counts["calls_added"] += e.calls_added
        out.append(
            Message(
                "assistant",
                tuple(e.parts),
                usage=e.usage,
                timestamp=ts,
                flags=flags,
                source_path=e.where,
            )
        )
        for result in e.results:
            rts, rbad = timestamp_of(result.timestamp)
            for group in result.groups:
                if group[0].id in answered:
                    counts["duplicate_results"] += 1
                    continue
                answered.add(group[0].id or "")
                out.append(
                    Message(
                        "tool",
                        tuple(group),
                        is_error=result.is_error,
                        timestamp=rts,
                        flags=(FLAG_TIMESTAMP_INVALID,) if rbad else (),
                        source_path=result.where,
                    )
                )
        return out

    def metadata(self, counts: dict[str, Any], layout: str) -> dict[str, Any]:
        meta: dict[str, Any] = {"layout": layout}
        for key, name in _META_KEYS:
            value = self.meta.get(key)
            if value is not None and (not isinstance(value, list | str) or value):
                meta[name] = value
        models: list[str] = []
        totals: Counter[str] = Counter()
        requests = 0
        for e in self.entries:
            if e.model and e.model not in models:
                models.append(e.model)
            if e.tokens is not None:
                requests += 1
                for k in _TOKEN_KEYS:
                    if _is_int(e.tokens.get(k)):
                        totals[k] += e.tokens[k]
        if models:
            meta["models"] = models
        meta["requests"] = requests
        if requests:
            meta["token_totals"] = {k: totals[k] for k in _TOKEN_KEYS}
        cli = {k[4:]: v for k, v in sorted(counts.items()) if k.startswith("cli:")}
        if cli:
            meta["cli_messages"] = cli
        commands = sum(1 for e in self.entries if (e.command or "").split()[:1] == ["/compress"])
        if commands:
            meta["compress_commands"] = commands
        if self.compactions:
            meta["compactions"] = self.compactions
        for name, value in (
            ("context_truncations", self.truncations),
            ("rewinds", self.rewinds),
            ("abandoned_messages", sum(e.state == "rewound" for e in self.entries)),
            ("superseded_versions", self.superseded),
            ("duplicate_results", counts.get("duplicate_results", 0)),
            ("calls_not_in_content", counts.get("calls_added", 0)),
            ("empty_messages", counts.get("empty", 0)),
        ):
            if value:
                meta[name] = value
        return meta


# --- checkpoints (Gemini API ``Content[]``) -------------------------------------------------------


def content_of(value: Any, where: str) -> tuple[str, list[Part]]:
    """One API ``Content`` ``{role, parts}``: its role and parts."""
    expect(value, dict, where, "content")
    role = expect(require(value, "role", where), str, f"{where}.role", "role")
    if role not in ("user", "model"):
        raise RecordError("unknown_role", f"role {role!r} is not user or model", f"{where}.role")
    return role, parts_of(value.get("parts") or [], f"{where}.parts")


def contents_messages(contents: list[tuple[str, list[Part], str]]) -> list[Message]:
    """Messages of an API history; calls and responses without ids paired by name within a
    model turn and the user turn after it (``ensureStableToolIds``), the rest given ids."""
    turns: list[tuple[str, list[Part], str]] = [
        (role, list(parts), where) for role, parts, where in contents
    ]
    for i, (role, parts, _) in enumerate(turns):
        if role != "model" or i + 1 >= len(turns) or turns[i + 1][0] != "user":
            continue
        after = turns[i + 1][1]
        for name in dict.fromkeys(p.name for p in parts if p.type == "tool_call"):
            calls = [k for k, p in enumerate(parts) if p.type == "tool_call" and p.name == name]
            resps = [
                k for k, p in enumerate(after) if p.type == "tool_call_response" and p.name == name
            ]
            for c, r in zip(calls, resps, strict=False):
                target = parts[c].id or after[r].id or f"synth_{name}_{i}_{c}"
                parts[c] = replace(parts[c], id=target)
                after[r] = replace(after[r], id=target)
    messages: list[Message] = []
    for i, (role, parts, where) in enumerate(turns):
        parts = [
            replace(p, id=f"synth_{p.name or 'tool'}_{i}_{k}")
            if p.type in ("tool_call", "tool_call_response") and not p.id
            else p
            for k, p in enumerate(parts)
        ]
        if role == "model":
            if parts:
                messages.append(Message("assistant", tuple(parts), source_path=where))
        elif any(p.type == "tool_call_response" for p in parts):
            messages.extend(Message("tool", tuple(g), source_path=where) for g in _groups(parts))
        elif parts:
            messages.append(Message("user", tuple(parts), source_path=where))
    return messages


# --- the importer ---------------------------------------------------------------------------------


@dataclass
class _Line:
    record: Record
    kind: str  # meta, message, set, rewind, unknown
    value: Any = None
    entry: _Entry | None = None
    snapshot: list[_Entry] | None = None


#: message records already read, by id: the raw record and what it gave
_Seen = dict[str, tuple[Any, _Entry]]


def _entry_once(value: Any, where: str, seen: _Seen) -> _Entry:
    """``entry_of``, reusing what an identical record read before gave (a ``$set`` history
    repeats every message it holds)."""
    mid = value.get("id") if isinstance(value, dict) else None
    hit = seen.get(mid) if isinstance(mid, str) else None
    if hit is not None and hit[0] == value:
        return hit[1]
    entry = entry_of(value, where)
    seen[entry.id] = (value, entry)
    return entry


def _line(record: Record, seen: _Seen) -> _Line:
    value = expect(record.value, dict, "$", "chat log line")
    if "$rewindTo" in value:
        return _Line(record, "rewind", expect(value["$rewindTo"], str, "$.$rewindTo", "message id"))
    if "$set" in value:
        update = expect(value["$set"], dict, "$.$set", "metadata update")
        snapshot = None
        if "messages" in update:
            history = expect(update["messages"], list, "$.$set.messages", "messages")
            snapshot = [
                _entry_once(m, f"$.$set.messages[{i}]", seen) for i, m in enumerate(history)
            ]
        return _Line(record, "set", update, snapshot=snapshot)
    if isinstance(value.get("id"), str):
        return _Line(record, "message", entry=_entry_once(value, "$", seen))
    if isinstance(value.get("sessionId"), str) and isinstance(value.get("projectHash"), str):
        return _Line(record, "meta", value)
    if value and all(isinstance(k, str) and k.startswith("$") for k in value):
        return _Line(record, "unknown", sorted(value)[0])
    raise RecordError(
        "malformed", "not a Gemini CLI chat log line (metadata, message, $set or $rewindTo)", "$"
    )


def _checkpoint_name(path: Path) -> str:
    """A checkpoint's session id: its file name (``checkpoint-<tag>``), percent-decoded."""
    return urllib.parse.unquote(path.stem)


def _tag(path: Path) -> str:
    """The ``/chat save`` tag of ``checkpoint-<tag>.json``."""
    name = _checkpoint_name(path)
    return name.removeprefix("checkpoint-")


@importers.register("gemini-cli")
class GeminiCliImporter(Importer):
    """Gemini CLI chat logs (JSON or JSONL), ``/chat save`` checkpoints and ``logs.json``."""

    suffixes = (".json", ".jsonl")

    def sniff(self, path: Path, head: bytes) -> float:
        return sniff_gemini(sample_of(path, head))

    def read(self, path: Path) -> Iterator[Session | Reject]:
        self._digest = file_digest(path)
        #: records read into the session another record stands for, or skipped with it
        self.ignored_records: list[int] = []
        try:
            with path.open("rb") as f:
                head = f.read(SNIFF_BYTES)
        except OSError:
            head = b""
        layout = sample_of(path, head).layout
        if layout == "jsonl":
            yield from self._jsonl(path)
            return
        records = list(self.records(path))
        good = [r for r in records if isinstance(r, Record)]
        yield from (r for r in records if isinstance(r, Reject))
        if not good:
            return
        if layout == "array":
            yield from self._array(path, good, len(records) - len(good))
            return
        doc = good[0]
        yield from self._built(path, doc, lambda: self._document(path, doc))

    def _built(self, path: Path, record: Record, build: Any) -> Iterator[Session | Reject]:
        """The session ``build()`` makes of ``record`` (``(id, messages, metadata)``), validated;
        a chat with no message the model saw is skipped ``empty_chat``."""
        try:
            sid, made, meta = build()
        except Exception as e:
            yield from self.guarded(path, record, lambda e=e: raising(e))
            return
        if not made:
            self.tally.skip("empty_chat")
            return
        yield from self.guarded(
            path, record, lambda: [self._session(path, record, sid, made, meta)]
        )

    # --- the JSON layouts ---------------------------------------------------------------

    def _document(self, path: Path, doc: Record) -> tuple[str, list[Message], dict[str, Any]]:
        value = expect(doc.value, dict, "$", "chat document")
        if "messages" not in value and isinstance(value.get("history"), list):
            contents = [
                (*content_of(c, f"$.history[{i}]"), f"$.history[{i}]")
                for i, c in enumerate(value["history"])
            ]
            meta = {"kind": "checkpoint", "tag": _tag(path)}
            if isinstance(value.get("authType"), str):
                meta["auth_type"] = value["authType"]
            return _checkpoint_name(path), contents_messages(contents), meta
        messages = expect(require(value, "messages", "$"), list, "$.messages", "messages")
        chat = _Chat()
        chat.metadata_record(value)
        for i, m in enumerate(messages):
            chat.add(entry_of(m, f"$.messages[{i}]"))
        made, counts = chat.messages()
        sid = value.get("sessionId")
        sid = sid if isinstance(sid, str) and sid else uuid_in_name(path)
        return sid, made, chat.metadata(counts, "json")

    def _array(self, path: Path, good: list[Record], rejected: int) -> Iterator[Session | Reject]:
        if any(_is_log_entry(r.value) for r in good):
            for r in good:
                if _is_log_entry(r.value):
                    self.tally.skip("prompt_log")
                else:
                    yield self.reject(
                        path, r, "malformed", "not a Gemini CLI prompt log entry", "$"
                    )
            return
        contents: list[tuple[str, list[Part], str]] = []
        anchor: Record | None = None
        for r in good:
            where = f"$[{r.index}]"
            try:
                role, parts = content_of(r.value, "$")
            except Exception as e:
                rejected += 1
                yield from self.guarded(path, r, lambda e=e: raising(e))
                continue
            contents.append((role, parts, where))
            if anchor is None:
                anchor = r
            else:
                self.ignored_records.append(r.index)
        if anchor is None:
            return
        self.tally.skip("part_of_session", len(contents) - 1)
        meta: dict[str, Any] = {"kind": "checkpoint", "tag": _tag(path)}
        if rejected:
            meta["rejected_records"] = rejected
        first = anchor
        yield from self._built(
            path, first, lambda: (_checkpoint_name(path), contents_messages(contents), meta)
        )

    # --- the JSONL layout -----------------------------------------------------------------

    def _jsonl(self, path: Path) -> Iterator[Session | Reject]:
        lines: list[_Line] = []
        rejected = 0
        seen: _Seen = {}
        for record in self.records(path):
            if isinstance(record, Reject):
                rejected += 1
                yield record
                continue
            try:
                lines.append(_line(record, seen))
            except Exception as e:  # the line is rejected by itself; the chat goes on
                rejected += 1
                yield from self.guarded(path, record, lambda e=e: raising(e))
        if not lines:
            return
        chat = _Chat()
        unknown: Counter[str] = Counter()
        for line in lines:
            if line.kind == "meta":
                chat.metadata_record(line.value)
            elif line.kind == "set":
                chat.metadata_record(line.value)
                if line.snapshot is not None:
                    chat.history(line.snapshot)
            elif line.kind == "rewind":
                chat.rewind(line.value)
            elif line.kind == "message" and line.entry is not None:
                chat.add(line.entry)
            else:
                unknown[str(line.value)] += 1
        cli_lines = [ln for ln in lines if ln.entry is not None and ln.entry.cli is not None]
        anchor = next((ln.record for ln in lines if ln.kind == "meta"), None)
        if anchor is None:
            anchor = next(
                (ln.record for ln in lines if ln.entry is not None and ln.entry.cli is None),
                lines[0].record,
            )
        failure: Exception | None = None
        try:
            made, counts = chat.messages()
        except Exception as e:  # nothing a log holds should get here: the session is rejected
            made, failure = [], e
        if not made and failure is None:  # a chat the CLI opened but sent nothing of
            self.ignored_records = [ln.record.index for ln in lines]
            self.tally.skip("cli_message", len(cli_lines))
            self.tally.skip("empty_chat", len(lines) - len(cli_lines))
            return
        self.ignored_records = [ln.record.index for ln in lines if ln.record is not anchor]
        cli = sum(ln.record is not anchor for ln in cli_lines)
        self.tally.skip("cli_message", cli)
        self.tally.skip("part_of_session", len(lines) - 1 - cli)
        if failure is not None:
            yield from self.guarded(path, anchor, lambda: raising(failure))
            return
        meta = chat.metadata(counts, "jsonl")
        if unknown:
            meta["unknown_records"] = dict(sorted(unknown.items()))
        if rejected:
            meta["rejected_records"] = rejected
        if meta.get("kind") == "subagent":
            meta["parent_session_id"] = path.parent.name
        sid = chat.meta.get("sessionId")
        sid = sid if isinstance(sid, str) and sid else uuid_in_name(path)
        yield from self.guarded(
            path, anchor, lambda: [self._session(path, anchor, sid, made, meta)]
        )

    def _session(
        self, path: Path, record: Record, sid: str, messages: list[Message], meta: dict[str, Any]
    ) -> Session:
        return Session(
            source_format=self.name,
            source_session_id=sid,
            messages=messages,
            key=f"{self._digest}:{sid}",
            source_location=str(path),
            source_record=record.index,
            workload="gemini-cli",
            metadata=meta,
        )


# --- detection -------------------------------------------------------------------------------------


def _is_message_record(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("id"), str)
        and value.get("type") in MESSAGE_TYPES
        and "content" in value
        and "role" not in value
    )


def _is_meta(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("sessionId"), str)
        and isinstance(value.get("projectHash"), str)
        and "type" not in value
        and "message" not in value
    )


def _is_log_entry(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("sessionId"), str)
        and _is_int(value.get("messageId"))
        and isinstance(value.get("message"), str)
        and isinstance(value.get("type"), str)
        and "timestamp" in value
    )


def _is_content(value: Any) -> bool:
    """An API ``Content``: ``{role: user|model, parts: [Gemini parts]}``, nothing else."""
    if not isinstance(value, dict) or value.get("role") not in ("user", "model"):
        return False
    parts = value.get("parts")
    if not isinstance(parts, list) or not set(value) <= {"role", "parts"}:
        return False
    return all(isinstance(p, dict) and p and set(p) <= PART_KEYS and "type" not in p for p in parts)


#: detection: a chat: its metadata, then only message records (a document or JSONL)
CHAT_SCORE = 0.95
#: ``logs.json``: an array of the CLI's log entries
LOGS_SCORE = 0.95
#: an API ``contents`` list with a ``model`` turn
CONTENTS_SCORE = 0.9
#: JSONL of message records without the metadata line
MESSAGES_SCORE = 0.8
#: JSONL that starts with the metadata, then holds other lines too
PARTIAL_JSONL_SCORE = 0.7
#: a ``contents`` list of user turns only
USER_CONTENTS_SCORE = 0.7
#: a chat document whose messages are not all message records
PARTIAL_CHAT_SCORE = 0.6
#: an empty array named ``logs.json``
EMPTY_LOGS_SCORE = 0.5


def _contents_score(items: Any) -> float:
    if not isinstance(items, list | tuple) or not items or not all(_is_content(c) for c in items):
        return 0.0
    return CONTENTS_SCORE if any(c["role"] == "model" for c in items) else USER_CONTENTS_SCORE


def sniff_gemini(sample: Sample) -> float:
    records = sample.records
    if sample.layout == "document":
        doc = records[0]
        if not isinstance(doc, dict):
            return 0.0
        if _is_meta(doc) and isinstance(doc.get("messages"), list):
            messages = doc["messages"]
            if all(_is_message_record(m) for m in messages):
                return CHAT_SCORE
            return PARTIAL_CHAT_SCORE
        if "history" in doc and set(doc) <= {"history", "authType"}:
            return _contents_score(doc["history"])
        return 0.0
    if sample.layout == "array":
        if not records:
            return EMPTY_LOGS_SCORE if sample.path.name == "logs.json" else 0.0
        if all(_is_log_entry(r) for r in records):
            return LOGS_SCORE
        return _contents_score(records)
    if sample.layout == "jsonl" and records:
        rest = records[1:]
        marks = [
            r
            for r in rest
            if _is_message_record(r)
            or (isinstance(r, dict) and (isinstance(r.get("$set"), dict) or "$rewindTo" in r))
        ]
        if _is_meta(records[0]):
            return CHAT_SCORE if len(marks) == len(rest) else PARTIAL_JSONL_SCORE
        if all(_is_message_record(r) for r in records):
            return MESSAGES_SCORE
    return 0.0
