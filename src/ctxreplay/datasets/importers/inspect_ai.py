"""inspect_ai evaluation logs (UK AISI ``inspect_ai``): ``.eval`` archives and ``.json`` logs.

A log is one evaluation run: a header ``{version, status, eval{eval_id, run_id, task, task_id,
created, model, ...}, plan, results, stats}`` and ``samples[]``, one per dataset sample and epoch
``{id, epoch, input, target, messages[], output, scores, metadata, events[], model_usage,
total_time, working_time, error, limit, attachments}``. Each sample is one session, its source
id ``<sample id>/epoch-<epoch>``; its key holds the file digest, the record, the run and task ids.

* ``.json``: the log as one JSON document, samples read one by one (a bad sample is one reject,
  the others import; a damaged document is read member by member, like tau2-bench results).
* ``.eval``: a zip archive with ``header.json`` (written when the run ends; ``_journal/start.json``
  stands in for it while a run is going or after it crashed) and one ``samples/<id>_epoch_<n>.json``
  member per sample. A member that cannot be read or parsed is a reject whose
  ``source_location`` is ``<archive>::<member>`` (its JSON paths are relative to the member) and
  whose ``raw`` is the member's bytes; a file that is not a readable zip (not a zip, cut short)
  is one reject of the file. The header is context only: when it is missing or unreadable the
  samples still import, and their metadata says so (``log_header``).
* A log with no samples (``status: started``, or ``log_samples`` off) is rejected
  ``empty_session``, saying why.

How a sample maps (inspect_ai's ``ChatMessage`` model):

* ``messages`` are ``system``/``user``/``assistant``/``tool`` messages, ``content`` a string or a
  list of ``text``, ``reasoning`` (→ ``reasoning`` part; a ``redacted`` block keeps its opaque
  payload in a part named ``redacted``, counted in ``redacted_reasoning``, and its readable
  ``summary`` as a part named ``summary``; ``signature`` is left out), ``image``/``audio``/
  ``video``/``document`` (→ ``blob`` for data URLs, else ``uri``), ``data`` (a provider's opaque
  payload → a ``file`` part holding its JSON), ``tool_use`` (a server-side tool: its call and
  result). Another type is kept as the text of its JSON (flagged ``unknown_part_type``).
* An assistant's ``tool_calls[{id, function, arguments: object, parse_error}]`` become calls with
  the arguments as JSON text (calls whose arguments did not parse are counted,
  ``tool_call_parse_errors``). A ``tool`` message ``{tool_call_id, function, error{type,
  message}}`` is the call's result; with an ``error`` it is ``is_error`` and its body is what
  inspect's providers send the model, ``Error: <message>`` (after the content, when there is some).
* Strings condensed into ``attachment://<hash>`` references are resolved from the sample's
  ``attachments``; a reference that is not there stays as written (``unresolved_attachments``).
* Usage: inspect records each model request as a ``ModelEvent`` in ``events`` whose output
  message carries the id of the message it became. An assistant message whose id matches gets
  that request's usage and completion time; requests that match no message (a scorer's grader, a
  self-critique call) are only counted (``model_calls`` vs ``model_calls_matched``); their cost
  is in ``model_usage``, per model, as recorded. Tool results get their ``ToolEvent``'s time.
  inspect's ``input_tokens`` may or may not include cache reads and writes and ``output_tokens``
  may or may not include reasoning, by provider; ``total_tokens`` says which (see ``usage_of``).
* The tool definitions the agent's requests carried (``ModelEvent.tools``) go to the metadata
  (``tools``: name, description, parameters; names only past 32 KB).
* Metadata: task, ids, model, the sample's output model, scores (value and answer kept, the
  explanation clipped), target, small sample metadata, model usage, times, error and limit.
"""

from __future__ import annotations

import json
import struct
import zipfile
import zlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..messages import Message, Part, Session, Usage, as_dict
from ..rejects import RecordError, Reject, clip, inspect_value
from ..validate import FLAG_TIMESTAMP_INVALID
from .base import Importer, expect, importers, require
from .openai_chat import file_digest
from .parts import unknown_part
from .reader import salvage_file
from .records import Record, checked_record, loads, parse_failure, sub_record
from .sniffing import Sample, capped, decode_bytes, sample_of
from .times import timestamp_of

__all__ = ["DATA_MIME", "InspectAIImporter", "usage_of"]

ROLES = ("system", "user", "assistant", "tool")
#: ``mime_type`` of a ``file`` part holding a ``ContentData`` payload (provider-internal JSON)
DATA_MIME = "application/vnd.inspect-ai.data+json"
#: where inspect_ai's condensed strings point (``tc://`` is the older spelling)
ATTACHMENT_PREFIXES = ("attachment://", "tc://")
#: the most JSON text of tool definitions kept in the metadata (past it: names only)
MAX_TOOLS_JSON = 32 * 1024
#: sample metadata larger than this (JSON characters) keeps only its keys
MAX_SAMPLE_METADATA = 4096
ZIP_MAGIC = b"PK"
HEADER_MEMBERS = ("header.json", "_journal/start.json")


@importers.register("inspect-ai")
class InspectAIImporter(Importer):
    """inspect_ai (UK AI Security Institute) evaluation logs, ``.eval`` and ``.json``."""

    suffixes = (".eval", ".json")

    def sniff(self, path: Path, head: bytes) -> float:
        if head.startswith(ZIP_MAGIC):
            return _archive_score(path)
        score = _log_score(sample_of(path, head))
        if path.suffix == ".eval" and score == 0.0:
            return EVAL_SUFFIX_SCORE  # only this format uses the ending: read it, say why it is damaged
        return score

    def read(self, path: Path) -> Iterator[Session | Reject]:
        try:
            with path.open("rb") as f:
                head = f.read(4096)
        except OSError as e:
            self.tally.seen += 1
            yield Reject(str(path), "unreadable_file", str(e), b"", self.name)
            return
        if head.startswith(ZIP_MAGIC) or (
            path.suffix == ".eval" and not decode_bytes(head).lstrip().startswith("{")
        ):
            yield from self._read_archive(path)
        else:
            yield from self._read_json(path)

    # --- .eval archives -------------------------------------------------------------------------

    def _read_archive(self, path: Path) -> Iterator[Session | Reject]:
        try:
            archive = zipfile.ZipFile(path)
        except Exception as e:  # whatever stops the archive opening: the file is one reject
            self.tally.seen += 1
            yield _damaged_archive(path, e, self.name)
            return
        with archive:
            members = [
                info
                for info in archive.infolist()
                if info.filename.startswith("samples/") and info.filename.endswith(".json")
            ]
            header, header_note, header_raw = _archive_header(archive)
            log = _Log(header, file_digest(path), path, header_note)
            if not members:
                self.tally.seen += 1
                yield Reject(
                    str(path),
                    "empty_session",
                    _no_samples(header),
                    header_raw,
                    self.name,
                    None,
                    None,
                    None,
                    "samples/",
                )
                return
            self.tally.seen += len(members)
            for index, info in enumerate(members):
                yield from self._member(archive, info, index, log)

    def _member(
        self, archive: zipfile.ZipFile, info: zipfile.ZipInfo, index: int, log: _Log
    ) -> Iterator[Session | Reject]:
        where = Path(f"{log.path}::{info.filename}")
        raw, problem = _read_member(archive, info)
        if problem is not None:
            yield Reject(
                str(where), "unreadable_file", problem, raw, self.name, index, None, None, "$"
            )
            return
        text = decode_bytes(raw)
        try:
            value = loads(text)
        except (ValueError, RecordError) as e:
            reason, detail = parse_failure(e, _cut(text))
            yield Reject(str(where), reason, detail, raw, self.name, index, None, None, "$")
            return
        record = checked_record(Record(index, value, raw), self.name, where)
        if isinstance(record, Reject):
            yield record
            return
        yield from self.guarded(
            where,
            record,
            lambda: [_session(self.name, log, record, "$", info.filename)],
        )

    # --- .json logs -----------------------------------------------------------------------------

    def _read_json(self, path: Path) -> Iterator[Session | Reject]:
        doc = self.document(path, check_utf8=False)  # bytes are checked sample by sample
        if isinstance(doc, Reject):
            yield from self._salvage(path, doc)
            return
        try:
            value = expect(doc.value, dict, "$", "inspect log")
            samples = value.get("samples")
            if samples is None or samples == []:
                raise RecordError("empty_session", _no_samples(value), "$.samples")
            expect(samples, list, "$.samples", "samples")
        except RecordError as e:
            yield self.reject(path, doc, e.reason, e.detail, e.json_path)
            return
        self.tally.seen += len(samples) - 1  # the document stands for its samples
        header = {k: v for k, v in value.items() if k != "samples"}
        records = (sub_record(i, s) for i, s in enumerate(samples))
        yield from self._samples(path, header, records, None)

    def _salvage(self, path: Path, failed: Reject) -> Iterator[Session | Reject]:
        """A log that does not parse as a whole: the samples that do."""
        found = salvage_file(path, failed, "samples", self.name)
        if found is None:
            yield failed
            return
        members, elements, broken = found
        self.tally.seen += len(elements) - 1
        note = f"damaged: {', '.join(broken)} unreadable" if broken else None
        yield from self._samples(path, members, iter(elements), note)

    def _samples(
        self,
        path: Path,
        header: dict[str, Any],
        records: Iterator[Record | Reject],
        note: str | None,
    ) -> Iterator[Session | Reject]:
        log = _Log(header, file_digest(path), path, note)
        for record in records:
            if isinstance(record, Reject):
                yield record
                continue
            record = checked_record(record, self.name, path)
            if isinstance(record, Reject):
                record.json_path = f"$.samples[{record.record}]" + (record.json_path or "$")[1:]
                yield record
                continue
            where = f"$.samples[{record.index}]"
            yield from self.guarded(
                path, record, lambda rec=record, at=where: [_session(self.name, log, rec, at)]
            )


# --- the log and its samples ------------------------------------------------------------------


class _Log:
    """What every sample of one log shares: the eval's identity, read from the header."""

    def __init__(self, header: Any, digest: str, path: Path, note: str | None) -> None:
        self.digest = digest
        self.path = path
        header = as_dict(header)
        ev = as_dict(header.get("eval"))
        fields = {
            "task": ev.get("task"),
            "task_id": ev.get("task_id"),
            "run_id": ev.get("run_id"),
            "eval_id": ev.get("eval_id"),
            "created": ev.get("created"),
            "model": ev.get("model"),
            "status": header.get("status"),
            "log_version": header.get("version"),
        }
        self.info: dict[str, Any] = {}
        problems = []
        for name, value in fields.items():
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, str | int):
                problems.append(f"{name} is a {type(value).__name__}")
            elif isinstance(value, str) and inspect_value(value) is not None:
                problems.append(f"{name} is not UTF-8")
            else:
                self.info[name] = value
        if note is None and not ev:
            note = "missing" if not header else "no eval section"
        if problems:
            note = "; ".join(([note] if note else []) + problems)
        self.note = note
        task = self.info.get("task")
        self.workload = f"inspect-ai/{task}" if isinstance(task, str) and task else "inspect-ai"


def _session(fmt: str, log: _Log, record: Record, where: str, member: str | None = None) -> Session:
    sample = expect(record.value, dict, where, "sample")
    sample_id = expect(require(sample, "id", where), (str, int), f"{where}.id", "sample id")
    epoch = sample.get("epoch", 1)
    expect(epoch, int, f"{where}.epoch", "epoch")
    raw_messages = expect(require(sample, "messages", where), list, f"{where}.messages", "messages")
    resolve = _Attachments(sample.get("attachments"))
    stats: Counter[str] = Counter()
    events = _Events(sample.get("events"), resolve)
    messages = []
    for j, raw in enumerate(raw_messages):
        message = _message(resolve(raw), f"{where}.messages[{j}]", stats, events)
        messages.append(message)
    source_id = f"{sample_id}/epoch-{epoch}"
    ids = f"{log.info.get('task_id', '')}:{log.info.get('run_id', '')}"
    return Session(
        source_format=fmt,
        source_session_id=source_id,
        messages=messages,
        key=f"{log.digest}:{record.index}:{ids}:{source_id}",
        source_location=str(log.path),
        source_record=record.index,
        workload=log.workload,
        metadata=_metadata(log, sample, sample_id, epoch, member, stats, events, resolve),
    )


def _metadata(
    log: _Log,
    sample: dict[str, Any],
    sample_id: str | int,
    epoch: int,
    member: str | None,
    stats: Counter[str],
    events: _Events,
    resolve: _Attachments,
) -> dict[str, Any]:
    output = as_dict(sample.get("output"))
    error = sample.get("error")
    message = as_dict(error).get("message") if isinstance(error, dict) else error
    sample_meta = sample.get("metadata")
    if isinstance(sample_meta, dict) and len(_dumps(sample_meta)) > MAX_SAMPLE_METADATA:
        sample_meta = {"keys": sorted(sample_meta)}
    out: dict[str, Any] = {
        **log.info,
        "log_header": log.note,
        "member": member,
        "sample_id": sample_id,
        "epoch": epoch,
        "uuid": sample.get("uuid"),
        "output_model": output.get("model"),
        "stop_reason": _stop_reason(output),
        "target": _clipped(sample.get("target"), 2000),
        "scores": _scores(sample.get("scores")),
        "sample_metadata": sample_meta or None,
        "model_usage": sample.get("model_usage") or None,
        "total_time": sample.get("total_time"),
        "working_time": sample.get("working_time"),
        "error": clip(message) if isinstance(message, str) else None,
        "limit": sample.get("limit"),
        "model_calls": events.model_calls,
        "model_calls_matched": len(events.used) or None,
        "tools": events.tools(),
        "redacted_reasoning": stats.get("redacted_reasoning"),
        "tool_call_parse_errors": stats.get("tool_call_parse_errors"),
        "tool_errors": {k[6:]: v for k, v in stats.items() if k.startswith("error:")} or None,
        "data_parts": stats.get("data_parts"),
        "attachments_resolved": resolve.resolved or None,
        "unresolved_attachments": resolve.unresolved or None,
    }
    return {k: v for k, v in out.items() if v is not None}


def _stop_reason(output: dict[str, Any]) -> Any:
    choices = output.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0].get("stop_reason")
    return None


def _scores(scores: Any) -> dict[str, Any] | None:
    """Each scorer's value and answer; the explanation clipped (it can quote whole answers)."""
    if not isinstance(scores, dict) or not scores:
        return None
    out: dict[str, Any] = {}
    for name, score in scores.items():
        if not isinstance(score, dict):
            out[str(name)] = score
            continue
        kept = {
            "value": score.get("value"),
            "answer": _clipped(score.get("answer"), 2000),
            "explanation": _clipped(score.get("explanation"), 500),
        }
        out[str(name)] = {k: v for k, v in kept.items() if v is not None}
    return out


def _clipped(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return clip(value, limit)
    if isinstance(value, list):
        return [clip(v, limit) if isinstance(v, str) else v for v in value]
    return value


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _no_samples(header: Any) -> str:
    status = as_dict(header).get("status")
    said = f" (status {status!r})" if isinstance(status, str) else ""
    return (
        f"the log holds no samples{said}: a header-only log, written before the run finished "
        "or with sample logging off"
    )


# --- messages -----------------------------------------------------------------------------------


class _Attachments:
    """Resolves ``attachment://<hash>`` strings from a sample's ``attachments`` table."""

    def __init__(self, table: Any) -> None:
        self.table: dict[str, Any] = table if isinstance(table, dict) else {}
        self.resolved = 0
        self.unresolved = 0

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str):
            if value.startswith(ATTACHMENT_PREFIXES):
                found = self.table.get(value.split("://", 1)[1])
                if isinstance(found, str):
                    self.resolved += 1
                    return found
                self.unresolved += 1
            return value
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, dict):
            return {k: self(v) for k, v in value.items()}
        return value


class _Events:
    """The sample's model requests and tool runs, by the message or call they produced."""

    def __init__(self, events: Any, resolve: _Attachments) -> None:
        self.resolve = resolve
        self.by_message: dict[str, dict[str, Any]] = {}
        self.tool_times: dict[str, Any] = {}
        self.model_calls = 0
        self.used: list[dict[str, Any]] = []
        stack = [events] if isinstance(events, list) else []
        while stack:
            for event in stack.pop():
                if not isinstance(event, dict):
                    continue
                kind = event.get("event")
                if kind == "model":
                    self.model_calls += 1
                    key = _output_message_id(event)
                    if key is not None:
                        self.by_message.setdefault(key, event)
                elif kind == "tool" and isinstance(event.get("id"), str):
                    self.tool_times.setdefault(event["id"], _when(event))
                nested = event.get("events")
                if isinstance(nested, list):
                    stack.append(nested)

    def request(self, message_id: Any) -> dict[str, Any] | None:
        """The model request that produced the message ``message_id``, marked as used."""
        event = self.by_message.get(message_id) if isinstance(message_id, str) else None
        if event is not None and not any(e is event for e in self.used):
            self.used.append(event)
        return event

    def tools(self) -> list[dict[str, Any]] | None:
        """The tool definitions of the agent's requests, in order of first appearance."""
        seen: dict[str, dict[str, Any]] = {}
        for event in self.used:
            tools = event.get("tools")
            if not isinstance(tools, list):
                continue
            for tool in tools:
                if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                    seen.setdefault(tool["name"], tool)
        if not seen:
            return None
        full = [
            {
                k: self.resolve(t[k])
                for k in ("name", "description", "parameters")
                if t.get(k) is not None
            }
            for t in seen.values()
        ]
        if len(_dumps(full)) <= MAX_TOOLS_JSON:
            return full
        return [{"name": name} for name in seen]


def _output_message_id(event: dict[str, Any]) -> str | None:
    choices = as_dict(event.get("output")).get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        found = as_dict(choices[0].get("message")).get("id")
        return found if isinstance(found, str) else None
    return None


def _when(event: dict[str, Any]) -> Any:
    """When an event's work ended (``completed``), else when it began."""
    completed = event.get("completed")
    return completed if completed is not None else event.get("timestamp")


def usage_of(obj: Any) -> Usage | None:
    """An inspect ``ModelUsage`` as canonical usage (prompt with its cached part, completion with
    its reasoning).

    Providers fill ``ModelUsage`` differently: OpenAI's ``input_tokens`` include cache reads,
    Anthropic's leave reads and writes out; Google's ``output_tokens`` leave reasoning out.
    ``total_tokens`` tells: what it holds beyond ``input + output`` is cache (reads + writes)
    and/or reasoning counted separately, and is added back. When it matches no such sum the
    recorded numbers are kept as they are.
    """
    if not isinstance(obj, dict):
        return None
    numbers = {
        k: obj.get(k)
        for k in (
            "input_tokens",
            "output_tokens",
            "total_tokens",
            "input_tokens_cache_read",
            "input_tokens_cache_write",
            "reasoning_tokens",
        )
    }
    if any(
        v is not None and (isinstance(v, bool) or not isinstance(v, int)) for v in numbers.values()
    ):
        return None
    prompt, completion = numbers["input_tokens"], numbers["output_tokens"]
    if prompt is None and completion is None:
        return None
    read = numbers["input_tokens_cache_read"]
    cache = (read or 0) + (numbers["input_tokens_cache_write"] or 0)
    reasoning = numbers["reasoning_tokens"] or 0
    total = numbers["total_tokens"]
    if prompt is not None and completion is not None and total is not None:
        extra = total - prompt - completion
        if extra and extra == cache + reasoning:
            prompt, completion = prompt + cache, completion + reasoning
        elif extra and extra == cache:
            prompt += cache
        elif extra and extra == reasoning:
            completion += reasoning
    return Usage(prompt, read, completion)


def _message(raw: Any, where: str, stats: Counter[str], events: _Events) -> Message:
    expect(raw, dict, where, "message")
    role = expect(require(raw, "role", where), str, f"{where}.role", "role")
    if role not in ROLES:
        raise RecordError(
            "unknown_role", f"role {role!r} is not an inspect_ai role", f"{where}.role"
        )
    content = require(raw, "content", where)
    parts = _parts(content, f"{where}.content", stats)
    usage: Usage | None = None
    when: Any = None
    is_error = False
    if role == "assistant":
        parts.extend(_calls(raw.get("tool_calls"), f"{where}.tool_calls", stats))
        request = events.request(raw.get("id"))
        if request is not None:
            usage = usage_of(as_dict(request.get("output")).get("usage"))
            when = _when(request)
    elif role == "tool":
        call_id = expect(
            require(raw, "tool_call_id", where), str, f"{where}.tool_call_id", "tool_call_id"
        )
        name = raw.get("function")
        name = name if isinstance(name, str) else None
        error = raw.get("error")
        texts = [p.content or "" for p in parts if p.type == "text" and p.mime_type is None]
        body = "\n".join(texts)
        if error is not None:
            error = expect(error, dict, f"{where}.error", "tool error")
            text = expect(error.get("message", ""), str, f"{where}.error.message", "message")
            stats[f"error:{error.get('type')}"] += 1
            body = f"{body}\n\nError: {text}" if body else f"Error: {text}"
            is_error = True
        rest = [p for p in parts if not (p.type == "text" and p.mime_type is None)]
        parts = [Part.response(call_id, body, name), *rest]
        when = events.tool_times.get(call_id)
    timestamp, bad_time = timestamp_of(when)
    return Message(
        role=role,
        parts=tuple(parts),
        is_error=is_error,
        usage=usage,
        timestamp=timestamp,
        flags=(FLAG_TIMESTAMP_INVALID,) if bad_time else (),
        source_path=where,
    )


def _calls(calls: Any, where: str, stats: Counter[str]) -> list[Part]:
    if calls is None:
        return []
    expect(calls, list, where, "tool_calls")
    parts = []
    for k, call in enumerate(calls):
        cw = f"{where}[{k}]"
        expect(call, dict, cw, "tool call")
        call_id = expect(require(call, "id", cw), str, f"{cw}.id", "tool call id")
        name = expect(require(call, "function", cw), str, f"{cw}.function", "function")
        if call.get("parse_error"):
            stats["tool_call_parse_errors"] += 1
        parts.append(Part.call(call_id, name, call.get("arguments", {})))
    return parts


def _parts(content: Any, where: str, stats: Counter[str]) -> list[Part]:
    """inspect_ai ``content``: a string or a list of typed items, as canonical parts."""
    if isinstance(content, str):
        return [Part.text(content)] if content else []
    expect(content, list, where, "content")
    parts: list[Part] = []
    for i, item in enumerate(content):
        iw = f"{where}[{i}]"
        expect(item, dict, iw, "content item")
        kind = item.get("type")
        if kind == "text":
            text = expect(require(item, "text", iw), str, f"{iw}.text", "text")
            if text:
                parts.append(Part.text(text))
        elif kind == "reasoning":
            parts.extend(_reasoning(item, iw, stats))
        elif kind in ("image", "audio", "video", "document"):
            parts.append(_media(item, kind, iw))
        elif kind == "data":
            stats["data_parts"] += 1
            payload = _dumps(item.get("data"))
            parts.append(Part("file", content=payload, mime_type=DATA_MIME, modality="data"))
        elif kind == "tool_use":
            parts.extend(_server_tool(item, iw))
        else:
            parts.append(unknown_part(item))
    return parts


def _reasoning(item: dict[str, Any], where: str, stats: Counter[str]) -> list[Part]:
    reasoning = expect(require(item, "reasoning", where), str, f"{where}.reasoning", "reasoning")
    summary = item.get("summary")
    summary = summary if isinstance(summary, str) and summary else None
    if item.get("redacted") is True:
        stats["redacted_reasoning"] += 1
        parts = [Part("reasoning", content=reasoning, name="redacted")]
        if summary is not None:
            parts.append(Part("reasoning", content=summary, name="summary"))
        return parts
    text = reasoning or summary
    return [Part("reasoning", content=text)] if text else []


def _media(item: dict[str, Any], kind: str, where: str) -> Part:
    """An image/audio/video/document item: a data URL as a ``blob``, anything else a ``uri``."""
    value = expect(require(item, kind, where), str, f"{where}.{kind}", kind)
    modality = "file" if kind == "document" else kind
    mime = item.get("mime_type") if kind == "document" else None
    fmt = item.get("format")
    if mime is None and isinstance(fmt, str) and fmt:
        mime = f"{kind}/{fmt}"
    if value.startswith("data:"):
        header, _, payload = value.partition(",")
        mime = header[5:].split(";")[0] or mime
        return Part("blob", content=payload, mime_type=mime, modality=modality)
    return Part(
        "uri", uri=value, mime_type=mime if isinstance(mime, str) else None, modality=modality
    )


def _server_tool(item: dict[str, Any], where: str) -> list[Part]:
    """A server-side tool use (web search, MCP, code execution): its call and its result."""
    call_id = expect(require(item, "id", where), str, f"{where}.id", "tool use id")
    name = expect(require(item, "name", where), str, f"{where}.name", "tool name")
    arguments = item.get("arguments", "{}")
    result = item.get("result", "")
    body = result if isinstance(result, str) else _dumps(result)
    error = item.get("error")
    if isinstance(error, str) and error:
        body = f"{body}\n\nError: {error}" if body else f"Error: {error}"
    return [Part.call(call_id, name, arguments), Part.response(call_id, body, name)]


# --- archives -----------------------------------------------------------------------------------


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> tuple[bytes, str | None]:
    """A member's bytes, or what could be read of them (past a failed CRC check too) and why
    the member cannot be trusted."""
    chunks: list[bytes] = []
    try:
        with archive.open(info) as f:
            while chunk := f.read(1 << 20):
                chunks.append(chunk)
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, RuntimeError,
            NotImplementedError) as e:  # fmt: skip
        raw = _unchecked_bytes(archive, info) or b"".join(chunks)
        return raw, clip(f"member {info.filename} cannot be read: {e}")
    return b"".join(chunks), None


def _unchecked_bytes(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """The member's data as stored (inflated when deflated, as far as it inflates), read from
    its local header without the checks that failed: what the reject keeps."""
    name = archive.filename
    if name is None:
        return b""
    try:
        with open(name, "rb") as f:
            f.seek(info.header_offset)
            local = f.read(30)
            if len(local) < 30 or local[:4] != b"PK\x03\x04":
                return b""
            name_len, extra_len = struct.unpack("<HH", local[26:30])
            f.seek(info.header_offset + 30 + name_len + extra_len)
            data = f.read(info.compress_size)
    except (OSError, ValueError, struct.error):
        return b""
    if info.compress_type == zipfile.ZIP_STORED:
        return data
    if info.compress_type != zipfile.ZIP_DEFLATED:
        return b""
    inflate = zlib.decompressobj(-15)
    out: list[bytes] = []
    for at in range(0, len(data), 1 << 16):
        try:
            out.append(inflate.decompress(data[at : at + (1 << 16)]))
        except zlib.error:
            break
    return b"".join(out)


def _archive_header(archive: zipfile.ZipFile) -> tuple[dict[str, Any], str | None, bytes]:
    """The log header (``header.json``, else ``_journal/start.json``), a note when it is not
    there or unreadable, and its bytes."""
    names = set(archive.namelist())
    problems = []
    for name in HEADER_MEMBERS:
        if name not in names:
            continue
        raw, problem = _read_member(archive, archive.getinfo(name))
        if problem is None:
            try:
                value = loads(decode_bytes(raw))
            except (ValueError, RecordError) as e:
                problem = f"{name} is not JSON: {e}"
            else:
                if isinstance(value, dict):  # fields that are not UTF-8 are left out later
                    note = None if name == "header.json" else f"from {name}"
                    return value, note, raw
                problem = f"{name} is not a readable header"
        problems.append(problem)
    return {}, ("; ".join(problems) if problems else "missing"), b""


def _damaged_archive(path: Path, e: BaseException, fmt: str) -> Reject:
    try:
        raw = path.read_bytes()
    except OSError:
        raw = b""
    if raw.startswith(b"PK\x03\x04") and b"PK\x05\x06" not in raw[-65_557:]:
        reason, detail = "truncated", f"the archive is cut short (no central directory): {e}"
    else:
        reason, detail = "unreadable_file", f"not a readable zip archive: {e}"
    return Reject(str(path), reason, clip(detail), raw, fmt)


def _cut(text: str) -> bool:
    """A member whose JSON never closes was cut, not mistyped."""
    stripped = text.rstrip()
    return bool(stripped) and stripped[-1] not in "}]"


# --- detection ----------------------------------------------------------------------------------


#: detection: a ``.eval`` archive with its header and samples (or summaries)
ARCHIVE_SCORE = 0.95
#: a log document with its samples, or with two of version/status/plan/results/stats
LOG_SCORE = 0.95
#: an archive with its header or its samples, not both
PARTIAL_ARCHIVE_SCORE = 0.8
#: a log document with only its ``eval``
EVAL_ONLY_SCORE = 0.7
#: a damaged file with the ``.eval`` ending, which only this format uses
EVAL_SUFFIX_SCORE = 0.4


def _archive_score(path: Path) -> float:
    """A zip holding an inspect log's members (header, journal, samples)."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError):
        return EVAL_SUFFIX_SCORE if path.suffix == ".eval" else 0.0
    has_header = any(n in HEADER_MEMBERS for n in names)
    has_samples = any(n.startswith("samples/") and n.endswith(".json") for n in names)
    if has_header and (has_samples or "summaries.json" in names or "reductions.json" in names):
        return ARCHIVE_SCORE
    if has_header or has_samples:
        return PARTIAL_ARCHIVE_SCORE
    return 0.0


def _log_score(sample: Sample) -> float:
    if sample.layout != "document" or not isinstance(sample.records[0], dict):
        return 0.0
    return capped(_shape_score(sample.records[0]), sample.records[0])


def _shape_score(doc: dict[str, Any]) -> float:
    """A log document: ``eval{task, model | task_id | run_id}`` beside ``samples``/``plan``/
    ``results``/``stats``/``version``."""
    ev = doc.get("eval")
    if not isinstance(ev, dict) or not isinstance(ev.get("task"), str):
        return 0.0
    if not any(k in ev for k in ("model", "task_id", "run_id", "created")):
        return 0.0
    samples = doc.get("samples")
    samples_shaped = (
        isinstance(samples, list)
        and bool(samples)
        and all(isinstance(s, dict) and ("epoch" in s or "messages" in s) for s in samples[:3])
    )
    around = sum(k in doc for k in ("version", "status", "plan", "results", "stats"))
    if samples_shaped or around >= 2:
        return LOG_SCORE
    return EVAL_ONLY_SCORE
