"""OpenAI Batch API files: the JSONL a large offline run uploads, and the JSONL it gets back.

Input lines are ``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}``.
Output and error files share one line shape::

    {"id": "batch_req_…", "custom_id": "…",
     "response": {"status_code": 200, "request_id": "…", "body": {…chat completion…}},
     "error": null}

A failed request has ``response`` null (or a non-200 ``status_code``) and/or an ``error``
object ``{"code", "message"}``. :func:`read_batch_output` maps each ``custom_id`` to the
completion body, or to ``{"error": {"code", "message", "status_code"}}`` for a failure, so the
caller (``LLMJudge.verdict_from_body``) can turn failures into unscored verdicts.

Uploading, polling and downloading are the user's (``openai batches …`` or their own script):
this machine reaches no provider and ctxreplay never downloads anything.

>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "in.jsonl")
>>> write_batch_input([("case-1", {"model": "gpt-4.1", "messages": []})], path)
1
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from typing import Any

from ..files import atomic_write_text
from .completion import redact

CHAT_URL = "/v1/chat/completions"


class BatchFormatError(ValueError):
    pass


def batch_line(custom_id: str, body: Mapping[str, Any], url: str = CHAT_URL) -> dict[str, Any]:
    return {"custom_id": custom_id, "method": "POST", "url": url, "body": dict(body)}


def write_batch_input(
    requests: Iterable[tuple[str, Mapping[str, Any]]],
    path: str | os.PathLike[str],
    url: str = CHAT_URL,
) -> int:
    """Write one Batch API input line per ``(custom_id, body)``; returns the number written.

    ``custom_id`` must be unique within a batch (the API rejects duplicates); this raises
    :class:`BatchFormatError` before writing anything when it is not. The file is written to a
    temporary name and renamed, so a half-written batch file never exists.
    """
    lines: list[str] = []
    seen: set[str] = set()
    for custom_id, body in requests:
        if not isinstance(custom_id, str) or not custom_id:
            raise BatchFormatError(f"custom_id must be a non-empty string; got {custom_id!r}")
        if custom_id in seen:
            raise BatchFormatError(f"duplicate custom_id {custom_id!r}")
        seen.add(custom_id)
        lines.append(json.dumps(batch_line(custom_id, body, url), ensure_ascii=False))
    atomic_write_text(path, "".join(line + "\n" for line in lines))
    return len(lines)


def _failure(code: Any, message: Any, status: Any = None) -> dict[str, Any]:
    """A failed line; its message with anything shaped like a key redacted (it is stored as an
    unscored verdict's reason)."""
    return {"error": {"code": code, "message": redact(str(message or "")), "status_code": status}}


def parse_batch_line(doc: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """``(custom_id, completion body or {"error": …})`` for one output/error line."""
    custom_id = doc.get("custom_id")
    if not isinstance(custom_id, str):
        raise BatchFormatError("line has no custom_id")
    response = doc.get("response")
    error = doc.get("error")
    status = response.get("status_code") if isinstance(response, Mapping) else None
    body = response.get("body") if isinstance(response, Mapping) else None
    if isinstance(response, Mapping) and status == 200 and isinstance(body, Mapping) and not error:
        return custom_id, dict(body)
    if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
        err = body["error"]
        return custom_id, _failure(err.get("code") or err.get("type"), err.get("message"), status)
    if isinstance(error, Mapping):
        return custom_id, _failure(error.get("code"), error.get("message"), status)
    if error:
        return custom_id, _failure(None, error, status)
    return custom_id, _failure(None, f"no response body (status {status})", status)


def read_batch_output(*paths: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """Map ``custom_id`` → completion body, or ``{"error": {...}}``, from output/error files.

    Pass the output file and the error file together; a custom_id answered successfully in one
    keeps its body even if the other lists it too. Blank lines are skipped; a line that is not
    JSON raises :class:`BatchFormatError` naming the file and line.
    """
    out: dict[str, dict[str, Any]] = {}
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    doc = json.loads(line)
                except ValueError as e:
                    raise BatchFormatError(f"{path}:{n}: not JSON ({e})") from None
                if not isinstance(doc, Mapping):
                    raise BatchFormatError(f"{path}:{n}: not a JSON object")
                try:
                    custom_id, result = parse_batch_line(doc)
                except BatchFormatError as e:
                    raise BatchFormatError(f"{path}:{n}: {e}") from None
                if custom_id in out and "error" not in out[custom_id]:
                    continue
                out[custom_id] = result
    return out


def is_batch_error(result: Mapping[str, Any]) -> bool:
    return "error" in result and "choices" not in result
