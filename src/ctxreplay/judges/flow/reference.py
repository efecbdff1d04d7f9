"""The flow judge's rules stated plainly: no session index, no memo, no incremental sources.

Everything ``rules`` finds through the session's index (each token's latest holder kept as the
prefix grows, the word runs a future shares with the sources kept from case to case, the
tokens a source's facts are taken by, remembered) is found here by looking at every source
again. It is slow, and it is the oracle of the property test that the optimised judge gives
the same uses and the same verdicts (``tests/judges/test_flow_reference.py``); it is not
registered as a judge.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...datasets.messages import Message
from ...replay.objects import ObjectIndex, current_blocker, owner_of
from ...text.anchors import is_constraint
from ...text.facts import (
    Fact,
    Weights,
    copied_spans,
    facts_of,
    gram_set,
    piece_text,
    pieces,
    raw_of_pieces,
    shape_floor,
    squash,
    token_set,
    unnumbered,
)
from ..base import JudgeInput, Loss, Verdict, availability, parts_text, rendered, tally
from .judge import LONG_PROBE, loss_of
from .messages import ALWAYS_ROLES, Said, told
from .rules import ENV_ERROR, Use, echoes_key, facts_taken, named_together


@dataclass
class _Plain:
    """A prefix message, looked at afresh: its facts (all of them), tokens and word runs."""

    i: int
    role: str
    result: bool
    facts: list[Fact]
    fields: list[Fact]
    rules: list[Fact]
    tokens: frozenset[str]
    grams: frozenset[str]
    text: str

    @classmethod
    def of(cls, i: int, m: Message) -> _Plain:
        prose = m.role in ("user", "assistant")
        facts = [
            f
            for p in m.parts
            if p.type in ("text", "tool_call_response") and p.content
            for f in facts_of(p.content, prose=prose and p.type == "text")
        ]
        text = rendered(m)
        return cls(
            i,
            m.role,
            any(p.type == "tool_call_response" for p in m.parts),
            facts,
            [f for f in facts if f.kind == "field" and f.key],
            [f for f in facts if f.kind == "sentence" and is_constraint(f.text)]
            if m.role == "user"
            else [],
            token_set(told(m)),
            gram_set(pieces(unnumbered(text))),
            text,
        )

    def with_token(self, t: str) -> list[Fact]:
        return [f for f in self.facts if t in f.tokens]


def reference_uses(
    prefix: Sequence[Message],
    objects: ObjectIndex,
    future: Sequence[Message],
    session: Sequence[Message],
    params: Any,
    w: Weights,
) -> list[Use]:
    """What ``FlowJudge.uses`` finds for a case of ``session``, found the plain way: each
    assistant message of the future is looked at by every rule in turn (``_Reference``), then
    the latest error."""
    ref = _Reference(prefix, objects, session, params, w)
    for m in future:
        if m.role != "assistant":
            text = rendered(m)
            ref.obtained |= token_set(text)
            ref.obtained_grams.append(gram_set(pieces(unnumbered(text))))
            continue
        said = Said.of(m, params.body_chars)
        said.weigh(w)
        for rule in ref.RULES:
            rule(ref, m, said)
    ref.latest_error(future)
    return sorted(ref.uses.values(), key=lambda u: (u.need_seq, u.source, u.fact.text))


class _Reference:
    """One case's sources and the session's statistics, and each rule of ``rules`` as a method
    over them; ``uses`` collects what the rules find (the first use of a fact wins), and
    ``obtained``/``obtained_grams`` what the future's non-assistant messages brought in."""

    def __init__(
        self,
        prefix: Sequence[Message],
        objects: ObjectIndex,
        session: Sequence[Message],
        params: Any,
        w: Weights,
    ) -> None:
        self.p, self.w, self.prefix, self.session = params, w, prefix, session
        turn = objects[objects.latest_turn] if objects.latest_turn else None
        protected = set(turn.messages[:1]) if turn is not None else set()
        always_idx = sorted({i for i, m in enumerate(prefix) if m.role in ALWAYS_ROLES} | protected)
        self.always_text = "\n".join(rendered(prefix[i]) for i in always_idx)
        self.always, self.always_sq = token_set(self.always_text), squash(self.always_text)
        self.sources = [_Plain.of(i, m) for i, m in enumerate(prefix) if i not in always_idx]
        self.owner = owner_of(objects)
        # the session's statistics
        self.token_df: Counter[str] = Counter()
        self.line_df: Counter[str] = Counter()
        for m in session:
            text = rendered(m)
            self.token_df.update(token_set(text))
            if m.role not in ("assistant", *ALWAYS_ROLES):
                self.line_df.update({s for s in (squash(x) for x in text.splitlines()) if s})
        # the agent's habits
        counts: Counter[tuple[str, str]] = Counter()
        if params.habit > 0:
            for s in self.sources:
                if s.role == "assistant":
                    pairs = Said.of(prefix[s.i], params.body_chars).pairs
                    counts.update({(k[-1], v.strip()) for k, v in pairs if k})
        self.habitual = {kv for kv, n in counts.items() if n >= params.habit}
        self.habit_tokens = frozenset().union(*(token_set(v) for _, v in self.habitual))
        self.uses: dict[tuple[int, str], Use] = {}
        self.obtained: set[str] = set()
        self.obtained_grams: list[frozenset[str]] = []

    # --- what the rules ask of the sources --------------------------------------------------

    def boilerplate(self, fact: Fact) -> bool:
        p = self.p
        return p.boilerplate > 0 and any(
            self.line_df.get(q, 0) >= p.boilerplate for q in fact.probes
        )

    def local(self, t: str) -> bool:
        n = len(self.session)
        return not n or self.token_df.get(t, 0) <= max(self.p.session_min, self.p.session_share * n)

    def latest(self, t: str) -> _Plain | None:
        return next((s for s in reversed(self.sources) if t in s.tokens), None)

    def latest_gram(self, g: str) -> _Plain | None:
        return next((s for s in reversed(self.sources) if g in s.grams), None)

    def use(
        self, s: _Plain, fact: Fact, m: Message, how: str, evidence: str, ev: Any = frozenset()
    ) -> None:
        if (s.i, fact.text) not in self.uses:
            obj = self.owner.get(s.i)
            self.uses[(s.i, fact.text)] = Use(
                fact, s.i, obj.id if obj else None, m.seq, how, evidence, frozenset(ev)
            )

    # --- the rules, in the order ``rules`` applies them ----------------------------------------

    def key_value(self, m: Message, said: Said) -> None:
        for (key, value), vt in zip(said.pairs, said.weighed, strict=True):
            if (
                not key
                or not vt
                or vt <= self.obtained
                or (key[-1], value.strip()) in self.habitual
            ):
                continue
            holders = [self.latest(t) for t in vt]
            if any(h is None for h in holders):
                continue
            start = min(h.i for h in holders if h is not None)
            newest = True
            for s in reversed([s for s in self.sources if s.i <= start]):
                if not vt <= s.tokens:
                    continue
                fact = next((f for f in s.facts if _keyed(f, vt, key, newest)), None)
                newest = False
                if fact is not None:
                    self.use(s, fact, m, "key", f"{' '.join(key)} = {value[:60]}", vt)
                    break

    def small_value(self, m: Message, said: Said) -> None:
        if not self.p.small_values:
            return
        for (key, value), vt in zip(said.pairs, said.weighed, strict=True):
            v = value.strip()
            if not key or vt or not v or len(v) > 12:
                continue
            want = token_set(v)
            if not want or want <= self.obtained or want <= self.always:
                continue
            for s in reversed(self.sources):
                if not s.result:
                    continue
                fact = next(
                    (f for f in s.fields if f.key[-1] == key[-1] and f.tokens == want), None
                )
                if fact is not None:
                    self.use(s, fact, m, "key", f"{' '.join(key)} = {v}", want)
                    break

    def named_key(self, m: Message, said: Said) -> None:
        for s in reversed(self.sources):
            for fact in s.fields:
                if (
                    fact.key[-1] in said.present
                    and named_together(fact, said, self.p.key_window)
                    and not fact.tokens <= self.obtained
                ):
                    self.use(s, fact, m, "key", " ".join(fact.key), fact.tokens)

    def rare_tokens(self, m: Message, said: Said) -> None:
        matched: dict[int, tuple[_Plain, set[str]]] = {}
        for t in said.weighty:
            if t in self.always or t in self.obtained or t in self.habit_tokens:
                continue
            if (h := self.latest(t)) is not None:
                matched.setdefault(h.i, (h, set()))[1].add(t)
        for _, (s, got) in sorted(matched.items()):
            for fact, evidence in facts_taken(s.with_token, got, self.boilerplate, self.p, self.w):
                self.use(s, fact, m, "tokens", evidence, set(evidence.split(", ")))

    def shaped_tokens(self, m: Message, said: Said) -> None:
        p, w = self.p, self.w
        for t in said.shaped:
            if t in self.obtained or t in self.habit_tokens or (s2 := self.latest(t)) is None:
                continue
            for fact in s2.with_token(t):
                if fact.kind == "error" and w(t) >= p.error_threshold:
                    self.use(s2, fact, m, "error", t, {t})
                elif s2.result and fact.kind in ("line", "field"):
                    weighed = {x for x in fact.tokens if w(x) > 0}
                    if (
                        t in weighed
                        and len(weighed) <= 3
                        and weighed <= said.present
                        and all(shape_floor(x) > 0 for x in weighed)
                        and sum(w(x) for x in weighed) >= p.error_threshold
                    ):
                        self.use(s2, fact, m, "whole", ", ".join(sorted(weighed)), weighed)

    def copied_span(self, m: Message, said: Said) -> None:
        p, w = self.p, self.w
        held = {g for g in said.gram_set if self.latest_gram(g) is not None}
        for grams_seen in self.obtained_grams:
            held -= grams_seen
        holder = {s.i: s for s in self.sources}
        hits = sorted(
            (j, h.i)
            for j, g in enumerate(said.said_grams)
            if g in held and (h := self.latest_gram(g)) is not None
        )
        for i, start, stop in copied_spans(said.said, hits):
            s = holder[i]
            span = " ".join(said.said[start:stop])
            if len(squash(span)) < p.min_copy or squash(span) in self.always_sq:
                continue
            enough = p.threshold if s.role == "assistant" else p.error_threshold
            span_tokens = token_set(span)
            if sum(w(t) for t in span_tokens if self.local(t)) < enough:
                continue
            raw = raw_of_pieces(s.text, said.said[start:stop]) if s.text else None
            shown = piece_text(said.text, start, stop)
            fact = Fact("copy", span, (squash(raw or span),), span_tokens, shown=shown)
            self.use(s, fact, m, "copy", shown[:80])

    def user_rule(self, m: Message, said: Said) -> None:
        for s in reversed(self.sources):
            for fact in s.rules:
                phrase = said.phrase(fact.text)
                if phrase and phrase not in self.always_text:
                    self.use(s, fact, m, "rule", phrase)

    def repeated_argument(self, m: Message, said: Said) -> None:
        p, w = self.p, self.w
        for key, value in said.pairs:
            v = value.strip()
            if len(v) >= p.min_copy or sum(w(t) for t in token_set(v)) < p.threshold:
                continue
            if key and (key[-1], v) in self.habitual:
                continue
            for s in reversed(self.sources):
                if s.role == "assistant" and v in s.text:
                    self.use(s, Fact("copy", v, (squash(v),), token_set(v)), m, "copy", v)
                    break

    RULES = (
        key_value,
        small_value,
        named_key,
        rare_tokens,
        shaped_tokens,
        copied_span,
        user_rule,
        repeated_argument,
    )

    def latest_error(self, future: Sequence[Message]) -> None:
        first = next((m for m in future if m.role == "assistant"), None)
        results = [s for s in self.sources if s.result]
        if not (self.p.latest_errors and first is not None and results):
            return
        if results[-1].i != len(self.prefix) - 1:
            return
        last = results[-1]
        before: set[str] = set()
        for m in future:
            if m is first:
                break
            before |= token_set(rendered(m))
        for fact in last.facts:
            if fact.kind == "error" and ENV_ERROR.search(fact.text) and not fact.tokens <= before:
                self.use(last, fact, first, "state", "the latest result, an error")


def _keyed(f: Fact, vt: frozenset[str], key: tuple[str, ...], newest: bool) -> bool:
    """A fact that holds a said key's value: a field of that key (not an echo of it), or, in
    the newest source that holds the value, an error."""
    if not vt <= f.tokens:
        return False
    if f.kind == "field" and f.key and f.key[-1] == key[-1] and not echoes_key(f):
        return True
    return f.kind == "error" and newest


def reference_verdict(item: JudgeInput, uses: Sequence[Use], params: Any) -> Verdict:
    """``FlowJudge.judge``'s verdict from ``uses``, each looked up in the view afresh."""
    if not uses:
        return Verdict("no_impact", reason="the future uses no fact from the editable prefix")
    kept = {id(m) for m in item.view}
    at_seq: dict[int, str] = {}
    written = ""
    for m in item.view:
        if m.flags:
            written += squash(rendered(m))
        else:
            at_seq[m.seq] = at_seq.get(m.seq, "") + squash(rendered(m))
    view = "".join(at_seq.values()) + written
    where = availability(item, parts_text) if item.archives else None
    recoverable_sq = squash(where.recoverable) if where else ""
    hidden_sq = squash(where.unrouted) if where else ""
    losses: list[Loss] = []
    recoverable = 0
    blocker = current_blocker(item.index)
    for u in uses:
        if id(item.prefix[u.source]) in kept:
            continue
        at = at_seq.get(item.prefix[u.source].seq, "")
        if any(
            q in at or q in written or (len(q) >= LONG_PROBE and q in view) for q in u.fact.probes
        ):
            continue
        if (
            params.elsewhere
            and u.how == "key"
            and u.evidence_tokens
            and u.fact.key
            and any(_holds(m, u) for m in item.view if m.role not in ALWAYS_ROLES)
        ):
            continue
        if recoverable_sq and u.fact.in_text(recoverable_sq):
            recoverable += 1
            continue
        losses.append(loss_of(u, item, blocker, hidden_sq))
    return tally("facts used", losses, len(uses), recoverable)


def _holds(m: Message, u: Use) -> bool:
    s = _Plain.of(-1, m)
    key = u.fact.key[-1]
    if any(f.key[-1] == key and u.evidence_tokens <= f.tokens for f in s.fields):
        return True
    return m.role in ("assistant", "user") and not s.result and u.evidence_tokens <= s.tokens


__all__ = ["reference_uses", "reference_verdict"]
