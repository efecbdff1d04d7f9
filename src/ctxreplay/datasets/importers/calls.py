"""Conversations assembled out of successive model calls, for the trace formats.

Why this module exists: OTel GenAI spans (``otel_genai``), Langfuse observations (``langfuse``),
OpenInference spans (``phoenix``) and LangSmith runs (``langsmith``) record no conversation, only
model calls, each of which repeats the history so far. All four rebuild it the same way, and
that rule is written here once, so the formats cannot drift apart:

* a ``Call`` is what one call was sent and returned, and where it sits in the file;
* the calls that share a conversation form ``chains``: the call with the longest history (the
  latest among equals) and the calls whose messages are a prefix of its messages; calls that
  disagree (a regenerated answer, another earlier turn) make further chains, never merged away;
* a chain's messages are its final call's, with each call's usage, end time and flags on the
  output it produced (``chain_messages``); a conversation of several chains numbers its parts
  (``numbered``) and flags them ``conversation_split``, one with rejected records
  ``conversation_incomplete`` (``build_session``);
* one record may hold many calls (an OTLP document, a trace with its observations): a reject
  carries the record's bytes once, and a session that fails validation rejects every record it
  was built from (``Rejects``).

``CallTreeImporter`` is the importer of the formats whose files are trees of nodes (Langfuse
observations, OpenInference spans): model calls, tool runs, and structure around them.
"""

from __future__ import annotations

import abc
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, ClassVar, NamedTuple, TypeVar

from ..messages import Message, Part, Session, Usage
from ..rejects import RecordError, Reject, inspect_value
from .base import Importer, exception_reason
from .openai_chat import file_digest
from .records import Record

FLAG_CONVERSATION_SPLIT = "conversation_split"
FLAG_CONVERSATION_INCOMPLETE = "conversation_incomplete"

T = TypeVar("T")


@dataclass
class Call:
    """One model call: what it was sent, what it returned, and where it sits in the file."""

    record: Record
    where: str
    order: tuple[Any, ...]
    conversation: str | None
    trace: str | None
    history: list[Message]
    output: list[Message]
    usage: Usage | None = None
    ended: str | None = None
    model: str | None = None
    #: flags for the message this call's output starts (a bad time or usage count)
    flags: tuple[str, ...] = ()
    #: the other records this call was read from, with their JSON paths (per-message events)
    extra: tuple[tuple[Record, str], ...] = ()
    #: the call says its context is a compacted view of the conversation (OTel GenAI)
    compacted: bool = False
    started: str | None = None
    provider: str | None = None
    tools: tuple[str, ...] = ()

    @property
    def full(self) -> list[Message]:
        """What the call was sent followed by what it returned."""
        return [*self.history, *self.output]


#: a consistent history: its final call and the calls it holds (the final one among them)
Chain = tuple[Call, list[Call]]


# --- histories ------------------------------------------------------------------------------


def same(a: Message, b: Message) -> bool:
    """The same message as far as a history goes (times, usage and flags aside)."""
    return a.role == b.role and a.parts == b.parts and a.name == b.name


def is_prefix(messages: list[Message], of: list[Message]) -> bool:
    """``messages`` start ``of``: a later call repeated them."""
    return len(messages) <= len(of) and all(same(a, b) for a, b in zip(messages, of, strict=False))


def common(a: list[Message], b: list[Message]) -> int:
    """How many messages two histories start with alike."""
    n = 0
    while n < min(len(a), len(b)) and same(a[n], b[n]):
        n += 1
    return n


def chains(group: list[Call]) -> list[Chain]:
    """The consistent histories among calls that share a conversation: each is the call with
    the longest history (the latest among equals) and the calls whose messages are a prefix of
    its messages; the first chain holds the longest call of all."""
    remaining = sorted(group, key=lambda c: c.order)
    out: list[Chain] = []
    while remaining:
        final = max(remaining, key=lambda c: (len(c.history), c.order))
        full = final.full
        members = [c for c in remaining if is_prefix(c.full, full)]
        out.append((final, members))
        taken = {id(c) for c in members}
        remaining = [c for c in remaining if id(c) not in taken]
    return out


def numbered(key: str, parts: Sequence[T]) -> Iterator[tuple[str, tuple[int, int] | None, T]]:
    """Each part of a conversation with its session key (``key``, then ``key#2``...) and, when
    there are several, which part of how many it is (its ``split``)."""
    for n, part in enumerate(parts, start=1):
        split = (n, len(parts)) if len(parts) > 1 else None
        yield (key if n == 1 else f"{key}#{n}"), split, part


def group_key(kind: str, session: str | None, trace: str | None, local: str) -> str:
    """The key grouping a call with the others of its conversation: its session id
    (``<kind>:<id>``), else its trace (``trace:<id>``), else ``local`` (nothing ties it to other
    calls: a session of its own, local to the file)."""
    if session is not None:
        return f"{kind}:{session}"
    if trace:
        return f"trace:{trace}"
    return local


def rejected_calls(troubled: Counter[str], key: str, traces: Iterable[str]) -> int:
    """The records rejected from a conversation: those keyed by it or by one of its traces."""
    return troubled.get(key, 0) + sum(troubled.get(f"trace:{t}", 0) for t in traces)


# --- building a session ---------------------------------------------------------------------


def chain_messages(final: Call, members: Iterable[Call]) -> list[Message]:
    """One consistent history: the final call's messages with each call's usage and end time
    on the output it produced, and its flags."""
    messages = final.full
    for c in sorted(members, key=lambda c: c.order):
        at = len(c.history)
        if c.output and at < len(messages):  # the call's output: its usage and end time
            messages[at] = replace(
                messages[at],
                usage=c.usage or messages[at].usage,
                timestamp=c.ended or messages[at].timestamp,
            )
        if c.flags and messages:
            at = max(min(at if c.output else at - 1, len(messages) - 1), 0)
            m = messages[at]
            new = tuple(f for f in c.flags if f not in m.flags)
            messages[at] = replace(m, flags=(*m.flags, *new))
    return messages


def call_metadata(
    calls: Sequence[Call], records: Iterable[Record] = (), traces: Iterable[str | None] = ()
) -> dict[str, Any]:
    """What a session's metadata says of its calls: how many, the records they were read from
    (with ``records``, the others it holds), their traces (with ``traces``), models, providers
    and tools."""
    found = {c.record.index for c in calls} | {r.index for c in calls for r, _ in c.extra}
    metadata: dict[str, Any] = {
        "calls": len(calls),
        "records": sorted(found | {r.index for r in records}),
        "traces": sorted({t for t in (*(c.trace for c in calls), *traces) if t}),
    }
    for name, values in (
        ("models", {c.model for c in calls if c.model}),
        ("providers", {c.provider for c in calls if c.provider}),
        ("tools", {t for c in calls for t in c.tools}),
    ):
        if values:
            metadata[name] = sorted(values)
    return metadata


def build_session(
    fmt: str,
    path: Path,
    key: str,
    final: Call,
    source_id: str,
    messages: list[Message],
    metadata: dict[str, Any],
    split: tuple[int, int] | None,
    incomplete: int,
) -> Session:
    """The session of one part of a conversation: flagged on its first message and in its
    metadata ``conversation_split`` when it is one of several parts, ``conversation_incomplete``
    when ``incomplete`` of its records were rejected."""
    notes: list[str] = []
    if split is not None:
        notes.append(FLAG_CONVERSATION_SPLIT)
        metadata["split"] = {"part": split[0], "of": split[1]}
    if incomplete:
        notes.append(FLAG_CONVERSATION_INCOMPLETE)
        metadata["rejected_calls"] = incomplete
    if notes and messages:
        messages[0] = replace(messages[0], flags=(*messages[0].flags, *notes))
    return Session(
        source_format=fmt,
        source_session_id=source_id,
        messages=messages,
        key=key,
        source_location=str(path),
        source_record=final.record.index,
        metadata=metadata,
    )


# --- rejects ----------------------------------------------------------------------------------


def failure(e: BaseException, where: str) -> tuple[str, str, str]:
    """The reject reason, detail and JSON path of an exception raised reading ``where``."""
    reason, detail = exception_reason(e)
    return reason, detail, e.json_path if isinstance(e, RecordError) else where


class Unit(NamedTuple):
    """One record (or a part of one: a span, an observation) a session was built from."""

    record: Record
    where: str
    #: the session id its reject names
    session_id: str | None


class Rejects:
    """The rejects of one file. One record may hold many calls (an OTLP document, a trace with
    its observations): its bytes go with the first reject that names it and later ones carry
    none, so the rejects store them once (``shared=False``: every call has a record of its own,
    its bytes go with each reject)."""

    def __init__(self, importer: Importer, path: Path, shared: bool = True) -> None:
        self.importer = importer
        self.path = path
        self.shared = shared
        #: indexes of the records a reject has named
        self.named: set[int] = set()

    def _give(self, out: Reject, record: Record) -> None:
        first = record.index not in self.named
        self.named.add(record.index)
        if self.shared:
            out.raw = record.raw if first else b""

    def record(self, record: Record, reason: str, detail: str, where: str) -> Reject:
        """A reject of ``record`` (at ``where``)."""
        out = self.importer.reject(self.path, record, reason, detail, where)
        self._give(out, record)
        return out

    def error(self, record: Record, e: BaseException, where: str) -> Reject:
        """The reject of an exception raised reading ``where`` of ``record``."""
        return self.record(record, *failure(e, where))

    def session(
        self,
        key: str,
        what: str,
        final: Unit,
        others: Iterable[Unit],
        build: Callable[[], Session],
    ) -> list[Session | Reject]:
        """The session ``build()`` makes, validated; when that fails, its reject (at the final
        call) and one for each of ``others``, the other records it was built from, which go
        down with it."""
        results = list(self.importer.guarded(self.path, final.record, lambda: [build()]))
        why = results[0]
        if not isinstance(why, Reject):
            return results
        why.json_path = why.json_path if why.json_path != "$" else final.where
        self._give(why, final.record)
        why.session_id = final.session_id
        return [why, *self.along(why, key, what, others)]

    def chain(
        self, key: str, final: Call, members: Sequence[Call], build: Callable[[], Session]
    ) -> list[Session | Reject]:
        """``session`` for a part of a conversation whose final call is ``final``: when it
        fails, every record of ``members`` goes down with it; when it is made, the other calls
        are skipped ``in_session`` and a call's other records (per-message events) ``in_call``."""
        others = [
            Unit(record, where, c.conversation)
            for c in members
            for record, where in [*([(c.record, c.where)] if c is not final else []), *c.extra]
        ]
        ends = Unit(final.record, final.where, final.conversation)
        results = self.session(key, "conversation", ends, others, build)
        if isinstance(results[0], Session):
            self.importer.tally.skip("in_session", len(members) - 1)
            self.importer.tally.skip("in_call", sum(len(c.extra) for c in members))
        return results

    def along(self, why: Reject, key: str, what: str, units: Iterable[Unit]) -> list[Reject]:
        """A reject for each of ``units``, which a rejected session (``why``) was built from."""
        detail = f"its {what} ({key}) was rejected: {why.detail}"
        out = []
        for unit in units:
            reject = self.record(unit.record, why.reason, detail, unit.where)
            reject.session_id = unit.session_id
            out.append(reject)
        return out


# --- trees of calls: observations, spans ---------------------------------------------------
#
# Langfuse observations and OpenInference spans are the same problem: a file of trace nodes,
# some of them model calls that each repeat the conversation so far, some tool runs, the rest
# structure. ``CallTreeImporter`` groups the calls of a session and rebuilds its conversation;
# a subclass says what a record's nodes are (``nodes``) and what one node is (``node``).

#: node kinds besides model calls and tool runs are skip reasons (``rejects.SKIPS``)
CALL = "call"
TOOL = "tool"


@dataclass
class ToolRun:
    """A tool execution recorded as its own node: the result of a call, when it answers one."""

    call_id: str | None
    name: str | None
    text: str
    is_error: bool = False
    ended: str | None = None


@dataclass
class Node:
    """One observation or span: a model call, a tool run, or a node skipped for ``kind``."""

    record: Record
    where: str
    order: tuple[Any, ...]
    kind: str
    session: str | None = None
    trace: str | None = None
    call: Call | None = None
    tool: ToolRun | None = None
    #: values a user filters sessions on (user id, trace name...), merged over the session
    meta: dict[str, str] = field(default_factory=dict)
    #: the node's own id (observation or span id)
    ident: str | None = None

    def as_call(
        self,
        history: list[Message],
        output: list[Message],
        usage: Usage | None,
        ended: str | None,
        model: str | None,
        flags: Iterable[str],
    ) -> Node:
        """This node as a model call (of its record, place, start, session and trace)."""
        self.kind = CALL
        self.call = Call(
            record=self.record,
            where=self.where,
            order=self.order,
            conversation=self.session,
            trace=self.trace,
            history=history,
            output=output,
            usage=usage,
            ended=ended,
            model=model,
            flags=tuple(flags),
        )
        return self

    def as_tool(self, run: ToolRun) -> Node:
        """This node as a tool run."""
        self.kind = TOOL
        self.tool = run
        return self


def _not_before(order: tuple[Any, ...], start: tuple[Any, ...]) -> bool:
    """A node starting at ``order`` did not start before ``start`` (unknown times pass)."""
    return bool(order[0] or start[0] or order[1] >= start[1])


def pair_anonymous_results(messages: list[Message]) -> list[Message]:
    """Give a tool result recorded without a call id (some instrumentations leave it out) the id
    of the earliest open call before it, preferring one of the same tool name: providers require
    results right after their calls, so the order pairs them."""
    open_calls: list[Part] = []
    out: list[Message] = []
    for m in messages:
        parts = list(m.parts)
        changed = False
        for i, p in enumerate(parts):
            if p.type == "tool_call":
                open_calls.append(p)
            elif p.type == "tool_call_response":
                if p.id is None and open_calls:
                    same_name = [c for c in open_calls if p.name and c.name == p.name]
                    chosen = (same_name or open_calls)[0]
                    parts[i] = replace(p, id=chosen.id, name=p.name or chosen.name)
                    changed = True
                    p = parts[i]
                open_calls = [c for c in open_calls if c.id != p.id]
        out.append(replace(m, parts=tuple(parts)) if changed else m)
    return out


class CallTreeImporter(Importer, abc.ABC):
    """Trace nodes (observations, spans) whose model calls rebuild each session's conversation."""

    #: the key prefix of this format's sessions (``<prefix>:session:<id>``)
    key_prefix: ClassVar[str] = ""

    def __init__(self) -> None:
        #: record indexes of the last file read that gave no session and no reject
        self.ignored_records: list[int] = []

    # what a subclass says ------------------------------------------------------------------

    @abc.abstractmethod
    def nodes(self, record: Record) -> list[tuple[Any, str]]:
        """The nodes a record holds, each with its JSON path (none: the record is skipped
        ``empty_reason``)."""

    def empty_reason(self, record: Record) -> str:
        """The skip reason of a record that holds no node."""
        return "no_session"

    @abc.abstractmethod
    def node(self, record: Record, item: Any, where: str, position: int) -> Node:
        """One node, read; raises for content it cannot read."""

    def keys_of(self, item: Any) -> tuple[str | None, str | None]:
        """A node's session and trace ids, read leniently (for a node that failed to read)."""
        return None, None

    def session_of_trace(self, trace: str) -> str | None:
        """A session id recorded for a whole trace (a Langfuse trace row)."""
        return None

    def trace_meta(self, trace: str) -> dict[str, str]:
        """Values recorded for a whole trace (its name, user), for its sessions' metadata."""
        return {}

    def table(self, path: Path) -> Iterator[Record | Reject] | None:
        """The rows of a file that is a table export (CSV, Parquet), or None: it is JSON."""
        return None

    # reading -------------------------------------------------------------------------------

    def records(self, path: Path, check_utf8: bool = True) -> Iterator[Record | Reject]:
        rows = self.table(path)
        if rows is None:
            yield from super().records(path, check_utf8)
            return
        for record in rows:
            self.tally.seen += 1
            yield record

    def read(self, path: Path) -> Iterator[Session | Reject]:
        digest = file_digest(path)
        self.ignored_records = []
        self._rejects = rejects = Rejects(self, path)
        #: records a session was built from
        self._referenced: set[int] = set()
        self._trace_values: dict[str, dict[str, set[str]]] = {}
        seen_records: list[int] = []
        nodes: list[Node] = []
        by_trace: dict[str, str] = {}
        #: sessions (or traces) with rejected nodes, with how many
        troubled: Counter[str] = Counter()
        for record in self.records(path, check_utf8=False):  # bytes are checked per node
            if isinstance(record, Reject):
                yield record
                continue
            seen_records.append(record.index)
            try:
                items = self.nodes(record)
            except Exception as e:
                yield rejects.error(record, e, "$")
                continue
            if not items:
                self.tally.skip(self.empty_reason(record))
                continue
            self.tally.seen += len(items) - 1  # the record stands for its nodes
            for position, (item, where) in enumerate(items):
                try:
                    bad = inspect_value(item, root=where)
                    if bad is not None:
                        raise RecordError(bad[0], "the node holds bytes that are not UTF-8", bad[1])
                    node = self.node(record, item, where, position)
                except Exception as e:
                    out = rejects.error(record, e, where)
                    session, trace = self._lenient_keys(item)
                    if session or trace:
                        out.session_id = session or trace
                        troubled[f"session:{session}" if session else f"trace:{trace}"] += 1
                    yield out
                    continue
                if node.trace and node.session:
                    by_trace.setdefault(node.trace, node.session)
                if node.trace:  # what any node of a trace says (a root span's user id)
                    for k, v in node.meta.items():
                        self._trace_values.setdefault(node.trace, {}).setdefault(k, set()).add(v)
                nodes.append(node)
        groups: dict[str, list[Node]] = {}
        for n in nodes:
            session = n.session or (
                (by_trace.get(n.trace) or self.session_of_trace(n.trace)) if n.trace else None
            )
            n.session = session
            if n.kind not in (CALL, TOOL):
                self.tally.skip(n.kind)
                continue
            local = f"node:{digest}:{n.record.index}:{n.where}"
            groups.setdefault(group_key("session", session, n.trace, local), []).append(n)
        for key, group in groups.items():
            yield from self._group(path, key, group, troubled)
        referenced = rejects.named | self._referenced
        self.ignored_records = [i for i in seen_records if i not in referenced]

    def _lenient_keys(self, item: Any) -> tuple[str | None, str | None]:
        try:
            return self.keys_of(item)
        except Exception:
            return None, None

    def _group(
        self, path: Path, key: str, group: list[Node], troubled: Counter[str]
    ) -> Iterator[Session | Reject]:
        calls = [n for n in group if n.kind == CALL and n.call is not None]
        tools = sorted((n for n in group if n.kind == TOOL), key=lambda n: n.order)
        by_call = {id(n.call): n for n in calls}
        incomplete = rejected_calls(troubled, key, {n.trace for n in group if n.trace})
        parts = chains([n.call for n in calls if n.call is not None])
        used: set[int] = set()
        for part_key, split, (final, members) in numbered(f"{self.key_prefix}:{key}", parts):
            ends, member_nodes = by_call[id(final)], [by_call[id(c)] for c in members]
            answers = self._answers(final, tools, used)
            args = (path, part_key, ends, member_nodes, answers, split, incomplete)
            contributors = [*member_nodes, *(n for _, n in answers)]
            yield from self._chain(part_key, ends, contributors, partial(self._session, *args))
        for n in tools:
            if id(n) not in used:
                self.tally.skip("tool_in_history")

    def _answers(self, final: Call, tools: list[Node], used: set[int]) -> list[tuple[Part, Node]]:
        """The tool runs that answer calls of the final output no message answers."""
        answered = {
            p.id for m in (*final.history, *final.output) for p in m.responses if p.id is not None
        }
        open_calls = [p for m in final.output for p in m.calls if p.id not in answered]
        found: list[tuple[Part, Node]] = []
        for call in open_calls:
            candidates = [
                n
                for n in tools
                if id(n) not in used and n.tool is not None and _not_before(n.order, final.order)
            ]
            match = next((n for n in candidates if n.tool and n.tool.call_id == call.id), None)
            if match is None:
                match = next(
                    (
                        n
                        for n in candidates
                        if n.tool and n.tool.call_id is None and n.tool.name == call.name
                    ),
                    None,
                )
            if match is not None:
                used.add(id(match))
                found.append((call, match))
        return found

    def _chain(
        self, key: str, final: Node, contributors: list[Node], build: Callable[[], Session]
    ) -> list[Session | Reject]:
        """The session ``build`` makes, or the rejects of every node it was built from."""
        ends = Unit(final.record, final.where, final.session or final.trace)
        others = [Unit(n.record, n.where, ends.session_id) for n in contributors if n is not final]
        results = self._rejects.session(key, "session", ends, others, build)
        if isinstance(results[0], Session):
            self.tally.skip("in_session", len(contributors) - 1)
        self._referenced.update(n.record.index for n in contributors)
        return results

    def _session(
        self,
        path: Path,
        key: str,
        final_node: Node,
        members: list[Node],
        answers: list[tuple[Part, Node]],
        split: tuple[int, int] | None,
        incomplete: int,
    ) -> Session:
        final = final_node.call
        assert final is not None
        calls = [n.call for n in members if n.call is not None]
        messages = chain_messages(final, calls)
        for call, n in answers:
            run = n.tool
            assert run is not None
            messages.append(
                Message(
                    "tool",
                    (Part.response(call.id, run.text, call.name),),
                    is_error=run.is_error,
                    timestamp=run.ended,
                    source_path=n.where,
                )
            )
        messages = pair_anonymous_results(messages)
        tool_nodes = [n for _, n in answers]
        metadata = call_metadata(
            calls, [n.record for n in tool_nodes], [n.trace for n in tool_nodes]
        )
        if answers:
            metadata["tool_runs"] = len(answers)
        merged: dict[str, set[str]] = {}
        for n in [*members, *tool_nodes]:
            for k, v in n.meta.items():
                merged.setdefault(k, set()).add(v)
        for trace in metadata["traces"]:
            for k, v in self.trace_meta(trace).items():
                merged.setdefault(k, set()).add(v)
            for k, values in self._trace_values.get(trace, {}).items():
                merged.setdefault(k, set()).update(values)
        for k, values in sorted(merged.items()):
            metadata[k] = sorted(values)
        source_id = (
            final_node.session
            or final_node.trace
            or f"{path.stem}:{final_node.ident or final_node.record.index}"
        )
        return build_session(
            self.name, path, key, final, source_id, messages, metadata, split, incomplete
        )


__all__ = [
    "CALL",
    "FLAG_CONVERSATION_INCOMPLETE",
    "FLAG_CONVERSATION_SPLIT",
    "TOOL",
    "Call",
    "CallTreeImporter",
    "Chain",
    "Node",
    "Rejects",
    "ToolRun",
    "Unit",
    "build_session",
    "call_metadata",
    "chain_messages",
    "chains",
    "common",
    "failure",
    "group_key",
    "is_prefix",
    "numbered",
    "pair_anonymous_results",
    "rejected_calls",
    "same",
]
