"""The library surface: try a policy on a list of messages without a corpus or a run.

>>> from ctxreplay import replay_messages
>>> outcome = replay_messages(messages, "tool-prune:keep=1")  # doctest: +SKIP
>>> outcome.view.messages, outcome.pruning_rate  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from .datasets.importers.openai_chat import messages_from_openai
from .datasets.messages import Message
from .datasets.openai_format import to_openai
from .datasets.rejects import RecordError
from .datasets.responses_format import to_responses_items
from .datasets.tokenizer import get_tokenizer
from .errors import CtxreplayError
from .policies.base import Policy, make_policy
from .replay.context import context_for
from .replay.objects import part_tokens
from .replay.outcome import Outcome, replay_case
from .runs import Run


class MessagesError(CtxreplayError):
    """Messages that are neither canonical ``Message`` objects nor OpenAI chat messages."""


def as_messages(messages: Sequence[Message | Mapping[str, Any]]) -> list[Message]:
    """Canonical messages from canonical ones or from OpenAI chat message dicts (``role``,
    ``content``, ``tool_calls``, ``tool_call_id``), numbered in order."""
    if all(isinstance(m, Message) for m in messages):
        return [m for m in messages if isinstance(m, Message)]
    if not all(isinstance(m, Mapping) for m in messages):
        raise MessagesError("give either Message objects or OpenAI chat message dicts, not both")
    try:
        return messages_from_openai([dict(m) for m in messages], "$")  # type: ignore[arg-type]
    except RecordError as e:
        raise MessagesError(f"{e.json_path}: {e.detail}") from None


def replay_messages(
    messages: Sequence[Message | Mapping[str, Any]],
    policy: str | Policy,
    count: Callable[[str], int] | None = None,
) -> Outcome:
    """One prefix through one policy: ``replay_messages(messages, "tool-prune:keep=1")``.

    ``messages`` are canonical ``Message`` objects or plain OpenAI chat message dicts; messages
    without stored token counts are counted with ``count`` (default: tiktoken o200k_base).
    Returns an :class:`~ctxreplay.replay.outcome.Outcome`: ``.view.messages`` (the view, as
    canonical messages), ``.pruning_rate`` (share of the prefix's tokens removed),
    ``.committed`` and ``.commit_reason``, ``.plan`` and ``.rehearsal`` (what was proposed and
    what survived, with the reasons edits were dropped).
    """
    if count is None:
        count = get_tokenizer().count
    counted = [
        m if m.tokens else replace(m, tokens=sum(part_tokens(p, count) for p in m.parts))
        for m in as_messages(messages)
    ]
    return replay_case(make_policy(policy), context_for(counted, count))


def view_as_openai(outcome: Outcome) -> list[dict[str, Any]]:
    """The view of an outcome as OpenAI chat messages, ready to send to a provider."""
    return to_openai(outcome.view.messages)


def view_request(
    run: Run,
    case_id: str,
    policy: str,
    shape: str = "openai-chat",
    view: Sequence[Message] | None = None,
) -> dict[str, Any]:
    """The exact view of a replayed case as a request body a real API takes: chat
    ``{"messages": [...]}`` (``openai-chat``) or Responses ``{"input": [...]}``
    (``openai-responses``). Add ``model`` (and ``tools``) and send it."""
    view = run.load_view(case_id, policy) if view is None else view  # given: already read
    if shape == "openai-chat":
        return {"messages": to_openai(view)}
    if shape == "openai-responses":
        return {"input": to_responses_items(view)}
    raise CtxreplayError(f"unknown request shape {shape!r}; use openai-chat or openai-responses")
