"""OpenAI Codex CLI session rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

A rollout is one session: JSONL records ``{timestamp, type, payload}`` as the CLI's
``RolloutRecorder`` writes them (openai/codex, ``codex-rs/protocol``):

* ``session_meta``: the session id (``payload.id``), ``cwd``, ``cli_version``, ``originator``,
  ``source``, ``model_provider``, ``git``, and ``instructions``. Those are the *user*
  instructions (AGENTS.md); the CLI also sends them as the first user message, which is in the
  rollout, so they are not repeated as a message (their size is in metadata). The base
  instructions the CLI sends in the Responses ``instructions`` field are not recorded by these
  versions; when a ``session_meta`` carries ``base_instructions`` (text, or ``{text}``), it
  becomes the first ``system`` message.
* ``turn_context``: per-turn settings; the models and reasoning efforts used go to metadata.
* ``response_item``: a Responses API item, read by the same reader as the ``openai-responses``
  importer (``messages_from_items``' ``ItemReader``): messages, reasoning (encrypted content
  kept, not tokenised), ``function_call``/``custom_tool_call`` and their outputs. The
  ``<environment_context>`` and ``<user_instructions>`` user messages are context the model saw
  and are kept. ``ghost_snapshot`` items (the CLI's undo snapshots) are not context: counted
  (``not_context_items``).
* ``event_msg``: the UI's event stream. ``token_count`` with a new ``total_token_usage`` marks a
  model request: its ``last_token_usage`` (``input_tokens`` including ``cached_input_tokens``,
  ``output_tokens``) goes on the assistant message that request produced (the CLI writes the
  count just before that response's items); a count repeating the previous total, or with no
  ``info``, is counted, not used. ``turn_aborted`` flags the last message of its turn
  ``turn_aborted``. ``user_message``, ``agent_message``, ``agent_reasoning`` … are the UI's copies
  of response items: counted in ``skipped_events``, never doubled.
* ``compacted`` ``{message, replacement_history?}`` (a recorded compaction): the context starts
  again there. Without a replacement history the summary becomes a ``user`` message flagged
  ``compaction_summary``; with one, its items become the messages that follow, the first flagged
  ``compaction_summary`` (the summary first when the history does not hold it).

Early rollouts (mid-2025) wrote a first line ``{id, timestamp, instructions}`` and then bare
items (and ``{record_type: "state"}`` lines); they are read the same way.

A line that cannot be read is rejected by itself (with its bytes) and the session is made of the
others; a line of an unknown type is counted in ``unknown_records``. The lines read into the
session besides the one it stands for (``session_meta``) are counted ``folded`` and listed in
``ignored_records``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..messages import Message, Part, Session, Usage, as_dict
from ..rejects import RecordError, Reject
from ..validate import FLAG_COMPACTION_SUMMARY, FLAG_TURN_ABORTED
from .base import Importer, expect, importers, raising, uuid_in_name
from .openai_chat import file_digest
from .openai_responses import ITEM_TYPES, ItemReader
from .records import Record
from .sniffing import Sample, capped, sample_of
from .times import timestamp_of

RECORD_TYPES = frozenset(
    {"session_meta", "turn_context", "response_item", "event_msg", "compacted"}
)
#: response items that are not context (the CLI's own bookkeeping)
NOT_CONTEXT_ITEMS = frozenset({"ghost_snapshot"})
__all__ = ["CodexCliImporter"]


@dataclass
class _Line:
    """One readable line of a rollout: its kind and payload."""

    record: Record
    kind: str  # a RECORD_TYPES member, "legacy_meta", "state", or the unknown type
    payload: Any
    timestamp: Any = None
    where: str = "$.payload"  # JSON path of the payload in its line


def _line(record: Record) -> _Line:
    """A rollout line, checked; a ``response_item`` is read once so a bad item rejects only
    its own line."""
    value = expect(record.value, dict, "$", "rollout line")
    kind = value.get("type")
    if "payload" not in value:  # an early rollout: a meta line, a state line or a bare item
        if value.get("record_type") == "state":
            return _Line(record, "state", value, where="$")
        if kind is None and "id" in value and "timestamp" in value:
            return _Line(record, "legacy_meta", value, value.get("timestamp"), "$")
        if kind in ITEM_TYPES or kind in NOT_CONTEXT_ITEMS or (kind is None and "role" in value):
            kind, payload, where = "response_item", value, "$"
        else:
            raise RecordError("missing_field", "a rollout line needs type and payload", "$")
    else:
        kind = expect(kind, str, "$.type", "record type")
        payload, where = value["payload"], "$.payload"
    if kind in RECORD_TYPES:
        expect(payload, dict, where, f"{kind} payload")
    if kind == "response_item" and payload.get("type") not in NOT_CONTEXT_ITEMS:
        ItemReader().add(payload, where)
    if kind == "event_msg":
        expect(payload.get("type"), str, f"{where}.type", "event type")
    if kind == "compacted":
        _compaction(payload, where)
    return _Line(record, kind, payload, value.get("timestamp"), where)


def _compaction(payload: dict[str, Any], where: str) -> tuple[str, list[Any] | None]:
    message = payload.get("message", "")
    message = expect(message if message is not None else "", str, f"{where}.message", "summary")
    history = payload.get("replacement_history")
    if history is not None:
        expect(history, list, f"{where}.replacement_history", "replacement history")
        probe = ItemReader()
        for i, item in enumerate(history):
            probe.add(item, f"{where}.replacement_history[{i}]")
    return message, history


def _usage(last: Any) -> Usage | None:
    """``last_token_usage`` as usage (out-of-range values are left for validation to flag)."""
    if not isinstance(last, dict):
        return None
    values = [last.get(k) for k in ("input_tokens", "cached_input_tokens", "output_tokens")]
    if all(v is None for v in values):
        return None
    return Usage(*values)


@dataclass
class _Rollout:
    """What a rollout holds besides its messages."""

    meta: dict[str, Any] = field(default_factory=dict)
    session_id: str | None = None
    models: list[str] = field(default_factory=list)
    efforts: list[str] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    not_context: Counter[str] = field(default_factory=Counter)
    unknown: Counter[str] = field(default_factory=Counter)
    turns: int = 0
    aborted: int = 0
    requests: int = 0
    compactions: int = 0
    totals: dict[str, Any] | None = None
    window: Any = None
    extra_meta: int = 0


@importers.register("codex-cli")
class CodexCliImporter(Importer):
    """OpenAI Codex CLI rollouts: ``session_meta``, ``turn_context``, Responses API
    ``response_item`` records and ``event_msg`` events, one session per file."""

    suffixes = (".jsonl",)

    def sniff(self, path: Path, head: bytes) -> float:
        return sniff_codex(sample_of(path, head))

    def read(self, path: Path) -> Iterator[Session | Reject]:
        digest = file_digest(path)
        #: lines read into the session another line stands for (counted ``folded``)
        self.ignored_records: list[int] = []
        lines: list[_Line] = []
        rejected = 0
        for record in self.records(path):
            if isinstance(record, Reject):
                rejected += 1
                yield record
                continue
            try:
                lines.append(_line(record))
            except Exception as e:  # the line is rejected by itself; the rollout goes on
                rejected += 1
                yield from self.guarded(path, record, lambda e=e: raising(e))
        if not lines:
            return
        self.tally.skip("part_of_session", len(lines) - 1)
        first = next(
            (ln.record for ln in lines if ln.kind in ("session_meta", "legacy_meta")), None
        )
        anchor = first or lines[0].record
        self.ignored_records = [ln.record.index for ln in lines if ln.record is not anchor]
        yield from self.guarded(
            path, anchor, lambda: [self._session(path, digest, anchor, lines, rejected)]
        )

    def _session(
        self, path: Path, digest: str, anchor: Record, lines: list[_Line], rejected: int
    ) -> Session:
        reader = ItemReader()
        info = _Rollout()
        previous_total: Any = None
        for line in lines:
            p, where = line.payload, line.where
            if line.kind in ("session_meta", "legacy_meta"):
                self._meta(line, info, reader)
            elif line.kind == "turn_context":
                for key, seen in (("model", info.models), ("effort", info.efforts)):
                    if isinstance(p.get(key), str) and p[key] not in seen:
                        seen.append(p[key])
            elif line.kind == "response_item":
                kind = p.get("type")
                if kind in NOT_CONTEXT_ITEMS:
                    info.not_context[str(kind)] += 1
                else:
                    reader.add(p, where, line.timestamp)
            elif line.kind == "event_msg":
                previous_total = self._event(p, info, reader, previous_total)
            elif line.kind == "compacted":
                self._compacted(p, where, line.timestamp, info, reader)
            elif line.kind == "state":
                info.skipped["state"] += 1
            else:
                info.unknown[line.kind] += 1
        messages = reader.finish()
        sid = info.session_id or uuid_in_name(path)
        meta = self._metadata(info, reader, lines, rejected)
        return Session(
            source_format=self.name,
            source_session_id=sid,
            messages=messages,
            key=f"{digest}:{sid}",
            source_location=str(path),
            source_record=anchor.index,
            workload="codex-cli",
            metadata=meta,
        )

    def _meta(self, line: _Line, info: _Rollout, reader: ItemReader) -> None:
        p = line.payload
        if info.session_id is not None:
            info.extra_meta += 1  # a resumed or forked session writes another: the first rules
            return
        sid = p.get("id")
        if isinstance(sid, str | int) and not isinstance(sid, bool):
            info.session_id = str(sid)
        for key in ("cwd", "cli_version", "originator", "source", "model_provider", "model"):
            if isinstance(p.get(key), str):
                info.meta[key] = p[key]
        if isinstance(p.get("git"), dict):
            info.meta["git"] = p["git"]
        user = p.get("instructions")
        if isinstance(user, str) and user:
            info.meta["user_instructions_chars"] = len(user)
        base = p.get("base_instructions")
        if isinstance(base, dict):
            base = base.get("text")
        if isinstance(base, str) and base:
            where = f"{line.where}.base_instructions"
            reader.append(Message("system", (Part.text(base),), source_path=where))

    def _event(
        self, p: dict[str, Any], info: _Rollout, reader: ItemReader, previous_total: Any
    ) -> Any:
        kind = p["type"]
        if kind == "token_count":
            data = as_dict(p.get("info"))
            total, last = data.get("total_token_usage"), data.get("last_token_usage")
            if not data or (total is not None and total == previous_total) or last is None:
                info.skipped["token_count"] += 1  # no count yet, or the last one repeated
                return previous_total
            info.requests += 1
            if isinstance(total, dict):
                info.totals = total
            if data.get("model_context_window") is not None:
                info.window = data["model_context_window"]
            reader.begin_response(_usage(last))
            return total
        if kind == "turn_aborted":
            info.aborted += 1
            if not reader.flag_last(FLAG_TURN_ABORTED):
                info.skipped["turn_aborted_before_any_message"] += 1
            return previous_total
        if kind == "user_message":
            info.turns += 1
        info.skipped[kind] += 1
        return previous_total

    def _compacted(
        self, p: dict[str, Any], where: str, timestamp: Any, info: _Rollout, reader: ItemReader
    ) -> None:
        summary, history = _compaction(p, where)
        info.compactions += 1
        reader.flush()
        start = len(reader.messages)
        for i, item in enumerate(history or []):
            reader.add(item, f"{where}.replacement_history[{i}]", timestamp)
        reader.flush()
        made = reader.messages[start:]
        if summary and not any(summary in m.text for m in made):
            reader.messages.insert(
                start,
                Message(
                    "user",
                    (Part.text(summary),),
                    timestamp=timestamp_of(timestamp)[0],
                    source_path=f"{where}.message",
                ),
            )
        if len(reader.messages) > start:
            m = reader.messages[start]
            reader.messages[start] = replace(m, flags=(*m.flags, FLAG_COMPACTION_SUMMARY))

    def _metadata(
        self, info: _Rollout, reader: ItemReader, lines: list[_Line], rejected: int
    ) -> dict[str, Any]:
        meta: dict[str, Any] = dict(info.meta)
        if info.models:
            meta["models"] = info.models
        if info.efforts:
            meta["reasoning_efforts"] = info.efforts
        meta["turns"] = info.turns
        meta["aborted_turns"] = info.aborted
        meta["requests"] = info.requests
        if info.totals is not None:
            meta["token_totals"] = info.totals
        if info.window is not None:
            meta["model_context_window"] = info.window
        if info.compactions:
            meta["compactions"] = info.compactions
        if info.skipped:
            meta["skipped_events"] = dict(sorted(info.skipped.items()))
        if info.not_context:
            meta["not_context_items"] = dict(sorted(info.not_context.items()))
        if info.unknown:
            meta["unknown_records"] = dict(sorted(info.unknown.items()))
        if info.extra_meta:
            meta["extra_session_meta"] = info.extra_meta
        if rejected:
            meta["rejected_records"] = rejected
        meta.update(reader.metadata())
        return meta


# --- detection ---------------------------------------------------------------------------------


#: detection: the ``session_meta`` record with the CLI's version
SESSION_META_SCORE = 0.99
#: a rollout record: a known ``type`` with its ``payload``
RECORD_SCORE = 0.95
#: an early rollout's state record, or its meta line followed by bare items
EARLY_ROLLOUT_SCORE = 0.9
#: a known ``type`` with a ``payload`` that is not an object
BAD_PAYLOAD_SCORE = 0.5


def _record_score(record: Any) -> float:
    return capped(_shape_score(record), record)


def _shape_score(record: Any) -> float:
    if not isinstance(record, dict):
        return 0.0
    if "payload" in record and record.get("type") in RECORD_TYPES:
        payload = record["payload"]
        if not isinstance(payload, dict):
            return BAD_PAYLOAD_SCORE
        if record["type"] == "session_meta" and "cli_version" in payload:
            return SESSION_META_SCORE
        return RECORD_SCORE
    if record.get("record_type") == "state":
        return EARLY_ROLLOUT_SCORE
    return 0.0


def sniff_codex(sample: Sample) -> float:
    score = sample.mean(_record_score)
    if sample.layout != "jsonl" or not sample.records:
        return score
    first = sample.records[0]  # an early rollout: a meta line, then bare items
    if (
        isinstance(first, dict)
        and "type" not in first
        and {"id", "timestamp"} <= set(first)
        and any(isinstance(r, dict) and r.get("type") in ITEM_TYPES for r in sample.records[1:])
    ):
        return max(score, EARLY_ROLLOUT_SCORE)
    return score
