"""The request: what determines an answer (its canonical form is the cache key), the body sent
for it, and what each endpoint was found to refuse.

- **reproducible requests**: temperature 0 and a seed are sent; an endpoint that rejects a
  parameter (``seed``, ``temperature``, ``max_tokens`` → ``max_completion_tokens``) with a 400 gets
  the request again without it, and the endpoint is remembered for the rest of the process.
- **structured output** with a fallback chain: strict ``json_schema`` → ``json_object`` → plain
  text (the answer parsed for its last balanced ``{...}``); the client steps down when the
  endpoint answers 400/422 about ``response_format`` and remembers that per endpoint and model.

The canonical request holds the format asked for, never the step-downs: an answer cached after a
fallback is found again by the same request.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: structured-output levels, strictest first
FORMAT_LEVELS: tuple[str, ...] = ("json_schema", "json_object", "text")
_FORMAT_WORDS = (
    "response_format",
    "response format",
    "json_schema",
    "json_object",
    "structured output",
    "guided",
    "grammar",
)


def _format_object(response_format: Mapping[str, Any]) -> tuple[int | None, dict[str, Any] | None]:
    kind = response_format.get("type")
    if kind == "json_schema":
        return 0, dict(response_format.get("json_schema") or {})
    if kind == "json_object":
        return 1, None
    if kind == "text":
        return None, None
    raise ValueError(f"unknown response_format type {kind!r}")


def norm_format(
    response_format: str | Mapping[str, Any] | None,
    schema: Mapping[str, Any] | None,
    schema_name: str,
) -> tuple[int | None, dict[str, Any] | None]:
    """(requested level, json_schema block) from the caller's arguments."""
    if isinstance(response_format, Mapping):
        return _format_object(response_format)
    if response_format is None and schema is not None:
        response_format = "json_schema"
    if response_format is None:
        return None, None
    if response_format not in FORMAT_LEVELS:
        raise ValueError(
            f"response_format must be one of {', '.join(FORMAT_LEVELS)} or None; "
            f"got {response_format!r}"
        )
    if response_format != "json_schema":
        return FORMAT_LEVELS.index(response_format), None
    if schema is None:
        raise ValueError("response_format='json_schema' needs a schema")
    return 0, {"name": schema_name, "strict": True, "schema": dict(schema)}


def canonical_request(
    base_url: str,
    model: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    response_format: str | Mapping[str, Any] | None = None,
    schema: Mapping[str, Any] | None = None,
    schema_name: str = "output",
    tools: Sequence[Mapping[str, Any]] | None = None,
    tool_choice: str | Mapping[str, Any] | None = None,
    temperature: float | None = 0.0,
    seed: int | None = 0,
    max_tokens: int | None = 1024,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Everything that determines the answer; its sha256 is the cache key and prompt hash."""
    level, block = norm_format(response_format, schema, schema_name)
    return {
        "base_url": base_url,
        "model": model,
        "messages": [dict(m) for m in messages],
        "tools": [dict(t) for t in tools] if tools else None,
        "tool_choice": tool_choice,
        "format": FORMAT_LEVELS[level] if level is not None else None,
        "json_schema": block,
        "temperature": temperature,
        "seed": seed,
        "max_tokens": max_tokens,
        "extra": dict(extra) if extra else None,
    }


def requested_level(request: Mapping[str, Any]) -> int | None:
    fmt = request["format"]
    return FORMAT_LEVELS.index(fmt) if fmt else None


# --- what an endpoint refuses ---------------------------------------------------------------


@dataclass
class EndpointQuirks:
    """What one (endpoint, model) was found to reject, remembered for the process."""

    format_floor: int = 0  # index into FORMAT_LEVELS of the strictest accepted format
    dropped: set[str] = field(default_factory=set)  # parameters the endpoint refused
    max_tokens_field: str = "max_tokens"

    def level(self, requested: int | None) -> int | None:
        """The format level to send for a request that asks for ``requested``."""
        return max(requested, self.format_floor) if requested is not None else None

    def adapt(self, error_text: str, body: Mapping[str, Any], level: int | None) -> bool:
        """Step down after a 400/422 that names something the endpoint refuses; remember it.
        False when the error names nothing this can drop (the call has failed)."""
        low = error_text.lower()
        with _lock:
            return self._drop(low, body) or self._step_down(low, level)

    def _drop(self, low: str, body: Mapping[str, Any]) -> bool:
        if "seed" in body and "seed" in low:
            self.dropped.add("seed")
            return True
        if (
            "max_tokens" in body
            and "max_completion_tokens" in low
            and self.max_tokens_field == "max_tokens"
        ):
            self.max_tokens_field = "max_completion_tokens"
            return True
        if (
            "temperature" in body
            and "temperature" in low
            and "response_format" not in low
            and "temperature" not in self.dropped
        ):
            self.dropped.add("temperature")
            return True
        return False

    def _step_down(self, low: str, level: int | None) -> bool:
        if level is None or level >= len(FORMAT_LEVELS) - 1:
            return False
        if not any(w in low for w in _FORMAT_WORDS):
            return False
        self.format_floor = max(self.format_floor, level + 1)
        return True


def request_body(
    request: Mapping[str, Any], level: int | None, quirks: EndpointQuirks | None = None
) -> dict[str, Any]:
    """The chat-completions body for ``request`` at format ``level``, less what ``quirks`` says
    the endpoint refuses (None: as asked, e.g. for a Batch API line)."""
    quirks = quirks or EndpointQuirks()
    body: dict[str, Any] = {"model": request["model"], "messages": request["messages"]}
    if request["tools"]:
        body["tools"] = request["tools"]
        if request["tool_choice"] is not None:
            body["tool_choice"] = request["tool_choice"]
    for name in ("temperature", "seed"):
        if request[name] is not None and name not in quirks.dropped:
            body[name] = request[name]
    if request["max_tokens"] is not None:
        body[quirks.max_tokens_field] = request["max_tokens"]
    if level == 0:
        body["response_format"] = {"type": "json_schema", "json_schema": request["json_schema"]}
    elif level == 1:
        body["response_format"] = {"type": "json_object"}
    if request["extra"]:
        body.update(request["extra"])
    return body


_lock = threading.Lock()
_quirks: dict[tuple[str, str], EndpointQuirks] = {}


def endpoint_quirks(base_url: str, model: str) -> EndpointQuirks:
    key = (base_url.rstrip("/"), model)
    with _lock:
        return _quirks.setdefault(key, EndpointQuirks())


def forget_quirks() -> None:
    with _lock:
        _quirks.clear()
