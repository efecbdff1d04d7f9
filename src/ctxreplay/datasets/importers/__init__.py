"""Importers: one module per trace format, registered by name, detected from file contents.

Detection asks every registered importer how confident it is (``sniff``, from the file's first
records: keys and shapes, not text). The most confident wins; when the two best are close, the
file could be read either way and detection refuses to guess (``AmbiguousFormat``, naming the
candidates and ``--format``). A format whose files are also files of a more general one (a Cline
task's API history is an Anthropic message array) says so in ``Importer.refines``: where it is
sure of a file (``SURE_SCORE``), the general formats step back to ``CEDED_SCORE``.
"""

from __future__ import annotations

from pathlib import Path

from ...errors import CtxreplayError
from .base import SNIFF_BYTES, Importer, Record, importers

#: the least confidence that names a format
MIN_SCORE = 0.3
#: two formats closer than this (both above ``MIN_SCORE``) are ambiguous
AMBIGUITY_MARGIN = 0.15
#: how sure a format must be of a file for the formats it ``refines`` to step back
SURE_SCORE = 0.9
#: the most a refined format scores where its refinement is sure
CEDED_SCORE = 0.6


class AmbiguousFormat(CtxreplayError):
    """Two formats fit a file about equally well: the user must say which (``--format``)."""

    def __init__(self, path: Path, candidates: list[tuple[str, float]]) -> None:
        self.path = path
        self.candidates = candidates
        named = ", ".join(f"{name} ({score:.2f})" for name, score in candidates)
        super().__init__(
            f"{path}: the format is ambiguous, it fits {named}; "
            f"say which with --format {candidates[0][0]} (or another)"
        )


def scores(path: Path) -> list[tuple[str, float]]:
    """Every registered format's confidence about ``path``, best first (0 left out)."""
    with path.open("rb") as f:
        head = f.read(SNIFF_BYTES)
    found: list[tuple[str, float]] = []
    for name, cls in importers.items():
        importer = cls()
        if path.suffix and importer.suffixes and path.suffix not in importer.suffixes:
            continue
        try:
            score = float(importer.sniff(path, head))
        except Exception:  # a sniffer that fails on odd bytes has no opinion
            score = 0.0
        if score > 0:
            found.append((name, score))
    ceded = {
        general
        for name, score in found
        if score >= SURE_SCORE
        for general in importers.get(name).refines
    }
    found = [(name, min(score, CEDED_SCORE) if name in ceded else score) for name, score in found]
    return sorted(found, key=lambda item: (-item[1], item[0]))


def detect(path: Path) -> str | None:
    """The registered format most confident about ``path``, or None.

    Raises ``AmbiguousFormat`` when the two most confident formats are within
    ``AMBIGUITY_MARGIN`` of each other.
    """
    ranked = [(name, score) for name, score in scores(path) if score > MIN_SCORE]
    if not ranked:
        return None
    if len(ranked) > 1 and ranked[0][1] - ranked[1][1] < AMBIGUITY_MARGIN:
        close = [(n, s) for n, s in ranked if ranked[0][1] - s < AMBIGUITY_MARGIN]
        raise AmbiguousFormat(path, close)
    return ranked[0][0]


def get_importer(name: str) -> Importer:
    return importers.get(name)()


__all__ = [
    "AmbiguousFormat",
    "Importer",
    "Record",
    "detect",
    "get_importer",
    "importers",
    "scores",
]
