"""The flow judge: which facts of the prefix each future message uses (``rules``), and whether
the view still holds them.

A used fact is available when its text is still in the view (a short one where it was, or in
what the policy wrote; a long one anywhere), recoverable when it is only in an archive whose
pointer the view shows, and otherwise lost — unless what the future named by key is still in
the view under the same key, or in a user's or the agent's own message (a record read again,
the agent's summary of it). Each loss keeps the removed text and the future message that
needed it, filed in the six-category taxonomy.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ...datasets.messages import Message
from ...registry import param
from ...replay.objects import current_blocker
from ...text.anchors import ROUTE, is_constraint
from ...text.facts import SHINGLE, Fact, Weights, raw_document_frequency, shape_floor, squash
from ..base import (
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
from .index import SessionIndex, SessionStats
from .messages import ALWAYS_ROLES
from .rules import Use, case_uses, make_case

#: the version of the rules: verdicts made by other rules are judged again, never reused
RULES_VERSION = "3"


def _session_texts(sessions: Iterable[Sequence[Message]]) -> Iterator[Iterator[str]]:
    """What the corpus weights count: each session's messages as rendered, system prompts
    aside."""
    return (
        (rendered(m) for m in messages if m.role not in ("system", "developer"))
        for messages in sessions
    )


def frequency_of(sessions: Iterable[Sequence[Message]]) -> tuple[dict[str, int], int]:
    """In how many of these sessions each token occurs (every token: the counts of parts of a
    corpus add up), and how many sessions."""
    return raw_document_frequency(_session_texts(sessions))


def session_messages(items: Sequence[JudgeInput]) -> list[Message]:
    """The messages of a session's inputs: the whole session where the engine gave it
    (``JudgeInput.session``), else every message of their prefixes and futures, once."""
    if items and items[0].session is not None:
        return list(items[0].session)
    seen: dict[int, Message] = {}
    for item in items:
        for m in (*item.prefix, *item.future):
            seen.setdefault(id(m), m)
    return sorted(seen.values(), key=lambda m: m.seq)


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
        habit: int = param(
            3,
            "an argument the agent passed with the same value in this many earlier messages "
            "rests on no one message (0: none does)",
            ge=0,
        )
        boilerplate: int = param(
            3,
            "a line repeated in this many of the session's observations is no fact (0: none is)",
            ge=0,
        )
        session_share: float = param(
            0.03,
            "a copied word in more than this share of the session's messages (and more than "
            "session_min) is the session's vocabulary, no sign of a copy",
            ge=0,
            le=1,
        )
        session_min: int = param(
            5, "a copied word in at most this many of the session's messages is rare in it", ge=0
        )
        body_chars: int = param(
            200,
            "an argument value longer than this, or of several lines, is a body the agent "
            "writes: only its locators and copies count",
            ge=1,
        )
        small_values: bool = param(
            True, "a small value passed under the key a tool result gave it is a use"
        )
        latest_errors: bool = param(
            True, "the last tool result's environment errors are used by the next agent message"
        )
        elsewhere: bool = param(
            True,
            "a value named by key is still available where the view holds it under that key, "
            "or in a user's or the agent's message",
        )

    def __init__(self, params: FlowJudge.Params | None = None) -> None:
        super().__init__(params)
        self.weights = Weights(common=self.params.common_fraction)
        self._index: SessionIndex | None = None
        #: the last case's uses, by the case's id and its prefix and future (by identity)
        self._case: tuple[str, tuple[Message, ...], tuple[Message, ...], list[Use]] | None = None

    def inputs_fingerprint(self) -> str:
        """The rules' version: verdicts made by earlier rules are judged again."""
        return f"flow-rules-{RULES_VERSION}"

    # --- corpus-level weights ---------------------------------------------------------------
    def corpus_state(self, corpus: Any) -> dict[str, Any]:
        """In how many sessions each token occurs (those in three or more), and how many
        sessions: one pass over the corpus, split across processes (it reads every message)."""
        df, n = corpus_frequencies(corpus, frequency_of, at_least=lambda n: 3)
        return {"df": df, "sessions": n}

    def use_state(self, state: Any) -> None:
        state = state or {}
        self.weights = Weights(
            state.get("df", {}), int(state.get("sessions", 0)), self.params.common_fraction
        )

    # --- sessions: the engine begins and ends them ------------------------------------------
    def begin_session(self, items: Sequence[JudgeInput]) -> None:
        """A new ``SessionIndex`` for the session of ``items`` (its statistics from the whole
        session where the engine gives it), kept until ``end_session``. Copies are looked for
        only by the agent messages of the session's futures: of what a message reads, the word
        runs those hold are all that matter."""
        if not items:
            return
        copiers = {id(m): m for item in items for m in item.future if m.role == "assistant"}
        self._index = self._new_index(items, list(copiers.values()))

    def end_session(self) -> None:
        self._index = None
        self._case = None

    def _new_index(self, items: Sequence[JudgeInput], copiers: Sequence[Message]) -> SessionIndex:
        self._case = None
        return SessionIndex(
            items[0].session_id,
            SessionStats.of(session_messages(items)),
            copiers,
            self.params.body_chars,
            items[0].session,
        )

    @property
    def session_index(self) -> SessionIndex | None:
        """The index of the session begun (or of the inputs looked at since), if any."""
        return self._index

    def _fits(self, index: SessionIndex, item: JudgeInput) -> bool:
        """Whether an input belongs to the session the index was made for: the same session
        (by the messages the engine gave, or, without them, by the same statistics), all of
        whose agent messages the index knows."""
        if index.session_id != item.session_id or not index.covers(item.future):
            return False
        if item.session is not None or index.session is not None:
            return item.session is index.session
        return SessionStats.of(session_messages([item])) == index.stats

    def uses(self, item: JudgeInput) -> list[Use]:
        """The facts of the prefix the future uses (the same for every view of the case)."""
        c = self._case
        if c and c[0] == item.case_id and c[1] is item.prefix and c[2] is item.future:
            return c[3]
        index = self._index
        if index is None or not self._fits(index, item):
            # an input of no session begun: an index of its own, every word run looked for
            index = self._index = self._new_index([item], ())
        assert index is not None
        case = make_case(self.params, self.weights, index, item.prefix, item.index, item.future)
        uses = case_uses(case, item.future)
        self._case = (item.case_id, item.prefix, item.future, uses)
        return uses

    # --- the verdict ----------------------------------------------------------------------
    def judge(self, item: JudgeInput) -> Verdict:
        uses = self.uses(item)
        if not uses:
            return Verdict("no_impact", reason="the future uses no fact from the editable prefix")
        index = self._index
        assert index is not None
        kept = {id(m) for m in item.view}
        # a use whose source message the view kept as it was is available: the view is looked
        # into only for the others (none, for a view that kept every source)
        missing = [u for u in uses if id(item.prefix[u.source]) not in kept]
        if not missing:
            if item.archives:  # read all the same: one that does not read leaves it unscored
                availability(item, parts_text)
            return tally("facts used", [], len(uses), 0)
        # a short fact ("344") is looked for where it was (its message, as the view left it)
        # and in what the policy wrote (summaries, notes); a long one anywhere in the view
        at_seq: dict[int, str] = {}
        written: list[str] = []
        for m in item.view:
            text = index.squashed(m)
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
        holds: ViewHolds | None = None
        for u in missing:
            if _present(u.fact, at_seq.get(item.prefix[u.source].seq, ""), written_sq, view_sq):
                continue
            if self.params.elsewhere and u.how == "key":
                holds = holds if holds is not None else ViewHolds(index, item.view)
                if holds.holds(u):
                    continue
            if recoverable_sq and u.fact.in_text(recoverable_sq):
                recoverable += 1
                continue
            losses.append(loss_of(u, item, blocker, hidden_sq))
        return tally("facts used", losses, len(uses), recoverable)


class ViewHolds:
    """Whether a value the future named by key is in the view still (``holds``): under the
    same key in any message (a record read again), or in a user's or the agent's own message
    (its summary). The view's messages are looked into once per view, not once per use, and
    only as far as a use needs: each key's field tokens, and the tokens of the user's and the
    agent's messages, gathered as the scan goes."""

    def __init__(self, index: SessionIndex, view: Sequence[Message]) -> None:
        self.index = index
        self.rest = iter(view)
        self.by_key: dict[str, list[frozenset[str]]] = {}
        self.prose: list[frozenset[str]] = []

    def holds(self, u: Use) -> bool:
        if u.how != "key" or not u.evidence_tokens or not u.fact.key:
            return False
        key, wanted = u.fact.key[-1], u.evidence_tokens
        if any(wanted <= t for t in self.by_key.get(key, ())) or any(
            wanted <= t for t in self.prose
        ):
            return True
        for m in self.rest:  # the messages not looked into yet
            if m.role in ALWAYS_ROLES:
                continue
            info = self.index.source(m)
            hit = False
            for k, where in info.by_key.items():
                tokens = [info.fields[j].tokens for j in where]
                self.by_key.setdefault(k, []).extend(tokens)
                hit = hit or (k == key and any(wanted <= t for t in tokens))
            if m.role in ("assistant", "user") and not info.result:
                self.prose.append(info.tokens)
                hit = hit or wanted <= info.tokens
            if hit:
                return True
        return False


#: a probe this long is specific enough to be found anywhere in the view
LONG_PROBE = 16


def _present(fact: Fact, at_source: str, written: str, view: str) -> bool:
    return any(
        p in at_source or p in written or (len(p) >= LONG_PROBE and p in view) for p in fact.probes
    )


_LOCATOR_KEY = re.compile(r"\b(id|ids|number|code|path|file|url|uri|email|handle|key|name)\b")


@functools.lru_cache(maxsize=1 << 12)
def _routes(text: str) -> bool:
    """Whether a fact's text is the way back to something (``ROUTE``): the views of a case
    share their facts, and a case-blind pattern over a long line is no cheap test."""
    return ROUTE.search(text) is not None


def loss_of(u: Use, item: JudgeInput, blocker: str | None, hidden_sq: str) -> Loss:
    """The loss of a use the view does not hold (``hidden_sq``: archived text no pointer
    routes to)."""
    category = _category(u, item, blocker, bool(hidden_sq) and u.fact.in_text(hidden_sq))
    detail = f"{u.fact.kind} of prefix message {u.source}, used by {u.how}: {u.evidence}"
    return Loss(category, u.fact.shown or u.fact.text, u.source_object, u.need_seq, detail)


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
    if u.how == "copy":
        return "verbatim_source"
    evidence = u.evidence.split(", ")
    if any(shape_floor(t) >= 1.0 for t in evidence) or _LOCATOR_KEY.search(" ".join(u.fact.key)):
        return "locator_handle"
    return "evidence_detail"


__all__ = ["RULES_VERSION", "FlowJudge", "ViewHolds", "frequency_of", "session_messages"]
