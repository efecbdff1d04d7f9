"""Plans and rehearsal: what a policy proposes, and what the harness lets through.

Rehearsal validates and normalises a plan before anything changes: unknown ids, a second action
on one object, actions on things that are not objects, edits of the protected latest user turn,
edits overlapping an object already edited, masks where there is no body to mask, and edits that
would split a tool call from its result are dropped, each with its reason. In all-or-nothing mode
(agent-controlled forgetting) any such problem rejects the whole batch and nothing changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from .objects import ContextObject, ObjectIndex

Action = Literal["keep", "fold", "mask", "prune", "compact"]
ACTIONS: tuple[str, ...] = ("keep", "fold", "mask", "prune", "compact")

#: why rehearsal dropped an edit
DROP_REASONS = {
    "unknown_id": "no object with this id in the prefix",
    "duplicate": "the same action on this object was already planned",
    "conflict": "another action on this object was already planned",
    "not_target": "system and assistant connective text are not editable objects",
    "protected": "the latest user turn is never edited",
    "overlap": "the object lies inside (or contains) an object already edited",
    "not_applicable": "this action does not apply to this kind of object",
    "split_pair": "the edit would separate a tool call from its result",
    "bad_action": "the action is not one of keep, fold, mask, prune",
}


@dataclass(frozen=True, slots=True)
class Edit:
    """One proposed action on one object.

    ``note`` is kept in place of a folded body (agent-controlled forgetting); ``placeholder``
    turns a prune into a clear that keeps the call envelope (Anthropic's context editing,
    JetBrains' observation masking); ``head``/``tail`` are the characters a mask keeps.
    """

    object_id: str
    action: str
    note: str | None = None
    placeholder: str | None = None
    clear_inputs: bool = False
    head: int | None = None
    tail: int | None = None
    #: a fold normally leaves a pointer naming its archive; False folds into a summary with no
    #: visible recovery route (JetBrains-style summaries), which judges count as lost
    route: bool = True
    reason: str | None = None  # the planner's own reason, for the audit


@dataclass(frozen=True, slots=True)
class BudgetOutcome:
    """What a plan made of the need its ``target``/``budget`` set: the tokens to remove, the
    tokens planned, whether that is enough, and why not (``policies.budget``)."""

    need: int
    planned: int
    met: bool
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class PlannerReport:
    """A model planner's bookkeeping for the figures' ``planner_*`` columns. ``usd`` is what the
    call costs at the tariff even when our cache served it (the L_GC term of Self-GC)."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    usd: float | None = None
    prompt_hash: str | None = None
    params_sent: dict[str, Any] | None = None
    cache_hit: bool | None = None


@dataclass(frozen=True)
class Plan:
    edits: tuple[Edit, ...] = ()
    all_or_nothing: bool = False
    #: Self-GC's above_conversation_summary, when the planner wrote one
    summary: str | None = None
    #: the budget record, when a target or budget is set
    budget: BudgetOutcome | None = None
    #: a model planner's call, when one was made
    planner: PlannerReport | None = None
    #: why the policy edits nothing whatever the need (a trigger not reached, too little freed)
    no_edit: str | None = None
    #: the policy's own details (what it summarised, the calls it parsed, ...), read by tests
    #: and people, never by the engines
    meta: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def of(*edits: Edit, **kw: Any) -> Plan:
        return Plan(tuple(edits), **kw)


@dataclass(frozen=True, slots=True)
class Dropped:
    edit: Edit
    reason: str
    detail: str = ""


@dataclass(frozen=True)
class Rehearsal:
    """What commit will apply, and what was refused."""

    accepted: tuple[Edit, ...]
    dropped: tuple[Dropped, ...]
    batch_rejected: str | None = None  # all-or-nothing plans: the first problem
    estimated_saving: int = 0  # tokens the accepted edits should remove (before pointers)
    touched_latest_turn: bool = False

    @property
    def is_empty(self) -> bool:
        return not any(e.action != "keep" for e in self.accepted)


def _span(obj: ContextObject) -> set[int]:
    return set(obj.messages) if obj.kind == "user_turn" else set()


def rehearse(plan: Plan, index: ObjectIndex) -> Rehearsal:
    seen: dict[str, Edit] = {}
    accepted: list[Edit] = []
    dropped: list[Dropped] = []
    edited = _Edited()
    touched_latest = False

    def drop(edit: Edit, reason: str, detail: str = "") -> None:
        dropped.append(Dropped(edit, reason, detail))

    for edit in plan.edits:
        obj = index.by_id.get(edit.object_id)
        if edit.action not in ACTIONS:
            drop(edit, "bad_action", repr(edit.action))
            continue
        if obj is None:
            looks_like_object = edit.object_id.startswith(("conversation:user:", "function:"))
            drop(edit, "unknown_id" if looks_like_object else "not_target", edit.object_id)
            continue
        if (
            obj.protected
            or (obj.kind == "user_turn" and obj.id == index.latest_turn)
            or _in_latest_user_message(obj, index)
        ):
            touched_latest = touched_latest or edit.action != "keep"
            if edit.action != "keep":
                drop(edit, "protected", obj.id)
                continue
        if edit.object_id in seen:
            same = seen[edit.object_id].action == edit.action
            drop(
                edit, "duplicate" if same else "conflict", f"already {seen[edit.object_id].action}"
            )
            continue
        seen[edit.object_id] = edit
        if edit.action == "keep":
            accepted.append(edit)
            continue
        if edit.action in ("mask", "compact") and obj.kind != "function":
            drop(edit, "not_applicable", f"{edit.action} applies to tool results")
            continue
        clash = edited.overlap(obj)
        if clash is not None:
            drop(edit, "overlap", f"with {clash}")
            continue
        if obj.kind == "user_turn" and _splits_pair(obj, index):
            drop(edit, "split_pair", "a call in this turn is answered outside it")
            continue
        accepted.append(edit)
        edited.add(obj)
    rejected = None
    if plan.all_or_nothing and dropped:
        first = dropped[0]
        rejected = f"{first.reason}: {first.edit.object_id}"
        dropped = [*dropped, *(Dropped(e, "batch_rejected", rejected) for e in accepted)]
        accepted = []
    saving = sum(_saving(index[e.object_id], e) for e in accepted if e.action != "keep")
    return Rehearsal(tuple(accepted), tuple(dropped), rejected, saving, touched_latest)


class _Edited:
    """The objects a rehearsal accepted so far, by where they are: a function clashes with an
    edited turn whose span holds its call, a turn with the first edited function it holds."""

    def __init__(self) -> None:
        self.turn_at: dict[
            int, str
        ] = {}  # message → the edited turn holding it (turns are disjoint)
        self.calls: list[tuple[int, str]] = []  # edited functions' call messages, in order

    def add(self, obj: ContextObject) -> None:
        if obj.kind == "user_turn":
            for i in obj.messages:
                self.turn_at.setdefault(i, obj.id)
        else:
            self.calls.append((obj.call_index, obj.id))

    def overlap(self, obj: ContextObject) -> str | None:
        if obj.kind == "function":
            return self.turn_at.get(obj.call_index)
        span = _span(obj)
        return next((oid for i, oid in self.calls if i in span), None)


def _in_latest_user_message(obj: ContextObject, index: ObjectIndex) -> bool:
    """A function whose result sits in the message carrying the latest user turn's words
    (Anthropic keeps tool results in user messages): editing it would change that message."""
    if obj.kind != "function" or index.latest_turn is None:
        return False
    return index[index.latest_turn].messages[0] in (obj.call_index, obj.result_index)


def _splits_pair(turn: ContextObject, index: ObjectIndex) -> bool:
    span = set(turn.messages)
    return any((f.call_index in span) != (f.result_index in span) for f in index.functions())


def _saving(obj: ContextObject, edit: Edit) -> int:
    if edit.action in ("prune", "fold"):
        return obj.tokens
    if edit.action == "mask":
        kept = (edit.head or 0) + (edit.tail or 0)
        return int(obj.tokens * max(0.0, 1 - kept / max(obj.result_chars, 1)))
    return 0  # a compaction's saving depends on the body: counted once the view is committed


class PlannerError(RuntimeError):
    """A planner could not produce a plan (timeout, refusal, unparseable output).

    The harness leaves the prefix unchanged for that case and records the failure: never a
    silent keep-all. A model planner's error carries what the failed call cost (``report``)
    and the planner's details (``meta``), since the tokens were spent all the same.
    """

    meta: dict[str, Any] = {}  # noqa: RUF012 - read only; a subclass sets its own per error
    report: PlannerReport | None = None
