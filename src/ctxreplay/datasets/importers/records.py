"""A record of a trace file, and what every reader does with one.

A record is one JSONL line, one element of a top-level array, or the whole document, with its
exact bytes and where it stands (index, line), so that a record an importer cannot use becomes a
reject that keeps them. A record nested deeper than ``MAX_JSON_DEPTH``, or holding strings whose
bytes are not UTF-8, is rejected as it is read (``checked_record``).
"""

from __future__ import annotations

import codecs
import json
from pathlib import Path
from typing import Any

from ..rejects import MAX_JSON_DEPTH, RecordError, Reject, clip, inspect_value
from .sniffing import decode_bytes

#: bytes read from a file at a time
BLOCK_BYTES = 1 << 20


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


def sub_record(index: int, value: Any, line: int | None = None) -> Record:
    """A record nested inside a document (a tau2 simulation): its raw bytes are its JSON."""
    try:
        raw = json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogateescape")
    except (ValueError, RecursionError, UnicodeEncodeError):
        raw = repr(value).encode("utf-8", "backslashreplace")[:65536]
    return Record(index, value, raw, line)


def read_text(path: Path) -> tuple[bytes, str]:
    """The file's bytes and their text; undecodable bytes survive as surrogates (lossless)."""
    data = path.read_bytes()
    return data, decode_bytes(data)


def raw_bytes(text: str) -> bytes:
    """Text read from a file back as bytes (undecodable bytes as they were)."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # lone surrogates of a UTF-16 file
        return text.encode("utf-8", "surrogatepass")


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


def checked_record(
    record: Record, fmt: str, path: Path, check_utf8: bool = True
) -> Record | Reject:
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


def parse_failure(e: BaseException, truncated: bool) -> tuple[str, str]:
    """The reject reason and detail of text that did not parse (``truncated``: the file ends
    inside it, so it was cut rather than mistyped)."""
    if isinstance(e, RecordError | RecursionError):
        return "nesting_too_deep", f"JSON nested deeper than {MAX_JSON_DEPTH} levels"
    if truncated:
        return "truncated", f"file ends inside this record: {e}"
    return "invalid_json", clip(f"not JSON: {e}")


def utf8_decoder() -> codecs.IncrementalDecoder:
    """A UTF-8 decoder for text read block by block; undecodable bytes become surrogates."""
    return codecs.getincrementaldecoder("utf-8")("surrogateescape")
