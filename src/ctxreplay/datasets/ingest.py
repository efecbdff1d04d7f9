"""``ctxreplay import``: trace files in, a corpus folder out, and a summary a person can read.

The import never stops for what a file holds. Formats are detected first, for every file, before
anything is written: a file two formats fit equally well stops the import with a question
(``AmbiguousFormat``: say ``--format``). Then each record of each file becomes a session, a reject
(file, record, line, JSON path, reason, raw bytes) or a skip counted by reason; a file that fails
as a whole (unreadable, or an importer bug) becomes a reject and the next file is read. Every
file is accounted for: records seen = sessions + rejects + skipped, in the manifest's ``sources``
and in ``ctxreplay info``. The corpus is built beside its folder and renamed into place at the
end, so a failed or killed import leaves no half corpus.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from .importers import AmbiguousFormat, detect, get_importer, importers
from .importers.reader import file_sha256
from .messages import Session
from .rejects import SKIPS, Reject, Tally, clip
from .store import DEFAULT_CHUNK_BYTES, CorpusError, CorpusWriter, auto_buckets
from .tokenizer import DEFAULT_TOKENIZER, get_tokenizer
from .validate import MAX_MESSAGE_BYTES

#: endings of files that hold JSON records: such a file that no importer recognises is an
#: ``unknown_format`` reject (its bytes kept); a file of another ending that no importer
#: recognises, or that no importer reads by its ending, is counted as not read, with the reason
JSON_SUFFIXES = (".json", ".jsonl", ".traj", ".eval")


@dataclass
class FileAccount:
    """What became of one file's records: records seen = sessions + rejects + skipped."""

    path: str
    format: str | None
    records: int = 0
    sessions: int = 0
    messages: int = 0
    rejects: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    #: reading stopped early (the rest of the file is one ``import_error`` reject)
    incomplete: bool = False

    @property
    def outcomes(self) -> int:
        return self.sessions + self.rejects + sum(self.skipped.values())

    @property
    def unaccounted(self) -> int:
        """Records seen that became nothing: always 0 (anything else is a bug)."""
        return self.records - self.outcomes

    def source(self, path: Path) -> dict[str, Any]:
        """The file's entry in the manifest's ``sources``."""
        try:
            size, digest = path.stat().st_size, file_sha256(path)
        except OSError:
            size, digest = 0, None
        out: dict[str, Any] = {
            "path": self.path,
            "format": self.format,
            "bytes": size,
            "sha256": digest,
            "records": self.records,
            "sessions": self.sessions,
            "rejects": self.rejects,
            "skipped": dict(sorted(self.skipped.items())),
        }
        if self.incomplete:
            out["incomplete"] = True
        return out


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
    skipped: Counter[str] = field(default_factory=Counter)
    records: int = 0
    accounts: list[FileAccount] = field(default_factory=list)
    #: files not read, by reason (``not a trace file: *.md``)
    not_read: Counter[str] = field(default_factory=Counter)

    @property
    def rejects(self) -> int:
        return sum(self.rejected.values())

    @property
    def unaccounted(self) -> int:
        return sum(a.unaccounted for a in self.accounts)

    def render(self) -> str:
        lines = [
            f"imported {self.sessions:,} sessions, {self.messages:,} messages, {self.tokens:,} tokens "
            f"from {self.files} files ({self.bytes / 1e6:.1f} MB) in {self.seconds:.1f}s → {self.corpus}",
        ]
        if self.by_format:
            lines.append(
                "  by format: " + ", ".join(f"{k} {v}" for k, v in sorted(self.by_format.items()))
            )
        if self.not_read:
            n = sum(self.not_read.values())
            lines.append(
                f"not read: {n:,} file{'s' if n != 1 else ''} ("
                + ", ".join(f"{why}: {k:,}" for why, k in sorted(self.not_read.items()))
                + "; name a file with --format to read it as that format)"
            )
        skipped = sum(self.skipped.values())
        lines.append(
            f"records seen {self.records:,} = {self.sessions:,} sessions + {self.rejects:,} rejects"
            f" + {skipped:,} other records"
            + (" (read, and not a session of their own):" if skipped else "")
        )
        for reason, n in sorted(self.skipped.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"  {n:>9,} {reason}: {SKIPS.get(reason, reason)}")
        if self.unaccounted:
            lines.append(f"  {self.unaccounted} records unaccounted for: a bug, please report it")
        if self.rejected:
            lines.append(f"rejected {self.rejects} records:")
            for reason, n in self.rejected.most_common():
                lines.append(f"  {reason:<24} {n}")
            for example in self.examples[:5]:
                lines.append(f"  e.g. {example}")
            if self.sessions:  # a corpus of nothing is not kept (``ctxreplay import``)
                lines.append(
                    f'  (raw records kept: ctxreplay sql {self.corpus} "SELECT * FROM rejects")'
                )
        else:
            lines.append("rejected 0 records")
        return "\n".join(lines)


def not_a_trace_file(path: Path) -> str:
    """Why a file is not read: the reason the import summary counts it under."""
    return f"not a trace file: *{path.suffix}" if path.suffix else "not a trace file: no ending"


def trace_suffixes(fmt: str | None = None) -> frozenset[str]:
    """Endings of files a folder walk offers to detection (with ``fmt``: to that importer)."""
    if fmt is not None:
        return frozenset((*importers.get(fmt).suffixes, *JSON_SUFFIXES))
    return frozenset(s for _name, cls in importers.items() for s in cls.suffixes) | frozenset(
        JSON_SUFFIXES
    )


def walk(
    paths: Iterable[str | os.PathLike[str]], fmt: str | None = None
) -> tuple[list[Path], Counter[str]]:
    """Files named, and the files under folders named whose ending some importer reads (``fmt``:
    the forced importer), in a stable order; and the other files under those folders, counted
    by the reason they are not read (``not a trace file: *.md``)."""
    wanted = trace_suffixes(fmt)
    out: list[Path] = []
    not_read: Counter[str] = Counter()
    for raw in paths:
        p = Path(raw)
        if not p.is_dir():
            out.append(p)
            continue
        for f in sorted(f for f in p.rglob("*") if f.is_file()):
            if f.suffix in wanted:
                out.append(f)
            else:
                not_read[not_a_trace_file(f)] += 1
    return list(dict.fromkeys(out)), not_read


def expand(paths: Iterable[str | os.PathLike[str]], fmt: str | None = None) -> list[Path]:
    """The files ``walk`` reads."""
    return walk(paths, fmt)[0]


def formats_found(paths: Iterable[str | os.PathLike[str]]) -> Counter[str]:
    """Files by the format their content looks like (``none`` for none, ``ambiguous``): what
    to tell a user whose forced ``--format`` read nothing."""
    found: Counter[str] = Counter()
    for path in expand(paths):
        try:
            found[detect(path) or "none"] += 1
        except AmbiguousFormat:
            found["ambiguous"] += 1
        except OSError:
            found["unreadable"] += 1
    return found


def detect_formats(files: list[Path], fmt: str | None) -> dict[Path, str | None]:
    """The format of every file (``fmt`` when given); raises ``AmbiguousFormat`` for the first
    file two formats fit equally well, before anything is written."""
    if fmt is not None:
        return dict.fromkeys(files, fmt)
    out: dict[Path, str | None] = {}
    for path in files:
        try:
            out[path] = detect(path)
        except OSError:
            out[path] = None  # reading the file will say why
    return out


def _unknown(path: Path) -> Reject:
    try:
        raw = path.read_bytes()
    except OSError as e:
        return Reject(str(path), "unreadable_file", str(e), b"")
    if not raw.strip():
        return Reject(str(path), "empty_file", f"the file is empty ({len(raw)} bytes)", raw)
    detail = f"no importer recognises this file (formats: {', '.join(importers.names())})"
    return Reject(str(path), "unknown_format", detail, raw)


def read_file(
    path: Path, fmt: str | None, max_message_bytes: int = MAX_MESSAGE_BYTES
) -> tuple[str | None, Iterator[Session | Reject]]:
    """The format and the items of one file (``fmt`` None: detected)."""
    name = fmt or detect(path)
    if name is None:
        return None, iter([_unknown(path)])
    importer = get_importer(name)
    importer.max_message_bytes = max_message_bytes
    return name, importer.read(path)


def account_file(
    path: Path,
    name: str | None,
    take: Any,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
) -> FileAccount:
    """Read one file, hand each session and reject to ``take(item) -> Reject | int | None``
    (a reject when the session was refused, else the messages it stored) and account for every
    record. Never raises for what the file holds."""
    account = FileAccount(str(path), name)
    if name is None:
        take(_unknown(path))
        account.records = account.rejects = 1
        return account
    tally = Tally()
    try:
        importer = get_importer(name)
        importer.max_message_bytes = max_message_bytes
        tally = importer.tally
        for item in importer.read(path):
            if isinstance(item, Session):
                outcome = take(item)
                if isinstance(outcome, Reject):
                    account.rejects += 1
                else:
                    account.sessions += 1
                    account.messages += outcome or 0
            elif isinstance(item, Reject):
                item.source_format = item.source_format or name
                take(item)
                account.rejects += 1
            else:
                take(
                    Reject(
                        str(path),
                        "import_error",
                        f"the importer produced a {type(item).__name__}",
                        b"",
                        name,
                    )
                )
                account.rejects += 1
    except Exception as e:  # the importer itself failed: the rest of the file is one reject
        done = account.sessions + account.rejects + sum(tally.skipped.values())
        take(
            Reject(
                str(path),
                "import_error",
                clip(
                    f"reading stopped after {done} records: {type(e).__name__}: {e} "
                    "(the rest of the file is not imported)"
                ),
                b"",
                name,
            )
        )
        account.rejects += 1
        account.skipped.update(tally.skipped)
        account.records = account.outcomes
        account.incomplete = True
        return account
    account.skipped.update(tally.skipped)
    account.records = tally.seen or account.outcomes
    return account


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
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
) -> ImportSummary:
    """Import trace files into a corpus folder. Files are read record by record and the corpus
    is written a part at a time, so memory follows ``chunk_bytes`` (rows held before a part is
    written) and the largest record, not the size of the input."""
    if fmt is not None:
        importers.get(fmt)  # unknown names fail before anything is written
    files, not_read = walk(paths, fmt)
    missing = [f for f in files if not f.exists()]
    if missing:
        raise CorpusError(f"no such file: {missing[0]}")
    target = Path(out)
    if target.exists() and (not target.is_dir() or any(target.iterdir())) and not overwrite:
        raise CorpusError(f"{target} exists and is not empty (use --overwrite)")
    formats = detect_formats(files, fmt)  # an ambiguous file stops the import here
    for path in [f for f in files if formats[f] is None and f.suffix not in JSON_SUFFIXES]:
        files.remove(path)  # no importer recognises it, and it does not hold JSON records
        not_read[not_a_trace_file(path)] += 1
    total = sum(_size(f) for f in files)
    summary = ImportSummary(target, files=len(files), bytes=total, not_read=not_read)
    started = time.perf_counter()
    with CorpusWriter(
        target,
        get_tokenizer(tokenizer),
        buckets=buckets or auto_buckets(total),
        overwrite=overwrite,
        chunk_bytes=chunk_bytes,
    ) as writer:
        bar = tqdm(total=total, unit="B", unit_scale=True, desc="import", disable=not progress)
        by_location: dict[str, FileAccount] = {}

        def take(item: Session | Reject) -> Reject | int:
            if isinstance(item, Session):
                try:
                    refused = writer.add(item)
                except Exception as e:
                    refused = Reject(
                        item.source_location,
                        "import_error",
                        clip(f"the session could not be written: {type(e).__name__}: {e}"),
                        b"",
                        item.source_format,
                        item.source_record,
                        session_id=item.source_session_id,
                    )
                if refused is None:
                    return len(item.messages)
                item = refused
            writer.add_reject(item)
            summary.rejected[item.reason] += 1
            if len(summary.examples) < 5:
                summary.examples.append(f"{item.where()}: {item.reason}: {item.detail[:160]}")
            return item

        for path in files:
            account = account_file(path, formats[path], take, max_message_bytes)
            summary.accounts.append(account)
            by_location[account.path] = account
            _late(writer, by_location, summary)
            bar.update(_size(path))
        bar.close()
        writer.flush()
        _late(writer, by_location, summary)
        writer.close(
            [a.source(Path(a.path)) for a in summary.accounts],
            **({"not_read": dict(sorted(not_read.items()))} if not_read else {}),
        )
    for account in summary.accounts:
        summary.records += account.records
        summary.skipped.update(account.skipped)
        if account.format:
            summary.by_format[account.format] += account.sessions
    summary.sessions = writer.counts.sessions
    summary.messages = writer.counts.messages
    summary.tokens = writer.counts.tokens
    summary.seconds = time.perf_counter() - started
    return summary


def _late(writer: CorpusWriter, accounts: dict[str, FileAccount], summary: ImportSummary) -> None:
    """Sessions the writer could not store after all: move them from sessions to rejects."""
    for reject in writer.take_late_rejects():
        summary.rejected[reject.reason] += 1
        account = accounts.get(reject.source_location)
        if account is not None:
            account.sessions -= 1
            account.rejects += 1


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
