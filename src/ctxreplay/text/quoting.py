"""Quoting trace text inside a model prompt so that it stays data.

Trace text goes between delimiters that carry a nonce derived from the block; ``neutralise``
makes any text unable to open or close such a block; ``fit_prompt`` shrinks a block until the
request fits the model's budget. Shared by the LLM judge and the model planners.
"""

from __future__ import annotations

import hashlib
import re
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


def neutralise(text: str) -> str:
    """Trace text made unable to open or close a data block (look-alike characters)."""
    text = _RUN_LT.sub(lambda m: "‹" * len(m.group()), text)
    text = _RUN_GT.sub(lambda m: "›" * len(m.group()), text)
    return _TAG_RE.sub("TRACE＿DATA", text)


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
