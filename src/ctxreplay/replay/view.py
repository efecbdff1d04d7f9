"""Commit: a rehearsed plan applied to a prefix, giving the view the agent would have seen.

Pure: messages and a plan in, a ``View`` out (its messages, where each came from, the archive
payloads a fold created). Nothing is written here; the engine stores archives in the sidecar.

Rules that keep the view a valid provider request:
- a pruned function loses its result *and* its call envelope; an assistant message left with no
  parts is dropped (connective text normalised);
- a prune with a placeholder, a mask, a compaction (``compact.py``: JSON on one line, empty
  fields dropped and counted) and a fold keep the envelope and replace the result body;
- a folded user turn is replaced by one pointer message; a pruned one disappears whole;
- the pointer is a control-plane block (``<ctxreplay:folded …>``), never assistant prose.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from ..datasets.messages import Message, Part
from ..datasets.rows import part_to_row
from ..errors import CtxreplayError
from .compact import compact_json
from .objects import ContextObject, ObjectIndex, part_tokens
from .plan import Edit, Rehearsal

POINTER_FLAG = "ctxreplay_pointer"
SUMMARY_FLAG = "ctxreplay_summary"


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a view message came from: a prefix message (``index``) or a harness block."""

    index: int | None  # position in the prefix, None for synthesized messages
    edited: bool = False
    object_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Archive:
    """An exact payload set aside by a fold, addressed by its sha256."""

    ref: str  # "sha256:<64 hex>"
    object_id: str
    payload: bytes
    pointer_visible: bool = True
    handle: str | None = None  # agent-forgetting result id (r1, r2, ...)

    @property
    def short(self) -> str:
        return short_ref(self.ref)


@dataclass(frozen=True)
class View:
    messages: tuple[Message, ...]
    origins: tuple[Origin, ...]
    archives: tuple[Archive, ...] = ()
    actions: dict[str, str] = field(default_factory=dict)  # object id → committed action
    tokens: int = 0
    prefix_tokens: int = 0

    @property
    def pruning_rate(self) -> float:
        if self.prefix_tokens <= 0:
            return 0.0
        return max(0.0, min(1.0, 1.0 - self.tokens / self.prefix_tokens))

    def text(self) -> str:
        return "\n".join(s for m in self.messages for p in m.parts for s in p.token_texts())


def short_ref(ref: str) -> str:
    return ref[: len("sha256:") + 16]


def archive_payload(obj: ContextObject, messages: Sequence[Message]) -> bytes:
    """Canonical JSON of exactly what the object held: its parts, message by message."""
    entries = []
    for i in obj.messages:
        m = messages[i]
        if obj.kind == "function":
            parts = [
                p
                for p in m.parts
                if p.id == obj.call_id and p.type in ("tool_call", "tool_call_response")
            ]
            if i == obj.result_index and m.role == "tool":
                parts += [p for p in m.parts if p.type in ("blob", "uri", "file")]
        else:
            parts = list(m.parts)
        entries.append({"seq": m.seq, "role": m.role, "parts": [part_to_row(p) for p in parts]})
    doc = {"object_id": obj.id, "kind": obj.kind, "messages": entries}
    return json.dumps(doc, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode(
        "utf-8"
    )


def make_archive(obj: ContextObject, messages: Sequence[Message], **kw: object) -> Archive:
    payload = archive_payload(obj, messages)
    return Archive("sha256:" + hashlib.sha256(payload).hexdigest(), obj.id, payload, **kw)  # type: ignore[arg-type]


def fold_pointer(obj: ContextObject, archive: Archive) -> str:
    what = (
        f"tool result of {obj.tool_name}"
        if obj.kind == "function"
        else f"user turn {obj.turn} and its work"
    )
    return (
        f'<ctxreplay:folded object="{obj.id}" ref="{archive.short}" tokens="{obj.tokens}">'
        f"The {what} was folded out of context. Recover it exactly with "
        f'context_recover("{archive.short}").</ctxreplay:folded>'
    )


def archived_note(handle: str, archive: Archive, note: str) -> str:
    return f'<ctxreplay:archived id="{handle}" ref="{archive.short}">{note}</ctxreplay:archived>'


def mask_text(body: str, head: int, tail: int, count: Callable[[str], int]) -> str:
    """Head and tail kept, the middle replaced by a marker counting what was cut."""
    if head + tail >= len(body):
        return body
    middle = body[head : len(body) - tail]
    marker = (
        f"\n[… {len(middle):,} characters elided ({middle.count(chr(10)) + 1:,} lines, "
        f"{count(middle):,} tokens) …]\n"
    )
    return body[:head] + marker + body[len(body) - tail :]


def identity_view(messages: Sequence[Message]) -> View:
    """The prefix as it is: what a view that edits nothing, or is not committed, holds."""
    tokens = sum(m.tokens for m in messages)
    return View(
        tuple(messages), tuple(Origin(i) for i in range(len(messages))), (), {}, tokens, tokens
    )


def commit(
    rehearsal: Rehearsal,
    messages: Sequence[Message],
    index: ObjectIndex,
    count: Callable[[str], int],
    *,
    handles: dict[str, str] | None = None,
    summary: str | None = None,
) -> View:
    """Apply the accepted edits.

    ``handles`` maps object ids to agent-forgetting result ids (``r1``, ``r2``, ...);
    ``summary`` (Self-GC's above_conversation_summary) is placed after the system prompt.
    """
    edits = {e.object_id: e for e in rehearsal.accepted if e.action != "keep"}
    if not edits:
        return identity_view(messages)
    part_edit: dict[
        tuple[int, str], Part | None
    ] = {}  # (message, "call:id"/"result:id") → new part
    drop_messages: set[int] = set()
    replace_span: dict[int, Message] = {}  # first message of a folded turn → its pointer
    archives: list[Archive] = []
    object_of: dict[int, list[str]] = {}
    for obj in index.objects:
        edit = edits.get(obj.id)
        if edit is None:
            continue
        for i in obj.messages:
            object_of.setdefault(i, []).append(obj.id)
        if obj.kind == "user_turn":
            drop_messages.update(obj.messages)
            if edit.action == "fold":
                archive = make_archive(obj, messages, pointer_visible=edit.route)
                archives.append(archive)
                text = fold_pointer(obj, archive) if edit.route else ""
                if edit.note:
                    text = f"{edit.note}\n{text}" if text else edit.note
                replace_span[obj.messages[0]] = Message(
                    role="user",
                    parts=(Part.text(text),),
                    seq=messages[obj.messages[0]].seq,
                    tokens=count(text) if text else 0,
                    flags=(POINTER_FLAG,),
                )
        else:
            _plan_function_edit(obj, edit, messages, count, part_edit, archives, handles)

    out: list[Message] = []
    origins: list[Origin] = []
    for i, m in enumerate(messages):
        if summary and edits and i == _after_system(messages):
            block = summary_block(summary)
            out.append(
                Message(
                    role="user",
                    parts=(Part.text(block),),
                    seq=m.seq,
                    tokens=count(block),
                    flags=(SUMMARY_FLAG,),
                )
            )
            origins.append(Origin(None, True))
        if i in replace_span:
            out.append(replace_span[i])
            origins.append(Origin(None, True, tuple(object_of.get(i, ()))))
        if i in drop_messages:
            continue
        keys = {p: _part_key(i, p) for p in m.parts}
        if not any(k in part_edit for k in keys.values() if k):
            out.append(m)
            origins.append(Origin(i))
            continue
        new_parts = []
        for p in m.parts:
            k = keys[p]
            if k in part_edit:
                edited = part_edit[k]
                if edited is not None:
                    new_parts.append(edited)
            else:
                new_parts.append(p)
        if m.role == "tool" and not any(p.type == "tool_call_response" for p in new_parts):
            new_parts = []  # media of a pruned tool result goes with it
        if not any(_has_content(p) for p in new_parts):
            continue  # what is left (reasoning, whitespace) is no message a provider takes
        tokens = sum(part_tokens(p, count) for p in new_parts)
        out.append(replace(m, parts=tuple(new_parts), tokens=tokens))
        origins.append(Origin(i, True, tuple(object_of.get(i, ()))))
    actions = {oid: e.action for oid, e in edits.items()}
    view_tokens = sum(m.tokens for m in out)
    prefix_tokens = sum(m.tokens for m in messages)
    return View(tuple(out), tuple(origins), tuple(archives), actions, view_tokens, prefix_tokens)


def summary_block(text: str) -> str:
    return f"<ctxreplay:summary>{text}</ctxreplay:summary>"


def _after_system(messages: Sequence[Message]) -> int:
    i = 0
    while i < len(messages) - 1 and messages[i].role in ("system", "developer"):
        i += 1
    return i


def _part_key(i: int, p: Part) -> tuple[int, str] | None:
    if p.type == "tool_call":
        return (i, "call:" + (p.id or ""))
    if p.type == "tool_call_response":
        return (i, "result:" + (p.id or ""))
    return None


def _plan_function_edit(
    obj: ContextObject,
    edit: Edit,
    messages: Sequence[Message],
    count: Callable[[str], int],
    part_edit: dict[tuple[int, str], Part | None],
    archives: list[Archive],
    handles: dict[str, str] | None,
) -> None:
    call_key = (obj.call_index, "call:" + (obj.call_id or ""))
    result_key = (obj.result_index, "result:" + (obj.call_id or ""))
    result = next(
        p
        for p in messages[obj.result_index].parts
        if p.type == "tool_call_response" and p.id == obj.call_id
    )
    call = next(
        p for p in messages[obj.call_index].parts if p.type == "tool_call" and p.id == obj.call_id
    )
    if edit.action == "prune":
        if edit.placeholder is None:
            part_edit[call_key] = None
            part_edit[result_key] = None
            return
        part_edit[result_key] = replace(result, content=edit.placeholder)
        if edit.clear_inputs:
            part_edit[call_key] = replace(call, arguments="{}")
        return
    if edit.action == "mask":
        body = result.content or ""
        head = edit.head if edit.head is not None else len(body) // 10
        tail = edit.tail if edit.tail is not None else len(body) // 10
        part_edit[result_key] = replace(result, content=mask_text(body, head, tail, count))
        return
    if edit.action == "compact":
        compacted = compact_json(result.content or "")
        if compacted is not None:
            part_edit[result_key] = replace(result, content=compacted)
        return
    if edit.action == "fold":
        handle = (handles or {}).get(obj.id)
        archive = make_archive(obj, messages, handle=handle, pointer_visible=edit.route)
        archives.append(archive)
        if handle is not None:
            text = archived_note(handle, archive, edit.note or "")
        elif edit.route:
            text = fold_pointer(obj, archive) + (f"\n{edit.note}" if edit.note else "")
        else:
            text = edit.note or "[tool result summarised]"
        part_edit[result_key] = replace(result, content=text)


class InvalidViewError(CtxreplayError):
    """A policy's view that is not a valid provider request (``view_problems`` found why)."""

    def __init__(self, policy: str, case_id: str, problems: Sequence[str]) -> None:
        self.policy, self.case_id, self.problems = policy, case_id, tuple(problems)
        super().__init__(
            f"policy {policy} made an invalid view of case {case_id}: " + "; ".join(problems)
        )

    def __reduce__(self) -> tuple[type, tuple[str, str, tuple[str, ...]]]:
        # raised in worker processes: pickled with its own arguments, not the message
        return (type(self), (self.policy, self.case_id, self.problems))


def _has_content(p: Part) -> bool:
    """Whether a part gives the provider something to send (reasoning and blank text do not)."""
    if p.type == "text":
        return bool((p.content or "").strip())
    return p.type != "reasoning"


def view_problems(messages: Sequence[Message]) -> list[str]:
    """Why ``messages`` would not be a valid chat request (empty when it is).

    A provider rejects a message with nothing to send (no parts, or only reasoning and blank
    text), a tool message without a result, a call id used twice, a result whose call is not
    before it (an orphan), a second result for one call, and a call that the messages right
    after it do not answer (OpenAI wants the tool messages next, Anthropic the next user
    message): a message that carries no result while calls are open splits them from their
    results.
    """
    problems: list[str] = []
    pending: dict[str, int] = {}  # open calls: id → the message that made it
    answered: set[str] = set()
    separated: set[str] = set()  # calls already reported as having no result
    for i, m in enumerate(messages):
        if not any(_has_content(p) for p in m.parts):
            problems.append(f"message {i} is empty")
        has_result = any(p.type == "tool_call_response" for p in m.parts)
        if m.role == "tool" and not has_result:
            problems.append(f"message {i}: tool message carries no result")
        if pending and not has_result:
            problems.append(
                f"message {i}: calls {sorted(pending)} have no result before this {m.role} message"
            )
            separated.update(pending)
            pending.clear()
        for p in m.parts:
            cid = p.id or ""
            if p.type == "tool_call":
                if cid in pending or cid in answered or cid in separated:
                    problems.append(f"message {i}: call id {cid} repeated")
                pending[cid] = i
            elif p.type == "tool_call_response":
                if cid in answered:
                    problems.append(f"message {i}: second result for call {cid}")
                elif cid in separated:
                    problems.append(f"message {i}: result for call {cid} is split from its call")
                elif cid not in pending:
                    problems.append(f"message {i}: result for call {cid} that was not made")
                pending.pop(cid, None)
                answered.add(cid)
    if pending:
        problems.append(f"calls {sorted(pending)} have no result")
    return problems
