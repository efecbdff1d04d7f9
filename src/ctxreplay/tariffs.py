"""Model prices (USD per 1M tokens), read by both the cost model and the model client.

Built-in prices are ``ctxreplay/data/tariffs.toml``; ``--tariffs FILE`` reads another file of the
same shape (``default = "name"`` and ``[models.<name>]`` with ``input``, ``output`` and optional
``cached_input`` and ``cache_write``).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from .errors import ParameterError


@dataclass(frozen=True)
class Tariff:
    name: str
    input: float  # USD per 1M prompt tokens not served from cache
    cached_input: float  # USD per 1M cached prompt tokens
    output: float  # USD per 1M completion tokens
    cache_write: float | None = None  # USD per 1M tokens written to the cache; None: input price

    @property
    def write_rate(self) -> float:
        return self.cache_write if self.cache_write is not None else self.input

    def cost(self, prompt: int, cached: int, completion: int) -> float:
        cached = max(0, min(cached, prompt))
        return (
            (prompt - cached) * self.input + cached * self.cached_input + completion * self.output
        ) / 1e6


class TariffError(ParameterError):
    """An unknown tariff name or an unreadable tariff file."""


@cache
def _load(path: str | None) -> tuple[str, dict[str, Tariff]]:
    if path is None:
        text = resources.files("ctxreplay.data").joinpath("tariffs.toml").read_text()
    else:
        text = Path(path).read_text()
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise TariffError(f"{path or 'built-in tariffs'}: {e}") from None
    models: dict[str, Tariff] = {}
    for name, t in doc.get("models", {}).items():
        try:
            write = t.get("cache_write")
            models[name] = Tariff(
                name,
                float(t["input"]),
                float(t.get("cached_input", t["input"])),
                float(t["output"]),
                float(write) if write is not None else None,
            )
        except (KeyError, TypeError, ValueError) as e:
            raise TariffError(
                f"tariff {name!r} in {path or 'built-in tariffs'}: needs input and output ({e})"
            ) from None
    return str(doc.get("default", next(iter(models), ""))), models


def load_tariff(name: str | None = None, path: str | os.PathLike[str] | None = None) -> Tariff:
    default, models = _load(str(path) if path else None)
    key = name or default
    if key not in models:
        raise TariffError(f"unknown tariff {key!r}; available: {', '.join(sorted(models))}")
    return models[key]
