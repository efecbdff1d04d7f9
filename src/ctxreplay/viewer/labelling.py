"""Labelling a sample of a run's cases in the browser, saved as it is made in the ``deps:``
format (``cases.jsonl`` + ``dependencies.jsonl``) that ``calibrate --against deps:`` and the
``deps`` judge read.

The labels folder also holds ``labelling.json``, the whole session (the sample, each case's marks,
which cases are done), written atomically and synced on every change, so a closed tab or a killed
server loses nothing. A case enters ``cases.jsonl`` when it is marked done (with no dependency, it
says the future needs nothing of the prefix); its marks enter ``dependencies.jsonl`` then and
whenever they change. Each text is the server's slice of the prefix message as the annotators'
rendering shows it (``judges.base.rendered``), so it is an exact substring by construction.
"""

from __future__ import annotations

import json
import random
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from ..datasets.cases import materialise
from ..files import atomic_write_text
from ..judges.base import rendered
from ..reports.show import case_row
from ..runs import Run, query_verdicts
from ..schema import CATEGORIES
from .detail import _locate_loss
from .grid import Grid, ViewerError

NECESSITIES = ("required", "helpful")
STATE = "labelling.json"


def sample_cases(grid: Grid, n: int, seed: int) -> list[str]:
    """``n`` distinct cases, stratified by corpus and policy family: the (corpus, family)
    strata take turns, in an order the seed shuffles, each giving a case of its pairs (drawn
    in an order the seed shuffles) not yet taken."""
    rng = random.Random(seed)
    pairs = grid.frame.select(pl.col("corpus").fill_null(""), "policy_name", "case_id")
    strata: dict[tuple[str, str], list[str]] = {}
    for corpus, family, case in pairs.sort(["corpus", "policy_name", "case_id"]).iter_rows():
        strata.setdefault((corpus, family), []).append(case)
    pools = [rng.sample(cases, len(cases)) for _, cases in sorted(strata.items())]
    rng.shuffle(pools)
    chosen: list[str] = []
    taken: set[str] = set()
    while len(chosen) < n and any(pools):
        for pool in pools:
            while pool and pool[-1] in taken:
                pool.pop()
            if pool and len(chosen) < n:
                case = pool.pop()
                chosen.append(case)
                taken.add(case)
    return chosen


@dataclass
class CaseText:
    """What labelling a case reads: its prefix and future as rendered text."""

    case_id: str
    session_id: str
    cut: int
    corpus: str | None
    source_session_id: str | None
    prefix: list[dict[str, Any]]
    future: list[dict[str, Any]]


class Labelling:
    """A labelling session over a sample of a run's cases, stored in ``folder``."""

    def __init__(self, run: Run, grid: Grid, folder: Path, sample: int, seed: int) -> None:
        self.run, self.folder = run, Path(folder)
        self.grid = grid
        self.folder.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._calibrating = threading.Lock()  # one calibration at a time writes the run
        self._texts: dict[str, CaseText] = {}
        path = self.folder / STATE
        if path.exists():
            self.state: dict[str, Any] = json.loads(path.read_text())
            known = set(grid.frame["case_id"].to_list())
            if not set(self.state["sample"]) <= known:
                raise ViewerError(f"{path} labels cases this run does not have")
        else:
            self.state = {
                "run": str(run.path),
                "seed": seed,
                "sample": sample_cases(grid, sample, seed),
                "cases": {},
            }
            self._save()

    @property
    def grid(self) -> Grid:
        return self._grid

    @grid.setter
    def grid(self, grid: Grid) -> None:
        """A new grid (the run's verdicts changed): the judge's proposals are read again."""
        self._grid = grid
        self._proposals: dict[str, list[dict[str, Any]]] = {}

    # --- reading ------------------------------------------------------------------------

    def text(self, case_id: str) -> CaseText:
        if case_id not in self._texts:
            rows = self.grid.frame.filter(pl.col("case_id") == case_id)
            if case_id not in self.state["sample"] or rows.height == 0:
                raise ViewerError(f"case {case_id!r} is not in this labelling sample")
            row = rows.row(0, named=True)
            session = self.run.corpus.load_session(row["session_id"])
            prefix = materialise({"cut": row["cut"]}, session).prefix
            case = case_row(self.run, case_id)
            end = case["future_end"] if case else None
            # an annotator reads on from the cut itself, to the case's horizon (or the end)
            future = [m for m in session if m.visible and m.seq >= row["cut"]
                      and (end is None or m.seq < end)]  # fmt: skip
            self._texts[case_id] = CaseText(
                case_id, row["session_id"], row["cut"], row["corpus"],
                case.get("source_session_id") if case else None,
                [{"seq": m.seq, "role": m.role, "text": rendered(m)} for m in prefix],
                [{"seq": m.seq, "role": m.role, "text": rendered(m)} for m in future],
            )  # fmt: skip
        return self._texts[case_id]

    def proposals(self, case_id: str) -> list[dict[str, Any]]:
        """The judge's proposed dependencies of a case: what it found lost in any of the
        case's views, located in the prefix message that held it (read once per grid)."""
        if case_id not in self._proposals:
            self._proposals[case_id] = self._propose(case_id)
        return self._proposals[case_id]

    def _propose(self, case_id: str) -> list[dict[str, Any]]:
        judge = self.grid.judge
        if judge is None:
            return []
        where = (pl.col("judge") == judge) & (pl.col("case_id") == case_id)
        verdicts = query_verdicts(self.run.path, lambda scan: scan.filter(where).select("losses"))
        from ..reports.show import load_case

        shown = None
        seen: dict[tuple[int, str], dict[str, Any]] = {}
        text = self.text(case_id)
        future = {f["seq"]: f["text"] for f in text.future}
        for losses in verdicts["losses"].to_list():
            for loss in losses or ():
                if shown is None:
                    policy = self.grid.frame.filter(pl.col("case_id") == case_id)["policy"][0]
                    shown = load_case(self.run, case_id, policy)
                found = _locate_loss(loss, shown, future)
                if "source_index" not in found:
                    continue
                seq = shown.prefix[found["source_index"]].seq
                span = text.prefix[found["source_index"]]["text"][
                    found["source_start"] : found["source_end"]
                ]
                seen.setdefault((seq, span), {
                    "seq": seq, "start": found["source_start"], "end": found["source_end"],
                    "text": span, "category": loss["category"],
                    "needed_by": loss["need_seq"] if loss["need_seq"] in future else min(future),
                })  # fmt: skip
        return [{"id": f"p{k}", **p} for k, p in enumerate(sorted(seen.values(), key=_order))]

    def case(self, case_id: str) -> dict[str, Any]:
        """A case as the labelling page draws it: texts, proposals, marks and its state."""
        text = self.text(case_id)
        mine = self.state["cases"].get(case_id, {"marks": [], "rejected": [], "done": False})
        return {
            "case_id": case_id, "session_id": text.session_id, "cut": text.cut,
            "corpus": text.corpus, "prefix": text.prefix, "future": text.future,
            "proposals": self.proposals(case_id), **mine,
            "position": self.state["sample"].index(case_id) + 1,
            "sample": len(self.state["sample"]),
        }  # fmt: skip

    def overview(self) -> dict[str, Any]:
        done = [c for c in self.state["sample"] if self.state["cases"].get(c, {}).get("done")]
        return {"sample": self.state["sample"], "done": done, "folder": str(self.folder),
                "categories": list(CATEGORIES), "necessities": list(NECESSITIES)}  # fmt: skip

    # --- writing ------------------------------------------------------------------------

    def apply(self, case_id: str, op: dict[str, Any]) -> dict[str, Any]:
        """One labelling action, saved before it returns: ``mark`` a span (``seq``, ``start``,
        ``end``, ``category``, ``necessity``, ``needed_by``), ``accept`` or ``reject`` a
        proposal (by ``proposal`` id), ``remove`` a mark (by ``mark`` id), ``done`` /
        ``undone``."""
        text = self.text(case_id)
        with self._lock:
            mine = self.state["cases"].setdefault(
                case_id, {"marks": [], "rejected": [], "done": False}
            )
            kind = op.get("op")
            if kind == "mark":
                mine["marks"].append(self._mark(text, op, "marked"))
            elif kind in ("accept", "reject"):
                proposal = next(
                    (p for p in self.proposals(case_id) if p["id"] == op.get("proposal")), None
                )
                if proposal is None:
                    raise ViewerError(f"no proposal {op.get('proposal')!r} in case {case_id}")
                if kind == "accept":
                    merged = {**proposal, **{k: v for k, v in op.items() if k in (
                        "category", "necessity", "needed_by")}}  # fmt: skip
                    mine["marks"].append(self._mark(text, merged, "accepted"))
                else:
                    mine["rejected"].append(proposal["id"])
            elif kind == "remove":
                mine["marks"] = [m for m in mine["marks"] if m["id"] != op.get("mark")]
            elif kind in ("done", "undone"):
                mine["done"] = kind == "done"
            else:
                raise ViewerError(f"unknown labelling action {kind!r}")
            self._save()
        return self.case(case_id)

    def _mark(self, text: CaseText, op: dict[str, Any], how: str) -> dict[str, Any]:
        at = {p["seq"]: p["text"] for p in text.prefix}
        seq, start, end = op.get("seq"), op.get("start"), op.get("end")
        if seq not in at:
            raise ViewerError(f"message {seq!r} is not in the prefix of {text.case_id}")
        if not (
            isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(at[seq])
        ):
            raise ViewerError(f"span {start!r}–{end!r} is not inside message {seq}")
        category = op.get("category")
        if category not in CATEGORIES:
            raise ViewerError(f"category must be one of {', '.join(CATEGORIES)} (got {category!r})")
        necessity = op.get("necessity", "required")
        if necessity not in NECESSITIES:
            raise ViewerError(f"necessity must be required or helpful (got {necessity!r})")
        future = [f["seq"] for f in text.future]
        needed_by = op.get("needed_by", future[0] if future else None)
        if needed_by not in future:
            raise ViewerError(f"needed_by must be a future message of {text.case_id}: {future}")
        marks = self.state["cases"][text.case_id]["marks"]
        n = 1 + max((int(m["id"][1:]) for m in marks), default=0)
        return {"id": f"m{n}", "seq": seq, "start": start, "end": end, "text": at[seq][start:end],
                "category": category, "necessity": necessity, "needed_by": needed_by,
                "how": how, "why": str(op.get("why") or "")}  # fmt: skip

    def _save(self) -> None:
        """The session, then the labels it makes, each file replaced atomically and synced."""
        atomic_write_text(self.folder / STATE, json.dumps(self.state, indent=1), fsync=True)
        cases, deps = [], []
        for case_id in self.state["sample"]:
            mine = self.state["cases"].get(case_id)
            if not mine or not mine["done"]:
                continue
            t = self.text(case_id)
            cases.append({
                "case": case_id, "corpus": t.corpus, "session_id": t.session_id, "cut": t.cut,
                "source_session_id": t.source_session_id,
                "prefix_seqs": [p["seq"] for p in t.prefix],
                "future_seqs": [f["seq"] for f in t.future],
            })  # fmt: skip
            deps += [
                {"case": case_id, "seq": m["seq"], "needed_by": m["needed_by"],
                 "category": m["category"], "necessity": m["necessity"], "text": m["text"],
                 "why": m["why"] or f"{m['how']} in the case browser"}
                for m in sorted(mine["marks"], key=_order)
            ]  # fmt: skip

        def lines(rows: list[dict[str, Any]]) -> str:
            return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)

        atomic_write_text(self.folder / "cases.jsonl", lines(cases), fsync=True)
        atomic_write_text(self.folder / "dependencies.jsonl", lines(deps), fsync=True)

    def progress(self, judge: str | None = None) -> dict[str, Any]:
        """Cases labelled, and the judge's sensitivity and specificity on their views so far
        (Wilson 95%), by ``calibrate --against deps:`` on the labels as saved."""
        done = self.overview()["done"]
        out: dict[str, Any] = {"labelled": len(done), "sample": len(self.state["sample"])}
        judge = judge or self.grid.judge
        if not done or judge is None:
            return out
        from ..engines.calibrate import calibrate_against_deps

        with self._calibrating:
            result = calibrate_against_deps(
                self.run.path, judge, self.folder, workers=1, store=False
            )
        for variant in ("strict", "recovery"):
            v = result.variant(variant)
            o = v.calibration.overall
            out[variant] = {
                "n": v.calibration.n, "tp": o.tp, "fn": o.fn, "fp": o.fp, "tn": o.tn,
                "sensitivity": [v.sensitivity.estimate, v.sensitivity.low, v.sensitivity.high],
                "specificity": [v.specificity.estimate, v.specificity.low, v.specificity.high],
                "kappa": v.calibration.kappa,
            }  # fmt: skip
        out["judge"] = result.judge
        return out


def _order(m: dict[str, Any]) -> tuple[int, int, int]:
    return m["seq"], m["start"], m["end"]
