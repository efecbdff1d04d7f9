"""The flow judge's per-session index: what its messages hold, worked out once for all the
session's cases, and the session's own statistics.

A session's cases share their messages: a long session cut every few messages has a hundred
cases whose futures hold the same messages. ``SessionIndex`` keeps, for one session, each
message's analysis (``messages.Source``/``Heard``/``Said``), the sources of the last case (a
later case whose prefix only adds messages extends them), and what the session's rules read of
the session as a whole: in how many of its messages each token and each line stands (the
session's own vocabulary and a tool's boilerplate). The judge makes one when the engine begins a
session (``FlowJudge.begin_session``) and drops it when the engine ends it: its lifetime is the
engine's, not a cache's.
"""

from __future__ import annotations

import bisect
import itertools
from collections import Counter
from collections.abc import Sequence, Set
from dataclasses import dataclass, field

from ...datasets.messages import Message
from ...text.facts import Fact, Weights, squash, token_set
from ..base import ByObject, rendered
from .messages import ALWAYS_ROLES, PROTECTED, Heard, Said, Source

#: what is always in view: its text, its tokens and its squashed form
Always = tuple[str, frozenset[str], str]


@dataclass
class Sources:
    """The sources of a case: the (index, message) pairs chosen, their analyses, and each
    token's and word run's latest holder by position.

    The protected turn (always in view, so no source) keeps its place, holding nothing, and is
    put in (``put``) when a later case's prefix holds it as a source: the sources of a session
    are so extended from case to case, never rebuilt."""

    chosen: list[tuple[int, Message]] = field(default_factory=list)
    sources: list[tuple[int, Source]] = field(default_factory=list)
    waiting: dict[int, Message] = field(default_factory=dict)  # position → protected message
    #: the word runs of the future messages looked at (``held_in``) → the sets of their runs
    #: that some source holds, to which a source put adds its own; and which sources these are
    readers: dict[str, list[set[str]]] = field(default_factory=dict)
    serial: int = field(default_factory=itertools.count().__next__)
    latest_of: dict[str, int] = field(default_factory=dict)
    latest_gram: dict[str, int] = field(default_factory=dict)  # the same, of word runs
    #: the positions of the sources with a field of each last key word, with a rule, and of
    #: the agent's own: the few a future's keys, rules and repeated arguments look into
    keyed: dict[str, list[int]] = field(default_factory=dict)
    ruled: list[int] = field(default_factory=list)
    agents: list[int] = field(default_factory=list)

    def put(self, pos: int, info: Source) -> None:
        """Index the source at ``pos``: the latest holder of its tokens and word runs, unless
        a later source holds them too."""
        i = self.sources[pos][0]
        self.sources[pos] = (i, info)
        for g in info.grams & self.readers.keys() if self.readers else ():
            for held in self.readers[g]:
                held.add(g)
        if pos == len(self.sources) - 1:  # the newest source: it replaces every holder
            self.latest_of.update(dict.fromkeys(info.tokens, pos))
            self.latest_gram.update(dict.fromkeys(info.grams, pos))
        else:
            for latest, keys in ((self.latest_of, info.tokens), (self.latest_gram, info.grams)):
                for k in keys:
                    if latest.get(k, -1) < pos:
                        latest[k] = pos
        for key in info.by_key:
            bisect.insort(self.keyed.setdefault(key, []), pos)
        if info.rules:
            bisect.insort(self.ruled, pos)
        if info.role == "assistant":
            bisect.insort(self.agents, pos)

    def held_in(self, said: Said) -> set[str]:
        """Of a future message's word runs, those some source holds (not to be changed): found
        once for the session's sources, which then add to them what each source put later
        holds (``readers``)."""
        if said.held is None or said.held[0] != self.serial:
            said.held = (self.serial, self.latest_gram.keys() & said.gram_set)
            for g in said.gram_set:
                self.readers.setdefault(g, []).append(said.held[1])
        return said.held[1]


def shared_since(
    said: Said, start: int, obtained: list[tuple[int, frozenset[str]]]
) -> list[Set[str]]:
    """A future message's word runs shared with each message the future obtained before it:
    ``obtained`` (seq, word runs) of a future starting at seq ``start``. A later cut of the
    session obtains a tail of the same messages, so what each shares is found once, from the
    earliest future, and read from there."""
    if said.shared is None or said.shared[0] > start:
        found: list[tuple[int, Set[str]]] = [
            (seq, both) for seq, grams in obtained if (both := said.gram_set & grams)
        ]
        said.shared = (start, found)
    return [both for seq, both in said.shared[1] if seq >= start]


@dataclass(frozen=True)
class SessionStats:
    """What the session as a whole says of its tokens and lines: in how many of its messages
    each token stands, and in how many of its observations each line (squashed)."""

    messages: int = 0
    token_df: Counter[str] = field(default_factory=Counter)
    line_df: Counter[str] = field(default_factory=Counter)

    @classmethod
    def of(cls, messages: Sequence[Message]) -> SessionStats:
        token_df: Counter[str] = Counter()
        line_df: Counter[str] = Counter()
        for m in messages:
            text = rendered(m)
            token_df.update(token_set(text))
            if m.role not in ("assistant", *ALWAYS_ROLES):
                line_df.update({s for s in map(squash, text.splitlines()) if s})
        return cls(len(messages), token_df, line_df)


class SessionIndex:
    """One session's analyses and statistics (see the module docstring)."""

    def __init__(
        self,
        session_id: str = "",
        stats: SessionStats | None = None,
        copiers: Sequence[Message] = (),
        body_chars: int = 200,
        session: tuple[Message, ...] | None = None,
    ) -> None:
        self.session_id = session_id
        #: the session's messages it was made from (``JudgeInput.session``), where given
        self.session = session
        self.stats = stats or SessionStats()
        self.body_chars = body_chars
        #: the agent messages of the session's futures, by id: copies are looked for only by
        #: them, so what a message shares with them is all of its word runs that matter
        self.copiers: dict[int, Message] = {id(m): m for m in copiers}
        self._future: ByObject[Message, Heard | Said] = ByObject()
        self.copiable: frozenset[str] | None = None
        if copiers:
            said = [self.future(m) for m in copiers]
            self.copiable = frozenset().union(*(s.gram_set for s in said if isinstance(s, Said)))
        self._sources_memo: ByObject[Message, Source] = ByObject()
        self._squash: ByObject[Message, str] = ByObject()
        self._always_of: dict[tuple[int, ...], tuple[tuple[Message, ...], Always]] = {}
        self._always_one: ByObject[Message, Always] = ByObject()
        self._last = Sources()
        self._weighed: ByObject[Fact, Set[str]] = ByObject()
        #: the facts a source's tokens make used (``rules.taken``), by the tokens
        self.taken_of: ByObject[Source, dict[frozenset[str], list[tuple[Fact, str]]]]
        self.taken_of = ByObject()

    def covers(self, future: Sequence[Message]) -> bool:
        """Whether the index was made with every agent message of this future (else its
        copiable runs would miss some)."""
        return self.copiable is None or all(
            m.role != "assistant" or id(m) in self.copiers for m in future
        )

    @property
    def last(self) -> Sources:
        """The sources of the last case looked at (the ones a next case may extend)."""
        return self._last

    # --- message analyses -----------------------------------------------------------------
    def future(self, m: Message) -> Heard | Said:
        return self._future.get(
            m,
            lambda m: (
                Said.of(m, self.body_chars) if m.role == "assistant" else Heard.of(m, self.copiable)
            ),
        )

    def source(self, m: Message) -> Source:
        return self._sources_memo.get(m, self._new_source)

    def _new_source(self, m: Message) -> Source:
        heard = None
        if m.role != "assistant":
            found = self.future(m)
            assert isinstance(found, Heard)
            heard = found
        return Source.of(m, heard, self.copiable)

    def squashed(self, m: Message) -> str:
        """A view message as looked into, whitespace removed (each once per session)."""
        return self._squash.get(m, lambda m: squash(rendered(m)))

    def weighed(self, fact: Fact, w: Weights) -> Set[str]:
        """The tokens of a fact that weigh anything (a fact is looked at by many cases)."""
        return self._weighed.get(fact, lambda f: {x for x in f.tokens if w(x) > 0})

    def always(self, messages: Sequence[Message]) -> Always:
        """The text, its tokens and its squashed form of what is always in view, by the
        messages that hold it: the cases of a session share them."""
        key = tuple(map(id, messages))
        hit = self._always_of.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], messages, strict=True)):
            return hit[1]
        # each message's text, tokens and squashed form found once: the joined text's tokens
        # are theirs, as no token and no rewrite of ``normalise`` reaches over a line break,
        # except a prose date whose day or year starts the next text
        alone = [self._always_one.get(m, _alone) for m in messages]
        text = "\n".join(a[0] for a in alone)
        if any(a[0].lstrip()[:1].isdigit() for a in alone[1:]):
            toks = token_set(text)
        else:
            toks = frozenset().union(*(a[1] for a in alone))
        found = (text, toks, "".join(a[2] for a in alone))
        self._always_of[key] = (tuple(messages), found)
        return found

    def sources(self, prefix: Sequence[Message], protected: Set[int]) -> Sources:
        """The prefix messages a fact can come from (all but what is always in view), in order,
        with each token's and word run's latest holder among them; the previous case's,
        extended, where this prefix holds the same messages at the same places and more."""
        chosen = [(i, m) for i, m in enumerate(prefix) if m.role not in ALWAYS_ROLES]
        last = self._last
        n = len(last.chosen)
        if n <= len(chosen) and all(
            a[0] == b[0] and a[1] is b[1] for a, b in zip(last.chosen, chosen[:n], strict=True)
        ):
            found = last
            found.chosen = chosen
        else:
            n, found = 0, Sources(chosen)
        for pos, m in list(found.waiting.items()):
            if chosen[pos][0] not in protected:  # a protected turn no longer
                del found.waiting[pos]
                found.put(pos, self.source(m))
        for pos in range(n, len(chosen)):
            i, m = chosen[pos]
            found.sources.append((i, PROTECTED))
            if i in protected:
                found.waiting[pos] = m
            else:
                found.put(pos, self.source(m))
        self._last = found
        return found


def _alone(m: Message) -> Always:
    text = rendered(m)
    return text, token_set(text), squash(text)


__all__ = ["Always", "SessionIndex", "SessionStats", "Sources", "shared_since"]
