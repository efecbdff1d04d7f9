"""Need prediction from the prefix alone: how likely each tool result is to be needed again.

A planner that must remove a share of the context should spend it on what the agent is least
likely to need. What the prefix itself shows (never the future):

- **stale**: the same tool was called again with the same arguments (the later result is the
  live one); an error that a later call of the same tool superseded; a file view that a later
  edit of the same file replaced;
- **restated**: the specific values of a result (ids, paths, numbers) that the agent already
  copied into its own later messages — the facts live on there;
- **live handles**: values of a result that later tool calls pass as arguments — the entity is
  still being acted on, so its record is likely needed again;
- **recency**: the future mostly acts on what was read last;
- **size**: removing a large body frees more for the same risk.

Each result gets a score in [0, 1] (0: stale, certainly not needed) and the action the rules
choose for it: ``prune`` what is stale, ``mask`` long repetitive logs to head and tail,
``compact`` structured output losslessly (``replay/compact.py``), ``fold`` behind a pointer what
may be needed again (recoverable), or ``keep``.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..replay.compact import compact_json
from ..replay.context import PrefixContext
from ..replay.objects import ContextObject
from ..replay.view import mask_text
from ..text.facts import facts_of, shape_floor, tokens
from . import _select as sel

#: tools whose call changes a file (its earlier views are stale afterwards)
_WRITES = re.compile(r"edit|write|replace|patch|create|insert|apply|sed", re.IGNORECASE)
_WRITE_KEYS = frozenset({"old_str", "new_str", "content", "patch", "diff", "file_text", "text"})
_PATH = re.compile(r"(?:[\w.@+-]+/)+[\w.@+-]+|[\w-]+\.[A-Za-z]{1,5}\b")


@dataclass(frozen=True)
class Estimate:
    obj: ContextObject
    score: float  # predicted need again: 0 stale … 1 surely needed
    action: str  # prune | mask | compact | fold | keep
    reason: str
    tokens: int  # tokens of the result body
    saving: int  # tokens the action would free
    keep: int = 0  # characters a mask keeps at the head and at the tail


def _args(f: ContextObject) -> dict[str, object]:
    try:
        value = json.loads(f.arguments or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _paths(args: dict[str, object]) -> set[str]:
    return {
        m.group(0)
        for v in args.values()
        if isinstance(v, str) and len(v) < 400
        for m in _PATH.finditer(v)
    }


def _writes(f: ContextObject) -> set[str]:
    """Files a call changes: an editing tool, or arguments that carry new content."""
    args = _args(f)
    if not (_WRITES.search(f.tool_name or "") or _WRITE_KEYS & set(args)):
        return set()
    return _paths({k: v for k, v in args.items() if k not in _WRITE_KEYS})


def _specific(text: str) -> set[str]:
    return {t for t in tokens(text) if shape_floor(t) > 0}


@functools.lru_cache(maxsize=4096)
def _values(body: str) -> frozenset[str]:
    """The specific values a result holds (for JSON: its values, not its keys). A body is read
    once per session, not once per case."""
    found: set[str] = set()
    for fact in facts_of(body):
        if fact.kind != "row":
            found |= {t for t in fact.tokens if shape_floor(t) > 0}
    return frozenset(found)


_log_like = functools.lru_cache(maxsize=4096)(sel.is_log_like)
_compact = functools.lru_cache(maxsize=4096)(compact_json)


def _last_mentions(ctx: PrefixContext) -> tuple[dict[str, int], dict[str, int]]:
    """Token → the last message where the agent's prose says it, and where its calls pass it."""
    prose: dict[str, int] = {}
    calls: dict[str, int] = {}
    for i, m in enumerate(ctx.messages):
        if m.role != "assistant":
            continue
        for p in m.parts:
            if p.type == "text" and p.content:
                prose.update(dict.fromkeys(_specific(p.content), i))
            elif p.type == "tool_call":
                calls.update(dict.fromkeys(_specific(p.arguments or ""), i))
    return prose, calls


def predict(
    ctx: PrefixContext,
    candidates: Sequence[ContextObject],
    *,
    log_min_lines: int = 20,
    log_shape_ratio: float = 0.6,
    mask_ratio: float = 0.1,
    half_life: float = 4.0,
) -> list[Estimate]:
    """A need estimate for each candidate function object (prefix order kept)."""
    functions = ctx.index.functions()
    position = {f.id: i for i, f in enumerate(functions)}
    prose, calls = _last_mentions(ctx)
    last_success: dict[str | None, int] = {}  # tool → position of its last call that worked
    last_write: dict[str, ContextObject] = {}  # path → the last call that changed it
    writes = {f.id: _writes(f) for f in functions}
    for f in functions:
        if not f.is_error:
            last_success[f.tool_name] = position[f.id]
        last_write.update(dict.fromkeys(writes[f.id], f))
    out: list[Estimate] = []
    for f in candidates:
        body = sel.result_body(ctx, f)
        size = sel.body_tokens(ctx, f)
        here = position[f.id]
        age = len(functions) - 1 - here
        recency = math.exp(-age / half_life) if half_life > 0 else 0.0
        if f.superseded_by is not None:
            out.append(Estimate(f, 0.0, "prune", f"superseded by {f.superseded_by}", size, size))
            continue
        if f.is_error and last_success.get(f.tool_name, -1) > here:
            out.append(Estimate(f, 0.0, "prune", "failed_attempt", size, size))
            continue
        read = _paths(_args(f)) if not writes[f.id] else set()
        replaced = [g for p in sorted(read) if (g := last_write.get(p)) and position[g.id] > here]
        if replaced:
            reason = f"file view replaced by {replaced[0].id}"
            out.append(Estimate(f, 0.05, "prune", reason, size, size))
            continue
        values = _values(body)
        live = {t for t in values if calls.get(t, -1) > f.result_index}
        restated = {t for t in values if prose.get(t, -1) > f.result_index}
        score = 0.25 + 0.5 * recency
        reasons = [f"recency {recency:.2f}"]
        if live:
            score += 0.25
            reasons.append(f"live handles: {', '.join(sorted(live)[:3])}")
        if values and len(restated) >= 0.8 * len(values) and not live:
            score -= 0.2
            reasons.append("restated by the agent")
        score = max(0.0, min(1.0, score))
        reason = "; ".join(reasons)
        if _log_like(body, log_min_lines, log_shape_ratio):
            keep = int(len(body) * mask_ratio)
            saving = sel.replaced_saving(ctx, f, mask_text(body, keep, keep, ctx.count))
            out.append(
                Estimate(f, score, "mask", "repetitive_log; " + reason, size, max(0, saving), keep)
            )
            continue
        compacted = _compact(body)
        if compacted is not None:
            saving = sel.replaced_saving(ctx, f, compacted)
            out.append(Estimate(f, score, "compact", "structured; " + reason, size, max(0, saving)))
            continue
        out.append(Estimate(f, score, "fold", reason, size, size))
    return out


def priority(estimates: Sequence[Estimate]) -> list[Estimate]:
    """The order in which to spend a budget: what is stale and the lossless compactions first,
    then by predicted need per token freed (score / √saving): the same risk buys more in a large
    body, and what a future step needs is a small part of one (a record, a line)."""
    free = [e for e in estimates if e.action in ("prune", "compact")]
    rest = sorted(
        (e for e in estimates if e.action not in ("prune", "compact")),
        key=lambda e: (e.score / math.sqrt(max(e.saving, 1)), -e.saving),
    )
    return [*free, *rest]
