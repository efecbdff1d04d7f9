"""Property tests over every registered importer: mutated input never raises, and every record
ends up as a session or as a reject with a reason; untouched records still import.

Each format has a tiny valid sample written here (formats whose importer is not registered are
skipped). A mutation is drawn as (kind, seed): structural ones (delete a key or list item, change a
value's type, duplicate a tool-call id, orphan a tool result) edit one record's JSON, reaching into
JSON text held in strings (OTel messages attributes); byte ones (truncate, inject invalid UTF-8,
flip bytes) edit the file.
"""

from __future__ import annotations

import json
import random
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxreplay.datasets.importers import get_importer, importers
from ctxreplay.datasets.importers.reader import iter_records
from ctxreplay.datasets.importers.records import Record
from ctxreplay.datasets.messages import ROLES, Session
from ctxreplay.datasets.rejects import Reject

# --- tiny valid samples, one per format --------------------------------------------------------


def _oa_call(cid: str, name: str, args: str) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


OPENAI = [
    {"session_id": "o1", "messages": [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "find x"},
        {"role": "assistant", "content": None, "tool_calls": [_oa_call("c1", "find", '{"q": "x"}'), _oa_call("c2", "ls", "{}")]},
        {"role": "tool", "tool_call_id": "c1", "content": "x=1"},
        {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "a b"}]},
        {"role": "assistant", "content": "x is 1"},
    ]},
    {"session_id": "o2", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "https://e.com/i.png"}}]},
        {"role": "assistant", "content": "ok"},
    ]},
]  # fmt: skip

ANTHROPIC = [
    {"session_id": "a1", "system": "sys", "messages": [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "call it"},
            {"type": "tool_use", "id": "t1", "name": "weather", "input": {"city": "Oslo"}},
            {"type": "tool_use", "id": "t2", "name": "time", "input": {}},
        ], "usage": {"input_tokens": 5, "output_tokens": 2}},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "cold"},
            {"type": "tool_result", "tool_use_id": "t2", "is_error": True, "content": [{"type": "text", "text": "no clock"}]},
        ]},
        {"role": "assistant", "content": "It is cold."},
    ]},
    {"session_id": "a2", "request": {"system": [{"type": "text", "text": "be brief"}], "messages": [
        {"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}}]},
    ]}, "response": {"role": "assistant", "content": [{"type": "text", "text": "a picture"}]}},
]  # fmt: skip


def _span(conv: str, start: str, inputs: Any, outputs: Any) -> dict[str, Any]:
    return {
        "name": "chat",
        "start_time": start,
        "context": {"trace_id": f"trace-{conv}"},
        "attributes": {
            "gen_ai.conversation.id": conv,
            "gen_ai.input.messages": inputs,
            "gen_ai.output.messages": outputs,
            "gen_ai.usage.input_tokens": 10,
        },
    }


_U = {"role": "user", "parts": [{"type": "text", "content": "run it"}]}
_CALL = {"role": "assistant", "parts": [{"type": "tool_call", "id": "k1", "name": "run", "arguments": {"x": 1}}]}  # fmt: skip
_RESULT = {
    "role": "tool",
    "parts": [{"type": "tool_call_response", "id": "k1", "response": "done"}],
}
_DONE = {"role": "assistant", "parts": [{"type": "text", "content": "finished"}]}
OTEL = [
    _span("g1", "1700000000", [_U], [_CALL]),
    _span("g1", "1700000001", json.dumps([_U, _CALL, _RESULT]), json.dumps([_DONE])),
    {"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "t2", "startTimeUnixNano": "1700000002000000000",
        "attributes": [
            {"key": "gen_ai.conversation.id", "value": {"stringValue": "g2"}},
            {"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps([_U])}},
            {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps([_DONE])}},
        ],
    }]}]}]},
]  # fmt: skip


def _kv(role: str, text: str) -> dict[str, Any]:
    """An OTel message as a structured OTLP value (``kvlistValue``), one text part."""
    part = {"kvlistValue": {"values": [{"key": "type", "value": {"stringValue": "text"}},
                                       {"key": "content", "value": {"stringValue": text}}]}}  # fmt: skip
    return {"kvlistValue": {"values": [{"key": "role", "value": {"stringValue": role}},
                                       {"key": "parts", "value": {"arrayValue": {"values": [part]}}}]}}  # fmt: skip


def _event(name: str, body: dict[str, Any]) -> dict[str, Any]:
    """A v1.36 per-message event as a flattened log record of one span."""
    return {"event_name": name, "trace_id": "t4", "span_id": "s4", "body": body,
            "timestamp": "2025-01-01T00:00:00Z", "attributes": {"gen_ai.system": "openai"}}  # fmt: skip


OTEL += [
    # gen_ai.client.inference.operation.details as an OTLP log record, structured values
    {"resourceLogs": [{"scopeLogs": [{"logRecords": [{
        "eventName": "gen_ai.client.inference.operation.details", "traceId": "t3",
        "timeUnixNano": "1700000003000000000",
        "attributes": [
            {"key": "gen_ai.conversation.id", "value": {"stringValue": "g3"}},
            {"key": "gen_ai.input.messages", "value": {"arrayValue": {"values": [_kv("user", "hi")]}}},
            {"key": "gen_ai.output.messages", "value": {"arrayValue": {"values": [_kv("assistant", "yo")]}}},
            {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "7"}},
        ],
    }]}]}]},
    _event("gen_ai.user.message", {"content": "run it"}),
    _event("gen_ai.assistant.message", {"tool_calls": [
        {"id": "k4", "type": "function", "function": {"name": "run", "arguments": "{}"}}]}),
    _event("gen_ai.tool.message", {"content": "done", "id": "k4"}),
    _event("gen_ai.choice", {"index": 0, "finish_reason": "stop", "message": {"content": "finished"}}),
]  # fmt: skip

TAU = [
    {"task_id": 1, "trial": 0, "reward": 1.0, "info": {}, "traj": OPENAI[0]["messages"]},
    {"task_id": 2, "trial": 0, "reward": 0.0, "info": {}, "traj": OPENAI[1]["messages"]},
]

TAU2 = {
    "timestamp": "2025-08-01T16:23:24",
    "info": {
        "agent_info": {"implementation": "llm_agent", "llm": "m"},
        "user_info": {"implementation": "user_simulator", "llm": "m"},
        "environment_info": {"domain_name": "telecom", "policy": "Help.", "tool_defs": None},
    },
    "tasks": [{"id": "t1"}],
    "simulations": [
        {"id": "sim-1", "task_id": "t1", "trial": 0, "termination_reason": "user_stop", "messages": [
            {"role": "assistant", "content": "Hi!", "tool_calls": None, "turn_idx": 0},
            {"role": "user", "content": "slow data", "tool_calls": None, "turn_idx": 1},
            {"role": "assistant", "content": None, "turn_idx": 2, "tool_calls": [
                {"id": "call_a", "name": "get_customer", "arguments": {"phone": "555"}, "requestor": "assistant"}]},
            {"role": "tool", "id": "call_a", "content": "{\"id\": 7}", "requestor": "assistant", "error": False, "turn_idx": 3},
            {"role": "assistant", "content": "Found you.", "tool_calls": None, "turn_idx": 4},
        ]},
    ],
}  # fmt: skip

SWE = {
    "environment": "swe_main",
    "trajectory": [],
    "info": {"exit_status": "submitted"},
    "history": [
        {"role": "system", "content": "You are an agent.", "agent": "main"},
        {"role": "user", "content": "Fix the bug.", "agent": "main"},
        {"role": "assistant", "content": "Look.", "agent": "main", "tool_calls": [
            {"id": "call_x", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}}]},
        {"role": "tool", "content": "app.py", "agent": "main", "tool_call_ids": ["call_x"]},
        {"role": "assistant", "content": "Done.", "agent": "main"},
    ],
}  # fmt: skip

OPENHANDS = [
    {"instance_id": f"inst-{n}", "instruction": "Check the logs.", "metrics": None, "history": [
        {"kind": "MessageEvent", "id": "m1", "source": "user",
         "llm_message": {"role": "user", "content": [{"type": "text", "text": "Check the logs."}]}},
        {"kind": "ActionEvent", "id": "a1", "source": "agent", "thought": [{"type": "text", "text": "tail it"}],
         "tool_name": "execute_bash", "tool_call_id": f"call_{n}",
         "tool_call": {"id": f"call_{n}", "name": "execute_bash", "arguments": "{\"command\": \"tail app.log\"}"},
         "llm_response_id": "r1"},
        {"kind": "ObservationEvent", "id": "o1", "source": "environment", "tool_name": "execute_bash",
         "tool_call_id": f"call_{n}", "observation": {"kind": "ExecuteBashObservation", "output": "ERROR x"}},
        {"kind": "MessageEvent", "id": "m2", "source": "agent",
         "llm_message": {"role": "assistant", "content": [{"type": "text", "text": "Found ERROR x."}]}},
    ]}
    for n in (1, 2)
]  # fmt: skip


@dataclass(frozen=True)
class Sample:
    """A valid file: its records, how they are laid out, and the session id each one yields."""

    suffix: str
    layout: str  # "jsonl" (a record per line), "array" (elements of a list), "document"
    records: tuple[Any, ...]
    ids: tuple[str, ...]  # source session id of each record (per-record layouts)
    sessions: int  # sessions the unmutated file gives

    def render(self) -> tuple[bytes, list[tuple[int, int]]]:
        """The file's bytes and each record's (start, end) byte span."""
        texts = [json.dumps(r, ensure_ascii=False) for r in self.records]
        if self.layout == "document":
            body = texts[0].encode()
            return body + b"\n", [(0, len(body))]
        head, sep, tail = ("", "\n", "\n") if self.layout == "jsonl" else ("[\n", ",\n", "\n]\n")
        spans, out = [], head.encode()
        for i, text in enumerate(texts):
            start = len(out)
            out += text.encode()
            spans.append((start, len(out)))
            out += (sep if i < len(texts) - 1 else tail).encode()
        return out, spans


def _cc(kind: str, uuid: str, parent: str | None, content: Any, **extra: Any) -> dict[str, Any]:
    """A Claude Code log record (session ``cc-1``)."""
    message = {"role": kind, "content": content}
    if kind == "assistant":
        message.update(
            id=extra.pop("mid"), model="claude-x", usage={"input_tokens": 3, "output_tokens": 1}
        )
    return {"parentUuid": parent, "isSidechain": False, "sessionId": "cc-1", "version": "1.0.17",
            "type": kind, "message": message, "uuid": uuid, "timestamp": "2025-06-01T10:00:00Z", **extra}  # fmt: skip


CLAUDE = [
    {"type": "summary", "summary": "Weather", "leafUuid": "u6"},
    _cc("user", "u1", None, "weather?"),
    _cc("assistant", "u2", "u1", [{"type": "thinking", "thinking": "call both"},
                                  {"type": "tool_use", "id": "t1", "name": "weather", "input": {"city": "Oslo"}}], mid="m1"),
    _cc("assistant", "u3", "u2", [{"type": "tool_use", "id": "t2", "name": "time", "input": {}}], mid="m1"),
    _cc("user", "u4", "u3", [{"type": "tool_result", "tool_use_id": "t1", "content": "cold"}], toolUseResult={"temp": -3}),
    _cc("user", "u5", "u4", [{"type": "tool_result", "tool_use_id": "t2", "is_error": True,
                              "content": [{"type": "text", "text": "no clock"}]}], toolUseResult="Error: no clock"),
    _cc("assistant", "u6", "u5", [{"type": "text", "text": "It is cold."}], mid="m2"),
    _cc("user", "v1", None, "look around", isSidechain=True, agentId="ag1"),
    _cc("assistant", "v2", "v1", [{"type": "text", "text": "seen"}], mid="m3", isSidechain=True, agentId="ag1"),
]  # fmt: skip


INSPECT = {
    "version": 2, "status": "success",
    "eval": {"run_id": "r1", "task": "t", "task_id": "k1", "model": "m", "created": "2025-01-01T00:00:00Z"},
    "samples": [
        {"id": 1, "epoch": 1, "attachments": {"h1": "x=1"}, "messages": [
            {"role": "user", "content": "find x"},
            {"id": "a1", "role": "assistant", "content": [{"type": "reasoning", "reasoning": "look"}],
             "tool_calls": [{"id": "c1", "function": "find", "arguments": {"q": "x"}}]},
            {"role": "tool", "tool_call_id": "c1", "function": "find", "content": "attachment://h1"},
            {"role": "assistant", "content": "x is 1"},
        ], "events": [{"event": "model", "output": {"choices": [{"message": {"id": "a1"}}],
                       "usage": {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7}}}]},
        {"id": 2, "epoch": 1, "messages": [
            {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image", "image": "https://e.com/i.png"}]},
            {"role": "assistant", "content": "ok"},
        ]},
    ],
}  # fmt: skip


def _cx(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    """A Codex CLI rollout line (session ``cx-1``)."""
    return {"timestamp": "2025-10-01T10:00:00.000Z", "type": kind, "payload": payload}


_CX_USAGE = {"input_tokens": 9, "cached_input_tokens": 0, "output_tokens": 2, "total_tokens": 11}
CODEX = [
    _cx("session_meta", {"id": "cx-1", "cwd": "/w", "cli_version": "0.50.0", "originator": "codex_cli_rs"}),
    _cx("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "find x"}]}),
    _cx("event_msg", {"type": "user_message", "message": "find x"}),
    _cx("turn_context", {"cwd": "/w", "model": "gpt-5-codex"}),
    _cx("event_msg", {"type": "token_count", "info": {"total_token_usage": _CX_USAGE, "last_token_usage": _CX_USAGE}}),
    _cx("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "look"}], "encrypted_content": "gAAAA"}),
    _cx("response_item", {"type": "function_call", "call_id": "k1", "name": "find", "arguments": "{\"q\": \"x\"}"}),
    _cx("response_item", {"type": "custom_tool_call", "call_id": "k2", "name": "apply_patch", "input": "*** Begin Patch"}),
    _cx("response_item", {"type": "function_call_output", "call_id": "k1", "output": "x=1"}),
    _cx("response_item", {"type": "custom_tool_call_output", "call_id": "k2", "output": "Done."}),
    _cx("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "x is 1"}]}),
    _cx("event_msg", {"type": "turn_aborted", "reason": "interrupted"}),
]  # fmt: skip

RESPONSES = [
    {"id": "resp_1", "conversation": "r1", "model": "gpt-5", "input": [{"role": "user", "content": "find x"}],
     "output": [{"type": "reasoning", "summary": [], "encrypted_content": "gAAAA"},
                {"type": "function_call", "call_id": "f1", "name": "find", "arguments": "{\"q\": \"x\"}"},
                {"type": "function_call", "call_id": "f2", "name": "ls", "arguments": "{}"}],
     "usage": {"input_tokens": 5, "output_tokens": 2}},
    {"id": "resp_2", "conversation": "r1", "model": "gpt-5", "input": [
        {"type": "function_call_output", "call_id": "f1", "output": "x=1"},
        {"type": "function_call_output", "call_id": "f2", "output": [{"type": "input_text", "text": "a b"}]}],
     "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "x is 1"}]}]},
    {"id": "r2", "items": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "look"},
                                                         {"type": "input_image", "image_url": "https://e.com/i.png"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}]},
]  # fmt: skip


def _gm(mid: str, kind: str, content: Any, **extra: Any) -> dict[str, Any]:
    """A Gemini CLI chat log message line (session ``gm-1``)."""
    when = "2026-04-02T09:00:00.000Z"
    return {"id": mid, "timestamp": when, "type": kind, "content": content, **extra}


def _gm_result(cid: str, name: str, response: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"functionResponse": {"id": cid, "name": name, "response": response}}]


_GM_TOKENS = {"input": 9, "output": 2, "cached": 0, "thoughts": 1, "tool": 0, "total": 12}
GEMINI = [
    {"sessionId": "gm-1", "projectHash": "9c4b", "startTime": "2026-04-02T09:00:00.000Z", "lastUpdated": "2026-04-02T09:00:00.000Z"},
    _gm("m1", "user", [{"text": "find x"}]),
    _gm("m2", "gemini", "", thoughts=[{"subject": "Look", "description": "search it", "timestamp": "2026-04-02T09:00:00.000Z"}],
        toolCalls=[{"id": "k1", "name": "find", "args": {"q": "x"}, "status": "success", "timestamp": "2026-04-02T09:00:01.000Z",
                    "result": _gm_result("k1", "find", {"output": "x=1"})},
                   {"id": "k2", "name": "ls", "args": {}, "status": "error", "timestamp": "2026-04-02T09:00:01.000Z",
                    "result": _gm_result("k2", "ls", {"error": "no dir"})}],
        tokens=_GM_TOKENS, model="gemini-2.5-pro"),
    _gm("m3", "info", "Request cancelled."),
    _gm("m4", "gemini", "x is 1", tokens=_GM_TOKENS, model="gemini-2.5-pro"),
    {"$set": {"summary": "Find x"}},
]  # fmt: skip


def _lf(oid: str, trace: str, kind: str, start: str, **extra: Any) -> dict[str, Any]:
    """A Langfuse observation row (session ``lf-s1`` unless ``sessionId`` says otherwise)."""
    return {"id": oid, "traceId": trace, "type": kind, "name": kind.lower(), "startTime": start,
            "parentObservationId": None, "sessionId": "lf-s1", **extra}  # fmt: skip


_LF_CALLS = {"role": "assistant", "content": None, "tool_calls": [_oa_call("lf1", "run", '{"x": 1}'), _oa_call("lf2", "ls", "{}")]}  # fmt: skip
LANGFUSE = [
    _lf("g1", "t1", "GENERATION", "2025-01-01T00:00:00Z", input=[{"role": "user", "content": "run it"}],
        output=_LF_CALLS, usageDetails={"input": 10, "output": 2, "total": 12}, providedModelName="m"),
    _lf("g2", "t1", "GENERATION", "2025-01-01T00:00:02Z", input=[
        {"role": "user", "content": "run it"}, _LF_CALLS,
        {"role": "tool", "tool_call_id": "lf1", "content": "done"},
        {"role": "tool", "tool_call_id": "lf2", "content": "a b"}],
        output={"role": "assistant", "content": "finished"}, usageDetails={"input": 20, "output": 1}),
    _lf("s1", "t1", "SPAN", "2025-01-01T00:00:00Z", input={"q": "x"}),
    _lf("g3", "t2", "GENERATION", "2025-01-01T00:01:00Z", sessionId=None, input="hello", output="hi"),
]  # fmt: skip


def _px(span: str, trace: str, kind: str, attrs: dict[str, Any]) -> dict[str, Any]:
    """A Phoenix span (REST API shape: flattened attributes), session ``px-s1``."""
    return {"name": kind.lower(), "context": {"trace_id": trace, "span_id": span}, "span_kind": kind,
            "parent_id": None, "start_time": f"2025-01-01T00:00:0{len(span)}Z", "status_code": "OK",
            "attributes": {"session.id": "px-s1", **attrs}}  # fmt: skip


_PX_USER = {
    "llm.input_messages.0.message.role": "user",
    "llm.input_messages.0.message.content": "run it",
}
_PX_CALLS = {
    "message.role": "assistant",
    "message.tool_calls.0.tool_call.id": "px1", "message.tool_calls.0.tool_call.function.name": "run",
    "message.tool_calls.0.tool_call.function.arguments": '{"x": 1}',
    "message.tool_calls.1.tool_call.id": "px2", "message.tool_calls.1.tool_call.function.name": "ls",
    "message.tool_calls.1.tool_call.function.arguments": "{}",
}  # fmt: skip
PHOENIX = [
    _px("a", "p1", "LLM", {**_PX_USER, **{f"llm.output_messages.0.{k}": v for k, v in _PX_CALLS.items()},
                           "llm.token_count.prompt": 10, "llm.token_count.completion": 2}),
    _px("bb", "p1", "LLM", {**_PX_USER, **{f"llm.input_messages.1.{k}": v for k, v in _PX_CALLS.items()},
                            "llm.input_messages.2.message.role": "tool", "llm.input_messages.2.message.tool_call_id": "px1",
                            "llm.input_messages.2.message.content": "done",
                            "llm.input_messages.3.message.role": "tool", "llm.input_messages.3.message.tool_call_id": "px2",
                            "llm.input_messages.3.message.content": "a b",
                            "llm.output_messages.0.message.role": "assistant",
                            "llm.output_messages.0.message.content": "finished"}),
    _px("ccc", "p1", "CHAIN", {"input.value": "run it"}),
    {"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "p2", "spanId": "d", "startTimeUnixNano": "1700000002000000000",
        "attributes": [
            {"key": "openinference.span.kind", "value": {"stringValue": "LLM"}},
            {"key": "llm.input_messages.0.message.role", "value": {"stringValue": "user"}},
            {"key": "llm.input_messages.0.message.content", "value": {"stringValue": "hello"}},
            {"key": "llm.output_messages.0.message.role", "value": {"stringValue": "assistant"}},
            {"key": "llm.output_messages.0.message.content", "value": {"stringValue": "hi"}},
        ],
    }]}]}]},
]  # fmt: skip


def _ls(
    rid: str, run_type: str, inputs: Any, outputs: Any, trace: str = "ls-t1", **extra: Any
) -> dict[str, Any]:
    """A LangSmith run (thread ``ls-th1`` unless the trace has none); dotted order from ``rid``."""
    meta = {"thread_id": "ls-th1"} if trace == "ls-t1" else {}
    return {"id": rid, "trace_id": trace, "run_type": run_type, "name": run_type, "inputs": inputs,
            "outputs": outputs, "dotted_order": f"20250101T00000{rid[-1]}000000Z{trace}.{rid}",
            "start_time": "2025-01-01T00:00:00", "end_time": f"2025-01-01T00:00:0{rid[-1]}",
            "session_id": "ls-project", "extra": {"metadata": meta}, **extra}  # fmt: skip


def _lc(cls: str, **kwargs: Any) -> dict[str, Any]:
    """A LangChain message as ``dumpd`` serializes it."""
    return {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", cls], "kwargs": kwargs}  # fmt: skip


_LS_CALLS = _lc("AIMessage", content="", tool_calls=[
    {"name": "run", "args": {"x": 1}, "id": "lk1", "type": "tool_call"},
    {"name": "ls", "args": {}, "id": "lk2", "type": "tool_call"}],
    usage_metadata={"input_tokens": 10, "output_tokens": 2, "total_tokens": 12})  # fmt: skip
LANGSMITH = [
    _ls("r0", "chain", {"input": "run it"}, {"output": "finished"}),
    _ls("r1", "llm", {"messages": [[_lc("HumanMessage", content="run it")]]},
        {"generations": [[{"text": "", "message": _LS_CALLS}]]}, prompt_tokens=10, completion_tokens=2),
    _ls("r2", "tool", {"input": "{'x': 1}"}, {"output": {"type": "tool", "content": "done", "tool_call_id": "lk1"}}),
    _ls("r3", "llm", {"messages": [[_lc("HumanMessage", content="run it"), _LS_CALLS,
                                    _lc("ToolMessage", content="done", tool_call_id="lk1"),
                                    {"type": "tool", "data": {"content": "a b", "tool_call_id": "lk2"}}]]},
        {"generations": [[{"text": "finished", "message": _lc("AIMessage", content="finished")}]]}),
    _ls("r4", "llm", {"messages": [{"role": "user", "content": "look"}]},
        {"choices": [{"message": {"role": "assistant", "content": "ok"}}]}, trace="ls-t2"),
]  # fmt: skip


#: a Roo Code task history (``api_conversation_history.json``): one document, one session
CLINE = [
    {"role": "user", "content": [{"type": "text", "text": "<task>\nfind x\n</task>"}], "ts": 1750000000000},
    {"role": "assistant", "content": [{"type": "reasoning", "text": "look"},
                                      {"type": "tool_use", "id": "t1", "name": "find", "input": {"q": "x"}},
                                      {"type": "tool_use", "id": "t2", "name": "ls", "input": {}}],
     "ts": 1750000001000, "condenseParent": "cd-1"},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x=1"},
                                 {"type": "tool_result", "tool_use_id": "t2", "is_error": True,
                                  "content": [{"type": "text", "text": "no dir"}]}],
     "ts": 1750000002000, "condenseParent": "cd-1"},
    {"role": "assistant", "content": [{"type": "text", "text": "Summary: x is 1."}], "ts": 1750000002999,
     "isSummary": True, "condenseId": "cd-1"},
    {"role": "user", "content": "and y?", "ts": 1750000003000},
    {"role": "assistant", "content": [{"type": "text", "text": "y is 2"}], "ts": 1750000004000},
]  # fmt: skip


def _ocp(kind: str, **extra: Any) -> dict[str, Any]:
    """An OpenCode part (``message-v2.ts``)."""
    return {"type": kind, **extra}


def _oc_tool(cid: str, name: str, state: dict[str, Any]) -> dict[str, Any]:
    return _ocp("tool", callID=cid, tool=name, state={"input": {"q": "x"}, "time": {"start": 1, "end": 2}, **state})  # fmt: skip


_OC_TOKENS = {"input": 5, "output": 2, "reasoning": 0, "cache": {"read": 4, "write": 0}}
OPENCODE = {  # ``opencode export <session>``: {info, messages: [{info, parts}]}
    "info": {"id": "ses_p1", "projectID": "prj", "directory": "/w", "title": "t", "version": "1.2.5",
             "time": {"created": 1760000000000, "updated": 1760000009000}},
    "messages": [
        {"info": {"id": "msg_1", "role": "user", "time": {"created": 1760000000000}}, "parts": [_ocp("text", text="find x")]},
        {"info": {"id": "msg_2", "role": "assistant", "time": {"created": 1760000001000}, "modelID": "m",
                  "providerID": "p", "tokens": _OC_TOKENS, "cost": 0.01}, "parts": [
            _ocp("step-start"), _ocp("reasoning", text="look"),
            _oc_tool("oc1", "find", {"status": "completed", "output": "x=1", "title": "", "metadata": {}}),
            _oc_tool("oc2", "ls", {"status": "error", "error": "no dir"}),
            _ocp("step-finish", reason="tool-calls", cost=0.01, tokens=_OC_TOKENS),
            _ocp("step-start"), _ocp("text", text="x is 1"),
            _ocp("step-finish", reason="stop", cost=0.01, tokens=_OC_TOKENS)]},
        {"info": {"id": "msg_3", "role": "user", "time": {"created": 1760000002000}}, "parts": [
            _ocp("file", mime="image/png", url="data:image/png;base64,iVBO"), _ocp("text", text="and this?")]},
        {"info": {"id": "msg_4", "role": "assistant", "time": {"created": 1760000003000}, "modelID": "m",
                  "providerID": "p", "tokens": _OC_TOKENS}, "parts": [_ocp("text", text="a picture")]},
    ],
}  # fmt: skip


def _goose(role: str, created: int, *content: dict[str, Any]) -> dict[str, Any]:
    """A Goose session JSONL message line (``message.rs``)."""
    return {"role": role, "created": created, "content": list(content)}


def _g_call(cid: str, name: str) -> dict[str, Any]:
    return {"type": "toolRequest", "id": cid, "toolCall": {"status": "success", "value": {"name": name, "arguments": {"q": "x"}}}}  # fmt: skip


GOOSE = [
    {"working_dir": "/w", "description": "find x", "message_count": 6, "total_tokens": 12},
    _goose("user", 1740000000, {"type": "text", "text": "find x"}),
    _goose("assistant", 1740000001, {"type": "text", "text": "looking"}, _g_call("gt1", "find"), _g_call("gt2", "ls")),
    _goose("user", 1740000002,
           {"type": "toolResponse", "id": "gt1", "toolResult": {"status": "success", "value": [{"type": "text", "text": "x=1"}]}},
           {"type": "toolResponse", "id": "gt2", "toolResult": {"status": "error", "error": "no dir"}}),
    _goose("assistant", 1740000003, {"type": "thinking", "thinking": "done", "signature": "s"}, {"type": "text", "text": "x is 1"}),
    _goose("user", 1740000004, {"type": "image", "data": "iVBO", "mimeType": "image/png"}, {"type": "text", "text": "and this?"}),
    _goose("assistant", 1740000005, {"type": "text", "text": "a picture"}),
]  # fmt: skip


SAMPLES: dict[str, Sample] = {
    "openai-chat": Sample(".jsonl", "jsonl", tuple(OPENAI), ("o1", "o2"), 2),
    "opencode": Sample(".json", "document", (OPENCODE,), ("ses_p1",), 1),
    "goose": Sample(".jsonl", "jsonl", tuple(GOOSE), ("sample",) * len(GOOSE), 1),
    "cline": Sample(".json", "document", (CLINE,), ("",), 1),
    "anthropic-messages": Sample(".jsonl", "jsonl", tuple(ANTHROPIC), ("a1", "a2"), 2),
    "otel-genai": Sample(".jsonl", "jsonl", tuple(OTEL), ("g1", "g1", "g2", "g3") + ("t4",) * 4, 4),
    "tau-bench": Sample(".json", "array", tuple(TAU), ("task-1/trial-0", "task-2/trial-0"), 2),
    "tau2-bench": Sample(".json", "document", (TAU2,), ("sim-1",), 1),
    "swe-agent": Sample(".traj", "document", (SWE,), ("",), 1),
    "openhands": Sample(".jsonl", "jsonl", tuple(OPENHANDS), ("inst-1", "inst-2"), 2),
    "codex-cli": Sample(".jsonl", "jsonl", tuple(CODEX), ("cx-1",) * len(CODEX), 1),
    "openai-responses": Sample(".jsonl", "jsonl", tuple(RESPONSES), ("r1", "r1", "r2"), 2),
    "inspect-ai": Sample(".json", "document", (INSPECT,), ("1/epoch-1", "2/epoch-1"), 2),
    "claude-code": Sample(
        ".jsonl", "jsonl", tuple(CLAUDE), ("",) + ("cc-1",) * 6 + ("cc-1/agent/ag1",) * 2, 2
    ),
    "gemini-cli": Sample(".jsonl", "jsonl", tuple(GEMINI), ("gm-1",) * len(GEMINI), 1),
    "langfuse": Sample(".jsonl", "jsonl", tuple(LANGFUSE), ("lf-s1",) * 3 + ("t2",), 2),
    "phoenix": Sample(".jsonl", "jsonl", tuple(PHOENIX), ("px-s1",) * 3 + ("p2",), 2),
    "langsmith": Sample(".jsonl", "jsonl", tuple(LANGSMITH), ("ls-th1",) * 4 + ("ls-t2",), 2),
}
#: formats whose sessions gather several records (no record stands alone)
GROUPING = {"codex-cli", "openai-responses", "otel-genai", "claude-code", "gemini-cli"}
GROUPING |= {"langfuse", "phoenix"}
GROUPING |= {"langsmith"}
GROUPING |= {"goose"}
#: formats whose files are not JSON records (Markdown, SQLite): the JSON mutations here do not
#: apply, so each has its own hypothesis property test (mutating its lines, rows or bytes) in its
#: test file, asserting the same: no exception, every record accounted for
OWN_PROPERTY_TESTS = {"aider"}  # tests/datasets/test_import_aider.py
OWN_PROPERTY_TESTS |= {"opencode", "goose"}  # their SQLite databases: test_import_opencode/goose.py
#: formats whose tool call and its result are one record (an OpenCode tool part): no result can
#: lose its call, so there is no orphan to make
CALL_HOLDS_RESULT = {"opencode"}


def _sample(fmt: str) -> Sample:
    if fmt not in importers:
        pytest.skip(f"the {fmt} importer is not registered")
    return SAMPLES[fmt]


def test_every_registered_importer_has_a_sample() -> None:
    missing = sorted(set(importers.names()) - set(SAMPLES) - OWN_PROPERTY_TESTS)
    assert not missing, f"write a valid sample for {missing} in this file"


# --- mutations ---------------------------------------------------------------------------------


class Embedded:
    """JSON text found inside a string, decoded so a mutation can reach into it."""

    def __init__(self, value: Any) -> None:
        self.value = value


def expand(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: expand(x) for k, x in v.items()}
    if isinstance(v, list):
        return [expand(x) for x in v]
    if isinstance(v, str) and v[:1] in ("[", "{"):
        try:
            decoded = json.loads(v)
        except ValueError:
            return v
        if isinstance(decoded, dict | list):
            return Embedded(expand(decoded))
    return v


def collapse(v: Any) -> Any:
    if isinstance(v, Embedded):
        return json.dumps(collapse(v.value))
    if isinstance(v, dict):
        return {k: collapse(x) for k, x in v.items()}
    if isinstance(v, list):
        return [collapse(x) for x in v]
    return v


def slots(v: Any, out: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Every (container, key) position below ``v``."""
    if isinstance(v, Embedded):
        return slots(v.value, out)
    if isinstance(v, dict):
        for k in list(v):
            out.append((v, k))
            slots(v[k], out)
    elif isinstance(v, list):
        for i in range(len(v)):
            out.append((v, i))
            slots(v[i], out)
    return out


ID_KEYS = {"id", "tool_call_id", "tool_use_id", "call_id"}
REPLACEMENTS: list[Any] = [42, -1, 1.5, True, None, "", "text", [], {}, [1, "x"], {"k": "v"}]
STRUCTURAL = ("delete", "retype", "duplicate_id", "orphan_id")
BYTEWISE = ("truncate", "invalid_utf8", "flip")


def mutate_record(record: Any, kind: str, rng: random.Random) -> Any:
    tree = expand(record)
    positions = slots(tree, [])
    if kind == "delete" and positions:
        container, key = rng.choice(positions)
        del container[key]
    elif kind == "retype" and positions:
        container, key = rng.choice(positions)
        container[key] = rng.choice(REPLACEMENTS)
    elif kind in ("duplicate_id", "orphan_id"):
        ids = [(c, k) for c, k in positions if k in ID_KEYS and isinstance(c[k], str)]
        if kind == "duplicate_id" and len(ids) >= 2:
            (c1, k1), (c2, k2) = rng.sample(ids, 2)
            c1[k1] = c2[k2]
        elif ids:
            container, key = rng.choice(ids)
            container[key] = "orphan-id"
    return collapse(tree)


@dataclass
class Mutated:
    data: bytes
    touched: set[int]  # indexes of records the mutation may have changed


def mutate(sample: Sample, kind: str, seed: int) -> Mutated:
    rng = random.Random(seed)
    data, spans = sample.render()
    if kind == "none":
        return Mutated(data, set())
    if kind in STRUCTURAL:
        k = rng.randrange(len(sample.records))
        records = list(sample.records)
        records[k] = mutate_record(records[k], kind, rng)
        new = Sample(sample.suffix, sample.layout, tuple(records), sample.ids, sample.sessions)
        return Mutated(new.render()[0], {k})
    if kind == "truncate":
        cut = rng.randrange(len(data))
        return Mutated(data[:cut], {i for i, (_, end) in enumerate(spans) if end > cut})
    if kind == "invalid_utf8":
        quotes = [i + 1 for i, b in enumerate(data) if b == ord('"')] or [0]
        at = rng.choice(quotes)
        bad = rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xfe\xff"])
        return Mutated(data[:at] + bad + data[at:], _hit(sample, spans, [at]))
    flips = sorted(rng.sample(range(len(data)), min(len(data), rng.randint(1, 4))))
    out = bytearray(data)
    for at in flips:
        out[at] ^= rng.randint(1, 255)
    return Mutated(bytes(out), _hit(sample, spans, flips))


def _hit(sample: Sample, spans: list[tuple[int, int]], positions: list[int]) -> set[int]:
    """Records a byte edit at ``positions`` may have damaged."""
    if sample.layout == "array":  # reading an array stops at the first broken element
        first = min(positions)
        return {i for i, (_, end) in enumerate(spans) if end >= first}
    # an edit to the newline around a JSONL record merges it with its neighbour
    return {i for i, (start, end) in enumerate(spans) for p in positions if start - 1 <= p <= end}


# --- the properties -------------------------------------------------------------------------------


def run(fmt: str, sample: Sample, data: bytes) -> tuple[list[Session | Reject], Any, Path]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"sample{sample.suffix}"
        path.write_bytes(data)
        importer = get_importer(fmt)
        items = list(importer.read(path))  # must not raise, whatever the bytes
        expected = [r.index if isinstance(r, Record) else r.record for r in iter_records(path, fmt)]
    return items, (importer, expected), path


def check(fmt: str, sample: Sample, mutated: Mutated) -> None:
    items, (importer, expected), _ = run(fmt, sample, mutated.data)
    sessions = [i for i in items if isinstance(i, Session)]
    rejects = [i for i in items if isinstance(i, Reject)]
    assert len(sessions) + len(rejects) == len(items), items
    for r in rejects:
        assert isinstance(r.reason, str) and r.reason, r
        assert isinstance(r.detail, str) and isinstance(r.raw, bytes)
    for s in sessions:
        assert s.messages and all(m.role in ROLES for m in s.messages)
        assert [m.seq for m in s.messages] == list(range(len(s.messages)))
    # every record is accounted for: a session, a reject, or (OTel) a span with no model call
    accounted = {s.source_record for s in sessions} | {r.record for r in rejects}
    if sample.layout == "document":
        inner = _document_records(fmt, mutated.data)
        if inner is None:
            assert items, "a file must give a session or a reject"
        else:
            assert inner <= accounted, f"records {sorted(inner - accounted)} vanished"
        return
    for s in sessions:
        accounted |= set(s.metadata.get("records", ())) if fmt in GROUPING else set()
    accounted |= set(getattr(importer, "ignored_records", ()))
    if None not in accounted:  # a file-level reject (empty, unreadable) stands for all
        missing = set(expected) - accounted
        assert not missing, f"records {sorted(missing)} vanished"
    # records the mutation did not touch still import
    if fmt not in GROUPING:
        untouched = {sample.ids[i] for i in range(len(sample.records)) if i not in mutated.touched}
        imported = {s.source_session_id for s in sessions}
        assert untouched <= imported, f"untouched records {untouched - imported} did not import"


def _document_records(fmt: str, data: bytes) -> set[int] | None:
    """Session records inside a one-document file (tau2: its simulations, inspect_ai: its
    samples), when it parses."""
    key = {"tau2-bench": "simulations", "inspect-ai": "samples"}.get(fmt)
    if key is None:
        return None
    try:
        doc = json.loads(data)
    except ValueError:
        return None
    sims = doc.get(key) if isinstance(doc, dict) else None
    return set(range(len(sims))) if isinstance(sims, list) else None


FORMATS = sorted(SAMPLES)


@pytest.mark.parametrize("fmt", FORMATS)
def test_unmutated_sample_imports_cleanly(fmt: str) -> None:
    sample = _sample(fmt)
    items, _, _ = run(fmt, sample, sample.render()[0])
    assert [i for i in items if isinstance(i, Reject)] == []
    sessions = [i for i in items if isinstance(i, Session)]
    assert len(sessions) == sample.sessions
    check(fmt, sample, Mutated(sample.render()[0], set()))


@pytest.mark.parametrize("fmt", FORMATS)
@settings(
    max_examples=50,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(kind=st.sampled_from(STRUCTURAL), seed=st.integers(0, 2**32 - 1))
def test_structural_mutations_never_raise_and_account_for_records(
    fmt: str, kind: str, seed: int
) -> None:
    sample = _sample(fmt)
    check(fmt, sample, mutate(sample, kind, seed))


@pytest.mark.parametrize("fmt", FORMATS)
@settings(
    max_examples=50,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(kind=st.sampled_from(BYTEWISE), seed=st.integers(0, 2**32 - 1))
def test_byte_mutations_never_raise_and_account_for_records(fmt: str, kind: str, seed: int) -> None:
    sample = _sample(fmt)
    check(fmt, sample, mutate(sample, kind, seed))


@pytest.mark.parametrize("fmt", FORMATS)
def test_duplicate_ids_and_orphan_results_are_rejected(fmt: str) -> None:
    """The targeted id mutations, applied to the first tool call of the first record."""
    sample = _sample(fmt)
    data, _ = sample.render()
    text = data.decode()
    call_id = {"openai-chat": "c1", "anthropic-messages": "t1", "otel-genai": "k1",
               "tau-bench": "c1", "tau2-bench": "call_a", "swe-agent": "call_x",
               "openhands": "call_1", "inspect-ai": "c1", "claude-code": "t1", "cline": "t1",
               "codex-cli": "k1", "openai-responses": "f1", "gemini-cli": "k1",
               "langfuse": "lf1", "phoenix": "px1",
               "langsmith": "lk1", "opencode": "oc1", "goose": "gt1"}[fmt]  # fmt: skip
    second = {"openai-chat": "c2", "anthropic-messages": "t2", "claude-code": "t2", "cline": "t2",
              "codex-cli": "k2", "openai-responses": "f2", "gemini-cli": "k2",
              "langfuse": "lf2", "phoenix": "px2",
              "langsmith": "lk2", "opencode": "oc2", "goose": "gt2"}.get(fmt)  # fmt: skip
    if second:  # two open calls share an id: rejected
        items, _, _ = run(fmt, sample, text.replace(f'"{second}"', f'"{call_id}"').encode())
        assert "duplicate_tool_call_id" in {i.reason for i in items if isinstance(i, Reject)}
    if fmt in CALL_HOLDS_RESULT:
        return
    # every result of the call now answers an id nobody called
    orphaned = _orphan(text, fmt, call_id)
    items, _, _ = run(fmt, sample, orphaned.encode())
    reasons = {i.reason for i in items if isinstance(i, Reject)}
    if get_importer(fmt).orphan_results == "as_text":  # kept as text, flagged, never rejected
        assert not reasons, items
        flags = {f for i in items if isinstance(i, Session) for m in i.messages for f in m.flags}
        assert "orphan_tool_result" in flags, items
        return
    assert "orphan_tool_result" in reasons, items


def _orphan(text: str, fmt: str, call_id: str) -> str:
    """Rename the call's result references (not the call) to an id nobody made."""
    for key in ("tool_call_id", "tool_use_id", "tool_call_ids"):
        text = text.replace(f'"{key}": "{call_id}"', f'"{key}": "ghost"')
        text = text.replace(f'"{key}": ["{call_id}"]', f'"{key}": ["ghost"]')
    if fmt in ("codex-cli", "openai-responses"):  # the output items answering the call
        text = text.replace(f'_output", "call_id": "{call_id}"', '_output", "call_id": "ghost"')
    if fmt == "otel-genai":
        text = text.replace(
            '"tool_call_response", "id": "k1"', '"tool_call_response", "id": "ghost"'
        )
        text = text.replace(
            '\\"tool_call_response\\", \\"id\\": \\"k1\\"',
            '\\"tool_call_response\\", \\"id\\": \\"ghost\\"',
        )
    if fmt == "tau2-bench":
        text = text.replace('"role": "tool", "id": "call_a"', '"role": "tool", "id": "ghost"')
    if fmt == "phoenix":  # OpenInference's flattened result id
        text = text.replace('.message.tool_call_id": "px1"', '.message.tool_call_id": "ghost"')
    if fmt == "goose":  # the toolResponse item answering the call
        text = text.replace('"toolResponse", "id": "gt1"', '"toolResponse", "id": "ghost"')
    if fmt == "gemini-cli":  # the function response inside the call's result
        text = text.replace('"functionResponse": {"id": "k1"', '"functionResponse": {"id": "ghost"')
    return text
