"""Importers: one module per trace format, registered by name, detected from file contents."""

from __future__ import annotations

from pathlib import Path

from .base import SNIFF_BYTES, Importer, Record, importers


def detect(path: Path) -> str | None:
    """The registered format most confident about ``path``, or None."""
    with path.open("rb") as f:
        head = f.read(SNIFF_BYTES)
    best: tuple[float, str] | None = None
    for name, cls in importers.items():
        importer = cls()
        if path.suffix and importer.suffixes and path.suffix not in importer.suffixes:
            continue
        score = importer.sniff(path, head)
        if score > 0.3 and (best is None or score > best[0]):
            best = (score, name)
    return best[1] if best else None


def get_importer(name: str) -> Importer:
    return importers.get(name)()


__all__ = ["Importer", "Record", "detect", "get_importer", "importers"]
