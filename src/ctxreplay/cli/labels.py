"""``deps:LABELS`` option values: the path of a dependency-labels set."""

from __future__ import annotations

from typing import overload

from ..errors import ParameterError


@overload
def deps_labels(value: str) -> str | None: ...
@overload
def deps_labels(value: str, option: str) -> str: ...
def deps_labels(value: str, option: str | None = None) -> str | None:
    """The labels path of a ``deps:LABELS`` value. Given the ``option`` it came from, the value
    must be ``deps:LABELS``; without it, anything else is None."""
    from ..engines.calibrate import parse_deps_against

    labels = parse_deps_against(value)
    if labels is None and option is not None:
        raise ParameterError(f"{option} takes deps:LABELS, not {value!r}")
    return labels
