"""The ground truth of a synthetic corpus, as a judge.

Synthetic sessions record every dependency they plant: the exact anchor, the message that
introduces it, the future message that needs it, and its failure category. For a case, the active
dependencies are those introduced in the prefix and needed inside the future; each is available
(in the view), recoverable (in an archive whose pointer is visible) or lost. A dependency lost
because its archive has no visible route is filed under recovery routing, whatever it planted.

It knows where every dependency is, so it is the reference the anchor and LLM judges are
calibrated against (``ctxreplay calibrate RUN --judge anchor --against truth``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from .base import Judge, JudgeInput, Loss, Verdict, availability, judge, tally


@judge("truth")
class TruthJudge(Judge):
    """Planted ground truth of ``ctxreplay synth`` corpora (not available for real traces)."""

    @dataclass(frozen=True)
    class Params:
        """None: the truth judge has no parameters."""

    def __init__(self, params: Any = None) -> None:
        super().__init__(params)
        self.truth: dict[str, list[dict[str, Any]]] = {}

    def corpus_state(self, corpus: Any) -> dict[str, list[dict[str, Any]]]:
        frame = corpus.ground_truth()
        by_session: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in frame.iter_rows(named=True):
            by_session[row["session_id"]].append(row)
        return dict(by_session)

    def use_state(self, state: Any) -> None:
        self.truth = state or {}

    def judge(self, item: JudgeInput) -> Verdict:
        if not self.truth:
            return Verdict.unscored("the corpus has no ground truth (only synthetic corpora do)")
        cut = item.cut if item.cut is not None else item.prefix[-1].seq + 1 if item.prefix else 0
        if item.cut is None and item.future:
            cut = item.future[0].seq
        end = item.future[-1].seq + 1 if item.future else cut
        active = [
            d
            for d in self.truth.get(item.session_id, ())
            if d["source_seq"] < cut <= d["need_seq"] < end
        ]
        where = availability(item)
        view_text, shown, unrouted = where.view, where.recoverable, where.unrouted
        losses, recoverable = [], 0
        for d in active:
            if d["anchor"] in view_text:
                continue
            if d["anchor"] in shown:
                recoverable += 1
                continue
            category = "recovery_routing" if d["anchor"] in unrouted else d["category"]
            losses.append(
                Loss(
                    category,
                    d["anchor"],
                    None,
                    d["need_seq"],
                    f"planted {d['dep_id']}: {d['note'] or ''}",
                )
            )
        return tally("planted dependencies active", losses, len(active), recoverable)
