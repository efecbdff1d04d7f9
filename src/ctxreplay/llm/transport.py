"""The HTTP side of a call: one POST of a chat-completions body through the ``openai`` SDK, its
answer as ``(status, text)`` and its failure as an :class:`HttpFailure`, never an exception.

The SDK's own retries are off (``max_retries=0``): retries live in :mod:`.retries`, so that
every attempt passes the per-endpoint limiter. Body keys the SDK's ``create`` does not name go
in ``extra_body``, so the bytes sent are the body as built, whatever the SDK version.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import openai

#: sent when the key variable is unset: local servers ignore it, real providers answer 401
DUMMY_KEY = "sk-no-key-local"

_CREATE_PARAMS = frozenset(
    inspect.signature(openai.resources.chat.completions.Completions.create).parameters
) - {"self", "extra_headers", "extra_query", "extra_body", "timeout"}


@dataclass(frozen=True)
class HttpFailure:
    """A POST that brought no answer."""

    failure: str  # "http 500", "timeout", "connection error"
    status: int | None = None
    headers: Any = None  # the response's headers (Retry-After), when there was a response
    text: str = ""  # the endpoint's error message


def _error_text(e: openai.APIStatusError) -> str:
    """The endpoint's error message (from its JSON body when there is one)."""
    body = e.body
    if isinstance(body, Mapping):
        err = body.get("error", body)
        if isinstance(err, Mapping) and err.get("message"):
            return str(err.get("message"))
        return json.dumps(body)[:500]
    try:
        return e.response.text[:500]
    except Exception:  # a streamed/closed response has no text; the status line is enough
        return str(e.message)


class Transport:
    """An ``openai.OpenAI`` client for one ``base_url``; ``api_key`` None sends a dummy key."""

    def __init__(self, base_url: str, api_key: str | None, timeout: float) -> None:
        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key or DUMMY_KEY, max_retries=0, timeout=timeout
        )

    def post(self, body: Mapping[str, Any]) -> tuple[int, str] | HttpFailure:
        """POST ``body`` to ``/chat/completions``: ``(status, response text)`` or the failure."""
        kwargs = {k: v for k, v in body.items() if k in _CREATE_PARAMS}
        extra = {k: v for k, v in body.items() if k not in _CREATE_PARAMS}
        if extra:
            kwargs["extra_body"] = extra
        try:
            raw = self._client.chat.completions.with_raw_response.create(**kwargs)
        except openai.APITimeoutError:
            return HttpFailure("timeout")
        except openai.APIConnectionError:
            return HttpFailure("connection error")
        except openai.APIStatusError as e:
            return HttpFailure(
                f"http {e.status_code}", e.status_code, e.response.headers, _error_text(e)
            )
        return raw.status_code, str(raw.text)

    def close(self) -> None:
        self._client.close()
