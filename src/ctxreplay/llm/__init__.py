"""The shared model-client layer: every model call ctxreplay makes goes through here.

- :class:`ModelClient` — an OpenAI-compatible endpoint with retries, structured-output
  fallbacks, a per-endpoint concurrency limit, an on-disk response cache and costs.
- :class:`Completion` — one answer and how it was obtained; :class:`ModelCallError` — a call
  that failed for good (callers record it, never treat it as a default answer).
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
    "Completion": "client",
    "EndpointLimiter": "client",
    "ModelCallError": "client",
    "ModelClient": "client",
    "TokenUsage": "client",
    "ToolCall": "client",
    "endpoint_limiter": "client",
    "endpoint_quirks": "client",
    "forget_endpoints": "client",
    "parse_json_answer": "client",
    "retry_after_seconds": "client",
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
