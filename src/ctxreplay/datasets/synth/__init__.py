"""Synthetic agent sessions with planted dependencies: the built-in demo corpus and ground truth.

Five workloads (``coding``, ``sql``, ``docs``, ``browser``, ``data-entry``) each script a long,
tool-heavy session and plant dependencies of all six failure categories. A ground-truth row says:
the exact ``anchor`` string first appears in message ``source_seq`` (a user's words or a tool
result), occurs in no other message before ``need_seq``, and message ``need_seq`` (assistant text
or tool-call arguments) uses it verbatim. So for every cut ``c`` with ``source_seq < c <=
need_seq`` the source message is the only place in the prefix that holds what the future needs.

Every session also holds a standing rule the user adds mid-session (in the 2nd to 4th user turn,
at least one user turn before the assistant message that honours it), so a policy that keeps the
first and the latest user turn can still lose a ``behavioural_contract``.

Everything is a pure function of ``seed``: session ``i`` draws from
``random.Random(f"{seed}:{i}")`` (and, if that draw fails the invariant check, from
``f"{seed}:{i}:{attempt}"``), so the same seed writes byte-identical Parquet files.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import CtxreplayError
from ...schema import CATEGORIES
from ..messages import Session
from ..validate import validate_session
from . import browser, coding, data_entry, docs, sql
from .builder import Dep, SessionBuilder, check_dependencies

GENERATOR_VERSION = 2
#: name → script; each script drives a builder and returns a short task description.
WORKLOADS: dict[str, Callable[[SessionBuilder], str]] = {
    coding.NAME: coding.build,
    sql.NAME: sql.build,
    docs.NAME: docs.build,
    browser.NAME: browser.build,
    data_entry.NAME: data_entry.build,
}
MAX_ATTEMPTS = 40

__all__ = [
    "GENERATOR_VERSION",
    "WORKLOADS",
    "SynthError",
    "SynthSession",
    "SynthSummary",
    "build_session",
    "generate",
    "iter_sessions",
    "workload_for",
]


class SynthError(CtxreplayError):
    pass


@dataclass(frozen=True)
class SynthSession:
    session: Session
    ground_truth: list[dict[str, Any]]
    attempts: int


def _workloads(workloads: Sequence[str] | None) -> list[str]:
    names = [w.replace("_", "-") for w in workloads] if workloads else list(WORKLOADS)
    unknown = [w for w in names if w not in WORKLOADS]
    if unknown:
        raise SynthError(f"unknown workload(s) {unknown}; available: {', '.join(WORKLOADS)}")
    return list(dict.fromkeys(names))


def workload_for(index: int, seed: int, workloads: Sequence[str] | None = None) -> str:
    """Balanced, seeded mix: each block of ``k`` sessions holds every workload once."""
    names = _workloads(workloads)
    block = random.Random(f"{seed}:mix:{index // len(names)}").sample(names, len(names))
    return block[index % len(names)]


def build_session(index: int, seed: int = 0, workload: str | None = None) -> SynthSession:
    """Session ``index`` of the corpus for ``seed``: validated, with its ground-truth rows."""
    workload = _workloads([workload])[0] if workload else workload_for(index, seed)
    script = WORKLOADS[workload]
    session_id = f"synth-{workload}-{index:05d}"
    problems: list[str] = []
    for attempt in range(MAX_ATTEMPTS):
        rng = random.Random(f"{seed}:{index}" if attempt == 0 else f"{seed}:{index}:{attempt}")
        b = SessionBuilder(rng, workload)
        task = script(b)
        problems = check_dependencies(b.messages, b.deps)
        problems += _coverage(b.deps)
        if problems:
            continue
        metadata = {
            "workload": workload,
            "task": task,
            "generator": "ctxreplay.datasets.synth",
            "generator_version": GENERATOR_VERSION,
            "seed": seed,
            "index": index,
            "attempt": attempt,
        }
        session = validate_session(b.session(session_id, index, metadata))
        return SynthSession(session, b.rows(session_id), attempt + 1)
    raise SynthError(
        f"{session_id}: no valid draw in {MAX_ATTEMPTS} attempts; last problems: {problems[:5]}"
    )


def _coverage(deps: Sequence[Dep]) -> list[str]:
    have = {d.category for d in deps}
    return [f"no {c} dependency planted" for c in CATEGORIES if c not in have]


def iter_sessions(
    sessions: int = 200, seed: int = 0, workloads: Sequence[str] | None = None
) -> Iterator[SynthSession]:
    names = _workloads(workloads)
    for i in range(sessions):
        yield build_session(i, seed, workload_for(i, seed, names))


# --- writing a corpus -------------------------------------------------------------------------


@dataclass
class SynthSummary:
    path: Path
    sessions: int = 0
    messages: int = 0
    tokens: int = 0
    tool_output_tokens: int = 0
    dependencies: dict[str, int] = field(default_factory=dict)
    workloads: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    seed: int = 0

    def render(self) -> str:
        share = self.tool_output_tokens / self.tokens if self.tokens else 0.0
        lines = [
            f"synthetic corpus → {self.path}",
            f"  seed {self.seed}: {self.sessions:,} sessions, {self.messages:,} messages, "
            f"{self.tokens:,} tokens ({share:.0%} tool output) in {self.seconds:.1f}s",
            "  workloads: " + ", ".join(f"{k} {v}" for k, v in self.workloads.items()),
            f"  planted dependencies: {sum(self.dependencies.values()):,}",
        ]
        lines += [f"    {c:<22}{self.dependencies.get(c, 0):>7,}" for c in CATEGORIES]
        return "\n".join(lines)


def generate(
    out: str | Path,
    *,
    sessions: int = 200,
    seed: int = 0,
    workloads: Sequence[str] | None = None,
    overwrite: bool = False,
    progress: bool = True,
    tokenizer: Any = "o200k_base",
    chunk_bytes: int | None = None,
) -> SynthSummary:
    """Write ``sessions`` synthetic sessions and their ground truth as a corpus at ``out``.
    ``chunk_bytes``: the writer's buffer (``CorpusWriter``; None: its default)."""
    from tqdm import tqdm

    from ..store import DEFAULT_CHUNK_BYTES, CorpusWriter
    from ..tokenizer import Tokenizer, get_tokenizer

    started = time.perf_counter()
    names = _workloads(workloads)
    tok = tokenizer if isinstance(tokenizer, Tokenizer) else get_tokenizer(tokenizer)
    writer = CorpusWriter(
        out, tok, overwrite=overwrite, chunk_bytes=chunk_bytes or DEFAULT_CHUNK_BYTES
    )
    summary = SynthSummary(Path(out), seed=seed)
    by_category: Counter[str] = Counter()
    by_workload: Counter[str] = Counter()
    for s in tqdm(
        iter_sessions(sessions, seed, names),
        total=sessions,
        desc="synth",
        unit="session",
        disable=not progress,
    ):
        writer.add(s.session)
        tool_tokens = sum(
            n
            for m, n in zip(
                s.session.messages, writer.count_tokens(s.session.messages), strict=True
            )
            if m.responses
        )
        writer.add_ground_truth(s.ground_truth)
        summary.tool_output_tokens += tool_tokens
        summary.messages += len(s.session.messages)
        by_workload[s.session.workload or ""] += 1
        by_category.update(r["category"] for r in s.ground_truth)
    writer.close(
        sources=[{"path": "synthetic", "format": "synthetic", "seed": seed, "sessions": sessions}],
        synthetic={
            "seed": seed,
            "sessions": sessions,
            "workloads": names,
            "generator_version": GENERATOR_VERSION,
        },
    )
    summary.sessions = writer.counts.sessions
    summary.tokens = writer.counts.tokens
    summary.dependencies = {c: by_category.get(c, 0) for c in CATEGORIES}
    summary.workloads = {w: by_workload.get(w, 0) for w in names}
    summary.seconds = time.perf_counter() - started
    return summary
