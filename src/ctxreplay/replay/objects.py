"""Context objects: the prefix indexed into addressable units with stable ids.

``conversation:user:K`` is user turn K (1-based) with its execution span — the user's message(s)
and everything up to the next user turn. ``function:<tool>:N`` is one tool call and its result;
N comes from a session-local monotonic allocator (the N-th call of the session), so an object has
the same id in every case cut from the same session. System messages and assistant connective
text are not objects: they are kept, or normalised when a neighbour changes.

Protection: the latest user turn object — the user's own words that the agent is now serving —
is never a valid target. Function objects inside that turn's execution are separate objects and
may be edited (a single-task coding session is one long turn; protecting every call in it would
forbid all context management). Policies decide for themselves how many recent calls to keep.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ..datasets.messages import Message, Part

ObjectKind = Literal["user_turn", "function"]
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]+")


def part_tokens(part: Part, count: Callable[[str], int]) -> int:
    """Tokens of a part: the count the corpus stores for it when ``count`` knows it
    (``PartCounter``), else its texts counted."""
    if isinstance(count, PartCounter):
        return count.part(part)
    return sum(count(s) for s in part.token_texts())


class PartCounter:
    """A token counter that knows the counts the corpus stores for a session's parts: a part
    equal to one of them (every field alike, so the same texts) takes its stored count, and
    anything a policy wrote (a mask, a pointer, a note, a summary) is counted, exactly. Called
    on a string, it counts it."""

    def __init__(self, count: Callable[[str], int], known: Mapping[Part, int]) -> None:
        self.count = count
        self.known = known

    def __call__(self, text: str) -> int:
        return self.count(text)

    def part(self, part: Part) -> int:
        n = self.known.get(part)
        return n if n is not None else sum(self.count(s) for s in part.token_texts())


@dataclass(frozen=True, slots=True)
class ContextObject:
    id: str
    kind: ObjectKind
    #: indexes into the prefix message list: the span of a turn, or (call message, result message)
    messages: tuple[int, ...]
    turn: int  # the user turn this object belongs to (0 before the first user turn)
    tokens: int  # tokens the object holds: a whole span, or a call's arguments plus its result
    tool_name: str | None = None
    call_id: str | None = None
    arguments: str | None = None
    is_error: bool = False
    protected: bool = False
    #: same tool and arguments called again later in the prefix (e.g. the same file re-read)
    superseded_by: str | None = None
    supersedes: str | None = None
    #: the object (turn) whose span holds this function call
    parent: str | None = None
    result_chars: int = 0
    result_tokens: int = 0  # tokens of the result body alone (a function's share of ``tokens``)

    @property
    def call_index(self) -> int:
        return self.messages[0]

    @property
    def result_index(self) -> int:
        return self.messages[-1]


@dataclass(frozen=True)
class ObjectIndex:
    """All objects of a prefix, in order of first message."""

    objects: tuple[ContextObject, ...]
    latest_turn: str | None
    by_id: dict[str, ContextObject] = field(repr=False)

    def __getitem__(self, object_id: str) -> ContextObject:
        return self.by_id[object_id]

    def __contains__(self, object_id: object) -> bool:
        return object_id in self.by_id

    def functions(self) -> list[ContextObject]:
        return [o for o in self.objects if o.kind == "function"]

    def turns(self) -> list[ContextObject]:
        return [o for o in self.objects if o.kind == "user_turn"]


#: roles that always stay in the view (never objects, never editable)
ALWAYS_KEPT_ROLES = ("system", "developer")


def latest_user_message(index: ObjectIndex) -> int | None:
    """Position of the message that carries the latest user turn's own words: no policy may
    change it (its execution span is not protected: policies keep recent calls by their rules)."""
    if index.latest_turn is None:
        return None
    return index[index.latest_turn].messages[0]


def editable_positions(messages: Sequence[Message], index: ObjectIndex) -> list[int]:
    """Prefix positions a policy may change: every message but system/developer ones and the
    one carrying the latest user turn's words (with any tool results it carries)."""
    protected = latest_user_message(index)
    return [i for i, m in enumerate(messages) if i != protected and m.role not in ALWAYS_KEPT_ROLES]


def tool_slug(name: str | None) -> str:
    return _UNSAFE.sub("_", name or "tool") or "tool"


def _args_key(name: str | None, arguments: str | None) -> str:
    try:
        canonical = json.dumps(json.loads(arguments or "{}"), sort_keys=True, separators=(",", ":"))
    except ValueError:
        canonical = arguments or ""
    return f"{name}\0{canonical}"


def build_index(messages: Sequence[Message], count: Callable[[str], int]) -> ObjectIndex:
    """Index a prefix. ``count`` tokenises a string (objects report the tokens they hold)."""
    objects: list[ContextObject] = []
    call_at: dict[
        str, tuple[int, Part, str | None]
    ] = {}  # call id → (message index, part, turn id)
    result_at: dict[str, tuple[int, Part]] = {}
    turn_starts: list[int] = []
    turn = 0
    turn_of: list[int] = []
    for i, m in enumerate(messages):
        if m.is_user_turn:
            turn += 1
            turn_starts.append(i)
        turn_of.append(turn)
        for p in m.parts:
            if p.type == "tool_call" and p.id:
                call_at[p.id] = (i, p, None)
            elif p.type == "tool_call_response" and p.id:
                result_at[p.id] = (i, p)
    # turns
    turn_ids: dict[int, str] = {}
    for k, start in enumerate(turn_starts, start=1):
        end = turn_starts[k] if k < len(turn_starts) else len(messages)
        span = tuple(range(start, end))
        oid = f"conversation:user:{k}"
        turn_ids[k] = oid
        objects.append(
            ContextObject(
                id=oid,
                kind="user_turn",
                messages=span,
                turn=k,
                tokens=sum(messages[j].tokens for j in span),
                protected=k == len(turn_starts),
            )
        )
    # functions, numbered by call order across the session
    n = 0
    family_last: dict[str, int] = {}
    functions: list[ContextObject] = []
    for i, m in enumerate(messages):
        for p in m.parts:
            if p.type != "tool_call" or not p.id:
                continue
            n += 1
            if p.id not in result_at:
                continue  # an unanswered call is not an editable pair
            j, response = result_at[p.id]
            result_tokens = part_tokens(response, count)
            tokens = part_tokens(p, count) + result_tokens
            functions.append(
                ContextObject(
                    id=f"function:{tool_slug(p.name)}:{n}",
                    kind="function",
                    messages=(i, j),
                    turn=turn_of[i],
                    tokens=tokens,
                    tool_name=p.name,
                    call_id=p.id,
                    arguments=p.arguments,
                    is_error=messages[j].is_error,
                    parent=turn_ids.get(turn_of[i]),
                    result_chars=len(response.content or ""),
                    result_tokens=result_tokens,
                )
            )
    # supersession: same tool + same arguments called again later
    linked: list[ContextObject] = list(functions)
    for idx, f in enumerate(functions):
        key = _args_key(f.tool_name, f.arguments)
        if key in family_last:
            prev = family_last[key]
            linked[prev] = _replace(linked[prev], superseded_by=f.id)
            linked[idx] = _replace(linked[idx], supersedes=linked[prev].id)
        family_last[key] = idx
    objects.extend(linked)
    objects.sort(key=lambda o: (o.messages[0], 0 if o.kind == "user_turn" else 1))
    latest = turn_ids.get(len(turn_starts))
    return ObjectIndex(tuple(objects), latest, {o.id: o for o in objects})


def _replace(obj: ContextObject, **changes: object) -> ContextObject:
    from dataclasses import replace

    return replace(obj, **changes)  # type: ignore[arg-type]


def owner_of(index: ObjectIndex) -> dict[int, ContextObject]:
    """Prefix message index → the object that holds it (functions win over their turn)."""
    owner: dict[int, ContextObject] = {}
    for obj in index.objects:
        if obj.kind == "user_turn":
            owner.setdefault(obj.messages[0], obj)
    for obj in index.functions():
        owner[obj.call_index] = obj
        owner[obj.result_index] = obj
    return owner


def current_blocker(index: ObjectIndex) -> str | None:
    """The most recent failed tool call: the state the next steps work around."""
    errors = [f for f in index.functions() if f.is_error]
    return errors[-1].id if errors else None
