"""The flow judge's rules: one function per kind of use, composed in ``case_uses``.

Each rule reads one future agent message against the case's sources and adds what it uses
(``Case.use``). What the future obtained again itself before that message (a later tool result,
the user's words) is no use of the prefix; what is always in view (system prompt, the protected
latest user turn) neither. The rules, in the order they are tried:

- ``key_value``: a field named by key and value (a call argument ``order_id: 81``, a
  ``Key: value`` line), from the latest source holding the value;
- ``small_value``: a small value (an element's index) passed under the key a tool result gave it;
- ``named_key``: a field whose key and value the message names close together;
- ``rare_tokens``: tokens, each from its latest source: a field or row by the weight of its
  words, a line by its specific tokens (ids, paths, numbers) or several rare words;
- ``shaped_tokens``: a token specific by its shape, in an error line about it (``error_line``)
  or in a short output the future repeats whole (``whole_output``: a number it reasons from);
- ``copied_span``: a span copied verbatim (code into an edit, a quote), rare within the session;
- ``user_rule``: a rule the user stated earlier whose key phrase the future repeats;
- ``repeated_argument``: a whole argument value the agent passed before (the command run again);

and, once per case, ``latest_error``: the environment errors of the last tool result before the
cut (a command that does not exist) are what the next agent message works around.

Two things the session says are no use of any one message: the arguments the agent passes out
of habit (the same value in ``habit`` earlier calls: its working directory) and the lines a tool
repeats in ``boilerplate`` observations (a status footer).
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Callable, Sequence, Set
from dataclasses import dataclass, field
from typing import Any

from ...datasets.messages import Message
from ...replay.objects import ContextObject, ObjectIndex, owner_of
from ...text.facts import (
    Fact,
    Weights,
    copied_spans,
    shape_floor,
    squash,
    token_set,
)
from .index import SessionIndex, Sources, shared_since
from .messages import ALWAYS_ROLES, Heard, Said, Source, part_facts


@dataclass(frozen=True)
class Use:
    """A fact of the prefix that a future message uses."""

    fact: Fact
    source: int  # prefix message index
    source_object: str | None
    need_seq: int
    how: str  # key | tokens | whole | error | copy | rule | state
    evidence: str
    #: the tokens that made it used: where the view still holds them under the same key, or in
    #: a user's or the agent's own message, the future still has them (``judge.ViewHolds``)
    evidence_tokens: frozenset[str] = frozenset()


#: what the environment lacks: a command, a module, a file, an element, a permission
ENV_ERROR = re.compile(
    r"command not found|not recognized as|no module named|cannot find module|not installed|"
    r"no such file|not found|does not exist|doesn't exist|permission denied|cannot access|"
    r"couldn't open|could not open|unable to open",
    re.IGNORECASE,
)


@dataclass
class Case:
    """What every rule reads of one case: the judge's parameters and weights, the session's
    index, the case's sources, what is always in view, the agent's habits, and what the future
    has obtained so far (grown as the future is walked)."""

    params: Any  # FlowJudge.Params
    weights: Weights
    index: SessionIndex
    prefix: Sequence[Message]
    found: Sources
    always_text: str
    always: frozenset[str]
    always_sq: str
    owner: dict[int, ContextObject]
    habitual: set[tuple[str, str]]
    habit_tokens: frozenset[str]
    cut: int
    obtained: set[str] = field(default_factory=set)
    #: the word runs of what the future obtained, one set per message with its seq: what a
    #: message shares with each is found once (``shared_since``), never merged
    obtained_grams: list[tuple[int, frozenset[str]]] = field(default_factory=list)
    uses: dict[tuple[int, str], Use] = field(default_factory=dict)

    def use(
        self, i: int, fact: Fact, m: Message, how: str, evidence: str, ev: Set[str] = frozenset()
    ) -> None:
        """Record a use of ``fact`` of prefix message ``i`` by ``m`` (the first rule wins)."""
        key = (i, fact.text)
        if key not in self.uses:
            obj = self.owner.get(i)
            self.uses[key] = Use(
                fact, i, obj.id if obj else None, m.seq, how, evidence, frozenset(ev)
            )

    def obtain(self, m: Message, heard: Heard) -> None:
        self.obtained.update(heard.tokens)
        self.obtained_grams.append((m.seq, heard.grams))

    def boilerplate(self, fact: Fact) -> bool:
        """A fact of a line the session's tools repeat in many observations."""
        n = self.params.boilerplate
        df = self.index.stats.line_df
        return n > 0 and any(df.get(p, 0) >= n for p in fact.probes)

    def local(self, t: str) -> bool:
        """Whether a token is rare within the session (in few of its messages)."""
        stats = self.index.stats
        if not stats.messages:
            return True
        p = self.params
        return bool(
            stats.token_df.get(t, 0) <= max(p.session_min, p.session_share * stats.messages)
        )


def habits_of(
    index: SessionIndex, prefix: Sequence[Message], found: Sources, at_least: int
) -> tuple[set[tuple[str, str]], frozenset[str]]:
    """The (key, value) arguments the agent passed in at least ``at_least`` of its earlier
    messages, and their tokens."""
    counts: Counter[tuple[str, str]] = Counter()
    if at_least > 0:
        for pos in found.agents:
            said = index.future(prefix[found.sources[pos][0]])
            if isinstance(said, Said):
                counts.update({(k[-1], v.strip()) for k, v in said.pairs if k})
    habitual = {kv for kv, n in counts.items() if n >= at_least}
    return habitual, frozenset().union(*(token_set(v) for _, v in habitual))


# --- the rules --------------------------------------------------------------------------------


def key_value(case: Case, m: Message, said: Said) -> None:
    """A field named by key and value: the record that defines the entity (``line_id:
    L1002``), from the latest source holding the value, passing over incidental mentions; an
    error about it in the newest holder counts too."""
    found = case.found
    for (key, value), vt in zip(said.pairs, said.weighed, strict=True):
        if not key or not vt or vt <= case.obtained or (key[-1], value.strip()) in case.habitual:
            continue
        # a source holding them all is no later than the latest holder of each
        start = min(found.latest_of.get(t, -1) for t in vt)
        newest = True
        for pos in range(start, -1, -1):
            i, info = found.sources[pos]
            if not vt <= info.tokens:
                continue
            fact = next(
                (
                    f
                    for f in info.holding(vt)
                    if (f.kind == "field" and f.key and f.key[-1] == key[-1] and not echoes_key(f))
                    or (f.kind == "error" and newest)
                ),
                None,
            )
            newest = False
            if fact is not None:
                case.use(i, fact, m, "key", f"{' '.join(key)} = {value[:60]}", vt)
                break


def small_value(case: Case, m: Message, said: Said) -> None:
    """A value too small to weigh anything (an element's index, a count) passed under the key
    a tool result gave it: the pair, not the value, singles the field out."""
    if not case.params.small_values:
        return
    found = case.found
    for (key, value), vt in zip(said.pairs, said.weighed, strict=True):
        v = value.strip()
        if not key or vt or not v or len(v) > 12:
            continue
        want = token_set(v)
        if not want or want <= case.obtained or want <= case.always:
            continue
        for pos in reversed(found.keyed.get(key[-1], ())):
            i, info = found.sources[pos]
            if not info.result:
                continue
            fact = next((f for f in info.named({key[-1]}) if f.tokens == want), None)
            if fact is not None:
                case.use(i, fact, m, "key", f"{' '.join(key)} = {v}", want)
                break


def echoes_key(fact: Fact) -> bool:
    """A field whose value only repeats its key (``timeout=timeout``): naming the key is all
    that naming it takes, so it singles out no record."""
    return fact.tokens <= set(fact.key)


def named_together(fact: Fact, said: Said, window: int) -> bool:
    """The future names the field's key and its value within ``window`` tokens of each other."""
    if not said.present.issuperset(fact.key) or not fact.tokens <= said.present or echoes_key(fact):
        return False
    at = said.token_at()
    value_at = sorted(j for t in fact.tokens for j in at[t])
    for i in at[fact.key[-1]]:  # the value nearest at or after i - window, within window of i
        k = bisect.bisect_left(value_at, i - window)
        if k < len(value_at) and value_at[k] <= i + window:
            return True
    return False


def named_key(case: Case, m: Message, said: Said) -> None:
    """A field whose key and value the message names together (only the sources with a field
    of a key it names are looked into)."""
    found, window = case.found, case.params.key_window
    named = {pos for k in found.keyed.keys() & said.present for pos in found.keyed[k]}
    for pos in sorted(named, reverse=True):
        i, info = found.sources[pos]
        facts = said.named.get(
            info, lambda s: [f for f in s.named(said.present) if named_together(f, said, window)]
        )
        for fact in facts:
            if not fact.tokens <= case.obtained:
                case.use(i, fact, m, "key", " ".join(fact.key), fact.tokens)


def taken(case: Case, info: Source, got: set[str]) -> list[tuple[Fact, str]]:
    """The facts of a source that the tokens a future message takes from it make used, with
    the tokens that do: a pure function of the two (and the session), found once per session
    for each, as the session's cases take the same tokens from the same sources again."""
    memo = case.index.taken_of.get(info, lambda _: {})
    key = frozenset(got)
    hit = memo.get(key)
    if hit is None:
        hit = memo[key] = facts_taken(
            info.with_token, got, case.boilerplate, case.params, case.weights
        )
    return hit


def facts_taken(
    with_token: Callable[[str], Sequence[Fact]],
    got: set[str],
    boilerplate: Callable[[Fact], bool],
    p: Any,
    w: Weights,
) -> list[tuple[Fact, str]]:
    """Of the facts holding the tokens ``got`` (``with_token``), those the tokens make used,
    with the tokens that do (``taken`` without its memo, shared with the reference)."""
    out: list[tuple[Fact, str]] = []
    candidates = dict.fromkeys(f for t in sorted(got) for f in with_token(t) if not boilerplate(f))
    # of the rows of one result, those the future picks or compares: the rows it names about
    # as much as the one it names most
    row_scores = {f: sum(w(t) for t in f.tokens & got) for f in candidates if f.kind == "row"}
    best_row = max(row_scores.values(), default=0.0)
    for fact in candidates:
        hit_tokens: Set[str] = fact.tokens & got
        row = fact if fact.kind == "row" else fact.row
        if row is not None and row_scores.get(row, best_row) < p.row_share * best_row:
            continue  # a row passed over, and its fields with it
        if fact.kind in ("field", "row"):
            enough = p.threshold
        else:
            specific = {t for t in hit_tokens if shape_floor(t) > 0}
            words = hit_tokens - specific
            # a name that runs through many lines of a listing does not single out one of
            # them: it takes a second specific token there
            distinct = {t for t in specific if not any(o != t and o.endswith(t) for o in specific)}
            singles = len(distinct) >= 2 or any(len(with_token(t)) <= p.max_lines for t in distinct)
            if (
                specific
                and sum(w(t) for t in specific)
                >= (p.error_threshold if fact.kind == "sentence" else p.threshold)
                and (fact.kind != "line" or singles)
            ):
                hit_tokens, enough = specific, 0.0
            elif len(words) >= p.prose_words:
                hit_tokens, enough = words, p.prose_threshold
            else:
                continue
        if sum(w(t) for t in hit_tokens) >= enough:
            out.append((fact, ", ".join(sorted(hit_tokens))))
    return out


def rare_tokens(case: Case, m: Message, said: Said) -> None:
    """Tokens, each from its latest source; fields and rows count every word, prose only what
    is specific by its shape (ids, paths, numbers, amounts) or several rare words together."""
    found = case.found
    matched: dict[int, set[str]] = {}
    for t in said.weighty:
        if t in case.always or t in case.obtained or t in case.habit_tokens:
            continue
        if (at := found.latest_of.get(t)) is not None:
            matched.setdefault(at, set()).add(t)
    for pos, got in sorted(matched.items()):
        i, info = found.sources[pos]
        for fact, evidence in taken(case, info, got):
            case.use(i, fact, m, "tokens", evidence, set(evidence.split(", ")))


def whole_output(case: Case, said: Said, t: str, info: Source, fact: Fact) -> Set[str] | None:
    """A short output the future repeats whole (a number it reasons from), even where the task
    states it too: at most three tokens, all specific, all named. Its tokens, or None."""
    p, w = case.params, case.weights
    if not info.result or fact.kind not in ("line", "field"):
        return None
    weighed = case.index.weighed(fact, w)
    if (
        t in weighed
        and len(weighed) <= 3
        and weighed <= said.present
        and all(shape_floor(x) > 0 for x in weighed)
        and sum(w(x) for x in weighed) >= p.error_threshold
    ):
        return weighed
    return None


def error_line(case: Case, t: str, fact: Fact) -> bool:
    """An error line about something the future acts on (a file, an id): the latest holder of
    a specific token the future names (a retry that worked holds it since)."""
    return fact.kind == "error" and case.weights(t) >= case.params.error_threshold


def shaped_tokens(case: Case, m: Message, said: Said) -> None:
    """The message's tokens specific by their shape, each in its latest source: an error line
    about it (``error_line``), or a short output it repeats whole (``whole_output``)."""
    for t in said.shaped:
        if t in case.obtained or t in case.habit_tokens:
            continue
        if (at := case.found.latest_of.get(t)) is None:
            continue
        i, info = case.found.sources[at]
        for fact in info.with_token(t):
            if error_line(case, t, fact):
                case.use(i, fact, m, "error", t, {t})
            elif (weighed := whole_output(case, said, t, info, fact)) is not None:
                case.use(i, fact, m, "whole", ", ".join(sorted(weighed)), weighed)


def copied_span(case: Case, m: Message, said: Said) -> None:
    """Spans copied verbatim (code into an edit, a quote), each from its latest source, unless
    the future obtained it again before; boilerplate (words the session uses everywhere, or
    that weigh nothing in the corpus) is no copy."""
    p, w = case.params, case.weights
    found = case.found
    held = found.held_in(said)
    if held:
        held = held.difference(*shared_since(said, case.cut, case.obtained_grams))
    places = said.gram_at() if held else {}
    hits = sorted((j, found.latest_gram[g]) for g in held for j in places[g])
    for pos, start, stop in copied_spans(said.said, hits):
        span = " ".join(said.said[start:stop])  # what is looked up and weighed
        i, info = found.sources[pos]
        if len(squash(span)) < p.min_copy or squash(span) in case.always_sq:
            continue
        # the agent's own phrasing needs rarer words than what it read to count: it repeats
        # its own turns of phrase
        enough = p.threshold if info.role == "assistant" else p.error_threshold
        span_tokens = token_set(span)
        if sum(w(t) for t in span_tokens if case.local(t)) < enough:
            continue
        # probed as the source holds it (a listing's line numbers and all), shown as written
        raw = info.raw_pieces().find(said.said[start:stop]) if info.text else None
        shown = said.shown(start, stop)
        fact = Fact("copy", span, (squash(raw or span),), span_tokens, shown=shown)
        case.use(i, fact, m, "copy", shown[:80])


def user_rule(case: Case, m: Message, said: Said) -> None:
    """A rule the user stated earlier that the future acts on: its key phrase again."""
    for pos in reversed(case.found.ruled):
        i, info = case.found.sources[pos]
        for fact in info.rules:
            phrase = said.phrase(fact.text)
            if phrase and phrase not in case.always_text:
                case.use(i, fact, m, "rule", phrase)


def repeated_argument(case: Case, m: Message, said: Said) -> None:
    """A whole argument value the agent gave before (the same command run again), from the
    latest of its messages holding it; not one it passes out of habit."""
    p, w = case.params, case.weights
    for key, value in said.pairs:
        v = value.strip()
        if len(v) >= p.min_copy or sum(w(t) for t in token_set(v)) < p.threshold:
            continue
        if key and (key[-1], v) in case.habitual:
            continue
        for pos in reversed(case.found.agents):
            i, info = case.found.sources[pos]
            if v in info.text:
                case.use(i, Fact("copy", v, (squash(v),), token_set(v)), m, "copy", v)
                break


def latest_error(case: Case, future: Sequence[Message]) -> None:
    """The state the agent answers next: the environment errors of the last tool result
    before the cut (a command that does not exist, a file not found) are what the first agent
    message of the future reacts to, named again or not."""
    if not case.params.latest_errors:
        return
    first = next((m for m in future if m.role == "assistant"), None)
    results = [pos for pos, (_, info) in enumerate(case.found.sources) if info.result]
    if first is None or not results:
        return
    i, info = case.found.sources[results[-1]]
    if i != len(case.prefix) - 1:  # not the prefix's last message: the agent spoke since
        return
    before: set[str] = set()
    for m in future:
        if m is first:
            break
        heard = case.index.future(m)
        if isinstance(heard, Heard):
            before |= heard.tokens
    for part in info.parts:
        for fact in part_facts(part, errors_only=True):
            if fact.kind == "error" and ENV_ERROR.search(fact.text) and not fact.tokens <= before:
                case.use(i, fact, first, "state", "the latest result, an error")


#: the rules a future agent message is read by, in order (the first to use a fact names how)
RULES: tuple[Callable[[Case, Message, Said], None], ...] = (
    key_value,
    small_value,
    named_key,
    rare_tokens,
    shaped_tokens,
    copied_span,
    user_rule,
    repeated_argument,
)


def make_case(
    params: Any,
    weights: Weights,
    index: SessionIndex,
    prefix: Sequence[Message],
    objects: ObjectIndex,
    future: Sequence[Message],
) -> Case:
    """A case's ``Case``: its sources and what is always in view (system and developer
    messages, the protected latest user turn)."""
    turn = objects[objects.latest_turn] if objects.latest_turn else None
    protected = set(turn.messages[:1]) if turn is not None else set()
    always_idx = {i for i, m in enumerate(prefix) if m.role in ALWAYS_ROLES} | protected
    always_text, always, always_sq = index.always([prefix[i] for i in sorted(always_idx)])
    found = index.sources(prefix, protected)
    habitual, habit_tokens = habits_of(index, prefix, found, params.habit)
    return Case(
        params,
        weights,
        index,
        prefix,
        found,
        always_text,
        always,
        always_sq,
        owner_of(objects),
        habitual,
        habit_tokens,
        future[0].seq if future else 0,
    )


def case_uses(case: Case, future: Sequence[Message]) -> list[Use]:
    """Every use of the case's prefix by its future: each future agent message read by every
    rule, what the future obtains itself set aside as it comes, then the latest result's
    errors."""
    for m in future:
        said = case.index.future(m)
        if isinstance(said, Heard):
            case.obtain(m, said)
            continue
        said.weigh(case.weights)
        for rule in RULES:
            rule(case, m, said)
    latest_error(case, future)
    return sorted(case.uses.values(), key=lambda u: (u.need_seq, u.source, u.fact.text))


__all__ = ["ENV_ERROR", "RULES", "Case", "Use", "case_uses", "make_case", "named_together"]
