"""``ctxreplay judge``: a verdict for every (case, policy) of a run, resumable.

Verdicts are appended as small Parquet parts under ``RUN/verdicts/<judge>/``, each written
atomically as soon as its batch is done. A re-run reads what is there and judges only what is
missing; a model call that finished before a kill is served from the client's on-disk cache, so
a killed run resumes without paying twice. Reading deduplicates, so there is exactly one verdict
per (case, policy, judge).

Damage does not stop a run: a verdict part that no longer reads is set aside (``*.damaged``) and
its pairs judged again; a pair whose archived payload is missing or altered in the sidecar gets
an ``unscored`` verdict saying so; temporary files a killed run left are removed. A verdict
``unscored`` after a transient model failure (timeouts, connection errors, 429, 5xx: out of
retries) is marked ``retryable``; ``retry_unscored`` asks those pairs again and replaces their
rows, and the summary says how many are left.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
from tqdm import tqdm

from ..datasets.cases import future_of, prefix_of, read_cases
from ..datasets.messages import Message
from ..datasets.tokenizer import get_tokenizer
from ..errors import CtxreplayError
from ..files import atomic_write_table, atomic_write_text, remove_stale_temps
from ..judges.base import DEFAULT_JUDGE, Archived, Judge, JudgeInput, Verdict, judges, make_judge
from ..llm.completion import EndpointUnreachable, is_transient
from ..llm.endpoint import EndpointParams, in_run
from ..replay.objects import build_index
from ..replay.sidecar import SidecarError
from ..runs import (
    Run,
    SidecarStore,
    drop_verdicts,
    read_verdicts,
    set_aside_damaged_verdicts,
    slug,
    view_messages,
)
from ..schema import VERDICTS
from .replay import cached_counter


class JudgeRunError(CtxreplayError):
    pass


def verdict_row(run: str, item: JudgeInput, judge: Judge, v: Verdict) -> dict[str, Any]:
    return {
        "run": run,
        "policy": item.policy,
        "case_id": item.case_id,
        "session_id": item.session_id,
        "judge": judge.label,
        "judge_name": judge.name,
        "label": v.label,
        "losses": [loss.as_dict() for loss in v.losses],
        "n_losses": len(v.losses),
        "dependencies": v.dependencies,
        "recoverable": v.recoverable,
        "unscored_reason": v.reason if v.label == "unscored" else None,
        "retryable": v.label == "unscored" and is_transient(v.reason),
        "explanation": v.reason if v.label != "unscored" else None,
        "prompt_tokens": v.usage.prompt_tokens,
        "completion_tokens": v.usage.completion_tokens,
        "usd": v.usage.usd,
        "calls": v.usage.calls,
        "cache_hit": v.cache_hit,
        "prompt_hash": v.prompt_hash,
        "raw": v.raw,
    }


def corpus_state(run: Run, judge: Judge) -> Any:
    """The judge's corpus-level state, computed once per corpus and kept in the run folder."""
    path = run.path / "judge-state" / f"{slug(judge.label)}.json"
    fingerprint = run.corpus.fingerprint()
    if path.exists():
        try:
            saved = json.loads(path.read_text())
        except (OSError, ValueError):  # damaged: computed again and rewritten below
            saved = None
        if isinstance(saved, dict) and saved.get("corpus_fingerprint") == fingerprint:
            return saved.get("state")
    state = judge.corpus_state(run.corpus)
    try:
        text = json.dumps({"corpus_fingerprint": fingerprint, "state": state}, sort_keys=True)
    except TypeError:  # not JSON: recompute next time
        return state
    atomic_write_text(path, text)
    return state


def _write_part(rows: list[dict[str, Any]], folder: Path) -> None:
    """A new part file per batch (never overwritten), written atomically."""
    if rows:
        atomic_write_table(
            rows, VERDICTS, folder / f"part-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.parquet"
        )


# --- building judge inputs -----------------------------------------------------------------


@dataclass
class Work:
    """The (case, policy) pairs of one session still to judge, with what rebuilding needs."""

    session_id: str
    cases: list[dict[str, Any]]  # case rows (cut, future range)
    views: dict[tuple[str, str], dict[str, Any]]  # (case, policy) → views row
    actions: dict[tuple[str, str], dict[str, str]]  # (case, policy) → object → action
    committed: dict[tuple[str, str], bool]


#: a judge input, and why it cannot be judged (its archived payload is damaged) or None
Item = tuple[JudgeInput, str | None]


def _archives(
    row: dict[str, Any], sidecar: SidecarStore
) -> tuple[tuple[Archived, ...], str | None]:
    """A view's archived payloads from the sidecar, or why they cannot be had (a payload
    missing or altered): the pair is then unscored, never judged without them."""
    try:
        return tuple(
            Archived(
                a["ref"],
                a["object_id"],
                a["pointer_visible"],
                sidecar.recover(a["ref"]),
                a["handle"],
            )
            for a in row["archives"] or ()
        ), None
    except SidecarError as e:
        return (), (
            f"archived payload damaged: {e}; re-run the replay into a new folder to rebuild "
            "the sidecar"
        )


def inputs_for(work: Work, messages: Sequence[Message], sidecar: SidecarStore) -> Iterator[Item]:
    count = cached_counter(get_tokenizer().name)
    visible = [m for m in messages if m.visible]
    for case in work.cases:
        prefix = prefix_of(visible, case["cut"])
        future = future_of(visible, case)
        index = build_index(prefix, count)
        for (case_id, policy), row in work.views.items():
            if case_id != case["case_id"]:
                continue
            view = view_messages(row["entries"], prefix)
            archives, problem = _archives(row, sidecar)
            yield (
                JudgeInput(
                    case_id=case_id,
                    session_id=work.session_id,
                    policy=policy,
                    prefix=prefix,
                    view=tuple(view),
                    future=future,
                    index=index,
                    actions=work.actions.get((case_id, policy), {}),
                    archives=archives,
                    committed=work.committed.get((case_id, policy), True),
                    summary=row.get("summary"),
                    cut=case["cut"],
                ),
                problem,
            )


def session_inputs(
    corpus: Any, sidecar: SidecarStore, works: Sequence[Work]
) -> Iterator[list[Item]]:
    """The judge inputs of each session with work left, one session read at a time."""
    by_id = {w.session_id: w for w in works}
    for sid, messages in corpus.iter_sessions(list(by_id)):
        yield list(inputs_for(by_id[sid], messages, sidecar))


def _judge_chunk(
    run_path: str, corpus_path: str, spec: dict[str, Any], state: Any, works: list[Work]
) -> list[dict[str, Any]]:
    """A process worker: judge every input of a few sessions with a deterministic judge."""
    from ..datasets.store import Corpus

    judge = judges.rebuild(spec)
    judge.use_state(state)
    corpus = Corpus(corpus_path)
    sidecar = SidecarStore(Path(run_path) / "sidecar")
    name = Path(run_path).name
    return [
        verdict_row(name, item, judge, judge_one(judge, item, problem))
        for items in session_inputs(corpus, sidecar, works)
        for item, problem in items
    ]


def judge_one(judge: Judge, item: JudgeInput, problem: str | None) -> Verdict:
    """The verdict of one pair: unscored when its archives are damaged (``problem``) or turn
    out unreadable while judged; the rest of the run goes on."""
    if problem is not None:
        return Verdict.unscored(problem)
    try:
        return judge.judge(item)
    except SidecarError as e:
        return Verdict.unscored(f"archived payload damaged: {e}")


# --- the run ------------------------------------------------------------------------------


@dataclass
class JudgeSummary:
    judge: str
    judged: int = 0
    skipped: int = 0
    deferred: int = 0  # pairs left unjudged by --limit
    seconds: float = 0.0
    labels: Counter[str] = field(default_factory=Counter)
    unscored: Counter[str] = field(default_factory=Counter)
    usd: float = 0.0
    calls: int = 0
    cache_hits: int = 0
    set_aside: list[Path] = field(default_factory=list)  # damaged files renamed *.damaged
    retried: int = 0  # pairs asked again by retry_unscored
    retryable: int = 0  # pairs of this judge unscored after transient failures, after the run

    def render(self) -> str:
        lines = [
            f"judge {self.judge}: {self.judged} verdicts in {self.seconds:.1f}s "
            f"({self.skipped} already judged"
            + (f", {self.deferred} left for later by --limit" if self.deferred else "")
            + ")",
            "  "
            + ", ".join(
                f"{k} {self.labels.get(k, 0)}" for k in ("no_impact", "impact", "unscored")
            ),
        ]
        if self.calls or self.cache_hits:
            lines.append(
                f"  model calls {self.calls}, cache hits {self.cache_hits}, cost ${self.usd:.4f}"
            )
        for reason, n in self.unscored.most_common(5):
            lines.append(f"  unscored: {reason} ×{n}")
        if self.retried:
            lines.append(f"  asked again {self.retried} pairs unscored after transient failures")
        if self.retryable:
            lines.append(
                f"  {self.retryable} unscored after transient failures: re-run with "
                "--retry-unscored"
            )
        for path in self.set_aside:
            lines.append(f"  set aside damaged {path} (its pairs judged again)")
        return "\n".join(lines)


def plan_work(
    run: Run,
    judge_label: str,
    policies: Sequence[str] | None = None,
    limit: int | None = None,
    redo: pl.DataFrame | None = None,
) -> tuple[list[Work], int, int]:
    """The sessions with something left to judge, how many pairs are already judged, and how
    many are left for later by ``limit``. ``redo``: judged pairs (policy, case_id) to judge
    again."""
    done = read_verdicts(run.path, judge_label).select("policy", "case_id")
    if redo is not None and redo.height:
        done = done.join(redo.select("policy", "case_id"), on=["policy", "case_id"], how="anti")
    labels = [run.resolve_policy(p) for p in policies] if policies else run.policies
    figures = pl.concat([run.table("figures", label) for label in labels], how="vertical_relaxed")
    todo = figures.join(done, on=["policy", "case_id"], how="anti").sort(
        ["session_id", "cut", "policy"]
    )
    skipped = figures.height - todo.height
    deferred = max(0, todo.height - limit) if limit is not None else 0
    if limit is not None:
        todo = todo.head(limit)
    if todo.height == 0:
        return [], skipped, deferred
    cases, _ = read_cases(run.manifest["cases_path"])
    case_rows = {r["case_id"]: r for r in cases.iter_rows(named=True)}
    wanted = set(todo["case_id"].to_list())
    views = {}
    actions: dict[tuple[str, str], dict[str, str]] = {}
    for label in {*todo["policy"].to_list()}:
        v = run.table("views", label).filter(pl.col("case_id").is_in(list(wanted)))
        for row in v.iter_rows(named=True):
            views[(row["case_id"], label)] = row
        d = run.table("decisions", label).filter(
            (pl.col("action") != "keep") & pl.col("case_id").is_in(list(wanted))
        )
        for row in d.iter_rows(named=True):
            actions.setdefault((row["case_id"], label), {})[row["object_id"]] = row["action"]
    committed = {(r["case_id"], r["policy"]): r["committed"] for r in todo.iter_rows(named=True)}
    works: dict[str, Work] = {}
    for row in todo.iter_rows(named=True):
        key = (row["case_id"], row["policy"])
        w = works.setdefault(row["session_id"], Work(row["session_id"], [], {}, actions, committed))
        if not any(c["case_id"] == row["case_id"] for c in w.cases):
            w.cases.append(case_rows[row["case_id"]])
        w.views[key] = views[key]
    return list(works.values()), skipped, deferred


def run_judge(
    run_path: str | os.PathLike[str],
    spec: str | Judge = DEFAULT_JUDGE,
    *,
    policies: Sequence[str] | None = None,
    workers: int = 2,
    limit: int | None = None,
    progress: bool = True,
    overrides: dict[str, str] | None = None,
    flush_every: int = 16,
    retry_unscored: bool = False,
) -> JudgeSummary:
    """Judge every (case, policy) of a run not judged yet by this judge; with
    ``retry_unscored``, also those unscored after a transient model failure, replacing their
    rows."""
    started = time.perf_counter()
    run = Run(run_path)
    remove_stale_temps(run.path)  # what killed writers left; never another live process's
    judge = make_judge(spec, **(overrides or {}))
    if isinstance(judge.params, EndpointParams):
        # a model judge logs its calls in the run (RUN/calls/) and, with cache_dir=auto, keeps
        # its own response cache there: a killed run resumes from it without paying twice
        from dataclasses import replace

        params = in_run(judge.params, run.path)
        if params.cache_dir == "auto":
            params = replace(params, cache_dir=str(run.path / "llm-cache"))
        judge = type(judge)(params)
    summary = JudgeSummary(judge.label)
    summary.set_aside = set_aside_damaged_verdicts(run.path, judge.label)
    folder = run.path / "verdicts" / slug(judge.label)
    redo = retryable_pairs(run.path, judge.label) if retry_unscored else None
    earlier = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
    works, summary.skipped, summary.deferred = plan_work(run, judge.label, policies, limit, redo)
    asked = {(p, c) for w in works for (c, p) in w.views}
    retried = (
        {(p, c) for p, c in redo.select("policy", "case_id").iter_rows()}
        if redo is not None
        else set()
    )
    total = sum(len(w.views) for w in works)
    bar = tqdm(total=total, unit="verdict", desc=f"judge {judge.name}", disable=not progress)

    def record(rows: Iterable[dict[str, Any]]) -> None:
        rows = list(rows)
        _write_part(rows, folder)
        for r in rows:
            summary.judged += 1
            summary.labels[r["label"]] += 1
            if r["unscored_reason"]:
                summary.unscored[r["unscored_reason"][:80]] += 1
            summary.usd += r["usd"] or 0.0
            summary.calls += 0 if r["cache_hit"] else (r["calls"] or 0)
            summary.cache_hits += 1 if r["cache_hit"] else 0
        bar.update(len(rows))

    if total:
        if judge.concurrent:
            _run_threaded(run, judge, works, record, flush_every)
        else:
            _run_processes(run, judge, works, record, workers)
    bar.close()
    judge.close()
    again = asked & retried
    if again:  # the new rows are written: the old ones go
        drop_verdicts(earlier, again)
        summary.retried = len(again)
    summary.retryable = retryable_pairs(run.path, judge.label).height
    summary.seconds = time.perf_counter() - started
    return summary


def retryable_pairs(run_path: Path, judge_label: str) -> pl.DataFrame:
    """The (policy, case_id) of this judge's verdicts unscored after a transient model failure
    (the ``retryable`` column; from the reason for rows written before it existed)."""
    v = read_verdicts(run_path, judge_label).filter(pl.col("judge") == judge_label)
    if v.height == 0:
        return v.select("policy", "case_id")
    unscored = v.filter(pl.col("label") == "unscored")
    flags = [
        bool(r) if r is not None else is_transient(reason)
        for r, reason in zip(unscored["retryable"], unscored["unscored_reason"], strict=True)
    ]
    return unscored.filter(pl.Series(flags, dtype=pl.Boolean)).select("policy", "case_id")


def _run_processes(
    run: Run,
    judge: Judge,
    works: list[Work],
    record: Callable[[Iterable[dict[str, Any]]], None],
    workers: int,
) -> None:
    state = corpus_state(run, judge)
    spec = judge.describe()
    chunks: list[list[Work]] = []
    size = 0
    for w in works:
        if not chunks or size >= 64:
            chunks.append([])
            size = 0
        chunks[-1].append(w)
        size += len(w.views)
    args = [(str(run.path), str(run.corpus.path), spec, state, c) for c in chunks]
    if workers > 1 and len(chunks) > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for fut in as_completed([pool.submit(_judge_chunk, *a) for a in args]):
                record(fut.result())
    else:
        for a in args:
            record(_judge_chunk(*a))


def _run_threaded(
    run: Run,
    judge: Judge,
    works: list[Work],
    record: Callable[[Iterable[dict[str, Any]]], None],
    flush_every: int,
) -> None:
    corpus = run.corpus
    judge.use_state(corpus_state(run, judge))
    sidecar = SidecarStore(run.path / "sidecar")
    name = run.path.name
    concurrency = int(getattr(judge.params, "concurrency", 4) or 4)
    pending: list[dict[str, Any]] = []
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        for items in session_inputs(corpus, sidecar, works):
            futures = {
                pool.submit(judge_one, judge, item, problem): item for item, problem in items
            }
            for fut in as_completed(futures):
                item = futures[fut]
                try:
                    verdict = fut.result()
                except EndpointUnreachable:
                    record(pending)  # keep what was judged: a re-run resumes after it
                    raise
                except Exception as e:  # a judge bug must not lose the rest of the run
                    verdict = Verdict.unscored(f"judge error: {type(e).__name__}: {e}")
                pending.append(verdict_row(name, item, judge, verdict))
                if len(pending) >= flush_every:
                    record(pending)
                    pending = []
    record(pending)
