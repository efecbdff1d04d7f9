"""What a model call gives back: :class:`Completion` (with its :class:`ToolCall` and
:class:`TokenUsage`), or :class:`ModelCallError` with a short reason that is safe to store.

:func:`read_response` turns a chat-completions response body into the parts of a completion,
tolerating the small differences between servers (content as a list of parts, arguments as an
object); :func:`redact` is applied to every piece of endpoint text before it is kept: error text
(also anything shaped like a key), and the answer itself — text, tool calls, refusal, model name
— so an endpoint that echoes the API key gets it stored nowhere (:func:`scrub`).
:func:`is_transient` tells a failure worth asking again (``judge --retry-unscored``) by its
reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..errors import CtxreplayError

_KEYLIKE = re.compile(r"\b(sk-[A-Za-z0-9_\-*]{6,}|Bearer\s+\S+)")


REDACTED = "[redacted]"

#: a secret shorter than this is not looked for in answers (a one-letter dummy key would wreck
#: every answer); error text is redacted of any secret
MIN_SECRET = 8

Secrets = str | Iterable[str] | None


def _secrets(secret: Secrets) -> list[str]:
    found = [secret] if isinstance(secret, str) else list(secret or ())
    return sorted({s for s in found if s}, key=len, reverse=True)  # longest first


def redact(text: str, secret: Secrets = None) -> str:
    """``text`` with each secret and anything shaped like an API key or bearer token replaced."""
    for s in _secrets(secret):
        text = text.replace(s, REDACTED)
    return _KEYLIKE.sub(REDACTED, text)


def redact_secrets(value: Any, secret: Secrets) -> Any:
    """``value`` (a string, or JSON made of dicts, lists and strings) with every secret of at
    least :data:`MIN_SECRET` characters replaced, and nothing else changed."""
    secrets = [s for s in _secrets(secret) if len(s) >= MIN_SECRET]
    if not secrets:
        return value

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            for s in secrets:
                if s in v:
                    v = v.replace(s, REDACTED)
            return v
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, tuple):
            return tuple(walk(x) for x in v)
        if isinstance(v, dict):
            return {walk(k): walk(x) for k, x in v.items()}
        return v

    return walk(value)


#: the reason the client gives a transient failure that outlasted its retries
#: (``ModelClient._call``: "http 503 after 4 attempts", "timeout after 1 attempt")
_TRANSIENT = re.compile(
    r"^(?:http (?:408|409|429|5\d\d)|timeout|connection error) after \d+ attempts?$"
)
#: how callers prefix a failed call's reason (the LLM judge, the model planners)
_CALLER_PREFIX = "model call failed: "


def is_transient(reason: str | None) -> bool:
    """Whether a failure reason (a :class:`ModelCallError`'s, or an unscored verdict's
    ``model call failed: …``) says the call ran out of retries on a timeout, a connection error,
    a 429 or a 5xx: worth asking again later. An answer that came back (malformed, refused,
    outside the schema), a 4xx and an over-budget prompt are not."""
    if not reason:
        return False
    if reason.startswith(_CALLER_PREFIX):
        reason = reason[len(_CALLER_PREFIX) :]
    return _TRANSIENT.match(reason.strip()) is not None


class ModelCallError(CtxreplayError, RuntimeError):
    """A model call that failed for good. ``reason`` is short and safe to store."""

    def __init__(
        self,
        reason: str,
        *,
        attempts: int = 0,
        status: int | None = None,
        prompt_hash: str | None = None,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.attempts = attempts
        self.status = status
        self.prompt_hash = prompt_hash


class EndpointUnreachable(CtxreplayError):
    """The endpoint refused or dropped this many connections in a row that the run stops: every
    later call would fail the same way (and be paid in time), so nothing is gained going on."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # the JSON text the model produced

    def arguments_object(self) -> Any:
        try:
            return json.loads(self.arguments or "{}")
        except ValueError:
            return self.arguments


@dataclass(frozen=True, slots=True)
class TokenUsage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int | None = None  # None: the endpoint did not say


@dataclass(frozen=True)
class Completion:
    """One model answer and how it was obtained."""

    text: str
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str | None
    usage: TokenUsage
    usd: float | None  # None when no tariff is known for the model
    cache_hit: bool
    prompt_hash: str  # sha256 of the canonical request (the cache key)
    params_sent: dict[str, Any]  # the request body as sent on the last attempt, no key
    attempts: int  # HTTP requests made for this answer (0 on a cache hit)
    model: str | None = None  # the model name the endpoint answered with
    response_format: str | None = None  # json_schema | json_object | text | None (not asked)
    parsed: Any = None  # the JSON answer, when structured output was asked and parsed
    parse_error: str | None = None
    refusal: str | None = None
    elapsed_s: float = 0.0

    def as_message(self) -> dict[str, Any]:
        """The answer as an OpenAI assistant message, to append to a running conversation."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.text or None}
        if self.tool_calls:
            msg["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in self.tool_calls
            ]
        return msg

    def to_record(self) -> dict[str, Any]:
        """The completion as the response cache stores it."""
        return {
            "text": self.text,
            "tool_calls": [[c.id, c.name, c.arguments] for c in self.tool_calls],
            "finish_reason": self.finish_reason,
            "usage": [
                self.usage.prompt_tokens,
                self.usage.completion_tokens,
                self.usage.cached_tokens,
            ],
            "usd": self.usd,
            "prompt_hash": self.prompt_hash,
            "params_sent": self.params_sent,
            "attempts": self.attempts,
            "model": self.model,
            "response_format": self.response_format,
            "parsed": self.parsed,
            "parse_error": self.parse_error,
            "refusal": self.refusal,
            "elapsed_s": self.elapsed_s,
        }

    @staticmethod
    def from_record(record: Mapping[str, Any], *, cache_hit: bool = True) -> Completion:
        """The inverse of :meth:`to_record`; a cache hit made no request and took no time."""
        r = {**_RECORD_DEFAULTS, **{k: v for k, v in record.items() if v is not None}}
        prompt, completion, cached = r["usage"]
        return Completion(
            text=r["text"],
            tool_calls=tuple(ToolCall(*c) for c in r["tool_calls"]),
            finish_reason=r["finish_reason"],
            usage=TokenUsage(int(prompt or 0), int(completion or 0), cached),
            usd=r["usd"],
            cache_hit=cache_hit,
            prompt_hash=str(r["prompt_hash"]),
            params_sent=dict(r["params_sent"]),
            attempts=0 if cache_hit else int(r["attempts"]),
            model=r["model"],
            response_format=r["response_format"],
            parsed=r["parsed"],
            parse_error=r["parse_error"],
            refusal=r["refusal"],
            elapsed_s=0.0 if cache_hit else float(r["elapsed_s"]),
        )


#: what a record lacks (or holds as null) reads as
_RECORD_DEFAULTS: dict[str, Any] = {
    "text": "",
    "tool_calls": (),
    "finish_reason": None,
    "usage": (0, 0, None),
    "usd": None,
    "prompt_hash": "",
    "params_sent": {},
    "attempts": 0,
    "model": None,
    "response_format": None,
    "parsed": None,
    "parse_error": None,
    "refusal": None,
    "elapsed_s": 0.0,
}


def scrub(c: Completion, secret: Secrets) -> Completion:
    """``c`` with every secret (:func:`redact_secrets`) removed from what the endpoint said:
    text, tool calls, refusal, parsed answer, parse error and model name; the same object when
    there was none."""
    if not [s for s in _secrets(secret) if len(s) >= MIN_SECRET]:
        return c
    fields = {
        "text": c.text,
        "tool_calls": [[t.id, t.name, t.arguments] for t in c.tool_calls],
        "refusal": c.refusal,
        "parsed": c.parsed,
        "parse_error": c.parse_error,
        "model": c.model,
        "finish_reason": c.finish_reason,
    }
    clean = redact_secrets(fields, secret)
    if clean == fields:
        return c
    return replace(
        c,
        text=clean["text"],
        tool_calls=tuple(ToolCall(*t) for t in clean["tool_calls"]),
        refusal=clean["refusal"],
        parsed=clean["parsed"],
        parse_error=clean["parse_error"],
        model=clean["model"],
        finish_reason=clean["finish_reason"],
    )


# --- reading a response body ----------------------------------------------------------------


@dataclass(frozen=True)
class Response:
    """The parts of a chat-completions response body that make a :class:`Completion`."""

    text: str
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str | None
    usage: TokenUsage
    model: str | None
    refusal: str | None


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _message_text(content: Any) -> str:
    if isinstance(content, list):  # some servers answer with content parts
        content = "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return content if isinstance(content, str) else ""


def _tool_calls(message: Mapping[str, Any]) -> tuple[ToolCall, ...]:
    calls = []
    for c in message.get("tool_calls") or ():
        if not isinstance(c, Mapping):
            continue
        fn = _mapping(c.get("function"))
        args = fn.get("arguments")
        calls.append(
            ToolCall(
                str(c.get("id") or ""),
                str(fn.get("name") or ""),
                args if isinstance(args, str) else json.dumps(args or {}),
            )
        )
    return tuple(calls)


def _usage(doc: Mapping[str, Any]) -> TokenUsage:
    u = _mapping(doc.get("usage"))
    cached = _mapping(u.get("prompt_tokens_details")).get("cached_tokens")
    return TokenUsage(
        int(u.get("prompt_tokens") or 0),
        int(u.get("completion_tokens") or 0),
        cached if isinstance(cached, int) else None,
    )


def _first_choice(doc: Any, secret: Secrets) -> Mapping[str, Any]:
    if not isinstance(doc, Mapping):
        raise ValueError("body is not a JSON object")
    if "error" in doc and not doc.get("choices"):
        err = doc["error"]
        msg = err.get("message") if isinstance(err, Mapping) else err
        raise ValueError(f"error in body: {redact(str(msg), secret)[:200]}")
    choices = doc.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise ValueError("no choices")
    return choices[0]


def read_response(doc: Any, secret: Secrets = None) -> Response:
    """The answer in a chat-completions body, with every secret redacted from what it says;
    raises ValueError (a short, redacted reason) for a body that is not one."""
    choice = _first_choice(doc, secret)
    message = choice.get("message")
    if not isinstance(message, Mapping):
        raise ValueError("choice has no message")
    refusal = message.get("refusal")
    model = doc.get("model")
    finish = choice.get("finish_reason")
    clean = redact_secrets(
        {
            "text": _message_text(message.get("content")),
            "tool_calls": [[c.id, c.name, c.arguments] for c in _tool_calls(message)],
            "finish_reason": finish if isinstance(finish, str) else None,
            "model": model if isinstance(model, str) else None,
            "refusal": refusal if isinstance(refusal, str) and refusal else None,
        },
        secret,
    )
    return Response(
        text=clean["text"],
        tool_calls=tuple(ToolCall(*c) for c in clean["tool_calls"]),
        finish_reason=clean["finish_reason"],
        usage=_usage(doc),
        model=clean["model"],
        refusal=clean["refusal"],
    )
