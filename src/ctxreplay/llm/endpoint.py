"""What every model-calling plugin shares: its endpoint parameters and a lazily built client.

The LLM judge and the LLM planners all reach a model the same way. Their parameters extend
:class:`EndpointParams`; :class:`LazyClient` builds the :class:`~.client.ModelClient` on first use
(a plugin pickles as its parameters only, so each worker process builds its own client).

An engine hands its run folder to a plugin with :func:`in_run`: the plugin's client then writes
one row per call to ``RUN/calls/`` (:mod:`.calls`), under the plugin's label, and keeps its
responses in ``RUN/llm-cache/`` unless told another cache.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypeVar

from .cache import default_cache_dir
from .limiter import forget_limiters
from .request import forget_quirks

if TYPE_CHECKING:
    from .client import ModelClient

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
        "run_dir",
    }
)


@dataclass(frozen=True)
class EndpointParams:
    """An OpenAI-compatible endpoint. The defaults point at ``ctxreplay local-model serve``.

    ``cache_dir``: ``auto`` ($CTXREPLAY_CACHE_DIR/llm, or the run's own folder when an engine
    runs it), ``off``, or a folder. ``tariff``: a name from the tariffs file, or empty for the
    model's own name when it has one (else the cost is unknown, not zero). ``run_dir``: the run
    folder whose ``calls`` table records every call (set by the engines; empty: none).
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
    run_dir: str = ""


P = TypeVar("P")


#: the folder of a run holding the responses of its model calls (``cache_dir=auto``)
RUN_CACHE = "llm-cache"


def in_run(params: P, run_dir: str | os.PathLike[str]) -> P:
    """``params`` with ``run_dir`` set, and ``cache_dir=auto`` made the run's own
    ``llm-cache/``, when they are endpoint parameters (else unchanged): a killed or re-run
    stage, on any worker or node that reaches the run, is served its answers from there."""
    if isinstance(params, EndpointParams):
        cache = params.cache_dir
        if cache.strip().lower() == "auto":
            cache = os.path.join(os.fspath(run_dir), RUN_CACHE)
        return replace(params, run_dir=str(run_dir), cache_dir=cache)
    return params


def resolve_cache_dir(value: str) -> str | None:
    cache = value.strip()
    if cache.lower() in ("", "off", "none", "false"):
        return None
    if cache.lower() == "auto":
        return str(default_cache_dir())
    return cache


def forget_endpoints() -> None:
    """Drop every remembered limiter and quirk (tests; a long-lived process after reconfiguring)."""
    forget_limiters()
    forget_quirks()


class LazyClient:
    """One client per process, built from endpoint parameters when first needed; ``caller``
    names the plugin in the run's ``calls`` table."""

    def __init__(self, params: EndpointParams, caller: str = "") -> None:
        self.params = params
        self.caller = caller
        self._client: ModelClient | None = None
        self._lock = threading.Lock()

    def get(self) -> ModelClient:
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
                    run_dir=p.run_dir or None,
                    caller=self.caller,
                )
            return self._client

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()
