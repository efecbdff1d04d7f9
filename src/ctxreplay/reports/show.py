"""``ctxreplay show``: one case under one policy, message by message, and what the judge found.

The header says what the view removed (pruned, masked, folded, compacted objects and their
tokens); each prefix message is a row with its objects' full ids, what the view did to them and
its tokens before → after, its text, and under it, when the view changed it, what the view holds
instead. When the run is judged, each loss follows: its category, the lost span (the anchor),
the object that held it, and the future message that needed it, with the span marked «…» where
it can be found. Every line fits ``width``.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from ..datasets.cases import materialise
from ..datasets.messages import ENCRYPTED_REASONING_MIME, Message
from ..replay.objects import ObjectIndex
from ..runs import Run, RunError, judge_label, query_verdicts, verdict_judges, view_messages
from .formatting import GAP, MIN_WIDTH, RenderError, category_title, terminal_width, wrap

#: what the view did to an object, as the table says it
DONE = {
    "keep": "kept",
    "prune": "pruned",
    "mask": "masked",
    "fold": "folded",
    "compact": "compacted",
}
#: the narrowest text column beside the table's fixed columns; narrower, text goes under the row
TEXT_MIN = 30
#: lines of the future message shown around the span it needed
FUTURE_LINES = 3


def _flat(m: Message) -> str:
    pieces = []
    for p in m.parts:
        if p.type == "text":
            pieces.append(p.content or "")
        elif p.type == "tool_call":
            pieces.append(f"→ {p.name}({p.arguments})")
        elif p.type == "tool_call_response":
            pieces.append(f"← {p.content or ''}")
        elif p.type == "reasoning":
            if p.mime_type == ENCRYPTED_REASONING_MIME:  # opaque: counted, never shown
                pieces.append(f"(encrypted reasoning, {len(p.content or ''):,} bytes)")
            else:
                pieces.append(f"(thinking) {p.content or ''}")
        else:
            pieces.append(f"[{p.modality or p.type} {p.mime_type or ''}]")
    return " ".join(" ".join(pieces).split())


def _snippet(m: Message | None, width: int) -> str:
    if m is None:
        return "—"
    text = _flat(m)
    if not text:
        return "(empty)"
    return _clip(text, width)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 2].rstrip() + " …"


def locate(text: str, needle: str) -> tuple[int, int] | None:
    """Where ``needle`` occurs in ``text``, ignoring whitespace and case (anchors are often
    tokenised: ``77 . 3 million`` for ``77.3 million``); None when it does not."""
    keep = [(i, c.lower()) for i, c in enumerate(text) if not c.isspace()]
    squeezed = "".join(c for _, c in keep)
    target = "".join(needle.lower().split())
    if not target:
        return None
    at = squeezed.find(target)
    if at < 0:
        return None
    return keep[at][0], keep[at + len(target) - 1][0] + 1


def needles(loss: dict[str, Any]) -> list[str]:
    """What to look for in the future message: the anchor, then what the judge says the future
    used of it (``… used by tokens: a, b``)."""
    out = [loss["anchor"] or ""]
    detail = loss.get("detail") or ""
    if "used by " in detail and ": " in detail.split("used by ", 1)[1]:
        used = detail.split("used by ", 1)[1].split(": ", 1)[1]
        out += [u.strip() for u in used.split(", ") if u.strip()]
    return out


def future_excerpt(m: Message, loss: dict[str, Any], room: int) -> str:
    """``m``'s text cut to about ``room`` characters around the span the loss needed, the span
    marked «…» (the start of the text when the span cannot be found)."""
    text = _flat(m) or "(empty)"
    span = next((s for s in (locate(text, n) for n in needles(loss)) if s), None)
    if span is None:
        return _clip(text, room)
    start, end = span
    end = min(end, start + max(1, room - 8))  # a span longer than the room: its start
    budget = max(0, room - 6 - (end - start))  # the context either side, less «», and …s
    lo = max(0, start - budget // 2)
    hi = min(len(text), end + budget - (start - lo))
    lo = max(0, lo - (budget - (start - lo) - (hi - end)))  # room the right left unused
    if lo > 0 and (space := text.find(" ", lo, start)) >= 0:
        lo = space + 1  # whole words at the edges
    if hi < len(text) and (space := text.rfind(" ", end, hi)) >= 0:
        hi = space
    return (
        ("… " if lo > 0 else "")
        + f"{text[lo:start]}«{text[start:end]}»{text[end:hi]}"
        + (" …" if hi < len(text) else "")
    )


def case_row(run: Run, case_id: str) -> dict[str, Any] | None:
    """The case's row of the run's cases file (None when the file is gone or lacks it)."""
    from ..datasets.cases import read_cases
    from ..errors import CtxreplayError

    try:
        cases, _ = read_cases(run.manifest["cases_path"])
    except (CtxreplayError, OSError, KeyError):
        return None
    rows = cases.filter(pl.col("case_id") == case_id)
    return rows.row(0, named=True) if rows.height else None


def _verdict(
    run: Run, case_id: str, label: str, judge: str | None
) -> tuple[str | None, dict[str, Any] | None]:
    """The judge label meant and its verdict of the case under ``label`` (None: none)."""
    chosen = judge_label(verdict_judges(run.path), judge, RunError)
    if chosen is None:
        return None, None
    # the verdict ``read_verdicts`` keeps of the pair: the first in scan order
    where = (
        (pl.col("judge") == chosen) & (pl.col("policy") == label) & (pl.col("case_id") == case_id)
    )
    mine = query_verdicts(run.path, lambda scan: scan.filter(where).head(1))
    return chosen, (mine.row(0, named=True) if mine.height else None)


def _removed_line(changed: Sequence[tuple[str, str, int, int]], added: Sequence[int]) -> str:
    """What the view did, message by message so that it adds up: ``changed`` holds, per prefix
    message the view changed, (object, what was done, tokens before, tokens after); ``added``
    the tokens of each block the harness added. The totals are the prefix's and the view's."""
    done: dict[str, tuple[set[str], int, int]] = {}
    for obj, verb, before, after in changed:
        objects, b, a = done.get(verb, (set(), 0, 0))
        done[verb] = (objects | {obj}, b + before, a + after)
    if not done and not added:
        return "the view removed nothing: every object kept"
    order = [*DONE.values(), "changed"]
    parts = [
        f"{verb} {len(objs):,} object{'s' if len(objs) != 1 else ''} ({b:,} → {a:,} tokens)"
        for verb, (objs, b, a) in sorted(
            done.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)
        )
    ]
    if added:
        blocks = f"block{'s' if len(added) != 1 else ''}"
        parts.append(f"added {len(added):,} {blocks} (+{sum(added):,} tokens)")
    removed = sum(b - a for _, _, b, a in changed) - sum(added)
    return "the view: " + ", ".join(parts) + f"; {removed:,} tokens removed in all"


def done(action: dict[str, dict[str, Any]], oid: str) -> str:
    """What the view did to an object, as the table says it (``*``: rehearsal dropped the edit
    the plan proposed)."""
    d = action.get(oid)
    if d is None:
        return "kept"
    return str(DONE.get(d["action"], d["action"])) + ("*" if d["dropped_reason"] else "")


def _verb(action: str) -> str:
    """``pruned with conversation:user:3`` → ``pruned``: what was done, for the summary."""
    return action.split(" with ", 1)[0].rstrip("*")


@dataclass(frozen=True)
class ShownCase:
    """One case under one policy, read once: what ``show`` and the case browser draw from."""

    label: str
    row: dict[str, Any]  # the views row
    session: list[Message]
    prefix: list[Message]
    view: list[Message]
    figures: dict[str, Any]
    decisions: list[dict[str, Any]]
    index: ObjectIndex
    #: what the view did to each object (a call removed with its turn says so)
    action: dict[str, dict[str, Any]]
    #: prefix message index → the objects it belongs to
    owner: dict[int, list[str]]
    #: prefix message index → the view messages (with their tokens) that hold it
    by_index: dict[int, list[tuple[Message, int]]]
    #: prefix message index → the harness blocks added before it (with their objects)
    inserted: dict[int, list[tuple[Message, list[str]]]]


def load_case(run: Run, case_id: str, policy: str) -> ShownCase:
    """A case's prefix, view, figures and decisions, aligned message by message."""
    from ..replay.objects import build_index

    label = run.resolve_policy(policy)
    row = run.view_row(case_id, label)
    session = run.corpus.load_session(row["session_id"])
    prefix = list(materialise(row, session).prefix)
    view = view_messages(row["entries"], prefix)
    figures = run.table("figures", label).filter(pl.col("case_id") == case_id).row(0, named=True)
    decisions = run.table("decisions", label).filter(pl.col("case_id") == case_id).to_dicts()
    index = build_index(prefix, lambda s: 0)
    owner: dict[int, list[str]] = {}
    for obj in index.objects:
        targets = obj.messages if obj.kind == "function" else obj.messages[:1]
        for i in targets:
            owner.setdefault(i, []).append(obj.id)
    action = _with_parents({d["object_id"]: d for d in decisions}, index)
    by_index: dict[int, list[tuple[Message, int]]] = {}
    inserted: dict[int, list[tuple[Message, list[str]]]] = {}
    for entry, m in zip(row["entries"], view, strict=True):
        if entry["index"] is not None:
            by_index.setdefault(entry["index"], []).append((m, entry["tokens"] or m.tokens))
        else:
            ids = list(entry["object_ids"] or [])
            at = min((index[o].messages[0] for o in ids if o in index), default=0)
            inserted.setdefault(at, []).append((m, ids))
    return ShownCase(
        label, row, session, prefix, view, figures, decisions, index, action, owner, by_index,
        inserted,
    )  # fmt: skip


def render_show(
    run: Run,
    case_id: str,
    policy: str,
    width: int | None = None,
    judge: str | None = None,
) -> str:
    """One case under one policy as text at most ``width`` wide (None: the terminal's, 100 when
    not a terminal). ``judge``: whose losses to show (None: the run's only judge, else the
    default judge)."""
    w = terminal_width(width)
    if w == 0:
        raise RenderError(f"show needs a width of at least {MIN_WIDTH}")
    loaded = load_case(run, case_id, policy)
    label, session, prefix = loaded.label, loaded.session, loaded.prefix
    figures, decisions, action = loaded.figures, loaded.decisions, loaded.action
    owner, by_index, inserted = loaded.owner, loaded.by_index, loaded.inserted

    lines = [f"case {case_id}  ·  policy {label}"]
    lines += wrap(
        f"prefix {figures['prefix_tokens']:,} tokens → view {figures['view_tokens']:,} tokens "
        f"({figures['pruning_rate']:.1%} pruned)  ·  committed: {figures['committed']} "
        f"({figures['commit_reason']})"
        + (
            f"  ·  planner failure: {figures['planner_failure']}"
            if figures["planner_failure"]
            else ""
        ),
        w,
        "",
        "  ",
    )
    dropped = json.loads(figures["dropped_reasons"] or "{}")
    if dropped:
        lines += wrap(
            "rehearsal dropped: " + ", ".join(f"{k} ×{v}" for k, v in sorted(dropped.items())),
            w,
            "",
            "  ",
        )
    case = case_row(run, case_id)
    if case is not None:
        lines += wrap(
            f"future: {case['future_messages']:,} message{'' if case['future_messages'] == 1 else 's'}, seq {case['future_start']}–"
            f"{case['future_end'] - 1} ({case['future_tokens']:,} tokens)",
            w,
        )
    summary_at = len(lines)  # the summary line goes here once the rows say what changed

    # the table: #, object (full ids, one per line), action, tokens, then the text
    def name(i: int, m: Message) -> list[str]:
        ids = owner.get(i)
        if ids:
            return ids
        return ["system" if m.role in ("system", "developer") else f"({m.role} text)"]

    # rows: #, objects, actions, tokens, then the text as (prefix message, view messages)
    Row = tuple[str, list[str], list[str], str, Message | None, list[Message] | None]
    rows: list[Row] = []

    def added(i: int) -> None:
        for extra, ids in inserted.get(i, []):
            rows.append(
                ("+", ids or ["(harness block)"], ["added"], f"+{extra.tokens:,}", None, [extra])
            )

    changed: list[tuple[str, str, int, int]] = []
    for i, m in enumerate(prefix):
        added(i)
        objects = name(i, m)
        shown = by_index.get(i, [])
        if len(shown) == 1 and shown[0][0] == m:
            # the message itself is in the view as it was (the call of a folded result): kept,
            # whatever was done to the rest of its object
            rows.append((str(i), objects, ["kept" for _ in objects], f"{m.tokens:,}", m, None))
            continue
        after = sum(t for _, t in shown)
        acts = [done(action, o) for o in objects]
        verb = next((_verb(a) for a in acts if _verb(a) != "kept"), "changed")
        changed.append((objects[0], verb, m.tokens, after))
        views = [v for v, _ in shown]
        rows.append((str(i), objects, acts, f"{m.tokens:,}→{after:,}", m, views))
    added(len(prefix))
    extra = [int(r[3].lstrip("+").replace(",", "")) for r in rows if r[0] == "+"]
    lines[summary_at:summary_at] = wrap(_removed_line(changed, extra), w, "", "  ")

    fixed = [
        max(3, *(len(r[0]) for r in rows)) if rows else 3,
        max([len("object"), *(len(o) for r in rows for o in r[1])]),
        max([len("action"), *(len(a) for r in rows for a in r[2])]),
        max([len("tokens"), *(len(r[3]) for r in rows)]),
    ]
    text_width = w - sum(fixed) - len(GAP) * len(fixed)
    under = text_width < TEXT_MIN  # too narrow beside the table: the text goes under each row
    if under:
        text_width = w - 5

    def cells(num: str, objects: list[str], acts: list[str], tokens: str, k: int) -> str:
        return GAP.join(
            [
                (num if k == 0 else "").rjust(fixed[0]),
                (objects[k] if k < len(objects) else "").ljust(fixed[1]),
                (acts[k] if k < len(acts) else "").ljust(fixed[2]),
                (tokens if k == 0 else "").rjust(fixed[3]),
            ]
        )

    title = "text; view: what the view holds instead"
    lines.append(
        (
            cells("#", ["object"], ["action"], "tokens", 0)
            + ("" if under else GAP + _clip(title, text_width))
        ).rstrip()
    )
    lines.append(
        GAP.join("─" * n for n in fixed)
        + ("" if under else GAP + "─" * min(text_width, len(title)))
    )
    for num, objects, acts, tokens, message, instead in rows:
        text = [] if message is None else [_snippet(message, text_width)]
        if instead is not None:
            joined = " / ".join(_flat(v) or "(empty)" for v in instead) if instead else "(removed)"
            text.append(_clip("view: " + joined, text_width))
        height = max(len(objects), 1 if under else len(text))
        for k in range(height):
            right = "" if under or k >= len(text) else GAP + text[k]
            lines.append((cells(num, objects, acts, tokens, k) + right).rstrip())
        if under:
            lines.extend(("     " + t).rstrip() for t in text)
    if any(d["dropped_reason"] for d in decisions):
        lines += wrap(
            "* the plan proposed an edit that rehearsal dropped: "
            + ", ".join(
                f"{d['object_id']} ({d['proposed']}: {d['dropped_reason']})"
                for d in decisions
                if d["dropped_reason"]
            ),
            w,
            "",
            "  ",
        )
    lines += ["", *_losses(run, case_id, label, judge, session, action, w)]
    return "\n".join(lines)


def _with_parents(
    action: dict[str, dict[str, Any]], index: ObjectIndex
) -> dict[str, dict[str, Any]]:
    """Decisions by object, where an object kept by itself inside a removed parent (a call in
    a pruned turn) shows what happened to it: removed with the parent."""
    out = dict(action)
    for obj in index.objects:
        own = action.get(obj.id)
        if own is not None and own["action"] != "keep":
            continue
        parent = action.get(obj.parent or "")
        if parent is not None and parent["action"] not in ("keep", "compact"):
            verb = DONE.get(parent["action"], parent["action"])
            out[obj.id] = {**parent, "action": f"{verb} with {obj.parent}"}
    return out


def _losses(
    run: Run,
    case_id: str,
    label: str,
    judge: str | None,
    session: Sequence[Message],
    action: dict[str, dict[str, Any]],
    w: int,
) -> list[str]:
    """The judge's verdict of the case and each loss, with the future message that needed it."""
    chosen, verdict = _verdict(run, case_id, label, judge)
    if chosen is None:
        return wrap(
            f"not judged: `ctxreplay judge {shlex.quote(str(run.path))}` says what the view lost",
            w,
        )
    if verdict is None:
        return wrap(f"judge {chosen}: no verdict of this case under {label}", w)
    head = f"judge {chosen}: {verdict['label'].replace('_', ' ')}"
    if verdict["label"] == "unscored":
        return wrap(f"{head} ({verdict['unscored_reason']})", w, "", "  ")
    losses = list(verdict["losses"] or ())
    facts = (
        f"{verdict['dependencies']} dependencies, {verdict['recoverable']} recoverable, "
        f"{len(losses)} lost"
        if verdict["dependencies"] is not None
        else f"{len(losses)} lost"
    )
    out = wrap(f"{head} · {facts}", w, "", "  ")
    by_seq = {m.seq: m for m in session}
    for k, loss in enumerate(losses, 1):
        source = loss["source_object"]
        did = action.get(source or "")
        how = f" ({DONE.get(did['action'], did['action'])})" if did else ""
        out.append("")
        out += wrap(
            f"loss {k} of {len(losses)} · {category_title(loss['category'])} · "
            f"from {source or '–'}{how} · needed at seq {loss['need_seq']}",
            w,
            "",
            "  ",
        )
        out += wrap(f"lost: {loss['anchor']}", w, "  ", "        ")
        if loss["detail"]:
            out += wrap(f"how: {loss['detail']}", w, "  ", "       ")
        need = by_seq.get(loss["need_seq"]) if loss["need_seq"] is not None else None
        if need is None:
            out.append("  needed by: (the future message is not in the session)")
            continue
        intro = f"needed by seq {need.seq} ({need.role}): "
        room = max(20, (w - 4) * FUTURE_LINES - len(intro))
        out += wrap(intro + future_excerpt(need, loss, room), w, "  ", "    ")
    return out


__all__ = [
    "RunError",
    "ShownCase",
    "case_row",
    "done",
    "future_excerpt",
    "load_case",
    "locate",
    "needles",
    "render_show",
]
