"""``ctxreplay import``: trace files in, a corpus folder out, and a summary a person can read."""

from __future__ import annotations

import hashlib
import os
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from .importers import detect, get_importer, importers
from .messages import Session
from .rejects import Reject
from .store import CorpusError, CorpusWriter, auto_buckets
from .tokenizer import DEFAULT_TOKENIZER, get_tokenizer
from .validate import MAX_MESSAGE_BYTES

TRACE_SUFFIXES = (".json", ".jsonl", ".traj")


@dataclass
class ImportSummary:
    corpus: Path
    sessions: int = 0
    messages: int = 0
    tokens: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    by_format: Counter[str] = field(default_factory=Counter)
    files: int = 0
    bytes: int = 0
    seconds: float = 0.0
    examples: list[str] = field(default_factory=list)

    @property
    def rejects(self) -> int:
        return sum(self.rejected.values())

    def render(self) -> str:
        lines = [
            f"imported {self.sessions:,} sessions, {self.messages:,} messages, {self.tokens:,} tokens "
            f"from {self.files} files ({self.bytes / 1e6:.1f} MB) in {self.seconds:.1f}s → {self.corpus}",
        ]
        if self.by_format:
            lines.append(
                "  by format: " + ", ".join(f"{k} {v}" for k, v in sorted(self.by_format.items()))
            )
        if self.rejected:
            lines.append(f"rejected {self.rejects} records:")
            for reason, n in self.rejected.most_common():
                lines.append(f"  {reason:<24} {n}")
            for example in self.examples[:5]:
                lines.append(f"  e.g. {example}")
            lines.append(
                f'  (raw records kept: ctxreplay sql {self.corpus} "SELECT * FROM rejects")'
            )
        else:
            lines.append("rejected 0 records")
        return "\n".join(lines)


def expand(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Files named, and trace files found under folders named, in a stable order."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            out.extend(
                sorted(f for f in p.rglob("*") if f.is_file() and f.suffix in TRACE_SUFFIXES)
            )
        else:
            out.append(p)
    return list(dict.fromkeys(out))


def read_file(
    path: Path, fmt: str | None, max_message_bytes: int = MAX_MESSAGE_BYTES
) -> tuple[str | None, Iterator[Session | Reject]]:
    name = fmt or detect(path)
    if name is None:
        raw = path.read_bytes() if path.exists() else b""
        detail = f"no importer recognises this file (formats: {', '.join(importers.names())})"
        return None, iter([Reject(str(path), "unknown_format", detail, raw)])
    importer = get_importer(name)
    importer.max_message_bytes = max_message_bytes
    return name, importer.read(path)


def import_paths(
    paths: Iterable[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    fmt: str | None = None,
    tokenizer: str = DEFAULT_TOKENIZER,
    overwrite: bool = False,
    buckets: int | None = None,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    progress: bool = True,
) -> ImportSummary:
    files = expand(paths)
    missing = [f for f in files if not f.exists()]
    if missing:
        raise CorpusError(f"no such file: {missing[0]}")
    if fmt is not None:
        importers.get(fmt)  # unknown names fail before anything is written
    total = sum(f.stat().st_size for f in files)
    writer = CorpusWriter(
        out, get_tokenizer(tokenizer), buckets=buckets or auto_buckets(total), overwrite=overwrite
    )
    summary = ImportSummary(Path(out), files=len(files), bytes=total)
    sources: list[dict[str, Any]] = []
    started = time.perf_counter()
    bar = tqdm(total=total, unit="B", unit_scale=True, desc="import", disable=not progress)
    for path in files:
        name, items = read_file(path, fmt, max_message_bytes)
        per_file: Counter[str] = Counter()
        for item in items:
            accepted = _accept(item, writer) if isinstance(item, Session) else item
            if isinstance(accepted, Reject):
                accepted.source_format = accepted.source_format or name
                writer.add_reject(accepted)
                summary.rejected[accepted.reason] += 1
                per_file["rejects"] += 1
                if len(summary.examples) < 5:
                    summary.examples.append(
                        f"{accepted.where()}: {accepted.reason}: {accepted.detail[:160]}"
                    )
            else:
                per_file["sessions"] += 1
                per_file["messages"] += accepted
        sources.append(
            {
                "path": str(path),
                "format": name,
                "bytes": path.stat().st_size,
                "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                "sessions": per_file["sessions"],
                "rejects": per_file["rejects"],
            }
        )
        if name:
            summary.by_format[name] += per_file["sessions"]
        bar.update(path.stat().st_size)
    bar.close()
    writer.close(sources)
    summary.sessions = writer.counts.sessions
    summary.messages = writer.counts.messages
    summary.tokens = writer.counts.tokens
    summary.seconds = time.perf_counter() - started
    return summary


def _accept(session: Session, writer: CorpusWriter) -> Reject | int:
    """Write one validated session; the number of messages written, or why it was refused."""
    duplicate = writer.add(session)
    return duplicate if duplicate is not None else len(session.messages)
