"""Cases: (session, cut point, trigger). The prefix is what a policy may edit; the future is what
really happened next.

A cut ``c`` is a *request point*: message ``c`` is a visible assistant message (the agent is about
to be called), and every tool call made before ``c`` already has its result. The prefix is the
visible messages with ``seq < c`` that the agent still had: after a recorded compaction (a message
flagged ``compaction_summary``) the agent's context began again at the summary, so the prefix
starts at the latest summary before ``c`` (``prefix_of``). The future runs from ``c`` to the horizon.

Triggers: ``tokens:N`` (the first request point whose context holds at least N tokens),
``fraction:F`` with a context window W (``tokens:F·W``), ``user-turns`` (the request point after
each user turn but the first), ``every:K`` (every K-th request point), ``compactions`` (right
before each recorded compaction: the cut is the summary message, the prefix the context it
replaced, the future starts after it), or explicit cuts: a CSV
(``session,cut``) or the ``cases.jsonl`` of a dependency-labels set (``session_id``, ``cut``,
``future_seqs``; see ``../shared/gold-dev/README.md``). A labelled cut carries its own future end
(the horizon the labels cover), and a labels set may span several corpora: its rows for sessions
this corpus lacks are skipped and counted, not an error.

Horizons: ``all``, ``turns:K`` (K agent requests) or ``messages:K`` (K visible messages).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .. import storage
from ..errors import CtxreplayError
from ..schema import CASES, rows_table
from .messages import Message
from .store import REMAKE, Corpus, DamagedCorpusError, frame_of, sorted_by_session
from .validate import FLAG_COMPACTION_SUMMARY


class CaseError(CtxreplayError, ValueError):
    pass


@dataclass(frozen=True)
class Trigger:
    kind: str  # tokens | user-turns | every | compactions | cut
    value: int = 0

    @property
    def label(self) -> str:
        if self.kind in ("user-turns", "compactions", "cut"):
            return self.kind
        return f"{self.kind}:{self.value}"


def is_compaction(m: Message) -> bool:
    """A recorded compaction: the summary that replaced the agent's context before it."""
    return FLAG_COMPACTION_SUMMARY in m.flags


def prefix_of(visible: Sequence[Message], cut: int) -> tuple[Message, ...]:
    """The context the agent had at request point ``cut``: the visible messages before it, from
    the latest recorded compaction summary on (what came before it had been replaced)."""
    before = [m for m in visible if m.seq < cut]
    start = max((i for i, m in enumerate(before) if is_compaction(m)), default=0)
    return tuple(before[start:])


def future_of(visible: Sequence[Message], case: Mapping[str, Any]) -> tuple[Message, ...]:
    """The visible messages of a case's future (``future_start`` to ``future_end``)."""
    return tuple(m for m in visible if case["future_start"] <= m.seq < case["future_end"])


@dataclass(frozen=True, slots=True)
class Materialised:
    """A case's messages: the context the agent had at its cut, the future that really came,
    and the summary of a compaction recorded at the cut (what ``recorded`` replays)."""

    prefix: tuple[Message, ...]
    future: tuple[Message, ...]
    compaction_at_cut: str | None


def materialise(case: Mapping[str, Any], messages: Sequence[Message]) -> Materialised:
    """The one way every reader (replay, judge, run views, ``show``) turns a case row and its
    session's messages into the prefix and future. ``case`` holds ``cut``, and the future's
    ``future_start``/``future_end`` when it has one (a views row does not: no future)."""
    visible = [m for m in messages if m.visible]
    cut = case["cut"]
    future = future_of(visible, case) if case.get("future_end") is not None else ()
    at_cut = next((m for m in visible if m.seq == cut), None)
    recorded = at_cut.text if at_cut is not None and is_compaction(at_cut) else None
    return Materialised(prefix_of(visible, cut), future, recorded)


def parse_trigger(spec: str, window: int | None = None) -> Trigger:
    """``tokens:N`` · ``fraction:F`` (needs ``window``) · ``user-turns`` · ``every:K``."""
    kind, _, value = spec.partition(":")
    try:
        if kind == "tokens":
            n = int(value.replace("_", ""))
            if n < 1:
                raise CaseError(f"tokens:N needs N >= 1 (a prefix size in tokens); got {spec!r}")
            return Trigger("tokens", n)
        if kind == "fraction":
            if not window:
                raise CaseError(
                    "--trigger fraction:F needs --window (the context window in tokens)"
                )
            f = float(value)
            if not 0 < f <= 1:
                raise CaseError(f"fraction:F needs 0 < F <= 1 (a share of --window); got {spec!r}")
            return Trigger("tokens", max(1, int(f * window)))
        if kind in ("user-turns", "user-turn"):
            return Trigger("user-turns")
        if kind in ("compactions", "compaction"):
            return Trigger("compactions")
        if kind == "every":
            k = int(value)
            if k < 1:
                raise CaseError("every:K needs K >= 1")
            return Trigger("every", k)
    except ValueError as e:
        if isinstance(e, CaseError):
            raise
        raise CaseError(f"bad trigger {spec!r}: {e}") from None
    raise CaseError(
        f"unknown trigger {spec!r}; use tokens:N, fraction:F, user-turns, every:K or compactions"
    )


@dataclass(frozen=True)
class Horizon:
    """How far a case's future runs: K agent requests (``turns``) or K visible messages."""

    kind: Literal["turns", "messages"]
    value: int

    @property
    def label(self) -> str:
        return f"{self.kind}:{self.value}"


def parse_horizon(spec: str) -> Horizon | None:
    """``all`` → None; ``turns:K`` → K agent requests; ``messages:K`` → K visible messages."""
    if spec == "all":
        return None
    kind, _, value = spec.partition(":")
    if kind not in ("turns", "messages") or not value.isdigit() or int(value) < 1:
        raise CaseError(f"bad horizon {spec!r}; use all, turns:K or messages:K")
    return Horizon("turns" if kind == "turns" else "messages", int(value))


@dataclass(frozen=True)
class Cut:
    """One explicit cut: the seq of the request point and, optionally, where its future ends.

    ``future_end`` (exclusive seq) overrides the horizon for this cut: a labels set fixes the
    future its labels cover. ``optional`` cuts name sessions that may be absent from the corpus
    (a labels set spanning several corpora); they are skipped, not an error.
    """

    cut: int
    future_end: int | None = None
    optional: bool = False


@dataclass(slots=True)
class SessionShape:
    """What cutting needs to know about a session's visible messages, nothing more."""

    session_id: str
    seq: list[int]
    role: list[str]
    tokens: list[int]
    user_turn: list[bool]
    tool_output: list[bool]
    request_point: list[bool]  # message i is a valid cut
    #: message i is a recorded compaction summary (the context starts again there)
    compaction: list[bool]
    #: every tool call before message i has its result
    settled: list[bool]
    #: message i would be a request point, but its recorded context is no valid request: a
    #: message came between a call and its result (no provider accepts that order)
    unsendable: list[bool]

    def start(self, index: int) -> int:
        """Where the context of a cut at ``index`` begins: the latest compaction before it."""
        return max((j for j in range(index) if self.compaction[j]), default=0)


#: what cutting reads of the messages table: no text, only part types and ids (nested columns)
SHAPE_COLUMNS = [
    "session_id", "seq", "role", "tokens", "visible", "tool_call_ids", "flags",
    "parts.list.element.type", "parts.list.element.id",
]  # fmt: skip


def session_shapes(corpus: Corpus) -> Iterator[SessionShape]:
    """The shape of every session, one message file at a time: memory is bounded by the largest
    file's metadata columns, never by the corpus or its text (a session is written whole into
    one file)."""
    seen: set[str] = set()
    for path in sorted((corpus.path / "messages").rglob("*.parquet")):
        try:
            for table in _shape_tables(pq.ParquetFile(path)):
                for (sid,), group in _shape_frame(table).group_by(
                    "session_id", maintain_order=True
                ):
                    if sid in seen:
                        raise DamagedCorpusError(
                            f"session {sid} has messages in more than one file of {corpus.path}; "
                            f"{REMAKE}"
                        )
                    seen.add(str(sid))
                    yield _shape(str(sid), group)
        except (OSError, pa.ArrowException) as e:
            raise DamagedCorpusError(f"{path} is damaged ({e}); {REMAKE}") from None


#: rows of shape columns read at a time, and cases held as Python rows before they become Arrow
SHAPE_ROWS = 4096
CASE_ROWS = 1024


def _shape_tables(file: pq.ParquetFile) -> Iterator[pa.Table]:
    """A message part's shape columns in pieces of whole sessions, a few thousand rows at a
    time from a part sorted by session (the rows of the last session of a piece wait for the
    next), or the whole file from an older unsorted part."""
    if not sorted_by_session(file):
        yield file.read(columns=SHAPE_COLUMNS)
        return
    carry: pa.Table | None = None
    for batch in file.iter_batches(batch_size=SHAPE_ROWS, columns=SHAPE_COLUMNS):
        table = pa.Table.from_batches([batch])
        if carry is not None:
            table = pa.concat_tables([carry, table])
        ids = table["session_id"]
        last = pc.index(ids, ids[-1]).as_py()  # the last session's rows are together at the end
        if last:
            yield table.slice(0, last)
        carry = table.slice(last)
    if carry is not None and carry.num_rows:
        yield carry


def _shape_frame(table: pa.Table) -> pl.DataFrame:
    """Visible messages in (session, seq) order, with what cutting needs of their parts."""
    frame = frame_of(table).filter(pl.col("visible")).sort(["session_id", "seq"])
    types = pl.col("parts").list.eval(pl.element().struct.field("type"))
    return frame.with_columns(
        user_turn=(pl.col("role") == "user")
        & types.list.eval(pl.element().is_in(["text", "blob", "uri", "file"])).list.any(),
        response_ids=pl.col("parts").list.eval(
            pl.element()
            .filter(pl.element().struct.field("type") == "tool_call_response")
            .struct.field("id")
        ),
        compaction=pl.col("flags").fill_null([]).list.contains(FLAG_COMPACTION_SUMMARY),
    ).drop("parts", "flags")


def _shape(sid: str, group: pl.DataFrame) -> SessionShape:
    roles = group["role"].to_list()
    calls = group["tool_call_ids"].to_list()
    responses = group["response_ids"].to_list()
    user_turn = group["user_turn"].to_list()
    compaction = group["compaction"].to_list()
    pending: set[str] = set()
    seen_user = False
    split = False  # a message came between a call and its result, in the context so far
    request_point: list[bool] = []
    settled: list[bool] = []
    unsendable: list[bool] = []
    for role, made, answered, is_turn, summary in zip(
        roles, calls, responses, user_turn, compaction, strict=True
    ):
        point = role == "assistant" and not pending and seen_user
        request_point.append(point and not split)
        unsendable.append(point and split)
        settled.append(not pending)
        seen_user = seen_user or is_turn
        if summary:
            split = False  # the context starts again at a compaction summary (``prefix_of``)
        elif pending and not answered:
            split = True
        pending.update(made or ())
        pending.difference_update(answered or ())
    return SessionShape(
        session_id=sid,
        seq=group["seq"].to_list(),
        role=roles,
        tokens=group["tokens"].to_list(),
        user_turn=user_turn,
        tool_output=[bool(r) for r in responses],
        request_point=request_point,
        compaction=compaction,
        settled=settled,
        unsendable=unsendable,
    )


def cut_points(shape: SessionShape, trigger: Trigger) -> list[tuple[int, str]]:
    """(index into the visible messages, trigger label) for one trigger."""
    points = [i for i, ok in enumerate(shape.request_point) if ok]
    if trigger.kind == "tokens":
        total = 0
        running = []  # tokens of the context before message i (a compaction starts it again)
        for i, t in enumerate(shape.tokens):
            if shape.compaction[i]:
                total = 0
            running.append(total)
            total += t
        for i in points:
            if running[i] >= trigger.value:
                return [(i, trigger.label)]
        return []
    if trigger.kind == "compactions":
        return [
            (i, trigger.label)
            for i, is_summary in enumerate(shape.compaction)
            if is_summary
            and i + 1 < len(shape.seq)
            and shape.settled[i]
            and any(shape.user_turn[shape.start(i) : i])
        ]
    if trigger.kind == "every":
        return [(i, trigger.label) for n, i in enumerate(points, start=1) if n % trigger.value == 0]
    if trigger.kind == "user-turns":
        out = []
        turn = 0
        want_after = -1
        for i, is_turn in enumerate(shape.user_turn):
            if is_turn:
                turn += 1
                want_after = i if turn > 1 else -1
            elif want_after >= 0 and shape.request_point[i] and i > want_after:
                out.append((i, f"user-turn:{turn}"))
                want_after = -1
        return out
    raise CaseError(f"trigger {trigger.kind} does not cut by itself")


def why_no_cut(shape: SessionShape, trigger: Trigger) -> str:
    """Why ``trigger`` cut nothing in this session (which it did not): one reason of a few,
    so that a summary can count sessions by it."""
    points = sum(shape.request_point)
    if not points:
        if any(shape.unsendable):
            return "every request point's recorded context splits a tool call from its result"
        if not any(shape.user_turn):
            return "no user turn: a case needs a user message before the request point"
        return "no request point: no assistant message after a user turn with every call answered"
    if trigger.kind == "user-turns":
        if sum(shape.user_turn) <= 1:
            return "one user turn (user-turns cuts after the second and later ones)"
        return "no request point after its later user turns"
    if trigger.kind == "tokens":
        return f"its context never reaches {trigger.value:,} tokens at a request point"
    if trigger.kind == "every":
        return f"fewer than {trigger.value} request points (every:{trigger.value})"
    if trigger.kind == "compactions":
        return "no recorded compaction after a user turn"
    return f"no request point matches {trigger.label}"


def case_row(
    shape: SessionShape,
    index: int,
    trigger: str,
    horizon: Horizon | None,
    source_id: str | None,
    future_end: int | None = None,
) -> dict[str, Any]:
    """One case. The future runs from the cut to the horizon (``turns:K`` counts agent
    requests, ``messages:K`` visible messages), or, when ``future_end`` (an exclusive seq) is
    given, exactly up to it. A cut at a compaction summary (``compactions``) keeps the summary
    out of both sides: the prefix is the context it replaced, the future starts after it."""
    start = shape.start(index)
    prefix_tokens = sum(shape.tokens[start:index])
    tool_tokens = sum(
        t
        for t, out in zip(shape.tokens[start:index], shape.tool_output[start:index], strict=True)
        if out
    )
    # at a compaction summary the summary is the recorded edit, not something the future did
    first = index + 1 if shape.compaction[index] else index
    n = len(shape.seq)
    end = n
    if future_end is not None:
        end = next((j for j in range(first, n) if shape.seq[j] >= future_end), end)
    elif horizon is not None and horizon.kind == "messages":
        end = min(first + horizon.value, n)
    elif horizon is not None:
        requests = 0
        for j in range(first, n):
            if shape.role[j] == "assistant":
                if requests == horizon.value:
                    end = j
                    break
                requests += 1
    requests = sum(1 for j in range(first, end) if shape.role[j] == "assistant")
    cut = shape.seq[index]
    if future_end is None:
        future_end = shape.seq[end] if end < n else shape.seq[-1] + 1
    return {
        "case_id": f"{shape.session_id}@{cut}",
        "session_id": shape.session_id,
        "source_session_id": source_id,
        "cut": cut,
        "trigger": trigger,
        "prefix_messages": index - start,
        "prefix_tokens": prefix_tokens,
        "prefix_tool_tokens": tool_tokens,
        "tool_share": tool_tokens / prefix_tokens if prefix_tokens else 0.0,
        "user_turns": sum(shape.user_turn[start:index]),
        "future_start": shape.seq[first],
        "future_end": future_end,
        "future_messages": end - first,
        "future_requests": requests,
        "future_tokens": sum(shape.tokens[first:end]),
    }


def is_labels_file(path: Path) -> bool:
    """A labels ``cases.jsonl`` (JSON lines) rather than a CSV: by suffix, else by content."""
    if path.suffix.lower() in (".jsonl", ".json", ".ndjson"):
        return True
    if path.suffix.lower() in (".csv", ".tsv"):
        return False
    with open(path, "rb") as f:
        head = f.read(4096).lstrip()
    return head.startswith(b"{")


def read_cuts(path: Path) -> dict[str, list[Cut]]:
    """Explicit cut points: a CSV with columns ``session`` (id or source id) and ``cut``, or the
    ``cases.jsonl`` of a labels set (``session_id``, ``cut``, ``future_seqs``), whose cuts end
    their future at ``max(future_seqs) + 1`` and may name sessions of other corpora."""
    path = Path(path)
    if is_labels_file(path):
        return read_label_cuts(path)
    frame = pl.read_csv(path, infer_schema_length=0)
    missing = {"session", "cut"} - set(frame.columns)
    if missing:
        raise CaseError(
            f"{path}: needs columns session and cut (missing {', '.join(sorted(missing))})"
        )
    cuts: dict[str, list[Cut]] = {}
    for i, row in enumerate(frame.iter_rows(named=True), start=2):
        try:
            cuts.setdefault(row["session"], []).append(Cut(int(row["cut"])))
        except (TypeError, ValueError):
            raise CaseError(
                f"{path}, line {i}: cut {row['cut']!r} is not a message index"
            ) from None
    return cuts


def json_objects(
    path: Path, error: type[ValueError] = ValueError
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of a JSON-lines file, blank lines skipped; a line that is not a
    JSON object raises ``error`` naming the file and the line."""
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as e:
                raise error(f"{path}, line {n}: not JSON ({e})") from None
            if not isinstance(row, dict):
                raise error(f"{path}, line {n}: expected a JSON object")
            yield n, row


def read_label_cuts(path: Path) -> dict[str, list[Cut]]:
    """The cuts of a labels ``cases.jsonl``: one JSON object a line with ``session_id`` and
    ``cut``; ``future_seqs`` (the labelled horizon) sets the future end to its last seq + 1."""
    cuts: dict[str, list[Cut]] = {}
    for n, row in json_objects(path, CaseError):
        sid, cut = row.get("session_id"), row.get("cut")
        if not isinstance(sid, str) or not sid:
            raise CaseError(f"{path}, line {n}: session_id is missing or not a string")
        if not isinstance(cut, int) or isinstance(cut, bool) or cut < 0:
            raise CaseError(f"{path}, line {n}: cut {cut!r} is not a message index")
        future = row.get("future_seqs")
        end: int | None = None
        if future is not None:
            if (
                not isinstance(future, list)
                or not future
                or not all(isinstance(s, int) and not isinstance(s, bool) for s in future)
            ):
                raise CaseError(
                    f"{path}, line {n}: future_seqs must be a non-empty list of message seqs"
                )
            end = max(future) + 1
            if end <= cut:
                raise CaseError(f"{path}, line {n}: future_seqs end before the cut {cut}")
        cuts.setdefault(sid, []).append(Cut(cut, end, optional=True))
    if not cuts:
        raise CaseError(f"{path}: no cases in the labels file")
    return cuts


def build_cases(
    corpus: Corpus,
    triggers: Sequence[Trigger] = (),
    *,
    horizon: Horizon | None = None,
    cuts: dict[str, list[Cut]] | None = None,
    suite: str | None = None,
    sample: int | None = None,
    seed: int = 0,
    skipped: list[tuple[str, int]] | None = None,
    unsendable: list[tuple[str, int]] | None = None,
    no_case: Counter[str] | None = None,
) -> pl.DataFrame:
    """All cases of a corpus as a frame (schema ``CASES``), in session and cut order.
    ``no_case`` counts the sessions that gave no case, by why (``why_no_cut``; with several
    triggers, each one's reason).

    ``cuts``: session id (or source id) → cuts (``read_cuts``). Optional cuts of
    sessions the corpus lacks are appended to ``skipped`` as (session, cut); if none of the
    explicit cuts fits the corpus, that is an error. ``unsendable`` collects the (session,
    seq) of assistant messages that are no request point because their recorded context splits
    a call from its result (``SessionShape.unsendable``): never cut, always said."""
    if not triggers and not cuts:
        raise CaseError("give at least one --trigger or --cuts")
    sessions = frame_of(corpus.table("sessions", ["session_id", "source_session_id"]))
    source_of = dict(zip(sessions["session_id"], sessions["source_session_id"], strict=True))
    by_source: dict[str, str] = {}
    for sid, src in source_of.items():
        if src:
            by_source.setdefault(src, sid)
    explicit: dict[str, list[Cut]] = {}
    missed: list[tuple[str, int]] = []
    for key, values in (cuts or {}).items():
        given = list(values)
        sid = key if key in source_of else by_source.get(key)
        if sid is None:
            if given and all(c.optional for c in given):
                missed.extend((key, c.cut) for c in given)
                continue
            raise CaseError(f"cuts name session {key!r}, which is not in the corpus")
        explicit.setdefault(sid, []).extend(given)
    if cuts and not explicit:
        raise CaseError(
            f"none of the {len(missed)} explicit cuts names a session of this corpus "
            f"({corpus.path}); is it the corpus the labels were made on?"
        )
    if skipped is not None:
        skipped.extend(missed)
    rows: list[dict[str, Any]] = []
    made: list[pa.Table] = []  # cases as Arrow a few thousand at a time (Python rows are large)
    shaped = 0  # sessions with a visible message
    for shape in session_shapes(corpus):
        shaped += 1
        if len(rows) >= CASE_ROWS:
            made.append(rows_table(rows, CASES))
            rows = []
        if unsendable is not None:
            unsendable.extend(
                (shape.session_id, q)
                for q, bad in zip(shape.seq, shape.unsendable, strict=True)
                if bad
            )
        found: dict[int, str] = {}
        ends: dict[int, int] = {}
        for trigger in triggers:
            for index, label in cut_points(shape, trigger):
                found[index] = f"{found[index]}+{label}" if index in found else label
        for c in explicit.get(shape.session_id, ()):
            cut = c.cut
            if cut not in shape.seq or not shape.request_point[shape.seq.index(cut)]:
                raise CaseError(
                    f"cut {cut} in session {shape.session_id} is not a request point "
                    "(a visible assistant message with every earlier tool call answered, "
                    "each right after its call)"
                )
            index = shape.seq.index(cut)
            found[index] = f"{found[index]}+cut" if index in found else "cut"
            if c.future_end is not None:
                ends[index] = c.future_end
        if not found and no_case is not None and shape.session_id not in explicit:
            no_case[" · ".join(dict.fromkeys(why_no_cut(shape, t) for t in triggers))] += 1
        for index in sorted(found):
            rows.append(
                case_row(
                    shape,
                    index,
                    found[index],
                    horizon,
                    source_of.get(shape.session_id),
                    future_end=ends.get(index),
                )
            )
    made.append(rows_table(rows, CASES))
    frame = frame_of(pa.concat_tables(made)).sort(["session_id", "cut"])
    if no_case is not None and triggers and len(source_of) > shaped:
        no_case["no visible message"] += len(source_of) - shaped  # never shaped
    if suite:
        frame = select_suite(frame, suite)
    if sample is not None and sample < frame.height:
        frame = frame.sample(n=sample, seed=seed).sort(["session_id", "cut"])
    return frame


def select_suite(frame: pl.DataFrame, suite: str) -> pl.DataFrame:
    """``hard`` keeps the 10% of sessions (``hard:N``: N sessions) under the most sustained tool
    pressure — the highest mean tool-output share of the prefix across the session's cases."""
    name, _, arg = suite.partition(":")
    if name != "hard":
        raise CaseError(f"unknown suite {suite!r}; available: hard, hard:N")
    pressure = (
        frame.group_by("session_id")
        .agg(pl.col("tool_share").mean().alias("p"))
        .sort(["p", "session_id"], descending=[True, False])
    )
    n = int(arg) if arg else max(1, round(pressure.height * 0.1))
    keep = pressure.head(n)["session_id"]
    return frame.filter(pl.col("session_id").is_in(keep.implode()))


def write_cases(
    frame: pl.DataFrame, path: str | os.PathLike[str], meta: dict[str, Any]
) -> Path | str:
    """The cases as one Parquet file (a folder or a name without suffix gets ``cases.parquet``),
    locally or at a URI (one PUT)."""
    if storage.is_uri(path):
        uri = str(path).rstrip("/")
        out: Path | str = uri if uri.endswith(".parquet") else f"{uri}/cases.parquet"
    else:
        out = Path(path)
        if out.suffix != ".parquet":
            out = out / "cases.parquet" if out.is_dir() or not out.suffix else out
        out.parent.mkdir(parents=True, exist_ok=True)
    table = frame.to_arrow().cast(CASES)
    table = table.replace_schema_metadata({b"ctxreplay": json.dumps(meta, sort_keys=True).encode()})
    fs, where = storage.resolve(out)
    pq.write_table(table, where, compression="zstd", filesystem=fs)
    return out


def cases_file_of(path: str | os.PathLike[str]) -> str:
    """Where the cases file of ``path`` (a file, or a folder holding ``cases.parquet``) is: the
    absolute local path or the URI, as a run's manifest records it."""
    if storage.is_uri(path):
        uri = str(path).rstrip("/")
        return uri if storage.is_file(uri) else f"{uri}/cases.parquet"
    p = Path(path)
    return str((p if not p.is_dir() else p / "cases.parquet").resolve())


def check_cases_file(path: str | os.PathLike[str]) -> None:
    """Raise ``CaseError`` unless ``path`` is a readable cases file (reads only the footer)."""
    make = "make one with `ctxreplay cases CORPUS -o cases.parquet`"
    if storage.is_dir(path):
        raise CaseError(f"{path} is a folder, not a cases file; {make}")
    try:
        fs, where = storage.resolve(path)
        schema = pq.read_schema(where, filesystem=fs)
    except (OSError, pa.ArrowException, storage.StorageError) as e:
        raise CaseError(f"{path} is not a readable Parquet cases file ({e}); {make}") from None
    missing = [f.name for f in CASES if f.name not in schema.names]
    if missing:
        raise CaseError(
            f"{path} is not a cases file (no {', '.join(missing[:3])} column"
            f"{'s' if len(missing) > 1 else ''}); {make}"
        )


def read_cases(path: str | os.PathLike[str]) -> tuple[pl.DataFrame, dict[str, Any]]:
    p: Path | str
    if storage.is_uri(path):
        p = cases_file_of(path)
    else:
        p = Path(path)
        p = p / "cases.parquet" if p.is_dir() else p
    if not storage.exists(p):
        raise CaseError(f"no cases file at {p}")
    check_cases_file(p)
    fs, where = storage.resolve(p)
    table = pq.read_table(where, filesystem=fs)
    meta = json.loads((table.schema.metadata or {}).get(b"ctxreplay", b"{}"))
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame, meta


def cut_corpus(
    corpus: Corpus,
    out: str | os.PathLike[str],
    *,
    triggers: Sequence[str] = (),
    window: int | None = None,
    cuts: str | os.PathLike[str] | None = None,
    horizon: str = "all",
    suite: str | None = None,
    sample: int | None = None,
    seed: int = 0,
    skipped: list[tuple[str, int]] | None = None,
    unsendable: list[tuple[str, int]] | None = None,
    no_case: Counter[str] | None = None,
) -> tuple[pl.DataFrame, Path | str]:
    """``ctxreplay cases`` as a function: options as the CLI spells them, the cases written with a
    record of how they were made (what a run's manifest later fingerprints). ``skipped`` collects
    the labelled cuts of sessions this corpus lacks, ``unsendable`` the assistant messages whose
    recorded context no provider would take (never cut)."""
    suffix = Path(str(out).rsplit("/", 1)[-1]).suffix
    if suffix and suffix != ".parquet":
        raise CaseError(f"cases are written as Parquet: name the file *.parquet, not {out}")
    missed: list[tuple[str, int]] = []
    bad: list[tuple[str, int]] = []
    frame = build_cases(
        corpus,
        [parse_trigger(t, window) for t in triggers],
        horizon=parse_horizon(horizon),
        cuts=read_cuts(Path(cuts)) if cuts else None,
        suite=suite,
        sample=sample,
        seed=seed,
        skipped=missed,
        unsendable=bad,
        no_case=no_case,
    )
    if skipped is not None:
        skipped.extend(missed)
    if unsendable is not None:
        unsendable.extend(bad)
    meta = {
        "corpus": corpus.location,
        "corpus_fingerprint": corpus.fingerprint(),
        "triggers": list(triggers),
        "window": window,
        "cuts": str(cuts) if cuts else None,
        "cuts_skipped": len(missed),
        "unsendable_points": len(bad),
        "horizon": horizon,
        "suite": suite,
        "sample": sample,
        "seed": seed,
    }
    return frame, write_cases(frame, out, meta)


def why_no_cases(corpus: Corpus, triggers: Sequence[str], window: int | None = None) -> str:
    """One line on why ``triggers`` cut no case of ``corpus`` (for a summary that would else
    just say 0): the largest session against the smallest token trigger, or no sessions."""
    sessions = corpus.sessions()
    if sessions.height == 0:
        return "the corpus has no sessions"
    largest = int(sessions["tokens"].max() or 0)  # type: ignore[arg-type]
    parsed = [parse_trigger(x, window) for x in triggers]
    if parsed and all(t.kind == "compactions" for t in parsed):
        return "no session records a compaction (a message flagged compaction_summary)"
    token_triggers = [t for t in parsed if t.kind == "tokens"]
    if token_triggers:
        smallest = min(t.value for t in token_triggers)
        if largest < smallest:
            return (
                f"the largest session holds {largest:,} tokens < trigger {smallest:,} tokens; "
                f"try --trigger tokens:{max(1, largest // 2):,} or --trigger user-turns"
            )
    return (
        f"no request point of the {sessions.height:,} sessions matches "
        f"{', '.join(triggers) or 'the cuts given'}"
    )
