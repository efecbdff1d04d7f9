"""The shared model-client layer: every model call ctxreplay makes goes through here.

- :mod:`.client` — :class:`ModelClient`, an OpenAI-compatible endpoint with everything below.
- :mod:`.completion` — :class:`Completion`, one answer and how it was obtained;
  :class:`ModelCallError`, a call that failed for good (callers record it, never treat it as a
  default answer).
- :mod:`.request` — the canonical request (the cache key), the body sent, endpoint step-downs.
- :mod:`.transport` — one POST through the ``openai`` SDK, its failure as a value.
- :mod:`.retries` — bounded retries (``tenacity``) honouring Retry-After, with injectable sleep.
- :mod:`.limiter` — the adaptive per-endpoint concurrency limit.
- :mod:`.structured` — structured answers: one pydantic model gives the JSON schema sent and
  the validation of the answer.
- :mod:`.cache` — the on-disk response cache; :mod:`.calls` — the run's ``calls`` table.
- :mod:`.endpoint` — the parameters every model-calling plugin shares, and a lazy client.
- :mod:`.batch` — OpenAI Batch API input/output files for large offline runs.
- :class:`LocalModelServer` — SmolLM2-135M served offline by xllamacpp, for tests and demos.
"""

from importlib import import_module
from typing import Any

#: public name → the submodule defining it; imported on first use so that the CLI (and anything
#: else that does not call a model) starts without loading the openai client
_EXPORTS = {
    "read_batch_output": "batch",
    "write_batch_input": "batch",
    "ResponseCache": "cache",
    "default_cache_dir": "cache",
    "request_key": "cache",
    "CallLog": "calls",
    "ModelClient": "client",
    "forget_endpoints": "endpoint",
    "Completion": "completion",
    "ModelCallError": "completion",
    "TokenUsage": "completion",
    "ToolCall": "completion",
    "EndpointLimiter": "limiter",
    "endpoint_limiter": "limiter",
    "endpoint_quirks": "request",
    "retry_after_seconds": "retries",
    "Answer": "structured",
    "json_schema": "structured",
    "parse_json_answer": "structured",
    "read_answer": "structured",
    "LocalModelServer": "local",
    "LocalModelUnavailable": "local",
    "find_gguf": "local",
    "local_model_available": "local",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(import_module(f"{__name__}.{_EXPORTS[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
