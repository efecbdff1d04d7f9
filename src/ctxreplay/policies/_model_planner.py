"""What the model-driven planners share: endpoint parameters, a lazily built client, bookkeeping.

``self-gc:planner=llm`` and ``agent-forgetting:planner=llm`` call any OpenAI-compatible endpoint
through :class:`~ctxreplay.llm.client.ModelClient`, so they get its response cache, retries,
per-endpoint concurrency limit and cost accounting. The client holds sockets and locks: a policy
pickles as its parameters only, and each worker process builds its own client on first use.

Every call's prompt hash, the parameters actually sent, token usage and cost go into
``Plan.meta`` (the engine writes them to the figures table). A call that fails — timeout,
refusal, output that cannot be read — raises :class:`ModelPlannerError`, which the harness turns
into a recorded planner failure with the prefix unchanged, never a silent keep-all; the error
carries the same bookkeeping in ``.meta``, since the tokens were spent all the same.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass
from typing import Any, ClassVar

from ..llm.cache import default_cache_dir
from ..registry import params_label
from ..replay.plan import PlannerError

#: parameters that change how a planner reaches its model, not what it decides: left out of the
#: policy label, so a run keeps its folders when the endpoint URL or the cache folder moves
OPERATIONAL: frozenset[str] = frozenset(
    {
        "base_url",
        "api_key_env",
        "timeout",
        "max_retries",
        "concurrency",
        "cache_dir",
        "tariffs_path",
    }
)


@dataclass(frozen=True)
class ModelParams:
    """Endpoint parameters of a model-driven planner (used only when ``planner=llm``).

    The defaults point at ``ctxreplay local-model serve`` (SmolLM2-135M on 127.0.0.1:8089).
    ``cache_dir``: ``auto`` ($CTXREPLAY_CACHE_DIR/llm), ``off``, or a folder. ``tariff``: a name
    from the tariffs file, or empty for the model's own name when it has one (else the cost is
    unknown, not zero).
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
    temperature: float = 0.0
    seed: int = 0
    max_tokens: int = 800


class ModelPlannerError(PlannerError):
    """A planner failure with what the failed attempt cost (tokens, prompt hash, parameters)."""

    def __init__(self, reason: str, meta: dict[str, Any] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.meta: dict[str, Any] = {**(meta or {}), "failure": reason}


class ModelPlannerMixin:
    """Client handling for a :class:`~ctxreplay.policies.base.Policy` whose Params extend
    :class:`ModelParams`. Subclasses call ``_init_model()`` from ``__init__``."""

    operational: ClassVar[frozenset[str]] = OPERATIONAL
    name: ClassVar[str]
    params: Any

    def _init_model(self) -> None:
        self._client: Any = None
        self._client_lock = threading.Lock()

    @property
    def label(self) -> str:
        """Name plus changed parameters, endpoint plumbing left out (see ``OPERATIONAL``)."""
        defaults = type(self.params)()
        kept = {
            f.name: getattr(defaults if f.name in self.operational else self.params, f.name)
            for f in dataclasses.fields(self.params)
        }
        return params_label(self.name, type(self.params)(**kept))

    @property
    def client(self) -> Any:
        from ..llm.client import ModelClient  # the openai SDK loads only when a model is used

        with self._client_lock:
            if self._client is None:
                p = self.params
                cache = p.cache_dir.strip()
                if cache.lower() in ("", "off", "none", "false"):
                    cache_dir = None
                elif cache.lower() == "auto":
                    cache_dir = default_cache_dir()
                else:
                    cache_dir = cache
                self._client = ModelClient(
                    p.base_url,
                    p.model,
                    api_key_env=p.api_key_env or None,
                    timeout=p.timeout,
                    max_retries=p.max_retries,
                    concurrency=p.concurrency,
                    cache_dir=cache_dir,
                    tariff=p.tariff or None,
                    tariffs_path=p.tariffs_path or None,
                )
            return self._client

    def close(self) -> None:
        with self._client_lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def model_settings(self) -> dict[str, Any]:
        """Endpoint settings for the run manifest (the key's variable name, never its value)."""
        p = self.params
        return {
            "base_url": p.base_url,
            "model": p.model,
            "api_key_env": p.api_key_env,
            "cache_dir": p.cache_dir,
            "tariff": p.tariff or None,
            "temperature": p.temperature,
            "seed": p.seed,
            "max_tokens": p.max_tokens,
        }

    # the client holds sockets and locks: workers rebuild it from the params
    def __getstate__(self) -> dict[str, Any]:
        return {"params": self.params}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["params"])  # type: ignore[misc]


def completion_meta(completion: Any) -> dict[str, Any]:
    """The bookkeeping of one model answer, under the keys the engine's figures read.

    ``usd`` is what the call costs at the tariff even when our cache served it: it is the
    planner's L_GC in the replayed system, not what this replay spent.
    """
    return {
        "planner": "llm",
        "prompt_tokens": completion.usage.prompt_tokens,
        "completion_tokens": completion.usage.completion_tokens,
        "cached_tokens": completion.usage.cached_tokens,
        "usd": completion.usd,
        "prompt_hash": completion.prompt_hash,
        "params_sent": completion.params_sent,
        "cache_hit": completion.cache_hit,
        "attempts": completion.attempts,
        "finish_reason": completion.finish_reason,
        "response_format": completion.response_format,
        "model": completion.model,
    }


def call_failure_meta(error: Any) -> dict[str, Any]:
    """Bookkeeping of a call that failed for good (``ModelCallError``)."""
    return {
        "planner": "llm",
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "usd": None,
        "prompt_hash": error.prompt_hash,
        "attempts": error.attempts,
    }
