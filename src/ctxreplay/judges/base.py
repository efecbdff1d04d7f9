"""The judge plugin contract: (case, view, plan, future) in, a verdict out.

A verdict is ``no_impact`` (every dependency of the future on the prefix is still available in
the view, verbatim or through a visible recovery route), ``impact`` (some dependency was lost;
each loss names its category, the exact anchor, the source object and the future message that
needs it) or ``unscored`` (the judge could not decide; the reason is kept and the case leaves the
denominator — it never counts as either).
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Literal, TypeVar

from ..datasets.messages import Message, Part
from ..datasets.store import bucket_of
from ..registry import Plugin, Registry
from ..replay.objects import ObjectIndex
from ..replay.view import Archive

Label = Literal["no_impact", "impact", "unscored"]
LABELS: tuple[str, ...] = ("no_impact", "impact", "unscored")


@dataclass(frozen=True, slots=True)
class Loss:
    """One dependency of the future that the view no longer supports."""

    category: str  # one of datasets.schema.CATEGORIES
    anchor: str  # the exact text the future needs
    source_object: str | None  # the context object that held it in the prefix
    need_seq: int | None  # the future message that needs it
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "category": self.category,
            "anchor": self.anchor,
            "source_object": self.source_object,
            "need_seq": self.need_seq,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class JudgeUsage:
    """What a verdict cost: the judge's model calls, their tokens and price."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    usd: float = 0.0
    calls: int = 0


@dataclass(frozen=True)
class Verdict:
    label: Label
    losses: tuple[Loss, ...] = ()
    reason: str | None = None  # why unscored, or the judge's short explanation
    dependencies: int = 0  # dependencies found (anchor judge)
    recoverable: int = 0  # of which only recoverable through a visible pointer
    usage: JudgeUsage = field(default_factory=JudgeUsage)
    cache_hit: bool = False
    prompt_hash: str | None = None
    raw: str | None = None  # the model's raw answer, for audit

    @staticmethod
    def unscored(reason: str, **kw: Any) -> Verdict:
        return Verdict("unscored", reason=reason, **kw)


def tally(found: str, losses: list[Loss], dependencies: int, recoverable: int) -> Verdict:
    """The verdict of a dependency audit: impact when anything is lost, with a one-line count
    (``"12 facts used, 1 recoverable, 2 lost (live_state 2)"``)."""
    cats = Counter(loss.category for loss in losses)
    reason = f"{dependencies} {found}, {recoverable} recoverable, {len(losses)} lost" + (
        " (" + ", ".join(f"{c} {n}" for c, n in sorted(cats.items())) + ")" if cats else ""
    )
    label: Label = "impact" if losses else "no_impact"
    return Verdict(label, tuple(losses), reason, dependencies=dependencies, recoverable=recoverable)


@dataclass(frozen=True)
class JudgeInput:
    """Everything a judge may look at for one (case, policy)."""

    case_id: str
    session_id: str
    policy: str
    prefix: tuple[Message, ...]  # the visible prefix the policy saw
    view: tuple[Message, ...]  # what the agent would have seen instead
    future: tuple[Message, ...]  # what really happened next, up to the horizon
    index: ObjectIndex  # the prefix's context objects
    actions: dict[str, str]  # object id → committed action (keep|fold|mask|prune)
    archives: tuple[Archive, ...] = ()
    committed: bool = True
    summary: str | None = None  # a planner's above-conversation summary, if committed
    cut: int | None = None  # the case's cut point (the seq of its first future message)
    #: the tool definitions the session's requests carried, as the trace stored them (the
    #: ``tools`` of the session metadata); None where the trace has none or the judge does
    #: not read them (``Judge.reads_session_tools``)
    tools: tuple[Mapping[str, Any], ...] | None = None
    #: the session's visible messages (one tuple shared by its inputs), where the engine gives
    #: them: what a judge may know of the session as a whole
    session: tuple[Message, ...] | None = None


def message_text(m: Message) -> str:
    return token_text(m.parts)


def token_text(parts: Sequence[Part]) -> str:
    """The strings a tokenizer counts (a call's name and arguments), joined by newlines."""
    return "\n".join(s for p in parts for s in p.token_texts())


def parts_text(parts: Sequence[Part]) -> str:
    """Parts as a reader of the conversation sees them — text, each tool call as ``CALL <name>
    <arguments>``, each result's content — the rendering dependency labels are written against."""
    out: list[str] = []
    for p in parts:
        if p.type == "tool_call":
            out.append(f"CALL {p.name} {p.arguments or ''}")
        elif p.type in ("text", "tool_call_response"):
            out.append(p.content or "")
    return "\n".join(out)


def rendered(m: Message) -> str:
    return parts_text(m.parts)


@dataclass(frozen=True)
class Availability:
    """Where a dependency can still be found: in the view, in an archive whose pointer the view
    shows (recoverable), or only in an archive with no visible route (lost to routing)."""

    view: str
    recoverable: str
    unrouted: str


def availability(
    item: JudgeInput,
    text_of: Callable[[Sequence[Part]], str] = token_text,
    view_text: str | None = None,
) -> Availability:
    """The view's text and the archived payloads, rendered by ``text_of``, split by whether the
    view shows their pointer. ``view_text``: the view's messages, each rendered by ``text_of``
    and joined by newlines, when the caller has them already."""
    from ..replay.sidecar import payload_messages

    if view_text is None:
        view_text = "\n".join(text_of(m.parts) for m in item.view)
    visible: list[Any] = []
    hidden: list[Any] = []
    for a in item.archives:
        body = "\n".join(text_of(parts) for _, _, parts in payload_messages(a.payload))
        routed = a.pointer_visible and a.ref[: len("sha256:") + 16] in view_text
        (visible if routed else hidden).append(body)
    return Availability(view_text, "\n".join(visible), "\n".join(hidden))


class Judge(Plugin, ABC):
    """Base class: subclasses set ``Params`` and implement ``judge``."""

    kind: ClassVar[str] = "judge"
    #: judges that call models are run concurrently by the engine
    concurrent: ClassVar[bool] = False
    #: whether the judge reads the token counts of the prefix's objects (``tokens`` and
    #: ``result_tokens`` of ``JudgeInput.index``): a judge that does not is given an index whose
    #: counts are 0, and the engine does not tokenise every prefix for it
    reads_token_counts: ClassVar[bool] = True
    #: whether the judge reads the session's tool definitions (``JudgeInput.tools``): the
    #: engine reads the sessions' metadata only for a judge that does
    reads_session_tools: ClassVar[bool] = False

    @abstractmethod
    def judge(self, item: JudgeInput) -> Verdict:
        """The one method a plugin must write."""

    def begin_session(self, items: Sequence[JudgeInput]) -> None:
        """Every input of one session, before the engine judges them: a judge whose cases
        share work may find what they need of each other once. It must judge an input alike
        without this call, and one its session was begun without."""
        return None

    def inputs_fingerprint(self) -> str | None:
        """What the judge reads besides the run and its parameters (a labels file), as a
        digest: verdicts made from other inputs under the same label are judged again, never
        reused. None: nothing outside the run."""
        return None

    def end_session(self) -> None:
        """The engine is done with the session ``begin_session`` began: what the judge kept of
        it may go."""
        return None

    def corpus_state(self, corpus: Any) -> Any:
        """Corpus-level knowledge a judge needs (computed once, in the main process)."""
        return None

    def use_state(self, state: Any) -> None:
        """Receive what ``corpus_state`` computed (in each worker process)."""
        return None

    def close(self) -> None:
        """Release clients and servers."""
        return None


K = TypeVar("K")
V = TypeVar("V")


class ByObject(Generic[K, V]):
    """Values worked out once per object (a message, a fact): the cases and views of a session
    share their message objects. Kept by identity, not equality (equal messages at two places
    are two messages); each object is held with its value, so no other takes its ``id``."""

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: dict[int, tuple[K, V]] = {}

    def get(self, obj: K, make: Callable[[K], V]) -> V:
        """The value of ``obj``, made by ``make(obj)`` the first time."""
        hit = self._items.get(id(obj))
        if hit is not None:
            return hit[1]
        value = make(obj)
        self._items[id(obj)] = (obj, value)
        return value


#: the judge used when none is named: the information-flow judge (``flow.py``)
DEFAULT_JUDGE = "flow"

#: the built-in judges, name → ``module:Class`` (each module registers its class with
#: ``@judge(name)``; a lookup imports the one module it names: ``ctxreplay judge flow`` does
#: not import the probe judge's statistics packages)
BUILTIN = {
    "anchor": "ctxreplay.judges.anchor_judge:AnchorJudge",
    "counterfactual": "ctxreplay.judges.counterfactual:CounterfactualJudge",
    "deps": "ctxreplay.judges.labels:DepsJudge",
    "flow": "ctxreplay.judges.flow.judge:FlowJudge",
    "llm": "ctxreplay.judges.llm:LLMJudge",
    "probe": "ctxreplay.judges.probe:ProbeJudge",
    "truth": "ctxreplay.judges.truth:TruthJudge",
}
#: each built-in judge's module, relative to this package (read by the registry's tests)
BUILTIN_MODULES = {
    name: target.partition(":")[0].removeprefix("ctxreplay.judges.")
    for name, target in BUILTIN.items()
}

judges: Registry[type[Judge]] = Registry("judge", "ctxreplay.judges", BUILTIN)


def judge(name: str) -> Callable[[type[Judge]], type[Judge]]:
    return judges.register(name)


def make_judge(spec: str | Judge, **overrides: str) -> Judge:
    """A judge from ``name:key=value,...`` (``overrides``, e.g. CLI options, win)."""
    return spec if isinstance(spec, Judge) else judges.create(spec, **overrides)


#: counts of one block of sessions: (per key, in how many of them it occurs), and how many
BlockCounts = tuple[Mapping[str, int], int]
#: sessions read together by a corpus pass: a block of contiguous ids reads few row groups
PASS_BLOCK = 64


def _block_table(
    corpus_path: str, count: Callable[[Iterable[Sequence[Message]]], BlockCounts], ids: list[str]
) -> tuple[Any, int]:
    """Count one block of sessions: the counts as an Arrow table (key, c), and how many
    sessions it held."""
    import pyarrow as pa

    from ..datasets.store import Corpus

    counts, n = count(m for _, m in Corpus(corpus_path).iter_sessions(ids))
    table = pa.table(
        {
            "key": pa.array(list(counts), pa.string()),
            "c": pa.array(list(counts.values()), pa.int64()),
        }
    )
    return table, n


def _block_counts(
    corpus_path: str,
    count: Callable[[Iterable[Sequence[Message]]], BlockCounts],
    ids: list[str],
    out: str,
) -> int:
    """Count one block of sessions and write the counts to ``out`` (Parquet: key, c); how many
    sessions it held."""
    import pyarrow.parquet as pq

    table, n = _block_table(corpus_path, count, ids)
    pq.write_table(table, out)
    return n


#: how a corpus pass's blocks run: ``runner(fn, calls)`` gives ``(i, fn(*calls[i]))`` for each
#: call as it finishes (``None``: worker processes on this machine); set by :func:`corpus_pass`
PassRunner = Callable[[Callable[..., Any], Sequence[tuple[Any, ...]]], Iterator[Any]]
_PASS_RUNNER: ContextVar[PassRunner | None] = ContextVar("ctxreplay_pass_runner", default=None)


@contextmanager
def corpus_pass(runner: PassRunner | None) -> Iterator[None]:
    """Within the block, corpus passes (:func:`corpus_frequencies`) run their blocks through
    ``runner`` (the Ray engine: as tasks across the cluster, each reading the corpus from where
    it is); judges' ``corpus_state`` needs no parameter for it."""
    token = _PASS_RUNNER.set(runner)
    try:
        yield
    finally:
        _PASS_RUNNER.reset(token)


def _blocks(corpus: Any, block: int) -> list[list[str]]:
    """The corpus's session ids in (bucket, id) order, as storage holds them, in blocks."""
    ids = corpus.table("sessions", ["session_id"])["session_id"].to_pylist()
    ids.sort(key=lambda s: (bucket_of(s, corpus.buckets), s))
    return [ids[i : i + block] for i in range(0, len(ids), block)]


#: what the aggregation of a corpus pass may hold in memory before DuckDB spills to disk
PASS_MEMORY = "256MB"
#: block counts from this size on (Parquet bytes) are summed by DuckDB in a new process of their
#: own; below it, by Arrow in this one (a few MB, less than starting a process)
APART_BYTES = 1 << 20


def corpus_frequencies(
    corpus: Any,
    count: Callable[[Iterable[Sequence[Message]]], BlockCounts],
    at_least: Callable[[int], int] = lambda n: 1,
    block: int = PASS_BLOCK,
) -> tuple[dict[str, int], int]:
    """Document frequencies over a whole corpus, of the keys that occur in ``at_least(n)``
    sessions or more (n: the sessions of the corpus), and n.

    ``count`` (a module-level function: it runs in worker processes) counts a block of
    ``block`` sessions of contiguous ids; each block's counts go to a Parquet file, and once
    they pass ``APART_BYTES`` DuckDB sums them in a process of its own, spilling to disk past
    ``PASS_MEMORY``: no process that goes on to judge holds the corpus or every key of it (most
    keys of a corpus occur in one or two sessions), whatever its size.
    """
    import tempfile
    from concurrent.futures import ProcessPoolExecutor

    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from .count_sum import sum_counts_apart

    blocks = _blocks(corpus, block)
    workers = min(4, os.cpu_count() or 1, len(blocks))
    runner = _PASS_RUNNER.get()
    with tempfile.TemporaryDirectory(prefix="ctxreplay-pass-") as tmp:
        outs = [f"{tmp}/block-{i:06d}.parquet" for i in range(len(blocks))]
        if runner is not None:  # tasks elsewhere: each block's counts come back to be written
            n = 0
            calls = [(corpus.location, count, ids) for ids in blocks]
            for i, (table, k) in runner(_block_table, calls):
                pq.write_table(table, outs[i])
                n += k
        else:
            args = ([str(corpus.path)] * len(blocks), [count] * len(blocks), blocks, outs)
            if workers > 1:
                with ProcessPoolExecutor(max_workers=workers) as pool:
                    n = sum(pool.map(_block_counts, *args))
            else:
                n = sum(map(_block_counts, *args))
        if not blocks:
            return {}, 0
        least = max(1, at_least(n))
        if sum(os.path.getsize(o) for o in outs) < APART_BYTES:  # a few MB at most in memory
            summed = pq.read_table(outs).group_by("key").aggregate([("c", "sum")])
            summed = summed.filter(pc.field("c_sum") >= least).rename_columns(["key", "c"])
        else:  # DuckDB, spilling, in a process of its own (``count_sum``)
            sum_counts_apart(f"{tmp}/block-*.parquet", least, tmp, PASS_MEMORY, f"{tmp}/sum")
            summed = pq.read_table(f"{tmp}/sum")
        rows = zip(summed["key"].to_pylist(), summed["c"].to_pylist(), strict=True)
    return dict(rows), n
