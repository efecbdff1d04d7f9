"""Tolerant, streaming reading of JSON trace files into records.

``iter_records`` reads a file as JSONL (line by line), a top-level array (element by element,
``json_arrays``) or one document, and never raises for bad content: what cannot be read becomes
a reject that keeps its bytes, and reading goes on. Memory follows the largest record, not the
file; UTF-16/32 files (rare) and single-document files are read whole. A damaged document can
be salvaged member by member (``salvage_file``).
"""

from __future__ import annotations

import codecs
import hashlib
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from ..rejects import RecordError, Reject
from .json_arrays import (
    TextWindow,
    array_records,
    balanced_end,
    iter_json_array,
    looks_truncated,
    skip_chars,
)
from .records import (
    BLOCK_BYTES,
    Record,
    checked_record,
    loads,
    parse_failure,
    raw_bytes,
    read_text,
    utf8_decoder,
)
from .sniffing import decode_bytes, looks_like_jsonl

_WIDE_BOMS = (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
_decoder = json.JSONDecoder()


def file_sha256(path: Path) -> str:
    """The sha256 of a file, read block by block (trace files can be larger than memory)."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(BLOCK_BYTES):
            digest.update(block)
    return digest.hexdigest()


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
    decoder = utf8_decoder()
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
    decoder = utf8_decoder()
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
            yield from array_records(
                TextWindow(source=f, block=BLOCK_BYTES), len(space), path, fmt, check_utf8
            )
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
        yield from array_records(TextWindow(text), len(text) - len(stripped), path, fmt, check_utf8)
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
            reason, detail = parse_failure(e, cut)
            item: Record | Reject = Reject(
                str(path), reason, detail, raw_bytes(text), fmt, index, number, None, "$"
            )
        else:
            if at is None:
                record = Record(index, value, raw_bytes(text), number)
            else:
                record = Record(index, value, line=number, where=(path, at, size))
            item = checked_record(record, fmt, path, check_utf8)
            del value, record
        text = ""
        yield item
        del item
        index += 1


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
    """The file's text parsed as one record, or the reject of why it does not parse."""
    try:
        value = loads(text)
    except (ValueError, RecordError) as e:
        start = len(text) - len(text.lstrip())
        reason, detail = parse_failure(e, looks_truncated(text, start))
        return Reject(str(path), reason, detail, data, fmt, 0, None, None, "$")
    return checked_record(Record(0, value, data, 1), fmt, path, check_utf8)


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
        pos = skip_chars(text, pos, " \t\r\n,")
        if text[pos : pos + 1] != '"':
            break
        try:
            name, pos = _decoder.raw_decode(text, pos)
        except ValueError:
            break
        pos = skip_chars(text, pos)
        if text[pos : pos + 1] != ":":
            break
        pos = skip_chars(text, pos + 1)
        if name == key and text[pos : pos + 1] == "[":
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
            stop = balanced_end(text, pos)
            if stop is None:
                break
            pos = stop + 1 if text[stop] == "," else stop
    if elements is None:
        return None
    return members, elements, broken
