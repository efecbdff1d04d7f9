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

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..judges.facts import facts_of, shape_floor, tokens
from ..replay.compact import compact_json
from ..replay.objects import ContextObject
from . import _select as sel
from .base import PrefixContext

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


def _args(ctx: PrefixContext, f: ContextObject) -> dict[str, object]:
    try:
        value = json.loads(sel.call_part(ctx, f).arguments or "{}")
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


def _writes(ctx: PrefixContext, f: ContextObject) -> set[str]:
    """Files a call changes: an editing tool, or arguments that carry new content."""
    args = _args(ctx, f)
    if not (_WRITES.search(f.tool_name or "") or _WRITE_KEYS & set(args)):
        return set()
    return _paths({k: v for k, v in args.items() if k not in _WRITE_KEYS})


def _specific(text: str) -> set[str]:
    return {t for t in tokens(text) if shape_floor(t) > 0}


def _values(body: str) -> set[str]:
    """The specific values a result holds (for JSON: its values, not its keys)."""
    found: set[str] = set()
    for fact in facts_of(body):
        if fact.kind != "row":
            found |= {t for t in fact.tokens if shape_floor(t) > 0}
    return found


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
    later_prose: list[set[str]] = []  # specific tokens of the agent's prose after message i
    later_calls: list[set[str]] = []  # ... and of its calls' arguments
    prose: set[str] = set()
    calls: set[str] = set()
    for m in reversed(ctx.messages):
        later_prose.append(set(prose))
        later_calls.append(set(calls))
        if m.role == "assistant":
            for p in m.parts:
                if p.type == "text" and p.content:
                    prose |= _specific(p.content)
                elif p.type == "tool_call":
                    calls |= _specific(p.arguments or "")
    later_prose.reverse()
    later_calls.reverse()
    writes = {f.id: _writes(ctx, f) for f in functions}
    out: list[Estimate] = []
    for f in candidates:
        body = sel.result_body(ctx, f)
        size = sel.body_tokens(ctx, f)
        age = len(functions) - 1 - position[f.id]
        recency = math.exp(-age / half_life) if half_life > 0 else 0.0
        if f.superseded_by is not None:
            out.append(Estimate(f, 0.0, "prune", f"superseded by {f.superseded_by}", size, size))
            continue
        later = functions[position[f.id] + 1 :]
        if f.is_error and any(g.tool_name == f.tool_name and not g.is_error for g in later):
            out.append(Estimate(f, 0.0, "prune", "failed_attempt", size, size))
            continue
        read = _paths(_args(ctx, f)) if not writes[f.id] else set()
        replaced = next((g for g in later if read & writes[g.id]), None)
        if replaced is not None:
            reason = f"file view replaced by {replaced.id}"
            out.append(Estimate(f, 0.05, "prune", reason, size, size))
            continue
        values = _values(body)
        live = values & later_calls[f.result_index]
        restated = values & later_prose[f.result_index]
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
        if sel.is_log_like(body, log_min_lines, log_shape_ratio):
            keep = int(len(body) * mask_ratio)
            saving = size - ctx.count(body[:keep] + body[len(body) - keep :])
            out.append(
                Estimate(f, score, "mask", "repetitive_log; " + reason, size, max(0, saving))
            )
            continue
        compacted = compact_json(body)
        if compacted is not None:
            saving = size - ctx.count(compacted)
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
        (e for e in estimates if e not in free),
        key=lambda e: (e.score / math.sqrt(max(e.saving, 1)), -e.saving),
    )
    return [*free, *rest]
