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
"""

from __future__ import annotations

import json
import math
import typing
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

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


@dataclass(slots=True)
class Record:
    """One JSON record of a file: a JSONL line, an element of a top-level array, or the document."""

    index: int
    value: Any
    raw: bytes
    line: int | None = None


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

    #: set by the caller; a larger message rejects its session (``oversize_message``)
    max_message_bytes: int = MAX_MESSAGE_BYTES

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
            sessions = [validate_session(s, self.max_message_bytes) for s in produce()]
        except Exception as e:
            reason, detail = exception_reason(e)
            where = e.json_path if isinstance(e, RecordError) else "$"
            yield self.reject(path, record, reason, detail, where)
            return
        self.tally.seen += max(0, len(sessions) - 1)  # a record of k sessions counts as k
        if not sessions:
            self.tally.skip("no_session")
        yield from sessions

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
)
importers: Registry[type[Importer]] = Registry(
    "importer", "ctxreplay.importers", tuple(f"ctxreplay.datasets.importers.{m}" for m in BUILTIN)
)


# --- reading JSON tolerantly ---------------------------------------------------------------


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


def _parse_failure(e: Exception, truncated: bool) -> tuple[str, str]:
    if isinstance(e, RecordError | RecursionError):
        return "nesting_too_deep", f"JSON nested deeper than {MAX_JSON_DEPTH} levels"
    if truncated:
        return "truncated", f"file ends inside this record: {e}"
    return "invalid_json", clip(f"not JSON: {e}")


def iter_jsonl(path: Path, fmt: str, check_utf8: bool = True) -> Iterator[Record | Reject]:
    _data, text = read_text(path)
    lines = text.split("\n")
    ends_cleanly = text.endswith("\n")
    index = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = loads(line)
        except (ValueError, RecordError) as e:
            last = number == len(lines) and not ends_cleanly
            reason, detail = _parse_failure(e, last)
            yield Reject(str(path), reason, detail, _raw(line), fmt, index, number, None, "$")
        else:
            yield _checked(Record(index, value, _raw(line), number), fmt, path, check_utf8)
        index += 1


class _Lines:
    """Line numbers of positions in a text, counted forward incrementally."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.line = 1

    def at(self, pos: int) -> int:
        if pos < self.pos:
            self.pos, self.line = 0, 1
        self.line += self.text.count("\n", self.pos, pos)
        self.pos = pos
        return self.line


def iter_json_array(
    text: str,
    start: int,
    path: Path,
    fmt: str,
    key_path: str = "$",
    check_utf8: bool = True,
    end: list[int] | None = None,
) -> Iterator[Record | Reject]:
    """Elements of the array opening at ``text[start] == '['``.

    A malformed element does not end the array: the stretch up to where the next element starts
    (found by bracket balance, else by the next value shaped like the elements before) becomes
    one reject with its bytes, and reading goes on. When the file ends inside the array, the
    records before the cut are kept and the cut one is rejected ``truncated``. ``end`` receives
    the position after the closing bracket, when there is one.
    """
    pos = start + 1
    index = 0
    n = len(text)
    lines = _Lines(text)
    template: Any = None
    while True:
        while pos < n and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= n:
            yield Reject(
                str(path),
                "truncated",
                f"file ends inside the array after {index} records",
                b"",
                fmt,
                index,
                lines.at(pos),
                None,
                f"{key_path}[{index}]",
            )
            return
        if text[pos] == "]":
            if end is not None:
                end.append(pos + 1)
            return
        try:
            value, stop = _decoder.raw_decode(text, pos)
        except (ValueError, RecursionError) as e:
            region_end = _resync(text, pos, template)
            truncated = region_end >= n and _looks_truncated(text, pos)
            reason, detail = _parse_failure(e, truncated)
            if region_end < n:
                detail += " (reading goes on with the next element)"
            yield Reject(
                str(path),
                reason,
                detail,
                _raw(text[pos:region_end]),
                fmt,
                index,
                lines.at(pos),
                None,
                f"{key_path}[{index}]",
            )
            index += 1
            if region_end >= n:
                return
            pos = region_end
            continue
        if template is None:
            template = value
        yield _checked(
            Record(index, value, _raw(text[pos:stop]), lines.at(pos)), fmt, path, check_utf8
        )
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


def _resync(text: str, pos: int, template: Any) -> int:
    """Where reading can go on after a malformed array element starting at ``pos``."""
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


def iter_records(path: Path, fmt: str, check_utf8: bool = True) -> Iterator[Record | Reject]:
    """Records of a JSON or JSONL file: lines, top-level array elements, or the whole document.

    Text after the closing bracket of a top-level array is rejected (``invalid_json``), not
    dropped.
    """
    try:
        data, text = read_text(path)
    except OSError as e:
        yield Reject(str(path), "unreadable_file", str(e), b"", fmt)
        return
    stripped = text.lstrip()
    if not stripped:
        yield Reject(str(path), "empty_session", "the file is empty", data, fmt)
        return
    if path.suffix == ".jsonl" or looks_like_jsonl(stripped):
        yield from iter_jsonl(path, fmt, check_utf8)
        return
    start = len(text) - len(stripped)
    if stripped[0] == "[":
        end: list[int] = []
        count = 0
        for item in iter_json_array(text, start, path, fmt, check_utf8=check_utf8, end=end):
            count += 1
            yield item
        if end and text[end[0] :].strip():
            rest = text[end[0] :]
            yield Reject(
                str(path),
                "invalid_json",
                f"{len(rest.strip()):,} characters after the end of the array",
                _raw(rest),
                fmt,
                count,
                text.count("\n", 0, end[0]) + 1,
                None,
                "$",
            )
        return
    yield _document(path, fmt, data, text, check_utf8)


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
