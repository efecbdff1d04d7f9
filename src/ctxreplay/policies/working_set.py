"""``working-set``: spend a budget on the tool results the prefix predicts least needed per token.

A coding session's context is mostly tool output (file reads, command output, listings); the next
turns need a small, mostly recent part of it. This policy predicts, from the prefix alone, how
likely each result is to be needed again (a logistic model over the recorded structure the
importers keep: positions, sizes, errors, repeated calls, the paths in the call's arguments and
the user's latest request), and removes the least needed per token first.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..registry import param
from ..replay.context import PrefixContext
from ..replay.objects import ContextObject, latest_user_message
from ..replay.plan import Edit, Plan
from . import _select as sel
from .base import Policy, policy
from .budget import BudgetParams, Need, budget_of, spend
from .need import _last_mentions, _values

#: a path or a file name in a call's arguments (``src/app.py``, ``README.md``, ``~/.cfg/x``)
_PATH = re.compile(r"(?:~?[\w.@+-]*/)+[\w.@+-]+|[\w-]+\.[A-Za-z]{1,5}\b")
#: words of a name or a request: ``PDL_SPEC`` → pdl, spec; ``runTests`` → run, tests;
#: ``READMEs`` → readmes
_WORD = re.compile(r"[A-Z]+s\b|[A-Za-z][a-z]+|[A-Z]+(?![a-z])|\d+")
_STOPWORDS = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "that",
        "this",
        "from",
        "into",
        "your",
        "you",
        "are",
        "was",
        "were",
        "have",
        "has",
        "not",
        "but",
        "all",
        "any",
        "can",
        "our",
        "out",
        "use",
        "add",
        "new",
        "get",
        "let",
        "its",
        "now",
        "then",
        "them",
        "they",
        "what",
        "when",
        "where",
        "which",
        "who",
        "will",
        "would",
        "should",
        "could",
        "about",
        "also",
        "just",
        "like",
        "make",
        "need",
        "only",
        "some",
        "such",
        "than",
        "there",
        "these",
        "those",
        "want",
        "here",
        "more",
        "most",
        "very",
    ]
)
#: tools (or commands) that list names, search, or read a file
_LISTING = re.compile(r"(?i)^(ls|glob|find|tree|list)|\b(ls|find|tree|fd)\b")
_SEARCH = re.compile(r"(?i)grep|search|\brg\b|fetch")
_READ = re.compile(r"(?i)^read|\b(cat|sed -n|head|tail|nl)\b|open|view")
#: the agent's own plan or todo list: its call is never a candidate (it is the current step)
_PLAN_TOOL = re.compile(r"(?i)todo|plan")
#: the calls whose paths make up the recent focus
FOCUS_CALLS = 5

#: the features of the need model, in the order of ``WorkingSet.Params``' weights
FEATURES = (
    "age",
    "turns",
    "size",
    "error",
    "superseded",
    "task",
    "focus",
    "referenced",
    "listing",
    "search",
    "read",
)


def _paths(text: str | None) -> frozenset[str]:
    return frozenset(m.group(0).rstrip(".") for m in _PATH.finditer(text or ""))


def _words(text: str) -> frozenset[str]:
    return frozenset(
        w.lower() for w in _WORD.findall(text) if len(w) >= 3 and w.lower() not in _STOPWORDS
    )


@functools.lru_cache(maxsize=8192)
def name_words(arguments: str | None) -> frozenset[str]:
    """The words of the file names a call's arguments carry (the stems, not the folders)."""
    out: set[str] = set()
    for path in _paths(arguments):
        base = path.rsplit("/", 1)[-1]
        out |= _words(base.rsplit(".", 1)[0] if "." in base else base)
    return frozenset(out)


def request_words(ctx: PrefixContext) -> frozenset[str]:
    """The words of the user's latest request (the message carrying the latest user turn)."""
    at = latest_user_message(ctx.index)
    if at is None:
        return frozenset()
    return _words(" ".join(p.content or "" for p in ctx.messages[at].parts if p.type == "text"))


def names_match(names: frozenset[str], request: frozenset[str]) -> bool:
    """A file name the request names: a shared word, or one word a prefix of the other (both
    at least four letters: ``readmes`` names ``README``)."""
    if names & request:
        return True
    return any(
        len(a) >= 4 and len(b) >= 4 and (a.startswith(b) or b.startswith(a))
        for a in names
        for b in request
    )


def features(ctx: PrefixContext, candidates: Sequence[ContextObject]) -> dict[str, list[float]]:
    """Object id → the need model's features (``FEATURES``), from the prefix alone."""
    functions = ctx.index.functions()
    position = {f.id: i for i, f in enumerate(functions)}
    prose, calls = _last_mentions(ctx)
    request = request_words(ctx)
    latest_turn = max((o.turn for o in ctx.index.objects), default=0)
    focus: set[str] = set()
    for g in functions[-FOCUS_CALLS:]:
        focus |= _paths(g.arguments)
    out: dict[str, list[float]] = {}
    for f in candidates:
        body = sel.result_body(ctx, f)
        later = sum(
            1 for t in _values(body) if max(calls.get(t, -1), prose.get(t, -1)) > f.result_index
        )
        tool, args = f.tool_name or "", f.arguments or ""
        out[f.id] = [
            math.log1p(len(functions) - 1 - position[f.id]),
            math.log1p(max(0, latest_turn - f.turn)),
            math.log1p(f.result_tokens),
            float(f.is_error),
            float(f.superseded_by is not None),
            float(names_match(name_words(f.arguments), request)),
            float(bool(focus & _paths(args))),
            math.log1p(later),
            float(bool(_LISTING.search(tool) or _LISTING.search(args[:200]))),
            float(bool(_SEARCH.search(tool))),
            float(bool(_READ.search(tool) or _READ.search(args[:120]))),
        ]
    return out


@dataclass(frozen=True)
class Candidate:
    obj: ContextObject
    need: float  # predicted probability that the next turns need this result
    saving: int  # tokens its removal frees

    def rank(self, power: float) -> float:
        """Predicted need per token freed (``power`` weighs the tokens)."""
        return float(self.need / max(self.saving, 1) ** power)


@policy("working-set")
class WorkingSet(Policy):
    """Remove the tool results least likely to be needed again per token freed.

    Anchors: Denning's working-set model (what the recent window references stays resident;
    the rest may be evicted), applied to tool results as Anthropic's context editing
    ``clear_tool_uses_20250919`` does (the call envelope stays, the result goes), with Self-GC's
    fold (a recoverable pointer) for what is evicted but may be wanted back.

    Need model: ``P(needed) = logistic(bias + Σ weight × feature)`` over ``FEATURES``, each read
    from the prefix's recorded structure, never its text's meaning: ``age`` log(1 + tool calls
    since), ``turns`` log(1 + user turns since), ``size`` log(1 + result tokens), ``error``,
    ``superseded`` (the same call was made again later), ``task`` (a file the user's latest
    request names), ``focus`` (a path one of the last five calls touches), ``referenced``
    log(1 + the result's specific values the agent passed or said later), and the kind of call
    (``listing``, ``search``, ``read``). The default weights are fitted on the six labelled
    corpora by ``benchmarks/policy_loco.py --fit`` (which reports each corpus held out).

    Spending: candidates (editable results freeing at least ``min_saving`` tokens; never the
    agent's todo/plan calls, nor the ``keep`` most recent results) are taken by
    ``P(needed) / tokens`` ascending until the need (``target``/``budget``) is met; then the
    chosen ones most likely needed are given back while the need stays met, and with
    ``partial`` the last one taken is masked (head and tail kept) to free only what is still
    needed. A result predicted below ``prune_below`` is pruned behind a placeholder; the others
    are folded behind a pointer (recoverable). With no target and no budget, the policy removes
    only what is predicted below ``remove_below``.
    """

    @dataclass(frozen=True)
    class Params(BudgetParams):
        bias: float = param(0.0, "need model: the intercept")
        w_age: float = param(-0.914, "need model: weight of log(1 + tool calls since)")
        w_turns: float = param(-0.246, "need model: weight of log(1 + user turns since)")
        w_size: float = param(-0.024, "need model: weight of log(1 + result tokens)")
        w_error: float = param(0.0, "need model: weight of an error result")
        w_superseded: float = param(-1.565, "need model: weight of a call made again later")
        w_task: float = param(0.509, "need model: weight of a file the latest request names")
        w_focus: float = param(-0.972, "need model: weight of a path the last calls touch")
        w_referenced: float = param(0.0, "need model: weight of log(1 + values reused later)")
        w_listing: float = param(0.13, "need model: weight of a listing (ls, find, glob)")
        w_search: float = param(0.0, "need model: weight of a search or fetch")
        w_read: float = param(-0.121, "need model: weight of a file read")
        size_power: float = param(
            1.0, "spend by need / tokens^size_power (0: by need alone, 1: per token)", ge=0
        )
        keep: int = param(0, "most recent tool results never removed", ge=0)
        min_saving: int = param(100, "a result freeing fewer tokens is never removed", ge=0)
        prune_below: float = param(
            0.01, "predicted need below this: prune; at or above: fold (recoverable)", ge=0, le=1
        )
        remove_below: float = param(
            0.02,
            "no target and no budget: remove every result predicted below this need",
            ge=0,
            le=1,
        )
        partial: bool = param(True, "mask the last result taken to free only what is needed")

    def weights(self) -> list[float]:
        p = self.params
        return [
            p.w_age, p.w_turns, p.w_size, p.w_error, p.w_superseded, p.w_task, p.w_focus,
            p.w_referenced, p.w_listing, p.w_search, p.w_read,
        ]  # fmt: skip

    def candidates(self, ctx: PrefixContext) -> list[Candidate]:
        """Every removable result with its predicted need, in the order of spending."""
        p = self.params
        recent = sel.most_recent(ctx.index.functions(), p.keep)
        objs = [
            f
            for f in sel.editable_functions(ctx)
            if f.id not in recent and not _PLAN_TOOL.search(f.tool_name or "")
        ]
        saving = {f.id: sel.replaced_saving(ctx, f, sel.CLEARED) for f in objs}
        objs = [f for f in objs if saving[f.id] >= max(p.min_saving, 1)]
        x = features(ctx, objs)
        w = self.weights()
        out = []
        for f in objs:
            z = p.bias + sum(a * b for a, b in zip(w, x[f.id], strict=True))
            out.append(
                Candidate(f, 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z)))), saving[f.id])
            )
        return sorted(out, key=lambda c: (c.rank(p.size_power), -c.saving))

    def propose(self, ctx: PrefixContext, need: Need) -> Plan:
        ranked = self.candidates(ctx)
        if not need.active:
            chosen = [c for c in ranked if c.need < self.params.remove_below]
            return Plan(self._ordered(ctx, [self._edit(c) for c in chosen]), meta={})
        spent = spend(((c, c.saving) for c in ranked), need)
        chosen = list(spent.edits)
        total = spent.planned
        power = self.params.size_power
        for c in sorted(chosen, key=lambda c: -c.rank(power)):  # give back the most needed first
            if total - c.saving >= need.tokens:
                chosen.remove(c)
                total -= c.saving
        edits = [self._edit(c) for c in chosen]
        if self.params.partial and chosen and spent.met:
            edits[-1] = self._partial(ctx, chosen[-1], need, total) or edits[-1]
        return Plan(self._ordered(ctx, edits), budget=budget_of(need, spent))

    def _edit(self, c: Candidate) -> Edit:
        reason = f"need {c.need:.3f} for {c.saving:,} tokens"
        if c.need < self.params.prune_below:
            return sel.clear(c.obj, sel.CLEARED, reason)
        return Edit(c.obj.id, "fold", reason=reason)

    def _partial(self, ctx: PrefixContext, c: Candidate, need: Need, total: int) -> Edit | None:
        """The last result taken, masked to free only what the need still asks of it (its
        head and tail kept), when that keeps a useful share of it."""
        still = need.tokens - (total - c.saving)  # what this result must free
        body = sel.result_body(ctx, c.obj)
        if still <= 0 or still >= 0.8 * c.saving or len(body) < 2000:
            return None
        kept = int(len(body) * (1 - still / c.saving) / 2)
        return Edit(c.obj.id, "mask", head=kept, tail=kept, reason=f"partial; need {c.need:.3f}")

    @staticmethod
    def _ordered(ctx: PrefixContext, edits: list[Edit]) -> tuple[Edit, ...]:
        order = {o.id: k for k, o in enumerate(ctx.index.objects)}
        return tuple(sorted(edits, key=lambda e: order[e.object_id]))
