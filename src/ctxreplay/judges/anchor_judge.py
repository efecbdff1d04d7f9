"""The exact-anchor judge: deterministic, free, the default.

It follows the dependency-centred audit of the Self-GC study: a view has *no impact* when every
exact anchor the real future uses from the prefix is still available — verbatim in the view, or
recoverable from an archive whose pointer the view shows. Steps:

1. From the future agent turns (assistant text and tool-call arguments) extract exact anchors:
   URLs, paths, identifiers and handles, specific numbers and table values, quoted text and long
   verbatim spans (``anchors.py``).
2. Keep those that come from the prefix: drop anything always present (system prompt, the latest
   user turn), anything the future obtained again itself before using it (a later tool result or
   user message), and anchors common to most sessions of the corpus (``prepare``).
3. Each dependency is available, recoverable or lost. A lost one is filed under the taxonomy:
   recovery routing (its archive has no visible pointer, or the anchor is itself a route to a full
   payload), live state (it came from the latest of several identical calls, or from the current
   blocker — the most recent error), behavioural contract (a constraint in an older user turn that
   the future acts on), verbatim source (long spans), locator/handle, or evidence detail.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..datasets.messages import Message
from ..registry import param
from ..replay.objects import ObjectIndex, current_blocker, owner_of
from ..text.anchors import (
    MIN_SPAN,
    Anchor,
    anchor_texts_of_all,
    announces_route,
    argument_values,
    constraints,
    extract,
    shared_phrase,
    spans,
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
    message_text,
    tally,
)


def agent_text(m: Message) -> tuple[str, list[str]]:
    """What an assistant message *uses*: its text, and its calls' argument values."""
    texts = [p.content or "" for p in m.parts if p.type == "text"]
    values: list[str] = []
    for p in m.parts:
        if p.type == "tool_call":
            values.extend(argument_values(p.arguments))
            texts.append(p.arguments or "")
    return "\n".join(texts), values


@dataclass
class _Said:
    """What a future agent message uses, worked out once per session: its text and values,
    the anchors in them, and which rules it repeats a key phrase of."""

    text: str
    values: list[str]
    candidates: list[Anchor]
    phrases: dict[str, str | None]

    @classmethod
    def of(cls, m: Message, min_span: int) -> _Said:
        text, values = agent_text(m)
        return cls(text, values, extract(text) + spans(values + text.splitlines(), min_span), {})

    def phrase(self, rule: str) -> str | None:
        """The key phrase of ``rule`` this message repeats (``shared_phrase``)."""
        if rule not in self.phrases:
            self.phrases[rule] = shared_phrase(rule, self.text + "\n" + "\n".join(self.values))
        return self.phrases[rule]


@dataclass(frozen=True)
class Dependency:
    anchor: str
    kind: str
    source: int  # prefix message index holding it (the latest one)
    source_object: str | None
    need_seq: int
    contract: bool = False


def anchor_document_frequency(sessions: Iterable[Sequence[Message]]) -> tuple[Counter[str], int]:
    """In how many sessions each anchor occurs (system prompts aside), and how many sessions."""
    df: Counter[str] = Counter()
    n = 0
    for messages in sessions:
        n += 1
        df.update(anchor_texts_of_all(message_text(m) for m in messages if m.role != "system"))
    return df, n


def common_anchors(df: Mapping[str, int], n: int, fraction: float) -> frozenset[str]:
    if n < 4:  # too few sessions to call anything common
        return frozenset()
    return frozenset(a for a, c in df.items() if c / n > fraction)


@judge("anchor")
class AnchorJudge(Judge):
    """Exact-anchor dependency audit (Self-GC's no-impact criterion, made deterministic)."""

    #: it looks at what the objects hold and how they relate, never at their token counts
    reads_token_counts = False

    @dataclass(frozen=True)
    class Params:
        min_span: int = param(
            MIN_SPAN, "shortest verbatim value or line, in characters, that is a span anchor", ge=1
        )
        common_fraction: float = param(
            0.5,
            "anchors in more than this share of a corpus's sessions are trivially present",
            ge=0,
            le=1,
        )
        check_contracts: bool = param(
            True, "also audit behavioural contracts: older user constraints the future acts on"
        )

    def __init__(self, params: AnchorJudge.Params | None = None) -> None:
        super().__init__(params)
        self.common: frozenset[str] = frozenset()
        #: the last case's dependencies, by its id and its prefix and future (by identity: two
        #: runs may reuse a case id for another case)
        self._case_cache: (
            tuple[str, tuple[Message, ...], tuple[Message, ...], list[Dependency], str, list[str]]
            | None
        ) = None
        # what a message reads as, uses and states does not change between the cases (and
        # views) of a session: each is worked out once per session, by the message object
        # (``ByObject``: by identity, the object held with its value)
        self._session = ""
        self._texts: ByObject[Message, str] = ByObject()
        self._bodies: ByObject[Message, str] = ByObject()
        self._said: ByObject[Message, _Said] = ByObject()
        self._rules: ByObject[Message, list[str]] = ByObject()

    def _for_session(self, session_id: str) -> None:
        if session_id != self._session:
            self._session = session_id
            self._texts, self._bodies = ByObject(), ByObject()
            self._said, self._rules = ByObject(), ByObject()

    def _text(self, m: Message) -> str:
        return self._texts.get(m, message_text)

    def _body(self, m: Message) -> str:
        """What a long verbatim span may come from: a call's arguments, other messages' text."""
        if m.role != "assistant":
            return self._text(m)
        return self._bodies.get(
            m, lambda m: "\n".join(p.arguments or "" for p in m.parts if p.type == "tool_call")
        )

    def _uses_of(self, m: Message) -> _Said:
        return self._said.get(m, lambda m: _Said.of(m, self.params.min_span))

    def _constraints(self, m: Message) -> list[str]:
        return self._rules.get(m, lambda m: constraints(m.text))

    # --- corpus-level filter ------------------------------------------------------------
    def corpus_state(self, corpus: Any) -> list[str]:
        """Anchors found in most sessions of the corpus: boilerplate, not dependencies.

        One pass over the corpus, split across processes (it reads every message once).
        """
        fraction = self.params.common_fraction
        # only anchors of more than ``fraction`` of the sessions can be common (exact test below)
        df, n = corpus_frequencies(
            corpus, anchor_document_frequency, at_least=lambda n: int(fraction * n)
        )
        return sorted(common_anchors(df, n, self.params.common_fraction))

    def use_state(self, state: Any) -> None:
        self.common = frozenset(state or ())

    # --- dependencies of a case (policy-independent, cached) ------------------------------
    def dependencies(self, item: JudgeInput) -> tuple[list[Dependency], str]:
        c = self._case_cache
        if c and c[0] == item.case_id and c[1] is item.prefix and c[2] is item.future:
            return c[3], c[4]
        self._for_session(item.session_id)
        prefix, index = item.prefix, item.index
        latest = index[index.latest_turn] if index.latest_turn else None
        always_parts = [self._text(m) for m in prefix if m.role in ("system", "developer")]
        if latest is not None:
            always_parts.append(self._text(prefix[latest.messages[0]]))
        always = "\n".join(always_parts)
        texts = [self._text(m) for m in prefix]
        # long verbatim spans depend on editable bodies (tool output, the user's words, what a
        # call wrote), not on the agent repeating its own earlier prose
        bodies = [self._body(m) for m in prefix]
        # every text of each kind at once: an anchor in none of them is in no one of them
        everything: dict[int, str] = {}

        def source_of(anchor: str, where: list[str]) -> int | None:
            whole = everything.get(id(where))
            if whole is None:
                whole = everything[id(where)] = "\x00".join(where)
            if anchor not in whole:
                return None
            return next((i for i in range(len(where) - 1, -1, -1) if anchor in where[i]), None)

        owner = owner_of(index)
        contract_sources = self._contract_sentences(prefix, index)
        deps: list[Dependency] = []
        seen: set[str] = set()
        obtained: list[str] = []
        got = ""  # ``obtained``, joined (joined again only when it grows)
        joined = 0
        for m in item.future:
            if m.role != "assistant":
                obtained.append(self._text(m))
                continue
            said = self._uses_of(m)
            if joined != len(obtained):
                got, joined = "\n".join(obtained), len(obtained)
            for a in said.candidates:
                if a.text in seen or a.text in always or a.text in self.common or a.text in got:
                    continue
                source = source_of(a.text, bodies if a.kind in ("span", "quote") else texts)
                if source is None:
                    continue
                seen.add(a.text)
                obj = owner.get(source)
                in_contract = any(a.text in s for s in contract_sources.get(source, ()))
                deps.append(
                    Dependency(a.text, a.kind, source, obj.id if obj else None, m.seq, in_contract)
                )
            if self.params.check_contracts:
                for source, sentences in contract_sources.items():
                    for sentence in sentences:
                        if sentence in seen:
                            continue
                        phrase = said.phrase(sentence)
                        if phrase and phrase not in always:
                            seen.add(sentence)
                            obj = owner.get(source)
                            deps.append(
                                Dependency(
                                    sentence,
                                    "contract",
                                    source,
                                    obj.id if obj else None,
                                    m.seq,
                                    True,
                                )
                            )
        # a contract found through its key phrase and through the sentence is one dependency
        contract_anchors = {d.anchor for d in deps if d.kind == "contract"}
        deps = [
            d
            for d in deps
            if not (
                d.contract and d.kind != "contract" and any(d.anchor in s for s in contract_anchors)
            )
        ]
        blocker = current_blocker(index)
        self._case_cache = (item.case_id, item.prefix, item.future, deps, blocker or "", texts)
        return deps, blocker or ""

    def _contract_sentences(
        self, prefix: Sequence[Message], index: ObjectIndex
    ) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        for turn in index.turns():
            if turn.protected:
                continue
            i = turn.messages[0]
            found = self._constraints(prefix[i])
            if found:
                out[i] = found
        return out

    # --- the verdict ----------------------------------------------------------------------
    def judge(self, item: JudgeInput) -> Verdict:
        deps, blocker = self.dependencies(item)
        if not deps:
            return Verdict("no_impact", reason="the future uses nothing exact from the prefix")
        where = availability(item, view_text="\n".join(self._text(m) for m in item.view))
        view_text, recoverable_text, hidden_text = where.view, where.recoverable, where.unrouted
        texts = self._case_cache[5] if self._case_cache else [message_text(m) for m in item.prefix]
        losses: list[Loss] = []
        recoverable = 0
        for d in deps:
            if d.anchor in view_text:
                continue
            if d.anchor in recoverable_text:
                recoverable += 1
                continue
            category = self._category(
                d, item.index, texts[d.source], blocker, d.anchor in hidden_text
            )
            detail = f"{d.kind} from prefix message {d.source}"
            losses.append(Loss(category, d.anchor, d.source_object, d.need_seq, detail))
        return tally("dependencies", losses, len(deps), recoverable)

    def _category(
        self, d: Dependency, index: ObjectIndex, source_text: str, blocker: str, folded_hidden: bool
    ) -> str:
        if folded_hidden or (d.kind != "contract" and announces_route(source_text, d.anchor)):
            return "recovery_routing"
        obj = index.by_id.get(d.source_object or "")
        if (
            obj is not None
            and obj.kind == "function"
            and (obj.supersedes is not None or obj.id == blocker)
        ):
            return "live_state"
        if d.contract:
            return "behavioural_contract"
        if d.kind in ("span", "quote") and len(d.anchor) >= self.params.min_span:
            return "verbatim_source"
        if Anchor(d.anchor, d.kind).is_locator:
            return "locator_handle"
        return "evidence_detail"
