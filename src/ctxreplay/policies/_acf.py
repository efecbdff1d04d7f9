"""Agent-controlled forgetting's harness side: the reminder schedule, the two context tools,
the prefix as the acting model sees it, and the strict reading of a ``context_apply`` call.

Anchor: Franke, agent-controlled forgetting. The acting model gets a reminder once its context
holds about 40,000 text tokens, or as soon as an image is present; the next reminder comes only
after 20,000 new characters or a new image; a new user task starts the schedule again. The
reminder is appended to the outgoing request and never stored. Tool results are shown with
their result ids (``[result r7]``), stable per session and never reused (``r<N>``, N the
session-local call number, see :mod:`._select`).

A replay sees one prefix, so the schedule is simulated along it: every request point (a
position just before an assistant message, and the outgoing request at the end) is checked in
order, as the harness would have. The reminder is due for the case only when the outgoing
request is one of the points where it fires.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Annotated, Any

from pydantic import ConfigDict

from ..datasets.messages import Message
from ..datasets.openai_format import to_openai
from ..llm.structured import NOT_BLANK, Answer, hint, json_schema, read_answer
from ..replay.objects import ObjectIndex
from ..replay.plan import Edit
from . import _select as sel

APPLY = "context_apply"
RECOVER = "context_recover"


class BatchItem(Answer):
    """One result to archive; unknown keys are ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    result_id: Annotated[str, NOT_BLANK] = hint(description="the id shown as [result rN], e.g. r7")
    note: str = hint(
        description=(
            "what stays in place of the result: the facts and exact "
            "identifiers, paths and values you still need"
        )
    )


class ContextApply(Answer):
    """``context_apply``'s arguments. An empty batch is read (and decided on), not refused."""

    batch: list[BatchItem] = hint(minItems=1)


class ContextRecover(Answer):
    """``context_recover``'s arguments."""

    result_id: str = hint(description="the id of the archived result, e.g. r7")


def _tool(name: str, description: str, arguments: type[Answer]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": json_schema(arguments),
        },
    }


TOOLS: list[dict[str, Any]] = [
    _tool(
        APPLY,
        "Archive tool results you no longer need verbatim. Each named result is replaced "
        "in place by your note; its exact original is archived and can be brought back "
        "with context_recover. The batch is applied all or nothing: an unknown, repeated "
        "or already archived result_id rejects the whole batch.",
        ContextApply,
    ),
    _tool(
        RECOVER,
        "Bring back an archived tool result exactly. It is appended as a new tool result "
        "with a new result id; the note stays where it was.",
        ContextRecover,
    ),
]

REMINDER = (
    "[context reminder] Your context now holds about {tokens:,} text tokens{images}. Tool "
    "results you no longer need verbatim can be archived with context_apply: pass a batch of "
    "{{result_id, note}} items, where result_id is the id shown as [result rN] and the note keeps "
    "what you still need from that result (exact identifiers, paths, numbers). Each original is "
    "archived exactly and context_recover(result_id) brings it back. If nothing should be "
    "archived, go on with the task."
)


# --- the reminder schedule ------------------------------------------------------------------


@dataclass(frozen=True)
class Reminder:
    """A reminder the harness shows before request ``at`` (a message index of the prefix; the
    prefix length for the outgoing request)."""

    at: int
    why: str  # tokens | images (first of a task) · new_chars | new_image (the next ones)
    tokens: int  # text tokens in the context at that point
    chars: int
    images: int


def reminder_schedule(
    messages: Sequence[Message], first_tokens: int = 40_000, every_chars: int = 20_000
) -> list[Reminder]:
    """Every reminder the harness would have shown along ``messages``, in order."""
    out: list[Reminder] = []
    tokens = chars = images = 0
    last: tuple[int, int] | None = None  # (chars, images) at the last reminder of this task
    for i in range(len(messages) + 1):
        if i == len(messages) or messages[i].role == "assistant":
            why = None
            if last is None:
                if tokens >= first_tokens:
                    why = "tokens"
                elif images:
                    why = "images"
            elif chars - last[0] >= every_chars:
                why = "new_chars"
            elif images > last[1]:
                why = "new_image"
            if why is not None:
                out.append(Reminder(i, why, tokens, chars, images))
                last = (chars, images)
        if i < len(messages):
            m = messages[i]
            if m.is_user_turn:
                last = None  # a new user task starts the schedule again
            tokens += m.tokens
            chars += m.chars
            images += m.image_count
    return out


def reminder_due(
    messages: Sequence[Message], first_tokens: int = 40_000, every_chars: int = 20_000
) -> Reminder | None:
    """The reminder shown with the outgoing request after ``messages``, if one is due."""
    schedule = reminder_schedule(messages, first_tokens, every_chars)
    if schedule and schedule[-1].at == len(messages):
        return schedule[-1]
    return None


def reminder_text(reminder: Reminder) -> str:
    images = f" and {reminder.images} image{'s' if reminder.images != 1 else ''}"
    return REMINDER.format(tokens=reminder.tokens, images=images if reminder.images else "")


# --- what the acting model sees -------------------------------------------------------------


def label_results(messages: Sequence[Message], index: ObjectIndex) -> list[Message]:
    """``messages`` with each tool result's body opened by its id: ``[result r7]``."""
    handle_by_call = {f.call_id: sel.handle_of(f.id) for f in index.functions()}
    out = []
    for m in messages:
        if not any(p.type == "tool_call_response" and p.id in handle_by_call for p in m.parts):
            out.append(m)
            continue
        parts = [
            replace(p, content=f"[result {handle_by_call[p.id]}]\n{p.content or ''}")
            if p.type == "tool_call_response" and p.id in handle_by_call
            else p
            for p in m.parts
        ]
        out.append(m.with_parts(parts))
    return out


def acting_request(
    messages: Sequence[Message], index: ObjectIndex, reminder: Reminder
) -> list[dict[str, Any]]:
    """The outgoing request: the prefix as the agent saw it, results labelled, and the
    reminder as a last user message (of this request only)."""
    chat = to_openai(label_results(messages, index))
    return [*chat, {"role": "user", "content": reminder_text(reminder)}]


# --- reading the model's call ---------------------------------------------------------------


class ApplyBatchError(ValueError):
    """A ``context_apply`` call whose arguments are not ``{"batch": [{result_id, note}]}``."""


def read_batch(arguments: str) -> list[tuple[str, str]]:
    """``(result_id, note)`` pairs of a context_apply call, read strictly (:class:`ContextApply`)."""
    try:
        doc = json.loads(arguments or "")
    except ValueError:
        raise ApplyBatchError("arguments are not JSON") from None
    answer, problem = read_answer(ContextApply, doc)
    if answer is None:
        raise ApplyBatchError(problem or "not a batch")
    return [(item.result_id.strip(), item.note) for item in answer.batch]


_HANDLE = re.compile(r"r(\d+)")


def batch_edits(index: ObjectIndex, items: Sequence[tuple[str, str]]) -> list[Edit]:
    """One fold per item, with the note kept in place. Ids the index does not know become ids
    that rehearsal refuses with a fitting reason, so the batch is rejected as a whole: ``rN``
    with no such result → ``function:?:N`` (unknown_id); anything that is not a result id →
    ``result:<what was sent>`` (not_target)."""
    edits = []
    for handle, note in items:
        obj = sel.object_for_handle(index, handle)
        if obj is not None:
            target = obj.id
        else:
            m = _HANDLE.fullmatch(handle)
            target = f"function:?:{m.group(1)}" if m else f"result:{handle}"
        edits.append(Edit(target, "fold", note=note, reason=f"{APPLY}:{handle}"))
    return edits


def batch_problem(
    index: ObjectIndex, items: Sequence[tuple[str, str]], archived: set[str], protected: set[str]
) -> str | None:
    """The first reason the study's harness would reject the batch with, in its own words."""
    seen: set[str] = set()
    for handle, _ in items:
        if not _HANDLE.fullmatch(handle):
            return f"{handle!r} is not a tool result id"
        obj = sel.object_for_handle(index, handle)
        if obj is None:
            return f"unknown result id {handle!r}"
        if obj.id in seen:
            return f"duplicate result id {handle!r}"
        if obj.id in archived:
            return f"result id {handle!r} is already archived"
        if obj.id in protected:
            return f"result id {handle!r} belongs to the latest user message"
        seen.add(obj.id)
    return None


def fresh_handle(messages: Sequence[Message]) -> str:
    """The next result id of the session: one past every call made so far (ids are never
    reused, so a recovered original comes back under this new id)."""
    calls = sum(1 for m in messages for p in m.parts if p.type == "tool_call")
    return f"r{calls + 1}"
