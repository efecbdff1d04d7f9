"""A case under a policy for the browser: the prefix and the view aligned message by message
(from ``reports.show.load_case``, what ``ctxreplay show`` prints), the future, each judge's
verdict, and each loss located in the prefix message that held it and the future message that
needed it."""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from typing import Any

import polars as pl

from ..datasets.messages import Message
from ..judges.base import rendered
from ..reports.show import ShownCase, case_row, done, load_case, locate, needles
from ..reports.tables import show_command
from ..runs import Run, query_verdicts


def _status(verbs: Sequence[str], view: Sequence[Message] | None) -> str:
    if view is None:
        return "kept"
    for verb in verbs:
        base = verb.split(" with ", 1)[0].rstrip("*")
        if base != "kept":
            return base
    if not view:
        return "removed"
    if any("summary" in (m.flags or ()) for m in view):
        return "summarised"
    return "changed"


def _view_json(m: Message) -> dict[str, Any]:
    return {"seq": m.seq, "role": m.role, "text": rendered(m), "flags": list(m.flags or ()),
            "tokens": m.tokens}  # fmt: skip


def _messages(shown: ShownCase) -> list[dict[str, Any]]:
    """The prefix, one entry per message (harness blocks as entries of their own), each with
    its objects, what the view did to them and what the view holds instead."""
    out: list[dict[str, Any]] = []

    def added(i: int) -> None:
        for extra, ids in shown.inserted.get(i, []):
            out.append({
                "index": None, "seq": None, "role": extra.role, "text": "", "status": "added",
                "objects": [{"id": o, "action": "added"} for o in ids or ["(harness block)"]],
                "tokens": 0, "tokens_after": extra.tokens, "view": [_view_json(extra)],
            })  # fmt: skip

    for i, m in enumerate(shown.prefix):
        added(i)
        ids = shown.owner.get(i) or [
            "system" if m.role in ("system", "developer") else f"({m.role} text)"
        ]
        views = shown.by_index.get(i, [])
        unchanged = len(views) == 1 and views[0][0] == m
        verbs = [] if unchanged else [done(shown.action, o) for o in ids]
        instead = None if unchanged else [v for v, _ in views]
        out.append({
            "index": i, "seq": m.seq, "role": m.role, "text": rendered(m),
            "status": _status(verbs, instead),
            "objects": [
                {"id": o, "action": "kept" if unchanged else v, **_decision(shown, o)}
                for o, v in zip(ids, verbs or ["kept"] * len(ids), strict=True)
            ],
            "tokens": m.tokens, "tokens_after": sum(t for _, t in views),
            "view": None if instead is None else [_view_json(v) for v in instead],
        })  # fmt: skip
    added(len(shown.prefix))
    return out


def _decision(shown: ShownCase, oid: str) -> dict[str, Any]:
    d = shown.action.get(oid)
    if d is None:
        return {}
    keep = ("proposed", "dropped_reason", "note", "reason", "tokens_before", "tokens_after")
    return {k: d.get(k) for k in keep if d.get(k) is not None}


def _future(shown: ShownCase, case: dict[str, Any] | None) -> list[Message]:
    start = shown.row["cut"]
    end = case["future_end"] if case is not None else None
    return [
        m for m in shown.session if m.visible and m.seq >= start and (end is None or m.seq < end)
    ]


def _span(text: str, loss: dict[str, Any]) -> tuple[int, int] | None:
    return next((s for s in (locate(text, n) for n in needles(loss)) if s), None)


def _locate_loss(loss: dict[str, Any], shown: ShownCase, future: dict[int, str]) -> dict[str, Any]:
    """The loss with where it was held (prefix index and span) and where it was needed."""
    out = dict(loss)
    source = loss.get("source_object")
    places = list(shown.index[source].messages) if source and source in shown.index else []
    places += [i for i in range(len(shown.prefix) - 1, -1, -1) if i not in places]
    for i in places:
        span = locate(rendered(shown.prefix[i]), loss["anchor"] or "")
        if span is not None:
            out.update(source_index=i, source_start=span[0], source_end=span[1])
            break
    need = loss.get("need_seq")
    if need is not None and need in future:
        span = _span(future[need], loss)
        if span is not None:
            out.update(need_start=span[0], need_end=span[1])
    return out


def _extras(judge_name: str, raw: str | None) -> dict[str, Any]:
    """What a model judge's raw record adds: the counterfactual's two actions diffed field by
    field, the probe judge's questions and answers."""
    if not raw:
        return {}
    try:
        doc = json.loads(raw)
    except ValueError:
        return {"raw": raw}
    if not isinstance(doc, dict):
        return {"raw": raw}
    if "baseline" in doc and "view" in doc:
        base, view = doc.get("baseline") or {}, doc.get("view") or {}
        keys = list(dict.fromkeys([*base, *view]))
        diff = [
            {"field": k, "baseline": json.dumps(base.get(k), ensure_ascii=False),
             "view": json.dumps(view.get(k), ensure_ascii=False), "same": base.get(k) == view.get(k)}
            for k in keys
        ]  # fmt: skip
        return {"actions": diff}
    if isinstance(doc.get("probes"), list):

        def text(v: Any) -> str:
            return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)

        return {
            "probes": [
                {"question": text(p.get("question")), "kind": text(p.get("kind")),
                 "answer": text(p.get("answer")), "expected": text(p.get("expected")),
                 "correct": bool(p.get("correct"))}
                for p in doc["probes"]
                if isinstance(p, dict)
            ]
        }  # fmt: skip
    return {"raw": raw}


def case_detail(run: Run, case_id: str, policy: str) -> dict[str, Any]:
    """Everything the case page draws, as JSON-ready data."""
    from ..api import view_request

    shown = load_case(run, case_id, policy)
    case = case_row(run, case_id)
    future = _future(shown, case)
    future_text = {m.seq: rendered(m) for m in future}
    where = (pl.col("policy") == shown.label) & (pl.col("case_id") == case_id)
    verdicts = query_verdicts(
        run.path,
        lambda scan: scan.filter(where).unique(["judge"], keep="first", maintain_order=True),
    ).sort("judge")
    judged = []
    for v in verdicts.iter_rows(named=True):
        judged.append({
            "judge": v["judge"], "judge_name": v["judge_name"], "label": v["label"],
            "unscored_reason": v["unscored_reason"], "explanation": v["explanation"],
            "dependencies": v["dependencies"], "recoverable": v["recoverable"],
            "losses": [_locate_loss(loss, shown, future_text) for loss in v["losses"] or ()],
            **_extras(v["judge_name"] or "", v["raw"]),
        })  # fmt: skip
    figures = {k: v for k, v in shown.figures.items() if isinstance(v, (int, float, str, bool))}
    show = show_command(run, case_id, shown.label)
    return {
        "case_id": case_id,
        "policy": shown.label,
        "session_id": shown.row["session_id"],
        "cut": shown.row["cut"],
        "summary": shown.row.get("summary"),
        "figures": figures,
        "messages": _messages(shown),
        "future": [{"seq": m.seq, "role": m.role, "text": future_text[m.seq]} for m in future],
        "verdicts": judged,
        "commands": {
            "show": show,
            "request": f"{show} --request openai-chat",
            "policy": shlex.quote(shown.label),
        },
        "request": view_request(run, case_id, shown.label, view=shown.view),
    }


#: keys whose values are trace text (or hold it), replaced by their length under ``--redact``
TEXT_KEYS = frozenset({"text", "anchor", "detail", "explanation", "raw", "note", "reason",
                       "unscored_reason", "baseline", "view_text", "question", "answer",
                       "expected", "content", "arguments", "summary", "view"})  # fmt: skip


def redacted(value: Any, key: str | None = None) -> Any:
    """``value`` with every trace text replaced by ``[N chars]``; ids, labels and figures kept."""
    if isinstance(value, dict):
        return {k: redacted(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [redacted(v, key) for v in value]
    if isinstance(value, str) and key in TEXT_KEYS:
        return f"[{len(value):,} chars]"
    return value
