"""Shared selection helpers for the built-in policies.

What a tool result *is* (a log, a table, a stack trace, a diff), which locators it carries, which
function objects a policy may touch, and the result ids (``r1``, ``r2``, ...) that agent-controlled
forgetting and ``recorded`` share. Everything here reads the prefix only.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

from ..datasets.messages import Part
from ..replay.context import PrefixContext
from ..replay.objects import ContextObject, ObjectIndex, latest_user_message
from ..replay.plan import Edit

T = TypeVar("T")

#: OpenCode's prune, OpenClaw's hard-clear and Claude Code's microcompact all use this text.
CLEARED = "[Old tool result content cleared]"


# --- parts of a function object -------------------------------------------------------------


def call_part(ctx: PrefixContext, obj: ContextObject) -> Part:
    return next(
        p
        for p in ctx.messages[obj.call_index].parts
        if p.type == "tool_call" and p.id == obj.call_id
    )


def result_part(ctx: PrefixContext, obj: ContextObject) -> Part:
    return next(
        p
        for p in ctx.messages[obj.result_index].parts
        if p.type == "tool_call_response" and p.id == obj.call_id
    )


def result_body(ctx: PrefixContext, obj: ContextObject) -> str:
    return result_part(ctx, obj).content or ""


def body_tokens(ctx: PrefixContext, obj: ContextObject) -> int:
    """Tokens of the result body (counted once, when the prefix was indexed)."""
    return obj.result_tokens


def replaced_saving(ctx: PrefixContext, obj: ContextObject, new_body: str) -> int:
    """Tokens freed by replacing the result body with ``new_body`` (the envelope stays)."""
    return body_tokens(ctx, obj) - ctx.count(new_body)


def clear(obj: ContextObject, placeholder: str, reason: str, clear_inputs: bool = False) -> Edit:
    """The edit that clears a tool result behind ``placeholder``; its call envelope stays (its
    inputs become ``{}`` with ``clear_inputs``)."""
    return Edit(obj.id, "prune", placeholder=placeholder, clear_inputs=clear_inputs, reason=reason)


def call_line(
    obj: ContextObject, body: str, args: str, *, arrow: str = "→", exact: bool = True
) -> str:
    """One call as a summary shows it: ``tool(args) → outcome``, the outcome ``error`` or the
    lines ``body`` holds. ``exact`` (the digest's form): ``empty``, ``1 line``, ``<n> lines``, a
    nameless tool shown as ``tool``; otherwise (``hybrid``'s summary lines) always ``<n>
    lines`` and the name as recorded."""
    n = line_count(body)
    if obj.is_error:
        outcome = "error"
    elif not exact:
        outcome = f"{n} lines"
    else:
        outcome = "empty" if n == 0 else f"{n} line" + ("" if n == 1 else "s")
    tool = (obj.tool_name or "tool") if exact else obj.tool_name
    return f"{tool}({args}) {arrow} {outcome}"


# --- which objects a policy may touch -------------------------------------------------------


def editable_functions(ctx: PrefixContext) -> list[ContextObject]:
    """Function objects in prefix order, minus those whose call or result lives in the message
    that carries the latest user turn (Anthropic puts tool results in user messages: editing one
    would change the protected message)."""
    protected = latest_user_message(ctx.index)
    return [f for f in ctx.index.functions() if protected not in (f.call_index, f.result_index)]


def most_recent(objects: Sequence[ContextObject], keep: int) -> set[str]:
    """Ids of the last ``keep`` objects."""
    if keep <= 0:
        return set()
    return {o.id for o in objects[-keep:]}


# --- result ids shared by agent-forgetting and recorded ------------------------------------


def object_number(object_id: str) -> int | None:
    """N of ``function:<tool>:N`` (the session-local call number), None for other ids."""
    if not object_id.startswith("function:"):
        return None
    tail = object_id.rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() else None


def handle_of(object_id: str) -> str:
    """The result id an agent knows a function object by: ``r<N>``, stable across cases of a
    session and never reused, because N is the session-local call number."""
    n = object_number(object_id)
    if n is None:
        raise ValueError(f"{object_id} is not a function object")
    return f"r{n}"


def handles(index: ObjectIndex) -> dict[str, str]:
    return {f.id: handle_of(f.id) for f in index.functions()}


def object_for_handle(index: ObjectIndex, handle: str) -> ContextObject | None:
    m = re.fullmatch(r"r(\d+)", handle.strip())
    if not m:
        return None
    n = int(m.group(1))
    return next((f for f in index.functions() if object_number(f.id) == n), None)


# --- what a body is -------------------------------------------------------------------------

_HEX = re.compile(r"\b(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{6,}\b")
_DIGITS = re.compile(r"\d+")
_SPACE = re.compile(r"\s+")

_TRACE_HEADER = re.compile(
    r"^(Traceback \(most recent call last\):|goroutine \d+ \[|stack backtrace:|"
    r"Exception in thread |thread '.*' panicked at )",
    re.M,
)
_TRACE_FRAME = re.compile(
    r'^\s+(File "[^"]+", line \d+|at [\w$.<>\[\]/]+\(.*\)\s*$|at .+:\d+:\d+\)?\s*$|'
    r"\d+: [\w:<>]+::)",
    re.M,
)
_DIFF = re.compile(r"^(@@ -\d+(,\d+)? \+\d+(,\d+)? @@|diff --git |Index: \S)", re.M)
_DIFF_FILES = re.compile(r"^--- \S.*\n\+\+\+ \S", re.M)
_MD_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)+\|?\s*$")
_CELL_SPLITS = (re.compile(r"\t"), re.compile(r"\|"), re.compile(r","), re.compile(r"\s{2,}"))


def lines_of(body: str) -> list[str]:
    return body.splitlines()


def line_count(body: str) -> int:
    """Lines of a body as a reader counts them (a trailing newline opens no new line)."""
    return len(body.splitlines())


def is_stack_trace(body: str) -> bool:
    if _TRACE_HEADER.search(body):
        return True
    return len(_TRACE_FRAME.findall(body)) >= 2


def is_diff(body: str) -> bool:
    return bool(_DIFF.search(body) or _DIFF_FILES.search(body))


def is_table(body: str, min_rows: int = 3) -> bool:
    """A table: Markdown rows under a separator, or rows that split into the same number (≥ 3) of
    cells on tabs, pipes, commas or runs of spaces. Every cell of such a body can be the value a
    later step needs, so it is never masked as if it were repetitive noise."""
    rows = [line.strip() for line in lines_of(body) if line.strip()]
    if len(rows) < min_rows:
        return False
    if any(_MD_SEPARATOR.match(r) for r in rows) and sum(r.count("|") >= 2 for r in rows) >= 3:
        return True
    for split in _CELL_SPLITS:
        widths = Counter(len(split.split(r)) for r in rows)
        width, n = widths.most_common(1)[0]
        if width >= 3 and n >= 0.8 * len(rows):
            return True
    return False


def line_shape(line: str, words: int = 4) -> str:
    """A line with its numbers and hex runs normalised, cut to its first few words: the lines of
    a log share a shape (``<date> <time> INFO Processing``) while their payloads differ."""
    s = _HEX.sub("#", line)
    s = _DIGITS.sub("#", s)
    return " ".join(_SPACE.sub(" ", s).strip().split(" ")[:words])


def is_log_like(body: str, min_lines: int = 20, ratio: float = 0.6, repeats: int = 3) -> bool:
    """Many lines sharing a shape: at least ``ratio`` of the non-empty lines have a shape that
    recurs ``repeats`` times or more. Tables, stack traces and diff hunks are never log-like."""
    rows = [line for line in lines_of(body) if line.strip()]
    if len(rows) < min_lines:
        return False
    if is_stack_trace(body) or is_diff(body) or is_table(body):
        return False
    shapes = Counter(line_shape(r) for r in rows)
    covered = sum(n for n in shapes.values() if n >= repeats)
    return covered >= ratio * len(rows)


# --- locators -------------------------------------------------------------------------------

_LOCATORS = re.compile(
    r"(?P<url>\b[a-z][a-z0-9+.-]*://[^\s<>\"'`)\]}]+)"
    r"|(?P<uuid>\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b)"
    r"|(?P<path>(?<![\w/.])(?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w.@+-]+)"
    r"|(?P<hash>\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}\b)"
    r"|(?P<ticket>\b[A-Z][A-Z0-9]+-\d+\b)"
    r"|(?P<ident>\b[A-Za-z]+[_-](?=\w*\d)\w{3,}\b)"
)


def locators(text: str) -> list[str]:
    """URLs, paths, UUIDs, hashes, ticket keys and numbered identifiers, in order, unique."""
    seen: dict[str, None] = {}
    for m in _LOCATORS.finditer(text):
        value = m.group(0).rstrip(".,;:")
        if len(value) >= 3:
            seen.setdefault(value, None)
    return list(seen)


def _memo(ctx: PrefixContext, key: tuple[Any, ...], make: Callable[[], T]) -> T:
    """What ``make`` finds, kept for the session in ``ctx.memo`` under ``key`` (which names
    the part it was found in, so it holds for every case that has that part)."""
    if key not in ctx.memo:
        ctx.memo[key] = make()
    return cast(T, ctx.memo[key])


def result_is_log_like(
    ctx: PrefixContext, obj: ContextObject, min_lines: int, ratio: float
) -> bool:
    """``is_log_like`` of a result's body, found once per session and thresholds."""
    part = result_part(ctx, obj)
    key = ("log_like", part, min_lines, ratio)
    return _memo(ctx, key, lambda: is_log_like(part.content or "", min_lines, ratio))


def result_locators(ctx: PrefixContext, obj: ContextObject) -> list[str]:
    """``locators`` of a result's body, found once per session."""
    part = result_part(ctx, obj)
    return _memo(ctx, ("locators", part), lambda: locators(part.content or ""))


def unique_locators(ctx: PrefixContext, obj: ContextObject) -> list[str]:
    """Locators of a result that appear nowhere else in the prefix, not even in its own call.
    (A locator holds no newline, so none runs across two of the prefix's texts.)"""
    found = result_locators(ctx, obj)
    if not found:
        return []
    i = obj.result_index
    own = [
        (i, k)
        for k, p in enumerate(ctx.messages[i].parts)
        if p.type == "tool_call_response" and p.id == obj.call_id
    ]
    return [loc for loc in found if not ctx.text.elsewhere(loc, own)]


def first_line(body: str) -> str:
    return next((line.strip() for line in lines_of(body) if line.strip()), "")


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, an ellipsis marking the cut."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 1)].rstrip() + "…"


def one_line(text: str, limit: int) -> str:
    """``text`` on one line (every run of whitespace one space), cut to ``limit`` characters."""
    return clip(" ".join(text.split()), limit)
