"""Quoting trace text inside a model prompt so that it stays data.

Trace text goes between delimiters that carry a nonce derived from the block; ``neutralise``
makes any text unable to open or close such a block; ``fit_prompt`` shrinks a block until the
request fits the model's budget. Shared by the LLM judge and the model planners.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

TAG = "TRACE_DATA"


_RUN_LT = re.compile(r"<{3,}")


_RUN_GT = re.compile(r">{3,}")


_TAG_RE = re.compile(r"trace[_\-]*data", re.IGNORECASE)


def open_delimiter(kind: str, nonce: str) -> str:
    return f"<<<{TAG} {kind} nonce={nonce}>>>"


def close_delimiter(kind: str, nonce: str) -> str:
    return f"<<<END_{TAG} {kind} nonce={nonce}>>>"


def _neutral(matched: str) -> str:
    """The look-alike a delimiter-like run or tag spelling becomes."""
    if matched[0] == "<":
        return "‹" * len(matched)
    if matched[0] == ">":
        return "›" * len(matched)
    return "TRACE＿DATA"


_DELIMITER_LIKE = re.compile(rf"{_RUN_LT.pattern}|{_RUN_GT.pattern}|{_TAG_RE.pattern}", re.I)


def _normal_form(text: str) -> tuple[str, list[int]]:
    """``text`` in NFKC, one character at a time, without format characters (category Cf:
    zero-width spaces and joiners, soft hyphens, bidi marks, ...), and for each character of
    the result the index of the character of ``text`` it came from."""
    out: list[str] = []
    owner: list[int] = []
    for i, ch in enumerate(text):
        if unicodedata.category(ch) == "Cf":
            continue
        norm = unicodedata.normalize("NFKC", ch)
        out.append(norm)
        owner.extend([i] * len(norm))
    return "".join(out), owner


def neutralise(text: str) -> str:
    """Trace text made unable to open or close a data block (look-alike characters).

    Matching is done on the text's NFKC form without format characters, so a run of ``<`` or
    a spelling of the tag split by zero-width characters or soft hyphens, or written in
    compatibility forms (fullwidth, small forms), is caught too; only the characters of a match
    are replaced (format characters inside it dropped), all other text is left byte for byte.
    """
    if text.isascii():  # nothing to normalise: the plain patterns see everything
        text = _RUN_LT.sub(lambda m: "‹" * len(m.group()), text)
        text = _RUN_GT.sub(lambda m: "›" * len(m.group()), text)
        return _TAG_RE.sub("TRACE＿DATA", text)
    norm, owner = _normal_form(text)
    out: list[str] = []
    done = 0
    for m in _DELIMITER_LIKE.finditer(norm):
        start, end = owner[m.start()], owner[m.end() - 1] + 1
        if start < done:  # two matches from one original character: already replaced
            continue
        out.append(text[done:start])
        out.append(_neutral(m.group()))
        done = end
    out.append(text[done:])
    return "".join(out)


def shorten(text: str, limit: int) -> str:
    """Head and tail of ``text`` within about ``limit`` characters, with a marker in between."""
    if limit <= 0 or len(text) <= limit:
        return text
    head = max(1, int(limit * 0.6))
    tail = max(1, limit - head)
    cut = len(text) - head - tail
    return f"{text[:head]}⟦{cut:,} characters not shown here⟧{text[-tail:]}"


S = TypeVar("S", int, float)


@dataclass(frozen=True)
class FittedPrompt(Generic[S]):
    """A ``[system, user]`` request around one data block (see ``fit_prompt``)."""

    messages: list[dict[str, str]]
    nonce: str
    tokens: int
    setting: S  # the block's size setting that fitted (0: the smallest, fitting or not)
    over_budget: bool


def fit_prompt(
    system: str,
    user: Callable[[str, str], str],
    render: Callable[[S], str],
    first: S,
    shrink: Callable[[S], S],
    *,
    count: Callable[[str], int],
    max_prompt_tokens: int,
) -> FittedPrompt[S]:
    """``[system, user]`` for a data block shrunk until the prompt fits: the block is
    ``render(setting)`` (already neutralised), from ``first`` down by ``shrink`` to 0; its nonce is
    derived from its text (deterministic requests and cache keys) and ``user(block, nonce)`` is
    the user message. ``over_budget``: even the smallest block did not fit."""
    fixed = count(system)
    setting = first
    while True:
        block = render(setting)
        nonce = hashlib.sha256(block.encode("utf-8")).hexdigest()[:12]
        content = user(block, nonce)
        tokens = fixed + count(content)
        if tokens <= max_prompt_tokens or not setting:
            break
        setting = shrink(setting)
    return FittedPrompt(
        messages=[{"role": "system", "content": system}, {"role": "user", "content": content}],
        nonce=nonce,
        tokens=tokens,
        setting=setting,
        over_budget=tokens > max_prompt_tokens,
    )
