"""What format detection looks at: the first records of a file, parsed, never its raw text.

``sample_of(path, head)`` decodes the first bytes of a file (UTF-8, or UTF-16/32 when a byte-order
mark or the NUL pattern says so) and parses its first records the way the importers will read
them: JSONL lines, elements of a top-level array, or the one document. A record cut by the end of
the head is parsed as far as it goes (``parse_prefix``): containers still open are closed where
the text stops, so the keys and shapes of a large first record are there even when its end is
not. Sniffers then score keys and shapes; a word inside a message's text is only a string value
and cannot change the format a file is taken for.
"""

from __future__ import annotations

import codecs
import functools
import json
import json.decoder
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: how much of a file detection reads
SNIFF_BYTES = 1024 * 1024
#: records of a file a sniffer looks at
SAMPLE_RECORDS = 8
#: nesting below this depth is not parsed for sniffing
SNIFF_DEPTH = 64

_decoder = json.JSONDecoder()
#: the JSON string scanner (C when available): ``(text, end, strict) -> (string, new end)``
scanstring: Callable[[str, int, bool], tuple[str, int]] = vars(json.decoder)["scanstring"]
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_CONSTANTS: tuple[tuple[str, Any], ...] = (
    ("true", True),
    ("false", False),
    ("null", None),
    ("NaN", math.nan),
    ("Infinity", math.inf),
    ("-Infinity", -math.inf),
)
_WS = " \t\r\n"


# --- decoding -----------------------------------------------------------------------------------


def decode_bytes(data: bytes) -> str:
    """A file's text. UTF-8 (a leading byte-order mark dropped; undecodable bytes survive as lone
    surrogates, so a record holding them can be rejected by itself), or UTF-32/UTF-16 when a
    byte-order mark or the NUL bytes of ASCII text in those encodings say so."""
    if data.startswith(codecs.BOM_UTF8):
        return data[3:].decode("utf-8", "surrogateescape")
    for bom, codec in (
        (codecs.BOM_UTF32_LE, "utf-32-le"),
        (codecs.BOM_UTF32_BE, "utf-32-be"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
    ):
        if data.startswith(bom):
            text = _wide(data[len(bom) :], codec)
            if text is not None:
                return text
            break
    else:
        if len(data) >= 4 and data[0] and not data[1] and not data[3] and data[2]:
            text = _wide(data, "utf-16-le")
            if text is not None:
                return text
        elif len(data) >= 4 and not data[0] and data[1] and not data[2] and data[3]:
            text = _wide(data, "utf-16-be")
            if text is not None:
                return text
    return data.decode("utf-8", "surrogateescape")


def _wide(data: bytes, codec: str) -> str | None:
    """``data`` in a UTF-16/32 codec; lone surrogates survive (and reject their record)."""
    width = 4 if "32" in codec else 2
    cut = len(data) - len(data) % width
    try:
        return data[:cut].decode(codec, "surrogatepass")
    except UnicodeDecodeError:
        return None


# --- parsing as far as the text goes ----------------------------------------------------------


def parse_prefix(text: str, pos: int = 0, max_depth: int = SNIFF_DEPTH) -> Any:
    """The JSON value starting at ``text[pos]``, as far as the text is well formed.

    Where the text ends (or stops being JSON) inside the value, the containers still open are
    closed there and a cut string keeps what was read; nesting deeper than ``max_depth`` is left
    out. For sniffing only: it never raises.
    """
    n = len(text)
    stack: list[list[Any]] = []  # [container, pending key]
    root: list[Any] = []

    def attach(value: Any) -> None:
        if not stack:
            root.append(value)
            return
        top = stack[-1]
        if isinstance(top[0], list):
            top[0].append(value)
        else:
            top[0][top[1]] = value
            top[1] = None

    while True:
        while pos < n and text[pos] in _WS:
            pos += 1
        if pos >= n or (root and not stack):
            break
        c = text[pos]
        if stack:
            container, key = stack[-1]
            if isinstance(container, dict) and key is None:
                if c == ",":
                    pos += 1
                elif c == "}":
                    stack.pop()
                    pos += 1
                elif c == '"':
                    try:
                        name, pos = scanstring(text, pos + 1, False)
                    except ValueError:
                        break
                    while pos < n and text[pos] in _WS:
                        pos += 1
                    if pos >= n or text[pos] != ":":
                        break
                    stack[-1][1] = name
                    pos += 1
                else:
                    break
                continue
            if isinstance(container, list) and c in ",]":
                if c == "]":
                    stack.pop()
                pos += 1
                continue
        if c in "{[":
            if len(stack) >= max_depth:
                break
            new: Any = {} if c == "{" else []
            attach(new)
            stack.append([new, None])
            pos += 1
            continue
        if c == '"':
            try:
                value, pos = scanstring(text, pos + 1, False)
            except ValueError:
                attach(text[pos + 1 :])
                break
            attach(value)
            continue
        number = _NUMBER.match(text, pos)
        if number:
            literal = number.group()
            try:
                attach(int(literal) if literal.lstrip("-").isdigit() else float(literal))
            except ValueError:  # more digits than Python converts
                attach(None)
            pos = number.end()
            continue
        for word, constant in _CONSTANTS:
            if text.startswith(word, pos):
                attach(constant)
                pos += len(word)
                break
        else:
            break
    return root[0] if root else None


# --- the sample ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """The first records of a file, parsed (the last one possibly cut short)."""

    path: Path
    #: "jsonl" (a record per line), "array" (elements of a top-level list), "document", "empty"
    layout: str
    records: tuple[Any, ...]

    def mean(self, score: Callable[[Any], float]) -> float:
        """The sampled records' score: halfway between their mean and their best (a file is in
        one format throughout, and a damaged record or two should not hide which)."""
        if not self.records:
            return 0.0
        scores = [score(r) for r in self.records]
        return (sum(scores) / len(scores) + max(scores)) / 2

    def best(self, score: Callable[[Any], float]) -> float:
        return max((score(r) for r in self.records), default=0.0)


def sample_of(path: Path, head: bytes) -> Sample:
    """The sample of a file whose first bytes are ``head`` (cached: every sniffer asks)."""
    return _sample(str(path), head)


@functools.lru_cache(maxsize=16)
def _sample(path: str, head: bytes) -> Sample:
    text = decode_bytes(head)
    stripped = text.lstrip("\ufeff" + _WS)
    p = Path(path)
    if not stripped:
        return Sample(p, "empty", ())
    if p.suffix == ".jsonl" or looks_like_jsonl(stripped):
        return Sample(p, "jsonl", tuple(_jsonl_records(stripped)))
    start = len(text) - len(stripped)
    if stripped[0] == "[":
        return Sample(p, "array", tuple(_array_records(text, start)))
    return Sample(p, "document", (_value(text, start),))


def looks_like_jsonl(text: str) -> bool:
    """Two or more top-level JSON values on separate lines (the first line a whole value)."""
    first, _, rest = text.partition("\n")
    if not rest.strip():
        return False
    try:
        json.loads(first)
    except (ValueError, RecursionError):
        return False
    return True


def _value(text: str, start: int) -> Any:
    try:
        value, _ = _decoder.raw_decode(text, start)
    except (ValueError, RecursionError):
        return parse_prefix(text, start)
    return value


def _jsonl_records(text: str) -> Iterable[Any]:
    found = 0
    for line in text.split("\n"):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except (ValueError, RecursionError):
            value = parse_prefix(line, len(line) - len(line.lstrip()))
            if value is not None:
                yield value
        found += 1
        if found >= SAMPLE_RECORDS:
            return


def _array_records(text: str, start: int) -> Iterable[Any]:
    pos = start + 1
    n = len(text)
    for _ in range(SAMPLE_RECORDS):
        while pos < n and text[pos] in _WS + ",":
            pos += 1
        if pos >= n or text[pos] == "]":
            return
        try:
            value, pos = _decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            value = parse_prefix(text, pos)
            if value is not None:
                yield value
            return
        yield value


# --- shape helpers the sniffers share -----------------------------------------------------------

#: the first (and last) bytes of a Parquet file
PARQUET_MAGIC = b"PAR1"


def is_parquet(path: Path) -> bool:
    """``path`` starts as a Parquet file does (its content, whatever its name)."""
    try:
        with path.open("rb") as f:
            return f.read(4) == PARQUET_MAGIC
    except OSError:
        return False


def is_message(value: Any) -> bool:
    """A chat message: an object with a string ``role``."""
    return isinstance(value, dict) and isinstance(value.get("role"), str)


def message_list(value: Any) -> list[dict[str, Any]] | None:
    """``value`` when it is a non-empty list of chat messages."""
    if isinstance(value, list) and value and all(is_message(m) for m in value):
        return value
    return None


def content_types(message: dict[str, Any]) -> set[str]:
    """The ``type`` of every content part/block of a message."""
    content = message.get("content")
    if not isinstance(content, list):
        return set()
    return {b["type"] for b in content if isinstance(b, dict) and isinstance(b.get("type"), str)}


#: the most a sniffer may be sure of a record that also carries another format's structure
MIXED_CAP = 0.6
_SPAN_FIELDS = ("traceId", "spanId", "trace_id", "span_id", "context", "start_time", "name")


def structures(record: Any) -> set[str]:
    """The trace structures a record carries at its top level; one, in a record of any format:
    a message list, a ``traj``, a ``history``, ``simulations``, or span attributes."""
    found: set[str] = set()
    if not isinstance(record, dict):
        return found
    if message_list(record.get("messages")) is not None:
        found.add("messages")
    request = record.get("request")
    if isinstance(request, dict) and message_list(request.get("messages")) is not None:
        found.add("request")
    if isinstance(record.get("traj"), list) and record["traj"]:
        found.add("traj")
    if isinstance(record.get("history"), list) and record["history"]:
        found.add("history")
    if isinstance(record.get("simulations"), list) and record["simulations"]:
        found.add("simulations")
    otlp = "resourceSpans" in record or "resourceLogs" in record
    flat = isinstance(record.get("attributes"), dict | list)
    if otlp or (flat and any(f in record for f in _SPAN_FIELDS)):
        found.add("spans")
    return found


def capped(score: float, record: Any) -> float:
    """``score``, at most ``MIXED_CAP`` when the record carries two formats' structures: such a
    record could be read either way, so no format may be sure of it (detection then asks)."""
    return min(score, MIXED_CAP) if len(structures(record)) > 1 else score
