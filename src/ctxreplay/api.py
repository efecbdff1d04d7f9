"""The library surface: try a policy on a list of messages without a corpus or a run."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from .datasets.messages import Message
from .datasets.tokenizer import get_tokenizer
from .policies.base import Policy, make_policy
from .replay.context import context_for
from .replay.objects import part_tokens
from .replay.outcome import Outcome, replay_case


def replay_messages(
    messages: Sequence[Message], policy: str | Policy, count: Callable[[str], int] | None = None
) -> Outcome:
    """Three-line use: ``replay_messages(prefix, "tool-prune:keep=1").view.messages``.

    Messages without stored token counts get them from ``count`` (default: o200k_base).
    """
    if count is None:
        count = get_tokenizer().count
    counted = [
        m if m.tokens else replace(m, tokens=sum(part_tokens(p, count) for p in m.parts))
        for m in messages
    ]
    return replay_case(make_policy(policy), context_for(counted, count))
