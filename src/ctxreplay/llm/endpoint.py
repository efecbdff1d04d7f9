"""What every model-calling plugin shares: its endpoint parameters and a lazily built client.

The LLM judge and the LLM planners all reach a model the same way. Their parameters extend
:class:`EndpointParams`; :class:`LazyClient` builds the :class:`~.client.ModelClient` on first use
(a plugin pickles as its parameters only, so each worker process builds its own client).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from .cache import default_cache_dir

#: parameters that change how a plugin reaches its model, not what it decides: left out of its
#: label, so verdicts and runs survive a new endpoint URL, concurrency or cache folder
OPERATIONAL: frozenset[str] = frozenset(
    {
        "base_url",
        "api_key_env",
        "timeout",
        "max_retries",
        "concurrency",
        "cache_dir",
        "tariff",
        "tariffs_path",
    }
)


@dataclass(frozen=True)
class EndpointParams:
    """An OpenAI-compatible endpoint. The defaults point at ``ctxreplay local-model serve``.

    ``cache_dir``: ``auto`` ($CTXREPLAY_CACHE_DIR/llm, or the run's own folder when an engine
    runs it), ``off``, or a folder. ``tariff``: a name from the tariffs file, or empty for the
    model's own name when it has one (else the cost is unknown, not zero).
    """

    base_url: str = "http://127.0.0.1:8089/v1"
    model: str = "SmolLM2-135M-Instruct"
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 120.0
    max_retries: int = 3
    concurrency: int = 4
    cache_dir: str = "auto"
    tariff: str = ""
    tariffs_path: str = ""


def resolve_cache_dir(value: str) -> str | None:
    cache = value.strip()
    if cache.lower() in ("", "off", "none", "false"):
        return None
    if cache.lower() == "auto":
        return str(default_cache_dir())
    return cache


class LazyClient:
    """One client per process, built from endpoint parameters when first needed."""

    def __init__(self, params: EndpointParams) -> None:
        self.params = params
        self._client: Any = None
        self._lock = threading.Lock()

    def get(self) -> Any:
        from .client import ModelClient  # the openai SDK loads only when a model is used

        with self._lock:
            if self._client is None:
                p = self.params
                self._client = ModelClient(
                    p.base_url,
                    p.model,
                    api_key_env=p.api_key_env or None,
                    timeout=p.timeout,
                    max_retries=p.max_retries,
                    concurrency=p.concurrency,
                    cache_dir=resolve_cache_dir(p.cache_dir),
                    tariff=p.tariff or None,
                    tariffs_path=p.tariffs_path or None,
                )
            return self._client

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()
