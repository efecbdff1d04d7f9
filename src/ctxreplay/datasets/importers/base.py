"""What every importer shares: the plugin contract and tolerant JSON reading.

An importer turns one file into ``Session`` objects and ``Reject`` records. It never raises for
bad content: a record it cannot read becomes a reject carrying the file, the record index or line,
the JSON path, the reason and the record's exact bytes, and reading goes on with the next record.
Any exception while a record is read, converted or validated (a recursion limit, an overflow, a
bug) becomes a reject of that record; nothing a record holds can stop the file.

Every importer counts what it reads in its ``tally``: records seen (JSONL lines, array elements,
the document, or the units a format is made of: tau2 simulations, OTel spans) and records skipped
by reason (``rejects.SKIPS``), so the import can check that each record seen became a session, a
reject or a counted skip.

Reading is tolerant: JSON nested deeper than ``MAX_JSON_DEPTH`` and strings holding bytes that
are not UTF-8 reject their record; a top-level array is read element by element past a malformed
element (the malformed stretch becomes one reject, its bytes kept); UTF-16/32 files are decoded.
Reading streams: JSONL line by line and top-level arrays element by element, so memory follows the
largest record, not the file (UTF-16/32 files and one-document formats are read whole).
"""

from __future__ import annotations

import codecs
import hashlib
import json
import math
import re
import typing
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, ClassVar

from ...registry import Registry
from ..messages import Part, Session
from ..rejects import MAX_JSON_DEPTH, RecordError, Reject, Tally, clip, inspect_value
from ..validate import MAX_MESSAGE_BYTES, UNKNOWN_PART_MIME, validate_session
from .sniffing import SNIFF_BYTES, decode_bytes, looks_like_jsonl

__all__ = ["MAX_JSON_DEPTH", "SNIFF_BYTES"]

_decoder = json.JSONDecoder()


def sub_record(index: int, value: Any, line: int | None = None) -> Record:
    """A record nested inside a document (a tau2 simulation): its raw bytes are its JSON."""
    try:
        raw = json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogateescape")
    except (ValueError, RecursionError, UnicodeEncodeError):
        raw = repr(value).encode("utf-8", "backslashreplace")[:65536]
    return Record(index, value, raw, line)


class Record:
    """One JSON record of a file: a JSONL line, an element of a top-level array, or the document.

    ``raw`` is the record's exact bytes. A line streamed from a JSONL file keeps only where its
    bytes are (``where``: file, offset, length) and reads them back when asked, for a reject: a
    long line is not held twice, as bytes and as its parsed value, while it becomes a session.
    """

    __slots__ = ("_raw", "_where", "index", "line", "value")

    def __init__(
        self,
        index: int,
        value: Any,
        raw: bytes = b"",
        line: int | None = None,
        *,
        where: tuple[Path, int, int] | None = None,
    ) -> None:
        self.index = index
        self.value = value
        self.line = line
        self._raw = raw
        self._where = where

    @property
    def raw(self) -> bytes:
        if self._where is None:
            return self._raw
        path, offset, size = self._where
        try:
            with path.open("rb") as f:
                f.seek(offset)
                return f.read(size)
        except OSError:
            return b""

    @raw.setter
    def raw(self, raw: bytes) -> None:
        self._raw, self._where = raw, None

    def __repr__(self) -> str:
        return f"Record(index={self.index!r}, value={self.value!r}, line={self.line!r})"


#: a UUID, as agents name their session files with one
UUID_PATTERN = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)


def uuid_in_name(path: Path) -> str:
    """The session id a log's file name carries (its last UUID), else the name itself."""
    found = UUID_PATTERN.findall(path.stem)
    return found[-1] if found else path.stem


def raising(e: Exception) -> list[Session]:
    """A ``guarded`` producer that fails with ``e``: a record already known bad becomes its reject."""
    raise e


def exception_reason(e: BaseException) -> tuple[str, str]:
    """The reject reason and detail of an exception raised while reading one record."""
    if isinstance(e, RecordError):
        return e.reason, e.detail
    if isinstance(e, RecursionError):
        return "nesting_too_deep", f"the record nests too deep to read ({e})"
    if isinstance(e, OverflowError):
        return "out_of_range", f"a number is out of range: {e}"
    if isinstance(e, TypeError | KeyError | AttributeError | ValueError | IndexError):
        return "malformed", clip(f"{type(e).__name__}: {e}")
    return "import_error", clip(f"{type(e).__name__}: {e}")


class Importer:
    """Base class of importers; subclasses register with ``@importers.register(name)``."""

    name: ClassVar[str] = ""
    #: file endings this format uses (for detection; content decides, the ending only helps)
    suffixes: ClassVar[tuple[str, ...]] = (".json", ".jsonl")
    #: more general formats whose files this one's may also be: where this importer is sure of
    #: a file, they step back (``importers.scores``)
    refines: ClassVar[tuple[str, ...]] = ()

    #: set by the caller; a larger message rejects its session (``oversize_message``)
    max_message_bytes: int = MAX_MESSAGE_BYTES
    #: a tool result whose call is not in the session: ``reject`` it, or keep it ``as_text``
    #: (formats whose logs legitimately start after calls: ``validate.validate_session``)
    orphan_results: ClassVar[str] = "reject"

    @property
    def tally(self) -> Tally:
        """Records seen and skipped since this importer was made (one importer reads one file)."""
        found = self.__dict__.get("_tally")
        if found is None:
            found = self.__dict__["_tally"] = Tally()
        return found

    def sniff(self, path: Path, head: bytes) -> float:
        """Confidence in [0, 1] that ``path`` is in this format, from its first bytes.

        Built-in importers parse the first records (``sniffing.sample_of``) and score their keys
        and shapes, never substrings of the text.
        """
        return 0.0

    def read(self, path: Path) -> Iterator[Session | Reject]:
        """Yield sessions and rejects; never raise for bad content."""
        for record in self.records(path):
            if isinstance(record, Reject):
                yield record
                continue
            yield from self.guarded(
                path, record, lambda rec=record: self.sessions_from_record(path, rec)
            )

    def records(self, path: Path, check_utf8: bool = True) -> Iterator[Record | Reject]:
        """The file's records (``iter_records``), each counted as seen."""
        for record in iter_records(path, self.name, check_utf8):
            self.tally.seen += 1
            yield record

    def document(self, path: Path, check_utf8: bool = True) -> Record | Reject:
        """The whole file as one record, counted as seen."""
        self.tally.seen += 1
        return whole_document(path, self.name, check_utf8)

    def sessions_from_record(self, path: Path, record: Record) -> Iterator[Session]:
        """Sessions of one record; an importer overrides this, or ``read`` as a whole."""
        raise TypeError(f"{type(self).__name__} overrides neither sessions_from_record nor read")

    def guarded(
        self, path: Path, record: Record, produce: Callable[..., Iterable[Session]]
    ) -> Iterator[Session | Reject]:
        """Run ``produce()``, validate what it made, and turn any failure into a reject."""
        try:
            sessions = [self.validated(s) for s in produce()]
        except Exception as e:
            reason, detail = exception_reason(e)
            where = e.json_path if isinstance(e, RecordError) else "$"
            yield self.reject(path, record, reason, detail, where)
            return
        self.tally.seen += max(0, len(sessions) - 1)  # a record of k sessions counts as k
        if not sessions:
            self.tally.skip("no_session")
        yield from sessions

    def validated(self, session: Session) -> Session:
        """``validate_session`` with this importer's limits and orphan rule."""
        return validate_session(session, self.max_message_bytes, self.orphan_results)

    def reject(
        self,
        path: Path,
        record: Record | None,
        reason: str,
        detail: str,
        json_path: str | None = None,
    ) -> Reject:
        source_id = source_id_of(record.value) if record is not None else None
        return Reject(
            source_location=str(path),
            reason=reason,
            detail=clip(detail),
            raw=record.raw if record is not None else b"",
            source_format=self.name,
            record=record.index if record is not None else None,
            line=record.line if record is not None else None,
            session_id=source_id,
            json_path=json_path,
        )


#: modules of the built-in formats, imported on the first lookup (like policies and judges)
BUILTIN = (
    "tau2_bench",
    "tau_bench",
    "swe_agent",
    "openhands",
    "otel_genai",
    "anthropic_messages",
    "openai_chat",
    "claude_code",
    "codex_cli",
    "openai_responses",
    "inspect_ai",
    "gemini_cli",
    "cline",
    "aider",
    "opencode",
    "goose",
    "langfuse",
    "phoenix",
    "langsmith",
)
importers: Registry[type[Importer]] = Registry(
    "importer", "ctxreplay.importers", tuple(f"ctxreplay.datasets.importers.{m}" for m in BUILTIN)
)


# --- reading JSON tolerantly ---------------------------------------------------------------
#
# Files are read as a stream: JSONL line by line, a top-level array element by element through a
# window of decoded text that slides forward, so memory follows the largest record, not the file.
# Positions, line numbers, parse errors and raw bytes are those of the whole text. UTF-16/32 files
# (rare) and single-document files are read whole.

#: bytes read from a file at a time
BLOCK_BYTES = 1 << 20
#: a parse error this close to the end of the text read so far may come from the cut, not the data
_NEAR_END = 16
_SPACE = " \t\r\n"
_WIDE_BOMS = (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def file_sha256(path: Path) -> str:
    """The sha256 of a file, read block by block (trace files can be larger than memory)."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(BLOCK_BYTES):
            digest.update(block)
    return digest.hexdigest()


def read_text(path: Path) -> tuple[bytes, str]:
    """The file's bytes and their text; undecodable bytes survive as surrogates (lossless)."""
    data = path.read_bytes()
    return data, decode_bytes(data)


def _raw(text: str) -> bytes:
    """Text read from a file back as bytes (undecodable bytes as they were)."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # lone surrogates of a UTF-16 file
        return text.encode("utf-8", "surrogatepass")


def find_bad_utf8(value: Any, path: str = "$") -> str | None:
    """JSON path of the first string holding undecodable bytes, or None."""
    problem = inspect_value(value, max_depth=1 << 30, root=path)
    return problem[1] if problem else None


def source_id_of(value: Any) -> str | None:
    """The source's own session id of a record, when it names one."""
    if isinstance(value, dict):
        for key in ("session_id", "id", "instance_id", "task_id", "conversation_id"):
            found = value.get(key)
            if isinstance(found, str | int) and not isinstance(found, bool):
                try:
                    return str(found)[:1000]
                except ValueError:  # an integer with more digits than Python prints
                    return None
    return None


def _checked(record: Record, fmt: str, path: Path, check_utf8: bool = True) -> Record | Reject:
    """The record, or its reject when it nests too deep or (``check_utf8``) is not UTF-8."""
    problem = inspect_value(record.value, utf8=check_utf8)
    if problem is None:
        return record
    reason, json_path = problem
    detail = (
        "the record contains bytes that are not valid UTF-8"
        if reason == "invalid_utf8"
        else f"the record nests JSON deeper than {MAX_JSON_DEPTH} levels"
    )
    return Reject(
        source_location=str(path),
        reason=reason,
        detail=detail,
        raw=record.raw,
        source_format=fmt,
        record=record.index,
        line=record.line,
        session_id=source_id_of(record.value),
        json_path=json_path,
    )


def loads(text: str) -> Any:
    """``json.loads``, with a value nested past the recursion limit as a ``RecordError``."""
    try:
        return json.loads(text)
    except RecursionError:
        raise RecordError(
            "nesting_too_deep", f"JSON nested deeper than {MAX_JSON_DEPTH} levels"
        ) from None


def _parse_failure(e: BaseException, truncated: bool) -> tuple[str, str]:
    if isinstance(e, RecordError | RecursionError):
        return "nesting_too_deep", f"JSON nested deeper than {MAX_JSON_DEPTH} levels"
    if truncated:
        return "truncated", f"file ends inside this record: {e}"
    return "invalid_json", clip(f"not JSON: {e}")


def _utf8() -> codecs.IncrementalDecoder:
    """A UTF-8 decoder for text read block by block; undecodable bytes become surrogates."""
    return codecs.getincrementaldecoder("utf-8")("surrogateescape")


def _is_wide(head: bytes) -> bool:
    """Whether ``decode_bytes`` may read a file starting with ``head`` as UTF-16/32."""
    if head.startswith(codecs.BOM_UTF8):
        return False
    if head.startswith(_WIDE_BOMS):
        return True
    return len(head) >= 4 and (
        bool(head[0] and not head[1] and not head[3] and head[2])
        or bool(not head[0] and head[1] and not head[2] and head[3])
    )


def _lines(f: BinaryIO) -> Iterator[tuple[bytes, bool, int]]:
    """The lines of a binary file from where it stands, without their ``\\n``, each with whether
    the file ends in it without a newline (only the last line can) and its offset. A line is
    built once, from the blocks it spans, and not referenced here once handed out."""
    pieces: list[bytes] = []
    at = f.tell()
    while block := f.read(BLOCK_BYTES):
        start = 0
        while (newline := block.find(b"\n", start)) >= 0:
            held = sum(len(p) for p in pieces)
            if pieces:
                pieces.append(block[start:newline])
                pieces = [b"".join(pieces)]
                yield pieces.pop(), False, at
            else:
                yield block[start:newline], False, at
            at += held + newline - start + 1
            start = newline + 1
        if start < len(block):
            pieces.append(block[start:] if start else block)
    if pieces:
        pieces = [b"".join(pieces)]
        yield pieces.pop(), True, at


def _leading_space(f: BinaryIO) -> str | None:
    """The whitespace the text starts with from where ``f`` stands (``str.lstrip``'s), or None
    when there is nothing else."""
    decoder = _utf8()
    space: list[str] = []
    while True:
        block = f.read(BLOCK_BYTES)
        text = decoder.decode(block, final=not block)
        stripped = text.lstrip()
        if stripped:
            space.append(text[: len(text) - len(stripped)])
            return "".join(space)
        if not block:
            return None
        space.append(text)


def _any_content(f: BinaryIO) -> bool:
    """Whether the text from where ``f`` stands holds anything but whitespace."""
    decoder = _utf8()
    while True:
        block = f.read(BLOCK_BYTES)
        text = decoder.decode(block, final=not block)
        if text and not text.isspace():
            return True
        if not block:
            return False


def _looks_like_jsonl(f: BinaryIO, at: int) -> bool:
    """``sniffing.looks_like_jsonl`` of the text from byte ``at`` on. The first line is found
    block by block and parsed only when text follows it: a compact array on one line is never
    held whole."""
    f.seek(at)
    length = 0
    while True:
        block = f.read(BLOCK_BYTES)
        if not block:
            return False  # one line: not JSONL
        newline = block.find(b"\n")
        if newline >= 0:
            length += newline
            break
        length += len(block)
    f.seek(at + length + 1)
    if not _any_content(f):
        return False
    f.seek(at)
    try:
        json.loads(f.read(length).decode("utf-8", "surrogateescape"))
    except (ValueError, RecursionError):
        return False
    return True


def iter_records(path: Path, fmt: str, check_utf8: bool = True) -> Iterator[Record | Reject]:
    """Records of a JSON or JSONL file: lines, top-level array elements, or the whole document.

    JSONL and arrays are streamed (UTF-8 files; UTF-16/32 ones are decoded whole). Text after the
    closing bracket of a top-level array is rejected (``invalid_json``), not dropped.
    """
    try:
        f = path.open("rb")
    except OSError as e:
        yield Reject(str(path), "unreadable_file", str(e), b"", fmt)
        return
    with f:
        try:
            head = f.read(4)
            if _is_wide(head):
                data = head + f.read()
                yield from _text_records(path, fmt, data, decode_bytes(data), check_utf8)
                return
            offset = len(codecs.BOM_UTF8) if head.startswith(codecs.BOM_UTF8) else 0
            f.seek(offset)
            space = _leading_space(f)
        except OSError as e:
            yield Reject(str(path), "unreadable_file", str(e), b"", fmt)
            return
        if space is None:
            f.seek(0)
            yield Reject(str(path), "empty_session", "the file is empty", f.read(), fmt)
            return
        at = offset + len(space.encode("utf-8", "surrogateescape"))
        if path.suffix == ".jsonl" or _looks_like_jsonl(f, at):
            f.seek(offset)
            yield from _jsonl_records(_lines(f), path, fmt, check_utf8)
            return
        f.seek(at)
        if f.read(1) == b"[":
            f.seek(offset)
            yield from _array_records(_Window(source=f), len(space), path, fmt, check_utf8)
            return
    try:
        data, text = read_text(path)
    except OSError as e:
        yield Reject(str(path), "unreadable_file", str(e), b"", fmt)
        return
    yield _document(path, fmt, data, text, check_utf8)


def _text_records(
    path: Path, fmt: str, data: bytes, text: str, check_utf8: bool
) -> Iterator[Record | Reject]:
    """``iter_records`` of a file decoded whole (UTF-16/32)."""
    stripped = text.lstrip()
    if not stripped:
        yield Reject(str(path), "empty_session", "the file is empty", data, fmt)
        return
    if path.suffix == ".jsonl" or looks_like_jsonl(stripped):
        lines = text.split("\n")
        last = len(lines) - 1
        yield from _jsonl_records(
            ((line, i == last, None) for i, line in enumerate(lines)), path, fmt, check_utf8
        )
        return
    if stripped[0] == "[":
        yield from _array_records(_Window(text), len(text) - len(stripped), path, fmt, check_utf8)
        return
    yield _document(path, fmt, data, text, check_utf8)


def first_array_element(path: Path, fmt: str) -> Any:
    """The first element of a file that is a top-level JSON array (not JSONL), else None: how
    formats whose whole file is one session (a message or item list) recognise it."""
    if path.suffix == ".jsonl":
        return None
    try:
        with path.open("rb") as f:
            head = f.read(4096)
    except OSError:
        return None
    if not head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"["):
        return None
    first = next(iter_records(path, fmt), None)
    return first.value if isinstance(first, Record) else None


def iter_jsonl(path: Path, fmt: str, check_utf8: bool = True) -> Iterator[Record | Reject]:
    """The lines of a JSONL file as records, read line by line."""
    try:
        f = path.open("rb")
    except OSError as e:
        yield Reject(str(path), "unreadable_file", str(e), b"", fmt)
        return
    with f:
        if f.read(len(codecs.BOM_UTF8)) != codecs.BOM_UTF8:
            f.seek(0)
        yield from _jsonl_records(_lines(f), path, fmt, check_utf8)


def _jsonl_records(
    lines: Iterable[tuple[bytes | str, bool, int | None]],
    path: Path,
    fmt: str,
    check_utf8: bool,
) -> Iterator[Record | Reject]:
    """Records of JSONL lines: bytes as read with their offset in the file, or text of a file
    decoded whole; each with whether the file ends in it without a newline (then a parse failure
    is ``truncated``). Of a long line, only its parsed value is held while it is used."""
    index = number = 0
    for line, cut, at in lines:  # not ``enumerate``: its cached tuple would hold the line
        number += 1
        if isinstance(line, bytes):
            size, text = len(line), line.decode("utf-8", "surrogateescape")
            del line  # the bytes can be read again from the file, if the record is rejected
        else:
            size, text = -1, line
        if not text or text.isspace():
            continue
        try:
            value = loads(text)
        except (ValueError, RecordError) as e:
            reason, detail = _parse_failure(e, cut)
            item: Record | Reject = Reject(
                str(path), reason, detail, _raw(text), fmt, index, number, None, "$"
            )
        else:
            if at is None:
                record = Record(index, value, _raw(text), number)
            else:
                record = Record(index, value, line=number, where=(path, at, size))
            item = _checked(record, fmt, path, check_utf8)
            del value, record
        text = ""
        yield item
        del item
        index += 1


class _Window:
    """Text of a file decoded as it is read, seen from a position that only moves forward: text
    before the element being read is dropped, so a long array costs one element's memory.
    Positions are relative to the window; ``base``, ``line`` and ``column`` place it in the file,
    so line numbers and parse errors read as they would on the whole text."""

    def __init__(self, text: str = "", source: BinaryIO | None = None) -> None:
        self.text = text
        self.source = source
        self.decoder = _utf8()
        self.eof = source is None
        self.base = 0  # characters of the file before the window
        self.line = 1  # line number at the window's start
        self.column = 0  # characters between the last newline before the window and its start
        self._cursor = 0
        self._cursor_line = 1

    def extend(self, at_least: int = BLOCK_BYTES) -> bool:
        """Read at least ``at_least`` more bytes (fewer at the end); False at the end."""
        if self.eof or self.source is None:
            return False
        parts, got = [self.text], 0
        while got < at_least:
            block = self.source.read(max(BLOCK_BYTES, at_least - got))
            parts.append(self.decoder.decode(block, final=not block))
            if not block:
                self.eof = True
                break
            got += len(block)
        self.text = "".join(parts)
        return True

    def has(self, pos: int) -> bool:
        """Whether the file has text at ``pos``, reading on as needed."""
        while pos >= len(self.text):
            if not self.extend():
                return False
        return True

    def skip(self, pos: int, chars: str) -> int:
        """The first position at or after ``pos`` not in ``chars`` (the end at the end)."""
        while True:
            n = len(self.text)
            while pos < n and self.text[pos] in chars:
                pos += 1
            if pos < n or not self.extend():
                return pos

    def slide(self, pos: int) -> int:
        """Drop the text before ``pos`` once there is enough of it; how far positions moved."""
        if self.source is None or pos < BLOCK_BYTES:
            return 0
        line = self.line_at(pos)
        newline = self.text.rfind("\n", 0, pos)
        self.column = pos - newline - 1 if newline >= 0 else self.column + pos
        self.line, self.base = line, self.base + pos
        self.text = self.text[pos:]
        self._cursor, self._cursor_line = 0, line
        return pos

    def line_at(self, pos: int) -> int:
        """Line number of position ``pos``, counted forward incrementally."""
        if pos < self._cursor:
            self._cursor, self._cursor_line = 0, self.line
        self._cursor_line += self.text.count("\n", self._cursor, pos)
        self._cursor = pos
        return self._cursor_line

    def parse(self, pos: int) -> tuple[Any, int] | BaseException:
        """``raw_decode`` at ``pos``, reading on while the end of the text read so far could
        be why it failed (or where a number might go on); the failure as it would read on the
        whole text."""
        while True:
            try:
                value, stop = _decoder.raw_decode(self.text, pos)
            except (ValueError, RecursionError) as e:
                if not self.eof and _maybe_cut(e, len(self.text)):
                    self.extend(max(BLOCK_BYTES, len(self.text) - pos))
                    continue
                return self.absolute(e)
            near_end = stop + _NEAR_END >= len(self.text)
            if near_end and not self.eof and type(value) in (int, float):
                self.extend(max(BLOCK_BYTES, len(self.text) - pos))
                continue
            return value, stop

    def region_end(self, pos: int, template: Any) -> int:
        """``_resync`` at ``pos``, with as much text read as it looks at."""
        while True:
            found = _balanced_end(self.text, pos)
            if found is not None or not self.extend(max(BLOCK_BYTES, len(self.text) - pos)):
                return _resync(self.text, pos, template, found)

    def absolute(self, e: BaseException) -> BaseException:
        """A JSON error with the line, column and position it has in the whole text."""
        if self.base == 0 or not isinstance(e, json.JSONDecodeError):
            return e
        line = self.line + e.lineno - 1
        column = e.colno + self.column if e.lineno == 1 else e.colno
        return ValueError(f"{e.msg}: line {line} column {column} (char {self.base + e.pos})")


def _maybe_cut(e: BaseException, end: int) -> bool:
    """Whether a parse failure may come from the text read so far ending, not from the data:
    the decoder stopped within a few characters of the end (a number, literal or escape cut) or
    found no closing quote."""
    if not isinstance(e, json.JSONDecodeError):
        return False
    return e.pos + _NEAR_END >= end or e.msg.startswith("Unterminated string")


def iter_json_array(
    text: str,
    start: int,
    path: Path,
    fmt: str,
    key_path: str = "$",
    check_utf8: bool = True,
    end: list[int] | None = None,
) -> Iterator[Record | Reject]:
    """Elements of the array opening at ``text[start] == '['`` (see ``_array_items``)."""
    yield from _array_items(_Window(text), start, path, fmt, key_path, check_utf8, end)


def _array_records(
    window: _Window, start: int, path: Path, fmt: str, check_utf8: bool
) -> Iterator[Record | Reject]:
    """Elements of a top-level array, then a reject for any text after its closing bracket."""
    end: list[int] = []
    count = 0
    for item in _array_items(window, start, path, fmt, "$", check_utf8, end):
        count += 1
        yield item
    if not end:
        return
    while window.extend(max(BLOCK_BYTES, len(window.text))):
        pass  # what follows the array is kept whole (it is one reject)
    rest = window.text[end[0] :]
    if rest and not rest.isspace():
        yield Reject(
            str(path),
            "invalid_json",
            f"{len(rest.strip()):,} characters after the end of the array",
            _raw(rest),
            fmt,
            count,
            window.line_at(end[0]),
            None,
            "$",
        )


def _array_items(
    window: _Window,
    start: int,
    path: Path,
    fmt: str,
    key_path: str = "$",
    check_utf8: bool = True,
    end: list[int] | None = None,
) -> Iterator[Record | Reject]:
    """Elements of the array opening at ``window.text[start] == '['``.

    A malformed element does not end the array: the stretch up to where the next element starts
    (found by bracket balance, else by the next value shaped like the elements before) becomes
    one reject with its bytes, and reading goes on. When the file ends inside the array, the
    records before the cut are kept and the cut one is rejected ``truncated``. ``end`` receives
    the position after the closing bracket, when there is one.
    """
    pos = start + 1
    index = 0
    template: Any = None
    while True:
        pos = window.skip(pos, _SPACE + ",")
        if pos >= len(window.text):
            yield Reject(
                str(path),
                "truncated",
                f"file ends inside the array after {index} records",
                b"",
                fmt,
                index,
                window.line_at(pos),
                None,
                f"{key_path}[{index}]",
            )
            return
        if window.text[pos] == "]":
            if end is not None:
                end.append(pos + 1)
            return
        pos -= window.slide(pos)
        parsed = window.parse(pos)
        if isinstance(parsed, BaseException):
            region_end = window.region_end(pos, template)
            at_end = not window.has(region_end)
            truncated = at_end and _looks_truncated(window.text, pos)
            reason, detail = _parse_failure(parsed, truncated)
            if not at_end:
                detail += " (reading goes on with the next element)"
            yield Reject(
                str(path),
                reason,
                detail,
                _raw(window.text[pos:region_end]),
                fmt,
                index,
                window.line_at(pos),
                None,
                f"{key_path}[{index}]",
            )
            index += 1
            if at_end:
                return
            pos = region_end
            continue
        value, stop = parsed
        del parsed
        if template is None:
            template = value
        record = Record(index, value, _raw(window.text[pos:stop]), window.line_at(pos))
        del value
        item = _checked(record, fmt, path, check_utf8)
        del record
        yield item
        del item
        index += 1
        pos = stop


def _balanced_end(text: str, pos: int) -> int | None:
    """Where the value starting at ``pos`` ends by bracket balance: the position of the ``,`` or
    ``]`` that follows it at its own level (or just after a stray closing bracket); None when the
    text ends first."""
    depth = 0
    in_string = escape = False
    for i in range(pos, len(text)):
        ch = text[i]
        if in_string:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"' or ch == "\n":
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
            if depth < 0:
                return i if ch == "]" else i + 1
        elif ch == "," and depth == 0:
            return i
    return None


def _resync(text: str, pos: int, template: Any, found: int | None = None) -> int:
    """Where reading can go on after a malformed array element starting at ``pos`` (``found``:
    ``_balanced_end(text, pos)`` when already known)."""
    if found is None:
        found = _balanced_end(text, pos)
    if found is not None and found > pos:
        return found
    # The brackets never balance (a lost bracket or quote): the next value shaped like the
    # elements read so far, right after a comma, starts the next element.
    opener = text[pos]
    keys = set(template) if isinstance(template, dict) else None
    cursor = pos + 1
    for _ in range(10_000):
        comma = text.find(",", cursor)
        if comma < 0:
            break
        cursor = comma + 1
        at = cursor
        while at < len(text) and text[at] in " \t\r\n":
            at += 1
        if at >= len(text) or text[at] != opener:
            continue
        try:
            value, stop = _decoder.raw_decode(text, at)
        except (ValueError, RecursionError):
            continue
        after = stop
        while after < len(text) and text[after] in " \t\r\n":
            after += 1
        if after < len(text) and text[after] not in ",]":
            continue
        if type(value) is not type(template) and template is not None:
            continue
        if keys is not None and isinstance(value, dict) and not _alike(keys, set(value)):
            continue  # a nested object, not the next element
        return at
    return len(text)


def _alike(a: set[Any], b: set[Any]) -> bool:
    """Two objects' keys are those of records of one kind (most of them shared)."""
    return bool(a | b) and len(a & b) * 2 >= len(a | b)


def _looks_truncated(text: str, pos: int) -> bool:
    """A value that never closes before the end of the file was cut, not mistyped."""
    depth = 0
    in_string = escape = False
    for ch in text[pos:]:
        if in_string:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
            if depth < 0:
                return False
    return depth > 0 or in_string


def whole_document(path: Path, fmt: str, check_utf8: bool = True) -> Record | Reject:
    """The whole file as one record (formats whose top level is one object or one session)."""
    try:
        data, text = read_text(path)
    except OSError as e:
        return Reject(str(path), "unreadable_file", str(e), b"", fmt)
    if not text.strip():
        return Reject(str(path), "empty_session", "the file is empty", data, fmt)
    return _document(path, fmt, data, text, check_utf8)


def _document(
    path: Path, fmt: str, data: bytes, text: str, check_utf8: bool = True
) -> Record | Reject:
    try:
        value = loads(text)
    except (ValueError, RecordError) as e:
        start = len(text) - len(text.lstrip())
        reason, detail = _parse_failure(e, _looks_truncated(text, start))
        return Reject(str(path), reason, detail, data, fmt, 0, None, None, "$")
    return _checked(Record(0, value, data, 1), fmt, path, check_utf8)


#: parse failures that salvaging a document member by member can get past
SALVAGEABLE = ("invalid_json", "truncated", "nesting_too_deep")


def salvage_file(
    path: Path, failed: Reject, key: str, fmt: str
) -> tuple[dict[str, Any], list[Record | Reject], list[str]] | None:
    """``salvage_member`` of a file whose document failed to parse (``failed``): None when the
    failure is not one salvaging gets past, the file cannot be read again, or ``key`` holds no
    element."""
    if failed.reason not in SALVAGEABLE:
        return None
    try:
        _data, text = read_text(path)
        found = salvage_member(text, key, path, fmt, check_utf8=False)
    except (OSError, RecursionError, ValueError):
        return None
    return found if found is not None and found[1] else None


def salvage_member(
    text: str, key: str, path: Path, fmt: str, check_utf8: bool = True
) -> tuple[dict[str, Any], list[Record | Reject], list[str]] | None:
    """A damaged document ``{...}``, member by member: the members that parse, the elements of
    array member ``key`` (read past malformed ones, like a top-level array) and the names of the
    members that did not parse. None when the text is not an object or ``key`` is not found."""
    n = len(text)
    pos = len(text) - len(text.lstrip())
    if pos >= n or text[pos] != "{":
        return None
    pos += 1
    members: dict[str, Any] = {}
    elements: list[Record | Reject] | None = None
    broken: list[str] = []
    while pos < n:
        while pos < n and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= n or text[pos] != '"':
            break
        try:
            name, pos = _decoder.raw_decode(text, pos)
        except ValueError:
            break
        while pos < n and text[pos] in " \t\r\n":
            pos += 1
        if pos >= n or text[pos] != ":":
            break
        pos += 1
        while pos < n and text[pos] in " \t\r\n":
            pos += 1
        if name == key and pos < n and text[pos] == "[":
            end: list[int] = []
            elements = list(
                iter_json_array(text, pos, path, fmt, f"$.{key}", check_utf8=check_utf8, end=end)
            )
            if not end:
                break
            pos = end[0]
            continue
        try:
            members[name], pos = _decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            broken.append(str(name))
            stop = _balanced_end(text, pos)
            if stop is None:
                break
            pos = stop + 1 if text[stop] == "," else stop
    if elements is None:
        return None
    return members, elements, broken


# --- timestamps -----------------------------------------------------------------------------

#: the latest time taken as real: the end of year 9999, in nanoseconds since 1970
MAX_NANOS = 253_402_300_799 * 1_000_000_000


class InvalidTime(ValueError):
    """A recorded time that is not a usable time."""


def nanos_of(value: Any) -> int | None:
    """A recorded time (epoch seconds, milliseconds, microseconds or nanoseconds, as a number or
    digits, or ISO 8601 text) as integer nanoseconds; None when absent; ``InvalidTime`` when it
    is there but unusable (NaN, infinite, negative, after 9999, not a time)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidTime("a boolean is not a time")
    if isinstance(value, str):
        text = value.strip()
        if text.isdigit():
            value = int(text)
        else:
            try:
                moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
            except ValueError:
                raise InvalidTime(f"{value[:40]!r} is not a time") from None
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
            try:
                return int(moment.timestamp() * 1_000_000_000)
            except (OverflowError, ValueError, OSError):
                raise InvalidTime(f"{value[:40]!r} is out of range") from None
    if not isinstance(value, int | float):
        raise InvalidTime(f"a {type(value).__name__} is not a time")
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidTime(f"{value} is not a time")
    if value < 0:
        raise InvalidTime(f"{value} is before 1970")
    scale = 1 if value >= 1e17 else 1_000 if value >= 1e14 else 1_000_000 if value >= 1e11 else 0
    nanos = int(value) * scale if scale else int(value * 1_000_000_000)
    if nanos > MAX_NANOS:
        raise InvalidTime(f"{value} is after the year 9999")
    return nanos


def iso_of_nanos(nanos: int) -> str:
    moment = datetime.fromtimestamp(nanos // 1_000_000_000, UTC)
    rest = nanos % 1_000_000_000
    if rest:
        moment = moment.replace(microsecond=rest // 1000)
    return moment.isoformat().replace("+00:00", "Z")


def timestamp_of(value: Any) -> tuple[str | None, bool]:
    """A message time as text, and whether the recorded value is not a usable time (flag it).

    A number (or digits) is converted to ISO 8601 UTC; NaN, infinite and out-of-range numbers,
    and values of other types, are dropped (``(None, True)``). Text is kept as written, flagged
    when it is not an ISO 8601 time.
    """
    if value is None:
        return None, False
    if isinstance(value, str) and not value.strip().isdigit():
        try:
            nanos_of(value)
        except InvalidTime:
            return value, True
        return value, False
    try:
        nanos = nanos_of(value)
    except InvalidTime:
        return None, True
    return (iso_of_nanos(nanos) if nanos is not None else None), False


def expect(value: Any, types: type | tuple[type, ...], json_path: str, what: str = "value") -> Any:
    """``value`` if it has one of ``types``, else a ``wrong_type`` record error."""
    classes = _as_tuple(types)
    if not isinstance(value, classes) or (isinstance(value, bool) and bool not in classes):
        names = "/".join(t.__name__ for t in classes)
        raise RecordError(
            "wrong_type", f"{what} should be {names}, got {type(value).__name__}", json_path
        )
    return value


def require(obj: dict[str, Any], key: str, json_path: str) -> Any:
    if key not in obj:
        raise RecordError("missing_field", f"field {key!r} is required", json_path)
    return obj[key]


def _as_tuple(types: Any) -> tuple[type, ...]:
    """``str``, ``(str, int)`` or ``str | int`` as a tuple of classes."""
    if isinstance(types, tuple):
        return types
    args = typing.get_args(types)
    return tuple(args) if args else (types,)


def content_parts(content: Any, json_path: str) -> list[Part]:
    """OpenAI-style ``content`` (string, null, or list of typed parts) as canonical parts.

    Images, audio and files become ``blob``/``uri``/``file`` parts: counted and kept, never
    dropped. An unknown part type is kept as text of its JSON so nothing disappears silently.
    """
    if content is None:
        return []
    if isinstance(content, str):
        return [Part.text(content)] if content != "" else []
    if not isinstance(content, list):
        raise RecordError(
            "wrong_type",
            f"content should be string or list, got {type(content).__name__}",
            json_path,
        )
    parts: list[Part] = []
    for i, item in enumerate(content):
        where = f"{json_path}[{i}]"
        if isinstance(item, str):
            parts.append(Part.text(item))
            continue
        expect(item, dict, where, "content part")
        kind = item.get("type")
        if kind in ("text", "input_text", "output_text"):
            parts.append(Part.text(expect(item.get("text", ""), str, f"{where}.text", "text")))
        elif kind in ("image_url", "input_image", "image"):
            parts.append(media_part(item, "image", where))
        elif kind in ("input_audio", "audio"):
            parts.append(media_part(item, "audio", where))
        elif kind in ("file", "input_file", "document"):
            parts.append(media_part(item, "file", where))
        elif kind in ("reasoning", "thinking"):
            parts.append(
                Part("reasoning", content=str(item.get("text") or item.get("thinking") or ""))
            )
        else:
            parts.append(unknown_part(item))
    return parts


def unknown_part(item: Any) -> Part:
    """A part of a type the importer does not know: kept as the text of its JSON, marked so
    validation flags its message ``unknown_part_type``."""
    return Part("text", content=json.dumps(item, ensure_ascii=False), mime_type=UNKNOWN_PART_MIME)


def media_part(item: dict[str, Any], modality: str, where: str) -> Part:
    """An image/audio/file content part: a URL becomes ``uri``, inline data a ``blob``."""
    inner = (
        item.get("image_url") or item.get("input_audio") or item.get("file") or item.get("source")
    )
    url = item.get("url") or (
        item.get("image_url") if isinstance(item.get("image_url"), str) else None
    )
    mime = None
    data = None
    if isinstance(inner, dict):
        url = inner.get("url") or url
        data = inner.get("data") or inner.get("file_data")
        mime = inner.get("media_type") or inner.get("mime_type")
        if inner.get("format") and not mime:
            mime = f"{modality}/{inner['format']}"
        if inner.get("type") == "url":
            url = inner.get("url")
    if isinstance(data, str) and data.startswith("data:"):  # OpenAI ``file_data`` is a data URL
        url, data = data, None
    if isinstance(url, str) and url.startswith("data:"):
        header, _, payload = url.partition(",")
        mime = header[5:].split(";")[0] or mime
        return Part("blob", content=payload, mime_type=mime, modality=modality)
    if isinstance(data, str):
        return Part("blob", content=data, mime_type=mime, modality=modality)
    if isinstance(url, str):
        return Part("uri", uri=url, mime_type=mime, modality=modality)
    file_id = inner.get("file_id") if isinstance(inner, dict) else None
    return Part(
        "file",
        id=file_id,
        content=json.dumps(item, ensure_ascii=False),
        mime_type=mime,
        modality=modality,
    )
