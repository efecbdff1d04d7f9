"""Recorded times as importers meet them: epoch numbers of any unit, or ISO 8601 text.

Formats record times as seconds, milliseconds, microseconds or nanoseconds since 1970, as
numbers or digits, or as ISO 8601 text. These helpers turn them into one form (integer
nanoseconds, or ISO text for a message) and tell a value that is there but unusable
(``InvalidTime``) from one that is absent, so importers can flag it instead of guessing.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

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
    """Nanoseconds since 1970 as ISO 8601 UTC text (``Z``), to the microsecond."""
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
