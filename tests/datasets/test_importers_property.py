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
from ctxreplay.datasets.importers.base import Record, iter_records
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


SAMPLES: dict[str, Sample] = {
    "openai-chat": Sample(".jsonl", "jsonl", tuple(OPENAI), ("o1", "o2"), 2),
    "anthropic-messages": Sample(".jsonl", "jsonl", tuple(ANTHROPIC), ("a1", "a2"), 2),
    "otel-genai": Sample(".jsonl", "jsonl", tuple(OTEL), ("g1", "g1", "g2"), 2),
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
}
#: formats whose sessions gather several records (no record stands alone)
GROUPING = {"codex-cli", "openai-responses", "otel-genai", "claude-code"}


def _sample(fmt: str) -> Sample:
    if fmt not in importers:
        pytest.skip(f"the {fmt} importer is not registered")
    return SAMPLES[fmt]


def test_every_registered_importer_has_a_sample() -> None:
    missing = sorted(set(importers.names()) - set(SAMPLES))
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
               "openhands": "call_1", "inspect-ai": "c1", "claude-code": "t1",
               "codex-cli": "k1", "openai-responses": "f1"}[fmt]  # fmt: skip
    second = {"openai-chat": "c2", "anthropic-messages": "t2", "claude-code": "t2",
              "codex-cli": "k2", "openai-responses": "f2"}.get(fmt)  # fmt: skip
    if second:  # two open calls share an id: rejected
        items, _, _ = run(fmt, sample, text.replace(f'"{second}"', f'"{call_id}"').encode())
        assert "duplicate_tool_call_id" in {i.reason for i in items if isinstance(i, Reject)}
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
    return text
