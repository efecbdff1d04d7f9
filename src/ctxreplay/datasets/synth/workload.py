"""The base of every workload script: one instance builds one session, one method per step.

A workload subclass keeps the world it draws (paths, ids, figures) and the steps it has taken
(the messages later steps point back at) as attributes, so each step is a short method. What the
five workloads do the same way lives here: the system prompt with the tool schemas, reading back
a payload the harness truncated (right away or when the user asks), reporting a live value now or
in the closing message, and honouring the user's constraints.

Every step draws from the session's ``random.Random`` in a fixed order; the same seed must keep
giving the same bytes, so a refactor may move code between methods but never reorder draws.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from .anchor_pool import AnchorPool
from .builder import Rule, SessionBuilder, Step
from .common import TRUNCATION_NOTE, numbered_slice, tools_block


class Unusable(Exception):
    """This draw cannot plant its dependencies; the script returns the reason as its task.

    The coverage check then rejects the session and the next sub-seed is tried.
    """


@dataclass(frozen=True, slots=True)
class Truncated:
    """A tool result the harness cut: where it saved the full payload and what that holds."""

    route: str
    source_seq: int
    lines: Sequence[str]
    keep: int  # lines shown before the cut; reading back starts here


@dataclass(frozen=True, slots=True)
class ReadBack:
    """How the agent reads a truncated payload back: right away, or once the user asks.

    With ``ask`` empty the agent reads at once; otherwise it first says ``before``, the user asks
    ``ask``, and then the agent reads. ``text`` leads the read_file call (None for no lead),
    ``note`` is the ground-truth note, ``reply`` what the agent reports after reading.
    """

    text: str | None
    note: str
    reply: str
    before: str = ""
    ask: str = ""


class Workload(ABC):
    """A session script: ``build`` calls the steps in order and returns the task description."""

    NAME: ClassVar[str]
    TOOLS: ClassVar[Sequence[dict[str, Any]]]

    def __init__(self, b: SessionBuilder) -> None:
        self.b = b
        self.rng: random.Random = b.rng
        self.pool: AnchorPool = b.pool
        #: a live value kept for the closing message: (value, seq of the result that shows it)
        self.deferred_live: tuple[str, int] | None = None

    @classmethod
    def script(cls, b: SessionBuilder) -> str:
        """Drive ``b`` through one session; the task description, or why the draw is unusable."""
        try:
            return cls(b).build()
        except Unusable as reason:
            return str(reason)

    @abstractmethod
    def build(self) -> str:
        """The session's steps in order; returns the task description."""

    # --- shared steps -----------------------------------------------------------------------
    def system(self, intro: str, appendix: str = "") -> int:
        """The system prompt: the role, the truncation note, the tool schemas, then ``appendix``."""
        return self.b.system(
            f"{intro}\n{TRUNCATION_NOTE}\n\n# Tools\n{tools_block(self.TOOLS)}{appendix}"
        )

    def recover(self, cut: Truncated, note: str, text: str | None = None) -> Step:
        """Read the rest of a truncated payload from its saved route and plant the routing."""
        rest = len(cut.lines) - cut.keep
        step = self.b.call(
            "read_file",
            {"path": cut.route, "offset": cut.keep, "limit": rest},
            numbered_slice(cut.lines, cut.keep, rest),
            text=text,
        )
        self.b.plant("recovery_routing", cut.route, cut.source_seq, step.call_seq, note)
        return step

    def read_back(
        self, cut: Truncated, how: ReadBack, ask: Callable[[str], int] | None = None
    ) -> None:
        """Read a truncated payload back as ``how`` says; ``ask`` writes the user's question."""
        if how.ask:
            self.b.say(how.before)
            (ask or self.b.user)(how.ask)
        self.recover(cut, how.note, how.text)
        self.b.say(how.reply)

    def report_live(self, value: str, source_seq: int, now: str, note: str, deferred: str) -> None:
        """Half the time report the latest live ``value`` at once; else keep it for the close."""
        if self.rng.random() < 0.5:
            n = self.b.say(now)
            self.b.plant("live_state", value, source_seq, n, note)
        else:
            self.b.say(deferred)
            self.deferred_live = (value, source_seq)

    def live_line(self, template: str, **values: str) -> str:
        """``template`` with the kept live value as ``{value}``; "" when none was kept."""
        if self.deferred_live is None:
            return ""
        return template.format(value=self.deferred_live[0], **values)

    def plant_deferred_live(self, need_seq: int, note: str) -> None:
        """Plant the live value ``report_live`` kept, now that the closing message uses it."""
        if self.deferred_live is not None:
            value, source_seq = self.deferred_live
            self.b.plant("live_state", value, source_seq, need_seq, note)

    def honours(self, contracts: Sequence[Rule]) -> str:
        """The sentences honouring ``contracts`` and, when it is due, the standing rule."""
        return " ".join([*(c.honour for c in contracts), self.b.rule_honour()]).strip()

    def plant_contract(self, contract: Rule, turn: int, need_seq: int) -> None:
        """Record a first-turn constraint as honoured by message ``need_seq``."""
        self.b.plant(
            "behavioural_contract",
            contract.anchor,
            turn,
            need_seq,
            f"user constraint: {contract.sentence}",
        )

    def close(self, contracts: Sequence[Rule], turn: int, need_seq: int) -> None:
        """The closing message honours ``contracts`` (from ``turn``) and the standing rule."""
        for c in contracts:
            self.plant_contract(c, turn, need_seq)
        self.b.plant_rule(need_seq)
