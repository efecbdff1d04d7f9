"""What the core hands a planner and what it asks of one.

``PrefixContext`` is everything a planner may look at (never the future); ``Planner`` is the
shape the core needs of a policy (``policies.base.Policy`` is the registered implementation), so
the core imports no policy and a planner from anywhere can be replayed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

from ..datasets.messages import Message
from .objects import ObjectIndex, build_index

if TYPE_CHECKING:
    from .plan import Plan, Rehearsal
    from .view import View


@dataclass(frozen=True)
class PrefixContext:
    """Everything a planner may look at: the prefix, its objects, a token counter."""

    case_id: str
    session_id: str
    messages: tuple[Message, ...]
    index: ObjectIndex
    count: Callable[[str], int]
    #: the summary the agent really replaced this context with, when the trace records a
    #: compaction at this cut (what ``recorded`` replays; no other planner reads it)
    recorded_compaction: str | None = None
    #: what planners found of the session's own texts, shared by every case of the session the
    #: engine replays (keys name what they hold and the part or text they were found in, so an
    #: entry holds for any case that has that part)
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def tokens(self) -> int:
        return sum(m.tokens for m in self.messages)

    @cached_property
    def text(self) -> PrefixText:
        """Every text of the prefix a tokenizer reads, joined once per case (searched by
        planners that ask whether a string appears anywhere else)."""
        return PrefixText.of(self.messages)


@dataclass(frozen=True)
class PrefixText:
    """The prefix's texts joined by newlines, and where each part's texts are in it."""

    text: str
    spans: dict[tuple[int, int], tuple[int, int]]  # (message, part) → (start, end)

    @classmethod
    def of(cls, messages: Sequence[Message]) -> PrefixText:
        pieces: list[str] = []
        spans: dict[tuple[int, int], tuple[int, int]] = {}
        at = 0
        for i, m in enumerate(messages):
            for k, p in enumerate(m.parts):
                start = at
                for s in p.token_texts():
                    pieces.append(s)
                    at += len(s) + 1
                spans[(i, k)] = (start, max(start, at - 1))
        return cls("\n".join(pieces), spans)

    def elsewhere(self, needle: str, skip: Sequence[tuple[int, int]]) -> bool:
        """Whether ``needle`` (no newline in it) occurs in a text of any part but ``skip``."""
        if not needle:
            return False
        holes = sorted(self.spans[k] for k in skip if k in self.spans)
        text, pos = self.text, self.text.find(needle)
        while pos != -1:
            hole = next(((a, b) for a, b in holes if a <= pos < b), None)
            if hole is None:
                return True
            pos = text.find(needle, hole[1])
        return False


@dataclass(frozen=True)
class CommitDecision:
    commit: bool
    reason: str


class Planner(Protocol):
    """What ``replay_case`` needs of a policy."""

    @property
    def label(self) -> str: ...

    def plan(self, ctx: PrefixContext) -> Plan: ...

    def handles(self, ctx: PrefixContext) -> dict[str, str] | None: ...

    def decide(
        self, ctx: PrefixContext, rehearsal: Rehearsal, view: View, plan: Plan
    ) -> CommitDecision: ...


def context_for(
    messages: Sequence[Message],
    count: Callable[[str], int],
    case_id: str = "case",
    session_id: str = "session",
) -> PrefixContext:
    prefix = tuple(m for m in messages if m.visible)
    return PrefixContext(case_id, session_id, prefix, build_index(prefix, count), count)
