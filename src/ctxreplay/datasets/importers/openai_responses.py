"""OpenAI Responses API items, as logged calls or as stored conversations (JSON or JSONL).

The Responses API speaks in *items*, not chat messages. ``messages_from_items`` (one function,
``ItemReader`` underneath) turns items into canonical messages; the Codex CLI importer reads its
rollouts' ``response_item`` records with the same reader, and ``responses_format`` writes items
back from messages (the reader is the reference it is tested against).

Items:

* ``message`` ``{role, content}`` (role user/assistant/system/developer; ``content`` a string or
  parts): ``input_text``/``output_text`` → text; ``refusal`` → text marked ``REFUSAL_MIME``;
  ``input_image``/``input_file``/``input_audio`` → ``blob``/``uri``/``file`` parts (a data URL is a
  blob, an ``image_url``/``file_url`` a uri, a ``file_id`` a file; an image's ``detail`` other
  than the default ``auto`` and a file's ``filename`` ride in the part's ``name``); another
  part type → an unknown part (the text of its JSON, flagged ``unknown_part_type``).
* ``reasoning`` ``{summary[], content?, encrypted_content?}`` → ``reasoning`` parts: each
  ``summary_text`` a part named ``summary`` (shown as reasoning text), each ``reasoning_text`` a
  plain reasoning part, and the ``encrypted_content`` one part marked
  ``ENCRYPTED_REASONING_MIME`` whose content is the blob, byte for byte. That part is kept but
  never tokenised (``Part.token_texts``): what the model reads from it cannot be known offline, a
  tokenised base64 blob would be thousands of invented tokens, and the provider's usage already
  reports the reasoning tokens of the response that produced it. So it counts 0 tokens; its bytes
  and the items are counted in session metadata (``encrypted_reasoning``).
* calls: ``function_call`` ``{call_id, name, arguments}`` → a tool call (arguments kept as
  written); ``custom_tool_call`` ``{call_id, name, input}`` → a tool call whose ``arguments`` is
  the free-form input (``FREEFORM_CALL_MIME``: plain text by design, so not flagged
  ``arguments_not_json``); any other
  ``<tool>_call`` with a ``call_id`` (``computer_call``, ``local_shell_call``, ``shell_call``,
  ``apply_patch_call``) → a tool call named ``<tool>`` whose arguments are the JSON of the item's
  other fields. Every call but ``function_call`` carries ``mime_type`` ``call_mime(type)``.
* outputs: ``<type>_output`` ``{call_id, output}`` → a ``tool`` message with one
  ``tool_call_response``: a string output is its content; a list of parts gives its leading
  ``input_text`` as the content and the rest as the next parts of the tool message (marked
  ``OUTPUT_LIST_MIME`` unless the rest are all media, which is how a plain result with images
  is written; ``OUTPUT_MEDIA_FIRST_MIME`` when the list starts with something else); a
  screenshot becomes an image part after an empty result (``OUTPUT_SCREENSHOT_MIME``); another
  value its JSON (``application/json``). An output item's other fields
  (``acknowledged_safety_checks``…, and its ``type`` when it is not the call's own output type,
  as when early Codex answered a ``local_shell_call`` with a ``function_call_output``) ride as
  JSON in the result's ``arguments`` (not text the model reads, so not counted).
* items holding their own result (``mcp_call``, ``file_search_call``, ``code_interpreter_call``)
  → a call (id = the item id) and a ``tool`` message with its result; without a recorded result
  they stay whole as an unknown part, like ``web_search_call``, ``image_generation_call`` and any
  other item: kept, never dropped (a call without a result would leave views unanswered).

Consecutive assistant-side items (reasoning, assistant messages, calls) of one response make one
``assistant`` message; a user/system/developer message or a tool output ends it. Item ``id`` and
``status`` are server bookkeeping and are not kept (the API takes input items without them);
fields the reader does not know are counted (``dropped_fields``), never silently lost.

Files this importer reads, one JSON record per line, array element or document:

* a logged call ``{id?, model?, instructions?, input: items | string, output: items, usage,
  previous_response_id?, conversation?, session_id?}`` (or ``{request, response}`` holding those;
  or a Response object, ``object: "response"``). Calls are gathered into conversations: by
  ``conversation`` id; else by ``session_id`` (top level or in ``metadata``); else by the chain of
  ``previous_response_id`` → ``id``; calls that no id links are one conversation per file
  (give calls a ``session_id`` to keep several runs in one file apart). A stateless call repeats the history in its
  ``input``: items already seen are not repeated (compared by content, ids ignored, with
  repetitions counted so a user who says "yes" twice keeps both). A chained or conversation call
  sends only new items; when a chained call continues from an earlier response than the latest,
  the messages after that response are an abandoned branch (kept invisible, flagged
  ``abandoned_branch``). ``instructions`` becomes a ``system`` message (again where it changes).
  Each call's ``usage`` goes on the assistant message its ``output`` made, its ``created_at``
  is that message's time.
* a stored conversation ``{id, items | data: [items]}`` (a Conversations or input-items list):
  one session; a list in descending order (an output before its call) is reversed.
* a bare JSON array of items: one conversation (like a stored list); bare items on JSONL lines:
  the items of a file form one conversation.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..messages import (
    ENCRYPTED_REASONING_MIME,
    FREEFORM_CALL_MIME,
    MEDIA_PART_TYPES,
    Message,
    Part,
    Session,
    Usage,
    as_dict,
    usage_from,
)
from ..rejects import RecordError, Reject
from ..validate import FLAG_ABANDONED_BRANCH, FLAG_TIMESTAMP_INVALID
from .base import Importer, expect, importers, require
from .openai_chat import file_digest
from .parts import unknown_part
from .reader import first_array_element
from .records import Record
from .sniffing import Sample, capped, sample_of
from .times import timestamp_of

REFUSAL_MIME = "application/vnd.openai.refusal"
#: ``name`` of a reasoning part that holds reasoning summary text
SUMMARY = "summary"
#: a tool result whose output was a list of parts starting with text (the text is its content)
OUTPUT_LIST_MIME = "application/vnd.openai.output-list"
#: a tool result whose output was a list of parts starting with a non-text part
OUTPUT_MEDIA_FIRST_MIME = "application/vnd.openai.output-list+media-first"
#: a tool result whose output was a computer screenshot (the image part follows it)
OUTPUT_SCREENSHOT_MIME = "application/vnd.openai.computer-screenshot"
#: a tool result whose output was neither a string nor parts: its JSON
OUTPUT_JSON_MIME = "application/json"
#: prefix of the ``mime_type`` of a tool call made by an item other than ``function_call``
CALL_MIME_PREFIX = "application/vnd.openai."

ROLES = ("user", "assistant", "system", "developer")
#: items that hold their own result: the field(s) of the call, the result fields
INLINE: dict[str, tuple[str | None, tuple[str, ...], tuple[str, ...]]] = {
    "mcp_call": (None, ("arguments",), ("output", "error")),
    "file_search_call": ("file_search", ("queries",), ("results",)),
    "code_interpreter_call": ("code_interpreter", ("code",), ("outputs",)),
}
#: fields of an item the reader reads, besides ``type``, ``id`` and ``status``
KNOWN_FIELDS: dict[str, frozenset[str]] = {
    "message": frozenset({"role", "content"}),
    "reasoning": frozenset({"summary", "content", "encrypted_content"}),
    "function_call": frozenset({"call_id", "name", "arguments"}),
    "custom_tool_call": frozenset({"call_id", "name", "input"}),
}
#: item types the Responses API defines (for detection; the reader also keeps unknown ones)
ITEM_TYPES = frozenset(
    {"message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
     "custom_tool_call_output", "web_search_call", "file_search_call", "computer_call",
     "computer_call_output", "local_shell_call", "local_shell_call_output", "shell_call",
     "shell_call_output", "apply_patch_call", "apply_patch_call_output", "mcp_call",
     "mcp_list_tools", "mcp_approval_request", "mcp_approval_response", "image_generation_call",
     "code_interpreter_call", "item_reference", "compaction"}
)  # fmt: skip
_CONTENT_TYPES = frozenset({"input_text", "output_text", "refusal", "input_image", "input_file"})


def call_mime(item_type: str) -> str:
    return f"{CALL_MIME_PREFIX}{item_type}"


def item_type_of(mime: str | None) -> str | None:
    """The item type a tool call's ``mime_type`` names (None for a ``function_call``)."""
    if mime and mime.startswith(CALL_MIME_PREFIX):
        return mime[len(CALL_MIME_PREFIX) :]
    return None


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# --- items → parts -------------------------------------------------------------------------------


def _str(value: Any, where: str, what: str) -> str:
    text: str = expect(value, str, where, what)
    return text


def _data_url(url: str, modality: str, name: str | None) -> Part:
    header, _, payload = url.partition(",")
    mime = header[5:].split(";")[0] or None
    return Part("blob", content=payload, mime_type=mime, modality=modality, name=name)


def _media(item: dict[str, Any], where: str) -> Part:
    """An ``input_image``/``input_file``/``input_audio`` content part."""
    kind = item["type"]
    if kind == "input_audio":
        audio = expect(require(item, "input_audio", where), dict, f"{where}.input_audio")
        sound = _str(require(audio, "data", where), f"{where}.input_audio.data", "audio data")
        fmt = audio.get("format")
        return Part(
            "blob",
            content=sound,
            mime_type=f"audio/{fmt}" if isinstance(fmt, str) else None,
            modality="audio",
        )
    image = kind == "input_image"
    modality = "image" if image else "file"
    label = item.get("detail" if image else "filename")
    name = label if isinstance(label, str) and label != ("auto" if image else None) else None
    url = item.get("image_url" if image else "file_url")
    data: Any = None if image else item.get("file_data")
    if isinstance(data, str):
        if data.startswith("data:"):
            return _data_url(data, modality, name)
        return Part("blob", content=data, modality=modality, name=name)
    if isinstance(url, str):
        if url.startswith("data:"):
            return _data_url(url, modality, name)
        return Part("uri", uri=url, modality=modality, name=name)
    file_id = item.get("file_id")
    if isinstance(file_id, str):
        return Part("file", id=file_id, modality=modality, name=name)
    raise RecordError(
        "missing_field", f"{kind} has no image_url, file_url, file_data or file_id", where
    )


def content_parts_of(content: Any, where: str) -> list[Part]:
    """A message's ``content`` (a string or a list of content parts) as canonical parts."""
    if isinstance(content, str):
        return [Part.text(content)]
    expect(content, list, where, "content")
    parts: list[Part] = []
    for i, item in enumerate(content):
        at = f"{where}[{i}]"
        expect(item, dict, at, "content part")
        kind = item.get("type")
        if kind in ("input_text", "output_text", "text"):
            parts.append(Part.text(_str(require(item, "text", at), f"{at}.text", "text")))
        elif kind == "refusal":
            text = _str(require(item, "refusal", at), f"{at}.refusal", "refusal")
            parts.append(Part("text", content=text, mime_type=REFUSAL_MIME))
        elif kind in ("input_image", "input_file", "input_audio"):
            parts.append(_media(item, at))
        else:
            parts.append(unknown_part(item))
    return parts


def _reasoning_parts(item: dict[str, Any], where: str, stats: Counter[str]) -> list[Part]:
    parts: list[Part] = []
    summary = item.get("summary")
    if summary is not None:
        expect(summary, list, f"{where}.summary", "summary")
        for i, s in enumerate(summary):
            at = f"{where}.summary[{i}]"
            expect(s, dict, at, "summary part")
            text = _str(require(s, "text", at), f"{at}.text", "summary text")
            parts.append(Part("reasoning", content=text, name=SUMMARY))
    content = item.get("content")
    if content is not None:
        expect(content, list, f"{where}.content", "reasoning content")
        for i, c in enumerate(content):
            at = f"{where}.content[{i}]"
            expect(c, dict, at, "reasoning content part")
            text = _str(require(c, "text", at), f"{at}.text", "reasoning text")
            parts.append(Part("reasoning", content=text))
    blob = item.get("encrypted_content")
    if blob is not None:
        blob = _str(blob, f"{where}.encrypted_content", "encrypted_content")
        parts.append(Part("reasoning", content=blob, mime_type=ENCRYPTED_REASONING_MIME))
        stats["encrypted_reasoning_items"] += 1
        stats["encrypted_reasoning_bytes"] += len(blob.encode("utf-8", "surrogatepass"))
    return parts or [Part("reasoning")]  # an empty reasoning item still marks where it was


def _call_part(item: dict[str, Any], kind: str, where: str) -> Part:
    call_id = _str(require(item, "call_id", where), f"{where}.call_id", "call_id")
    if kind == "function_call":
        name = _str(require(item, "name", where), f"{where}.name", "tool name")
        args = require(item, "arguments", where)
        return Part.call(call_id, name, args)
    if kind == "custom_tool_call":
        name = _str(require(item, "name", where), f"{where}.name", "tool name")
        text = _str(require(item, "input", where), f"{where}.input", "custom tool input")
        return Part(
            "tool_call", id=call_id, name=name, arguments=text, mime_type=FREEFORM_CALL_MIME
        )
    rest = {k: v for k, v in item.items() if k not in ("type", "id", "call_id", "status")}
    return Part(
        "tool_call",
        id=call_id,
        name=kind.removesuffix("_call"),
        arguments=dumps(rest),
        mime_type=call_mime(kind),
    )


def _is_screenshot(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") == "computer_screenshot"


def _output_parts(call_id: str, output: Any, where: str) -> list[Part]:
    """A tool output as a result part and the parts that follow it in its tool message."""
    if isinstance(output, str):
        return [Part.response(call_id, output)]
    if _is_screenshot(output):
        shot = dict(output, type="input_image")
        return [
            Part("tool_call_response", id=call_id, content="", mime_type=OUTPUT_SCREENSHOT_MIME),
            _media(shot, where),
        ]
    if isinstance(output, list) and all(isinstance(p, dict) and "type" in p for p in output):
        rest = content_parts_of(output, where)
        first = output[0].get("type") if output else None
        if first in ("input_text", "output_text", "text"):
            lead = rest.pop(0)
            # text then media reads back from a plain result and its media; anything else is
            # marked so the list is written back as it was
            plain = bool(rest) and all(q.type in MEDIA_PART_TYPES for q in rest)
            mime = None if plain else OUTPUT_LIST_MIME
            return [
                Part("tool_call_response", id=call_id, content=lead.content, mime_type=mime),
                *rest,
            ]
        return [
            Part("tool_call_response", id=call_id, content="", mime_type=OUTPUT_MEDIA_FIRST_MIME),
            *rest,
        ]
    if output is None:
        raise RecordError("missing_field", "the output item has no output", where)
    return [
        Part("tool_call_response", id=call_id, content=dumps(output), mime_type=OUTPUT_JSON_MIME)
    ]


def _with_envelope(part: Part, extra: dict[str, Any]) -> Part:
    return replace(part, arguments=dumps(extra)) if extra else part


@dataclass
class _Pending:
    """The assistant message being gathered from consecutive assistant-side items."""

    parts: list[Part] = field(default_factory=list)
    where: str | None = None
    timestamp: str | None = None
    bad_time: bool = False


class ItemReader:
    """Items in, canonical messages out; ``begin_response`` marks where a response starts.

    ``stats`` counts what metadata should say: encrypted reasoning items and bytes, unknown
    item types, fields the reader does not keep, usage that found no assistant message.
    """

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.stats: Counter[str] = Counter()
        self.unknown: Counter[str] = Counter()
        self.dropped: Counter[str] = Counter()
        self._pending = _Pending()
        self._usage: Usage | None = None
        self._usage_open = False
        self._call_types: dict[str, str] = {}  # call id → the item type that made the call

    # --- the public surface ------------------------------------------------------------------
    def add(self, item: Any, where: str, timestamp: Any = None) -> None:
        """One item; ``timestamp`` is the time its record carries, when it has one."""
        expect(item, dict, where, "item")
        kind = item.get("type")
        if kind is None and "role" in item:
            kind = "message"  # an "easy input message": {role, content}
        kind = expect(kind, str, f"{where}.type", "item type")
        self._count_dropped(kind, item)
        if kind == "message":
            self._message(item, where, timestamp)
        elif kind == "reasoning":
            self._assistant(_reasoning_parts(item, where, self.stats), where, timestamp)
        elif kind in INLINE:
            self._inline(item, kind, where, timestamp)
        elif kind.endswith("_call_output") or kind == "local_shell_call_output":
            self._output(item, kind, where, timestamp)
        elif kind in ("function_call", "custom_tool_call") or (
            kind.endswith("_call") and "call_id" in item
        ):
            call = _call_part(item, kind, where)
            self._call_types[call.id or ""] = kind
            self._assistant([call], where, timestamp)
        else:
            self.unknown[kind] += 1
            self._assistant([unknown_part(item)], where, timestamp)

    def begin_response(self, usage: Usage | None = None) -> None:
        """A new model response starts: close the assistant message being gathered; ``usage``
        goes on the next assistant message made."""
        self.flush()
        if self._usage_open and self._usage is not None:
            self.stats["usage_unattached"] += 1
        self._usage, self._usage_open = usage, usage is not None

    def flush(self) -> None:
        """Close the assistant message being gathered (if any)."""
        p = self._pending
        if not p.parts:
            return
        usage = None
        if self._usage_open:
            usage, self._usage, self._usage_open = self._usage, None, False
        self.messages.append(
            Message(
                role="assistant",
                parts=tuple(p.parts),
                usage=usage,
                timestamp=p.timestamp,
                flags=(FLAG_TIMESTAMP_INVALID,) if p.bad_time else (),
                source_path=p.where,
            )
        )
        self._pending = _Pending()

    def append(self, message: Message) -> None:
        """A message made by the caller (a rebuilt system prompt, a compaction summary)."""
        self.flush()
        self.messages.append(message)

    def flag_last(self, flag: str) -> bool:
        """Add ``flag`` to the last message; False when there is none yet."""
        self.flush()
        if not self.messages:
            return False
        m = self.messages[-1]
        if flag not in m.flags:
            self.messages[-1] = replace(m, flags=(*m.flags, flag))
        return True

    def finish(self) -> list[Message]:
        self.flush()
        if self._usage_open and self._usage is not None:
            self.stats["usage_unattached"] += 1
            self._usage_open = False
        return self.messages

    def metadata(self) -> dict[str, Any]:
        """What the items held that the messages do not show: counts for session metadata."""
        out: dict[str, Any] = {}
        if self.stats["encrypted_reasoning_items"]:
            out["encrypted_reasoning"] = {
                "items": self.stats["encrypted_reasoning_items"],
                "bytes": self.stats["encrypted_reasoning_bytes"],
            }
        if self.unknown:
            out["unknown_items"] = dict(sorted(self.unknown.items()))
        if self.dropped:
            out["dropped_fields"] = dict(sorted(self.dropped.items()))
        if self.stats["usage_unattached"]:
            out["usage_unattached"] = self.stats["usage_unattached"]
        return out

    # --- the item kinds ---------------------------------------------------------------------
    def _count_dropped(self, kind: str, item: dict[str, Any]) -> None:
        known = KNOWN_FIELDS.get(kind)
        if known is None:
            return
        for k in item:
            if k not in known and k not in ("type", "id", "status"):
                self.dropped[f"{kind}.{k}"] += 1

    def _time(self, timestamp: Any) -> tuple[str | None, bool]:
        return timestamp_of(timestamp)

    def _assistant(self, parts: list[Part], where: str, timestamp: Any) -> None:
        p = self._pending
        if not p.parts:
            p.where = where
            p.timestamp, p.bad_time = self._time(timestamp)
        elif self._time(timestamp)[1]:
            p.bad_time = True
        p.parts.extend(parts)

    def _own(self, role: str, parts: list[Part], where: str, timestamp: Any, **kw: Any) -> None:
        self.flush()
        time, bad = self._time(timestamp)
        self.messages.append(
            Message(
                role=role,
                parts=tuple(parts),
                timestamp=time,
                flags=(FLAG_TIMESTAMP_INVALID,) if bad else (),
                source_path=where,
                **kw,
            )
        )

    def _message(self, item: dict[str, Any], where: str, timestamp: Any) -> None:
        role = _str(require(item, "role", where), f"{where}.role", "role")
        if role not in ROLES:
            raise RecordError("unknown_role", f"role {role!r} is not a Responses role", where)
        parts = content_parts_of(require(item, "content", where), f"{where}.content")
        if role == "assistant":
            self._assistant(parts, where, timestamp)
        else:
            self._own(role, parts, where, timestamp)

    def _output(self, item: dict[str, Any], kind: str, where: str, timestamp: Any) -> None:
        key = "call_id" if "call_id" in item or kind != "local_shell_call_output" else "id"
        call_id = _str(require(item, key, where), f"{where}.{key}", "call_id")
        parts = _output_parts(call_id, require(item, "output", where), f"{where}.output")
        extra = {
            k: v for k, v in item.items() if k not in ("type", "id", "call_id", "status", "output")
        }
        call_type = self._call_types.get(call_id, "function_call")
        if (
            kind != f"{call_type}_output"
        ):  # e.g. a local_shell_call answered by function_call_output
            extra["type"] = kind
        parts[0] = _with_envelope(parts[0], extra)
        self._own("tool", parts, where, timestamp)

    def _inline(self, item: dict[str, Any], kind: str, where: str, timestamp: Any) -> None:
        fixed, arg_fields, result_fields = INLINE[kind]
        results = {k: item.get(k) for k in result_fields}
        if all(v is None for v in results.values()):  # no recorded result: keep it whole
            self.unknown[kind] += 1
            self._assistant([unknown_part(item)], where, timestamp)
            return
        call_id = _str(require(item, "id", where), f"{where}.id", "item id")
        if fixed is None:
            name = _str(require(item, "name", where), f"{where}.name", "tool name")
            raw = require(item, arg_fields[0], where)
            args = raw if isinstance(raw, str) else dumps(raw)
        else:
            name = fixed
            args = dumps({k: item.get(k) for k in arg_fields if k in item})
        self._assistant(
            [Part("tool_call", id=call_id, name=name, arguments=args, mime_type=call_mime(kind))],
            where,
            timestamp,
        )
        used, value = next((k, v) for k, v in results.items() if v is not None)
        if isinstance(value, str) and kind == "mcp_call":
            part = Part.response(call_id, value)
        else:
            part = Part(
                "tool_call_response", id=call_id, content=dumps(value), mime_type=OUTPUT_JSON_MIME
            )
        skip = {"type", "id", "status", used, *arg_fields} | ({"name"} if fixed is None else set())
        extra = {k: v for k, v in item.items() if k not in skip}
        self._own("tool", [_with_envelope(part, extra)], where, timestamp, is_error=used == "error")


def messages_from_items(items: Iterable[Any], json_path: str) -> list[Message]:
    """Responses API items as canonical messages (see the module docstring)."""
    reader = ItemReader()
    for i, item in enumerate(items):
        reader.add(item, f"{json_path}[{i}]")
    return reader.finish()


# --- canonical item form (for comparing items) ----------------------------------------------


def canonical_item(item: dict[str, Any]) -> dict[str, Any]:
    """An item without what the reader does not keep: server ``id``/``status`` (an item that
    holds its own result keeps its ``id``: it is the call id), empty ``annotations``/
    ``logprobs``, a null reasoning ``content``; a string ``content`` as one text part; an
    image's default ``detail``."""
    out = {k: v for k, v in item.items() if k != "status"}
    kind = out.get("type") or ("message" if "role" in out else None)
    if kind is not None:
        out["type"] = kind
    if kind not in INLINE and not (kind == "local_shell_call_output" and "call_id" not in out):
        out.pop("id", None)
    if kind == "message":
        text_type = "output_text" if out.get("role") == "assistant" else "input_text"
        content = out.get("content")
        if isinstance(content, str):
            content = [{"type": text_type, "text": content}]
        if isinstance(content, list):
            out["content"] = [_canonical_part(p) for p in content]
    if kind == "reasoning" and out.get("content") is None:
        out.pop("content", None)
    if isinstance(out.get("output"), list):
        out["output"] = [_canonical_part(p) for p in out["output"]]
    return out


def _canonical_part(part: Any) -> Any:
    if not isinstance(part, dict):
        return part
    out = dict(part)
    for key in ("annotations", "logprobs"):
        if out.get(key) == []:
            out.pop(key)
    if out.get("type") == "input_image":
        out.setdefault("detail", "auto")
        for key in ("image_url", "file_id"):
            if out.get(key) is None:
                out.pop(key, None)
    return out


def item_key(item: Any) -> str:
    """What makes two items the same item, ids aside (for finding history a call repeats)."""
    value = canonical_item(item) if isinstance(item, dict) else item
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


# --- logged calls and conversations ------------------------------------------------------------


@dataclass
class _Call:
    """One logged call (or a bare item, as a call that only sends it)."""

    record: Record
    input: list[Any]
    output: list[Any]
    usage: Usage | None = None
    instructions: str | None = None
    id: str | None = None
    previous: str | None = None
    conversation: str | None = None
    session: str | None = None
    model: str | None = None
    created: Any = None  # the response's ``created_at``: the time of its output
    base: str = "$"  # JSON path of the object holding ``input``
    out_base: str = "$.output"
    bare: bool = False  # a bare item, not a call

    def input_items(self) -> Iterator[tuple[Any, str]]:
        for i, item in enumerate(self.input):
            yield item, "$" if self.bare else f"{self.base}.input[{i}]"

    def output_items(self) -> Iterator[tuple[Any, str]]:
        for i, item in enumerate(self.output):
            yield item, f"{self.out_base}[{i}]"

    def items(self) -> Iterator[tuple[Any, str]]:
        yield from self.input_items()
        yield from self.output_items()


def _opt_str(obj: dict[str, Any], key: str, where: str) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    return _str(value, f"{where}.{key}", key)


def _conversation_id(value: Any, where: str) -> str | None:
    if isinstance(value, dict):
        value = value.get("id")
    if value is None:
        return None
    return _str(value, f"{where}.conversation", "conversation id")


def _items_of(value: Any, where: str) -> list[Any]:
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    return list(expect(value, list, where, "items"))


def parse_call(record: Record) -> _Call:
    """A logged call, checked (its items are read once so a bad one rejects this record)."""
    value = record.value
    expect(value, dict, "$", "record")
    if value.get("type") in ITEM_TYPES or ("role" in value and "input" not in value):
        call = _Call(record, [value], [], bare=True)
    else:
        body, base, response, rbase = value, "$", value, "$"
        if isinstance(value.get("request"), dict):  # {request, response}
            body, base = value["request"], "$.request"
            response, rbase = as_dict(value.get("response")), "$.response"
        if "input" not in body and "output" not in response:
            raise RecordError("missing_field", "a logged call needs input or output", base)
        inputs = body.get("input")
        outputs = response.get("output")
        meta = as_dict(value.get("metadata")) or as_dict(body.get("metadata"))
        session = value.get("session_id", meta.get("session_id"))
        conversation = body.get("conversation") or response.get("conversation")
        call = _Call(
            record,
            _items_of(inputs, f"{base}.input") if inputs is not None else [],
            list(expect(outputs, list, f"{rbase}.output", "output")) if outputs is not None else [],
            usage=usage_from(response.get("usage")),
            instructions=_opt_str(body, "instructions", base)
            or _opt_str(response, "instructions", rbase),
            id=_opt_str(response, "id", rbase) or _opt_str(value, "id", "$"),
            previous=_opt_str(body, "previous_response_id", base),
            conversation=_conversation_id(conversation, base),
            session=str(session)
            if isinstance(session, str | int) and not isinstance(session, bool)
            else None,
            model=_opt_str(body, "model", base) or _opt_str(response, "model", rbase),
            created=response.get("created_at"),
            base=base,
            out_base=f"{rbase}.output",
        )
    probe = ItemReader()
    for item, where in call.items():
        probe.add(item, where)
    return call


def _is_stored_list(value: Any) -> bool:
    """A stored conversation or items list: ``{items | data: [...]}`` without call fields."""
    return (
        isinstance(value, dict)
        and any(isinstance(value.get(k), list) for k in ("items", "data"))
        and not any(k in value for k in ("input", "output", "request"))
    )


def _stored_items(value: dict[str, Any] | list[Any]) -> tuple[list[Any], str, bool]:
    """The items of a stored list (or a bare array of items) in conversation order, the JSON
    path of the list, and whether it was reversed."""
    if isinstance(value, list):
        items, where, desc = value, "$", False
    else:
        key = "items" if isinstance(value.get("items"), list) else "data"
        items, where, desc = value[key], f"$.{key}", value.get("order") == "desc"
    if desc or _descending(items):
        return list(reversed(items)), where, True
    return items, where, False


def _is_item_array(path: Path, fmt: str) -> bool:
    """The file is a top-level JSON array whose first element is an item: one conversation."""
    value = first_array_element(path, fmt)
    return (
        isinstance(value, dict)
        and (value.get("type") in ITEM_TYPES or "role" in value)
        and not any(k in value for k in ("input", "output", "items", "data", "request"))
    )


def _descending(items: list[Any]) -> bool:
    """An output listed before its call: the list runs newest first."""
    seen_out: set[str] = set()
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("call_id"), str):
            continue
        kind = str(item.get("type", ""))
        if kind.endswith("_output"):
            seen_out.add(item["call_id"])
            continue
        return item["call_id"] in seen_out  # the first call decides
    return False


@importers.register("openai-responses")
class OpenAIResponsesImporter(Importer):
    """OpenAI Responses API items (``POST /v1/responses`` calls as logged, stored conversations
    and input-item lists), the item model shared with the Codex CLI importer."""

    suffixes = (".json", ".jsonl")

    def sniff(self, path: Path, head: bytes) -> float:
        return sniff_responses(sample_of(path, head))

    def read(self, path: Path) -> Iterator[Session | Reject]:
        self._digest = file_digest(path)
        #: calls read into the session of their conversation's first call (counted ``folded``)
        self.ignored_records: list[int] = []
        calls: list[_Call] = []
        if _is_item_array(path, self.name):  # a bare array of items is one conversation
            whole = self.document(path)
            if isinstance(whole, Reject):
                yield whole
            else:
                yield from self.guarded(path, whole, lambda: [self._stored(path, whole)])
            return
        for record in self.records(path):
            if isinstance(record, Reject):
                yield record
                continue
            if _is_stored_list(record.value):
                yield from self.guarded(path, record, lambda r=record: [self._stored(path, r)])
                continue
            try:
                calls.append(parse_call(record))
            except Exception as e:  # a bad call rejects its own record, the others go on
                yield from self.guarded(path, record, lambda e=e: _raise(e))
        for group in _group(calls):
            first = group.calls[0].record
            self.tally.skip("part_of_session", len(group.calls) - 1)
            self.ignored_records += [c.record.index for c in group.calls[1:]]
            yield from self.guarded(path, first, lambda g=group: [self._conversation(path, g)])

    def _stored(self, path: Path, record: Record) -> Session:
        value = record.value
        items, where, reversed_ = _stored_items(value)
        reader = ItemReader()
        for i, item in enumerate(items):
            index = len(items) - 1 - i if reversed_ else i
            reader.add(item, f"{where}[{index}]")
        messages = reader.finish()
        sid = value.get("id") if isinstance(value, dict) else None
        source_id = (
            str(sid)
            if isinstance(sid, str | int) and not isinstance(sid, bool)
            else f"{path.stem}:{record.index}"
        )
        meta = reader.metadata()
        if reversed_:
            meta["order"] = "desc"
        return Session(
            source_format=self.name,
            source_session_id=source_id,
            messages=messages,
            key=f"{self._digest}:{record.index}:{source_id}",
            source_location=str(path),
            source_record=record.index,
            metadata=meta,
        )

    def _conversation(self, path: Path, group: _Group) -> Session:
        reader = ItemReader()
        history: Counter[str] = Counter()  # item keys already in the conversation (dedupe mode)
        instructions: str | None = None
        end_of: dict[str, int] = {}  # response id → messages made up to its output
        tip: str | None = None
        repeated = 0
        branches = 0
        usage_calls = 0
        models: list[str] = []
        for call in group.calls:
            if call.model and call.model not in models:
                models.append(call.model)
            if (
                group.mode == "chain"
                and call.previous is not None
                and tip is not None
                and call.previous != tip
                and call.previous in end_of
            ):
                reader.flush()
                start = end_of[call.previous]
                for j in range(start, len(reader.messages)):
                    m = reader.messages[j]
                    if FLAG_ABANDONED_BRANCH not in m.flags:
                        reader.messages[j] = replace(
                            m, visible=False, flags=(*m.flags, FLAG_ABANDONED_BRANCH)
                        )
                branches += 1
            if call.instructions is not None and call.instructions != instructions:
                instructions = call.instructions
                reader.append(
                    Message(
                        "system",
                        (Part.text(call.instructions),),
                        source_path=f"{call.base}.instructions",
                    )
                )
            seen_here: Counter[str] = Counter()
            for item, where in call.input_items():
                if group.mode == "dedupe":
                    key = item_key(item)
                    seen_here[key] += 1
                    if seen_here[key] <= history[key]:
                        repeated += 1
                        continue
                    history[key] += 1
                reader.add(item, where)
            if call.output or call.usage is not None:
                reader.begin_response(call.usage)
                usage_calls += call.usage is not None
            for item, where in call.output_items():
                if group.mode == "dedupe":
                    history[item_key(item)] += 1
                reader.add(item, where, call.created)
            if not call.bare:  # bare items of a file run on: one item list
                reader.flush()
            if call.id is not None:
                end_of[call.id] = len(reader.messages)
                tip = call.id
        messages = reader.finish()
        records = [c.record.index for c in group.calls]
        meta: dict[str, Any] = {
            "calls": sum(1 for c in group.calls if not c.bare),
            "records": records,
            "grouped_by": group.mode if group.kind == "file" else group.kind,
        }
        if models:
            meta["models"] = models
        if repeated:
            meta["repeated_items"] = repeated
        if branches:
            meta["abandoned_branches"] = branches
        meta.update(reader.metadata())
        source_id = group.id or path.stem
        return Session(
            source_format=self.name,
            source_session_id=source_id,
            messages=messages,
            key=f"{self._digest}:{records[0]}:{source_id}",
            source_location=str(path),
            source_record=records[0],
            metadata=meta,
        )


def _raise(e: Exception) -> list[Session]:
    raise e


@dataclass
class _Group:
    kind: str  # conversation | session | chain | file
    id: str | None
    mode: str  # dedupe (stateless calls repeat history) | chain (calls send new items only)
    calls: list[_Call] = field(default_factory=list)


def _group(calls: list[_Call]) -> list[_Group]:
    """Calls gathered into conversations, in order of first appearance (see the docstring)."""
    by_id = {c.id: c for c in calls if c.id is not None}
    linked = {c.previous for c in calls if c.previous is not None}

    def root(call: _Call) -> str:
        seen: set[str] = set()
        current = call
        while current.previous is not None and current.previous not in seen:
            seen.add(current.previous)
            parent = by_id.get(current.previous)
            if parent is None:
                return current.previous
            current = parent
        return current.id or current.previous or ""

    groups: dict[tuple[str, str], _Group] = {}
    for c in calls:
        if c.conversation is not None:
            kind, gid, mode = "conversation", c.conversation, "chain"
        elif c.session is not None:
            kind, gid, mode = "session", c.session, "dedupe"
        elif c.previous is not None or (c.id is not None and c.id in linked):
            kind, gid, mode = "chain", root(c), "chain"
        else:
            kind, gid, mode = "file", "", "dedupe"
        group = groups.setdefault((kind, gid), _Group(kind, gid or None, mode))
        group.calls.append(c)
    for g in groups.values():
        if g.kind == "chain":
            g.calls = _parents_first(g.calls)
    return list(groups.values())


def _parents_first(calls: list[_Call]) -> list[_Call]:
    """A chain's calls with every call after the one it continues (file order otherwise)."""
    ids = {c.id for c in calls if c.id is not None}
    children: dict[str, list[_Call]] = defaultdict(list)
    out: list[_Call] = []
    for c in calls:
        if c.previous is not None and c.previous in ids:
            children[c.previous].append(c)
    stack = [c for c in calls if c.previous is None or c.previous not in ids]
    stack.reverse()
    done: set[int] = set()
    while stack:
        c = stack.pop()
        if id(c) in done:
            continue
        done.add(id(c))
        out.append(c)
        stack.extend(reversed(children.get(c.id or "", [])))
    out.extend(c for c in calls if id(c) not in done)  # a cycle of ids: file order
    return out


# --- detection ---------------------------------------------------------------------------------


#: detection: a ``response`` object, or items most of which have a Responses item ``type``
RESPONSE_SCORE = 0.95
#: role messages with Responses content parts (``input_text``, ...)
MESSAGE_ITEMS_SCORE = 0.85
#: text ``input`` beside Responses fields or output
TEXT_INPUT_SCORE = 0.8
#: a bare item with a Responses ``type``
BARE_ITEM_SCORE = 0.75
#: items fewer than half of which have a Responses item ``type``
SOME_ITEMS_SCORE = 0.7


def _items_score(items: Any) -> float:
    """How surely ``items`` is a list of Responses items."""
    if not isinstance(items, list) or not items:
        return 0.0
    dicts = [i for i in items if isinstance(i, dict)]
    if not dicts:
        return 0.0
    typed = [i for i in dicts if i.get("type") in ITEM_TYPES]
    if typed:
        return RESPONSE_SCORE if len(typed) * 2 >= len(dicts) else SOME_ITEMS_SCORE
    parts = {
        p.get("type")
        for i in dicts
        if isinstance(i.get("content"), list)
        for p in i["content"]
        if isinstance(p, dict)
    }
    if parts & _CONTENT_TYPES and all("role" in i for i in dicts):
        return MESSAGE_ITEMS_SCORE
    return 0.0


def _record_score(record: Any) -> float:
    return capped(_shape_score(record), record)


def _shape_score(record: Any) -> float:
    if not isinstance(record, dict):
        return 0.0
    if isinstance(record.get("request"), dict):
        request = record["request"]
        response = as_dict(record.get("response"))
        return max(_items_score(request.get("input")), _items_score(response.get("output")))
    if record.get("object") == "response" and isinstance(record.get("output"), list):
        return RESPONSE_SCORE
    output = _items_score(record.get("output"))
    inputs = record.get("input")
    if isinstance(inputs, str):
        linked = any(k in record for k in ("previous_response_id", "instructions", "conversation"))
        input_score = TEXT_INPUT_SCORE if linked or output else 0.0
    else:
        input_score = _items_score(inputs)
    if output or input_score:
        return max(output, input_score)
    if _is_stored_list(record):
        key = "items" if isinstance(record.get("items"), list) else "data"
        return _items_score(record[key])
    if record.get("type") in ITEM_TYPES and record.get("type") not in ("session_meta",):
        return BARE_ITEM_SCORE
    return 0.0


def sniff_responses(sample: Sample) -> float:
    if sample.layout == "array" and sample.records:
        whole = _items_score(list(sample.records))
        if whole:
            return whole  # the file is one list of items
    return sample.mean(_record_score)
