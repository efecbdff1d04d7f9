"""One client for every model call ctxreplay makes: the LLM judge and the model-driven planners.

``ModelClient`` wraps the real ``openai.OpenAI`` client pointed at any OpenAI-compatible
``base_url`` (OpenAI itself, vLLM, llama.cpp's server, the local SmolLM2 server of
:mod:`ctxreplay.llm.local`) and puts around each call what an offline evaluation needs, each
from its own module:

- :mod:`.request` — the canonical request (its sha256 is the cache key and prompt hash), the
  body actually sent (``Completion.params_sent``, never the API key), and the step-downs of an
  endpoint that refuses a parameter or a structured-output form;
- :mod:`.retries` — bounded retries with ``tenacity``: Retry-After honoured, capped exponential
  backoff otherwise; the last failure raises :class:`~.completion.ModelCallError` with a short
  reason (``"http 500 after 4 attempts"``); callers turn it into an unscored verdict or a
  recorded planner failure, never a silent default;
- :mod:`.transport` — one POST through the SDK (its own retries off), failures as values;
- :mod:`.limiter` — the per-endpoint concurrency limit, halved by a 429;
- :mod:`.cache` — the on-disk response cache (a hit makes no HTTP call; errors are never
  stored);
- :mod:`.calls` — with a run folder, one row per call in ``RUN/calls/``;
- cost: token usage priced with the tariffs of :mod:`ctxreplay.tariffs`.

Identical requests in flight are coalesced (single flight): while one thread of the process is
asking a request, every other thread asking the same request key waits for that answer (and its
cache entry) instead of sending its own; a failure is shared the same way. Each distinct prompt
is paid once.

Waiting is injectable: ``sleep`` does every wait (backoff, Retry-After, a paused endpoint) and
``clock`` measures them, so tests pass a manual clock and assert the waits asked for.

The API key is read from the environment variable named by ``api_key_env`` (a dummy value when it
is unset, for local servers) and is never written to a completion, cache entry, call row, log or
reason — nor is any other configured secret (the password and query values of ``base_url``, the
values of the variables named in ``$CTXREPLAY_SECRET_ENVS``): an endpoint that echoes one gets it
replaced by ``[redacted]`` in everything kept (:func:`.completion.scrub`).
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, NoReturn
from urllib.parse import parse_qsl, unquote, urlsplit

from ..tariffs import Tariff, TariffError, load_tariff
from .cache import ResponseCache, request_key
from .calls import CallLog, CallSource, safe_endpoint
from .completion import (
    Completion,
    EndpointUnreachable,
    ModelCallError,
    TokenUsage,
    read_response,
    redact,
    scrub,
)
from .limiter import Clock, Sleep, endpoint_limiter
from .request import (
    FORMAT_LEVELS,
    EndpointQuirks,
    canonical_request,
    endpoint_quirks,
    request_body,
    requested_level,
)
from .retries import Backoff, TransientFailure, is_retryable, retry_after_seconds, with_retries
from .structured import Answer, parse_json_answer, schema_of
from .transport import HttpFailure, Transport

#: names of environment variables whose values are secrets too (comma-separated), beside the key
SECRET_ENVS = "CTXREPLAY_SECRET_ENVS"
#: query parameters of a base URL whose values are credentials
_SECRET_PARAM = re.compile(r"key|token|secret|sig|pass|auth", re.IGNORECASE)


def configured_secrets(base_url: str, key: str | None) -> tuple[str, ...]:
    """Every secret a client is configured with: the API key, the password and the key-like
    query values (``api-key=``, ``token=``, ``sig=``, …) of the base URL, where keys sometimes
    travel, and the values of the variables named in ``$CTXREPLAY_SECRET_ENVS``."""
    found = [key or ""]
    parts = urlsplit(base_url)
    found.append(unquote(parts.password or ""))
    found += [v for k, v in parse_qsl(parts.query) if _SECRET_PARAM.search(k)]
    for name in (os.environ.get(SECRET_ENVS) or "").split(","):
        if name.strip():
            found.append(os.environ.get(name.strip()) or "")
    return tuple(sorted({s for s in found if s}))


class _Flight:
    """One request being asked: the others asking it wait for its outcome."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.completion: Completion | None = None
        self.error: BaseException | None = None


_flights: dict[str, _Flight] = {}
_flights_lock = threading.Lock()


def _join_flight(key: str) -> tuple[_Flight, bool]:
    """The flight of ``key``, and whether the caller leads it (sends the request)."""
    with _flights_lock:
        flight = _flights.get(key)
        if flight is not None:
            return flight, False
        flight = _flights[key] = _Flight()
        return flight, True


def _land(key: str, flight: _Flight) -> None:
    with _flights_lock:
        if _flights.get(key) is flight:
            del _flights[key]
    flight.done.set()


@dataclass
class ClientStats:
    calls: int = 0  # complete() calls
    http_requests: int = 0
    cache_hits: int = 0
    coalesced: int = 0  # answers shared from an identical request in flight (no request)
    cache_write_errors: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    usd: float = 0.0


@dataclass
class _Tally:
    attempts: int = 0


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
        run_dir: str | os.PathLike[str] | None = None,
        caller: str = "",
        max_connection_errors: int = 5,
        sleep: Sleep = time.sleep,
        clock: Clock = time.monotonic,
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
        self.sleep = sleep
        self.clock = clock
        self.max_connection_errors = max(1, int(max_connection_errors))
        key = os.environ.get(api_key_env) if api_key_env else None
        self._secret = key or None
        self._secrets = configured_secrets(self.base_url, self._secret)
        self._transport = Transport(self.base_url, key, self.timeout)
        self.cache = ResponseCache(cache_dir) if cache_dir else None
        self.tariff = self._resolve_tariff(tariff, tariffs_path)
        self.limiter = endpoint_limiter(self.base_url, self.concurrency)
        self.calls = CallLog(run_dir) if run_dir else None
        self._source = CallSource(caller, safe_endpoint(self.base_url), model, self._secrets)
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

    @property
    def backoff(self) -> Backoff:
        """The waits between attempts, from the client's current settings."""
        return Backoff(self.backoff_base, self.backoff_cap, self.max_retry_wait)

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
        """Write the calls not yet in the run's table and close the HTTP client."""
        if self.calls is not None:
            self.calls.close()
        self._transport.close()

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
        schema: Mapping[str, Any] | type[Answer] | None = None,
        schema_name: str = "output",
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        temperature: float | None = 0.0,
        seed: int | None = 0,
        max_tokens: int | None = 1024,
        extra: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Everything that determines the answer; its sha256 is the cache key and prompt hash.
        ``schema`` may be an :class:`~.structured.Answer` model: its strict JSON schema is sent."""
        return canonical_request(
            self.base_url,
            self.model,
            messages,
            response_format=response_format,
            schema=schema_of(schema),
            schema_name=schema_name,
            tools=tools,
            tool_choice=tool_choice,
            temperature=temperature,
            seed=seed,
            max_tokens=max_tokens,
            extra=extra,
        )

    def request_body(self, messages: Sequence[Mapping[str, Any]], **kw: Any) -> dict[str, Any]:
        """The chat-completions body for ``messages`` at the requested format, as the Batch API
        wants it (``/v1/chat/completions`` lines); endpoint fallbacks are not applied."""
        request = self.canonical_request(messages, **kw)
        return request_body(request, requested_level(request))

    def prompt_hash(self, messages: Sequence[Mapping[str, Any]], **kw: Any) -> str:
        return request_key(self.canonical_request(messages, **kw))

    # --- the call ---------------------------------------------------------------------------

    def complete(self, messages: Sequence[Mapping[str, Any]], **kw: Any) -> Completion:
        """One chat completion. Raises :class:`ModelCallError` when it cannot be obtained.

        Keyword arguments are those of :meth:`canonical_request`. ``response_format``: None (free
        text), ``"json_schema"`` (with ``schema``), ``"json_object"``, ``"text"`` (no
        response_format sent, JSON parsed from the text), or an OpenAI ``response_format``
        object. With any of the JSON forms the answer is parsed into ``Completion.parsed`` (the
        whole text, else the last balanced ``{...}``) and a stricter form the endpoint refuses is
        stepped down. Describe the schema in the prompt too: below ``json_schema`` the model
        sees only the prompt.
        """
        request = self.canonical_request(messages, **kw)
        key = request_key(request)
        started = self.clock()
        self._tally(calls=1)
        hit = self._cached(key, started)
        if hit is not None:
            return hit
        flight, leader = _join_flight(key)
        if not leader:
            return self._follow(flight, key, started)
        try:
            hit = self._cached(key, started)  # answered between the first look and now
            completion = hit if hit is not None else self._ask(request, key, started)
            flight.completion = completion
            return completion
        except BaseException as e:
            flight.error = e
            raise
        finally:
            _land(key, flight)

    def _cached(self, key: str, started: float) -> Completion | None:
        record = self.cache.get(key) if self.cache is not None else None
        if record is None:
            return None
        self._tally(cache_hits=1)
        hit = replace(Completion.from_record(record, cache_hit=True), prompt_hash=key)
        hit = scrub(hit, self._secrets)  # an entry stored before redaction covered answers
        self._log(key, "cached", started, hit)
        return hit

    def _follow(self, flight: _Flight, key: str, started: float) -> Completion:
        """Wait for the identical request in flight; its answer (from the cache when there is
        one) as a hit, or its failure."""
        flight.done.wait()
        if flight.error is not None:
            e = flight.error
            if isinstance(e, ModelCallError):
                shared = ModelCallError(e.reason, status=e.status, prompt_hash=key)
                self._tally(errors=1)
                self._log(key, "error", started, shared)
                raise shared from None
            raise e
        hit = self._cached(key, started)
        if hit is not None:
            return hit
        assert flight.completion is not None
        self._store(key, flight.completion)  # the leader's client keeps another cache (or none)
        self._tally(coalesced=1)
        shared_answer = replace(
            flight.completion, cache_hit=True, attempts=0, elapsed_s=0.0, prompt_hash=key
        )
        self._log(key, "cached", started, shared_answer)
        return shared_answer

    def _ask(self, request: dict[str, Any], key: str, started: float) -> Completion:
        """Send the request (with retries and fallbacks); store and log the answer."""
        try:
            completion = self._call(request, key, started)
        except ModelCallError as e:
            self._tally(errors=1)
            self._log(key, "error", started, e)
            raise
        usage = completion.usage
        self._tally(
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            cached_tokens=usage.cached_tokens or 0,
            usd=completion.usd or 0.0,
        )
        self._store(key, completion)
        self._log(key, "ok", started, completion)
        return completion

    def _tally(self, **add: float) -> None:
        with self._stats_lock:
            for name, n in add.items():
                setattr(self.stats, name, getattr(self.stats, name) + n)

    def _store(self, key: str, completion: Completion) -> None:
        if self.cache is None:
            return
        try:
            self.cache.put(key, completion.to_record())
        except OSError:  # a full or read-only disk costs a re-call later, not this answer
            self._tally(cache_write_errors=1)

    def _log(
        self, key: str, status: str, started: float, outcome: Completion | ModelCallError
    ) -> None:
        if self.calls is not None:
            self.calls.add(self._source.row(key, status, self.clock() - started, outcome))

    def _call(self, request: dict[str, Any], key: str, started: float) -> Completion:
        quirks = endpoint_quirks(self.base_url, self.model)
        tally = _Tally()
        try:
            return with_retries(
                lambda: self._attempt(request, key, quirks, tally, started),
                max_retries=self.max_retries,
                backoff=self.backoff,
                salt=key,
                sleep=self.sleep,
            )
        except TransientFailure as t:
            n = tally.attempts
            raise ModelCallError(
                f"{t.failure} after {n} attempt{'s' if n != 1 else ''}",
                attempts=n,
                status=t.status,
                prompt_hash=key,
            ) from None

    def _attempt(
        self,
        request: dict[str, Any],
        key: str,
        quirks: EndpointQuirks,
        tally: _Tally,
        started: float,
    ) -> Completion:
        """One attempt: a request, again at once each time the endpoint's refusal names a
        parameter or format to step down from. Raises TransientFailure to be retried."""
        requested = requested_level(request)
        while True:
            level = quirks.level(requested)
            body = request_body(request, level, quirks)
            tally.attempts += 1
            self._tally(http_requests=1)
            sent = self._post(body)
            if isinstance(sent, tuple):
                return self._answer(*sent, body, level, key, tally.attempts, started)
            if sent.status in (400, 422) and quirks.adapt(sent.text, body, level):
                continue
            self._fail(sent, key, tally.attempts)

    def _post(self, body: dict[str, Any]) -> tuple[int, str] | HttpFailure:
        """POST the body through the endpoint's limiter."""
        self.limiter.acquire(self.clock, self.sleep)
        try:
            sent = self._transport.post(body)
        finally:
            self.limiter.release()
        if not isinstance(sent, HttpFailure):
            self.limiter.on_success()
        elif sent.status is not None:
            self.limiter.on_answer()
        elif sent.failure == "connection error" and (
            self.limiter.on_unreachable() >= self.max_connection_errors  # counts this one
        ):
            raise EndpointUnreachable(
                f"the model endpoint {safe_endpoint(self.base_url)} refused "
                f"{self.max_connection_errors} connections in a row; start it or fix the "
                "base URL, then run the same command again: finished work is kept"
            )
        return sent

    def _fail(self, f: HttpFailure, key: str, attempts: int) -> NoReturn:
        if not is_retryable(f.status):
            raise ModelCallError(
                f"http {f.status}: {redact(f.text, self._secrets)[:300]}",
                attempts=attempts,
                status=f.status,
                prompt_hash=key,
            )
        wait = retry_after_seconds(f.headers) if f.status in (429, 503) else None
        if f.status == 429:
            self.limiter.on_rate_limited(self.backoff.asked(wait) or 0.0, self.clock)
        raise TransientFailure(f.failure, f.status, wait)

    def _answer(
        self,
        status: int,
        text: str,
        body: dict[str, Any],
        level: int | None,
        key: str,
        attempts: int,
        started: float,
    ) -> Completion:
        try:
            doc = json.loads(text)
        except ValueError:
            raise ModelCallError(
                "bad response: body is not JSON", attempts=attempts, status=status, prompt_hash=key
            ) from None
        try:
            return self._completion(
                doc,
                prompt_hash=key,
                params_sent=body,
                attempts=attempts,
                level=level,
                elapsed=self.clock() - started,
            )
        except ValueError as e:
            raise ModelCallError(
                f"bad response: {e}", attempts=attempts, status=status, prompt_hash=key
            ) from None

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
        r = read_response(doc, self._secrets)
        parsed, parse_error = parse_json_answer(r.text) if level is not None else (None, None)
        return Completion(
            text=r.text,
            tool_calls=r.tool_calls,
            finish_reason=r.finish_reason,
            usage=r.usage,
            usd=self.usd(r.usage),
            cache_hit=False,
            prompt_hash=prompt_hash,
            params_sent=params_sent,
            attempts=attempts,
            model=r.model,
            response_format=FORMAT_LEVELS[level] if level is not None else None,
            parsed=parsed,
            parse_error=parse_error,
            refusal=r.refusal,
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
