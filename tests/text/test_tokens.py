"""``normalise`` and ``tokens`` skip each rewrite a text cannot need (issue 15): they must answer
exactly what the unconditional versions they replaced answered, kept here as the reference, on
text built from the pieces those rewrites look for (prose dates, currency, thousands, zero cents,
paths, ISO dates, underscores) and on arbitrary text."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ctxreplay.text.facts import (
    _CURRENCY,
    _ISO_DATE,
    _MONTHS,
    _PROSE_DATE,
    _THOUSANDS,
    _TOKEN,
    _ZERO_CENTS,
    normalise,
    tokens,
)


def normalise_always(text: str) -> str:
    """The implementation before issue 15: every rewrite on every text."""
    t = text.lower()

    def date(m: re.Match[str]) -> str:
        month, day, year = _MONTHS[m.group(1)], int(m.group(2)), m.group(3)
        if not 1 <= day <= 31:
            return m.group(0)
        return f"{year}-{month:02d}-{day:02d}" if year else f"{month:02d}-{day:02d}"

    t = _PROSE_DATE.sub(date, t)
    t = _CURRENCY.sub("", t)
    t = _THOUSANDS.sub("", t)
    return _ZERO_CENTS.sub("", t)


def tokens_always(text: str) -> list[str]:
    """The implementation before issue 15: every check on every token."""
    out: list[str] = []
    for tok in _TOKEN.findall(normalise_always(text)):
        tok = tok.strip("_")
        if not tok:
            continue
        out.append(tok)
        if "/" in tok and (name := tok.rsplit("/", 1)[-1]):
            out.append(name)
        elif _ISO_DATE.fullmatch(tok):
            out.append(tok[5:])
    return out


PIECES = [
    *_MONTHS,
    *(m.title() for m in _MONTHS),
    "May 20, 2024",
    "Sept. 3",
    "dec 45",
    "June\n7th, 2023",
    "$1,339.00",
    "€5",
    "£ 7",
    "¥12.50",
    "1,000",
    "12,34",
    "3.0",
    "7.05",
    "2024-05-20",
    "2024-05-20T10:00",
    "1999-12-31/x",
    "/docs/log.csv",
    "a/_",
    "src/app.py",
    "__init__",
    "_",
    "user_id",
    "L1002",
    "ok",
    "market",
    "summary",
]
texts = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=8)), max_size=12).map(
    lambda parts: " ".join(parts)
)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
@example("Paid $1,339.00 on May 20, 2024 to /docs/log.csv and __x__ on 2024-05-20")
@example("a/_ and _ and ___")
@example("")
def test_normalise_and_tokens_match_the_unconditional_versions(text: str) -> None:
    assert normalise(text) == normalise_always(text)
    assert tokens(text) == tokens_always(text)


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=80))
def test_normalise_and_tokens_match_on_arbitrary_text(text: str) -> None:
    assert normalise(text) == normalise_always(text)
    assert tokens(text) == tokens_always(text)
