"""A scripted OpenAI chat-completions server for tests: it misbehaves on purpose.

Stdlib only (``http.server`` in a thread). Each POST takes the next entry of ``script`` (a
:class:`Reply`, or a function of the request body returning one) and falls back to ``default``
when the script is used up. Every request body is recorded, and so is the peak number of
requests in flight, so tests can check retries, fallbacks and the concurrency limit from the
server's side. :class:`ManualClock` is the time a client is given in tests: its ``sleep`` records
the wait and moves the clock instead of waiting.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict → JSON; str → sent as is
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    content_type: str | None = None


def chat_body(
    content: str | None = "ok",
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    finish_reason: str = "stop",
    usage: tuple[int, int, int | None] = (100, 20, 0),
    refusal: str | None = None,
    model: str = "fake-model",
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    if refusal is not None:
        message["refusal"] = refusal
    u: dict[str, Any] = {
        "prompt_tokens": usage[0],
        "completion_tokens": usage[1],
        "total_tokens": usage[0] + usage[1],
    }
    if usage[2] is not None:
        u["prompt_tokens_details"] = {"cached_tokens": usage[2]}
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": u,
    }


def error_body(message: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": code}}


Entry = Reply | Callable[[dict[str, Any]], Reply]


class ManualClock:
    """A clock that moves only when slept on: ``ModelClient(..., sleep=clock.sleep,
    clock=clock.now)``. ``sleeps`` lists every wait asked for, in order."""

    def __init__(self, start: float = 1000.0) -> None:
        self.t = start
        self.sleeps: list[float] = []
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self.t

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.sleeps.append(seconds)
            self.t += max(0.0, seconds)


class FakeOpenAI:
    def __init__(self, script: list[Entry] | None = None, default: Entry | None = None) -> None:
        self.script: list[Entry] = list(script or [])
        self.default: Entry = default if default is not None else Reply(body=chat_body())
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            entry = self.script.pop(0) if self.script else self.default
        return entry(body) if callable(entry) else entry

    def start(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                self._send(Reply(body={"object": "list", "data": [{"id": "fake-model"}]}))

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                with fake._lock:
                    fake.requests.append(body)
                    fake.authorizations.append(self.headers.get("authorization") or "")
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                answered = False
                try:
                    reply = fake._next(body)
                    if reply.delay:
                        time.sleep(reply.delay)
                    # no longer in flight once the answer starts: the client may have all of
                    # it, and send its next request, before this thread would count it done
                    with fake._lock:
                        fake.in_flight -= 1
                    answered = True
                    self._send(reply)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout): nothing to answer
                finally:
                    if not answered:
                        with fake._lock:
                            fake.in_flight -= 1

            def _send(self, reply: Reply) -> None:
                if isinstance(reply.body, str):
                    data = reply.body.encode()
                    ctype = reply.content_type or "text/plain"
                else:
                    data = json.dumps(reply.body if reply.body is not None else {}).encode()
                    ctype = reply.content_type or "application/json"
                self.send_response(reply.status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(data)))
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        server.block_on_close = False
        self._server = server
        threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def formats(self) -> list[str | None]:
        """The response_format type of each request received, in order."""
        return [(r.get("response_format") or {}).get("type") for r in self.requests]
