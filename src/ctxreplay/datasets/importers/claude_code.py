"""Claude Code session logs (``~/.claude/projects/<project>/<session>.jsonl``), versions 0.2 → 2.1.

Claude Code, Anthropic's coding agent CLI, appends one JSON record per line. Records of the
conversation (``user``, ``assistant``, and the bookkeeping records ``system``, ``attachment``,
``progress``) carry ``uuid`` and ``parentUuid``: the conversation is a tree, read in the order of
its ``parentUuid`` chain, not of the file's lines. Other records (``summary``,
``file-history-snapshot``, ``queue-operation``, ``permission-mode``, ``ai-title`` ...) are
session-level bookkeeping.

Sessions. The records of a file form trees (a record whose parent is not in the file starts one;
a ``compact_boundary`` record, parentless, continues its ``logicalParentUuid``). Trees of the main
conversation make one session per ``sessionId`` (of the tree's newest record: a resumed session's
file starts with records copied from the session it continues, which still carry that session's
id; those ids are kept in ``continues``); several trees of one session (after ``/clear``) follow
each other in file order. Each tree of sub-agent records (``isSidechain``: in the parent's file
in old versions, ``agent-<id>.jsonl`` files beside it or in ``<session>/subagents/`` in newer
ones) is a session of its own. Session keys are global, so the same session read from two files
is one session (the corpus writer rejects the second ``duplicate_session``): the main session's
key is its ``sessionId``, a sub-agent's ``<sessionId>/agent/<agentId or its first uuid>``.

Branches. Where records share a parent (an edited or retried turn), the branch leading to the
session's last message record (in file order) is the conversation; the other branches' messages
are kept right after the record they branched from, flagged ``abandoned_branch`` and not visible.

Messages. Content blocks map as in the Anthropic Messages API (``anthropic_messages``): ``text``,
``thinking``/``redacted_thinking`` (reasoning), ``tool_use`` (tool call), ``tool_result`` (a
``tool_call_response`` part of the ``user`` message: roles are the provider's own), ``image``.
Claude Code writes each content block of one API response as its own record: consecutive
assistant records of one ``message.id`` become one message (parallel tool calls are one message),
with the usage of the last (``anthropic_usage``). Flags: ``cli_meta`` (``isMeta``: text the CLI
injects, which the model reads), ``api_error`` (``isApiErrorMessage``: the CLI's synthetic
assistant message for a failed request; not visible), ``local_command`` (a ``system`` record of subtype
``local_command``: the slash command and its output that versions up to 1.x wrote as plain user
messages, behind an ``isMeta`` caveat telling the model not to answer them; kept as that user
message), ``turn_aborted`` (the CLI's exact ``[Request interrupted by user...]`` texts),
``compaction_summary`` (``isCompactSummary``; or, in old versions that continued a compacted
conversation as a new session, a first user message opening with the CLI's fixed text "This
session is being continued from a previous conversation that ran out of context").

Metadata. ``toolUseResult`` (the structured result Claude Code keeps beside each tool result)
is summarised per call id in ``tool_results`` (its keys, its size and its short scalar values,
never its bulk). Records that are not messages are counted by type in ``skipped_records`` (and,
when Claude Code does not define the type, in ``unknown_records``, flagging the message before
them ``unknown_event_kind``); ``summary`` records are titles for ``/resume``, not compactions:
``titles`` keeps each with its ``leafUuid`` and whether it resolves in this session (they often
name sessions of other files). ``compact_boundary`` records give ``compactions`` (trigger,
tokens before, time, and the index of the summary message). Sub-agents name their parent
(``parent_session_id``, ``parent_source_session_id``, and ``parent_call_id``: the ``Task`` call
whose result names the agent, or whose ``prompt`` is the sub-agent's first message), and a
parent lists the sub-agents found in its file (``subagents``).

Accounting: every line is seen once; a session stands for its first message record, its other
message records are skipped ``part_of_session``; bookkeeping lines are skipped ``no_message``, a
line repeating a uuid already read ``duplicate_record``. A record that cannot be placed (no
``uuid``, wrong types) is rejected alone; a message that cannot be read rejects its whole session
(each of its records, the failing one with the reason). A file with no conversation (summary
lines only) is one ``empty_session`` reject holding the whole file. An empty file has no format
to detect (``unknown_format``); read as Claude Code it is ``empty_session``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..messages import Message, Part, Session, as_dict
from ..rejects import RecordError, Reject
from ..store import session_id_for
from ..validate import (
    FLAG_ABANDONED_BRANCH,
    FLAG_COMPACTION_SUMMARY,
    FLAG_TIMESTAMP_INVALID,
    FLAG_TURN_ABORTED,
)
from .anthropic_messages import _block_parts, anthropic_usage
from .base import Importer, exception_reason, expect, importers
from .claude_code_files import agent_meta, persisted_outputs, sidecar_kind
from .records import Record, read_text
from .sniffing import capped, sample_of
from .times import timestamp_of

FORMAT = "claude-code"
FLAG_CLI_META = "cli_meta"
FLAG_API_ERROR = "api_error"
FLAG_LOCAL_COMMAND = "local_command"
FLAG_UNKNOWN_EVENT_KIND = "unknown_event_kind"
__all__ = [
    "FLAG_API_ERROR",
    "FLAG_CLI_META",
    "FLAG_LOCAL_COMMAND",
    "ClaudeCodeImporter",
]

#: skip reasons (``rejects.SKIPS``)
PART_OF_SESSION = "part_of_session"
NO_MESSAGE = "no_message"
DUPLICATE_RECORD = "duplicate_record"

#: record types that are messages
MESSAGE_TYPES = frozenset({"user", "assistant"})
#: record types Claude Code writes that are not messages (counted in ``skipped_records``)
BOOKKEEPING = frozenset(
    {"summary", "file-history-snapshot", "queue-operation", "permission-mode", "attachment",
     "ai-title", "custom-title", "last-prompt", "agent-name", "mode", "progress", "system",
     "compact_boundary", "atis-latch", "pr-link", "frame-link", "relocated", "worktree-state",
     "tag"}
)  # fmt: skip
#: the opening the CLI gives the first message of a session continued after compaction (old)
CONTINUATION_PREFIX = (
    "This session is being continued from a previous conversation that ran out of context"
)
#: the texts the CLI writes as the user message when the user interrupts a turn
INTERRUPTED = frozenset(
    {"[Request interrupted by user]", "[Request interrupted by user for tool use]"}
)
#: the prompt Claude Code sends a sub-agent it starts only to warm the cache
WARMUP_PROMPT = "Warmup"
#: tools whose calls start a sub-agent
AGENT_TOOLS = frozenset({"Task", "Agent"})
#: toolUseResult string values up to this length are kept in the summary
SHORT = 200


@dataclass(eq=False)
class _Node:
    """One record of the file that takes part in the conversation tree (it has a ``uuid``)."""

    record: Record
    value: dict[str, Any]
    kind: str
    uuid: str
    parent_uuid: str | None
    session: str | None
    sidechain: bool
    message: bool
    parent: _Node | None = None
    children: list[_Node] = field(default_factory=list)

    @property
    def index(self) -> int:
        return self.record.index

    @property
    def label(self) -> str:
        """The type, with a ``system`` record's subtype or an attachment's type."""
        sub = self.value.get("subtype")
        if sub is None and self.kind == "attachment":
            sub = as_dict(self.value.get("attachment")).get("type")
        return f"{self.kind}:{sub}" if isinstance(sub, str) else self.kind


@dataclass
class _Group:
    """The records of one session: its trees (roots in file order) and bookkeeping."""

    key: str
    sid: str
    sidechain: bool
    agent: str | None
    roots: list[_Node] = field(default_factory=list)
    nodes: list[_Node] = field(default_factory=list)
    #: file-level bookkeeping records given to this session
    extra: list[Record] = field(default_factory=list)

    @property
    def first(self) -> _Node:
        return min((n for n in self.nodes if n.message), key=lambda n: n.index)


class _NodeError(Exception):
    """A record of a session could not be read: which record, and why."""

    def __init__(self, node: _Node, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.node = node
        self.cause = cause


@importers.register(FORMAT)
class ClaudeCodeImporter(Importer):
    """Claude Code (Anthropic's agentic coding CLI) session logs: ``<session>.jsonl``, and the
    files beside them (``claude_code_files``)."""

    suffixes = (".jsonl", ".json", ".txt")
    #: a resumed or compacted session's log can hold results of calls made before it began
    orphan_results = "as_text"

    def __init__(self) -> None:
        #: record indexes of the last file read that were skipped (not a message, or repeated)
        self.ignored_records: list[int] = []

    def sniff(self, path: Path, head: bytes) -> float:
        if sidecar_kind(path) is not None:
            return SIDECAR_SCORE
        if path.suffix != ".jsonl":
            return 0.0
        return sample_of(path, head).mean(_record_score)

    def read(self, path: Path) -> Iterator[Session | Reject]:
        self.ignored_records = []
        kind = sidecar_kind(path)
        if kind is not None:  # a file beside the logs: one record, counted by kind
            self.tally.seen += 1
            self.tally.skip(kind)
            self.ignored_records.append(0)
            return
        nodes: list[_Node] = []
        by_uuid: dict[str, _Node] = {}
        loose: list[Record] = []  # bookkeeping records outside the tree
        duplicates = 0
        rejected = False
        for record in self.records(path):
            if isinstance(record, Reject):
                rejected = True
                yield record
                continue
            try:
                node = _node(record)
            except RecordError as e:
                rejected = True
                reject = self.reject(path, record, e.reason, e.detail, e.json_path)
                reject.session_id = _sid(record.value)
                yield reject
                continue
            if node is None:
                loose.append(record)
            elif node.uuid in by_uuid:  # re-emitted with a uuid already read: the first is kept
                duplicates += 1
                self._ignore(record, DUPLICATE_RECORD)
            else:
                by_uuid[node.uuid] = node
                nodes.append(node)
        cycles = _link(nodes, by_uuid)
        groups = _groups(path, nodes)
        if not groups:
            yield from self._no_conversation(path, nodes, loose, rejected)
            return
        grouped = {id(n) for g in groups.values() for n in g.nodes}
        stray = [n.record for n in nodes if id(n) not in grouped]  # trees without a message
        _give_loose(path, groups, [*loose, *stray], by_uuid)
        for node in nodes:
            if not node.message:
                self._ignore(node.record, NO_MESSAGE)
        for record in loose:
            self._ignore(record, NO_MESSAGE)
        built: dict[str, _Built] = {}
        for group in groups.values():
            try:
                built[group.key] = _build(group, by_uuid)
            except _NodeError as e:
                yield from self._rejected(path, group, e.node, e.cause)
            except Exception as e:  # a bug: the session is rejected, reading goes on
                yield from self._rejected(path, group, group.first, e)
        _link_subagents(built)
        for key, b in built.items():
            b.metadata["duplicate_uuids"] = duplicates or None
            b.metadata["cycles_cut"] = cycles or None
            b.metadata["persisted_outputs"] = persisted_outputs(path, b.messages) or None
            if b.group.sidechain and path.stem.startswith("agent-"):
                b.metadata["agent_meta"] = agent_meta(path)
            yield from self._emit(path, groups[key], b)

    # --- outcomes ------------------------------------------------------------------------------

    def _ignore(self, record: Record, reason: str) -> None:
        self.tally.skip(reason)
        self.ignored_records.append(record.index)

    def _emit(self, path: Path, group: _Group, built: _Built) -> Iterator[Session | Reject]:
        first = group.first
        session = Session(
            source_format=self.name,
            source_session_id=group.key,
            messages=built.messages,
            key=group.key,
            source_location=str(path),
            source_record=first.index,
            workload="claude-code/subagent" if group.sidechain else "claude-code",
            metadata={k: v for k, v in built.metadata.items() if v is not None},
        )
        try:
            session = self.validated(session)
        except Exception as e:
            where = e.json_path if isinstance(e, RecordError) else "$"
            failing = next(
                (n for n in group.nodes if n.message and where == _where(n.record)), first
            )
            yield from self._rejected(path, group, failing, e)
            return
        self.tally.skip(PART_OF_SESSION, sum(n.message for n in group.nodes) - 1)
        yield session

    def _rejected(
        self, path: Path, group: _Group, failing: _Node, cause: BaseException
    ) -> Iterator[Reject]:
        """The session's message records as rejects: the failing one with the reason."""
        reason, detail = exception_reason(cause)
        where = cause.json_path if isinstance(cause, RecordError) else "$"
        if where.startswith("line "):
            where = "$"
        for node in sorted((n for n in group.nodes if n.message), key=lambda n: n.index):
            if node is failing:
                reject = self.reject(path, node.record, reason, detail, where)
            else:
                said = f"its session {group.key} was rejected ({_where(failing.record)}): {detail}"
                reject = self.reject(path, node.record, reason, said, "$")
            reject.session_id = group.key
            yield reject

    def _no_conversation(
        self, path: Path, nodes: list[_Node], loose: list[Record], rejected: bool
    ) -> Iterator[Reject]:
        """A file without a message: one reject holding the whole file, its other lines
        skipped (where a message record was rejected, that reject says why: lines skipped)."""
        records = sorted([n.record for n in nodes] + loose, key=lambda r: r.index)
        if rejected or not records:
            for record in records:
                self._ignore(record, NO_MESSAGE)
            return
        held = Counter(_label(r.value) for r in records)
        what = ", ".join(f"{n} {k}" for k, n in sorted(held.items()))
        try:
            data, _ = read_text(path)
        except OSError:
            data = b""
        yield Reject(
            source_location=str(path),
            reason="empty_session",
            detail=f"no conversation in the file, only bookkeeping records: {what}",
            raw=data,
            source_format=self.name,
            session_id=next((s for r in records if (s := _sid(r.value))), None),
        )
        for record in records[1:]:
            self._ignore(record, NO_MESSAGE)
        self.ignored_records.append(records[0].index)


# --- detection ---------------------------------------------------------------------------------


#: detection: a file beside the session logs (``claude_code_files``), known by its place
SIDECAR_SCORE = 1.0
#: a message record in its envelope (``sessionId``, ``parentUuid``)
MESSAGE_SCORE = 0.95
#: another record kind with the keys only it has (system, summary, file-history-snapshot)
RECORD_SCORE = 0.9
#: a small bookkeeping record (``_SMALL_TYPES``) with its ``sessionId``
SMALL_RECORD_SCORE = 0.85


#: bookkeeping record types that carry nothing but ``type``, ``sessionId`` and a value or two
_SMALL_TYPES = frozenset(
    {"queue-operation", "permission-mode", "ai-title", "custom-title", "last-prompt",
     "agent-name", "mode"}
)  # fmt: skip


def _record_score(record: Any) -> float:
    return capped(_shape_score(record), record)


def _shape_score(r: Any) -> float:
    """A Claude Code record: its ``type`` with the envelope keys that type has."""
    if not isinstance(r, dict) or not isinstance(r.get("type"), str):
        return 0.0
    kind = r["type"]
    envelope = isinstance(r.get("sessionId"), str) and "parentUuid" in r
    if kind in MESSAGE_TYPES and envelope and isinstance(r.get("message"), dict):
        return MESSAGE_SCORE  # a cut record may lack its ``uuid``: it comes last
    if envelope and isinstance(r.get("uuid"), str) and "isSidechain" in r:
        return RECORD_SCORE  # system, attachment, progress
    if kind == "summary" and isinstance(r.get("summary"), str) and "leafUuid" in r:
        return RECORD_SCORE
    if kind == "file-history-snapshot" and isinstance(r.get("snapshot"), dict):
        return RECORD_SCORE
    if kind in _SMALL_TYPES and isinstance(r.get("sessionId"), str):
        return SMALL_RECORD_SCORE
    return 0.0


# --- reading records ---------------------------------------------------------------------------


def _sid(value: Any) -> str | None:
    sid = value.get("sessionId") if isinstance(value, dict) else None
    return sid if isinstance(sid, str) else None


def _label(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else None
    return kind if isinstance(kind, str) else "untyped"


def _where(record: Record) -> str:
    return f"line {record.line}" if record.line is not None else f"record {record.index}"


def _node(record: Record) -> _Node | None:
    """The record as a tree node, None for bookkeeping outside the tree; a record that claims
    to be a message but cannot be placed raises ``RecordError``."""
    value = expect(record.value, dict, "$", "record")
    kind = value.get("type")
    if kind is None:
        raise RecordError("missing_field", "field 'type' is required", "$")
    kind = expect(kind, str, "$.type", "type")
    is_message = kind in MESSAGE_TYPES or (
        kind == "system" and value.get("subtype") == "local_command"
    )
    uuid = value.get("uuid")
    if not is_message and not isinstance(uuid, str):
        return None
    if uuid is None:
        raise RecordError("missing_field", f"a {kind} record needs its 'uuid'", "$")
    uuid = expect(uuid, str, "$.uuid", "uuid")
    parent = expect(value.get("parentUuid"), (str, type(None)), "$.parentUuid", "parentUuid")
    if parent is None:  # a compaction boundary continues its logical parent
        parent = value.get("logicalParentUuid") if kind != "user" else None
        parent = parent if isinstance(parent, str) else None
    sid = expect(value.get("sessionId"), (str, type(None)), "$.sessionId", "sessionId")
    side = expect(value.get("isSidechain", False), (bool, type(None)), "$.isSidechain")
    if is_message:
        expect(value.get("agentId"), (str, type(None)), "$.agentId", "agentId")
    return _Node(record, value, kind, uuid, parent, sid, bool(side), is_message)


def _link(nodes: list[_Node], by_uuid: dict[str, _Node]) -> int:
    """Set parents and children (a sub-agent record never continues a main one, nor the
    reverse); cut cycles, returning how many were cut."""
    for n in nodes:
        parent = by_uuid.get(n.parent_uuid) if n.parent_uuid is not None else None
        if parent is not None and parent is not n and parent.sidechain == n.sidechain:
            n.parent = parent
    cycles = 0
    state: dict[int, int] = {}  # id(node) -> 1 on the current walk, 2 done
    for n in nodes:
        walk: list[_Node] = []
        cur: _Node | None = n
        while cur is not None and id(cur) not in state:
            state[id(cur)] = 1
            walk.append(cur)
            cur = cur.parent
        if cur is not None and state[id(cur)] == 1:  # came back to this walk: a cycle
            cur.parent = None
            cycles += 1
        for w in walk:
            state[id(w)] = 2
    for n in nodes:
        if n.parent is not None:
            n.parent.children.append(n)
    return cycles


def _tree(root: _Node) -> list[_Node]:
    out: list[_Node] = []
    stack = [root]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(reversed(n.children))
    return out


def _groups(path: Path, nodes: list[_Node]) -> dict[str, _Group]:
    """Sessions of the file by key, in file order: main trees by their newest session id,
    each sub-agent tree by its agent."""
    groups: dict[str, _Group] = {}
    for root in (n for n in nodes if n.parent is None):
        members = _tree(root)
        if not any(n.message for n in members):
            continue  # bookkeeping only: its lines are skipped
        in_order = sorted(members, key=lambda n: n.index)
        sid = next((n.session for n in reversed(in_order) if n.session), None) or path.stem
        agent: str | None = None
        if root.sidechain:
            agent = next(
                (a for n in in_order if isinstance(a := n.value.get("agentId"), str)), None
            )
            key = f"{sid}/agent/{agent or root.uuid}"
        else:
            key = sid
        group = groups.get(key)
        if group is None:
            group = groups[key] = _Group(key, sid, root.sidechain, agent)
        group.roots.append(root)
        group.nodes.extend(members)
    return groups


def _give_loose(
    path: Path, groups: dict[str, _Group], loose: list[Record], by_uuid: dict[str, _Node]
) -> None:
    """Give each bookkeeping record outside the tree to the session it names (by a uuid it
    points at, else by its session id), else to the file's own session."""
    owner: dict[str, _Group] = {id_: g for g in groups.values() for id_ in _uuids(g)}
    mains = [g for g in groups.values() if not g.sidechain]
    default = (
        next((g for g in mains if g.key == path.stem), None) or (mains or [*groups.values()])[0]
    )
    for record in loose:
        value = as_dict(record.value)
        pointed = value.get("leafUuid") or value.get("messageId")
        group = owner.get(pointed) if isinstance(pointed, str) else None
        if group is None:
            sid = _sid(value)
            group = groups.get(sid) if sid is not None else None
        (group or default).extra.append(record)


def _uuids(group: _Group) -> Iterator[str]:
    return (n.uuid for n in group.nodes)


# --- building a session ----------------------------------------------------------------------


@dataclass
class _Built:
    group: _Group
    messages: list[Message]
    metadata: dict[str, Any]
    #: (call id, prompt) of each sub-agent call, in order; agent ids named by their results
    agent_calls: list[tuple[str, Any]] = field(default_factory=list)
    agent_results: dict[str, str] = field(default_factory=dict)
    first_user_text: str | None = None


def _ordered(group: _Group) -> list[tuple[_Node, bool]]:
    """The session's records in conversation order, each with whether it is on an abandoned
    branch: each tree along the branch to its last message record, other branches right after
    the record they left."""
    out: list[tuple[_Node, bool]] = []
    for root in group.roots:
        members = _tree(root)
        leaf = max((n for n in members if n.message), key=lambda n: n.index)
        path: set[int] = set()
        cur: _Node | None = leaf
        while cur is not None:
            path.add(id(cur))
            cur = cur.parent
        stack: list[tuple[_Node, bool]] = [(root, False)]
        while stack:
            node, abandoned = stack.pop()
            out.append((node, abandoned))
            if abandoned:
                stack.extend((c, True) for c in reversed(node.children))
                continue
            main = [c for c in node.children if id(c) in path]
            stack.extend((c, False) for c in main)  # popped after the abandoned branches
            stack.extend((c, True) for c in reversed(node.children) if id(c) not in path)
    return out


def _units(order: list[tuple[_Node, bool]]) -> list[tuple[list[_Node], bool]]:
    """Message records grouped into messages: consecutive assistant records of one response
    (one ``message.id``) on the same branch become one message."""
    units: list[tuple[list[_Node], bool]] = []
    for node, abandoned in order:
        if not node.message:
            continue
        mid = _message_id(node)
        if units and mid is not None:
            last, last_abandoned = units[-1]
            if last_abandoned == abandoned and _message_id(last[-1]) == mid:
                last.append(node)
                continue
        units.append(([node], abandoned))
    return units


def _message_id(node: _Node) -> str | None:
    if node.kind != "assistant":
        return None
    mid = as_dict(node.value.get("message")).get("id")
    return mid if isinstance(mid, str) and mid else None


def _build(group: _Group, by_uuid: dict[str, _Node]) -> _Built:
    order = _ordered(group)
    units = _units(order)
    first_of_tree = {id(_first_message(r)) for r in group.roots}
    messages: list[Message] = []
    unit_at: dict[int, int] = {}  # id(node) -> index of its message
    built = _Built(group, messages, {})
    for nodes, abandoned in units:
        try:
            message = _message(nodes, abandoned, id(nodes[0]) in first_of_tree)
        except Exception as e:
            raise _NodeError(_failing(nodes, e), e) from e
        for n in nodes:
            unit_at[id(n)] = len(messages)
        messages.append(message)
        _collect(built, nodes, message)
    if not any(m.parts for m in messages):
        empty = RecordError("empty_session", "no message of the session holds any content")
        raise _NodeError(group.first, empty)
    sent = _as_sent(messages)
    if sent != list(range(len(messages))):
        at = {old: new for new, old in enumerate(sent)}
        messages[:] = [messages[i] for i in sent]
        unit_at = {node: at[i] for node, i in unit_at.items()}
    built.metadata = _metadata(group, order, messages, unit_at, built, by_uuid)
    return built


def _as_sent(messages: list[Message]) -> list[int]:
    """The order of the messages as the API took them (indexes into ``messages``).

    While a tool runs the user may type, or interrupt it: the CLI records that text (and the
    failed request it may cause, an ``api_error`` message, which is not visible) before the
    tool's result, although the API only accepts the results of a turn's calls first in the
    user message that follows it (the CLI sends consecutive user messages as one). So between
    an assistant message that makes calls and the next visible assistant message, the messages
    holding results go first, the others after them in their order."""
    out: list[int] = []
    i, n = 0, len(messages)
    while i < n:
        m = messages[i]
        out.append(i)
        i += 1
        if not (
            m.visible and m.role == "assistant" and any(p.type == "tool_call" for p in m.parts)
        ):
            continue
        j = i
        while j < n and not (messages[j].visible and messages[j].role == "assistant"):
            j += 1
        run = range(i, j)
        results = [
            k
            for k in run
            if messages[k].visible
            and any(p.type == "tool_call_response" for p in messages[k].parts)
        ]
        out += results + [k for k in run if k not in results]
        i = j
    return out


def _failing(nodes: list[_Node], e: BaseException) -> _Node:
    failing = getattr(e, "node", None)
    return failing if isinstance(failing, _Node) else nodes[0]


class _AtNode(RecordError):
    """A ``RecordError`` that knows its record."""

    def __init__(self, node: _Node, e: RecordError) -> None:
        super().__init__(e.reason, e.detail, e.json_path)
        self.node = node


def _message(nodes: list[_Node], abandoned: bool, first_of_tree: bool) -> Message:
    parts: list[Part] = []
    flags: list[str] = []
    is_error = False
    role = "user"
    for node in nodes:
        try:
            role, node_parts, node_error = _content(node)
        except RecordError as e:
            raise _AtNode(node, e) from e
        parts.extend(node_parts)
        is_error = is_error or node_error
        value = node.value
        for key, flag in (
            ("isMeta", FLAG_CLI_META),
            ("isCompactSummary", FLAG_COMPACTION_SUMMARY),
            ("isApiErrorMessage", FLAG_API_ERROR),
        ):
            if value.get(key) is True and flag not in flags:
                flags.append(flag)
        if node.kind == "system":
            flags.append(FLAG_LOCAL_COMMAND)
    texts = [p.content or "" for p in parts if p.type == "text"]
    if role == "user" and texts:
        if any(t.strip() in INTERRUPTED for t in texts):
            flags.append(FLAG_TURN_ABORTED)
        continued = first_of_tree and texts[0].startswith(CONTINUATION_PREFIX)
        if continued and FLAG_COMPACTION_SUMMARY not in flags:
            flags.append(FLAG_COMPACTION_SUMMARY)
    if abandoned:
        flags.append(FLAG_ABANDONED_BRANCH)
    timestamp, bad = timestamp_of(nodes[0].value.get("timestamp"))
    if bad or any(timestamp_of(n.value.get("timestamp"))[1] for n in nodes[1:]):
        flags.append(FLAG_TIMESTAMP_INVALID)  # the time of a later record of the message too
    usage = None
    if role == "assistant":
        usage = anthropic_usage(as_dict(nodes[-1].value.get("message")).get("usage"))
    return Message(
        role=role,
        parts=tuple(parts),
        is_error=is_error,
        # the CLI's record of a failed request is not what the model said, and not sent again
        visible=not abandoned and FLAG_API_ERROR not in flags,
        flags=tuple(flags),
        usage=usage,
        timestamp=timestamp,
        source_path=_where(nodes[0].record),
    )


def _content(node: _Node) -> tuple[str, list[Part], bool]:
    """The role, parts and error of one message record."""
    value = node.value
    if node.kind == "system":  # a local command and its output, as the CLI showed them
        text = expect(value.get("content"), str, "$.content", "content")
        return "user", ([Part.text(text)] if text else []), False
    message = value.get("message")
    if message is None:
        raise RecordError("missing_field", "field 'message' is required", "$")
    message = expect(message, dict, "$.message", "message")
    if "role" not in message:
        raise RecordError("missing_field", "field 'role' is required", "$.message")
    role = expect(message["role"], str, "$.message.role", "role")
    if role not in MESSAGE_TYPES:
        raise RecordError(
            "unknown_role", f"role {role!r} is not user or assistant", "$.message.role"
        )
    if "content" not in message:
        raise RecordError("missing_field", "field 'content' is required", "$.message")
    content = message["content"]
    if isinstance(content, str):
        return role, ([Part.text(content)] if content else []), False
    expect(content, list, "$.message.content", "content")
    parts: list[Part] = []
    is_error = False
    for i, block in enumerate(content):
        parts.extend(_block_parts(block, f"$.message.content[{i}]"))
        if isinstance(block, dict) and block.get("type") == "tool_result":
            is_error = is_error or block.get("is_error") is True
    return role, parts, is_error


def _collect(built: _Built, nodes: list[_Node], message: Message) -> None:
    """What linking sub-agents needs: the calls that start one, and the agent ids results name."""
    for p in message.calls:
        if p.name in AGENT_TOOLS and p.id:
            try:
                args = json.loads(p.arguments or "{}")
            except ValueError:
                args = {}
            built.agent_calls.append((p.id, as_dict(args).get("prompt")))
    for node in nodes:
        result = node.value.get("toolUseResult")
        agent = as_dict(result).get("agentId")
        ids = [p.id for p in message.responses if p.id]
        if isinstance(agent, str) and ids:
            built.agent_results[ids[0]] = agent
    if built.first_user_text is None and message.role == "user" and message.is_user_turn:
        built.first_user_text = message.text


def _metadata(
    group: _Group,
    order: list[tuple[_Node, bool]],
    messages: list[Message],
    unit_at: dict[int, int],
    built: _Built,
    by_uuid: dict[str, _Node],
) -> dict[str, Any]:
    nodes = [n for n, _ in order]
    in_file = sorted(nodes, key=lambda n: n.index)
    skipped: Counter[str] = Counter()
    unknown: Counter[str] = Counter()
    compactions: list[dict[str, Any]] = []
    pending: dict[str, Any] | None = None
    seen_message = -1
    for node, _ in order:
        if node.message:
            seen_message = unit_at[id(node)]
            if pending is not None and node.value.get("isCompactSummary") is True:
                pending["summary_seq_index"] = seen_message
                pending = None
            continue
        skipped[node.label] += 1
        if node.kind not in BOOKKEEPING:
            unknown[node.kind] += 1
            if seen_message >= 0:
                m = messages[seen_message]
                if FLAG_UNKNOWN_EVENT_KIND not in m.flags:
                    messages[seen_message] = replace(m, flags=(*m.flags, FLAG_UNKNOWN_EVENT_KIND))
        if node.label.endswith("compact_boundary"):
            meta = as_dict(node.value.get("compactMetadata"))
            pending = {
                "kind": "compact_boundary",
                "trigger": meta.get("trigger"),
                "pre_tokens": meta.get("preTokens"),
                "timestamp": node.value.get("timestamp"),
                "summary_seq_index": None,
            }
            compactions.append(pending)
    for i, m in enumerate(messages):
        if FLAG_COMPACTION_SUMMARY in m.flags and not any(
            c["summary_seq_index"] == i for c in compactions
        ):
            compactions.append(
                {"kind": "continued_session", "trigger": None, "pre_tokens": None,
                 "timestamp": m.timestamp, "summary_seq_index": i}
            )  # fmt: skip
    titles: list[dict[str, Any]] = []
    ai_titles: list[str] = []
    mine = {id(n) for n in nodes}
    for record in group.extra:
        value = as_dict(record.value)
        kind = _label(value)
        skipped[kind] += 1
        if kind not in BOOKKEEPING:
            unknown[kind] += 1
        if kind == "summary":
            leaf = value.get("leafUuid")
            target = by_uuid.get(leaf) if isinstance(leaf, str) else None
            titles.append(
                {"title": value.get("summary"), "leaf_uuid": leaf,
                 "resolves": target is not None and id(target) in mine}
            )  # fmt: skip
        elif kind == "ai-title" and isinstance(value.get("aiTitle"), str):
            ai_titles.append(value["aiTitle"])
    models = _distinct(as_dict(n.value.get("message")).get("model") for n in in_file)
    sids = _distinct(n.session for n in in_file)
    costs = [c for n in in_file if isinstance(c := n.value.get("costUSD"), int | float)]
    roots = [unit_at[id(_first_message(r))] for r in group.roots]
    cwds = _distinct(n.value.get("cwd") for n in in_file)
    branches = _distinct(n.value.get("gitBranch") for n in in_file)
    abandoned = sum(FLAG_ABANDONED_BRANCH in m.flags for m in messages)
    return {
        "models": models or None,
        "versions": _distinct(n.value.get("version") for n in in_file) or None,
        "cwd": cwds[0] if cwds else None,
        "cwds": cwds if len(cwds) > 1 else None,
        "git_branches": branches or None,
        "cost_usd": round(sum(costs), 6) if costs else None,
        "continues": [s for s in sids if s != group.sid] or None,
        "titles": titles or None,
        "ai_titles": ai_titles or None,
        "compactions": compactions or None,
        "roots": roots if len(roots) > 1 else None,
        "abandoned_messages": abandoned or None,
        "skipped_records": dict(sorted(skipped.items())) or None,
        "unknown_records": dict(sorted(unknown.items())) or None,
        "tool_results": _tool_results(in_file) or None,
        "agent_id": group.agent,
        "records": sorted(n.index for n in nodes if n.message),
    }


def _first_message(root: _Node) -> _Node:
    return next(n for n in _tree(root) if n.message)


def _distinct(values: Any) -> list[Any]:
    return list(dict.fromkeys(v for v in values if isinstance(v, str) and v))


def _tool_results(nodes: list[_Node]) -> dict[str, Any]:
    """``toolUseResult`` of each tool result, summarised: its keys, size and short values."""
    out: dict[str, Any] = {}
    for node in nodes:
        if "toolUseResult" not in node.value:
            continue
        content = as_dict(node.value.get("message")).get("content")
        ids = [
            b["tool_use_id"]
            for b in (content if isinstance(content, list) else [])
            if isinstance(b, dict)
            and b.get("type") == "tool_result"
            and isinstance(b.get("tool_use_id"), str)
        ]
        if ids:
            out[ids[0]] = _summary(node.value["toolUseResult"])
    return out


def _summary(value: Any) -> dict[str, Any]:
    try:
        size = len(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    except (ValueError, TypeError, RecursionError):
        size = None
    out: dict[str, Any] = {"type": type(value).__name__, "bytes": size}
    if isinstance(value, dict):
        out["keys"] = list(value)[:32]
        short = {k: v for k, v in value.items() if _short(v)}
        if short:
            out["values"] = dict(list(short.items())[:16])
    elif _short(value):
        out["value"] = value
    return out


def _short(v: Any) -> bool:
    if isinstance(v, float):
        return v == v and v not in (float("inf"), float("-inf"))
    return isinstance(v, bool | int) or (isinstance(v, str) and len(v) <= SHORT)


# --- sub-agents ------------------------------------------------------------------------------


def _link_subagents(built: dict[str, _Built]) -> None:
    """Each sub-agent's parent (session and starting call); each parent's sub-agents."""
    mains = [b for b in built.values() if not b.group.sidechain]
    used: set[str] = set()
    for b in built.values():
        group = b.group
        if not group.sidechain:
            continue
        parent: _Built | None = None
        call: str | None = None
        for m in mains:  # the call whose result names this agent
            found = next((c for c, a in m.agent_results.items() if a == group.agent), None)
            if group.agent is not None and found is not None:
                parent, call = m, found
                break
        if call is None and b.first_user_text is not None:  # the call whose prompt it got
            for m in mains:
                found = next(
                    (
                        c
                        for c, prompt in m.agent_calls
                        if prompt == b.first_user_text and c not in used
                    ),
                    None,
                )
                if found is not None:
                    parent, call = m, found
                    break
        if parent is None:
            parent = next((m for m in mains if m.group.key == group.sid), None)
        parent_key = parent.group.key if parent is not None else group.sid
        if call is not None:
            used.add(call)
        b.metadata.update(
            {
                "parent_session_id": session_id_for(
                    Session(FORMAT, parent_key, [], key=parent_key)
                ),
                "parent_source_session_id": parent_key,
                "parent_call_id": call,
                "warmup": True if b.first_user_text == WARMUP_PROMPT else None,
            }
        )
        if parent is not None:
            own = session_id_for(Session(FORMAT, group.key, [], key=group.key))
            parent.metadata.setdefault("subagents", []).append(
                {"agent_id": group.agent, "call_id": call, "session_id": own}
            )
