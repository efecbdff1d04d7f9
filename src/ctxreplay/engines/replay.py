"""The replay engine: every case of a cases file through every policy, into a run folder.

The I/O shell around the pure core (``outcome.replay_case``)::

    RUN/manifest.json                      versions, fingerprints, policies with all parameters
    RUN/figures/<policy>/chunk-NNNNN.parquet    one row per case: tokens, pruning rate, actions, cost
    RUN/decisions/<policy>/chunk-NNNNN.parquet  one row per object: proposed and committed action
    RUN/views/<policy>/chunk-NNNNN.parquet      enough to rebuild each view exactly
    RUN/sidecar/ab/abcdef…                      archived payloads (content-addressed)

Cases are cut into fixed chunks (whole sessions, in session order) before any worker starts, and
each (chunk, policy) is one set of files written atomically by whichever process computed it: the
output is identical for any number of workers, and a re-run skips every chunk already written.

After its parts, each (chunk, policy) gets a done-marker (``RUN/done/``, :func:`ctxreplay.runs.
write_done`): each part's rows and bytes, and what the parts were made from (policy, corpus,
cases, the chunk's case ids). A re-run redoes a chunk whose marker is missing or names other cases,
or whose part is missing, truncated or holds other rows; without a manifest it refuses to reuse
parts no marker attributes to the same cases. Temporary files a killed run left are removed.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import polars as pl
from tqdm import tqdm

from .. import storage
from ..datasets.cases import cases_file_of, materialise, read_cases
from ..datasets.messages import Message
from ..datasets.rows import part_to_row
from ..datasets.store import Corpus, created_at
from ..datasets.tokenizer import CountCache, get_tokenizer
from ..files import atomic_write_text, remove_stale_temps
from ..llm.endpoint import EndpointParams, in_run
from ..policies.base import Policy, make_policy, rebuild_policy
from ..policies.budget import editable_tokens
from ..replay.context import PrefixContext
from ..replay.cost import Baseline, baseline_cost, case_cost
from ..replay.objects import ObjectIndex, PartCounter, build_index, part_tokens
from ..replay.outcome import Outcome, replay_case
from ..replay.plan import PlannerReport
from ..replay.view import Archive, InvalidViewError, view_problems
from ..runs import (
    CHUNK_CASES,
    DONE_DIR,
    TABLES,
    RunError,
    SidecarStore,
    cases_digest,
    chunk_done,
    read_marker,
    require_reachable,
    set_aside,
    slug,
    write_chunk_part,
    write_done,
)
from ..schema import FiguresRow
from ..tariffs import load_tariff
from ..version import __version__
from .executor import run_chunks


@dataclass
class Chunk:
    index: int
    sessions: list[str]
    cases: pl.DataFrame  # its rows of the cases frame, in (session, cut) order

    @property
    def digest(self) -> str:
        """Which cases the chunk holds (in order): its parts belong to these only."""
        return cases_digest(self.cases["case_id"].to_list())


def attribution(chunk: Chunk, label: str, made_from: dict[str, Any]) -> dict[str, Any]:
    """What a (chunk, policy)'s parts must have been made from to be reused: the policy, the
    corpus and cases fingerprints (``made_from``) and the chunk's case ids."""
    return {"policy": label, **made_from, "cases": chunk.digest}


def make_chunks(cases: pl.DataFrame, size: int = CHUNK_CASES) -> list[Chunk]:
    """Whole sessions per chunk, in (session, cut) order, about ``size`` cases each. A chunk's
    cases stay a slice of the (Arrow) cases frame until its worker reads them."""
    ordered = cases.sort(["session_id", "cut"])
    sessions = ordered.group_by("session_id", maintain_order=True).len()
    chunks: list[Chunk] = []
    start = held = 0
    ids: list[str] = []
    for sid, n in sessions.iter_rows():
        if held and held + n > size:
            chunks.append(Chunk(len(chunks), ids, ordered.slice(start, held)))
            start, held, ids = start + held, 0, []
        ids.append(str(sid))
        held += n
    if held:
        chunks.append(Chunk(len(chunks), ids, ordered.slice(start, held)))
    return chunks


@dataclass
class PolicySummary:
    label: str
    cases: int = 0
    pruning: float = 0.0
    committed: int = 0
    dropped: int = 0
    failures: int = 0
    seconds: float = 0.0
    note: str | None = None  # why it changed no case, when it changed none


@dataclass
class ReplaySummary:
    run: str | Path
    cases: int
    chunks: int
    computed: int = 0
    skipped: int = 0
    seconds: float = 0.0
    policies: list[PolicySummary] = field(default_factory=list)

    def render(self) -> str:
        width = max([len("policy"), *(len(p.label) for p in self.policies)])
        lines = [
            f"replayed {self.cases} cases × {len(self.policies)} policies in {self.seconds:.1f}s "
            f"({self.computed} chunk-policies computed, {self.skipped} already done) → {self.run}",
            f"{'policy':<{width}} {'cases':>6} {'pruned':>8} {'committed':>10} {'dropped':>8} "
            f"{'failed':>7}",
        ]
        for p in self.policies:
            lines.append(
                f"{p.label:<{width}} {p.cases:>6} {p.pruning:>7.1%} {p.committed:>10} "
                f"{p.dropped:>8} {p.failures:>7}"
            )
        lines += [f"  note: {p.label} {p.note}" for p in self.policies if p.note]
        return "\n".join(lines)


_BELOW = re.compile(r"below (\w+)=([\d,]+)")


#: the figures columns ``idle_note`` reads (``no_edit`` is absent from runs older than it)
IDLE_COLUMNS = [
    "committed",
    "prefix_tokens",
    "planner_failure",
    "no_edit",
    "budget_note",
    "commit_reason",
]


def idle_note(frame: pl.DataFrame) -> str | None:
    """Why a policy changed no case (None when it changed some): a trigger never reached, its
    planner failing, or the most frequent reason its plans gave."""
    if frame.height == 0 or bool(frame["committed"].any()):
        return None
    largest = int(frame["prefix_tokens"].max() or 0)  # type: ignore[arg-type]
    failures = frame["planner_failure"].drop_nulls()
    if len(failures) == frame.height:
        return f"failed on every case (e.g. {str(failures[0]).splitlines()[0][:120]})"
    notes = frame.get_column("no_edit", default=frame["budget_note"]).drop_nulls()
    if len(notes):
        common = str(notes.value_counts(sort=True)[0, 0])
        below = _BELOW.search(common)
        if below and len(notes) == frame.height:
            return (
                f"edited no case: {below.group(1)}={below.group(2)} tokens never reached "
                f"(largest prefix {largest:,} tokens)"
            )
        return f"edited no case: {common}"
    reasons = frame["commit_reason"].drop_nulls()
    common = str(reasons.value_counts(sort=True)[0, 0]) if len(reasons) else "no edit proposed"
    return f"edited no case ({common.replace('_', ' ')})"


# --- per-case work (runs in worker processes) -----------------------------------------------


@lru_cache(maxsize=4)
def cached_counter(tokenizer: str) -> Callable[[str], int]:
    """A memoised token counter: the same strings recur across the cases of a session (its
    memory is bounded in characters, not entries)."""
    return CountCache(get_tokenizer(tokenizer))


def prefix_context(
    case: dict[str, Any],
    messages: Sequence[Message],
    count: Callable[[str], int],
    index_cache: dict[int, ObjectIndex],
    memo: dict[Any, Any] | None = None,
) -> tuple[PrefixContext, list[Message]]:
    case_messages = materialise(case, messages)
    prefix = case_messages.prefix
    index = index_cache.get(case["cut"])
    if index is None:
        index = index_cache[case["cut"]] = build_index(prefix, count)
    ctx = PrefixContext(
        case["case_id"],
        case["session_id"],
        prefix,
        index,
        count,
        recorded_compaction=case_messages.compaction_at_cut,
        memo={} if memo is None else memo,
    )
    return ctx, list(case_messages.future)


@dataclass
class CaseFacts:
    """What a case's rows hold whatever the policy, worked out for its first policy only: the
    future's baseline cost, the editable tokens, and whether the prefix itself is a valid
    request (what an unchanged view is)."""

    baseline: Baseline
    editable: int
    prefix: tuple[Message, ...]
    _problems: list[str] | None = None

    @classmethod
    def of(cls, ctx: PrefixContext, future: Sequence[Message], tariff: Any) -> CaseFacts:
        return cls(baseline_cost(ctx.messages, future, tariff), editable_tokens(ctx), ctx.messages)

    def problems(self, view: Sequence[Message]) -> list[str]:
        if tuple(view) != self.prefix:
            return view_problems(view)
        if self._problems is None:
            self._problems = view_problems(view)
        return self._problems


def outcome_rows(
    outcome: Outcome,
    ctx: PrefixContext,
    case: dict[str, Any],
    future: Sequence[Message],
    tariff: Any,
    name: str,
    facts: CaseFacts | None = None,
) -> tuple[FiguresRow, list[dict[str, Any]], dict[str, Any]]:
    """A case's figures, decisions and views rows under one policy (``facts``: the case's
    ``CaseFacts`` when another policy worked them out already)."""
    facts = facts if facts is not None else CaseFacts.of(ctx, future, tariff)
    view = outcome.view
    rehearsal = outcome.rehearsal
    counts = {a: 0 for a in ("fold", "mask", "prune")}
    for action in view.actions.values():
        counts[action] = counts.get(action, 0) + 1
    reasons: dict[str, int] = {}
    for d in rehearsal.dropped:
        reasons[d.reason] = reasons.get(d.reason, 0) + 1
    first_edit = first_difference(ctx.messages, view.messages)
    plan = outcome.plan
    planner = plan.planner or PlannerReport()
    cost = case_cost(
        ctx.messages,
        view.messages,
        first_edit,
        future,
        tariff,
        float(planner.usd or 0.0),
        baseline=facts.baseline,
    )
    editable = facts.editable
    budget = plan.budget
    figures: FiguresRow = {
        "policy": outcome.policy,
        "policy_name": name,
        "case_id": case["case_id"],
        "session_id": case["session_id"],
        "cut": case["cut"],
        "prefix_messages": len(ctx.messages),
        "prefix_tokens": view.prefix_tokens,
        "view_messages": len(view.messages),
        "view_tokens": view.tokens,
        "pruning_rate": view.pruning_rate,
        "editable_tokens": editable,
        "editable_pruning": editable_pruning(view.prefix_tokens, view.tokens, editable),
        "budget_note": None if budget is None or budget.met else budget.reason,
        "no_edit": plan.no_edit,
        "n_objects": len(ctx.index.objects),
        "n_fold": counts["fold"],
        "n_mask": counts["mask"],
        "n_prune": counts["prune"],
        "n_planned": sum(1 for e in plan.edits if e.action != "keep"),
        "n_dropped": len(rehearsal.dropped),
        "dropped_reasons": json.dumps(reasons, sort_keys=True),
        "touched_latest_turn": rehearsal.touched_latest_turn,
        "batch_rejected": rehearsal.batch_rejected,
        "estimated_saving": rehearsal.estimated_saving,
        "committed": outcome.committed,
        "commit_reason": outcome.commit_reason,
        "planner_failure": outcome.planner_failure,
        "planner_prompt_tokens": planner.prompt_tokens,
        "planner_completion_tokens": planner.completion_tokens,
        "planner_usd": planner.usd,
        "planner_prompt_hash": planner.prompt_hash,
        "planner_params": json.dumps(planner.params_sent, sort_keys=True)
        if planner.params_sent
        else None,
        "planner_cache_hit": planner.cache_hit,
        "n_archives": len(view.archives),
        **cost.as_row(),
    }
    proposed: dict[str, Any] = {}
    for e in outcome.plan.edits:
        proposed.setdefault(e.object_id, e)
    dropped = {d.edit.object_id: d.reason for d in rehearsal.dropped}
    archive_of = {a.object_id: a.ref for a in view.archives}
    after = _tokens_after(outcome, ctx)
    decisions = []
    for obj in ctx.index.objects:
        edit = proposed.get(obj.id)
        action = view.actions.get(obj.id, "keep")
        decisions.append(
            {
                "policy": outcome.policy,
                "case_id": case["case_id"],
                "session_id": case["session_id"],
                "object_id": obj.id,
                "kind": obj.kind,
                "tool_name": obj.tool_name,
                "turn": obj.turn,
                "is_error": obj.is_error,
                "superseded": obj.superseded_by is not None,
                "proposed": edit.action if edit else None,
                "action": action,
                "dropped_reason": dropped.get(obj.id),
                "tokens_before": obj.tokens,
                "tokens_after": after.get(obj.id, obj.tokens),
                "note": edit.note if edit else None,
                "reason": edit.reason if edit else None,
                "ref": archive_of.get(obj.id),
            }
        )
    problems = facts.problems(view.messages)
    if problems:  # never write a row for a view no provider would accept
        raise InvalidViewError(outcome.policy, case["case_id"], problems)
    entries = []
    for m, o in zip(view.messages, view.origins, strict=True):
        entries.append(
            {
                "index": o.index,
                "seq": m.seq,
                "role": m.role,
                "edited": o.edited,
                "object_ids": list(o.object_ids),
                "parts": [part_to_row(p) for p in m.parts] if o.edited or o.index is None else None,
                "flags": list(m.flags) or None,
                "tokens": m.tokens,
            }
        )
    views = {
        "policy": outcome.policy,
        "case_id": case["case_id"],
        "session_id": case["session_id"],
        "cut": case["cut"],
        "entries": entries,
        "archives": [
            {
                "ref": a.ref,
                "object_id": a.object_id,
                "handle": a.handle,
                "pointer_visible": a.pointer_visible,
            }
            for a in view.archives
        ],
        "summary": outcome.plan.summary if outcome.committed else None,
    }
    return figures, decisions, views


def editable_pruning(prefix_tokens: int, view_tokens: int, editable: int) -> float:
    """Tokens the view removed as a share of the editable tokens (0 when there are none),
    bounded to [0, 1] like the plain pruning rate."""
    if editable <= 0:
        return 0.0
    return max(0.0, min(1.0, (prefix_tokens - view_tokens) / editable))


def first_difference(prefix: Sequence[Message], view: Sequence[Message]) -> int | None:
    """Index of the first prefix message the view changed: the prompt cache breaks there."""
    for i, m in enumerate(prefix):
        if i >= len(view) or view[i] != m:
            return i
    return None if len(view) == len(prefix) else len(prefix)


def _tokens_after(outcome: Outcome, ctx: PrefixContext) -> dict[str, int]:
    """Tokens each edited object holds in the view (pointer, mask, placeholder or nothing)."""
    out: dict[str, int] = {oid: 0 for oid in outcome.view.actions}
    count = ctx.count
    for m, o in zip(outcome.view.messages, outcome.view.origins, strict=True):
        if o.index is None:
            for oid in o.object_ids:
                out[oid] = out.get(oid, 0) + m.tokens
            continue
        if not o.edited:
            continue
        for p in m.parts:
            if p.type in ("tool_call", "tool_call_response"):
                for oid in o.object_ids:
                    obj = ctx.index[oid]
                    if obj.kind == "function" and obj.call_id == p.id and oid in out:
                        out[oid] += part_tokens(p, count)
    return out


def run_chunk(
    corpus_path: str,
    tokenizer: str,
    chunk: Chunk,
    policies: list[dict[str, Any]],
    out: str,
    tariff: dict[str, Any],
    made_from: dict[str, Any] | None = None,
) -> list[tuple[str, int, float, int, int, int]]:
    """Compute one chunk for the given policies and write its files, then each policy's
    done-marker (``made_from``: the corpus and cases fingerprints). Returns per-policy stats."""
    from ..tariffs import Tariff

    require_reachable(out)
    corpus = Corpus(corpus_path)
    count = cached_counter(tokenizer)
    built = [rebuild_policy(p) for p in policies]
    # a model planner logs its calls in the run (RUN/calls/)
    built = [
        type(b)(in_run(b.params, out)) if isinstance(b.params, EndpointParams) else b for b in built
    ]
    sidecar = SidecarStore(storage.join(out, "sidecar"))
    archives: dict[str, Archive] = {}  # by ref: each payload of the chunk once
    sessions = {sid: (ms, known) for sid, ms, known in corpus.counted_sessions(chunk.sessions)}
    by_session: dict[str, list[dict[str, Any]]] = {}
    for case in chunk.cases.iter_rows(named=True):
        by_session.setdefault(case["session_id"], []).append(case)
    rows: dict[str, dict[str, list[Mapping[str, Any]]]] = {
        p.label: {t: [] for t in TABLES} for p in built
    }
    stats = []
    t = Tariff(**tariff)
    timings = {p.label: 0.0 for p in built}
    for sid in chunk.sessions:
        found = sessions.pop(sid, None)
        if found is None:
            raise RunError(f"session {sid} named by the cases is not in the corpus")
        messages, known = found
        counter = PartCounter(count, known)  # the stored counts of the session's parts
        index_cache: dict[int, ObjectIndex] = {}
        memo: dict[Any, Any] = {}  # the planners' findings of the session's texts
        for case in by_session.get(sid, ()):
            ctx, future = prefix_context(case, messages, counter, index_cache, memo)
            facts = CaseFacts.of(ctx, future, t)
            for policy in built:
                started = time.perf_counter()
                outcome = replay_case(policy, ctx)
                timings[policy.label] += time.perf_counter() - started
                archives.update((a.ref, a) for a in outcome.view.archives)
                f, d, v = outcome_rows(outcome, ctx, case, future, t, policy.name, facts)
                rows[policy.label]["figures"].append(f)
                rows[policy.label]["decisions"].extend(d)
                rows[policy.label]["views"].append(v)
    sidecar.put_all(archives.values())  # before any part or marker that refers to them
    specs = {p["label"]: p for p in policies}
    for policy in built:
        policy.close()  # its model calls logged (RUN/calls/) before the marker vouches for them
        parts = {
            table: write_chunk_part(
                out, table, policy.label, chunk.index, rows[policy.label][table]
            )
            for table in TABLES
        }
        write_done(
            out,
            policy.label,
            chunk.index,
            {
                **attribution(chunk, policy.label, made_from or {}),
                "policy_spec": specs.get(policy.label),
            },
            parts,
        )
        figs = rows[policy.label]["figures"]
        stats.append(
            (
                policy.label,
                len(figs),
                timings[policy.label],
                sum(1 for f in figs if f["committed"]),
                sum(f["n_dropped"] for f in figs),
                sum(1 for f in figs if f["planner_failure"]),
            )
        )
    return stats


# --- the run ------------------------------------------------------------------------------


def run_replay(
    corpus_path: str | os.PathLike[str],
    cases_path: str | os.PathLike[str],
    policy_specs: Sequence[str | Policy],
    out: str | os.PathLike[str],
    *,
    workers: int = 2,
    tariff: str | None = None,
    tariffs_path: str | None = None,
    chunk_size: int = CHUNK_CASES,
    progress: bool = True,
    seed: int = 0,
    engine: str = "local",
    ray_address: str | None = None,
) -> ReplaySummary:
    """``engine``: ``local`` (worker processes) or ``ray`` (each (chunk, policies) a Ray task,
    at ``ray_address``, default a new local Ray): the same parts either way."""
    from .ray_engine import check_engine

    check_engine(engine, ray_address)
    started = time.perf_counter()
    corpus = Corpus(corpus_path)
    cases, cases_meta = read_cases(cases_path)
    cases_file = cases_file_of(cases_path)  # a local path or a URI (``storage``)
    policies = [make_policy(s) for s in policy_specs]
    labels = [p.label for p in policies]
    if len(set(labels)) != len(labels):
        raise RunError(f"the same policy is given twice: {labels}")
    if storage.is_file(out):
        raise RunError(
            f"{storage.redact(str(out))} is a file, not a run folder; give a folder for -o"
        )
    # a run on object storage: its tasks publish their parts there, wherever they run; this
    # process works on a mirror of what it reads, and publishes the manifest
    mirror = storage.Mirror(out)
    try:
        return _replay_into(
            mirror, corpus, cases, cases_meta, cases_file, policies, started,
            workers=workers, tariff=tariff, tariffs_path=tariffs_path, chunk_size=chunk_size,
            progress=progress, seed=seed, engine=engine, ray_address=ray_address,
        )  # fmt: skip
    finally:
        mirror.close()


def _replay_into(
    mirror: storage.Mirror,
    corpus: Corpus,
    cases: pl.DataFrame,
    cases_meta: dict[str, Any],
    cases_file: str,
    policies: list[Policy],
    started: float,
    *,
    workers: int,
    tariff: str | None,
    tariffs_path: str | None,
    chunk_size: int,
    progress: bool,
    seed: int,
    engine: str,
    ray_address: str | None,
) -> ReplaySummary:
    run = mirror.path
    labels = [p.label for p in policies]
    run.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(run)  # what killed writers left; never another live process's
    if mirror.remote:
        storage.remove_stale_temps(
            str(mirror.location), time.time() - (time.perf_counter() - started)
        )  # left before this run began
    tariff_obj = load_tariff(tariff, tariffs_path)
    chunks = make_chunks(cases, chunk_size)
    made_from = {
        "corpus_fingerprint": corpus.fingerprint(),
        "cases_fingerprint": storage.fingerprint(cases_file),
    }
    manifest = _manifest(
        run, corpus, cases_file, cases_meta, policies, tariff_obj, chunk_size, seed, chunks
    )
    mirror.push()  # the manifest, before any part: a reader finds what the parts belong to
    summary = ReplaySummary(run, cases.height, len(chunks))
    todo: list[tuple[Chunk, list[dict[str, Any]]]] = []
    for chunk in chunks:
        missing = [
            p.describe()
            for p in policies
            if not chunk_done(run, p.label, chunk.index, attribution(chunk, p.label, made_from))
        ]
        summary.skipped += len(policies) - len(missing)
        if missing:
            todo.append((chunk, missing))
    todo.sort(key=lambda item: -_work(*item))  # the longest first: no straggler at the end
    total = sum(c.cases.height * len(m) for c, m in todo)
    per_policy: dict[str, PolicySummary] = {label: PolicySummary(label) for label in labels}
    bar = tqdm(total=total, unit="case", desc="replay", disable=not progress)
    where = str(mirror.location) if mirror.remote else str(run)
    args = [
        (corpus.location, corpus.tokenizer_name, c, m, where, tariff_obj.__dict__, made_from)
        for c, m in todo
    ]

    def collect(stats: list[tuple[str, int, float, int, int, int]]) -> None:
        for label, n, secs, *_ in stats:
            per_policy[label].seconds += secs
            bar.update(n)
            summary.computed += 1

    for stats in run_chunks(run_chunk, args, engine=engine, workers=workers, address=ray_address):
        collect(stats)
    bar.close()
    mirror.pull(["figures"])  # what the summary reads of the parts the tasks published
    _finish_summary(run, per_policy)
    summary.policies = list(per_policy.values())
    summary.seconds = time.perf_counter() - started
    manifest["planner_calls"] = _planner_calls(run, labels)
    manifest["completed_at"] = created_at()
    _write_manifest(run, manifest)
    if mirror.remote:
        summary.run = str(mirror.location)
    return summary


def _work(chunk: Chunk, policies: Sequence[object]) -> float:
    """What replaying a chunk costs, for the order chunks are handed out in: its prefixes'
    tokens for each policy left (every policy reads each prefix whole). A chunk holds whole
    sessions, and one long session cut often outweighs many short ones: handed out last, it
    would be replayed alone while the other workers idle (longest processing time first)."""
    if "prefix_tokens" not in chunk.cases.columns:
        return float(chunk.cases.height * len(policies))
    return float(chunk.cases["prefix_tokens"].sum() or 0) * len(policies)


def _write_manifest(run: Path, manifest: dict[str, Any]) -> None:
    atomic_write_text(run / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def _replay_parts(run: Path) -> list[tuple[str, int, Path]]:
    """(policy folder, chunk index, path) of every replay part in ``run``."""
    found = []
    for table in TABLES:
        root = run / table
        if not root.is_dir():
            continue
        for path in sorted(root.glob("*/chunk-*.parquet")):
            try:
                index = int(path.stem.split("-", 1)[1])
            except ValueError:
                continue
            found.append((path.parent.name, index, path))
    return found


def _unattributed(
    run: Path, chunks: Sequence[Chunk], made_from: dict[str, Any]
) -> tuple[list[Path], dict[str, dict[str, Any]]]:
    """For a run without a (readable) manifest: the replay parts no done-marker attributes to
    these chunks of the same corpus and cases, and the policies (label → description) whose
    parts all are."""
    bad: list[Path] = []
    specs: dict[str, dict[str, Any]] = {}
    for folder, index, path in _replay_parts(run):
        marker = read_marker(run / DONE_DIR / folder / f"chunk-{index:05d}.json")
        ok = (
            marker is not None
            and index < len(chunks)
            and all(marker.get(k) == v for k, v in made_from.items())
            and marker.get("cases") == chunks[index].digest
            and isinstance(marker.get("policy"), str)
            and slug(marker["policy"]) == folder
        )
        if not ok:
            bad.append(path)
        elif marker is not None and isinstance(marker.get("policy_spec"), dict):
            specs[marker["policy"]] = {**marker["policy_spec"], "folder": folder}
    bad_folders = {p.parent.name for p in bad}
    return bad, {k: v for k, v in specs.items() if v["folder"] not in bad_folders}


def _planner_calls(run: Path, labels: Sequence[str]) -> dict[str, Any]:
    """Per model-driven policy: every prompt hash sent and each distinct parameter set."""
    out: dict[str, Any] = {}
    for label in labels:
        folder = run / "figures" / slug(label)
        if not folder.exists():
            continue
        frame = pl.read_parquet(
            folder / "*.parquet", columns=["case_id", "planner_prompt_hash", "planner_params"]
        )
        calls = frame.filter(pl.col("planner_prompt_hash").is_not_null()).sort("case_id")
        if calls.height:
            out[label] = {
                "prompt_hashes": dict(
                    zip(calls["case_id"], calls["planner_prompt_hash"], strict=True)
                ),
                "params_sent": sorted(
                    {
                        json.dumps(json.loads(p), sort_keys=True)
                        for p in calls["planner_params"].drop_nulls()
                    }
                ),
            }
    return out


def _finish_summary(run: Path, per_policy: dict[str, PolicySummary]) -> None:
    """Totals per policy from what is on disk (computed now or in an earlier run)."""
    for label, s in per_policy.items():
        folder = run / "figures" / slug(label)
        if not folder.exists():
            continue
        files = folder / "*.parquet"
        totals = (
            pl.scan_parquet(files)
            .select(
                pl.len().alias("cases"),
                pl.col("pruning_rate").mean().alias("pruning"),
                pl.col("committed").sum().alias("committed"),
                pl.col("n_dropped").sum().alias("dropped"),
                pl.col("planner_failure").is_not_null().sum().alias("failures"),
            )
            .collect()  # aggregated while scanning: no figures table is held
            .row(0, named=True)
        )
        s.cases = int(totals["cases"])
        s.pruning = float(totals["pruning"] or 0.0)
        s.committed = int(totals["committed"] or 0)
        s.dropped = int(totals["dropped"] or 0)
        s.failures = int(totals["failures"])
        # why it changed no case: read only then, only what the note looks at
        if not s.committed:
            scan = pl.scan_parquet(files)
            names = scan.collect_schema().names()
            s.note = idle_note(scan.select([c for c in IDLE_COLUMNS if c in names]).collect())


def _manifest(
    run: Path,
    corpus: Corpus,
    cases_file: str,
    cases_meta: dict[str, Any],
    policies: list[Policy],
    tariff: Any,
    chunk_size: int,
    seed: int,
    chunks: Sequence[Chunk] = (),
) -> dict[str, Any]:
    path = run / "manifest.json"
    fresh = {
        "kind": "ctxreplay-run",
        "ctxreplay_version": __version__,
        "created_at": created_at(),
        "corpus_path": corpus.location,
        "corpus_fingerprint": corpus.fingerprint(),
        "cases_path": cases_file,
        "cases_fingerprint": storage.fingerprint(cases_file),
        "cases": cases_meta,
        "tokenizer": corpus.manifest.get("tokenizer"),
        "tariff": tariff.__dict__,
        "chunk_size": chunk_size,
        "seed": seed,
        "policies": {p.label: {**p.describe(), "folder": slug(p.label)} for p in policies},
    }
    old: Any = None
    if path.exists():
        try:
            old = json.loads(path.read_text())
        except (OSError, ValueError):
            old = None
        if not (isinstance(old, dict) and isinstance(old.get("policies"), dict)):
            set_aside(path)  # damaged: kept as manifest.json.damaged, rebuilt below
            old = None
    if old is None:
        made_from = {k: fresh[k] for k in ("corpus_fingerprint", "cases_fingerprint")}
        bad, others = _unattributed(run, chunks, made_from)
        if bad:
            raise RunError(
                f"{run} has no readable manifest.json, and {len(bad)} replay part(s) in it "
                f"cannot be attributed to these corpus and cases (e.g. {bad[0]}): they may "
                "hold other cases; replay into a new folder, or delete its figures/, "
                "decisions/, views/ and done/ folders to start over"
            )
        fresh["policies"] = {**others, **fresh["policies"]}
        _write_manifest(run, fresh)
        return fresh
    for key in ("corpus_fingerprint", "cases_fingerprint", "chunk_size", "tariff"):
        if old.get(key) != fresh[key]:
            raise RunError(
                f"{run} was made from a different {key.replace('_', ' ')} "
                f"({old.get(key)} ≠ {fresh[key]}); use a new run folder"
            )
    old["policies"].update(fresh["policies"])
    old["ctxreplay_version"] = __version__
    _write_manifest(run, old)
    return dict(old)


# --- reading a run back -------------------------------------------------------------------
