"""The shared model-client layer: every model call ctxreplay makes goes through here.

- :class:`ModelClient` — an OpenAI-compatible endpoint with retries, structured-output
  fallbacks, a per-endpoint concurrency limit, an on-disk response cache and costs.
- :class:`Completion` — one answer and how it was obtained; :class:`ModelCallError` — a call
  that failed for good (callers record it, never treat it as a default answer).
- :mod:`.batch` — OpenAI Batch API input/output files for large offline runs.
- :class:`LocalModelServer` — SmolLM2-135M served offline by xllamacpp, for tests and demos.
"""

from .batch import read_batch_output, write_batch_input
from .cache import ResponseCache, default_cache_dir, request_key
from .client import (
    Completion,
    EndpointLimiter,
    ModelCallError,
    ModelClient,
    TokenUsage,
    ToolCall,
    endpoint_limiter,
    endpoint_quirks,
    forget_endpoints,
    parse_json_answer,
    retry_after_seconds,
)
from .local import LocalModelServer, LocalModelUnavailable, find_gguf, local_model_available

__all__ = [
    "Completion",
    "EndpointLimiter",
    "LocalModelServer",
    "LocalModelUnavailable",
    "ModelCallError",
    "ModelClient",
    "ResponseCache",
    "TokenUsage",
    "ToolCall",
    "default_cache_dir",
    "endpoint_limiter",
    "endpoint_quirks",
    "find_gguf",
    "forget_endpoints",
    "local_model_available",
    "parse_json_answer",
    "read_batch_output",
    "request_key",
    "retry_after_seconds",
    "write_batch_input",
]
