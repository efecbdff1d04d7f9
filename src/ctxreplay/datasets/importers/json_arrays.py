"""Reading a JSON array element by element, past malformed elements, as a stream.

A top-level array is read through a window of decoded text that slides forward, so memory
follows the largest element, not the file; positions, line numbers, parse errors and raw bytes
are those of the whole text. A malformed element does not end the array: the stretch up to where
the next element starts becomes one reject with its bytes, and reading goes on.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from ..rejects import Reject
from .records import BLOCK_BYTES, Record, checked_record, parse_failure, raw_bytes, utf8_decoder

#: a parse error this close to the end of the text read so far may come from the cut, not the data
_NEAR_END = 16
_SPACE = " \t\r\n"
_decoder = json.JSONDecoder()


class TextWindow:
    """Text of a file decoded as it is read, seen from a position that only moves forward: text
    before the element being read is dropped, so a long array costs one element's memory.
    Positions are relative to the window; ``base``, ``line`` and ``column`` place it in the file,
    so line numbers and parse errors read as they would on the whole text."""

    def __init__(
        self, text: str = "", source: BinaryIO | None = None, block: int = BLOCK_BYTES
    ) -> None:
        self.text = text
        self.source = source
        self.block = block  # bytes read from ``source`` at a time
        self.decoder = utf8_decoder()
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
            block = self.source.read(max(self.block, at_least - got))
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
        if self.source is None or pos < self.block:
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
                    self.extend(max(self.block, len(self.text) - pos))
                    continue
                return self.absolute(e)
            near_end = stop + _NEAR_END >= len(self.text)
            if near_end and not self.eof and type(value) in (int, float):
                self.extend(max(self.block, len(self.text) - pos))
                continue
            return value, stop

    def region_end(self, pos: int, template: Any) -> int:
        """``_resync`` at ``pos``, with as much text read as it looks at."""
        while True:
            found = balanced_end(self.text, pos)
            if found is not None or not self.extend(max(self.block, len(self.text) - pos)):
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
    yield from _array_items(TextWindow(text), start, path, fmt, key_path, check_utf8, end)


def array_records(
    window: TextWindow, start: int, path: Path, fmt: str, check_utf8: bool
) -> Iterator[Record | Reject]:
    """Elements of a top-level array, then a reject for any text after its closing bracket."""
    end: list[int] = []
    count = 0
    for item in _array_items(window, start, path, fmt, "$", check_utf8, end):
        count += 1
        yield item
    if not end:
        return
    while window.extend(max(window.block, len(window.text))):
        pass  # what follows the array is kept whole (it is one reject)
    rest = window.text[end[0] :]
    if rest and not rest.isspace():
        yield Reject(
            str(path),
            "invalid_json",
            f"{len(rest.strip()):,} characters after the end of the array",
            raw_bytes(rest),
            fmt,
            count,
            window.line_at(end[0]),
            None,
            "$",
        )


def _array_items(
    window: TextWindow,
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
            truncated = at_end and looks_truncated(window.text, pos)
            reason, detail = parse_failure(parsed, truncated)
            if not at_end:
                detail += " (reading goes on with the next element)"
            yield Reject(
                str(path),
                reason,
                detail,
                raw_bytes(window.text[pos:region_end]),
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
        record = Record(index, value, raw_bytes(window.text[pos:stop]), window.line_at(pos))
        del value
        item = checked_record(record, fmt, path, check_utf8)
        del record
        yield item
        del item
        index += 1
        pos = stop


def balanced_end(text: str, pos: int) -> int | None:
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
    ``balanced_end(text, pos)`` when already known)."""
    if found is None:
        found = balanced_end(text, pos)
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
        at = skip_chars(text, cursor)
        if text[at : at + 1] != opener:
            continue
        try:
            value, stop = _decoder.raw_decode(text, at)
        except (ValueError, RecursionError):
            continue
        after = skip_chars(text, stop)
        if text[after : after + 1] not in ",]":  # at the end of the text, "" is in ",]"
            continue
        if type(value) is not type(template) and template is not None:
            continue
        if keys is not None and isinstance(value, dict) and not _alike(keys, set(value)):
            continue  # a nested object, not the next element
        return at
    return len(text)


def skip_chars(text: str, pos: int, chars: str = _SPACE) -> int:
    """The first position at or after ``pos`` whose character is not in ``chars`` (or the end)."""
    while pos < len(text) and text[pos] in chars:
        pos += 1
    return pos


def _alike(a: set[Any], b: set[Any]) -> bool:
    """Two objects' keys are those of records of one kind (most of them shared)."""
    return bool(a | b) and len(a & b) * 2 >= len(a | b)


def looks_truncated(text: str, pos: int) -> bool:
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
