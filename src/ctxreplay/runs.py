"""The run folder: where a run's parts live, how they are named, and how they are read back.

Everything that reads or writes a run — the replay and judge engines, calibration, sweeps,
reports, ``show`` and the CLI — goes through this module::

    RUN/manifest.json                           versions, fingerprints, policies with parameters
    RUN/figures|decisions|views/<policy>/chunk-NNNNN.parquet   the replay (``ctxreplay.schema``)
    RUN/sidecar/ab/abcdef…                      archived payloads (content-addressed)
    RUN/verdicts/<judge>/part-*.parquet         the judges' verdicts
    RUN/calls/*.parquet                         every model call
    RUN/calibration/<judge>.json                a judge's calibration against labels

A policy's or judge's folder is its label's :func:`slug`; every part is written atomically
(``ctxreplay.files``), so a part that exists is whole.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from .datasets.messages import Message
from .datasets.rows import row_to_part
from .datasets.store import Corpus, read_manifest
from .errors import CtxreplayError
from .files import atomic_write_bytes
from .judges.base import DEFAULT_JUDGE
from .replay.sidecar import SidecarError
from .replay.view import Archive
from .schema import DECISIONS, FIGURES, VERDICTS, VIEWS

TABLES = ("figures", "decisions", "views")


SCHEMAS = {"figures": FIGURES, "decisions": DECISIONS, "views": VIEWS}


class RunError(CtxreplayError):
    """A folder that is not a run, or a run that does not hold what was asked."""


def slug(label: str) -> str:
    """A folder name for a policy label: readable, safe, and unique (short hash)."""
    readable = re.sub(r"[^A-Za-z0-9_.+-]+", "_", label)[:60]
    return f"{readable}-{hashlib.sha256(label.encode()).hexdigest()[:8]}"


def chunk_path(run: Path, table: str, label: str, index: int) -> Path:
    return run / table / slug(label) / f"chunk-{index:05d}.parquet"


def chunk_done(run: Path, label: str, index: int) -> bool:
    return all(chunk_path(run, t, label, index).exists() for t in TABLES)


def read_table(table: str, files: Path) -> pl.DataFrame:
    """One policy's chunks of a table. Figures gain columns over versions: chunks written
    before a column existed read it as null (and columns this version does not know are left
    out), so a run made by an older version still reads, even half resumed by a newer one."""
    if table != "figures":
        return pl.read_parquet(files)
    schema = pl.from_arrow(FIGURES.empty_table()).schema  # type: ignore[union-attr]
    return pl.scan_parquet(
        files, schema=schema, missing_columns="insert", extra_columns="ignore"
    ).collect()


class Run:
    """A run folder, read back."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.manifest: dict[str, Any] = read_manifest(self.path, "run", RunError)

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
            return matches[0]
        raise RunError(f"policy {name!r} is not in this run; it has: {', '.join(self.policies)}")

    def table(self, table: str, policy: str | None = None) -> pl.DataFrame:
        labels = [self.resolve_policy(policy)] if policy else self.policies
        frames = [
            read_table(table, self.path / table / slug(label) / "*.parquet")
            for label in labels
            if (self.path / table / slug(label)).exists()
        ]
        if not frames:
            return pl.from_arrow(SCHEMAS[table].empty_table())  # type: ignore[return-value]
        return pl.concat(frames, how="vertical_relaxed")

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
        prefix = [m for m in messages if m.visible and m.seq < row["cut"]]
        out: list[Message] = []
        for e in row["entries"]:
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


def read_verdicts(run_path: str | os.PathLike[str], judge: str | None = None) -> pl.DataFrame:
    """Every verdict of a run (one per case, policy and judge)."""
    root = Path(run_path) / "verdicts"
    folders = sorted(p for p in root.iterdir() if p.is_dir()) if root.exists() else []
    frames = [pl.read_parquet(f / "*.parquet") for f in folders if any(f.glob("*.parquet"))]
    if not frames:
        return pl.from_arrow(VERDICTS.empty_table())  # type: ignore[return-value]
    frame = pl.concat(frames, how="vertical_relaxed")
    if judge is not None:
        frame = frame.filter((pl.col("judge") == judge) | (pl.col("judge_name") == judge))
    return frame.unique(["judge", "policy", "case_id"], keep="first", maintain_order=True)


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
            return labels[0]
        judge = DEFAULT_JUDGE
    if judge in labels:
        return judge
    named = sorted(set(verdicts.filter(pl.col("judge_name") == judge)["judge"].to_list()))
    if len(named) == 1:
        return named[0]
    if named:
        raise error(
            f"several judges named {judge!r} in this run ({', '.join(named)}); pass one label"
        )
    raise error(f"no verdicts from judge {judge!r}; this run has: {', '.join(labels)}")


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
    """Exact payloads of folded objects at ``RUN/sidecar/<2 hex>/<64 hex>``, addressed by sha256.
    Refs are checked against a strict pattern, so no ref can name a path outside the store, and
    every read re-hashes the bytes."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def _path(self, digest: str) -> Path:
        return self.root / digest[:2] / digest

    def put(self, payload: bytes) -> str:
        digest = hashlib.sha256(payload).hexdigest()
        path = self._path(digest)
        if not path.exists():
            atomic_write_bytes(path, payload)
        return f"sha256:{digest}"

    def put_all(self, archives: Iterable[Archive]) -> None:
        for a in archives:
            stored = self.put(a.payload)
            if stored != a.ref:
                raise SidecarError(f"archive {a.object_id}: ref {a.ref} does not match its payload")

    def resolve(self, ref: str) -> str:
        m = _REF.match(ref)
        if not m:
            raise SidecarError(f"not a sidecar ref: {ref!r} (expected sha256:<hex>)")
        digest = m.group(1)
        if len(digest) == 64:
            return digest
        folder = self.root / digest[:2]
        matches = sorted(p.name for p in folder.glob(f"{digest}*")) if folder.exists() else []
        matches = [x for x in matches if not x.startswith(".")]
        if len(matches) != 1:
            raise SidecarError(f"ref {ref} matches {len(matches)} payloads")
        return matches[0]

    def recover(self, ref: str) -> bytes:
        """The exact original bytes of a folded object; raises if missing or altered."""
        digest = self.resolve(ref)
        path = self._path(digest)
        if not path.exists():
            raise SidecarError(f"no payload for {ref} in {self.root}")
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() != digest:
            raise SidecarError(f"payload {ref} is corrupt: its sha256 no longer matches")
        return data

    def __contains__(self, ref: object) -> bool:
        try:
            return isinstance(ref, str) and self._path(self.resolve(ref)).exists()
        except SidecarError:
            return False
