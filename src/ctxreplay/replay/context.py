"""What the core hands a planner and what it asks of one.

``PrefixContext`` is everything a planner may look at (never the future); ``Planner`` is the
shape the core needs of a policy (``policies.base.Policy`` is the registered implementation), so
the core imports no policy and a planner from anywhere can be replayed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

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

    @property
    def tokens(self) -> int:
        return sum(m.tokens for m in self.messages)


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
