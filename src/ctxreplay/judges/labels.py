"""Dependency labels on real traces, as a judge: the gold label of a (case, policy) view.

A labels set (``../shared/gold-dev/`` is the dev one) is a folder with two JSON-lines files:

- ``cases.jsonl``: ``case``, ``corpus``, ``session_id``, ``cut``, ``prefix_seqs``,
  ``future_seqs`` (the horizon the labels cover), ``source_session_id``;
- ``dependencies.jsonl``: ``case``, ``seq`` (the prefix message holding it), ``text`` (an exact
  substring of that message as the annotators saw it), ``needed_by`` (the first future message
  that needs it), ``category``, ``necessity`` (``required`` | ``helpful``), ``why``.

A message's text as the annotators saw it (``base.rendered``): its text parts, each tool call as
``CALL <name> <arguments exactly as stored>``, each tool result's content, joined by newlines.

Scoring rule (``variant``): a view is **no_impact** when every required dependency's text is in
the view's text (``strict``); the same ignoring all whitespace (``whitespace``: a lossless
re-rendering of JSON keeps the facts); or the same also accepting text held in an archive whose
pointer the view shows (``recovery``). Each dependency it misses is a ``Loss`` with the labelled
category, the text as anchor, the object that held the prefix message, the future message that
needs it and the annotator's reason.

``ctxreplay calibrate RUN --judge anchor --against deps:LABELS`` compares a judge with it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from ..datasets.cases import json_objects
from ..errors import CtxreplayError
from ..registry import param
from ..replay.objects import owner_of
from ..schema import CATEGORIES
from ..text.facts import squash
from .base import (
    Judge,
    JudgeInput,
    Loss,
    Verdict,
    availability,
    judge,
    parts_text,
    rendered,
    tally,
)

#: the labels spell the category the US way; the project spells it ``behavioural_contract``
CATEGORY_ALIASES = {"behavioral_contract": "behavioural_contract"}
NECESSITIES = ("required", "helpful")
VARIANTS: tuple[str, ...] = ("strict", "whitespace", "recovery")


class LabelsError(CtxreplayError, ValueError):
    """A labels file that cannot be read: names the file, the line and the problem."""


@dataclass(frozen=True)
class LabelledCase:
    case: str
    corpus: str | None
    session_id: str
    cut: int
    prefix_seqs: tuple[int, ...]
    future_seqs: tuple[int, ...]
    source_session_id: str | None = None


@dataclass(frozen=True)
class Dependency:
    case: str
    seq: int
    text: str
    needed_by: int
    category: str  # the project's spelling (datasets.schema.CATEGORIES)
    necessity: str
    why: str = ""


@dataclass(frozen=True)
class LabelSet:
    cases_path: Path
    dependencies_path: Path
    cases: tuple[LabelledCase, ...]
    dependencies: dict[str, tuple[Dependency, ...]] = field(repr=False)  # case → its deps

    def by_key(self) -> dict[tuple[str, int], LabelledCase]:
        """(session id, cut) → the labelled case."""
        return {(c.session_id, c.cut): c for c in self.cases}

    def corpus_of(self) -> dict[str, str]:
        """session id → the corpus the labels say it comes from."""
        return {c.session_id: c.corpus or "" for c in self.cases}


def label_paths(path: str | os.PathLike[str]) -> tuple[Path, Path]:
    """(cases.jsonl, dependencies.jsonl) of a labels folder, or of either file with the other
    beside it."""
    p = Path(path)
    if p.is_dir():
        return p / "cases.jsonl", p / "dependencies.jsonl"
    if p.name == "cases.jsonl":
        return p, p.with_name("dependencies.jsonl")
    return p.with_name("cases.jsonl"), p


def canonical_labels_path(path: str | os.PathLike[str]) -> str:
    """One spelling per labels set, so a judge has one label however its path was given
    (``labels/``, ``./labels``, ``labels/dependencies.jsonl``, absolute): the resolved folder
    when both files have their standard names in it, else the resolved dependencies file."""
    cases, deps = (p.resolve() for p in label_paths(path))
    if cases.parent == deps.parent and (cases.name, deps.name) == (
        "cases.jsonl",
        "dependencies.jsonl",
    ):
        return str(deps.parent)
    return str(deps)


def _lines(path: Path) -> Iterable[tuple[int, dict[str, Any]]]:
    if not path.is_file():
        raise LabelsError(f"{path}: no such labels file")
    return json_objects(path, LabelsError)


def _field(
    path: Path, n: int, row: dict[str, Any], key: str, kind: type, optional: bool = False
) -> Any:
    value = row.get(key)
    if value is None and optional:
        return None
    if kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    elif kind is str:
        ok = isinstance(value, str) and (value != "" or key == "why")
    else:  # a list of seqs
        ok = isinstance(value, list) and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        )
    if not ok:
        what = {int: "a non-negative integer", str: "a non-empty string"}.get(
            kind, "a list of message seqs"
        )
        shown = "missing" if key not in row else f"{value!r}"[:60]
        raise LabelsError(f"{path}, line {n}: {key} must be {what} (got {shown})")
    return value


def load_labels(path: str | os.PathLike[str]) -> LabelSet:
    """Read and check a labels set; any problem raises ``LabelsError`` naming file and line."""
    if not Path(path).exists():
        raise LabelsError(
            f"no labels at {path}: expected a folder with cases.jsonl and dependencies.jsonl, "
            "or dependencies.jsonl with cases.jsonl beside it"
        )
    cases_path, deps_path = label_paths(path)
    cases: list[LabelledCase] = []
    names: set[str] = set()
    keys: set[tuple[str, int]] = set()
    for n, row in _lines(cases_path):
        c = LabelledCase(
            case=_field(cases_path, n, row, "case", str),
            corpus=_field(cases_path, n, row, "corpus", str, optional=True),
            session_id=_field(cases_path, n, row, "session_id", str),
            cut=_field(cases_path, n, row, "cut", int),
            prefix_seqs=tuple(_field(cases_path, n, row, "prefix_seqs", list, True) or ()),
            future_seqs=tuple(_field(cases_path, n, row, "future_seqs", list, True) or ()),
            source_session_id=_field(cases_path, n, row, "source_session_id", str, True),
        )
        if c.case in names:
            raise LabelsError(f"{cases_path}, line {n}: case {c.case!r} appears twice")
        if (c.session_id, c.cut) in keys:
            raise LabelsError(
                f"{cases_path}, line {n}: session {c.session_id} cut {c.cut} appears twice"
            )
        names.add(c.case)
        keys.add((c.session_id, c.cut))
        cases.append(c)
    if not cases:
        raise LabelsError(f"{cases_path}: no cases")
    by_case = {c.case: c for c in cases}
    deps: dict[str, list[Dependency]] = {c.case: [] for c in cases}
    for n, row in _lines(deps_path):
        name = _field(deps_path, n, row, "case", str)
        if name not in by_case:
            raise LabelsError(f"{deps_path}, line {n}: case {name!r} is not in {cases_path.name}")
        raw_category = _field(deps_path, n, row, "category", str)
        category = CATEGORY_ALIASES.get(raw_category, raw_category)
        if category not in CATEGORIES:
            raise LabelsError(
                f"{deps_path}, line {n}: unknown category {raw_category!r}; "
                f"expected one of {', '.join(CATEGORIES)}"
            )
        necessity = _field(deps_path, n, row, "necessity", str)
        if necessity not in NECESSITIES:
            raise LabelsError(
                f"{deps_path}, line {n}: necessity must be required or helpful (got {necessity!r})"
            )
        d = Dependency(
            case=name,
            seq=_field(deps_path, n, row, "seq", int),
            text=_field(deps_path, n, row, "text", str),
            needed_by=_field(deps_path, n, row, "needed_by", int),
            category=category,
            necessity=necessity,
            why=_field(deps_path, n, row, "why", str, optional=True) or "",
        )
        c = by_case[name]
        if d.seq >= c.cut or d.needed_by < c.cut:
            raise LabelsError(
                f"{deps_path}, line {n}: seq {d.seq} must be before the cut {c.cut} and "
                f"needed_by {d.needed_by} at or after it"
            )
        deps[name].append(d)
    return LabelSet(cases_path, deps_path, tuple(cases), {k: tuple(v) for k, v in deps.items()})


# --- rendering as the annotators saw it ---------------------------------------------------------


def case_cut(item: JudgeInput) -> int | None:
    """The case's cut: given by the engine, else the seq of its first future message."""
    if item.cut is not None:
        return item.cut
    return item.future[0].seq if item.future else None


# --- the judge ------------------------------------------------------------------------------


@judge("deps")
class DepsJudge(Judge):
    """Gold labels from dependency labels on real traces (``../shared/gold-dev`` format)."""

    @dataclass(frozen=True)
    class Params:
        path: str = param(
            "", "a labels folder (cases.jsonl + dependencies.jsonl), or dependencies.jsonl"
        )
        variant: Literal["strict", "whitespace", "recovery"] = param(
            "strict",
            "strict: verbatim in the view · whitespace: ignoring whitespace · recovery: strict, "
            "or in an archive whose pointer the view shows",
        )
        necessity: Literal["required", "all"] = param(
            "required", "required: only dependencies marked required · all: helpful ones too"
        )

    def __init__(self, params: Any = None) -> None:
        super().__init__(params)
        if not self.params.path:
            raise LabelsError("the deps judge needs path=<labels folder or dependencies.jsonl>")
        self.params = replace(self.params, path=canonical_labels_path(self.params.path))
        self.labels = load_labels(self.params.path)
        self._by_key = self.labels.by_key()
        self._mismatch: dict[str, str | None] = {}  # case → why its labels do not fit, once

    def inputs_fingerprint(self) -> str:
        """The labels' bytes: the same path with other labels is another gold."""
        digest = hashlib.sha256()
        for path in (self.labels.cases_path, self.labels.dependencies_path):
            digest.update(path.read_bytes())
            digest.update(b"\0")
        return digest.hexdigest()

    def judge(self, item: JudgeInput) -> Verdict:
        cut = case_cut(item)
        case = self._by_key.get((item.session_id, cut)) if cut is not None else None
        if case is None:
            return Verdict.unscored("no dependency labels for this case")
        deps = [
            d
            for d in self.labels.dependencies.get(case.case, ())
            if self.params.necessity == "all" or d.necessity == "required"
        ]
        at = {m.seq: i for i, m in enumerate(item.prefix)}
        if item.case_id not in self._mismatch:
            self._mismatch[item.case_id] = next(
                (
                    f"labels of {case.case} do not match this prefix: message {d.seq} does not "
                    f"hold {d.text[:40]!r}"
                    for d in deps
                    if d.seq not in at or d.text not in rendered(item.prefix[at[d.seq]])
                ),
                None,
            )
        if (mismatch := self._mismatch[item.case_id]) is not None:
            return Verdict.unscored(mismatch)
        variant = self.params.variant
        shown = ""
        if variant == "recovery" and item.archives:
            where = availability(item, parts_text)
            view, shown = where.view, where.recoverable
        else:
            view = "\n".join(rendered(m) for m in item.view)
        if variant == "whitespace":
            view_sq = squash(view)

            def present(text: str) -> bool:
                return squash(text) in view_sq
        else:

            def present(text: str) -> bool:
                return text in view

        owner = owner_of(item.index)
        losses: list[Loss] = []
        recoverable = 0
        for d in deps:
            if present(d.text):
                continue
            if shown and d.text in shown:
                recoverable += 1
                continue
            obj = owner.get(at[d.seq])
            losses.append(Loss(d.category, d.text, obj.id if obj else None, d.needed_by, d.why))
        found = f"{self.params.necessity} dependencies of {case.case} ({variant})"
        return tally(found, losses, len(deps), recoverable)
