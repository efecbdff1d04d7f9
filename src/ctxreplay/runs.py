"""The run folder: where a run's parts live, how they are named, and how they are read back.

Everything that reads or writes a run — the replay and judge engines, calibration, sweeps,
reports, ``show`` and the CLI — goes through this module::

    RUN/manifest.json                           versions, fingerprints, policies with parameters
    RUN/figures|decisions|views/<policy>/chunk-NNNNN.parquet   the replay (``ctxreplay.schema``)
    RUN/done/<policy>/chunk-NNNNN.json          a chunk's done-marker: its parts' rows and sizes,
                                                and the cases and policy they were made from
    RUN/sidecar/ab/abcdef…                      archived payloads (content-addressed)
    RUN/verdicts/<judge>/part-*.parquet         the judges' verdicts
    RUN/calls/*.parquet                         every model call
    RUN/calibration/<judge>.json                a judge's calibration against labels

A policy's or judge's folder is its label's :func:`slug`; every part is written atomically
(``ctxreplay.files``), so a part that exists was whole when written. A file damaged since (a
truncated part, a corrupt manifest) is named by :class:`DamagedRunError` with its repair, never
a reader's traceback; the replay engine redoes a chunk whose parts disagree with its marker, and
the judge sets an unreadable verdict part aside (``*.damaged``) and judges its pairs again.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, cast

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from . import storage
from .datasets.cases import materialise
from .datasets.messages import Message
from .datasets.rows import row_to_part
from .datasets.store import Corpus, read_manifest
from .errors import CtxreplayError
from .files import atomic_write_table, atomic_write_text
from .judges.base import DEFAULT_JUDGE
from .replay.sidecar import SidecarError
from .replay.view import Archive
from .schema import DECISIONS, FIGURES, VERDICTS, VIEWS

TABLES = ("figures", "decisions", "views")
#: about how many cases a run is replayed (and judged) in together, unless told
CHUNK_CASES = 64


SCHEMAS = {"figures": FIGURES, "decisions": DECISIONS, "views": VIEWS}


class RunError(CtxreplayError):
    """A folder that is not a run, or a run that does not hold what was asked."""


class DamagedRunError(RunError):
    """A file of a run that can no longer be read as written (truncated, altered, missing):
    the message names the file and the command that repairs it."""


#: what reading a damaged Parquet file raises, from polars or pyarrow
READ_ERRORS: tuple[type[BaseException], ...] = (
    pl.exceptions.PolarsError,
    pa.ArrowException,
    OSError,
    ValueError,
)


_SOURCE = re.compile(r"^Could not open Parquet input source '[^']*': ")


def _first_line(e: BaseException) -> str:
    """The gist of a reader's error: its first line, without the path (the message names the
    file itself) and pyarrow's advice."""
    text = str(e).strip().splitlines()
    line = _SOURCE.sub("", text[0] if text else type(e).__name__)
    return line.split(". Either the file", 1)[0][:160]


def part_problem(path: Path) -> str | None:
    """Why a Parquet part cannot be read (None: it reads whole)."""
    try:
        pq.read_table(path)
    except READ_ERRORS as e:
        return _first_line(e)
    return None


def replay_repair(run: str | os.PathLike[str]) -> str:
    return (
        f"re-run `ctxreplay replay … -o {run}` with the same corpus, cases and policies: "
        "it redoes damaged parts"
    )


def judge_repair(run: str | os.PathLike[str], judge: str | None = None) -> str:
    which = f" --judge {judge}" if judge else ""
    return (
        f"re-run `ctxreplay judge {run}{which}`: it sets the damaged part aside and judges "
        "its pairs again"
    )


def read_parts(
    files: Sequence[Path],
    read: Callable[[list[Path]], pl.DataFrame],
    repair: Callable[[], str],
    what: str = "part",
) -> pl.DataFrame:
    """``read(files)``, or :class:`DamagedRunError` naming the first file that cannot be read
    and the command that repairs it (``repair()``)."""
    try:
        return read(list(files))
    except READ_ERRORS:
        raise_damaged(files, repair, what)
        raise  # every part reads on its own: not damage but a bug, with its traceback


def raise_damaged(files: Sequence[Path], repair: Callable[[], str], what: str = "part") -> None:
    """:class:`DamagedRunError` naming the first of ``files`` that cannot be read and the
    command that repairs it (``repair()``); nothing when every one reads."""
    for f in files:
        problem = part_problem(f) if f.is_file() else "missing"
        if problem:
            raise DamagedRunError(f"{what} {f} is damaged ({problem}); {repair()}") from None


def slug(label: str) -> str:
    """A folder name for a policy label: readable, safe, and unique (short hash)."""
    readable = re.sub(r"[^A-Za-z0-9_.+-]+", "_", label)[:60]
    return f"{readable}-{hashlib.sha256(label.encode()).hexdigest()[:8]}"


def chunk_path(run: Path, table: str, label: str, index: int) -> Path:
    return run / table / slug(label) / f"{chunk_name(index)}.parquet"


def chunk_name(index: int) -> str:
    """The name a chunk's parts and done-marker share (``chunk-NNNNN``)."""
    return f"chunk-{index:05d}"


#: the folder of a run holding one done-marker per (policy, chunk)
DONE_DIR = "done"


def done_path(run: Path, label: str, index: int) -> Path:
    return run / DONE_DIR / slug(label) / f"{chunk_name(index)}.json"


def cases_digest(case_ids: Iterable[str]) -> str:
    """A short hash of a chunk's case ids (in order): which cases its parts hold."""
    h = hashlib.sha256()
    for c in case_ids:
        h.update(c.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def write_done(
    run: str | os.PathLike[str],
    label: str,
    index: int,
    attribution: dict[str, Any],
    parts: dict[str, tuple[int, int]],
) -> None:
    """The done-marker of a (chunk, policy), written after its parts: each part's rows and
    bytes (``parts``: table → what ``storage.write_table`` returned), and ``attribution`` (what
    the parts were made from: policy, corpus, cases). The run may be on object storage."""
    name = chunk_name(index)
    doc = {
        "kind": "ctxreplay-chunk",
        "chunk": index,
        **attribution,
        "parts": {
            t: {"file": f"{name}.parquet", "rows": rows, "bytes": size}
            for t, (rows, size) in parts.items()
        },
    }
    location = storage.join(run, DONE_DIR, slug(label), f"{name}.json")
    storage.write_text(location, json.dumps(doc, indent=1, sort_keys=True))


def write_chunk_part(
    run: str | os.PathLike[str], table: str, label: str, index: int, rows: Sequence[Any]
) -> tuple[int, int]:
    """One replay part of a (chunk, policy), written atomically wherever the run is; its rows
    and bytes, for the done-marker."""
    location = storage.join(run, table, slug(label), f"{chunk_name(index)}.parquet")
    return storage.write_table(location, rows, SCHEMAS[table])


def read_done(run: Path, label: str, index: int) -> dict[str, Any] | None:
    """A (chunk, policy)'s done-marker; None when it is missing or unreadable."""
    return read_marker(done_path(run, label, index))


def read_marker(path: Path) -> dict[str, Any] | None:
    """A done-marker file, or None when it is missing or unreadable."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("parts"), dict):
        return None
    return doc


def chunk_problem(
    run: Path, label: str, index: int, attribution: dict[str, Any] | None = None
) -> str | None:
    """Why a (chunk, policy) must be (re)done — no marker, a marker for other cases or another
    policy, a part missing, unreadable or with other rows than the marker says — or None when
    its parts are whole and belong to ``attribution``."""
    marker = read_done(run, label, index)
    if marker is None:
        return "no done-marker"
    for key, want in (attribution or {}).items():
        if marker.get(key) != want:
            return f"made for another {key.replace('_', ' ')}"
    for t in TABLES:
        path = chunk_path(run, t, label, index)
        expected = marker["parts"].get(t) or {}
        try:
            size = path.stat().st_size
        except OSError:
            return f"{t} part missing"
        if size != expected.get("bytes"):
            return f"{t} part has {size} bytes, not {expected.get('bytes')}"
        try:
            rows = pq.read_metadata(path).num_rows
        except READ_ERRORS:
            return f"{t} part unreadable"
        if rows != expected.get("rows"):
            return f"{t} part has {rows} rows, not {expected.get('rows')}"
    return None


def chunk_done(
    run: Path, label: str, index: int, attribution: dict[str, Any] | None = None
) -> bool:
    return chunk_problem(run, label, index, attribution) is None


def check_markers(run: Path, label: str) -> None:
    """Every part a done-marker of ``label`` names is there and whole: its size as written (a
    stat per part: cheap enough for every read), or else its footer readable with the rows the
    marker counts (a part rewritten whole, e.g. by a migration, is not damage); otherwise
    :class:`DamagedRunError` naming it."""
    folder = run / DONE_DIR / slug(label)
    if not folder.is_dir():
        return
    for path in sorted(folder.glob("chunk-*.json")):
        marker = read_marker(path)
        if marker is None:
            continue
        index = path.stem.split("-", 1)[1]
        for t in TABLES:
            expected = marker["parts"].get(t) or {}
            part = run / t / slug(label) / f"chunk-{index}.parquet"
            try:
                size = part.stat().st_size
            except OSError:
                raise DamagedRunError(f"part {part} is missing; {replay_repair(run)}") from None
            if size == expected.get("bytes"):
                continue
            try:
                rows = pq.read_metadata(part).num_rows
            except READ_ERRORS as e:
                raise DamagedRunError(
                    f"part {part} is damaged ({_first_line(e)}); {replay_repair(run)}"
                ) from None
            if rows != expected.get("rows"):
                raise DamagedRunError(
                    f"part {part} is damaged ({rows} rows, written with "
                    f"{expected.get('rows')}); {replay_repair(run)}"
                )


def read_table(
    table: str,
    parts: Sequence[Path],
    run: Path,
    columns: Sequence[str] | None = None,
    part_column: str | None = None,
) -> pl.DataFrame:
    """One policy's chunks of a table. Figures gain columns over versions: chunks written
    before a column existed read it as null (and columns this version does not know are left
    out), so a run made by an older version still reads, even half resumed by a newer one.
    ``columns``: only these (the others are never read); ``part_column``: a column naming the
    part file of each row. A part that cannot be read raises :class:`DamagedRunError` naming it."""
    if not parts:
        empty = pl.from_arrow(SCHEMAS[table].empty_table())
        assert isinstance(empty, pl.DataFrame)
        if part_column:
            empty = empty.with_columns(pl.lit(None, pl.String).alias(part_column))
        return empty if columns is None else empty.select(*columns, *filter(None, [part_column]))
    schema = (
        pl.from_arrow(FIGURES.empty_table()).schema  # type: ignore[union-attr]
        if table == "figures"
        else None
    )

    def read(files: list[Path]) -> pl.DataFrame:
        scan = pl.scan_parquet(
            files,
            schema=schema,
            missing_columns="insert" if schema else "raise",
            extra_columns="ignore" if schema else "raise",
            include_file_paths=part_column,
        )
        if columns is not None:
            scan = scan.select(*columns, *filter(None, [part_column]))
        if part_column:
            scan = scan.with_columns(pl.col(part_column).str.split("/").list.last())
        return scan.collect()

    return read_parts(parts, read, lambda: replay_repair(run))


def require_reachable(location: str | os.PathLike[str]) -> None:
    """In a task: the run folder it was given is there on this node, else one line saying
    what to give instead (a task on a node that cannot see a local folder would write its
    parts where nobody reads them)."""
    if not storage.is_uri(location) and not storage.local_path(location).is_dir():
        raise RunError(
            f"the run folder {location} is not there on this node ({socket.gethostname()}): "
            "with tasks on other nodes, give a folder every node sees (a shared file system) "
            "or a URI (s3://bucket/run)"
        )


def run_manifest(location: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest of a run folder, local or on object storage, checked to be a run's."""
    manifest: dict[str, Any] = read_manifest(storage.location(location), "run", RunError)
    if not isinstance(manifest.get("policies"), dict):
        where = storage.join(storage.location(location), "manifest.json")
        raise DamagedRunError(
            f"{storage.redact(str(where))} is damaged (no policies); {replay_repair(location)}"
        )
    return manifest


class Run:
    """A run folder, read back."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.manifest = run_manifest(self.path)
        self._checked: set[str] = set()

    def check(self, labels: Iterable[str] | None = None) -> None:
        """Every part the done-markers of these policies (default: all) name is there, whole in
        size; else :class:`DamagedRunError`. Done once per policy and ``Run``."""
        for label in self.policies if labels is None else labels:
            if label not in self._checked:
                check_markers(self.path, label)
                self._checked.add(label)

    @property
    def corpus(self) -> Corpus:
        return Corpus(self.manifest["corpus_path"])

    @property
    def policies(self) -> list[str]:
        return list(self.manifest["policies"])

    def resolve_policy(self, name: str) -> str:
        if name in self.manifest["policies"]:
            return name
        matches = [label for label, d in self.manifest["policies"].items() if d["name"] == name]
        if len(matches) == 1:
            return cast(str, matches[0])
        raise RunError(f"policy {name!r} is not in this run; it has: {', '.join(self.policies)}")

    def table(self, table: str, policy: str | None = None) -> pl.DataFrame:
        labels = [self.resolve_policy(policy)] if policy else self.policies
        self.check(labels)  # every table of these policies: a reader of one reads the others
        frames = [
            read_table(
                table, sorted((self.path / table / slug(label)).glob("*.parquet")), self.path
            )
            for label in labels
            if (self.path / table / slug(label)).is_dir()
        ]
        if not frames:
            return pl.from_arrow(SCHEMAS[table].empty_table())  # type: ignore[return-value]
        return pl.concat(frames, how="vertical_relaxed")

    def tool_output(self, case_id: str, call_id: str) -> bytes:
        """The full output of a tool call of a case's session (``Corpus.tool_output``)."""
        frame = self.table("views").filter(pl.col("case_id") == case_id)
        if frame.height == 0:
            raise RunError(f"no case {case_id!r} in {self.path}")
        return self.corpus.tool_output(frame["session_id"][0], call_id)

    def view_row(self, case_id: str, policy: str) -> dict[str, Any]:
        label = self.resolve_policy(policy)
        frame = self.table("views", label).filter(pl.col("case_id") == case_id)
        if frame.height == 0:
            raise RunError(f"no view for case {case_id!r} under {label}")
        return frame.row(0, named=True)

    def load_view(
        self, case_id: str, policy: str, session: Sequence[Message] | None = None
    ) -> list[Message]:
        """The exact view of a case, rebuilt from views.parquet and the corpus."""
        row = self.view_row(case_id, policy)
        messages = session if session is not None else self.corpus.load_session(row["session_id"])
        return view_messages(row["entries"], materialise(row, messages).prefix)


def view_messages(entries: Sequence[dict[str, Any]], prefix: Sequence[Message]) -> list[Message]:
    """A view's messages from its ``views`` entries: unchanged prefix messages by index, edited
    ones rebuilt from their stored parts (keeping the prefix message's error status)."""
    out: list[Message] = []
    for e in entries:
        if e["parts"] is None:
            out.append(prefix[e["index"]])
        else:
            out.append(
                Message(
                    role=e["role"],
                    parts=tuple(row_to_part(p) for p in e["parts"]),
                    seq=e["seq"],
                    tokens=e["tokens"],
                    flags=tuple(e["flags"] or ()),
                    is_error=prefix[e["index"]].is_error if e["index"] is not None else False,
                )
            )
    return out


#: the suffix a damaged file is renamed with when it is set aside
DAMAGED_SUFFIX = ".damaged"


def _verdict_folders(run: Path) -> list[Path]:
    root = run / "verdicts"
    if root.exists() and not root.is_dir():
        raise DamagedRunError(
            f"{root} is a file, not the verdicts folder; re-run `ctxreplay judge {run}`: "
            "it sets the file aside"
        )
    return sorted(p for p in root.iterdir() if p.is_dir()) if root.exists() else []


def verdict_parts(run_path: str | os.PathLike[str]) -> list[Path]:
    """Every verdict part of a run, in ``read_verdicts``' order: judge folders, then parts, by
    name (the first verdict of a (judge, policy, case) in this order is the one kept)."""
    return [p for f in _verdict_folders(Path(run_path)) for p in sorted(f.glob("*.parquet"))]


def _judge_of(folder: Path) -> str | None:
    """The judge label of a verdicts folder, from any readable part (None: none reads)."""
    for part in sorted(folder.glob("*.parquet")):
        try:
            col = pq.read_table(part, columns=["judge"]).column("judge")
        except READ_ERRORS:
            continue
        if len(col):
            return str(col[0].as_py())
    return None


def _no_verdicts() -> pl.DataFrame:
    """No verdict, with every verdict column."""
    empty = pl.from_arrow(VERDICTS.empty_table())
    assert isinstance(empty, pl.DataFrame)
    return empty


def _verdict_scan(parts: list[Path]) -> pl.LazyFrame:
    """A lazy scan of verdict parts with the verdict schema: a column added since a part was
    written reads as null."""
    schema = _no_verdicts().schema
    return pl.scan_parquet(parts, schema=schema, missing_columns="insert", extra_columns="ignore")


def _folder_repair(run: Path, folder: Path) -> str:
    """The command that judges a verdict folder's pairs again."""
    return judge_repair(run, _judge_of(folder))


def _read_verdict_parts(
    parts: list[Path], judge: str | None = None, columns: Sequence[str] | None = None
) -> pl.DataFrame:
    """Verdict parts of one judge; a column added since a part was written reads as null.
    ``judge`` and ``columns`` are applied while scanning, so what is not asked for is never
    held in memory."""
    scan = _verdict_scan(parts)
    if judge is not None:
        scan = scan.filter((pl.col("judge") == judge) | (pl.col("judge_name") == judge))
    if columns is not None:
        scan = scan.select(columns)
    return scan.collect()


def read_verdicts(
    run_path: str | os.PathLike[str],
    judge: str | None = None,
    columns: Sequence[str] | None = None,
) -> pl.DataFrame:
    """Every verdict of a run (one per case, policy and judge), or those of ``judge`` (a label
    or a name), with only ``columns`` when given (they must include ``judge``, ``policy`` and
    ``case_id``). A part that cannot be read raises :class:`DamagedRunError` naming it and the
    judge command that repairs it."""
    run = Path(run_path)
    frames = []
    for f in _verdict_folders(run):
        parts = sorted(f.glob("*.parquet"))
        if parts:
            frames.append(
                read_parts(
                    parts,
                    lambda files: _read_verdict_parts(files, judge, columns),
                    partial(_folder_repair, run, f),
                    "verdict part",
                )
            )
    if not frames:
        empty = _no_verdicts()
        return empty if columns is None else empty.select(columns)
    frame = pl.concat(frames, how="vertical_relaxed")
    return frame.unique(["judge", "policy", "case_id"], keep="first", maintain_order=True)


def set_aside(path: Path) -> Path:
    """Rename a damaged file to ``NAME.damaged`` (``NAME.damaged-2``, … when taken): kept for
    inspection, never read again."""
    target = path.with_name(path.name + DAMAGED_SUFFIX)
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}{DAMAGED_SUFFIX}-{n}")
    path.rename(target)
    return target


def set_aside_damaged_verdicts(run_path: str | os.PathLike[str], judge: str) -> list[Path]:
    """Before judging: a ``verdicts`` that is a file, or a verdict part of ``judge`` that does not
    read, is set aside (:func:`set_aside`), so its pairs are judged again. Returns the new names."""
    run = Path(run_path)
    moved: list[Path] = []
    root = run / "verdicts"
    if root.exists() and not root.is_dir():
        moved.append(set_aside(root))
    folder = root / slug(judge)
    if folder.exists() and not folder.is_dir():
        moved.append(set_aside(folder))
    elif folder.is_dir():
        for part in sorted(folder.glob("*.parquet")):
            if part_problem(part) is not None:
                moved.append(set_aside(part))
    return moved


#: beside a judge's verdict parts: the digest of the inputs they were made from
INPUTS_FILE = "inputs.json"


def renew_verdicts(run_path: str | os.PathLike[str], judge: str, fingerprint: str | None) -> int:
    """Before judging: when ``judge``'s verdicts were made from other inputs than
    ``fingerprint`` (``Judge.inputs_fingerprint``), they are removed, so every pair is judged
    again; the fingerprint is recorded. Returns the verdict parts removed."""
    if fingerprint is None:
        return 0
    folder = Path(run_path) / "verdicts" / slug(judge)
    stamp = folder / INPUTS_FILE
    parts = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
    try:
        recorded = json.loads(stamp.read_text()).get("fingerprint")
    except (OSError, ValueError, AttributeError):
        recorded = None  # none yet (or unreadable): the parts' inputs are unknown
    stale = parts if recorded != fingerprint else []
    for part in stale:
        part.unlink()
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(stamp, json.dumps({"judge": judge, "fingerprint": fingerprint}) + "\n")
    return len(stale)


def drop_verdicts(parts: Sequence[Path], pairs: set[tuple[str, str]]) -> int:
    """Remove the rows of ``pairs`` (policy, case_id) from these verdict parts, each part
    rewritten atomically (removed when nothing is left): the judge does this once their new
    rows are written, so one verdict per pair remains. Returns the rows removed."""
    removed = 0
    for part in parts:
        if not part.is_file():
            continue
        table = pq.read_table(part)
        keep = [
            (p, c) not in pairs
            for p, c in zip(
                table.column("policy").to_pylist(), table.column("case_id").to_pylist(), strict=True
            )
        ]
        gone = keep.count(False)
        if not gone:
            continue
        removed += gone
        if gone == len(keep):
            part.unlink()
        else:
            atomic_write_table(table.filter(pa.array(keep)), None, part)
    return removed


def judge_label(
    verdicts: pl.DataFrame, judge: str | None, error: type[Exception] = ValueError
) -> str | None:
    """The judge label meant by ``judge`` (a label, or a name with a single label in the run;
    None: the run's only judge, or else the default judge).

    None when the run has no verdicts at all; ``error`` when the name is unknown or ambiguous.
    """
    if verdicts.height == 0:
        return None
    labels = sorted(set(verdicts["judge"].to_list()))
    if judge is None:
        if len(labels) == 1:
            return cast("str | None", labels[0])
        judge = DEFAULT_JUDGE
    if judge in labels:
        return judge
    named = sorted(set(verdicts.filter(pl.col("judge_name") == judge)["judge"].to_list()))
    if len(named) == 1:
        return cast("str | None", named[0])
    if named:
        raise error(
            f"several judges named {judge!r} in this run ({', '.join(named)}); pass one label"
        )
    raise error(f"no verdicts from judge {judge!r}; this run has: {', '.join(labels)}")


def verdict_judges(run_path: str | os.PathLike[str]) -> pl.DataFrame:
    """The distinct (judge, judge_name) of a run's verdicts, without holding a verdict: what
    ``judge_label`` reads."""
    return query_verdicts(
        run_path, lambda scan: scan.select("judge", "judge_name").unique(maintain_order=True)
    )


def judge_verdicts(
    run_path: str | os.PathLike[str],
    judge: str | None,
    error: type[Exception] = ValueError,
    names: pl.DataFrame | None = None,
) -> tuple[str | None, pl.DataFrame]:
    """The label ``judge`` means in a run (``judge_label``) and that label's verdicts, as
    ``read_verdicts`` gives them; (None, no rows) when the run has no verdicts. The label is
    found from the judges' names alone (``names``: ``verdict_judges``, when the caller has
    read them) and the verdicts are filtered while scanning: the other judges' verdicts are
    never held."""
    label = judge_label(verdict_judges(run_path) if names is None else names, judge, error)
    if label is None:
        return None, _no_verdicts()
    return label, read_verdicts(run_path, label).filter(pl.col("judge") == label)


#: the folder of a run holding one calibration per judge label (``<slug(label)>.json``)
CALIBRATION_DIR = "calibration"


def calibration_path(run_path: str | os.PathLike[str], judge_label: str) -> Path:
    return Path(run_path) / CALIBRATION_DIR / f"{slug(judge_label)}.json"


_COUNTS = ("tp", "fn", "fp", "tn")


class CalibrationError(CtxreplayError, ValueError):
    """A stored calibration that cannot be read or belongs to another judge."""


def read_calibration(run_path: str | os.PathLike[str], judge_label: str) -> dict[str, Any] | None:
    """The stored calibration of ``judge_label`` in a run, as written (None when there is none).

    Raises :class:`CalibrationError` when the file is unreadable, lacks a count, or belongs to
    another judge.
    """
    path = calibration_path(run_path, judge_label)
    return read_calibration_file(path, judge_label) if path.is_file() else None


def read_calibration_file(path: str | os.PathLike[str], judge_label: str) -> dict[str, Any]:
    """A calibration file (from this run or another: a labelled dev set judged with the same
    judge), checked to be a calibration of ``judge_label``."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise CalibrationError(f"{path}: unreadable calibration ({e})") from e
    if not isinstance(doc, dict):
        raise CalibrationError(f"{path}: a calibration is a JSON object")
    for key in _COUNTS:
        v = doc.get(key)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise CalibrationError(f"{path}: {key} is not a count ({v!r})")
    if doc.get("judge") != judge_label:
        raise CalibrationError(
            f"{path}: calibrates judge {doc.get('judge')!r}, not {judge_label!r}"
        )
    return doc


def sweep_of(manifest: dict[str, Any]) -> dict[str, Any] | None:
    """The sweep a run manifest records (None: the run is not a sweep)."""
    sweep = manifest.get("sweep")
    return sweep if isinstance(sweep, dict) and sweep.get("points") else None


#: a sidecar ref: ``sha256:`` and 16 to 64 hex digits (a short ref must match one payload)
_REF = re.compile(r"^sha256:([0-9a-f]{16,64})$")


class SidecarStore:
    """Exact payloads of folded objects at ``RUN/sidecar/<2 hex>/<64 hex>``, addressed by sha256,
    in a local run or one on object storage (``root`` a URI: each payload read and published
    there through ``storage``). Refs are checked against a strict pattern, so no ref can name a
    path outside the store, and every read re-hashes the bytes."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = storage.location(root)

    def _path(self, digest: str) -> str | Path:
        return storage.join(self.root, digest[:2], digest)

    def put(self, payload: bytes) -> str:
        """Store ``payload`` (again, when the stored copy has another size: damaged)."""
        digest = hashlib.sha256(payload).hexdigest()
        path = self._path(digest)
        if storage.size(path) != len(payload):
            storage.write_bytes(path, payload)
        return f"sha256:{digest}"

    def put_all(self, archives: Iterable[Archive]) -> None:
        """Store these archives' payloads, each checked against its ref; on object storage
        several at a time (each one a round trip or three)."""
        unique = {a.ref: a for a in archives}
        threads = storage.TRANSFER_THREADS if isinstance(self.root, str) and len(unique) > 1 else 1
        with ThreadPoolExecutor(threads) as pool:
            stored = list(pool.map(lambda a: (a, self.put(a.payload)), unique.values()))
        for a, ref in stored:
            if ref != a.ref:
                raise SidecarError(f"archive {a.object_id}: ref {a.ref} does not match its payload")

    def resolve(self, ref: str) -> str:
        m = _REF.match(ref)
        if not m:
            raise SidecarError(f"not a sidecar ref: {ref!r} (expected sha256:<hex>)")
        digest = m.group(1)
        if len(digest) == 64:
            return digest
        folder = storage.join(self.root, digest[:2])
        names = storage.list_files(folder) if storage.is_dir(folder) else []
        matches = [x for x in names if x.startswith(digest) and "/" not in x]
        if len(matches) != 1:
            raise SidecarError(f"ref {ref} matches {len(matches)} payloads")
        return matches[0]

    def recover(self, ref: str) -> bytes:
        """The exact original bytes of a folded object; raises if missing or altered."""
        digest = self.resolve(ref)
        path = self._path(digest)
        try:
            data = storage.read_bytes(path)
        except storage.StorageError as e:
            if not storage.is_file(path):
                raise SidecarError(
                    f"no payload for {ref} in {self.root} (file {path} missing)"
                ) from None
            raise SidecarError(f"payload {ref} does not read ({e})") from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise SidecarError(f"payload {ref} is corrupt: {path} no longer matches its sha256")
        return data

    def __contains__(self, ref: object) -> bool:
        try:
            return isinstance(ref, str) and storage.is_file(self._path(self.resolve(ref)))
        except SidecarError:
            return False


def query_verdicts(
    run_path: str | os.PathLike[str],
    query: Callable[[pl.LazyFrame], pl.LazyFrame],
) -> pl.DataFrame:
    """``query`` applied to one lazy scan of every verdict part of a run, then collected: what
    the query filters, projects or aggregates away is never held, where ``read_verdicts`` holds
    every verdict it returns (a report streams a run's verdicts policy by policy with it).

    The scan has ``read_verdicts``' columns (a column added since a part was written reads as
    null) and its row order (judge folders, then parts, by name), with every row as written: a
    query that needs the one verdict per (judge, policy, case_id) that ``read_verdicts`` keeps
    filters on those columns only, then keeps the first row of each
    (``unique(["judge", "policy", "case_id"], keep="first", maintain_order=True)``). A part that
    cannot be read raises :class:`DamagedRunError` naming it and the judge command that repairs
    it."""
    run = Path(run_path)
    folders = [(f, sorted(f.glob("*.parquet"))) for f in _verdict_folders(run)]
    parts = [p for _, found in folders for p in found]
    if not parts:
        return query(_no_verdicts().lazy()).collect()
    try:
        return query(_verdict_scan(parts)).collect()
    except READ_ERRORS:
        for folder, found in folders:
            raise_damaged(found, partial(_folder_repair, run, folder), "verdict part")
        raise  # every part reads on its own: not damage but a bug, with its traceback
