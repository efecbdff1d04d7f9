"""One client for every model call ctxreplay makes: the LLM judge and the model-driven planners.

``ModelClient`` wraps the real ``openai.OpenAI`` client pointed at any OpenAI-compatible
``base_url`` (OpenAI itself, vLLM, llama.cpp's server, the local SmolLM2 server of
:mod:`ctxreplay.llm.local`) and adds what an offline evaluation needs around each call:

- **reproducible requests**: temperature 0 and a seed are sent; an endpoint that rejects a
  parameter (``seed``, ``temperature``, ``max_tokens`` → ``max_completion_tokens``) with a 400 gets
  the request again without it, and the endpoint is remembered for the rest of the process.
  ``Completion.params_sent`` records exactly what went over the wire (never the API key).
- **structured output** with a fallback chain: strict ``json_schema`` → ``json_object`` → plain
  text parsed for the last balanced ``{...}``; the client steps down when the endpoint answers
  400/422 about ``response_format`` and remembers that per endpoint and model.
- **bounded retries** on 429, 408/409, 5xx, timeouts and connection errors, with capped
  exponential backoff and deterministic jitter; a 429 waits what ``Retry-After`` /
  ``retry-after-ms`` asks. The last failure raises :class:`ModelCallError` with a short reason
  (``"http 500 after 4 attempts"``); callers turn it into an unscored verdict or a recorded planner
  failure, never a silent default.
- **a per-endpoint concurrency limit** shared by every client of the same ``base_url`` in the
  process; a 429 halves it (minimum 1) and pauses new calls for the Retry-After time, successes
  restore it one step at a time.
- **an on-disk response cache** keyed by the whole canonical request (:mod:`.cache`); a hit makes
  no HTTP call; errors are never stored.
- **cost**: token usage per call priced with the tariffs of :mod:`ctxreplay.replay.cost`.

The API key is read from the environment variable named by ``api_key_env`` (a dummy value when it
is unset, for local servers) and is never written to a completion, cache entry, log or reason.
"""

from __future__ import annotations

import email.utils
import inspect
import json
import os
import random
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import openai

from ..tariffs import Tariff, TariffError, load_tariff
from .cache import ResponseCache, request_key

#: sent when the key variable is unset: local servers ignore it, real providers answer 401
DUMMY_KEY = "sk-no-key-local"
#: structured-output levels, strictest first
FORMAT_LEVELS: tuple[str, ...] = ("json_schema", "json_object", "text")
RETRYABLE_STATUS = frozenset({408, 409, 429})
_FORMAT_WORDS = (
    "response_format",
    "response format",
    "json_schema",
    "json_object",
    "structured output",
    "guided",
    "grammar",
)
_KEYLIKE = re.compile(r"\b(sk-[A-Za-z0-9_\-*]{6,}|Bearer\s+\S+)")


class ModelCallError(RuntimeError):
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
        u = record.get("usage") or [0, 0, None]
        return Completion(
            text=record.get("text") or "",
            tool_calls=tuple(ToolCall(*c) for c in record.get("tool_calls") or ()),
            finish_reason=record.get("finish_reason"),
            usage=TokenUsage(int(u[0] or 0), int(u[1] or 0), u[2]),
            usd=record.get("usd"),
            cache_hit=cache_hit,
            prompt_hash=str(record.get("prompt_hash") or ""),
            params_sent=dict(record.get("params_sent") or {}),
            attempts=0 if cache_hit else int(record.get("attempts") or 0),
            model=record.get("model"),
            response_format=record.get("response_format"),
            parsed=record.get("parsed"),
            parse_error=record.get("parse_error"),
            refusal=record.get("refusal"),
            elapsed_s=0.0 if cache_hit else float(record.get("elapsed_s") or 0.0),
        )


# --- JSON answers ---------------------------------------------------------------------------


def _balanced_objects(text: str) -> list[str]:
    """Top-level balanced ``{...}`` spans of ``text``, in order (strings inside are respected)."""
    spans: list[str] = []
    depth = 0
    start = 0
    in_string = escape = False
    for i, ch in enumerate(text):
        if depth and in_string:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"' and depth:
            in_string = True
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                spans.append(text[start : i + 1])
    return spans


def parse_json_answer(text: str) -> tuple[Any, str | None]:
    """The JSON value of an answer: the whole text, else the last balanced ``{...}`` that parses.

    Returns ``(value, None)`` or ``(None, reason)``.
    """
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = re.sub(r"^```[A-Za-z0-9_-]*\s*|\s*```$", "", stripped)
    try:
        return json.loads(stripped), None
    except ValueError:
        pass
    spans = _balanced_objects(text)
    for span in reversed(spans):
        try:
            return json.loads(span), None
        except ValueError:
            continue
    if not stripped:
        return None, "empty answer"
    if spans:
        return None, "invalid JSON"
    if "{" in text:
        return None, "unterminated JSON object"
    return None, "no JSON object in the answer"


# --- retry timing ---------------------------------------------------------------------------


def retry_after_seconds(
    headers: Mapping[str, str] | Any, now: datetime | None = None
) -> float | None:
    """Seconds a 429/503 asks us to wait: ``retry-after-ms``, or ``Retry-After`` (seconds or
    HTTP-date); None when absent or unreadable."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def backoff_seconds(attempt: int, base: float, cap: float, salt: str) -> float:
    """Capped exponential backoff with deterministic jitter (half to full of the step)."""
    step = min(cap, base * (2 ** max(0, attempt - 1)))
    jitter = random.Random(f"{salt}:{attempt}").random()
    return step * (0.5 + 0.5 * jitter)


# --- per-endpoint shared state --------------------------------------------------------------


class EndpointLimiter:
    """At most ``limit`` calls in flight to one endpoint, across every client of the process.

    A 429 halves the limit (minimum 1) and pauses new calls until the Retry-After time;
    each run of ``recover_after`` successes raises it by one, up to the ceiling.
    """

    def __init__(self, ceiling: int, recover_after: int = 8) -> None:
        self.ceiling = max(1, int(ceiling))
        self.limit = self.ceiling
        self.recover_after = max(1, recover_after)
        self.in_flight = 0
        self.peak = 0
        self.rate_limited = 0
        self._successes = 0
        self._paused_until = 0.0
        self._cond = threading.Condition()

    def acquire(self) -> None:
        with self._cond:
            while True:
                wait = self._paused_until - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                if self.in_flight < self.limit:
                    self.in_flight += 1
                    self.peak = max(self.peak, self.in_flight)
                    return
                self._cond.wait()

    def release(self) -> None:
        with self._cond:
            self.in_flight -= 1
            self._cond.notify_all()

    def on_success(self) -> None:
        with self._cond:
            self._successes += 1
            if self.limit < self.ceiling and self._successes >= self.recover_after:
                self.limit += 1
                self._successes = 0
                self._cond.notify_all()

    def on_rate_limited(self, wait: float) -> None:
        with self._cond:
            self.rate_limited += 1
            self.limit = max(1, self.limit // 2)
            self._successes = 0
            self._paused_until = max(self._paused_until, time.monotonic() + max(0.0, wait))

    def lower_ceiling(self, ceiling: int) -> None:
        with self._cond:
            self.ceiling = min(self.ceiling, max(1, int(ceiling)))
            self.limit = min(self.limit, self.ceiling)


@dataclass
class EndpointQuirks:
    """What one (endpoint, model) was found to reject, remembered for the process."""

    format_floor: int = 0  # index into FORMAT_LEVELS of the strictest accepted format
    dropped: set[str] = field(default_factory=set)  # parameters the endpoint refused
    max_tokens_field: str = "max_tokens"


_registry_lock = threading.Lock()
_limiters: dict[str, EndpointLimiter] = {}
_quirks: dict[tuple[str, str], EndpointQuirks] = {}


def endpoint_limiter(base_url: str, concurrency: int = 4) -> EndpointLimiter:
    """The limiter shared by every client of ``base_url``; a smaller ``concurrency`` lowers it."""
    key = base_url.rstrip("/")
    with _registry_lock:
        limiter = _limiters.get(key)
        if limiter is None:
            limiter = _limiters[key] = EndpointLimiter(concurrency)
        elif concurrency < limiter.ceiling:
            limiter.lower_ceiling(concurrency)
        return limiter


def endpoint_quirks(base_url: str, model: str) -> EndpointQuirks:
    key = (base_url.rstrip("/"), model)
    with _registry_lock:
        return _quirks.setdefault(key, EndpointQuirks())


def forget_endpoints() -> None:
    """Drop every remembered limiter and quirk (tests; a long-lived process after reconfiguring)."""
    with _registry_lock:
        _limiters.clear()
        _quirks.clear()


# --- the client -----------------------------------------------------------------------------


@dataclass
class ClientStats:
    calls: int = 0  # complete() calls
    http_requests: int = 0
    cache_hits: int = 0
    cache_write_errors: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    usd: float = 0.0


_CREATE_PARAMS = frozenset(
    inspect.signature(openai.resources.chat.completions.Completions.create).parameters
) - {"self", "extra_headers", "extra_query", "extra_body", "timeout"}


def _norm_format(
    response_format: str | Mapping[str, Any] | None,
    schema: Mapping[str, Any] | None,
    schema_name: str,
) -> tuple[int | None, dict[str, Any] | None]:
    """(requested level, json_schema block) from the caller's arguments."""
    if isinstance(response_format, Mapping):
        kind = response_format.get("type")
        if kind == "json_schema":
            block = dict(response_format.get("json_schema") or {})
            return 0, block
        if kind == "json_object":
            return 1, None
        if kind == "text":
            return None, None
        raise ValueError(f"unknown response_format type {kind!r}")
    if response_format is None and schema is not None:
        response_format = "json_schema"
    if response_format is None:
        return None, None
    if response_format not in FORMAT_LEVELS:
        raise ValueError(
            f"response_format must be one of {', '.join(FORMAT_LEVELS)} or None; got {response_format!r}"
        )
    if response_format == "json_schema":
        if schema is None:
            raise ValueError("response_format='json_schema' needs a schema")
        return 0, {"name": schema_name, "strict": True, "schema": dict(schema)}
    return FORMAT_LEVELS.index(response_format), None


class ModelClient:
    """A model endpoint with retries, fallbacks, a shared concurrency limit, a cache and costs.

    >>> client = ModelClient("http://127.0.0.1:8089/v1", "SmolLM2-135M-Instruct")  # doctest: +SKIP
    >>> c = client.complete([{"role": "user", "content": "Answer in JSON"}],
    ...                     response_format="json_object", max_tokens=64)  # doctest: +SKIP
    >>> c.parsed, c.usage.prompt_tokens, c.cache_hit  # doctest: +SKIP
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout: float = 60.0,
        max_retries: int = 3,
        concurrency: int = 4,
        cache_dir: str | os.PathLike[str] | None = None,
        tariff: str | Tariff | None = None,
        tariffs_path: str | os.PathLike[str] | None = None,
        *,
        backoff_base: float = 0.5,
        backoff_cap: float = 20.0,
        max_retry_wait: float = 120.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = float(timeout)
        self.max_retries = max(0, int(max_retries))
        self.concurrency = max(1, int(concurrency))
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.max_retry_wait = max_retry_wait
        key = os.environ.get(api_key_env) if api_key_env else None
        self._secret = key or None
        # the SDK's own retries are off: retries, backoff and the limiter live here
        self._client = openai.OpenAI(
            base_url=self.base_url, api_key=key or DUMMY_KEY, max_retries=0, timeout=self.timeout
        )
        self.cache = ResponseCache(cache_dir) if cache_dir else None
        self.tariff = self._resolve_tariff(tariff, tariffs_path)
        self.limiter = endpoint_limiter(self.base_url, self.concurrency)
        self.stats = ClientStats()
        self._stats_lock = threading.Lock()

    def _resolve_tariff(
        self, tariff: str | Tariff | None, path: str | os.PathLike[str] | None
    ) -> Tariff | None:
        if isinstance(tariff, Tariff):
            return tariff
        if tariff:
            return load_tariff(tariff, path)  # a named tariff that does not exist is an error
        try:
            return load_tariff(self.model, path)
        except TariffError:
            return None  # unknown model: cost is unknown, not zero

    def __repr__(self) -> str:
        return f"ModelClient({self.base_url!r}, {self.model!r})"

    def describe(self) -> dict[str, Any]:
        """Settings for a run manifest (the key's variable name, never its value)."""
        return {
            "base_url": self.base_url,
            "model": self.model,
            "api_key_env": self.api_key_env,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "concurrency": self.concurrency,
            "cache_dir": str(self.cache.directory) if self.cache else None,
            "tariff": self.tariff.name if self.tariff else None,
        }

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> ModelClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- requests ---------------------------------------------------------------------------

    def canonical_request(
        self,
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
        level, block = _norm_format(response_format, schema, schema_name)
        return {
            "base_url": self.base_url,
            "model": self.model,
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

    def _body(
        self, request: Mapping[str, Any], level: int | None, quirks: EndpointQuirks | None
    ) -> dict[str, Any]:
        dropped = quirks.dropped if quirks else set()
        body: dict[str, Any] = {"model": request["model"], "messages": request["messages"]}
        if request["tools"]:
            body["tools"] = request["tools"]
            if request["tool_choice"] is not None:
                body["tool_choice"] = request["tool_choice"]
        if request["temperature"] is not None and "temperature" not in dropped:
            body["temperature"] = request["temperature"]
        if request["seed"] is not None and "seed" not in dropped:
            body["seed"] = request["seed"]
        if request["max_tokens"] is not None:
            body[quirks.max_tokens_field if quirks else "max_tokens"] = request["max_tokens"]
        if level == 0:
            body["response_format"] = {"type": "json_schema", "json_schema": request["json_schema"]}
        elif level == 1:
            body["response_format"] = {"type": "json_object"}
        if request["extra"]:
            body.update(request["extra"])
        return body

    def request_body(self, messages: Sequence[Mapping[str, Any]], **kw: Any) -> dict[str, Any]:
        """The chat-completions body for ``messages`` at the requested format, as the Batch API
        wants it (``/v1/chat/completions`` lines); endpoint fallbacks are not applied."""
        request = self.canonical_request(messages, **kw)
        fmt = request["format"]
        return self._body(request, FORMAT_LEVELS.index(fmt) if fmt else None, None)

    def prompt_hash(self, messages: Sequence[Mapping[str, Any]], **kw: Any) -> str:
        return request_key(self.canonical_request(messages, **kw))

    # --- the call ---------------------------------------------------------------------------

    def complete(
        self,
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
    ) -> Completion:
        """One chat completion. Raises :class:`ModelCallError` when it cannot be obtained.

        ``response_format``: None (free text), ``"json_schema"`` (with ``schema``),
        ``"json_object"``, ``"text"`` (no response_format sent, JSON parsed from the text), or an
        OpenAI ``response_format`` object. With any of the JSON forms the answer is parsed into
        ``Completion.parsed`` (the whole text, else the last balanced ``{...}``) and a stricter
        form the endpoint refuses is stepped down. Describe the schema in the prompt too: below
        ``json_schema`` the model sees only the prompt.
        """
        request = self.canonical_request(
            messages,
            response_format=response_format,
            schema=schema,
            schema_name=schema_name,
            tools=tools,
            tool_choice=tool_choice,
            temperature=temperature,
            seed=seed,
            max_tokens=max_tokens,
            extra=extra,
        )
        key = request_key(request)
        with self._stats_lock:
            self.stats.calls += 1
        if self.cache is not None:
            record = self.cache.get(key)
            if record is not None:
                with self._stats_lock:
                    self.stats.cache_hits += 1
                return replace(Completion.from_record(record, cache_hit=True), prompt_hash=key)
        try:
            completion = self._call(request, key)
        except ModelCallError:
            with self._stats_lock:
                self.stats.errors += 1
            raise
        with self._stats_lock:
            self.stats.prompt_tokens += completion.usage.prompt_tokens
            self.stats.completion_tokens += completion.usage.completion_tokens
            self.stats.cached_tokens += completion.usage.cached_tokens or 0
            self.stats.usd += completion.usd or 0.0
        if self.cache is not None:
            try:
                self.cache.put(key, completion.to_record())
            except OSError:  # a full or read-only disk costs a re-call later, not this answer
                with self._stats_lock:
                    self.stats.cache_write_errors += 1
        return completion

    def _redact(self, text: str) -> str:
        if self._secret:
            text = text.replace(self._secret, "[redacted]")
        return _KEYLIKE.sub("[redacted]", text)

    def _send(self, body: dict[str, Any]) -> tuple[int, str, Any]:
        """POST the body; returns (status, text, headers) or raises the SDK's errors."""
        kwargs = {k: v for k, v in body.items() if k in _CREATE_PARAMS}
        extra = {k: v for k, v in body.items() if k not in _CREATE_PARAMS}
        if extra:
            kwargs["extra_body"] = extra
        raw = self._client.chat.completions.with_raw_response.create(**kwargs)
        return raw.status_code, raw.text, raw.headers

    def _call(self, request: dict[str, Any], key: str) -> Completion:
        quirks = endpoint_quirks(self.base_url, self.model)
        requested = FORMAT_LEVELS.index(request["format"]) if request["format"] else None
        attempts = retries = 0
        started = time.monotonic()
        while True:
            level = max(requested, quirks.format_floor) if requested is not None else None
            body = self._body(request, level, quirks)
            attempts += 1
            with self._stats_lock:
                self.stats.http_requests += 1
            wait: float | None = None
            error_text = ""
            self.limiter.acquire()
            try:
                status, text, _headers = self._send(body)
            except openai.APITimeoutError:
                failure, status_code, headers = "timeout", None, None
            except openai.APIConnectionError:
                failure, status_code, headers = "connection error", None, None
            except openai.APIStatusError as e:
                failure, status_code, headers = (
                    f"http {e.status_code}",
                    e.status_code,
                    e.response.headers,
                )
                error_text = _error_text(e)
            else:
                failure = None
            finally:
                self.limiter.release()

            if failure is None:
                self.limiter.on_success()
                try:
                    doc = json.loads(text)
                except ValueError:
                    raise ModelCallError(
                        "bad response: body is not JSON",
                        attempts=attempts,
                        status=status,
                        prompt_hash=key,
                    ) from None
                try:
                    return self._completion(
                        doc,
                        prompt_hash=key,
                        params_sent=body,
                        attempts=attempts,
                        level=level,
                        elapsed=time.monotonic() - started,
                    )
                except ValueError as e:
                    raise ModelCallError(
                        f"bad response: {e}", attempts=attempts, status=status, prompt_hash=key
                    ) from None

            if status_code is not None and status_code in (400, 422):
                if self._adapt(error_text, body, level, quirks):
                    continue
                raise ModelCallError(
                    f"http {status_code}: {self._redact(error_text)[:300]}",
                    attempts=attempts,
                    status=status_code,
                    prompt_hash=key,
                )
            retryable = status_code is None or status_code in RETRYABLE_STATUS or status_code >= 500
            if not retryable:
                raise ModelCallError(
                    f"http {status_code}: {self._redact(error_text)[:300]}",
                    attempts=attempts,
                    status=status_code,
                    prompt_hash=key,
                )
            if status_code in (429, 503):
                wait = retry_after_seconds(headers)
            if status_code == 429:
                self.limiter.on_rate_limited(
                    min(wait, self.max_retry_wait) if wait is not None else 0.0
                )
            if retries >= self.max_retries:
                raise ModelCallError(
                    f"{failure} after {attempts} attempt{'s' if attempts != 1 else ''}",
                    attempts=attempts,
                    status=status_code,
                    prompt_hash=key,
                )
            retries += 1
            delay = (
                min(wait, self.max_retry_wait)
                if wait is not None
                else backoff_seconds(retries, self.backoff_base, self.backoff_cap, key)
            )
            time.sleep(delay)

    def _adapt(
        self, error_text: str, body: Mapping[str, Any], level: int | None, quirks: EndpointQuirks
    ) -> bool:
        """Step down after a 400/422 that names something the endpoint refuses; remember it."""
        low = error_text.lower()
        with _registry_lock:
            if "seed" in body and "seed" in low:
                quirks.dropped.add("seed")
                return True
            if (
                "max_tokens" in body
                and "max_completion_tokens" in low
                and quirks.max_tokens_field == "max_tokens"
            ):
                quirks.max_tokens_field = "max_completion_tokens"
                return True
            if (
                "temperature" in body
                and "temperature" in low
                and "response_format" not in low
                and "temperature" not in quirks.dropped
            ):
                quirks.dropped.add("temperature")
                return True
            if (
                level is not None
                and level < len(FORMAT_LEVELS) - 1
                and any(w in low for w in _FORMAT_WORDS)
            ):
                quirks.format_floor = max(quirks.format_floor, level + 1)
                return True
        return False

    # --- answers ----------------------------------------------------------------------------

    def usd(self, usage: TokenUsage) -> float | None:
        if self.tariff is None:
            return None
        return self.tariff.cost(
            usage.prompt_tokens, usage.cached_tokens or 0, usage.completion_tokens
        )

    def _completion(
        self,
        doc: Any,
        *,
        prompt_hash: str,
        params_sent: dict[str, Any],
        attempts: int,
        level: int | None,
        elapsed: float = 0.0,
    ) -> Completion:
        if not isinstance(doc, Mapping):
            raise ValueError("body is not a JSON object")
        if "error" in doc and not doc.get("choices"):
            err = doc["error"]
            msg = err.get("message") if isinstance(err, Mapping) else err
            raise ValueError(f"error in body: {self._redact(str(msg))[:200]}")
        choices = doc.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            raise ValueError("no choices")
        choice = choices[0]
        message = choice.get("message")
        if not isinstance(message, Mapping):
            raise ValueError("choice has no message")
        content = message.get("content")
        if isinstance(content, list):  # some servers answer with content parts
            content = "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
        text = content if isinstance(content, str) else ""
        calls = []
        for c in message.get("tool_calls") or ():
            if not isinstance(c, Mapping):
                continue
            fn = c.get("function") or {}
            args = fn.get("arguments")
            calls.append(
                ToolCall(
                    str(c.get("id") or ""),
                    str(fn.get("name") or ""),
                    args if isinstance(args, str) else json.dumps(args or {}),
                )
            )
        u = doc.get("usage") if isinstance(doc.get("usage"), Mapping) else {}
        details = (
            u.get("prompt_tokens_details")
            if isinstance(u.get("prompt_tokens_details"), Mapping)
            else {}
        )
        cached = details.get("cached_tokens")
        usage = TokenUsage(
            int(u.get("prompt_tokens") or 0),
            int(u.get("completion_tokens") or 0),
            int(cached) if isinstance(cached, int) else None,
        )
        parsed = parse_error = None
        if level is not None:
            parsed, parse_error = parse_json_answer(text)
        refusal = message.get("refusal")
        return Completion(
            text=text,
            tool_calls=tuple(calls),
            finish_reason=choice.get("finish_reason"),
            usage=usage,
            usd=self.usd(usage),
            cache_hit=False,
            prompt_hash=prompt_hash,
            params_sent=params_sent,
            attempts=attempts,
            model=doc.get("model") if isinstance(doc.get("model"), str) else None,
            response_format=FORMAT_LEVELS[level] if level is not None else None,
            parsed=parsed,
            parse_error=parse_error,
            refusal=refusal if isinstance(refusal, str) and refusal else None,
            elapsed_s=round(elapsed, 6),
        )

    def completion_from_body(
        self, body: Mapping[str, Any], request_body: Mapping[str, Any] | None = None
    ) -> Completion:
        """A :class:`Completion` from a chat-completions response body (a Batch API output line's
        ``response.body``). ``request_body`` is the body that was submitted, if at hand: its format
        decides whether the answer is parsed as JSON. Raises :class:`ModelCallError` for a body
        that is not a completion."""
        sent = dict(request_body or {})
        rf = sent.get("response_format")
        kind = rf.get("type") if isinstance(rf, Mapping) else None
        level = FORMAT_LEVELS.index(kind) if kind in ("json_schema", "json_object") else None
        if request_body is None:
            level = 0  # judges and planners ask for JSON; parse it
        key = request_key({"batch_body": sent}) if sent else ""
        try:
            return self._completion(
                body, prompt_hash=key, params_sent=sent, attempts=1, level=level
            )
        except ValueError as e:
            raise ModelCallError(
                f"bad response: {e}", attempts=1, prompt_hash=key or None
            ) from None


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
