"""``ctxreplay show``: a case's prefix and its view side by side, object by object."""

from __future__ import annotations

import json

import polars as pl

from ..datasets.messages import Message
from ..runs import Run, RunError


def _snippet(m: Message | None, width: int) -> str:
    if m is None:
        return "—"
    pieces = []
    for p in m.parts:
        if p.type == "text":
            pieces.append(p.content or "")
        elif p.type == "tool_call":
            pieces.append(f"→ {p.name}({p.arguments})")
        elif p.type == "tool_call_response":
            pieces.append(f"← {p.content or ''}")
        elif p.type == "reasoning":
            pieces.append(f"(thinking) {p.content or ''}")
        else:
            pieces.append(f"[{p.modality or p.type} {p.mime_type or ''}]")
    text = " ".join(" ".join(pieces).split())
    if not text:
        return "(empty)"
    return text if len(text) <= width else text[: width - 2] + " …"


def render_show(run: Run, case_id: str, policy: str, width: int = 160) -> str:
    label = run.resolve_policy(policy)
    row = run.view_row(case_id, label)
    session = run.corpus.load_session(row["session_id"])
    prefix = [m for m in session if m.visible and m.seq < row["cut"]]
    view = run.load_view(case_id, label, session)
    figures = run.table("figures", label).filter(pl.col("case_id") == case_id).row(0, named=True)
    decisions = run.table("decisions", label).filter(pl.col("case_id") == case_id)
    from ..replay.objects import build_index

    index = build_index(prefix, lambda s: 0)
    owner: dict[int, list[str]] = {}
    for obj in index.objects:
        targets = obj.messages if obj.kind == "function" else obj.messages[:1]
        for i in targets:
            owner.setdefault(i, []).append(obj.id)
    action = {r["object_id"]: r for r in decisions.iter_rows(named=True)}
    by_index: dict[int, list[Message]] = {}
    inserted: dict[int, list[Message]] = {}
    for entry, m in zip(row["entries"], view, strict=True):
        if entry["index"] is not None:
            by_index.setdefault(entry["index"], []).append(m)
        else:
            ids = entry["object_ids"] or []
            at = min((index[o].messages[0] for o in ids if o in index), default=0)
            inserted.setdefault(at, []).append(m)
    col = max(30, (width - 52) // 2)
    head = [
        f"case {case_id}  ·  policy {label}",
        f"prefix {figures['prefix_tokens']:,} tokens → view {figures['view_tokens']:,} tokens "
        f"({figures['pruning_rate']:.1%} pruned)  ·  committed: {figures['committed']} ({figures['commit_reason']})"
        + (
            f"  ·  planner failure: {figures['planner_failure']}"
            if figures["planner_failure"]
            else ""
        ),
    ]
    dropped = json.loads(figures["dropped_reasons"] or "{}")
    if dropped:
        head.append(
            "rehearsal dropped: " + ", ".join(f"{k} ×{v}" for k, v in sorted(dropped.items()))
        )
    head.append(f"{'#':>3}  {'object':<26} {'action':<7} {'tokens':>13}  {'prefix':<{col}} | view")
    lines = head
    for i, m in enumerate(prefix):
        for extra in inserted.get(i, []):
            lines.append(
                f"{'':>3}  {'(harness block)':<26} {'':<7} {'':>13}  {'':<{col}} | {_snippet(extra, col)}"
            )
        ids = owner.get(i, [])
        oid = (
            ids[-1]
            if ids
            else ("system" if m.role in ("system", "developer") else f"({m.role} text)")
        )
        d = action.get(oid)
        act = d["action"] if d else "keep"
        if d and d["dropped_reason"]:
            act = f"{act}*"
        before = d["tokens_before"] if d else m.tokens
        after = d["tokens_after"] if d else m.tokens
        shown = by_index.get(i)
        right = " / ".join(_snippet(v, col) for v in shown) if shown else "(removed)"
        if shown and len(shown) == 1 and shown[0] == m:
            right = "(same)"
        tokens = f"{before:,}→{after:,}" if d else f"{m.tokens:,}"
        lines.append(
            f"{i:>3}  {oid[:26]:<26} {act:<7} {tokens:>13}  {_snippet(m, col):<{col}} | {right}"
        )
    if any(d["dropped_reason"] for d in action.values()):
        lines.append(
            "* the plan proposed an edit that rehearsal dropped: "
            + ", ".join(
                f"{k} ({v['proposed']}: {v['dropped_reason']})"
                for k, v in action.items()
                if v["dropped_reason"]
            )
        )
    return "\n".join(lines)


__all__ = ["RunError", "render_show"]
