"""The information-flow judge: which facts of the prefix each future message uses, and whether
the view still holds them. Deterministic, free, the default.

Real futures rarely reuse an exact anchor. They act on a status (``"status": "Suspended"`` before
``resume_line``), pick a row from a search result, work around an error line, copy code into an
edit, reason from a printed number, and obey a rule the user stated earlier. So the unit here is a
*fact* (``facts.py``): a field of structured output, a row, a line, an error line, a sentence.
For each future agent message:

1. its tokens, normalised (case, numbers, money, dates), less what is always in view (system
   prompt, the protected latest user turn) and what the future obtained again itself before
   using it (a later tool result or user message), are looked up in the prefix; each token's
   source is the *latest* prefix message holding it;
2. a fact of that message is *used* when the matched tokens weigh enough (IDF over the corpus,
   so common words and a tool's boilerplate count for nothing), when its key and its value are
   both named together (``Insurance: No``), when it is an error line about something the future
   acts on, or when the future copies a span of it (a shared run of ``min_copy``+ characters);
3. a used fact is available (its text is still in the view), recoverable (in an archive whose
   pointer the view shows) or lost. Each loss keeps the removed text and the future message that
   needed it, filed in the six-category taxonomy.

The analysis of a case does not depend on the policy, so it is done once per case and each view
costs only the lookups of its used facts. A session's cases share its messages, so what each
message holds, says and shares with another is found once per session: a case extends the
previous case's sources, and looks up only what the sources it adds change (a long session cut
every few messages has a hundred cases whose futures hold the same messages). Begun with all
the session's inputs (``begin_session``, as the engine does), it keeps of what each message
reads only the word runs that the futures' agent messages hold: those alone can be copied.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence, Set
from dataclasses import dataclass, field
from typing import Any

from ..datasets.messages import Message
from ..registry import param
from ..replay.objects import ObjectIndex, current_blocker, owner_of
from ..text.anchors import ROUTE, is_constraint, shared_phrase
from ..text.facts import (
    KV_LINE,
    SHINGLE,
    Fact,
    LineIndex,
    Weights,
    copied_spans,
    facts_of,
    gram_set,
    grams,
    index_of,
    json_pairs,
    key_words,
    piece_text,
    pieces,
    raw_document_frequency,
    shape_floor,
    squash,
    token_set,
    tokens,
)
from .base import (
    ByObject,
    Judge,
    JudgeInput,
    Loss,
    Verdict,
    availability,
    corpus_frequencies,
    judge,
    parts_text,
    rendered,
    tally,
)


def _session_texts(sessions: Iterable[Sequence[Message]]) -> Iterator[Iterator[str]]:
    """What the corpus weights count: each session's messages as rendered, system prompts
    aside."""
    return (
        (rendered(m) for m in messages if m.role not in ("system", "developer"))
        for messages in sessions
    )


def _frequency_of(sessions: Iterable[Sequence[Message]]) -> tuple[dict[str, int], int]:
    """In how many of these sessions each token occurs (every token: the counts of parts of a
    corpus add up), and how many sessions."""
    return raw_document_frequency(_session_texts(sessions))


def told(m: Message) -> str:
    """What a message tells the agent: tool results and the user's words, and the agent's own
    prose; not its tool calls, which act on information rather than hold it."""
    if m.role != "assistant":
        return rendered(m)
    return "\n".join(p.content or "" for p in m.parts if p.type == "text")


def message_facts(m: Message) -> list[Fact]:
    """Every fact of a message: those of its text and tool results, part by part."""
    prose = m.role in ("user", "assistant")
    return [
        f
        for p in m.parts
        if p.type in ("text", "tool_call_response") and p.content
        for f in facts_of(p.content, prose=prose and p.type == "text")
    ]


def _indexes(m: Message) -> list[list[Fact] | LineIndex]:
    """``message_facts`` part by part, a text of lines as a ``LineIndex`` (``index_of``)."""
    prose = m.role in ("user", "assistant")
    return [
        index_of(p.content, prose=prose and p.type == "text")
        for p in m.parts
        if p.type in ("text", "tool_call_response") and p.content
    ]


@dataclass(frozen=True)
class Use:
    """A fact of the prefix that a future message uses."""

    fact: Fact
    source: int  # prefix message index
    source_object: str | None
    need_seq: int
    how: str  # tokens | key | error | copy
    evidence: str


@dataclass
class _Told:
    """What a future message that is not the agent's hands it (a tool result, the user's
    words): its tokens and word runs, computed once per session, not once per case."""

    tokens: frozenset[str]
    grams: frozenset[str]  # its word runs (those a future agent message holds, where known)
    #: its parts' facts (``_indexes``), found with its tokens where it is one text of lines
    #: (the text is normalised once for both), for when it is a prefix message in turn
    parts: list[list[Fact] | LineIndex] | None = None

    @classmethod
    def of(cls, m: Message, copiable: frozenset[str] | None = None) -> _Told:
        """(Not the agent's: what it tells is what it renders.) ``copiable``: the only word
        runs to keep, where known (``FlowJudge.begin_session``)."""
        text = rendered(m)
        parts = _indexes(m) if len(m.parts) == 1 else []  # one part: its text is what renders
        runs = gram_set(pieces(text), copiable)
        if parts and isinstance(parts[0], LineIndex):
            return cls(parts[0].tokens(), runs, parts)
        return cls(token_set(text), runs, parts or None)


#: tokens looked up in a message by a pass over its facts before they are indexed
_SCANS = 8


@dataclass
class _Message:
    """What one prefix message holds, computed once per session."""

    role: str
    result: bool  # a tool result (whatever role the provider gives it)
    parts: list[list[Fact] | LineIndex]  # the facts of each part (``_indexes``)
    fields: list[Fact]  # the facts with a key
    rules: list[Fact]  # standing instructions in the user's words
    tokens: frozenset[str]  # what it tells the agent
    text: str  # as the agent read it
    grams: frozenset[str]  # word runs, where copies are looked for (as ``_Told.grams``)
    by_key: dict[str, list[int]]  # the last key word of each field → where its fields are

    #: the facts holding each token looked up so far (``with_token``), and all of them by token
    #: once a message whose facts are all found has been looked into for many tokens
    _with: dict[str, list[Fact]] = field(default_factory=dict, init=False, repr=False)
    _by_token: dict[str, list[Fact]] | None = field(default=None, init=False, repr=False)

    def with_token(self, t: str) -> list[Fact]:
        """Its facts that hold token ``t``, in order. Looked up when a future takes a token
        from this message: most messages of a prefix never are, and most that are, for a few
        tokens, each found by a pass over the facts (or a search of a ``LineIndex``); after
        ``_SCANS`` of them, where every fact is found already, from an index of every token
        (as costly to build as a few dozen passes)."""
        hit = self._with.get(t)
        if hit is not None:
            return hit
        if self._by_token is not None:
            return self._by_token.get(t, [])
        found = [p for p in self.parts if not isinstance(p, LineIndex)]
        if len(self._with) >= _SCANS and len(found) == len(self.parts):
            by_token: defaultdict[str, list[Fact]] = defaultdict(list)
            for part in found:
                for f in part:
                    for tok in f.tokens:
                        by_token[tok].append(f)
            self._by_token = by_token
            return by_token.get(t, [])
        hit = self._with[t] = [
            f
            for part in self.parts
            for f in (part.with_token(t) if isinstance(part, LineIndex) else part)
            if t in f.tokens
        ]
        return hit

    def holding(self, tokens: Set[str]) -> list[Fact]:
        """Its facts that hold every one of ``tokens`` (not empty), in order."""
        rarest = max(tokens, key=lambda t: (len(t), t))  # the longest: found in fewest lines
        return [f for f in self.with_token(rarest) if tokens <= f.tokens]

    @classmethod
    def of(
        cls, m: Message, heard: _Told | None = None, copiable: frozenset[str] | None = None
    ) -> _Message:
        """``heard``: the message's ``_Told``, when it is not the agent's and has one already
        (it was in the future of an earlier case): what it tells is what it renders.
        ``copiable``: as for ``_Told.of``."""
        text = rendered(m)
        if heard is None:
            heard = _Told(token_set(told(m)), gram_set(pieces(text), copiable))
        parts = heard.parts if heard.parts is not None else _indexes(m)
        fields = [
            f
            for part in parts
            for f in (part.fields if isinstance(part, LineIndex) else part)
            if f.kind == "field" and f.key
        ]
        return cls(
            m.role,
            any(p.type == "tool_call_response" for p in m.parts),
            parts,
            fields,
            [
                f
                for part in parts
                if not isinstance(part, LineIndex)  # a sentence is prose's, never in an index
                for f in part
                if f.kind == "sentence" and is_constraint(f.text)
            ]
            if m.role == "user"
            else [],
            heard.tokens,
            text,
            heard.grams,
            _places(f.key[-1] for f in fields),
        )

    def named(self, words: Set[str]) -> list[Fact]:
        """Its fields whose last key word is one of ``words``, in order (a result of hundreds
        of fields, of which a future names one or two keys, is not gone through field by
        field)."""
        by_key = self.by_key
        # (the smaller looked up in the larger: a frozenset and a dict's keys intersect by
        # going through the frozenset, whatever their sizes)
        if len(by_key) <= len(words):
            keys = [k for k in by_key if k in words]
        else:
            keys = [k for k in words if k in by_key]
        if len(keys) == 1:
            return [self.fields[j] for j in by_key[keys[0]]]
        return [self.fields[j] for j in sorted(j for k in keys for j in by_key[k])]


def _places(items: Iterable[str]) -> dict[str, list[int]]:
    """Where each item is in ``items``, in order."""
    places: dict[str, list[int]] = {}
    for j, item in enumerate(items):
        places.setdefault(item, []).append(j)
    return places


@dataclass
class _Said:
    """What a future agent message says and passes, tokenised once per session: the cases of
    a session share most of their futures."""

    prose: str
    pairs: list[tuple[tuple[str, ...], str]]
    seq: list[str]  # its tokens, in order
    present: frozenset[str]
    value_tokens: list[list[str]]  # the tokens of each pair's value
    said: list[str]  # its pieces, where copies are looked for
    said_grams: list[str]
    gram_set: frozenset[str]  # the same, once each
    text: str  # what rules are looked for in
    phrases: dict[str, str | None]  # rule → the key phrase of it this message repeats
    #: the tokens of each pair's value that weigh anything, and of ``present`` those that weigh
    #: anything and those specific by their shape, in order (``weigh``)
    weighed: list[frozenset[str]] = field(default_factory=list)
    weighty: list[str] = field(default_factory=list)
    shaped: list[str] = field(default_factory=list)
    _weighed_by: Weights | None = None
    #: where each token is in ``seq``, and each word run in ``said_grams`` (``_places``), when
    #: first looked for: a key named near its value, a run copied
    _token_at: dict[str, list[int]] | None = None
    _gram_at: dict[str, list[int]] | None = None
    #: the fields of each source it names by key and value together, by the source's id: the
    #: same in every case whose prefix holds the source (the sources live as long as it)
    _named: ByObject[_Message, list[Fact]] = field(default_factory=ByObject)
    #: its word runs the sources hold: (which sources, the runs)
    _held: tuple[int, set[str]] | None = None
    #: its word runs shared with each message a future obtained before it, from the earliest
    #: future looked into: (where that future starts, [(seq, the runs shared)], none empty)
    _shared: tuple[int, list[tuple[int, Set[str]]]] | None = None

    def weigh(self, w: Weights) -> None:
        """What of it weighs anything by the judge's weights: found once, not once per case."""
        if self._weighed_by is not w:
            self._weighed_by = w
            self.weighed = [frozenset(t for t in vt if w(t) > 0) for vt in self.value_tokens]
            self.weighty = sorted(t for t in self.present if w(t) > 0)
            self.shaped = sorted(t for t in self.present if shape_floor(t) > 0)

    def held_in(self, found: _Sources) -> set[str]:
        """Its word runs that some source holds (not to be changed). Found once for the
        session's sources, which then add to them what each source put later holds
        (``_Sources.readers``): a future message is looked at by case after case, and in a long
        session cut often, by a hundred cases (issue 15)."""
        if self._held is None or self._held[0] != found.serial:
            self._held = (found.serial, found.latest_gram.keys() & self.gram_set)
            for g in self.gram_set:
                found.readers.setdefault(g, []).append(self._held[1])
        return self._held[1]

    def shared_since(
        self, start: int, obtained: list[tuple[int, frozenset[str]]]
    ) -> list[Set[str]]:
        """Its word runs shared with each message the future obtained before it: ``obtained``
        (seq, word runs) of a future starting at seq ``start``. A later cut of the session
        obtains a tail of the same messages, so what each shares is found once, from the
        earliest future, and read from there."""
        if self._shared is None or self._shared[0] > start:
            found: list[tuple[int, Set[str]]] = [
                (seq, both) for seq, grams in obtained if (both := self.gram_set & grams)
            ]
            self._shared = (start, found)
        return [both for seq, both in self._shared[1] if seq >= start]

    def named_in(self, source: _Message, window: int) -> list[Fact]:
        """The fields of ``source`` this message names by key and value together."""
        return self._named.get(
            source,
            lambda s: [f for f in s.named(self.present) if _named_together(f, self, window)],
        )

    def token_at(self) -> dict[str, list[int]]:
        if self._token_at is None:
            self._token_at = _places(self.seq)
        return self._token_at

    def gram_at(self) -> dict[str, list[int]]:
        if self._gram_at is None:
            self._gram_at = _places(self.said_grams)
        return self._gram_at

    @classmethod
    def of(cls, m: Message) -> _Said:
        prose, pairs = agent_use(m)
        text = prose + "\n" + "\n".join(v for _, v in pairs)
        seq = tokens(text)
        said = pieces(text)
        said_grams = grams(said)
        return cls(
            prose,
            pairs,
            seq,
            frozenset(seq),
            [tokens(value) for _, value in pairs],
            said,
            said_grams,
            frozenset(said_grams),
            text,
            {},
        )

    def phrase(self, rule: str) -> str | None:
        if rule not in self.phrases:
            self.phrases[rule] = shared_phrase(rule, self.text)
        return self.phrases[rule]


def agent_use(m: Message) -> tuple[str, list[tuple[tuple[str, ...], str]]]:
    """What an agent message says (its text) and what its calls pass (key words, value)."""
    prose = "\n".join(p.content or "" for p in m.parts if p.type == "text")
    pairs: list[tuple[tuple[str, ...], str]] = []
    for p in m.parts:
        if p.type != "tool_call":
            continue
        try:
            pairs.extend(json_pairs(json.loads(p.arguments or "{}")))
        except ValueError:
            pairs.append(((), p.arguments or ""))
    for line in prose.splitlines():
        kv = KV_LINE.match(line)
        if kv:
            pairs.append((key_words(kv.group(1)), kv.group(2)))
    return prose, pairs


#: the roles whose messages are always in view (with the protected turn)
_ALWAYS_ROLES = ("system", "developer")

#: what is always in view: its text, its tokens and its squashed form
_Always = tuple[str, frozenset[str], str]


#: the place of a protected turn among the sources while it is protected: it holds nothing
_PROTECTED = _Message("user", False, [], [], [], frozenset(), "", frozenset(), {})


@dataclass
class _Sources:
    """The sources of a case (``FlowJudge._sources_of``): the (index, message) pairs chosen,
    their analyses, and each token's latest holder by position.

    The protected turn (always in view, so no source) keeps its place, holding nothing, and is
    put in (``put``) when a later case's prefix holds it as a source: the sources of a session
    are so extended from case to case, never rebuilt."""

    chosen: list[tuple[int, Message]] = field(default_factory=list)
    sources: list[tuple[int, _Message]] = field(default_factory=list)
    waiting: dict[int, Message] = field(default_factory=dict)  # position → protected message
    #: the word runs of the future messages looked at (``_Said.held_in``) → the sets of their
    #: runs that some source holds, to which a source put adds its own; and which sources these
    #: are (a rebuilt one is others)
    readers: dict[str, list[set[str]]] = field(default_factory=dict)
    serial: int = field(default_factory=itertools.count().__next__)
    latest_of: dict[str, int] = field(default_factory=dict)
    latest_gram: dict[str, int] = field(default_factory=dict)  # the same, of word runs
    #: the positions of the sources with a field of each last key word, with a rule, and of
    #: the agent's own: the few a future's keys, rules and repeated arguments look into
    keyed: dict[str, list[int]] = field(default_factory=dict)
    ruled: list[int] = field(default_factory=list)
    agents: list[int] = field(default_factory=list)

    def put(self, pos: int, info: _Message) -> None:
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


@judge("flow")
class FlowJudge(Judge):
    """Information-flow audit over facts (fields, rows, lines, errors, rules, copied spans)."""

    #: it looks at what the objects hold and how they relate, never at their token counts
    reads_token_counts = False

    @dataclass(frozen=True)
    class Params:
        threshold: float = param(
            1.0, "a fact is used when the weights of the tokens taken from it add up to this", gt=0
        )
        error_threshold: float = param(
            0.5, "an error line is acted on when the future names something weighing this", gt=0
        )
        key_window: int = param(
            6, "a key and its value count as named together at most this many tokens apart", ge=0
        )
        prose_words: int = param(
            3, "prose restated in the future's own words: this many rare words of a sentence", ge=1
        )
        prose_threshold: float = param(
            1.2, "what the prose_words rare words of a sentence must weigh together", gt=0
        )
        row_share: float = param(
            0.5,
            "rows named at least this share of the best row's weight are used too (a comparison)",
            ge=0,
            le=1,
        )
        max_lines: int = param(
            2, "a token on more lines than this of one message singles none of them out", ge=1
        )
        min_copy: int = param(
            SHINGLE, "shortest copied run of characters that counts as a verbatim copy", ge=1
        )
        common_fraction: float = param(
            0.3, "tokens in at least this share of a corpus's sessions weigh nothing", ge=0, le=1
        )

    def __init__(self, params: FlowJudge.Params | None = None) -> None:
        super().__init__(params)
        self.weights = Weights(common=self.params.common_fraction)
        self._case: tuple[str, list[Use]] | None = None
        self._start("")

    def _start(self, session: str) -> None:
        """Forget the last session's messages: what a message holds, tells or says does not
        change between the cases of a session, and is found once for them all."""
        self._session = session
        #: the word runs of the agent messages of the session's futures (``begin_session``),
        #: the only ones looked for in what it reads; None: every run, where they are unknown
        self._copiable: frozenset[str] | None = None
        self._copiers: dict[int, Message] = {}  # those agent messages, by id
        self._messages: ByObject[Message, _Message] = ByObject()
        self._future: ByObject[Message, _Told | _Said] = ByObject()
        self._squash: ByObject[Message, str] = ByObject()
        #: what is always in view (system prompt, protected turn), tokenised, by its text: the
        #: cases of a session share it until the next user turn
        self._always_of: dict[tuple[int, ...], tuple[tuple[Message, ...], _Always]] = {}
        self._always_one: ByObject[Message, _Always] = ByObject()  # by message
        #: the sources of the session's last case, and each token's latest holder among them: a
        #: later case whose prefix only adds messages extends them, not rebuilds them
        self._sources: _Sources = _Sources()
        #: the tokens of a fact that weigh anything
        self._weighed: ByObject[Fact, Set[str]] = ByObject()
        #: the facts a source's tokens make used (``_taken``), by the source's id and the tokens
        self._taken_of: ByObject[_Message, dict[frozenset[str], list[tuple[Fact, str]]]]
        self._taken_of = ByObject()

    # --- corpus-level weights ---------------------------------------------------------------
    def corpus_state(self, corpus: Any) -> dict[str, Any]:
        """In how many sessions each token occurs (those in three or more), and how many
        sessions: one pass over the corpus, split across processes (it reads every message)."""
        df, n = corpus_frequencies(corpus, _frequency_of, at_least=lambda n: 3)
        return {"df": df, "sessions": n}

    def use_state(self, state: Any) -> None:
        state = state or {}
        self.weights = Weights(
            state.get("df", {}), int(state.get("sessions", 0)), self.params.common_fraction
        )

    # --- what the future uses (once per case) ---------------------------------------------
    def begin_session(self, items: Sequence[JudgeInput]) -> None:
        """Copies are looked for only by the agent messages of the session's futures: what a
        prefix or future message shares with them is all its word runs that matter, and a
        set of those few is found instead of one of its thousands (issue 15)."""
        if not items:
            return
        self._start(items[0].session_id)
        copiers = {id(m): m for item in items for m in item.future if m.role == "assistant"}
        said = [self._told(m) for m in copiers.values()]
        self._copiable = frozenset().union(*(s.gram_set for s in said if isinstance(s, _Said)))
        self._copiers = copiers

    def uses(self, item: JudgeInput) -> list[Use]:
        if self._case and self._case[0] == item.case_id:
            return self._case[1]
        if self._session != item.session_id or (
            self._copiable is not None
            and any(m.role == "assistant" and id(m) not in self._copiers for m in item.future)
        ):  # a new session, or an input its session was not begun with: every run looked for
            self._start(item.session_id)
        uses = self._uses(item.prefix, item.index, item.future)
        self._case = (item.case_id, uses)
        return uses

    def _message(self, m: Message) -> _Message:
        return self._messages.get(m, self._new_message)

    def _new_message(self, m: Message) -> _Message:
        heard = None
        if m.role != "assistant":
            said = self._told(m)
            assert isinstance(said, _Told)
            heard = said
        return _Message.of(m, heard, self._copiable)

    def _always(self, messages: list[Message]) -> tuple[str, frozenset[str], str]:
        """The text, its tokens and its squashed form of what is always in view (a session's
        few), by the messages that hold it: the cases of a session share them, and their text
        is joined once per distinct set, not once per case."""
        key = tuple(map(id, messages))
        hit = self._always_of.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], messages, strict=True)):
            return hit[1]
        # each message's text, tokens and squashed form found once (a system prompt is long,
        # and the cases of a session hold it with a new protected turn each): the joined
        # text's tokens are theirs, as no token and no rewrite of ``normalise`` reaches over
        # a line break, except a prose date whose day or year starts the next text
        alone = [self._alone(m) for m in messages]
        text = "\n".join(a[0] for a in alone)
        if any(a[0].lstrip()[:1].isdigit() for a in alone[1:]):
            tokens = token_set(text)
        else:
            tokens = frozenset().union(*(a[1] for a in alone))
        found = (text, tokens, "".join(a[2] for a in alone))
        self._always_of[key] = (tuple(messages), found)
        return found

    def _sources_of(self, prefix: Sequence[Message], protected: Set[int]) -> _Sources:
        """The prefix messages a fact can come from (all but what is always in view: the
        system's and developer's, and the ``protected`` turn), in order, and for each of their
        tokens and word runs the position of its latest holder among them.
        Those of the previous case are extended when this prefix holds the same messages at
        the same places, and more after them (the common case within a session)."""
        chosen = [(i, m) for i, m in enumerate(prefix) if m.role not in _ALWAYS_ROLES]
        last = self._sources
        n = len(last.chosen)
        if n <= len(chosen) and all(
            a[0] == b[0] and a[1] is b[1] for a, b in zip(last.chosen, chosen[:n], strict=True)
        ):
            found = last
            found.chosen = chosen
        else:
            n, found = 0, _Sources(chosen)
        for pos, m in list(found.waiting.items()):
            if chosen[pos][0] not in protected:  # a protected turn no longer
                del found.waiting[pos]
                found.put(pos, self._message(m))
        for pos in range(n, len(chosen)):
            i, m = chosen[pos]
            found.sources.append((i, _PROTECTED))
            if i in protected:
                found.waiting[pos] = m
            else:
                found.put(pos, self._message(m))
        self._sources = found
        return found

    def _weighed_tokens(self, fact: Fact) -> Set[str]:
        """The tokens of a fact that weigh anything (a fact is looked at again by the
        session's later cases)."""
        w = self.weights
        # built as it was: summed in its order
        return self._weighed.get(fact, lambda f: {x for x in f.tokens if w(x) > 0})

    def _alone(self, m: Message) -> _Always:
        """An always-in-view message's text, tokens and squashed text."""

        def alone(m: Message) -> _Always:
            text = rendered(m)
            return text, token_set(text), squash(text)

        return self._always_one.get(m, alone)

    def _squashed(self, m: Message) -> str:
        """A view message as looked into, whitespace removed: the views of a session share
        most of their messages (the prefix's own objects), so each is squashed once."""
        return self._squash.get(m, lambda m: squash(rendered(m)))

    def _told(self, m: Message) -> _Told | _Said:
        return self._future.get(
            m, lambda m: _Said.of(m) if m.role == "assistant" else _Told.of(m, self._copiable)
        )

    def _taken(self, info: _Message, got: set[str]) -> list[tuple[Fact, str]]:
        """The facts of a source that the tokens a future message takes from it make used,
        with the tokens that do (step 2 of ``_uses``). A pure function of the two: found once
        per session for each, as the session's cases and messages take the same tokens from the
        same sources again and again."""
        memo = self._taken_of.get(info, lambda _: {})
        key = frozenset(got)
        found = memo.get(key)
        if found is not None:
            return found
        p = self.params
        w = self.weights
        taken: list[tuple[Fact, str]] = []
        candidates = dict.fromkeys(f for t in sorted(got) for f in info.with_token(t))
        # of the rows of one result, those the future picks or compares: the rows it
        # names about as much as the one it names most
        row_scores = {f: sum(w(t) for t in f.tokens & got) for f in candidates if f.kind == "row"}
        best_row = max(row_scores.values(), default=0.0)
        for fact in candidates:
            hit: Set[str] = fact.tokens & got
            row = fact if fact.kind == "row" else fact.row
            if row is not None and row_scores.get(row, best_row) < p.row_share * best_row:
                continue  # a row passed over, and its fields with it
            if fact.kind in ("field", "row"):
                enough = p.threshold
            else:
                specific = {t for t in hit if shape_floor(t) > 0}
                words = hit - specific
                # a name that runs through many lines of a listing does not single
                # out one of them: it takes a second specific token there
                distinct = {
                    t for t in specific if not any(o != t and o.endswith(t) for o in specific)
                }
                singles = len(distinct) >= 2 or any(
                    len(info.with_token(t)) <= p.max_lines for t in distinct
                )
                if (
                    specific
                    and sum(w(t) for t in specific)
                    >= (p.error_threshold if fact.kind == "sentence" else p.threshold)
                    and (fact.kind != "line" or singles)
                ):
                    hit, enough = specific, 0.0
                elif len(words) >= p.prose_words:
                    hit, enough = words, p.prose_threshold
                else:
                    continue
            if sum(w(t) for t in hit) >= enough:
                taken.append((fact, ", ".join(sorted(hit))))
        memo[key] = taken
        return taken

    def _uses(
        self, prefix: Sequence[Message], index: ObjectIndex, future: Sequence[Message]
    ) -> list[Use]:
        p = self.params
        w = self.weights
        turn = index[index.latest_turn] if index.latest_turn else None
        protected = set(turn.messages[:1]) if turn is not None else set()
        always_idx = {i for i, m in enumerate(prefix) if m.role in _ALWAYS_ROLES}
        always_idx |= protected
        always_text, always, always_sq = self._always([prefix[i] for i in sorted(always_idx)])
        owner = owner_of(index)
        found = self._sources_of(prefix, protected)
        sources, latest_of, latest_gram = found.sources, found.latest_of, found.latest_gram
        keyed = found.keyed
        uses: dict[tuple[int, str], Use] = {}

        def use(i: int, fact: Fact, m: Message, how: str, evidence: str) -> None:
            for f in (fact, fact.row) if fact.row is not None else (fact,):
                key = (i, f.text)
                if key not in uses:
                    obj = owner.get(i)
                    uses[key] = Use(f, i, obj.id if obj else None, m.seq, how, evidence)

        obtained: set[str] = set()
        # the word runs of what the future obtained, one set per message with its seq: what a
        # message of the future shares with each is found once (``_Said.shared_since``), never
        # merged (they are large, and differ from case to case)
        obtained_grams: list[tuple[int, frozenset[str]]] = []  # (seq, word runs)
        cut = future[0].seq if future else 0
        for m in future:
            info_m = self._told(m)
            if not isinstance(info_m, _Said):
                obtained.update(info_m.tokens)
                obtained_grams.append((m.seq, info_m.grams))
                continue
            pairs, present = info_m.pairs, info_m.present
            # 1. a field named by key and value (a call argument, a ``Key: value`` line): the
            # record that defines the entity (``line_id: L1002``), passing over incidental
            # mentions, unless an error about it came since
            info_m.weigh(w)
            for (key, value), vt in zip(pairs, info_m.weighed, strict=True):
                if not key or not vt or vt <= obtained:
                    continue
                # a source holding them all is no later than the latest holder of each
                start = min(latest_of.get(t, -1) for t in vt)
                newest = True
                for pos in range(start, -1, -1):
                    i, info = sources[pos]
                    if not vt <= info.tokens:
                        continue
                    fact = next(
                        (
                            f
                            for f in info.holding(vt)
                            if (f.kind == "field" and f.key and f.key[-1] == key[-1])
                            or (f.kind == "error" and newest)
                        ),
                        None,
                    )
                    newest = False
                    if fact is not None:
                        use(i, fact, m, "key", f"{' '.join(key)} = {value[:60]}")
                        break
            # (only a source with a field whose key is named here: ``_named_together``)
            named = {pos for k in keyed.keys() & present for pos in keyed[k]}
            for pos in sorted(named, reverse=True):
                i, info = sources[pos]
                for fact in info_m.named_in(info, p.key_window):
                    if not fact.tokens <= obtained:
                        use(i, fact, m, "key", " ".join(fact.key))
            # 2. tokens, each from its latest source; fields and rows count every word, prose
            # only what is specific by its shape (ids, paths, numbers, amounts) or several rare
            # words together
            matched: dict[int, set[str]] = {}
            for t in info_m.weighty:
                if t in always or t in obtained:
                    continue
                if (at := latest_of.get(t)) is not None:
                    matched.setdefault(at, set()).add(t)
            for pos, got in sorted(matched.items()):
                i, info = sources[pos]
                for fact, evidence in self._taken(info, got):
                    use(i, fact, m, "tokens", evidence)
            # 3. a short output the future repeats whole (a number it reasons from), even
            # where the task states it too; 4. an error line about something the future acts
            # on (a file, an id), unless a later message (a retry that worked) mentions it since
            for t in info_m.shaped:
                if t in obtained or (at := latest_of.get(t)) is None:
                    continue
                i, info = sources[at]
                for fact in info.with_token(t):
                    if fact.kind == "error" and w(t) >= p.error_threshold:
                        use(i, fact, m, "error", t)
                    elif info.result and fact.kind in ("line", "field"):
                        weighed = self._weighed_tokens(fact)
                        if (
                            t in weighed
                            and len(weighed) <= 3
                            and weighed <= present
                            and all(shape_floor(x) > 0 for x in weighed)
                            and sum(w(x) for x in weighed) >= p.error_threshold
                        ):
                            use(i, fact, m, "whole", ", ".join(sorted(weighed)))
            # 5. spans copied verbatim (code into an edit, a quote), from their latest source,
            # unless the future obtained them again before (its runs that some source holds,
            # intersected with each obtained message's: set operations, not a test per run;
            # and each run's source found by a ``dict.get``, or none looked for where it
            # copies nothing)
            held = info_m.held_in(found)
            if held:
                held = held.difference(*info_m.shared_since(cut, obtained_grams))
            places = info_m.gram_at() if held else {}
            hits = sorted((j, latest_gram[g]) for g in held for j in places[g])
            for pos, start, stop in copied_spans(info_m.said, hits):
                span = " ".join(info_m.said[start:stop])  # what is looked up and weighed
                i, info = sources[pos]
                if len(squash(span)) < p.min_copy or squash(span) in always_sq:
                    continue
                # the agent's own phrasing needs rarer words than what it read to count: it
                # repeats its own turns of phrase
                enough = p.threshold if info.role == "assistant" else p.error_threshold
                span_tokens = token_set(span)
                if sum(w(t) for t in span_tokens) < enough:
                    continue  # boilerplate shared by many sessions
                # shown as the message wrote it; ``span`` (its pieces joined) decides
                shown = piece_text(info_m.text, start, stop)
                fact = Fact("copy", span, (squash(span),), span_tokens, shown=shown)
                use(i, fact, m, "copy", shown[:80])
            # 6. a rule the user stated earlier that the future acts on (its key phrase again)
            for pos in reversed(found.ruled):
                i, info = sources[pos]
                for fact in info.rules:
                    phrase = info_m.phrase(fact.text)
                    if phrase and phrase not in always_text:
                        use(i, fact, m, "rule", phrase)
            # and a whole argument value given before (the same command run again)
            for _, value in pairs:
                v = value.strip()
                if len(v) >= p.min_copy or sum(w(t) for t in token_set(v)) < p.threshold:
                    continue
                for pos in reversed(found.agents):
                    i, info = sources[pos]
                    if v in info.text:
                        fact = Fact("copy", v, (squash(v),), token_set(v))
                        use(i, fact, m, "copy", v)
                        break
        return sorted(uses.values(), key=lambda u: (u.need_seq, u.source, u.fact.text))

    # --- the verdict ----------------------------------------------------------------------
    def judge(self, item: JudgeInput) -> Verdict:
        uses = self.uses(item)
        if not uses:
            return Verdict("no_impact", reason="the future uses no fact from the editable prefix")
        kept = {id(m) for m in item.view}
        # a use whose source message the view kept as it was is available: the view is looked
        # into only for the others (none, for a view that kept every source)
        missing = [u for u in uses if id(item.prefix[u.source]) not in kept]
        if not missing:
            if item.archives:  # read all the same: one that does not read leaves it unscored
                availability(item, parts_text)
            return tally("facts used", [], len(uses), 0)
        # a short fact ("344") is looked for where it was (its message, as the view left it) and
        # in what the policy wrote (summaries, notes); a long one anywhere in the view
        at_seq: dict[int, str] = {}
        written: list[str] = []
        for m in item.view:
            text = self._squashed(m)
            if m.flags:
                written.append(text)
            else:
                at_seq[m.seq] = at_seq.get(m.seq, "") + text
        view_sq = "".join(at_seq.values()) + "".join(written)
        written_sq = "".join(written)
        recoverable_sq = hidden_sq = ""
        if item.archives:
            where = availability(item, parts_text)
            recoverable_sq, hidden_sq = squash(where.recoverable), squash(where.unrouted)
        losses: list[Loss] = []
        recoverable = 0
        blocker = current_blocker(item.index)
        for u in missing:
            if _present(u.fact, at_seq.get(item.prefix[u.source].seq, ""), written_sq, view_sq):
                continue
            if recoverable_sq and u.fact.in_text(recoverable_sq):
                recoverable += 1
                continue
            category = _category(u, item, blocker, bool(hidden_sq) and u.fact.in_text(hidden_sq))
            detail = f"{u.fact.kind} of prefix message {u.source}, used by {u.how}: {u.evidence}"
            anchor = u.fact.shown or u.fact.text
            losses.append(Loss(category, anchor, u.source_object, u.need_seq, detail))
        return tally("facts used", losses, len(uses), recoverable)


#: a probe this long is specific enough to be found anywhere in the view
LONG_PROBE = 16


def _present(fact: Fact, at_source: str, written: str, view: str) -> bool:
    return any(
        p in at_source or p in written or (len(p) >= LONG_PROBE and p in view) for p in fact.probes
    )


def _named_together(fact: Fact, said: _Said, window: int) -> bool:
    """The future names the field's key and its value within ``window`` tokens of each other."""
    if not said.present.issuperset(fact.key) or not fact.tokens <= said.present:
        return False
    at = said.token_at()
    value_at = sorted(j for t in fact.tokens for j in at[t])
    for i in at[fact.key[-1]]:  # the value nearest at or after i - window, within window of i
        k = bisect.bisect_left(value_at, i - window)
        if k < len(value_at) and value_at[k] <= i + window:
            return True
    return False


_LOCATOR_KEY = re.compile(r"\b(id|ids|number|code|path|file|url|uri|email|handle|key|name)\b")


@functools.lru_cache(maxsize=1 << 12)
def _routes(text: str) -> bool:
    """Whether a fact's text is the way back to something (``ROUTE``): asked of each view's
    losses, and the views of a case share their facts (a case-blind pattern over a long line
    is no cheap test)."""
    return ROUTE.search(text) is not None


def _category(u: Use, item: JudgeInput, blocker: str | None, hidden: bool) -> str:
    if hidden or _routes(u.fact.text):
        return "recovery_routing"  # archived with no visible pointer, or the way back itself
    obj = item.index.by_id.get(u.source_object or "")
    source = item.prefix[u.source]
    if u.fact.kind == "error" or (
        obj is not None
        and obj.kind == "function"
        and (obj.supersedes is not None or obj.id == blocker)
    ):
        return "live_state"
    if u.how == "rule" or (
        source.role == "user" and u.fact.kind == "sentence" and is_constraint(u.fact.text)
    ):
        return "behavioural_contract"
    if u.how == "copy" or (u.fact.kind == "line" and len(u.fact.text) >= 40 and u.how == "copy"):
        return "verbatim_source"
    evidence = u.evidence.split(", ")
    if any(shape_floor(t) >= 1.0 for t in evidence) or _LOCATOR_KEY.search(" ".join(u.fact.key)):
        return "locator_handle"
    return "evidence_detail"
