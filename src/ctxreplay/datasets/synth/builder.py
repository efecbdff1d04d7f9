"""Builds one synthetic session: messages in order, fresh call ids, planted dependencies.

A workload script drives a ``SessionBuilder``: ``system``, ``user``, ``say`` (assistant text),
``call``/``parallel`` (an assistant message with tool calls followed by one ``tool`` message per
result). Each method returns the index (``seq``) of what it appended, so a script records a
dependency with ``plant(category, anchor, source_seq, need_seq, note)`` once it writes the message
that needs the anchor.

Standing rules: besides the constraints of its first turn, every session has one ``Rule`` that the
user adds mid-session ("From now on, never push directly to main."). A script hands it to
``standing_rule`` early; the builder appends its sentence to the user turn it draws (the 2nd to
4th), and the script honours it later with ``rule_honour()`` in an assistant message that it
passes to ``plant_rule``. Policies that keep the first and the latest user turn can still drop
that turn, so it is the contract whose loss a judge can be calibrated on.

``check_dependencies`` is the generator's own proof of the ground-truth invariants (I1–I4 of the
design): a session that fails it is thrown away and rebuilt from the next sub-seed, so a written
corpus only ever holds rows that satisfy them. The tests check the same invariants with code of
their own.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, overload

from ...schema import CATEGORIES
from ..messages import Message, Part, Session, dumps_arguments
from .anchor_pool import ALNUM, AnchorPool, json_safe, trivial

#: How a harness announces where it saved a payload it truncated.
ROUTE = re.compile(r"saved to (/\S+?)(?=[\]\s)]|$)")
#: Categories whose anchor must come from a plain, first-of-its-kind tool result.
PLAIN_SOURCE = ("evidence_detail", "locator_handle", "verbatim_source")
#: The user turns a standing rule may be added in (1 is the first user turn).
RULE_TURNS = (2, 4)
#: Words that mark a sentence as a standing constraint (those the anchor judge looks for).
CONSTRAINT_WORD = re.compile(
    r"\b(never|always|do not|don't|must|make sure|only|avoid|without|keep the|from now on|"
    r"at most|at least|no more than|instead of|stick to)\b",
    re.IGNORECASE,
)
#: Words too common to make a contract's key phrase distinctive.
_PLAIN_WORDS = frozenset(
    [
        "the",
        "and",
        "any",
        "all",
        "you",
        "your",
        "our",
        "not",
        "for",
        "with",
        "from",
        "that",
        "this",
        "are",
        "was",
        "has",
        "have",
        "its",
    ]
)
#: A verbatim span is at least this long and sits at least this far from both ends of its body.
VERBATIM_MIN_CHARS = 60
VERBATIM_MIN_EDGE = 0.30


@dataclass(frozen=True, slots=True)
class Dep:
    """One planted dependency: ``anchor`` from message ``source_seq`` is needed by ``need_seq``."""

    category: str
    anchor: str
    source_seq: int
    need_seq: int
    note: str


@dataclass(frozen=True, slots=True)
class Rule:
    """A constraint the user states and the agent later honours.

    Both kinds of ``behavioural_contract`` use it: a constraint of the first user turn and the
    standing rule a user adds mid-session.
    """

    sentence: str  # the user's words: one sentence with a constraint word (never, from now on, ...)
    anchor: str  # its key phrase, verbatim in ``sentence`` and in ``honour``
    honour: str  # an assistant sentence that acts on the rule, quoting ``anchor``

    def format(self, **values: Any) -> Rule:
        """The rule with ``{placeholders}`` filled (the same values in all three texts)."""
        return Rule(*(s.format(**values) for s in (self.sentence, self.anchor, self.honour)))


@dataclass(frozen=True, slots=True)
class Step:
    """What one assistant step appended: the call message and its result messages."""

    call_seq: int
    result_seqs: tuple[int, ...]
    call_ids: tuple[str, ...]

    @property
    def result_seq(self) -> int:
        return self.result_seqs[0]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call of a ``parallel`` step and the result the harness returns."""

    name: str
    arguments: dict[str, Any]
    result: str
    error: bool = False


@dataclass
class SessionBuilder:
    """Appends a session's messages in order and records what they plant."""

    rng: random.Random
    workload: str
    messages: list[Message] = field(default_factory=list)
    deps: list[Dep] = field(default_factory=list)

    def __post_init__(self) -> None:
        #: a session-wide size factor, so the corpus has a tail of long sessions
        self.scale = self.rng.choice((1.0, 1.0, 1.0, 1.35, 1.7))
        self.pool = AnchorPool(self.rng)
        self._call_ids: set[str] = set()
        self._carry: list[tuple[str, tuple[str, str, int, str] | None]] = []
        self._user_turns = 0
        self.rule: Rule | None = None
        self._rule_turn = 0
        #: the user message that added the standing rule (None until it is written)
        self.rule_seq: int | None = None
        self._rule_planted = False
        start = datetime(2025, 1, 6, 8, 0, 0) + timedelta(
            days=self.rng.randint(0, 300), minutes=self.rng.randint(0, 600)
        )
        self._clock = start

    def size(self, lo: int, hi: int, cap: int | None = None) -> int:
        """A length drawn from ``[lo, hi]`` times the session's scale (at most ``cap``)."""
        n = int(self.rng.randint(lo, hi) * self.scale)
        return min(n, cap) if cap is not None else n

    # --- appending ----------------------------------------------------------------------

    def _stamp(self, seconds: tuple[int, int]) -> str:
        self._clock += timedelta(seconds=self.rng.randint(*seconds))
        return self._clock.strftime("%Y-%m-%dT%H:%M:%SZ")

    def _append(self, m: Message) -> int:
        self.messages.append(m)
        return len(self.messages) - 1

    def system(self, text: str) -> int:
        """The system prompt (the first message)."""
        return self._append(Message("system", (Part.text(text),), timestamp=self._stamp((0, 0))))

    def user(self, text: str) -> int:
        """A user turn; the turn drawn for the standing rule also states the rule."""
        self._user_turns += 1
        adds = self.rule if self._user_turns == self._rule_turn else None
        if adds is not None:
            text = f"{text} {adds.sentence}"
        seq = self._append(Message("user", (Part.text(text),), timestamp=self._stamp((20, 400))))
        if adds is not None:
            self.rule_seq = seq
        return seq

    # --- the standing rule ----------------------------------------------------------------
    def standing_rule(self, rule: Rule) -> None:
        """Add ``rule`` to a later user turn, drawn from ``RULE_TURNS``; call before that turn."""
        if self._user_turns >= RULE_TURNS[0]:
            raise RuntimeError("standing_rule must be set before the second user turn")
        self.rule = rule
        self._rule_turn = self.rng.randint(*RULE_TURNS)

    def rule_due(self) -> bool:
        """The rule was added, a full user turn has followed, and nothing honoured it yet."""
        return (
            self.rule_seq is not None
            and not self._rule_planted
            and self.user_turns_since(self.rule_seq) >= 1
        )

    def rule_honour(self) -> str:
        """The honouring sentence when the rule is due (else ""); pass the message to
        ``plant_rule``."""
        return self.rule.honour if self.rule is not None and self.rule_due() else ""

    def plant_rule(self, need_seq: int) -> None:
        """Record the rule as a behavioural contract needed by message ``need_seq``."""
        if self.rule is None or self.rule_seq is None or self._rule_planted:
            return
        self._rule_planted = True
        self.plant(
            "behavioural_contract",
            self.rule.anchor,
            self.rule_seq,
            need_seq,
            f"standing rule added in user turn {self._rule_turn}: {self.rule.sentence}",
        )

    def say(self, text: str) -> int:
        """An assistant message with text only (ends the agent's turn, or narrates)."""
        text = self._carried(text)
        seq = self._append(Message("assistant", (Part.text(text),), timestamp=self._stamp((3, 40))))
        self._plant_carried(seq)
        return seq

    def answer_next(self, text: str, plant: tuple[str, str, int, str] | None = None) -> None:
        """Open the next assistant message with ``text`` (answering a question the user just
        asked); ``plant`` = (category, anchor, source_seq, note) is recorded with that message
        as its need."""
        self._carry.append((text, plant))

    @overload
    def _carried(self, text: str) -> str: ...
    @overload
    def _carried(self, text: str | None) -> str | None: ...
    def _carried(self, text: str | None) -> str | None:
        """``text`` led by any answers ``answer_next`` queued for this message."""
        if not self._carry:
            return text
        lead = " ".join(t for t, _ in self._carry)
        return f"{lead} {text}" if text else lead

    def _plant_carried(self, seq: int) -> None:
        for _, plant in self._carry:
            if plant is not None:
                self.plant(plant[0], plant[1], plant[2], seq, plant[3])
        self._carry = []

    def call_id(self) -> str:
        while True:
            cid = "call_" + "".join(self.rng.choice(ALNUM) for _ in range(24))
            if cid not in self._call_ids:
                self._call_ids.add(cid)
                return cid

    def parallel(self, calls: Sequence[ToolCall], text: str | None = None) -> Step:
        """One assistant message making ``calls``, then one tool message per result, in order."""
        ids = tuple(self.call_id() for _ in calls)
        text = self._carried(text)
        parts: list[Part] = [Part.text(text)] if text else []
        parts.extend(Part.call(i, c.name, c.arguments) for i, c in zip(ids, calls, strict=True))
        call_seq = self._append(Message("assistant", tuple(parts), timestamp=self._stamp((2, 30))))
        self._plant_carried(call_seq)
        results = tuple(
            self._append(
                Message(
                    "tool",
                    (Part.response(i, c.result, name=c.name),),
                    is_error=c.error,
                    timestamp=self._stamp((1, 25)),
                )
            )
            for i, c in zip(ids, calls, strict=True)
        )
        return Step(call_seq, results, ids)

    def call(
        self,
        name: str,
        arguments: dict[str, Any],
        result: str,
        *,
        text: str | None = None,
        error: bool = False,
    ) -> Step:
        """A single tool call and its result."""
        return self.parallel([ToolCall(name, arguments, result, error)], text)

    def seen(self, text: str) -> bool:
        """True when ``text`` already occurs in some message of the session."""
        return any(text in s for m in self.messages for s in message_strings(m))

    def occurrences(self, text: str) -> int:
        """How many messages so far hold ``text``."""
        return sum(1 for m in self.messages if any(text in s for s in message_strings(m)))

    def user_turns_since(self, seq: int) -> int:
        """How many user turns were appended after message ``seq``."""
        return sum(1 for m in self.messages[seq + 1 :] if m.is_user_turn)

    # --- ground truth -----------------------------------------------------------------------
    def plant(self, category: str, anchor: str, source_seq: int, need_seq: int, note: str) -> None:
        """Record a dependency once the message that needs the anchor is written."""
        if category not in CATEGORIES:
            raise ValueError(f"unknown category {category!r}")
        self.deps.append(Dep(category, anchor, source_seq, need_seq, note))

    def rows(self, session_id: str) -> list[dict[str, Any]]:
        """The ground-truth rows, ordered by need, with per-category dep ids."""
        counters: dict[str, int] = {}
        rows = []
        for d in sorted(self.deps, key=lambda d: (d.need_seq, d.source_seq, d.category)):
            counters[d.category] = counters.get(d.category, 0) + 1
            rows.append(
                {
                    "session_id": session_id,
                    "dep_id": f"{d.category}-{counters[d.category]}",
                    "category": d.category,
                    "anchor": d.anchor,
                    "source_seq": d.source_seq,
                    "need_seq": d.need_seq,
                    "note": d.note,
                }
            )
        return rows

    def session(self, session_id: str, index: int, metadata: dict[str, Any]) -> Session:
        """The finished session, messages numbered in order."""
        messages = [replace(m, seq=i) for i, m in enumerate(self.messages)]
        return Session(
            source_format="synthetic",
            source_session_id=session_id,
            messages=messages,
            key=session_id,
            session_id=session_id,
            source_location="synthetic",
            source_record=index,
            workload=self.workload,
            metadata=metadata,
        )


# --- the invariants ---------------------------------------------------------------------------


def message_strings(m: Message) -> list[str]:
    """Every string of a message a later reader could copy from: text, arguments, results."""
    out: list[str] = []
    for p in m.parts:
        if p.type in ("text", "reasoning", "tool_call_response") and p.content:
            out.append(p.content)
        elif p.type == "tool_call" and p.arguments:
            out.append(p.arguments)
    return out


def call_index(messages: Sequence[Message]) -> dict[str, tuple[str, str]]:
    """call id → (tool name, canonical JSON of its arguments)."""
    out: dict[str, tuple[str, str]] = {}
    for m in messages:
        for p in m.calls:
            try:
                args = dumps_arguments(json.loads(p.arguments or "{}"))
            except ValueError:
                args = p.arguments or ""
            out[p.id or ""] = (p.name or "", args)
    return out


def sentences(text: str) -> list[str]:
    """A text's sentences (and lines), for finding the one that states a rule."""
    return [s for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]


def distinctive(phrase: str) -> bool:
    """Two or more content words, or a code-like token (letters with digits, ``_``, ``/``, ``.``)."""
    content = [w for w in re.findall(r"[A-Za-z]{3,}", phrase) if w.lower() not in _PLAIN_WORDS]
    code = [t for t in phrase.split() if re.search(r"[A-Za-z]", t) and re.search(r"[\d_/.]", t)]
    return len(content) >= 2 or bool(code)


def check_dependencies(messages: Sequence[Message], deps: Sequence[Dep]) -> list[str]:
    """Every way the planted dependencies break the invariants; empty when they all hold."""
    return SessionCheck(messages, deps).problems()


class SessionCheck:
    """What every dependency of one session is checked against: its messages and their calls."""

    def __init__(self, messages: Sequence[Message], deps: Sequence[Dep]) -> None:
        self.messages = messages
        self.deps = deps
        self.texts = [message_strings(m) for m in messages]
        self.calls = call_index(messages)
        self.anchors = [d.anchor for d in deps]
        self.first_turn = next((k for k, m in enumerate(messages) if m.is_user_turn), None)

    def family(self, seq: int) -> tuple[str, str] | None:
        """The (tool, arguments) of the call that message ``seq`` answers (None if no result)."""
        resp = self.messages[seq].responses
        return self.calls.get(resp[0].id or "") if resp else None

    def problems(self) -> list[str]:
        """Every violation, in a stable order."""
        out: list[str] = []
        if not any(
            d.category == "behavioural_contract" and d.source_seq != self.first_turn
            for d in self.deps
        ):
            out.append("no behavioural_contract from a later user turn (standing rule)")
        for i, d in enumerate(self.deps):
            out += DependencyCheck(self, i, d).problems()
        return out


class DependencyCheck:
    """One planted dependency against I1–I4 and the shape of its category."""

    def __init__(self, session: SessionCheck, index: int, dep: Dep) -> None:
        self.session = session
        self.index = index
        self.dep = dep
        self.tag = f"{dep.category} {dep.anchor[:40]!r} ({dep.source_seq}->{dep.need_seq})"
        self.found: list[str] = []
        # set by ``check`` once the seqs are known to be valid
        self.src_text = ""
        self.in_text = self.in_args = False
        self.same_family: list[int] = []
        self.errors_before: list[int] = []

    def flag(self, problem: str) -> None:
        """Record one problem of this dependency."""
        self.found.append(f"{self.tag}: {problem}")

    def problems(self) -> list[str]:
        """Every violation, in a stable order."""
        d = self.dep
        if d.category not in CATEGORIES:
            self.flag("unknown category")
        elif not 0 < d.source_seq < d.need_seq < len(self.session.messages):
            self.flag("seqs out of order or range")
        else:
            self.check()
        return self.found

    def check(self) -> None:
        """Each invariant in turn; the category's own shape last."""
        self.anchor_shape()
        self.in_source_and_need()
        self.nowhere_else_before_need()
        self.families()
        self.plain_source()
        by_category = {
            "verbatim_source": self.verbatim,
            "behavioural_contract": self.contract,
            "live_state": self.live,
            "recovery_routing": self.recovery,
        }
        if self.dep.category in by_category:
            by_category[self.dep.category]()

    @property
    def src(self) -> Message:
        return self.session.messages[self.dep.source_seq]

    @property
    def need(self) -> Message:
        return self.session.messages[self.dep.need_seq]

    # --- I3: non-trivial and unique --------------------------------------------------------
    def anchor_shape(self) -> None:
        """I3: the anchor is not trivial and overlaps no other anchor."""
        anchor = self.dep.anchor
        if trivial(anchor):
            self.flag("trivial anchor")
        for j, other in enumerate(self.session.anchors):
            if j != self.index and (anchor in other or other in anchor):
                self.flag(f"overlaps another anchor {other[:40]!r}")

    # --- I1: in the source (a user's words or a tool result) and in the need (assistant) ---
    def source_text(self) -> str:
        """The text the anchor must come from: the user's words or the tool result."""
        src = self.src
        if src.role == "user":
            return src.text
        if src.role == "tool" and src.responses:
            return "\n".join(p.content or "" for p in src.responses)
        self.flag("source is neither user text nor a tool result")
        return ""

    def in_source_and_need(self) -> None:
        """I1: the anchor is in its source and in its need (JSON-safe in args)."""
        anchor, need = self.dep.anchor, self.need
        self.src_text = self.source_text()
        if anchor not in self.src_text:
            self.flag("anchor not in source")
        if need.role != "assistant":
            self.flag("need is not an assistant message")
        self.in_text = anchor in need.text
        self.in_args = any(anchor in (p.arguments or "") for p in need.calls)
        if not (self.in_text or self.in_args):
            self.flag("anchor not in need")
        if self.in_args and not self.in_text and not json_safe(anchor):
            self.flag("anchor used in arguments is not JSON-safe")

    # --- I2: nowhere else before the need ----------------------------------------------------
    def nowhere_else_before_need(self) -> None:
        """I2: no other message before the need holds the anchor."""
        d, texts = self.dep, self.session.texts
        for k in range(d.need_seq):
            if k != d.source_seq and any(d.anchor in s for s in texts[k]):
                self.flag(f"also in message {k}")
                break

    # --- I4 and the per-category shapes --------------------------------------------------------
    def families(self) -> None:
        """Results before the need: the errored ones and the source's own family."""
        d, s = self.dep, self.session
        results_before = [k for k in range(d.need_seq) if s.messages[k].responses]
        self.errors_before = [k for k in results_before if s.messages[k].is_error]
        fam = s.family(d.source_seq)
        self.same_family = [k for k in results_before if fam is not None and s.family(k) == fam]

    def plain_source(self) -> None:
        """I4: a plain source is a first-of-its-kind, clean result with no route."""
        if self.dep.category not in PLAIN_SOURCE or self.src.role != "tool":
            return
        if any(k < self.dep.source_seq for k in self.same_family):
            self.flag("source repeats an earlier identical call")
        if self.src.is_error:
            self.flag("source is an error result")
        if ROUTE.search(self.src_text):
            self.flag("source announces a recovery route")

    def verbatim(self) -> None:
        """A verbatim span is long, unique and in the middle of its body."""
        anchor, body = self.dep.anchor, self.src_text
        if len(anchor) < VERBATIM_MIN_CHARS:
            self.flag(f"verbatim span shorter than {VERBATIM_MIN_CHARS}")
        if "\n" in anchor and not self.in_text:
            self.flag("multi-line span used in arguments")
        at = body.find(anchor)
        if at < 0:
            return
        n = len(body)
        if at < VERBATIM_MIN_EDGE * n or at + len(anchor) > (1 - VERBATIM_MIN_EDGE) * n:
            self.flag("span not in the middle of its body")
        if body.count(anchor) != 1:
            self.flag("span not unique in its body")

    def contract(self) -> None:
        """A contract comes from an earlier user turn and is honoured in text."""
        d, messages = self.dep, self.session.messages
        if self.src.role != "user":
            self.flag("contract source is not a user turn")
        if not distinctive(d.anchor):
            self.flag("contract key phrase is not distinctive")
        if d.source_seq != self.session.first_turn and not any(
            d.anchor in s and CONSTRAINT_WORD.search(s) for s in sentences(self.src_text)
        ):
            self.flag("standing rule has no constraint word in its sentence")
        if not self.in_text:
            self.flag("contract not honoured in assistant text")
        if not any(messages[k].is_user_turn for k in range(d.source_seq + 1, d.need_seq)):
            self.flag("contract turn is the latest user turn before the need")

    def live(self) -> None:
        """Live state is the latest of its family or the current error."""
        d, texts, family = self.dep, self.session.texts, self.same_family
        latest_of_family = (
            self.src.role == "tool"
            and len(family) >= 2
            and max(family) == d.source_seq
            and not any(d.anchor in texts[k][0] for k in family if k != d.source_seq)
        )
        current_error = bool(self.errors_before) and self.errors_before[-1] == d.source_seq
        if not (latest_of_family or current_error):
            self.flag("not the latest of its family nor the current error")

    def recovery(self) -> None:
        """A recovery anchor is an announced route that a later call opens."""
        routes = [m.group(1) for m in ROUTE.finditer(self.src_text)]
        if self.dep.anchor not in routes:
            self.flag("anchor is not an announced route")
        if not self.in_args:
            self.flag("route not followed by a tool call")
