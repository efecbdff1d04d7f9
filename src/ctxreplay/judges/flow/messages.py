"""What one message holds, hears or says, as the flow judge's rules read it.

A prefix message is a *source* (its facts, fields, rules, tokens and word runs); a future message
that is not the agent's is *heard* (what the future obtains again itself); a future agent message
is *said* (what it names and passes). Each is worked out once per session (``SessionIndex``).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Set
from dataclasses import dataclass, field

from ...datasets.messages import Message
from ...text.anchors import is_constraint, shared_phrase
from ...text.facts import (
    KV_LINE,
    Fact,
    LineIndex,
    RawPieces,
    Weights,
    facts_of,
    gram_set,
    grams,
    index_of,
    json_pairs,
    key_words,
    piece_spans,
    pieces,
    shape_floor,
    spanned_text,
    token_set,
    tokens,
    unnumbered,
)
from ..base import ByObject, rendered

#: the roles whose messages are always in view (with the protected turn)
ALWAYS_ROLES = ("system", "developer")

#: file name extensions: ``name.ext`` is a file (a locator), ``module.attr`` an identifier
_EXTENSIONS = (
    "py|pyi|ipynb|js|jsx|ts|tsx|mjs|cjs|json|jsonl|md|txt|csv|tsv|yaml|yml|toml|ini|cfg|conf|env|"
    "sh|bash|zsh|ps1|bat|html|htm|css|scss|xml|svg|rs|go|java|kt|c|h|cc|cpp|hpp|cs|rb|php|swift|"
    "ex|exs|erl|lua|r|sql|db|sqlite|log|lock|pdf|png|jpg|jpeg|gif|webp|mp4|zip|tar|gz|whl|so|"
    "dll|exe|bin|pem|pub|key|crt|traj|patch|diff|vue|svelte|dart|scala|pl|pm|tf|proto|gradle|"
    "doc|docx|xls|xlsx|ppt|pptx|odt|rtf|eml|mp3|wav"
)
#: what a body the agent writes still names as a locator: ids mixing letters and digits,
#: paths and addresses, long numbers, file names
LOCATOR = re.compile(
    r"(?=.*[a-z])(?=.*\d).{4,}|.*[/@].*[a-z].*|\d{3,}|[a-z_][\w\-]*\.(?:" + _EXTENSIONS + ")"
)


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


def part_indexes(m: Message) -> list[list[Fact] | LineIndex]:
    """``message_facts`` part by part, a text of lines as a ``LineIndex`` (``index_of``)."""
    prose = m.role in ("user", "assistant")
    return [
        index_of(p.content, prose=prose and p.type == "text")
        for p in m.parts
        if p.type in ("text", "tool_call_response") and p.content
    ]


def part_facts(part: list[Fact] | LineIndex, errors_only: bool = False) -> list[Fact]:
    """A part's facts (of a ``LineIndex``, its error lines', the only ones read whole)."""
    if isinstance(part, LineIndex):
        return part.errors()
    return [f for f in part if f.kind == "error"] if errors_only else part


def copy_runs(text: str, copiable: frozenset[str] | None = None) -> frozenset[str]:
    """A text's word runs, as a copy of it would hold them (a numbered listing without its
    numbers); ``copiable``: the only runs to keep, where known."""
    return gram_set(pieces(unnumbered(text)), copiable)


@dataclass
class Heard:
    """What a future message that is not the agent's hands it (a tool result, the user's
    words): its tokens and word runs, computed once per session."""

    tokens: frozenset[str]
    grams: frozenset[str]
    #: its parts' facts, found with its tokens where it is one text of lines (the text is
    #: normalised once for both), for when it is a prefix message in turn
    parts: list[list[Fact] | LineIndex] | None = None

    @classmethod
    def of(cls, m: Message, copiable: frozenset[str] | None = None) -> Heard:
        text = rendered(m)
        parts = part_indexes(m) if len(m.parts) == 1 else []  # one part: its text renders
        runs = copy_runs(text, copiable)
        if parts and isinstance(parts[0], LineIndex):
            return cls(parts[0].tokens(), runs, parts)
        return cls(token_set(text), runs, parts or None)


#: tokens looked up in a message by a pass over its facts before they are indexed
SCANS = 8


@dataclass
class Source:
    """What one prefix message holds, computed once per session."""

    role: str
    result: bool  # a tool result (whatever role the provider gives it)
    parts: list[list[Fact] | LineIndex]  # the facts of each part (``part_indexes``)
    fields: list[Fact]  # the facts with a key
    rules: list[Fact]  # standing instructions in the user's words
    tokens: frozenset[str]  # what it tells the agent
    text: str  # as the agent read it
    grams: frozenset[str]  # word runs, where copies are looked for
    by_key: dict[str, list[int]]  # the last key word of each field → where its fields are
    #: the facts holding each token looked up so far (``with_token``), and all of them by token
    #: once a message whose facts are all found has been looked into for many tokens
    _with: dict[str, list[Fact]] = field(default_factory=dict, init=False, repr=False)
    _by_token: dict[str, list[Fact]] | None = field(default=None, init=False, repr=False)
    _raw: RawPieces | None = field(default=None, init=False, repr=False)

    def raw_pieces(self) -> RawPieces:
        """Its text's pieces with their places, where copies from it are looked up."""
        if self._raw is None:
            self._raw = RawPieces.of(self.text)
        return self._raw

    def with_token(self, t: str) -> list[Fact]:
        """Its facts that hold token ``t``, in order: found by a pass over the facts (or a
        search of a ``LineIndex``) for the first ``SCANS`` tokens, then, where every fact is
        found already, from an index of every token."""
        hit = self._with.get(t)
        if hit is not None:
            return hit
        if self._by_token is not None:
            return self._by_token.get(t, [])
        found = [p for p in self.parts if not isinstance(p, LineIndex)]
        if len(self._with) >= SCANS and len(found) == len(self.parts):
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

    def holding(self, wanted: Set[str]) -> list[Fact]:
        """Its facts that hold every one of ``wanted`` (not empty), in order."""
        rarest = max(wanted, key=lambda t: (len(t), t))  # the longest: found in fewest lines
        return [f for f in self.with_token(rarest) if wanted <= f.tokens]

    def named(self, words: Set[str]) -> list[Fact]:
        """Its fields whose last key word is one of ``words``, in order."""
        by_key = self.by_key
        keys = (
            [k for k in by_key if k in words]
            if len(by_key) <= len(words)
            else [k for k in words if k in by_key]
        )
        if len(keys) == 1:
            return [self.fields[j] for j in by_key[keys[0]]]
        return [self.fields[j] for j in sorted(j for k in keys for j in by_key[k])]

    @classmethod
    def of(
        cls, m: Message, heard: Heard | None = None, copiable: frozenset[str] | None = None
    ) -> Source:
        """``heard``: the message's ``Heard``, when it is not the agent's and has one already
        (it was in the future of an earlier case)."""
        text = rendered(m)
        if heard is None:
            heard = Heard(token_set(told(m)), copy_runs(text, copiable))
        parts = heard.parts if heard.parts is not None else part_indexes(m)
        fields = [
            f
            for part in parts
            for f in (part.fields if isinstance(part, LineIndex) else part)
            if f.kind == "field" and f.key
        ]
        rules = (
            [
                f
                for part in parts
                if not isinstance(part, LineIndex)  # a sentence is prose's, never in an index
                for f in part
                if f.kind == "sentence" and is_constraint(f.text)
            ]
            if m.role == "user"
            else []
        )
        return cls(
            m.role,
            any(p.type == "tool_call_response" for p in m.parts),
            parts,
            fields,
            rules,
            heard.tokens,
            text,
            heard.grams,
            places(f.key[-1] for f in fields),
        )


#: the place of a protected turn among the sources while it is protected: it holds nothing
PROTECTED = Source("user", False, [], [], [], frozenset(), "", frozenset(), {})


def places(items: Iterable[str]) -> dict[str, list[int]]:
    """Where each item is in ``items``, in order."""
    found: dict[str, list[int]] = {}
    for j, item in enumerate(items):
        found.setdefault(item, []).append(j)
    return found


#: an argument value this long, or of several lines, is a body the agent writes
BODY_CHARS = 200


def is_body(value: str, limit: int = BODY_CHARS) -> bool:
    return len(value) > limit or value.count("\n") >= 2


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


@dataclass
class Said:
    """What a future agent message says and passes, tokenised once per session."""

    prose: str
    pairs: list[tuple[tuple[str, ...], str]]
    seq: list[str]  # the tokens it names, in order
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
    _token_at: dict[str, list[int]] | None = None
    _gram_at: dict[str, list[int]] | None = None
    _spans: list[tuple[int, int]] | None = None
    #: the fields of each source it names by key and value together: the same in every case
    #: whose prefix holds the source
    named: ByObject[Source, list[Fact]] = field(default_factory=ByObject)
    #: its word runs the sources hold: (which sources, the runs), extended as sources are put
    held: tuple[int, set[str]] | None = None
    #: its word runs shared with each message a future obtained before it, from the earliest
    #: future looked into: (where that future starts, [(seq, the runs shared)], none empty)
    shared: tuple[int, list[tuple[int, Set[str]]]] | None = None

    def weigh(self, w: Weights) -> None:
        """What of it weighs anything by the judge's weights: found once, not once per case."""
        if self._weighed_by is not w:
            self._weighed_by = w
            self.weighed = [frozenset(t for t in vt if w(t) > 0) for vt in self.value_tokens]
            self.weighty = sorted(t for t in self.present if w(t) > 0)
            self.shaped = sorted(t for t in self.present if shape_floor(t) > 0)

    def token_at(self) -> dict[str, list[int]]:
        if self._token_at is None:
            self._token_at = places(self.seq)
        return self._token_at

    def shown(self, start: int, stop: int) -> str:
        """``piece_text`` of its text, the pieces' places found once."""
        if self._spans is None:
            self._spans = piece_spans(self.text)
        return spanned_text(self.text, self._spans, start, stop)

    def gram_at(self) -> dict[str, list[int]]:
        if self._gram_at is None:
            self._gram_at = places(self.said_grams)
        return self._gram_at

    def phrase(self, rule: str) -> str | None:
        if rule not in self.phrases:
            self.phrases[rule] = shared_phrase(rule, self.text)
        return self.phrases[rule]

    @classmethod
    def of(cls, m: Message, body_chars: int = BODY_CHARS) -> Said:
        """What it names is its prose and the short values it passes; of a body it writes (a
        file, an edit's new text) only the locators: the rest is looked at for what it copies,
        not word by word (a written file's identifiers are everywhere in a coding session)."""
        prose, pairs = agent_use(m)
        text = prose + "\n" + "\n".join(v for _, v in pairs)
        named = prose + "\n" + "\n".join(v for _, v in pairs if not is_body(v, body_chars))
        seq = tokens(named)
        bodies = "\n".join(v for _, v in pairs if is_body(v, body_chars))
        if bodies:
            seq += [t for t in tokens(bodies) if LOCATOR.fullmatch(t)]
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


__all__ = [
    "ALWAYS_ROLES",
    "LOCATOR",
    "PROTECTED",
    "SCANS",
    "Heard",
    "Said",
    "Source",
    "agent_use",
    "copy_runs",
    "is_body",
    "message_facts",
    "part_facts",
    "part_indexes",
    "places",
    "told",
]
