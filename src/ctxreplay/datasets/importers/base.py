"""What every importer shares: the plugin contract and tolerant JSON reading.

An importer turns one file into ``Session`` objects and ``Reject`` records. It never raises for
bad content: a record it cannot read becomes a reject carrying the file, the record index or line,
the JSON path, the reason and the record's exact bytes, and reading goes on with the next record.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ...registry import Registry
from ..messages import Part, Session
from ..rejects import RecordError, Reject
from ..validate import MAX_MESSAGE_BYTES, validate_session

SNIFF_BYTES = 64 * 1024
_decoder = json.JSONDecoder()


def sub_record(index: int, value: Any, line: int | None = None) -> Record:
    """A record nested inside a document (a tau2 simulation): its raw bytes are its JSON."""
    raw = json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogateescape")
    return Record(index, value, raw, line)


@dataclass(slots=True)
class Record:
    """One JSON record of a file: a JSONL line, an element of a top-level array, or the document."""

    index: int
    value: Any
    raw: bytes
    line: int | None = None


class Importer:
    """Base class of importers; subclasses register with ``@importers.register(name)``."""

    name: ClassVar[str] = ""
    #: file endings this format uses (for detection; content decides, the ending only helps)
    suffixes: ClassVar[tuple[str, ...]] = (".json", ".jsonl")

    #: set by the caller; a larger message rejects its session (``oversize_message``)
    max_message_bytes: int = MAX_MESSAGE_BYTES

    def sniff(self, path: Path, head: bytes) -> float:
        """Confidence in [0, 1] that ``path`` is in this format, from its first bytes."""
        return 0.0

    def read(self, path: Path) -> Iterator[Session | Reject]:
        """Yield sessions and rejects; never raise for bad content."""
        for record in iter_records(path, self.name):
            if isinstance(record, Reject):
                yield record
                continue
            yield from self.guarded(
                path, record, lambda rec=record: self.sessions_from_record(path, rec)
            )

    def sessions_from_record(self, path: Path, record: Record) -> Iterator[Session]:
        """Sessions of one record; an importer overrides this, or ``read`` as a whole."""
        raise TypeError(f"{type(self).__name__} overrides neither sessions_from_record nor read")

    def guarded(self, path: Path, record: Record, produce: Any) -> Iterator[Session | Reject]:
        """Run ``produce()``, validate what it made, and turn any failure into a reject."""
        try:
            sessions = [validate_session(s, self.max_message_bytes) for s in produce()]
        except RecordError as e:
            yield self.reject(path, record, e.reason, e.detail, e.json_path)
            return
        except (TypeError, KeyError, AttributeError, ValueError, IndexError) as e:
            yield self.reject(path, record, "malformed", f"{type(e).__name__}: {e}", "$")
            return
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
            detail=detail,
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
)
importers: Registry[type[Importer]] = Registry(
    "importer", "ctxreplay.importers", tuple(f"ctxreplay.datasets.importers.{m}" for m in BUILTIN)
)


# --- reading JSON tolerantly ---------------------------------------------------------------


def read_text(path: Path) -> tuple[bytes, str]:
    """The file's bytes and their text; undecodable bytes survive as surrogates (lossless)."""
    data = path.read_bytes()
    body = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
    return data, body.decode("utf-8", "surrogateescape")


def _raw(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def find_bad_utf8(value: Any, path: str = "$") -> str | None:
    """JSON path of the first string holding undecodable bytes, or None."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path
        return None
    if isinstance(value, dict):
        for k, v in value.items():
            found = find_bad_utf8(k, path) or find_bad_utf8(v, f"{path}.{k}")
            if found:
                return found
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found = find_bad_utf8(v, f"{path}[{i}]")
            if found:
                return found
    return None


def source_id_of(value: Any) -> str | None:
    """The source's own session id of a record, when it names one."""
    if isinstance(value, dict):
        for key in ("session_id", "id", "instance_id", "task_id", "conversation_id"):
            if isinstance(value.get(key), str | int) and not isinstance(value.get(key), bool):
                return str(value[key])
    return None


def _checked(record: Record, fmt: str, path: Path) -> Record | Reject:
    bad = find_bad_utf8(record.value)
    if bad is None:
        return record
    return Reject(
        source_location=str(path),
        reason="invalid_utf8",
        detail="the record contains bytes that are not valid UTF-8",
        raw=record.raw,
        source_format=fmt,
        record=record.index,
        line=record.line,
        session_id=source_id_of(record.value),
        json_path=bad,
    )


def iter_jsonl(path: Path, fmt: str) -> Iterator[Record | Reject]:
    _data, text = read_text(path)
    lines = text.split("\n")
    ends_cleanly = text.endswith("\n")
    index = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as e:
            last = number == len(lines) and not ends_cleanly
            reason = "truncated" if last else "invalid_json"
            detail = f"{'file ends inside this line' if last else 'not JSON'}: {e}"
            yield Reject(str(path), reason, detail, _raw(line), fmt, index, number, None, "$")
        else:
            yield _checked(Record(index, value, _raw(line), number), fmt, path)
        index += 1


def iter_json_array(
    text: str, start: int, path: Path, fmt: str, key_path: str = "$"
) -> Iterator[Record | Reject]:
    """Elements of the array opening at ``text[start] == '['``, salvaging all before a break."""
    pos = start + 1
    index = 0
    n = len(text)
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
                text.count("\n", 0, pos) + 1,
                None,
                f"{key_path}[{index}]",
            )
            return
        if text[pos] == "]":
            return
        try:
            value, end = _decoder.raw_decode(text, pos)
        except ValueError as e:
            line = text.count("\n", 0, pos) + 1
            rest = _raw(text[pos:])
            reason = "truncated" if _looks_truncated(text, pos) else "invalid_json"
            yield Reject(
                str(path), reason, f"{e}", rest, fmt, index, line, None, f"{key_path}[{index}]"
            )
            return
        yield _checked(
            Record(index, value, _raw(text[pos:end]), text.count("\n", 0, pos) + 1), fmt, path
        )
        index += 1
        pos = end


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


def iter_records(path: Path, fmt: str) -> Iterator[Record | Reject]:
    """Records of a JSON or JSONL file: lines, top-level array elements, or the whole document."""
    try:
        data, text = read_text(path)
    except OSError as e:
        yield Reject(str(path), "unreadable_file", str(e), b"", fmt)
        return
    stripped = text.lstrip()
    if not stripped:
        yield Reject(str(path), "empty_session", "the file is empty", data, fmt)
        return
    if path.suffix == ".jsonl" or _is_jsonl(stripped):
        yield from iter_jsonl(path, fmt)
        return
    start = len(text) - len(stripped)
    if stripped[0] == "[":
        yield from iter_json_array(text, start, path, fmt)
        return
    yield _document(path, fmt, data, text)


def whole_document(path: Path, fmt: str) -> Record | Reject:
    """The whole file as one record (formats whose top level is one object or one session)."""
    try:
        data, text = read_text(path)
    except OSError as e:
        return Reject(str(path), "unreadable_file", str(e), b"", fmt)
    return _document(path, fmt, data, text)


def _document(path: Path, fmt: str, data: bytes, text: str) -> Record | Reject:
    try:
        value = json.loads(text)
    except ValueError as e:
        start = len(text) - len(text.lstrip())
        reason = "truncated" if _looks_truncated(text, start) else "invalid_json"
        return Reject(str(path), reason, str(e), data, fmt, 0, None, None, "$")
    return _checked(Record(0, value, data, 1), fmt, path)


def _is_jsonl(text: str) -> bool:
    """Two or more top-level JSON values on separate lines."""
    first, _, rest = text.partition("\n")
    if not rest.strip():
        return False
    try:
        json.loads(first)
    except ValueError:
        return False
    return True


def sniff_json_keys(head: bytes) -> str:
    """The first bytes as text, for cheap key checks in ``sniff``."""
    return head.decode("utf-8", "replace")


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
            parts.append(Part.text(json.dumps(item, ensure_ascii=False)))
    return parts


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
