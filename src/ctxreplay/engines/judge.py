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

import gc
import json
import os
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, cast, overload

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
from tqdm import tqdm

from .. import storage
from ..datasets.cases import materialise, read_cases
from ..datasets.messages import Message
from ..datasets.tokenizer import CountCache, get_tokenizer
from ..errors import CtxreplayError
from ..files import atomic_write_text, remove_stale_temps
from ..judges.base import (
    DEFAULT_JUDGE,
    Judge,
    JudgeInput,
    Verdict,
    corpus_pass,
    judges,
    make_judge,
)
from ..llm.completion import EndpointUnreachable, is_transient
from ..llm.endpoint import EndpointParams, in_run
from ..replay.objects import build_index
from ..replay.sidecar import SidecarError
from ..replay.view import Archive
from ..runs import (
    CHUNK_CASES,
    READ_ERRORS,
    DamagedRunError,
    Run,
    SidecarStore,
    cases_digest,
    drop_verdicts,
    part_problem,
    query_verdicts,
    read_table,
    read_verdicts,
    renew_verdicts,
    replay_repair,
    require_reachable,
    run_manifest,
    set_aside_damaged_verdicts,
    slug,
    view_messages,
)
from ..schema import VERDICTS, VerdictRow
from .executor import run_chunks


class JudgeRunError(CtxreplayError):
    pass


def verdict_row(run: str, item: JudgeInput, judge: Judge, v: Verdict) -> VerdictRow:
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


def corpus_state(run: Run, judge: Judge, engine: str = "local", address: str | None = None) -> Any:
    """The judge's corpus-level state, computed once per corpus and kept in the run folder;
    with ``engine="ray"`` its corpus pass runs as Ray tasks (``judges.base.corpus_pass``)."""
    path = run.path / "judge-state" / f"{slug(judge.label)}.json"
    fingerprint = run.corpus.fingerprint()
    if path.exists():
        try:
            saved = json.loads(path.read_text())
        except (OSError, ValueError):  # damaged: computed again and rewritten below
            saved = None
        if isinstance(saved, dict) and saved.get("corpus_fingerprint") == fingerprint:
            return saved.get("state")
    runner = partial(ray_pass, address=address) if engine == "ray" else None
    with corpus_pass(runner):
        state = judge.corpus_state(run.corpus)
    try:
        text = json.dumps({"corpus_fingerprint": fingerprint, "state": state}, sort_keys=True)
    except TypeError:  # not JSON: recompute next time
        return state
    atomic_write_text(path, text)
    return state


def ray_pass(
    fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]], address: str | None = None
) -> Iterator[tuple[int, Any]]:
    """A corpus pass's blocks as Ray tasks, spread over the cluster: (call index, result) as
    each finishes (``judges.base.PassRunner``)."""
    indexed = [(i, *call) for i, call in enumerate(calls)]
    yield from run_chunks(_indexed, indexed, engine="ray", address=address, shared=(fn,))


def _indexed(fn: Callable[..., Any], i: int, *args: Any) -> tuple[int, Any]:
    return i, fn(*args)


def _write_part(
    rows: Sequence[Mapping[str, Any]], folder: str | Path, name: str | None = None
) -> None:
    """A new part file per batch (never overwritten: ``name`` unique unless given), written
    atomically, in a local run or on object storage."""
    if rows:
        name = name or f"part-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
        storage.write_table(storage.join(folder, f"{name}.parquet"), rows, VERDICTS)


@dataclass(frozen=True)
class RunSource:
    """Where a judge's workers and tasks find a run: its folder or URI (they read its views
    and archived payloads there, and write their verdicts there), its corpus, and its name
    (the verdicts' ``run`` column)."""

    location: str
    corpus: str
    name: str


# --- building judge inputs -----------------------------------------------------------------


@dataclass
class Work:
    """The (case, policy) pairs of one session still to judge."""

    session_id: str
    cases: list[dict[str, Any]]  # case rows (cut, future range), in cut order
    pairs: list[tuple[str, str, bool]]  # (case_id, policy, committed), in (cut, policy) order


@dataclass
class JudgeChunk:
    """Whole sessions with work left, judged together: the sessions are read from the corpus
    once, and only the replay parts that hold their views (``parts``: policy → part file names),
    so a worker never holds more than one chunk of the run or the corpus."""

    works: list[Work]
    parts: dict[str, list[str]]

    @property
    def pairs(self) -> int:
        return sum(len(w.pairs) for w in self.works)


#: a judge input, and why it cannot be judged (its archived payload is damaged) or None
Item = tuple[JudgeInput, str | None]
#: (case, policy) → its views row; (case, policy) → object → committed action
Views = dict[tuple[str, str], dict[str, Any]]
Actions = dict[tuple[str, str], dict[str, str]]


def _archives(row: dict[str, Any], sidecar: SidecarStore) -> tuple[tuple[Archive, ...], str | None]:
    """A view's archived payloads from the sidecar, or why they cannot be had (a payload
    missing or altered): the pair is then unscored, never judged without them."""
    try:
        return tuple(
            Archive(
                ref=a["ref"],
                object_id=a["object_id"],
                payload=sidecar.recover(a["ref"]),
                pointer_visible=a["pointer_visible"],
                handle=a["handle"],
            )
            for a in row["archives"] or ()
        ), None
    except SidecarError as e:
        return (), (
            f"archived payload damaged: {e}; re-run the replay into a new folder to rebuild "
            "the sidecar"
        )


def _part_paths(run: str | Path, table: str, label: str, names: Sequence[str]) -> list[str | Path]:
    """The parts of ``table`` named like the figures parts that list a chunk's pairs (the
    replay writes a chunk's tables under one name); every part of the policy if one is not
    there. The run may be on object storage."""
    folder = storage.join(run, table, slug(label))
    paths = [storage.join(folder, name) for name in names]
    if all(storage.is_file(path) for path in paths):
        return paths
    if isinstance(folder, Path):
        return sorted(folder.glob("*.parquet"))
    found = storage.list_files(folder)
    return [storage.join(folder, n) for n in found if n.endswith(".parquet") and "/" not in n]


def _part_rows(
    run: str | Path,
    paths: Sequence[str | Path],
    ids: set[str],
    keep: Any = None,
    columns: Sequence[str] | None = None,
) -> pa.Table:
    """The rows of these replay parts whose case is in ``ids`` (and that ``keep`` selects), read
    with pyarrow alone: a worker process is forked from one that used polars, whose thread pool
    does not survive a fork. ``columns``: only these are read (those a part has; ``case_id``
    always). A part that does not read is named, with its repair."""
    wanted = pa.array(sorted(ids), pa.string())
    tables = []
    for path in paths:
        try:
            table = storage.read_parquet(path, None if columns is None else ("case_id", *columns))
        except PART_ERRORS:
            problem = _read_problem(path)
            if problem is None:
                raise  # it reads on its own: not damage but a bug, with its traceback
            raise DamagedRunError(
                f"part {storage.redact(str(path))} is damaged ({problem}); {replay_repair(run)}"
            ) from None
        mask = pc.is_in(table["case_id"], value_set=wanted)
        if keep is not None:
            mask = pc.and_(mask, keep(table))
        tables.append(table.filter(mask))
    return pa.concat_tables(tables, promote_options="default") if tables else pa.table({})


#: what reading a replay part raises when it is damaged, here or on object storage
PART_ERRORS: tuple[type[BaseException], ...] = (*READ_ERRORS, storage.StorageError)


def _read_problem(path: str | Path) -> str | None:
    """Why a part cannot be read (None: it reads whole), local or on object storage."""
    if isinstance(path, Path):
        return part_problem(path) if path.is_file() else "missing"
    try:
        storage.read_parquet(path)
    except PART_ERRORS as e:
        return str(e).splitlines()[0][:160] if str(e) else type(e).__name__
    return None


#: what the judge reads of the views and decisions parts
VIEW_COLUMNS = ("entries", "archives", "summary")
DECISION_COLUMNS = ("object_id", "action")


def _view_rows(table: pa.Table) -> list[dict[str, Any]]:
    """The rows of a views part as dicts, each of its entries that shows a prefix message as
    it was reduced to what ``view_messages`` reads of it (``parts`` None, and its ``index``):
    making a dict of every field of every entry of every view was most of the reading."""
    if "entries" not in table.column_names or table.num_rows == 0:
        return cast(list[dict[str, Any]], table.to_pylist())
    entries = table["entries"].combine_chunks()
    flat = entries.values  # every entry of every row: row r's are offsets[r]:offsets[r + 1]
    names = [flat.type.field(i).name for i in range(flat.type.num_fields)]
    if not {"parts", "index"} <= set(names):
        return cast(list[dict[str, Any]], table.to_pylist())
    fields = dict(zip(names, flat.flatten(), strict=True))  # an entry's nulls are its fields'
    rows: list[dict[str, Any]] = table.drop_columns(["entries"]).to_pylist()
    index = fields["index"].to_pylist()
    edited = pc.is_valid(fields["parts"]).to_pylist()
    edited_at = [k for k, e in enumerate(edited) if e]
    full = dict(zip(edited_at, flat.take(pa.array(edited_at, pa.int64())).to_pylist(), strict=True))
    offsets = entries.offsets.to_pylist()
    valid = entries.is_valid().to_pylist()
    for r, row in enumerate(rows):
        if not valid[r]:
            row["entries"] = None
            continue
        row["entries"] = [
            full[k] if edited[k] else {"parts": None, "index": index[k]}
            for k in range(offsets[r], offsets[r + 1])
        ]
    return rows


def load_views(run: str | Path, chunk: JudgeChunk) -> tuple[Views, Actions]:
    """The views rows and committed actions of a chunk's pairs, from the parts that hold them."""
    wanted: dict[str, set[str]] = {}
    for w in chunk.works:
        for case_id, policy, _ in w.pairs:
            wanted.setdefault(policy, set()).add(case_id)
    views: Views = {}
    actions: Actions = {}
    for label, names in chunk.parts.items():
        ids = wanted.get(label, set())
        views_part = _part_rows(
            run, _part_paths(run, "views", label, names), ids, columns=VIEW_COLUMNS
        )
        for row in _view_rows(views_part):
            views[(row["case_id"], label)] = row
        decisions = _part_rows(
            run,
            _part_paths(run, "decisions", label, names),
            ids,
            lambda t: pc.not_equal(t["action"], "keep"),  # null actions are left out too
            columns=DECISION_COLUMNS,
        )
        if decisions.num_rows:
            for case_id, object_id, action in zip(
                decisions["case_id"].to_pylist(),
                decisions["object_id"].to_pylist(),
                decisions["action"].to_pylist(),
                strict=True,
            ):
                actions.setdefault((case_id, label), {})[object_id] = action
    return views, actions


def _no_count(text: str) -> int:
    return 0


def inputs_for(
    work: Work,
    messages: Sequence[Message],
    views: Views,
    actions: Actions,
    sidecar: SidecarStore,
    counts: bool = True,
    tools: tuple[Any, ...] | None = None,
) -> Iterator[Item]:
    """The judge inputs of one session: its prefixes, futures and object indexes are built
    once per case, whatever the number of policies. ``counts``: whether the judge reads the
    token counts of the index's objects (``Judge.reads_token_counts``); when not, they are 0
    and nothing is tokenised. ``tools``: the session's tool definitions, for a judge that
    reads them."""
    count = CountCache(get_tokenizer()) if counts else _no_count
    session = tuple(m for m in messages if m.visible)  # shared by the session's inputs
    by_case: dict[str, list[tuple[str, bool]]] = {}
    for case_id, policy, committed in work.pairs:
        by_case.setdefault(case_id, []).append((policy, committed))
    for case in work.cases:
        case_messages = materialise(case, session)
        prefix, future = case_messages.prefix, case_messages.future
        index = build_index(prefix, count)
        for policy, committed in by_case.get(case["case_id"], ()):
            key = (case["case_id"], policy)
            row = views.pop(key)  # judged once: not kept after
            view = view_messages(row["entries"], prefix)
            archives, problem = _archives(row, sidecar)
            yield (
                JudgeInput(
                    case_id=case["case_id"],
                    session_id=work.session_id,
                    policy=policy,
                    prefix=prefix,
                    view=tuple(view),
                    future=future,
                    index=index,
                    actions=actions.get(key, {}),
                    archives=archives,
                    committed=committed,
                    summary=row.get("summary"),
                    cut=case["cut"],
                    tools=tools,
                    session=session,
                ),
                problem,
            )


def chunk_inputs(
    run: str | Path,
    corpus: Any,
    sidecar: SidecarStore,
    chunk: JudgeChunk,
    counts: bool = True,
    tools: bool = False,
) -> Iterator[list[Item]]:
    """The judge inputs of each session of a chunk, one session at a time: the chunk's sessions
    are read from the corpus in one call, its views from the parts that hold them. ``tools``:
    whether the judge reads the sessions' tool definitions (``Judge.reads_session_tools``)."""
    views, actions = load_views(run, chunk)
    by_id = {w.session_id: w for w in chunk.works}
    defined = session_tools(corpus, list(by_id)) if tools else {}
    for sid, messages in corpus.iter_sessions(list(by_id)):
        yield list(
            inputs_for(by_id[sid], messages, views, actions, sidecar, counts, defined.get(sid))
        )


def session_tools(corpus: Any, session_ids: Sequence[str]) -> dict[str, tuple[Any, ...]]:
    """The tool definitions recorded in these sessions' metadata (``tools``), by session; a
    session without them (or with metadata that does not read) is left out."""
    rows = corpus.session_rows("sessions", session_ids, ["session_id", "metadata"]).to_pylist()
    out: dict[str, tuple[Any, ...]] = {}
    for row in rows:
        try:
            meta = json.loads(row["metadata"] or "{}")
        except ValueError:
            continue
        defs = meta.get("tools") if isinstance(meta, dict) else None
        if isinstance(defs, list) and defs:
            out[row["session_id"]] = tuple(d for d in defs if isinstance(d, dict))
    return out


def _worker_judge(spec: dict[str, Any], state: Any) -> Judge:
    """A worker's judge, built once from the spec and the corpus state (``executor`` setup):
    neither is sent again with every chunk."""
    judge: Judge = judges.rebuild(spec)
    judge.use_state(state)
    return judge


def _judge_chunk(judge: Judge, source: RunSource, chunk: JudgeChunk) -> list[VerdictRow]:
    """Judge every input of a chunk with a deterministic judge (in a worker, a task or this
    process)."""
    from ..datasets.store import Corpus

    run = storage.location(source.location)
    inputs = chunk_inputs(
        run,
        Corpus(source.corpus),
        SidecarStore(storage.join(run, "sidecar")),
        chunk,
        judge.reads_token_counts,
        judge.reads_session_tools,
    )
    rows: list[VerdictRow] = []
    with fewer_collections():
        for items in inputs:
            judge.begin_session([item for item, _ in items])
            rows.extend(
                verdict_row(source.name, item, judge, judge_one(judge, item, problem))
                for item, problem in items
            )
            judge.end_session()
    return rows


@contextmanager
def fewer_collections() -> Iterator[None]:
    """The cyclic garbage collector run less often while judging: a judge makes millions of
    small objects (facts, token sets, word runs) that die young or live for a session, in no
    cycles, and at the default thresholds the collector spent about a fifth of the time
    walking them. Memory is still freed as it was (by reference counts); the thresholds are
    restored after."""
    old = gc.get_threshold()
    gc.set_threshold(max(old[0], 50_000), max(old[1], 20), max(old[2], 20))
    try:
        yield
    finally:
        gc.set_threshold(*old)


def judge_one(judge: Judge, item: JudgeInput, problem: str | None) -> Verdict:
    """The verdict of one pair, the one error policy of every engine (in process, worker
    processes, threads, Ray tasks): unscored when its archives are damaged (``problem``) or
    turn out unreadable while judged, or when the judge raises (a judge bug must not lose the
    rest of the run); an endpoint that cannot be reached stops the run, which resumes."""
    if problem is not None:
        return Verdict.unscored(problem)
    try:
        return judge.judge(item)
    except SidecarError as e:
        return Verdict.unscored(f"archived payload damaged: {e}")
    except EndpointUnreachable:
        raise
    except Exception as e:
        return Verdict.unscored(f"judge error: {type(e).__name__}: {e}")


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
    renewed: int = 0  # verdict parts removed: made from other inputs (a labels file changed)

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
        if self.renewed:
            lines.append(
                f"  {self.renewed} verdict parts were made from other inputs (its labels "
                "changed): every pair judged again"
            )
        return "\n".join(lines)


def _pending_pairs(run: Run, labels: Sequence[str], done: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """The (policy, case) pairs of these policies not in ``done``, with their session, cut,
    commit and the figures part that lists them (its views and decisions parts have its
    name), in (session, cut, case, policy) order; and how many pairs the policies have."""
    run.check(labels)
    frames = []
    for label in labels:
        folder = run.path / "figures" / slug(label)
        parts = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
        if parts:  # one scan of the five columns, not every column of every part
            columns = ["policy", "case_id", "session_id", "cut", "committed"]
            frames.append(read_table("figures", parts, run.path, columns, part_column="part"))
    if not frames:
        return pl.DataFrame(schema={"policy": pl.String, "case_id": pl.String}), 0
    figures = pl.concat(frames, how="vertical_relaxed")
    return figures.join(done, on=["policy", "case_id"], how="anti").sort(
        ["session_id", "cut", "case_id", "policy"]
    ), figures.height


class ChunkPlan(Sequence[JudgeChunk]):
    """The chunks of a judge run, each made when it is handed out: the plan holds the pending
    pairs and their cases as two frames, in the same session order, and where each chunk's rows
    start and end. The process handing out the work so holds a few columns per pair, not an
    object per pair and per case (those cost about 1 KB a pair: 100 MB at 2,000 sessions ×
    10 policies)."""

    def __init__(
        self, todo: pl.DataFrame, cases: pl.DataFrame, bounds: list[tuple[int, int, int, int]]
    ) -> None:
        self._todo = todo  # case_id, policy, committed, part, session_id, …
        self._cases = cases  # one row per case of ``todo``, in its order
        self._bounds = bounds  # per chunk: pair rows [a, b), case rows [c, d)

    @classmethod
    def of(cls, todo: pl.DataFrame, cases: pl.DataFrame, size: int) -> ChunkPlan:
        """Whole sessions, about ``size`` cases a chunk (a session larger than that alone);
        ``todo`` in (session, cut, case, policy) order, as ``_pending_pairs`` gives it."""
        wanted = todo.select("case_id").unique()
        cases = cases.join(wanted, on="case_id", how="semi").sort(["session_id", "cut", "case_id"])
        per_session = todo.group_by("session_id", maintain_order=True).agg(
            pl.len().alias("pairs"), pl.col("case_id").n_unique().alias("cases")
        )
        bounds: list[tuple[int, int, int, int]] = []
        a = c = 0  # where the current chunk starts
        b = d = 0  # where the sessions taken so far end
        for pairs, n in per_session.select("pairs", "cases").iter_rows():
            if d > c and (d - c) + n > size:
                bounds.append((a, b, c, d))
                a, c = b, d
            b, d = b + pairs, d + n
        if b > a:
            bounds.append((a, b, c, d))
        return cls(todo, cases, bounds)

    def __len__(self) -> int:
        return len(self._bounds)

    @overload
    def __getitem__(self, i: int) -> JudgeChunk: ...
    @overload
    def __getitem__(self, i: slice) -> list[JudgeChunk]: ...
    def __getitem__(self, i: int | slice) -> JudgeChunk | list[JudgeChunk]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        a, b, c, d = self._bounds[i]
        works: dict[str, Work] = {}
        for row in self._cases.slice(c, d - c).iter_rows(named=True):
            sid = row["session_id"]
            works.setdefault(sid, Work(sid, [], [])).cases.append(row)
        parts: dict[str, set[str]] = {}
        label_of: dict[str, str] = {}  # one string per policy label, not one per pair
        rows = self._todo.slice(a, b - a).select(
            "session_id", "case_id", "policy", "committed", "part"
        )
        for sid, case_id, policy, committed, part in rows.iter_rows():
            policy = label_of.setdefault(policy, policy)
            works[sid].pairs.append((case_id, policy, committed))
            parts.setdefault(policy, set()).add(part)
        return JudgeChunk(list(works.values()), {k: sorted(v) for k, v in parts.items()})

    def most_work_first(self) -> list[int]:
        """The chunks' indexes, the most work first: the messages the judge reads for each of a
        chunk's pairs (its prefix and its future, ``prefix_messages`` + ``future_messages``).
        A chunk holds whole sessions, and a long session cut often is the most work of a run:
        handed out last, it would be judged alone while the other workers idle (the longest
        processing time first, as a scheduler of jobs on machines does). In plan order where
        the cases do not say their sizes."""
        cases = self._cases
        if not {"prefix_messages", "future_messages"} <= set(cases.columns):
            return list(range(len(self)))
        looked = cases.select(pl.col("prefix_messages") + pl.col("future_messages"))
        per_case = looked.to_series().cast(pl.Float64).cum_sum().to_list()

        def work(bounds: tuple[int, int, int, int]) -> float:
            a, b, c, d = bounds
            messages = per_case[d - 1] - (per_case[c - 1] if c else 0.0)
            return float(
                messages * (b - a) / max(1, d - c)
            )  # (the pairs of its cases, as many each)

        return sorted(range(len(self)), key=lambda i: -work(self._bounds[i]))

    @property
    def pairs(self) -> int:
        """How many (case, policy) pairs the chunks hold in all."""
        return self._todo.height

    def pair_keys(self) -> pl.DataFrame:
        """The (policy, case_id) of every pair."""
        return self._todo.select("policy", "case_id")


def plan_work(
    run: Run,
    judge_label: str,
    policies: Sequence[str] | None = None,
    limit: int | None = None,
    redo: pl.DataFrame | None = None,
    chunk_cases: int | None = None,
) -> tuple[ChunkPlan, int, int]:
    """The chunks of sessions with something left to judge, how many pairs are already judged,
    and how many are left for later by ``limit``. ``redo``: judged pairs (policy, case_id) to
    judge again. Chunks hold whole sessions, about ``chunk_cases`` cases each (default: the
    replay's chunk size, so a full run is judged in the replay's chunks); only their ids travel,
    the views are read by whoever judges the chunk."""
    done = read_verdicts(run.path, judge_label, ["judge", "policy", "case_id"]).select(
        "policy", "case_id"
    )  # the keys only: a resumed run's verdicts with their losses would cost 160 MB at 116k
    if redo is not None and redo.height:
        done = done.join(redo.select("policy", "case_id"), on=["policy", "case_id"], how="anti")
    labels = [run.resolve_policy(p) for p in policies] if policies else run.policies
    todo, total = _pending_pairs(run, labels, done)
    skipped = total - todo.height
    deferred = max(0, todo.height - limit) if limit is not None else 0
    if limit is not None:
        todo = todo.head(limit)
    if todo.height == 0:
        return ChunkPlan(todo, pl.DataFrame(), []), skipped, deferred
    cases, _ = read_cases(run.manifest["cases_path"])
    size = chunk_cases or int(run.manifest.get("chunk_size") or CHUNK_CASES)
    return ChunkPlan.of(todo, cases, size), skipped, deferred


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
    chunk_cases: int | None = None,
    engine: str = "local",
    ray_address: str | None = None,
) -> JudgeSummary:
    """Judge every (case, policy) of a run not judged yet by this judge; with
    ``retry_unscored``, also those unscored after a transient model failure, replacing their
    rows. ``chunk_cases``: about how many cases are judged together (default: the replay's
    chunk size); the verdicts are the same for any value. ``engine``: ``local`` (processes, or
    threads for a model judge) or ``ray`` (each chunk a Ray task, at ``ray_address``)."""
    from .ray_engine import check_engine

    check_engine(engine, ray_address)
    started = time.perf_counter()
    run_manifest(run_path)  # a run, before anything is copied
    # a run on object storage: tasks read it and publish their verdicts there, wherever they
    # run; this process works on a mirror of what it reads (not views' payloads or responses)
    mirror = storage.Mirror(run_path)
    try:
        return _judge_run(
            mirror, spec, started, policies=policies, workers=workers, limit=limit,
            progress=progress, overrides=overrides, flush_every=flush_every,
            retry_unscored=retry_unscored, chunk_cases=chunk_cases, engine=engine,
            ray_address=ray_address,
        )  # fmt: skip
    finally:
        mirror.close()


def _judge_run(
    mirror: storage.Mirror,
    spec: str | Judge,
    started: float,
    *,
    policies: Sequence[str] | None,
    workers: int,
    limit: int | None,
    progress: bool,
    overrides: dict[str, str] | None,
    flush_every: int,
    retry_unscored: bool,
    chunk_cases: int | None,
    engine: str,
    ray_address: str | None,
) -> JudgeSummary:
    run = Run(mirror.path)
    #: where the run is for what tasks (and this process) read and write there
    where = str(mirror.location) if mirror.remote else str(run.path)
    remove_stale_temps(run.path)  # what killed writers left; never another live process's
    if mirror.remote:
        storage.remove_stale_temps(
            where, time.time() - (time.perf_counter() - started)
        )  # left before this run began
    judge = make_judge(spec, **(overrides or {}))
    if isinstance(judge.params, EndpointParams):
        # a model judge logs its calls in the run (RUN/calls/) and, with cache_dir=auto, keeps
        # its own response cache there: a killed run resumes from it without paying twice
        judge = type(judge)(in_run(judge.params, where))
    summary = JudgeSummary(judge.label)
    summary.set_aside = set_aside_damaged_verdicts(run.path, judge.label)
    summary.renewed = renew_verdicts(run.path, judge.label, judge.inputs_fingerprint())
    folder = run.path / "verdicts" / slug(judge.label)
    redo = retryable_pairs(run.path, judge.label) if retry_unscored else None
    earlier = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
    chunks, summary.skipped, summary.deferred = plan_work(
        run, judge.label, policies, limit, redo, chunk_cases
    )
    retried = (
        {(p, c) for p, c in redo.select("policy", "case_id").iter_rows()}
        if redo is not None
        else set()
    )
    # the pairs asked again (a set of every pair of the run only when some are retried)
    again = set(chunks.pair_keys().iter_rows()) & retried if retried else set()
    total = chunks.pairs
    bar = tqdm(total=total, unit="verdict", desc=f"judge {judge.name}", disable=not progress)
    parts = storage.join(storage.location(where), "verdicts", slug(judge.label))

    def record(rows: Iterable[Mapping[str, Any]], write: bool = True) -> None:
        rows = list(rows)
        if write:  # (a Ray task writes its own parts)
            _write_part(rows, parts)
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
        state = corpus_state(run, judge, engine, ray_address)
        mirror.push()  # set-asides, renewed parts, the judge's state: before any new verdict
        source = RunSource(where, run.manifest["corpus_path"], run.path.name)
        if engine == "ray":
            _run_ray(
                source, judge, chunks, lambda rows: record(rows, write=False), flush_every,
                ray_address, state,
            )  # fmt: skip
        elif judge.concurrent:
            _run_threaded(source, judge, chunks, record, flush_every, state)
        else:
            _run_processes(source, judge, chunks, record, workers, state)
    bar.close()
    judge.close()
    mirror.pull(["verdicts"])  # the verdicts published
    if again:  # the new rows are written: the old ones go
        drop_verdicts(earlier, again)
        summary.retried = len(again)
    summary.retryable = retryable_pairs(run.path, judge.label).height
    summary.seconds = time.perf_counter() - started
    return summary


def retryable_pairs(run_path: Path, judge_label: str) -> pl.DataFrame:
    """The (policy, case_id) of this judge's verdicts unscored after a transient model failure
    (the ``retryable`` column; from the reason for rows written before it existed).

    Read in two filtered scans rather than as every verdict of the judge (at 2,000 sessions ×
    10 policies those were the judging process's peak): the pairs with an unscored row, then
    every row of those pairs, of which the first is the pair's verdict, as ``read_verdicts``
    keeps it."""
    key = ["judge", "policy", "case_id"]
    mine = pl.col("judge") == judge_label
    candidates = query_verdicts(
        run_path, lambda scan: scan.filter(mine & (pl.col("label") == "unscored")).select(key)
    ).unique()
    if candidates.height == 0:
        return candidates.select("policy", "case_id")
    v = query_verdicts(
        run_path,
        lambda scan: (
            scan.filter(mine)
            .join(candidates.lazy(), on=key, how="semi", maintain_order="left")
            .select(*key, "label", "retryable", "unscored_reason")
            .unique(key, keep="first", maintain_order=True)
        ),
    )
    unscored = v.filter(pl.col("label") == "unscored")
    flags = [
        bool(r) if r is not None else is_transient(reason)
        for r, reason in zip(unscored["retryable"], unscored["unscored_reason"], strict=True)
    ]
    return unscored.filter(pl.Series(flags, dtype=pl.Boolean)).select("policy", "case_id")


def _run_processes(
    source: RunSource,
    judge: Judge,
    chunks: ChunkPlan,
    record: Callable[[Iterable[Mapping[str, Any]]], None],
    workers: int,
    state: Any,
) -> None:
    """Chunks judged by worker processes (or this one: ``executor.run_chunks``), each worker
    building the judge once with its corpus state; the largest chunks first, each chunk's
    verdicts written when it is done."""
    for rows in run_chunks(
        _judge_chunk,
        [(source, chunks[i]) for i in chunks.most_work_first()],
        workers=workers,
        shared=(judge.describe(), state),
        setup=_worker_judge,
    ):
        record(rows)


def _run_threaded(
    source: RunSource,
    judge: Judge,
    chunks: Sequence[JudgeChunk],
    record: Callable[[Iterable[Mapping[str, Any]]], None],
    flush_every: int,
    state: Any,
) -> None:
    """A model judge's chunks, its calls made in threads; ``state``: its corpus state."""
    from ..datasets.store import Corpus

    corpus = Corpus(source.corpus)
    judge.use_state(state)
    run = storage.location(source.location)
    sidecar = SidecarStore(storage.join(run, "sidecar"))
    concurrency = int(getattr(judge.params, "concurrency", 4) or 4)
    pending: list[VerdictRow] = []
    counts = judge.reads_token_counts
    sessions = (
        items
        for chunk in chunks
        for items in chunk_inputs(run, corpus, sidecar, chunk, counts, judge.reads_session_tools)
    )
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        for items in sessions:
            judge.begin_session([item for item, _ in items])
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
                pending.append(verdict_row(source.name, item, judge, verdict))
                if len(pending) >= flush_every:
                    record(pending)
                    pending = []
            judge.end_session()
    record(pending)


# --- the Ray engine ------------------------------------------------------------------------

#: what a Ray task sends back of each verdict row: what the summary counts
TALLY = ("label", "unscored_reason", "usd", "cache_hit", "calls")


def _run_ray(
    source: RunSource,
    judge: Judge,
    chunks: Sequence[JudgeChunk],
    record: Callable[[Iterable[Mapping[str, Any]]], None],
    flush_every: int,
    address: str | None,
    state: Any,
) -> None:
    """Each chunk a Ray task (:mod:`.ray_engine`) that judges it and writes its verdict part
    itself, into the run wherever it is; a model judge's calls are held to the endpoint's limit
    across the cluster. ``state``: the corpus state, computed once and shared."""
    shared = (source, judge.describe(), state, flush_every)
    calls = [(chunk,) for chunk in chunks]
    for rows in run_chunks(_judge_task, calls, engine="ray", address=address, shared=shared):
        record(rows)


def chunk_part_name(chunk: JudgeChunk) -> str:
    """The verdict part of a Ray task's chunk, named by its pairs: a task Ray runs again (its
    worker died after publishing) writes the same part again, never a second copy."""
    keys = (f"{policy}\0{case_id}" for w in chunk.works for case_id, policy, _ in w.pairs)
    return f"part-chunk-{cases_digest(keys)}"


def _judge_task(
    source: RunSource,
    spec: dict[str, Any],
    state: Any,
    flush_every: int,
    chunk: JudgeChunk,
) -> list[dict[str, Any]]:
    """A Ray task: judge one chunk as the local engine does (a deterministic judge as a process
    worker would, a model judge in threads), write its verdict part; what the summary counts."""
    require_reachable(source.location)
    judge = judges.rebuild(spec)
    rows: list[Mapping[str, Any]] = []
    folder = storage.join(storage.location(source.location), "verdicts", slug(judge.label))
    try:
        if judge.concurrent:
            try:
                _run_threaded(source, judge, [chunk], rows.extend, flush_every, state)
            finally:
                judge.close()
        else:
            rows.extend(_judge_chunk(_worker_judge(spec, state), source, chunk))
    finally:  # what was judged is kept (a dead endpoint): a re-run judges the rest
        _write_part(rows, folder, chunk_part_name(chunk))
    return [{k: r[k] for k in TALLY} for r in rows]
