"""The import hardening campaign: mutated records through every importer, counting what went wrong.

    python benchmarks/campaign_import.py [--corpora ../shared/corpora] [--per-kind 120] [--seed 0]

Records come from the test fixtures and, when ``../shared/corpora`` is there, from the public
traces (tau-bench, tau2-bench, SWE-agent, OpenHands; tau-bench trajectories are also rewritten as
OpenAI chat sessions, Anthropic Messages conversations and OTel GenAI spans). Each record is
imported clean once (its baseline), then mutated by every kind below, written into a file beside
a clean companion record, and imported (``import_paths``, the whole pipeline). Three counts must
be 0:

* crashes: an exception escaping ``import_paths`` (an ``AmbiguousFormat`` question is not one);
* silent losses: a file whose records seen differ from the records written or from sessions +
  rejects + skipped, a mutated record with no outcome at all, a clean companion lost, or two
  records merged into one;
* silent accepts: a mutation that must be rejected or flagged, imported without the flag; or a
  record that must import unchanged (detection tricks, other encodings) imported differently.

What each kind expects of the mutated record:

=================  =========================================================================
deep_nesting       a field replaced by JSON nested 1,000-5,000 deep: rejected
huge_int           a token count past int64 (fields without one: an id): rejected or flagged
                   ``usage_out_of_range`` (an id: anything but a crash or loss)
nan_timestamp      NaN, Infinity, -Infinity, 1e30 or -5 as a time: rejected or flagged
                   ``timestamp_invalid`` (SWE-agent records no times: anything)
wrong_type         a required field of the wrong JSON type: rejected
missing_key        a required field deleted: rejected
truncation         the file cut inside the record: rejected, the records before it kept
bad_utf8           invalid UTF-8 bytes inside a string of the record: rejected, others kept
duplicated_ids     a tool-call id reused (rejected, or renamed and flagged), a session id
                   shared with the companion (both imported), an OTel conversation id shared
                   by two conversations (split and flagged, or rejected; never merged)
empty_lists        the message (event, span) list emptied: rejected
unknown_kinds      an unknown event kind or content part type: flagged; an unknown role:
                   rejected
detection_trick    other formats' keys written into the record's text values: detected as
                   before, imported unchanged
format_confusion   another format's structure added to a lone record: the import asks for
                   ``--format`` (naming the true format), or imports the record unchanged
huge_field         a 1.5 MB message (limit set to 1 MB): rejected
file_encoding      the whole file re-encoded (UTF-16 with and without a byte-order mark,
                   UTF-8 with one): every record imported unchanged
=================  =========================================================================
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import random
import shutil
import sys
import tempfile
import time
import zipfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _shared import CORPORA

from ctxreplay.datasets.importers import AmbiguousFormat, detect
from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.store import Corpus

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
FORMATS = (
    "openai-chat",
    "anthropic-messages",
    "tau-bench",
    "tau2-bench",
    "swe-agent",
    "openhands",
    "otel-genai",
    "inspect-ai",
    "claude-code",
    "codex-cli",
    "openai-responses",
)
KINDS = (
    "deep_nesting",
    "huge_int",
    "nan_timestamp",
    "wrong_type",
    "missing_key",
    "truncation",
    "bad_utf8",
    "duplicated_ids",
    "empty_lists",
    "unknown_kinds",
    "detection_trick",
    "format_confusion",
    "huge_field",
    "file_encoding",
)
#: OpenHands events that become messages (the others' fields are not read)
_MESSAGE_EVENTS = {
    "MessageEvent",
    "ActionEvent",
    "ObservationEvent",
    "SystemPromptEvent",
    "AgentErrorEvent",
    "UserRejectObservation",
    "CondensationSummaryEvent",
}
#: kinds imported with format detection (the others with ``--format``)
DETECTED = {"detection_trick", "format_confusion", "file_encoding"}
#: kinds with fewer records (they write large files)
SMALL = {"huge_field": 15, "file_encoding": 15}
MAX_MESSAGE_BYTES = 1024 * 1024
DEEP = "@DEEP@"
NUM = "@NUM@"
MARKERS = [
    '"gen_ai.input.messages": []',
    '{"type": "function", "function": {"name": "x"}}',
    '"resourceSpans": [{"scopeSpans": []}]',
    '"kind": "ActionEvent"',
    '"simulations": [], "environment_info": {}',
    '"traj": [], "task_id": 1',
    '"history": [{"role": "user", "agent": "main"}]',
    '{"type": "tool_use", "id": "t", "input": {}}',
    '"x-ctxreplay": {"parts": []}',
]


# --- the records ------------------------------------------------------------------------------


@dataclass
class Unit:
    """One record of a format (for OTel: one conversation, a list of spans)."""

    fmt: str
    value: Any
    #: tau2: the results document the simulation came from (without its simulations)
    doc: dict[str, Any] | None = None
    #: from a clean import: (messages, tool calls)
    baseline: tuple[int, int] | None = None


def _lines(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _genai(m: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI chat message as an OTel GenAI message."""
    parts: list[dict[str, Any]] = []
    if m["role"] == "tool":
        parts.append(
            {
                "type": "tool_call_response",
                "id": m["tool_call_id"],
                "response": m.get("content") or "",
            }
        )
        return {"role": "tool", "parts": parts}
    if isinstance(m.get("content"), str) and m["content"]:
        parts.append({"type": "text", "content": m["content"]})
    for call in m.get("tool_calls") or []:
        fn = call["function"]
        parts.append(
            {
                "type": "tool_call",
                "id": call["id"],
                "name": fn["name"],
                "arguments": fn.get("arguments"),
            }
        )
    return {"role": m["role"], "parts": parts}


def _anthropic(i: int, traj: list[dict[str, Any]]) -> dict[str, Any]:
    """An OpenAI chat trajectory as an Anthropic Messages conversation."""
    system = "\n".join(m["content"] for m in traj if m["role"] == "system")
    messages: list[dict[str, Any]] = []
    for m in traj:
        if m["role"] == "user":
            messages.append({"role": "user", "content": m["content"] or ""})
        elif m["role"] == "assistant":
            blocks: list[dict[str, Any]] = []
            if m.get("content"):
                blocks.append({"type": "text", "text": m["content"]})
            for call in m.get("tool_calls") or []:
                try:
                    args = json.loads(call["function"]["arguments"])
                except ValueError:
                    args = {"raw": call["function"]["arguments"]}
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call["id"],
                        "name": call["function"]["name"],
                        "input": args,
                    }
                )
            messages.append({"role": "assistant", "content": blocks})
        elif m["role"] == "tool":
            result = {
                "type": "tool_result",
                "tool_use_id": m["tool_call_id"],
                "content": m.get("content") or "",
            }
            messages.append({"role": "user", "content": [result]})
    usage = {"input_tokens": 100 + i, "output_tokens": 7}
    for m in messages:
        if m["role"] == "assistant":
            m["usage"] = usage
    return {"id": f"anthropic-{i}", "system": system, "messages": messages}


def _otel(i: int, traj: list[dict[str, Any]], calls: int = 5) -> list[dict[str, Any]]:
    """An OpenAI chat trajectory as OTel GenAI spans: one per assistant turn (the last few)."""
    msgs = [_genai(m) for m in traj]
    turns = [k for k, m in enumerate(traj) if m["role"] == "assistant"][-calls:]
    spans = []
    for n, k in enumerate(turns):
        spans.append(
            {
                "name": "chat gpt-4o",
                "context": {"trace_id": f"trace-{i}", "span_id": f"span-{i}-{n}"},
                "start_time": str(1_700_000_000 + i * 100 + n),
                "end_time": str(1_700_000_000 + i * 100 + n + 1),
                "attributes": {
                    "gen_ai.conversation.id": f"conv-{i}",
                    "gen_ai.request.model": "gpt-4o",
                    "gen_ai.usage.input_tokens": 1000 + k,
                    "gen_ai.usage.output_tokens": 20,
                    "gen_ai.input.messages": msgs[:k],
                    "gen_ai.output.messages": [msgs[k]],
                },
            }
        )
    return spans


def load_units(corpora: Path | None, limit: int) -> dict[str, list[Unit]]:
    units: dict[str, list[Unit]] = defaultdict(list)
    trajs: list[list[dict[str, Any]]] = []
    # fixtures
    for f in sorted((FIXTURES / "openai_chat").iterdir()):
        value = json.loads(f.read_text()) if f.suffix == ".json" else None
        records = (
            _lines(f) if f.suffix == ".jsonl" else value if isinstance(value, list) else [value]
        )
        if isinstance(value, list) and value and "role" in value[0]:
            records = [{"id": f.stem, "messages": value}]
        for r in records:
            units["openai-chat"].append(
                Unit("openai-chat", r if isinstance(r, dict) else {"messages": r})
            )
    for f in sorted((FIXTURES / "anthropic").iterdir()):
        value = _lines(f) if f.suffix == ".jsonl" else [json.loads(f.read_text())]
        if f.name == "messages.json":
            value = [{"id": "bare", "messages": value[0]}]
        units["anthropic-messages"] += [
            Unit("anthropic-messages", v) for v in value if isinstance(v, dict)
        ]
    tau = json.loads((FIXTURES / "tau-bench" / "gpt-test-airline.json").read_text())
    units["tau-bench"] += [Unit("tau-bench", r) for r in tau]
    doc = json.loads((FIXTURES / "tau2-bench" / "results_small.json").read_text())
    sims = doc.pop("simulations")
    units["tau2-bench"] += [Unit("tau2-bench", s, doc) for s in sims]
    units["swe-agent"] += [
        Unit("swe-agent", json.loads(f.read_text()))
        for f in sorted((FIXTURES / "swe-agent").glob("*.traj"))
    ]
    units["openhands"] += [
        Unit("openhands", r) for r in _lines(FIXTURES / "openhands" / "output_small.jsonl")
    ]
    conversations: dict[str, list[Any]] = defaultdict(list)
    for span in _lines(FIXTURES / "otel" / "flat_spans.jsonl"):
        attrs = span.get("attributes") or {}
        if "gen_ai.input.messages" in attrs or "gen_ai.output.messages" in attrs:
            key = attrs.get("gen_ai.conversation.id") or span.get("context", {}).get("trace_id")
            conversations[str(key)].append(span)
    units["otel-genai"] += [
        Unit("otel-genai", spans)
        for spans in conversations.values()
        if all("gen_ai.conversation.id" in s["attributes"] for s in spans)
    ]
    log = json.loads((FIXTURES / "inspect-ai" / "log.json").read_text())
    units["inspect-ai"] += [Unit("inspect-ai", s, log) for s in log.pop("samples")]
    trajs += [r["traj"] for r in tau if isinstance(r, dict)]
    # the public corpora
    if corpora is not None and corpora.exists():
        for f in sorted((corpora / "tau-bench").rglob("*.json")):
            results = json.loads(f.read_text())
            units["tau-bench"] += [Unit("tau-bench", r) for r in results[:limit]]
            trajs += [r["traj"] for r in results]
        for f in sorted((corpora / "tau2-bench").rglob("*.json")):
            doc = json.loads(f.read_text())
            sims = doc.pop("simulations")
            units["tau2-bench"] += [Unit("tau2-bench", s, doc) for s in sims[:limit]]
        for f in sorted((corpora / "swe-agent").rglob("*.traj"))[:limit]:
            units["swe-agent"].append(Unit("swe-agent", json.loads(f.read_text())))
        for f in sorted((corpora / "openhands").rglob("*.jsonl")):
            units["openhands"] += [Unit("openhands", r) for r in _lines(f) if r.get("history")][
                :limit
            ]
        for f in sorted((corpora / "inspect-ai").rglob("*.json")):  # inspect: samples of logs
            log = json.loads(f.read_text())
            units["inspect-ai"] += [Unit("inspect-ai", s, log) for s in log.pop("samples")[:limit]]
        for f in sorted((corpora / "inspect-ai").rglob("*.eval")):
            with zipfile.ZipFile(f) as z:
                head = json.loads(z.read("header.json"))
                names = [n for n in z.namelist() if n.startswith("samples/")][:limit]
                units["inspect-ai"] += [
                    Unit("inspect-ai", json.loads(z.read(n)), head) for n in names
                ]
    units["claude-code"] += _claude_units(corpora, limit)
    units["codex-cli"] += _codex_units(corpora, limit)
    units["openai-responses"] += _responses_units(trajs, limit)
    for i, traj in enumerate(trajs[:limit]):
        units["openai-chat"].append(Unit("openai-chat", {"id": f"traj-{i}", "messages": traj}))
        units["anthropic-messages"].append(Unit("anthropic-messages", _anthropic(i, traj)))
        if any(m["role"] == "assistant" for m in traj):
            units["otel-genai"].append(Unit("otel-genai", _otel(i, traj)))
    return units


# --- files --------------------------------------------------------------------------------------


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def render(fmt: str, texts: list[bytes], doc: dict[str, Any] | None, cut: bool = False) -> bytes:
    """A file of format ``fmt`` holding the records' texts (``cut``: the last one is cut)."""
    if fmt == "swe-agent":
        return texts[0]
    if fmt in ("openai-chat", "anthropic-messages", "openhands", "otel-genai", "claude-code",
               "codex-cli", "openai-responses"):  # fmt: skip
        return b"\n".join(texts) + (b"" if cut else b"\n")
    if fmt == "tau-bench":
        return b"[\n" + b",\n".join(texts) + (b"" if cut else b"\n]\n")
    key = "samples" if fmt == "inspect-ai" else "simulations"
    head = dumps(doc or {})[:-1].encode()  # tau2, inspect: the document, its sessions last
    head += f', "{key}": ['.encode() if doc else f'"{key}": ['.encode()
    return head + b",\n".join(texts) + (b"" if cut else b"]}\n")


SUFFIX = {"swe-agent": ".traj", "tau-bench": ".json", "tau2-bench": ".json", "inspect-ai": ".json"}


@dataclass
class Case:
    """One file of the campaign and what its mutated record must become."""

    fmt: str
    kind: str
    unit: Unit
    companion: Unit | None
    texts: list[bytes]  # the records' texts, in file order
    mutated: int  # index of the mutated record (OTel: of its first span)
    expect: str
    flags: frozenset[str] = frozenset()
    cut: bool = False
    encoding: str | None = None
    spans: tuple[int, int] = (0, 0)  # OTel: the mutated conversation's span indexes [a, b)
    conversation: str = ""  # OTel: the mutated conversation's id in this file
    note: str = ""


def _messages(fmt: str, value: Any) -> list[Any] | None:
    """The record's message (event) list, for the formats that have one."""
    key = {
        "openai-chat": "messages",
        "anthropic-messages": "messages",
        "tau-bench": "traj",
        "tau2-bench": "messages",
        "swe-agent": "history",
        "openhands": "history",
        "inspect-ai": "messages",
        "openai-responses": "input",
    }.get(fmt)
    if key is None or not isinstance(value, dict):
        return None
    if fmt == "anthropic-messages" and "messages" not in value:
        value = value.get("request") if isinstance(value.get("request"), dict) else {}
    found = value.get(key)
    return found if isinstance(found, list) else None


def _body(fmt: str, value: dict[str, Any]) -> dict[str, Any]:
    """The object holding the message list (an Anthropic log keeps it under ``request``)."""
    if (
        fmt == "anthropic-messages"
        and "messages" not in value
        and isinstance(value.get("request"), dict)
    ):
        return value["request"]
    return value


def _positions(value: Any, out: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    if isinstance(value, dict):
        for k in list(value):
            out.append((value, k))
            _positions(value[k], out)
    elif isinstance(value, list):
        for i in range(len(value)):
            out.append((value, i))
            _positions(value[i], out)
    return out


def _salt(value: Any, marker: str) -> Any:
    if isinstance(value, dict):
        return {k: _salt(v, marker) for k, v in value.items()}
    if isinstance(value, list):
        return [_salt(v, marker) for v in value]
    if isinstance(value, str) and " " in value and not value.lstrip().startswith(("[", "{")):
        return f"{value} {marker}"
    return value


def _calls(fmt: str, value: Any) -> list[tuple[dict[str, Any], str]]:
    """(object holding a tool-call id, its key) for every call of the record's messages."""
    out = []
    messages = _messages(fmt, value)
    for container, key in _positions(messages if messages is not None else value, []):
        item = container[key]
        if not isinstance(item, dict):
            continue
        openai = fmt in ("openai-chat", "tau-bench", "swe-agent")
        if (
            (openai and isinstance(item.get("function"), dict) and "id" in item)
            or (fmt in ("anthropic-messages", "claude-code") and item.get("type") == "tool_use")
            or (fmt == "tau2-bench" and {"arguments", "id", "name"} <= set(item))
            or (fmt == "inspect-ai" and {"arguments", "function", "id"} <= set(item))
        ):
            out.append((item, "id"))
        elif fmt in _ITEM_FORMATS and item.get("type") in _CALL_ITEMS and "call_id" in item:
            out.append((item, "call_id"))
        elif fmt == "openhands" and isinstance(item.get("tool_call"), dict):
            out.append((item["tool_call"], "id"))
        elif fmt == "otel-genai" and item.get("type") == "tool_call":
            out.append((item, "id"))
    return out


def _results(fmt: str, value: Any, call_id: str) -> list[tuple[dict[str, Any], str]]:
    out = []
    messages = _messages(fmt, value)
    for container, key in _positions(messages if messages is not None else value, []):
        item = container[key]
        if not isinstance(item, dict):
            continue
        for k in ("tool_call_id", "tool_use_id"):
            if item.get(k) == call_id:
                out.append((item, k))
        if fmt == "tau2-bench" and item.get("role") == "tool" and item.get("id") == call_id:
            out.append((item, "id"))
        if (
            fmt == "otel-genai"
            and item.get("type") == "tool_call_response"
            and item.get("id") == call_id
        ):
            out.append((item, "id"))
        if fmt == "swe-agent" and item.get("tool_call_ids") == [call_id]:
            out.append((item, "tool_call_ids"))
        kind = item.get("type")
        output = isinstance(kind, str) and kind.endswith("_output")
        if fmt in _ITEM_FORMATS and output and item.get("call_id") == call_id:
            out.append((item, "call_id"))
    return out


# --- mutations ------------------------------------------------------------------------------------


Mutation = tuple[Any, str, frozenset[str], str]  # value, expectation, flags, note


def _assistant(fmt: str, messages: list[Any]) -> dict[str, Any] | None:
    found = [m for m in messages if isinstance(m, dict) and m.get("role") == "assistant"]
    return found[0] if found else None


def _inspect_requests(value: Any) -> list[dict[str, Any]]:
    """inspect: the model requests (events) that produced one of the sample's messages."""
    messages = value.get("messages") or []
    ids = {m.get("id") for m in messages if isinstance(m, dict) and m.get("role") == "assistant"}
    found = []
    for e in value.get("events") or []:
        output = e.get("output") if isinstance(e, dict) and e.get("event") == "model" else None
        choices = output.get("choices") if isinstance(output, dict) else None
        if choices and isinstance(choices[0], dict):
            message = choices[0].get("message")
            if isinstance(message, dict) and message.get("id") in ids - {None}:
                found.append(e)
    return found


def _otel_span(value: list[Any], rng: random.Random) -> dict[str, Any]:
    return rng.choice(value)


def mutate(fmt: str, kind: str, value: Any, rng: random.Random) -> Mutation:
    """The mutated record (parsed; placeholders for what JSON cannot say), and what to expect."""
    value = copy.deepcopy(value)
    if fmt == "claude-code":
        return _claude_mutate(kind, value, rng)
    if fmt == "codex-cli":
        return _codex_mutate(kind, value, rng)
    if fmt == "openai-responses" and kind in _RESPONSES_KINDS:
        return _responses_mutate(kind, value, rng)
    messages = _messages(fmt, value)
    if kind == "deep_nesting":
        target = _otel_span(value, rng) if fmt == "otel-genai" else value
        container, key = rng.choice(_positions(target, []))
        container[key] = DEEP
        return value, "reject", frozenset(), f"{key}"
    if kind == "huge_int":
        big = rng.choice([2**63, 2**64 + 7, 2**100, 10**30])
        if fmt == "otel-genai":
            span = _otel_span(value, rng)
            span["attributes"][
                rng.choice(["gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"])
            ] = big
            return value, "reject_or_flag", frozenset({"usage_out_of_range"}), "usage"
        requests = _inspect_requests(value) if fmt == "inspect-ai" else []
        if requests:  # inspect: usage is read from the model request that made a message
            output = rng.choice(requests)["output"]
            output["usage"] = {**(output.get("usage") or {}), "input_tokens": big}
            return value, "reject_or_flag", frozenset({"usage_out_of_range"}), "usage"
        if fmt == "openhands":
            actions = [
                e
                for e in value["history"]
                if e.get("kind") == "ActionEvent" and isinstance(e.get("llm_response_id"), str)
            ]
            if actions:
                rid = rng.choice(actions)["llm_response_id"]
                value["metrics"] = {
                    "token_usages": [
                        {"response_id": rid, "prompt_tokens": big, "completion_tokens": 1}
                    ]
                }
                return value, "reject_or_flag", frozenset({"usage_out_of_range"}), "usage"
        elif messages is not None and fmt not in ("swe-agent", "inspect-ai"):
            m = _assistant(fmt, messages)
            if m is not None:
                m["usage"] = (
                    {"input_tokens": big, "output_tokens": 1}
                    if fmt == "anthropic-messages"
                    else {"prompt_tokens": big, "completion_tokens": 1}
                )
                return value, "reject_or_flag", frozenset({"usage_out_of_range"}), "usage"
        value["task_id" if fmt == "tau-bench" else "id"] = big  # an id: anything but a crash
        return value, "any", frozenset(), "id"
    if kind == "nan_timestamp":
        if fmt == "otel-genai":
            span = _otel_span(value, rng)
            span[rng.choice(["start_time", "end_time", "startTimeUnixNano"])] = NUM
            return value, "reject_or_flag", frozenset({"timestamp_invalid"}), "span time"
        requests = _inspect_requests(value) if fmt == "inspect-ai" else []
        if requests:  # inspect: a message's time is its model request's
            rng.choice(requests)["completed"] = NUM
            return value, "reject_or_flag", frozenset({"timestamp_invalid"}), "request time"
        if fmt in ("swe-agent", "inspect-ai") or not messages:
            value["timestamp"] = NUM
            return value, "any", frozenset(), "not read"
        target = rng.choice(messages)
        if fmt == "openhands" and target.get("kind") not in _MESSAGE_EVENTS:
            target["timestamp"] = NUM  # an event that makes no message: its time is not read
            return value, "any", frozenset(), "internal event time"
        if isinstance(target, dict):
            target["timestamp"] = NUM
            return value, "reject_or_flag", frozenset({"timestamp_invalid"}), "message time"
        return value, "any", frozenset(), "not a message"
    if kind == "wrong_type":
        return _wrong_type(fmt, value, messages, rng)
    if kind == "missing_key":
        return _missing_key(fmt, value, messages, rng)
    if kind == "empty_lists":
        if fmt == "otel-genai":
            for span in value:
                span["attributes"]["gen_ai.input.messages"] = []
                span["attributes"]["gen_ai.output.messages"] = []
            return value, "reject", frozenset(), "all spans"
        key = {"tau-bench": "traj", "swe-agent": "history", "openhands": "history"}.get(
            fmt, "messages"
        )
        _body(fmt, value)[key] = []
        return value, "reject", frozenset(), key
    if kind == "unknown_kinds":
        return _unknown(fmt, value, messages, rng)
    if kind == "detection_trick":
        return _salt(value, rng.choice(MARKERS)), "same", frozenset(), "markers in text"
    if kind == "format_confusion":
        return _confuse(fmt, value, rng), "ask_or_same", frozenset(), "two shapes"
    if kind == "huge_field":
        text = "x" * (MAX_MESSAGE_BYTES * 3 // 2)
        if fmt == "otel-genai":
            span = value[-1]
            span["attributes"]["gen_ai.output.messages"] = [
                {"role": "assistant", "parts": [{"type": "text", "content": text}]}
            ]
        elif fmt == "openhands":
            value["history"].append(
                {
                    "kind": "MessageEvent",
                    "source": "agent",
                    "llm_message": {
                        "role": "assistant",
                        "content": [{"type": "text", "text": text}],
                    },
                }
            )
        elif fmt == "anthropic-messages":
            _body(fmt, value)["messages"].append({"role": "assistant", "content": text})
        else:
            assert messages is not None
            messages.append({"role": "assistant", "content": text})
        return value, "reject", frozenset(), "1.5 MB"
    raise ValueError(kind)


def _wrong_type(fmt: str, value: Any, messages: list[Any] | None, rng: random.Random) -> Mutation:
    bad_scalar: Any = rng.choice([42, [], {}, None, True, 1.5])
    bad_list = rng.choice(["x", 42, {"a": 1}, None, True])
    if fmt == "otel-genai":
        span = _otel_span(value, rng)
        attrs = span["attributes"]
        choice = rng.randrange(3)
        if choice == 0:
            attrs["gen_ai.input.messages"] = rng.choice([42, {"a": 1}, True, 1.5])
            return value, "reject", frozenset(), "input messages"
        msgs = attrs["gen_ai.output.messages"]
        if choice == 1 and msgs:
            msgs[0]["role"] = rng.choice([42, [], {}, None, True])
            return value, "reject", frozenset(), "role"
        attrs["gen_ai.output.messages"] = [
            {"role": "assistant", "parts": bad_list if bad_list is not None else 5}
        ]
        return value, "reject", frozenset(), "parts"
    choice = rng.randrange(3)
    if choice == 0 or not messages:
        key = {"tau-bench": "traj", "swe-agent": "history", "openhands": "history"}.get(
            fmt, "messages"
        )
        _body(fmt, value)[key] = bad_list
        return value, "reject", frozenset(), key
    m = rng.choice([m for m in messages if isinstance(m, dict)])
    if fmt == "openhands":
        if choice == 1:
            m["kind"] = bad_scalar if bad_scalar is not None else 5
            return value, "reject", frozenset(), "kind"
        kinds = {"MessageEvent": "llm_message", "ObservationEvent": "observation"}
        events = [e for e in messages if isinstance(e, dict) and e.get("kind") in kinds]
        if events:
            e = rng.choice(events)
            e[kinds[e["kind"]]] = rng.choice(["x", 42, [], True])
            return value, "reject", frozenset(), kinds[e["kind"]]
        m["kind"] = 5
        return value, "reject", frozenset(), "kind"
    m["role"] = bad_scalar
    return value, "reject", frozenset(), "role"


def _missing_key(fmt: str, value: Any, messages: list[Any] | None, rng: random.Random) -> Mutation:
    if fmt == "otel-genai":
        span = _otel_span(value, rng)
        msgs = (
            span["attributes"]["gen_ai.input.messages"]
            or span["attributes"]["gen_ai.output.messages"]
        )
        if msgs:
            del rng.choice(msgs)["role"]
            return value, "reject", frozenset(), "role"
        del span["attributes"]["gen_ai.output.messages"]
        return value, "any", frozenset(), "output"
    calls = _calls(fmt, value)
    choice = rng.randrange(3)
    if choice == 0 or not messages:
        key = {"tau-bench": "traj", "swe-agent": "history", "openhands": "history"}.get(
            fmt, "messages"
        )
        del _body(fmt, value)[key]
        return value, "reject", frozenset(), key
    if choice == 1 and calls:
        holder, key = rng.choice(calls)
        del holder[key]
        return value, "reject", frozenset(), "tool call id"
    if fmt == "openhands":
        m = rng.choice([m for m in messages if isinstance(m, dict)])
        del m["kind"]
        return value, "reject", frozenset(), "kind"
    m = rng.choice([m for m in messages if isinstance(m, dict)])
    del m["role"]
    return value, "reject", frozenset(), "role"


def _unknown(fmt: str, value: Any, messages: list[Any] | None, rng: random.Random) -> Mutation:
    weird = rng.choice(["hologram", "QuantumBlock", "x-custom", "audio_transcript"])
    if fmt == "openhands":
        assert messages is not None
        messages.insert(
            rng.randrange(len(messages) + 1),
            {"kind": f"{weird.title()}Event", "id": "zz", "payload": {"a": 1}},
        )
        return value, "reject_or_flag", frozenset({"unknown_event_kind"}), "event kind"
    if fmt == "otel-genai":
        span = _otel_span(value, rng)
        span["attributes"]["gen_ai.output.messages"][0]["parts"].append(
            {"type": weird, "content": "?"}
        )
        return value, "reject_or_flag", frozenset({"unknown_part_type"}), "part type"
    if fmt in ("openai-chat", "anthropic-messages", "inspect-ai", "openai-responses") and messages:
        m = rng.choice(
            [m for m in messages if isinstance(m, dict) and m.get("role") in ("user", "assistant")]
            or messages
        )
        content = m.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}] if content else []
        elif not isinstance(content, list):
            content = []
        m["content"] = [*content, {"type": weird, "data": "?"}]
        return value, "reject_or_flag", frozenset({"unknown_part_type"}), "part type"
    assert messages is not None
    rng.choice([m for m in messages if isinstance(m, dict)])["role"] = weird
    return value, "reject", frozenset(), "role"


def _confuse(fmt: str, value: Any, rng: random.Random) -> Any:
    """``value`` carrying, besides its own, the structure of another format."""
    chat = [
        {"role": "user", "content": "hello there"},
        {"role": "assistant", "content": "hi, how can I help?"},
    ]
    if fmt == "otel-genai":
        span = value[0]
        span["messages"] = chat
        span["traj"], span["task_id"] = chat, 1
        return value
    extra: dict[str, Any] = rng.choice(
        [
            {"messages": chat},
            {"traj": chat, "task_id": 9},
            {
                "history": [
                    {
                        "kind": "MessageEvent",
                        "source": "user",
                        "llm_message": {"role": "user", "content": "hi there"},
                    }
                ],
                "instance_id": "x",
            },
            {
                "attributes": {"gen_ai.input.messages": [], "gen_ai.output.messages": []},
                "context": {"trace_id": "t"},
            },
        ]
    )
    extra = {k: v for k, v in extra.items() if k not in value}
    value.update(extra)
    return value


def _text(value: Any, rng: random.Random) -> bytes:
    text = json.dumps(value, ensure_ascii=False)
    if DEEP in text:
        depth = rng.randint(1000, 5000)
        opener, closer = rng.choice([("[", "]"), ('{"a": ', "}")])
        text = text.replace(f'"{DEEP}"', opener * depth + "1" + closer * depth, 1)
    if NUM in text:
        text = text.replace(
            f'"{NUM}"', rng.choice(["NaN", "Infinity", "-Infinity", "1e30", "-5", '"1e30"'])
        )
    return text.encode("utf-8")


def _bad_utf8(data: bytes, rng: random.Random) -> bytes:
    """``data`` with invalid UTF-8 inside one of its string values."""
    starts = [i + 4 for i in range(len(data) - 4) if data[i : i + 4] == b'": "']
    at = rng.choice(starts) if starts else 1
    return (
        data[:at]
        + rng.choice([b"\xff", b"\xc3(", b"\xed\xa0\x80", b"\xfe\xfe", b"\x80"])
        + data[at:]
    )


def build_case(fmt: str, kind: str, unit: Unit, companion: Unit, rng: random.Random) -> Case:
    clean = [_text(_own(fmt, companion.value), rng)] if fmt != "otel-genai" else []
    lone = kind == "format_confusion" or fmt == "swe-agent"
    if kind in ("truncation", "bad_utf8", "file_encoding"):
        value, expect, note = copy.deepcopy(unit.value), "reject", ""
        flags: frozenset[str] = frozenset()
    elif kind == "duplicated_ids":
        value, expect, flags, note, companion_value = _duplicate(fmt, unit, companion, rng)
        if fmt != "otel-genai":
            clean = [_text(_own(fmt, companion_value), rng)]
    else:
        value, expect, flags, note = mutate(fmt, kind, unit.value, rng)
    if fmt == "claude-code":
        case = _claude_case(kind, unit, companion, value, expect, flags, note, rng)
    elif fmt == "codex-cli":  # a rollout is its file: one line a record, no companion
        texts = [_text(r, rng) for r in value]
        case = Case(fmt, kind, unit, None, texts, 0, expect, flags, note=note)
        case.spans = (0, len(texts))
    elif fmt == "otel-genai":
        # conversation ids are global (no file digest in the key): one per file of the batch
        tag = f"#{next(_SERIAL)}"
        if isinstance(value, list) and value and isinstance(value[0], dict):
            value = _rename(value, _conv(unit.value) + tag, keep_context=True)
        spans = [_text(s, rng) for s in value]
        others = [_text(s, rng) for s in _rename(companion.value, _conv(companion.value) + tag)]
        others = others if not lone else []
        if kind == "duplicated_ids":
            others = [_text(s, rng) for s in _rename(companion.value, _conv(unit.value) + tag)]
        if kind == "truncation":
            texts = others + spans
            a = len(others)
        else:
            texts = spans + others
            a = 0
        case = Case(
            fmt, kind, unit, None if lone else companion, texts, a, expect, flags, note=note
        )
        case.spans = (a, a + len(spans))
        case.conversation = _conv(unit.value) + tag
        if kind == "duplicated_ids":
            case.companion = companion
    else:
        text = _text(value, rng)
        if lone:
            texts, at = [text], 0
        elif kind == "truncation":
            texts, at = [*clean, text], len(clean)
        else:
            at = rng.randrange(2)
            texts = [text, *clean] if at == 0 else [*clean, text]
        case = Case(
            fmt, kind, unit, None if lone else companion, texts, at, expect, flags, note=note
        )
    if kind == "truncation":
        last = case.texts[-1]
        case.texts[-1] = last[: rng.randrange(1, len(last))]
        case.cut = True
        case.note = "cut inside the last record"
    elif kind == "bad_utf8":
        target = case.mutated
        if fmt in ("otel-genai", "claude-code", "codex-cli"):
            target = rng.randrange(*case.spans)
            case.mutated = target
            case.spans = (target, target + 1)
        case.texts[target] = _bad_utf8(case.texts[target], rng)
        case.note = "bad bytes in a string"
    elif kind == "file_encoding":
        case.encoding = rng.choice(["utf-16", "utf-16-le", "utf-8-sig"])
        case.expect, case.note = "same", case.encoding
    return case


def _conv(spans: list[Any]) -> str:
    return str(spans[0]["attributes"].get("gen_ai.conversation.id"))


_SERIAL = itertools.count()


def _rename(spans: list[Any], conversation: str, keep_context: bool = False) -> list[Any]:
    """The spans under another conversation id (and, unless kept, without their trace)."""
    spans = copy.deepcopy(spans)
    for s in spans:
        if isinstance(s, dict) and isinstance(s.get("attributes"), dict):
            s["attributes"]["gen_ai.conversation.id"] = conversation
            if not keep_context:
                s.pop("context", None)
    return spans


def _duplicate(
    fmt: str, unit: Unit, companion: Unit, rng: random.Random
) -> tuple[Any, str, frozenset[str], str, Any]:
    """A reused tool-call id, a session id shared with the companion, or (OTel) a
    conversation id shared by two conversations."""
    value = copy.deepcopy(unit.value)
    other = copy.deepcopy(companion.value)
    if fmt == "otel-genai":
        return value, "split_or_reject", frozenset({"conversation_split"}), "conversation id", other
    calls = _calls(fmt, value)
    if len(calls) >= 2 and rng.random() < 0.6:
        (first, k1), (second, k2) = calls[0], calls[rng.randrange(1, len(calls))]
        old = second[k2]
        for holder, key in _results(fmt, value, old):
            holder[key] = [first[k1]] if key == "tool_call_ids" else first[k1]
        second[k2] = first[k1]
        return value, "reject_or_flag", frozenset({"call_id_renamed"}), "tool-call id", other
    if fmt in ("swe-agent", "codex-cli"):
        return value, "any", frozenset(), "one session per file", other
    if fmt == "claude-code":  # a shared session id makes one session of both logs
        return value, "any", frozenset(), "session id", other
    for key in ("id", "session_id", "instance_id", "task_id"):
        if key in value:
            other[key] = value[key]
            if fmt == "tau-bench":
                other["trial"] = value.get("trial")
            return value, "both", frozenset(), f"session {key}", other
    value["id"] = other["id"] = "shared-id"
    return value, "both", frozenset(), "session id", other


# --- Claude Code: a unit is the log lines of one session ---------------------------------------

#: record fields that hold a Claude Code uuid (renamed together so two copies never meet)
_CC_LINKS = ("uuid", "parentUuid", "logicalParentUuid", "leafUuid", "messageId")


def _claude_units(corpora: Path | None, limit: int) -> list[Unit]:
    """Claude Code logs from the fixtures and (files up to 150 kB) the public corpus, each
    without its sub-agents' lines so that it makes one session; sub-agent files as they are."""
    files = sorted((FIXTURES / "claude-code").glob("*.jsonl"))
    if corpora is not None and (corpora / "claude-code").exists():
        public = sorted((corpora / "claude-code").rglob("*.jsonl"))
        files += [f for f in public if f.stat().st_size <= 150_000][:limit]
    units = []
    for f in files:
        records = _lines(f)
        main = [r for r in records if isinstance(r, dict) and not r.get("isSidechain")]
        if any(r.get("type") in ("user", "assistant") for r in main):
            records = main
        if records:
            units.append(Unit("claude-code", records))
    return units


def _claude_messages(records: list[Any]) -> list[dict[str, Any]]:
    """The message records a mutation may touch (a uuid's first line: repeats are skipped)."""
    seen: set[Any] = set()
    out = []
    for r in records:
        if not isinstance(r, dict) or r.get("type") not in ("user", "assistant"):
            continue
        if r.get("uuid") in seen or not isinstance(r.get("message"), dict):
            continue
        seen.add(r.get("uuid"))
        out.append(r)
    return out


def _claude_mutate(kind: str, records: list[Any], rng: random.Random) -> Mutation:
    msgs = _claude_messages(records)
    if kind == "deep_nesting":
        container, key = rng.choice(_positions(records, []))
        container[key] = DEEP
        return records, "reject", frozenset(), f"{key}"
    if kind == "huge_int":
        assistants = [r for r in msgs if r["type"] == "assistant"]
        if not assistants:
            rng.choice(msgs)["costUSD"] = rng.choice([2**63, 10**30])
            return records, "any", frozenset(), "cost"
        mid = rng.choice(assistants)["message"].get("id")  # every record of the response
        for r in assistants:
            if r["message"].get("id") == mid:
                r["message"]["usage"] = {
                    "input_tokens": rng.choice([2**63, 2**100]),
                    "output_tokens": 1,
                }
        return records, "reject_or_flag", frozenset({"usage_out_of_range"}), "usage"
    if kind == "nan_timestamp":
        rng.choice(msgs)["timestamp"] = NUM
        return records, "reject_or_flag", frozenset({"timestamp_invalid"}), "message time"
    if kind in ("wrong_type", "missing_key"):
        r = rng.choice(msgs)
        message = r["message"]
        calls = [
            b
            for b in message.get("content") or []
            if isinstance(b, dict) and b.get("type") == "tool_use"
        ]
        choice = rng.randrange(5 if calls else 4)
        if kind == "wrong_type":
            if choice == 0:
                message["content"] = rng.choice([42, {"a": 1}, None, True, 1.5])
            elif choice == 1:
                message["role"] = rng.choice([42, [], {}, None, True, 1.5])
            elif choice == 2:
                r["message"] = rng.choice(["x", 42, [], True])
            elif choice == 3:
                r["uuid"] = rng.choice([42, [], {}, True, None])
            else:
                calls[0]["id"] = rng.choice([42, [], None, True])
            return (
                records,
                "reject",
                frozenset(),
                ["content", "role", "message", "uuid", "id"][choice],
            )
        if choice == 0:
            del message["content"]
        elif choice == 1:
            del message["role"]
        elif choice == 2:
            del r["message"]
        elif choice == 3:
            del r[rng.choice(["uuid", "type"])]
        else:
            del calls[0]["id"]
        return (
            records,
            "reject",
            frozenset(),
            ["content", "role", "message", "uuid/type", "id"][choice],
        )
    if kind == "empty_lists":
        for r in msgs:
            r["message"]["content"] = []
        for r in records:
            if isinstance(r, dict) and r.get("type") == "system" and "content" in r:
                r["content"] = ""
        return records, "reject", frozenset(), "every message's content"
    if kind == "unknown_kinds":
        message = rng.choice(msgs)["message"]
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}] if content else []
        weird = rng.choice(["hologram", "QuantumBlock", "x-custom", "audio_transcript"])
        message["content"] = [*content, {"type": weird, "data": "?"}]
        return records, "reject_or_flag", frozenset({"unknown_part_type"}), "block type"
    if kind == "detection_trick":
        return _salt(records, rng.choice(MARKERS)), "same", frozenset(), "markers in text"
    if kind == "format_confusion":
        _confuse(kind, records[0], rng)
        return records, "ask_or_same", frozenset(), "two shapes"
    if kind == "huge_field":
        last = msgs[-1]
        huge = copy.deepcopy(last)
        huge.update(type="assistant", uuid=f"{last['uuid']}-huge", parentUuid=last["uuid"])
        text = "x" * (MAX_MESSAGE_BYTES * 3 // 2)
        huge["message"] = {"id": "msg_huge", "role": "assistant", "model": "m",
                           "content": [{"type": "text", "text": text}]}  # fmt: skip
        records.append(huge)
        return records, "reject", frozenset(), "1.5 MB"
    raise ValueError(kind)


def _claude_tag(
    records: list[Any], tag: str, links: bool = False, sid: str | None = None
) -> list[Any]:
    """The records under session ids made unique to one file (``sid``: all under that one);
    ``links``: their uuids too, so the same log twice in one file stays two."""
    out = copy.deepcopy(records)
    for r in out:
        if not isinstance(r, dict):
            continue
        if isinstance(r.get("sessionId"), str) and r["sessionId"] not in (DEEP, NUM):
            r["sessionId"] = sid if sid is not None else r["sessionId"] + tag
        for k in _CC_LINKS if links else ():
            if isinstance(r.get(k), str) and r[k] not in (DEEP, NUM):
                r[k] += tag
    return out


def _claude_sids(records: list[Any]) -> list[str]:
    return sorted(
        {
            r["sessionId"]
            for r in records
            if isinstance(r, dict) and isinstance(r.get("sessionId"), str)
        }
    )


def _claude_case(
    kind: str,
    unit: Unit,
    companion: Unit,
    value: Any,
    expect: str,
    flags: frozenset[str],
    note: str,
    rng: random.Random,
) -> Case:
    """A file holding the mutated session and (unless alone) a renamed clean companion."""
    serial = next(_SERIAL)
    lone = kind == "format_confusion"
    value = _claude_tag(value, f"#{serial}")
    sids = _claude_sids(value)
    newest = next(
        (
            r["sessionId"]
            for r in reversed(value)
            if isinstance(r, dict) and r.get("sessionId") in sids
        ),
        None,
    )
    shared = note == "session id" and newest is not None  # one session id: one session
    other = _claude_tag(companion.value, f"~c{serial}", links=True, sid=newest if shared else None)
    spans = [_text(r, rng) for r in value]
    others = [] if lone else [_text(r, rng) for r in other]
    a = len(others) if kind == "truncation" else 0
    texts = others + spans if kind == "truncation" else spans + others
    case = Case(
        "claude-code", kind, unit, None if lone else companion, texts, a, expect, flags, note=note
    )
    case.spans = (a, a + len(spans))
    case.conversation = json.dumps(sids)
    return case


# --- Codex CLI (a unit is the lines of one rollout) and Responses calls ---------------------------

#: formats made of Responses API items
_ITEM_FORMATS = ("codex-cli", "openai-responses")
_CALL_ITEMS = ("function_call", "custom_tool_call")
#: kinds whose generic mutation does not reach what a logged Responses call reads
_RESPONSES_KINDS = ("huge_int", "nan_timestamp", "wrong_type", "missing_key", "empty_lists")


def _own(fmt: str, value: Any) -> Any:
    """The companion record as its own conversation: a logged Responses call's session id
    gathers calls, so the companion (maybe the same unit) gets one of its own."""
    if fmt == "openai-responses" and isinstance(value, dict):
        return {**value, "session_id": f"{value.get('session_id')}~companion"}
    return value


def _codex_units(corpora: Path | None, limit: int) -> list[Unit]:
    """Codex rollouts: the fixtures and (files up to 150 kB) the public corpus."""
    files = sorted((FIXTURES / "codex-cli").glob("*.jsonl"))
    if corpora is not None and (corpora / "codex-cli").exists():
        public = sorted((corpora / "codex-cli").rglob("*.jsonl"))
        files += [f for f in public if f.stat().st_size <= 150_000][:limit]
    units = [Unit("codex-cli", _lines(f)) for f in files]
    return [u for u in units if _codex_items(u.value)]  # early rollouts write bare items


def _responses_units(trajs: list[list[dict[str, Any]]], limit: int) -> list[Unit]:
    """Logged Responses calls holding a whole conversation: the history as ``input``, the last
    answer as ``output``; from the fixtures and the tau-bench trajectories (as items)."""
    from ctxreplay.datasets.importers.openai_chat import messages_from_openai
    from ctxreplay.datasets.responses_format import to_responses_items

    units = []
    calls = _lines(FIXTURES / "openai-responses" / "calls.jsonl")
    stored = json.loads((FIXTURES / "openai-responses" / "conversation.json").read_text())
    units.append({**calls[-1], "session_id": "fixture-calls"})
    units.append({"id": "resp_stored", "session_id": "fixture-stored", "input": stored["items"]})
    for i, traj in enumerate(trajs[:limit]):
        last = max((k for k, m in enumerate(traj) if m["role"] == "assistant"), default=None)
        if last is None:
            continue
        history = to_responses_items(messages_from_openai(traj[:last], "$"))
        answer = to_responses_items(messages_from_openai(traj[last : last + 1], "$"))
        units.append(
            {
                "id": f"resp-{i}",
                "session_id": f"tau-{i}",
                "model": "gpt-4o",
                "created_at": 1_700_000_000 + i,
                "input": history,
                "output": answer,
                "usage": {"input_tokens": 1000 + i, "output_tokens": 20},
            }
        )
    return [Unit("openai-responses", u) for u in units]


def _codex_items(lines: list[Any]) -> list[dict[str, Any]]:
    """The Responses items of a rollout's lines (context items only)."""
    return [
        r["payload"]
        for r in lines
        if isinstance(r, dict)
        and r.get("type") == "response_item"
        and isinstance(r.get("payload"), dict)
        and r["payload"].get("type") != "ghost_snapshot"
    ]


def _codex_attached(lines: list[Any]) -> list[dict[str, Any]]:
    """The token counts that mark a request (a new total) and are followed by its items."""
    out, previous, pending = [], None, None
    for r in lines:
        p = r.get("payload") if isinstance(r, dict) else None
        if not isinstance(p, dict):
            continue
        if r.get("type") == "event_msg" and p.get("type") == "token_count":
            info = p.get("info")
            if isinstance(info, dict) and info.get("total_token_usage") != previous:
                previous, pending = info.get("total_token_usage"), info
        elif (
            r.get("type") == "response_item"
            and pending is not None
            and (p.get("type") in ("reasoning", *_CALL_ITEMS) or p.get("role") == "assistant")
        ):
            out.append(pending)
            pending = None
    return out


def _codex_mutate(kind: str, lines: list[Any], rng: random.Random) -> Mutation:
    items = _codex_items(lines)
    item_lines = [r for r in lines if isinstance(r, dict) and r.get("payload") in items]
    messages = [i for i in items if i.get("type") == "message"]
    if kind == "deep_nesting":
        container, key = rng.choice(_positions(lines, []))
        container[key] = DEEP
        return lines, "reject", frozenset(), f"{key}"
    if kind == "huge_int":
        attached = _codex_attached(lines)
        if not attached:
            lines[0]["payload"]["id"] = rng.choice([2**63, 10**30])
            return lines, "any", frozenset(), "id"
        info = rng.choice(attached)
        info["last_token_usage"] = {**info["last_token_usage"], "input_tokens": 2**64 + 7}
        return lines, "reject_or_flag", frozenset({"usage_out_of_range"}), "usage"
    if kind == "nan_timestamp":
        rng.choice(item_lines)["timestamp"] = NUM
        return lines, "reject_or_flag", frozenset({"timestamp_invalid"}), "item time"
    if kind in ("wrong_type", "missing_key"):
        line = rng.choice(item_lines)
        item = line["payload"]
        choice = rng.randrange(3)
        if kind == "wrong_type":
            if choice == 0:
                line["payload"] = rng.choice(["x", 42, [], True])
            elif choice == 1:
                line["type"] = rng.choice([42, [], {}, True])
            else:
                key = "role" if item.get("type") == "message" else "call_id"
                item[key if key in item else "type"] = rng.choice([42, [], {}, True, 1.5])
            return lines, "reject", frozenset(), ["payload", "type", "role/call_id"][choice]
        if choice == 0:
            del line["payload"]
        elif choice == 1:
            del line["type"]
        else:
            key = "role" if item.get("type") == "message" else "call_id"
            del item[key if key in item else "type"]
        return lines, "reject", frozenset(), ["payload", "type", "role/call_id"][choice]
    if kind == "empty_lists":  # no response item, no compaction: nothing but the prompt
        kept = [
            r
            for r in lines
            if isinstance(r, dict) and r.get("type") not in ("response_item", "compacted")
        ]
        return kept, "reject", frozenset(), "every response item"
    if kind == "unknown_kinds":
        m = rng.choice(messages)
        weird = rng.choice(["hologram", "QuantumBlock", "x-custom", "audio_transcript"])
        m["content"] = [*m["content"], {"type": weird, "data": "?"}]
        return lines, "reject_or_flag", frozenset({"unknown_part_type"}), "content part type"
    if kind == "detection_trick":
        return _salt(lines, rng.choice(MARKERS)), "same", frozenset(), "markers in text"
    if kind == "format_confusion":
        _confuse("codex-cli", lines[0], rng)
        return lines, "ask_or_same", frozenset(), "two shapes"
    if kind == "huge_field":
        text = "x" * (MAX_MESSAGE_BYTES * 3 // 2)
        item = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}  # fmt: skip
        lines.append(
            {"timestamp": "2025-01-01T00:00:00Z", "type": "response_item", "payload": item}
        )
        return lines, "reject", frozenset(), "1.5 MB"
    raise ValueError(kind)


def _responses_mutate(kind: str, call: dict[str, Any], rng: random.Random) -> Mutation:
    """What a logged call reads: its usage, its ``created_at``, its items' types and keys."""
    items = [i for i in [*call.get("input", []), *call.get("output", [])] if isinstance(i, dict)]
    if kind == "huge_int":
        if not call.get("output"):
            call["id"] = rng.choice([2**63, 10**30])
            return call, "any", frozenset(), "id"
        call["usage"] = {**call.get("usage", {}), "input_tokens": 2**64 + 7}
        return call, "reject_or_flag", frozenset({"usage_out_of_range"}), "usage"
    if kind == "nan_timestamp":
        call["created_at"] = NUM
        if not call.get("output"):
            return call, "any", frozenset(), "no output to time"
        return call, "reject_or_flag", frozenset({"timestamp_invalid"}), "created_at"
    if kind == "empty_lists":
        call["input"], call["output"] = [], []
        return call, "reject", frozenset(), "input and output"
    choice = rng.randrange(3)
    if choice == 0:
        if kind == "wrong_type":
            call["input"] = rng.choice([42, {"a": 1}, True, 1.5])
        else:
            call.pop("input")
            call.pop("output", None)
        return call, "reject", frozenset(), "input"
    item = rng.choice(items)
    if choice == 1 or ("role" not in item and "call_id" not in item):
        key = "type" if "type" in item else "role"
    else:
        key = "role" if "role" in item else "call_id"
    if kind == "wrong_type":
        item[key] = rng.choice([42, [], {}, True, 1.5])
    else:
        item.pop(key)
        if key == "type" and "role" in item:
            item.pop("role")  # an "easy" message has no type: without a role it is nothing
    return call, "reject", frozenset(), key


# --- running and judging --------------------------------------------------------------------------


@dataclass
class Cell:
    records: int = 0
    crashes: int = 0
    silent_losses: int = 0
    silent_accepts: int = 0
    rejected: int = 0
    flagged: int = 0
    accepted: int = 0
    asked: int = 0
    false_rejects: int = 0
    examples: list[str] = field(default_factory=list)

    def add(self, other: Cell) -> None:
        for name in (
            "records",
            "crashes",
            "silent_losses",
            "silent_accepts",
            "rejected",
            "flagged",
            "accepted",
            "asked",
            "false_rejects",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.examples += other.examples[: max(0, 3 - len(self.examples))]


def write_case(case: Case, path: Path, serial: int = 0) -> None:
    data = render(case.fmt, case.texts, case.unit.doc, case.cut)
    if not case.cut:  # whitespace after the data keeps two cases' files apart (else duplicates)
        data += b"\n" + f"{serial:b}".replace("0", " ").replace("1", "\t").encode()
    if case.encoding:
        data = data.decode("utf-8").encode(case.encoding)
    path.write_bytes(data)


def run_cell(fmt: str, kind: str, cases: list[Case], work: Path) -> Cell:
    cell = Cell()
    folder = work / f"{fmt}.{kind}"
    folder.mkdir(parents=True)
    paths: dict[str, Case] = {}
    for i, case in enumerate(cases):
        path = folder / f"{i:05d}{SUFFIX.get(fmt, '.jsonl')}"
        if case.fmt == "tau-bench":
            path = folder / f"gpt-{i:05d}-airline.json"
        write_case(case, path, i)
        paths[str(path)] = case
        cell.records += 1 if case.encoding is None else len(case.texts)
    auto = kind in DETECTED
    asked: set[str] = set()
    if auto:
        for p, case in paths.items():
            try:
                detect(Path(p))
            except AmbiguousFormat as e:
                asked.add(p)
                names = [n for n, _ in e.candidates]
                if case.expect == "ask_or_same" and fmt in names:
                    cell.asked += 1
                else:
                    cell.silent_accepts += 1
                    cell.examples.append(f"{Path(p).name}: asked for {names}")
            except Exception as e:
                cell.crashes += 1
                cell.examples.append(f"{Path(p).name}: detect raised {type(e).__name__}: {e}")
                asked.add(p)
    todo = [Path(p) for p in paths if p not in asked]
    if not todo:
        return cell
    out = work / f"{fmt}.{kind}.corpus"
    try:
        import_paths(
            todo,
            out,
            fmt=None if auto else fmt,
            max_message_bytes=MAX_MESSAGE_BYTES,
            progress=False,
        )
    except Exception as e:
        cell.crashes += len(todo)
        cell.examples.append(f"import raised {type(e).__name__}: {str(e)[:200]}")
        return cell
    corpus = Corpus(out)
    sessions = defaultdict(list)
    for row in (
        corpus.sessions()
        .select(
            [
                "source_location",
                "source_record",
                "source_session_id",
                "source_format",
                "n_messages",
                "n_tool_calls",
                "flags",
            ]
        )
        .iter_rows(named=True)
    ):
        sessions[row["source_location"]].append(row)
    rejects = defaultdict(list)
    for row in (
        corpus.rejects()
        .select(["source_location", "record", "session_id", "reason"])
        .iter_rows(named=True)
    ):
        rejects[row["source_location"]].append(row)
    sources = {s["path"]: s for s in corpus.manifest["sources"]}
    for p in map(str, todo):
        judge(paths[p], sources[p], sessions[p], rejects[p], cell, Path(p).name)
    shutil.rmtree(out, ignore_errors=True)
    return cell


def _same(row: dict[str, Any], unit: Unit) -> bool:
    return (row["n_messages"], row["n_tool_calls"]) == unit.baseline and row[
        "source_format"
    ] == unit.fmt


def judge(
    case: Case,
    source: dict[str, Any],
    sessions: list[dict[str, Any]],
    rejects: list[dict[str, Any]],
    cell: Cell,
    name: str,
) -> None:
    def fail(what: str, why: str) -> None:
        setattr(cell, what, getattr(cell, what) + 1)
        if len(cell.examples) < 3:
            cell.examples.append(f"{name} [{case.note}]: {why}")

    skipped = sum(source["skipped"].values())
    if source["records"] != source["sessions"] + source["rejects"] + skipped:
        fail("silent_losses", f"records seen {source['records']} != outcomes")
        return
    units = 1 if source["format"] is None or case.fmt == "swe-agent" else len(case.texts)
    if source["records"] != units:
        fail("silent_losses", f"records seen {source['records']}, written {units}")
        return
    fmt = case.fmt
    if fmt == "otel-genai":
        a, b = case.spans
        conv = case.conversation
        mine = [s for s in sessions if s["source_session_id"] == conv]
        mine_r = [r for r in rejects if r["record"] is not None and a <= r["record"] < b]
        others = [s for s in sessions if s not in mine]
        if case.kind == "duplicated_ids":  # both conversations carry the id
            mine_r = rejects
    elif fmt == "claude-code":  # the mutated session: its (renamed) session ids
        a, b = case.spans
        sids = set(json.loads(case.conversation))
        mine = [s for s in sessions if s["source_session_id"].split("/agent/")[0] in sids]
        mine_r = [r for r in rejects if r["record"] is not None and a <= r["record"] < b]
        others = [s for s in sessions if s not in mine]
    elif fmt in ("swe-agent", "codex-cli"):
        mine, mine_r, others = sessions, rejects, []
    else:
        mine = [s for s in sessions if s["source_record"] == case.mutated]
        mine_r = [r for r in rejects if r["record"] == case.mutated]
        others = [s for s in sessions if s["source_record"] != case.mutated]
    # the clean companion must import as before
    companion = case.companion
    whole_file = case.kind in ("duplicated_ids", "file_encoding")
    if companion is not None and not whole_file and not any(_same(s, companion) for s in others):
        fail("silent_losses", "the clean companion record was lost or changed")
        return
    if case.kind == "file_encoding":
        want = [u for u in (case.unit, companion) if u is not None]
        if len(sessions) == len(want) and all(any(_same(s, u) for s in sessions) for u in want):
            cell.accepted += 1
        elif rejects:
            fail("false_rejects", f"re-encoded file: {[r['reason'] for r in rejects]}")
        else:
            fail("silent_accepts", "re-encoded file imported differently")
        return
    flags = {f for s in mine for f in (s["flags"] or [])}
    expect = case.expect
    if expect == "both":
        if len(sessions) == 2:
            cell.accepted += 1
        else:
            fail("silent_losses", f"{len(sessions)} sessions for two records sharing an id")
        return
    if expect == "split_or_reject":
        both = [s for s in sessions if s["source_session_id"] == conv]
        if mine_r or (
            len(both) == 2 and all("conversation_split" in (s["flags"] or []) for s in both)
        ):
            cell.flagged += 1
        else:
            fail("silent_losses", f"two conversations with one id gave {len(both)} session(s)")
        return
    if not mine and not mine_r:
        if fmt == "otel-genai" and source["skipped"] and expect == "any":
            cell.accepted += 1
            return
        fail("silent_losses", "the mutated record has no outcome")
        return
    if expect == "any":
        cell.rejected += bool(mine_r)
        cell.accepted += not mine_r
        return
    if expect in ("same", "ask_or_same"):
        if mine and all(_same(s, case.unit) for s in mine) and not mine_r:
            cell.accepted += 1
        elif mine_r and not mine:
            fail("false_rejects", f"rejected: {[r['reason'] for r in mine_r]}")
        else:
            fail(
                "silent_accepts",
                f"imported differently: {[(s['source_format'], s['n_messages'], s['n_tool_calls']) for s in mine]} vs {case.unit.baseline}",
            )
        return
    if mine_r:
        cell.rejected += 1
        return
    if expect == "reject_or_flag" and flags & case.flags:
        cell.flagged += 1
        return
    fail(
        "silent_accepts",
        f"accepted unflagged (flags {sorted(flags)}), expected {expect} {sorted(case.flags)}",
    )


def baselines(units: dict[str, list[Unit]], work: Path) -> dict[str, list[Unit]]:
    """Import every record clean; keep those that make exactly one session, with its size."""
    kept: dict[str, list[Unit]] = {}
    for fmt, pool in units.items():
        folder = work / f"baseline.{fmt}"
        folder.mkdir(parents=True)
        files = []
        for i, unit in enumerate(pool):
            texts = (
                [dumps(s).encode() for s in unit.value]
                if fmt in ("otel-genai", "claude-code", "codex-cli")
                else [dumps(unit.value).encode()]
            )
            path = folder / f"{i:05d}{SUFFIX.get(fmt, '.jsonl')}"
            path.write_bytes(render(fmt, texts, unit.doc))
            files.append(path)
        out = work / f"baseline.{fmt}.corpus"
        import_paths(files, out, fmt=fmt, max_message_bytes=MAX_MESSAGE_BYTES, progress=False)
        corpus = Corpus(out)
        by_file: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in corpus.sessions().iter_rows(named=True):
            by_file[row["source_location"]].append(row)
        bad = {r["source_location"] for r in corpus.rejects().iter_rows(named=True)}
        kept[fmt] = []
        for path, unit in zip(files, pool, strict=True):
            rows = by_file.get(str(path), [])
            if len(rows) == 1 and str(path) not in bad:
                unit.baseline = (rows[0]["n_messages"], rows[0]["n_tool_calls"])
                kept[fmt].append(unit)
        shutil.rmtree(out)
    return kept


def campaign(
    corpora: Path | None,
    per_kind: int = 120,
    seed: int = 0,
    units: int = 60,
    keep: Path | None = None,
    small: int | None = None,  # at most this many of the kinds that write large files
    echo: bool = True,
) -> dict[tuple[str, str], Cell]:
    """Run the campaign: one cell per importer and mutation kind."""
    rng = random.Random(seed)
    work = Path(tempfile.mkdtemp(prefix="ctxreplay-campaign-"))
    try:
        if echo:
            where = f" and {corpora}" if corpora else " (no public corpora)"
            print(f"records from {FIXTURES}{where}")
        pools = baselines(load_units(corpora, units), work)
        if echo:
            print(
                "clean records per importer: " + ", ".join(f"{f} {len(pools[f])}" for f in FORMATS)
            )
        table: dict[tuple[str, str], Cell] = {}
        for fmt in FORMATS:
            pool = pools[fmt]
            for kind in KINDS:
                n = SMALL.get(kind, per_kind)
                if small is not None and kind in SMALL:
                    n = min(n, small)
                cases = []
                for _ in range(n):
                    unit, companion = rng.choice(pool), rng.choice(pool)
                    if fmt == "otel-genai":
                        while len(pool) > 1 and _conv(companion.value) == _conv(unit.value):
                            companion = rng.choice(pool)
                    cases.append(build_case(fmt, kind, unit, companion, rng))
                table[fmt, kind] = run_cell(fmt, kind, cases, work)
        if keep:
            shutil.copytree(work, keep, dirs_exist_ok=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return table


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--corpora", type=Path, default=CORPORA)
    ap.add_argument(
        "--per-kind", type=int, default=120, help="mutated records per importer and kind"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--units", type=int, default=60, help="records taken per source file")
    ap.add_argument("--keep", type=Path, default=None, help="keep the mutated files here")
    args = ap.parse_args()
    started = time.perf_counter()
    corpora = args.corpora if args.corpora.exists() else None
    table = campaign(corpora, args.per_kind, args.seed, args.units, args.keep)
    report(table, time.perf_counter() - started)


COLUMNS = (
    "records",
    "crashes",
    "silent_losses",
    "silent_accepts",
    "rejected",
    "flagged",
    "accepted",
    "asked",
    "false_rejects",
)


def report(table: dict[tuple[str, str], Cell], seconds: float) -> None:
    heads = ("importer", "kind", *COLUMNS)
    widths = [18, 17, *(max(len(c), 7) for c in COLUMNS)]
    line = "  ".join(
        h.ljust(w) if i < 2 else h.rjust(w)
        for i, (h, w) in enumerate(zip(heads, widths, strict=True))
    )
    print(line)
    print("-" * len(line))
    total = Cell()
    by_fmt: dict[str, Cell] = defaultdict(Cell)
    for (fmt, kind), cell in table.items():
        values = [getattr(cell, c) for c in COLUMNS]
        print(
            "  ".join(
                [
                    fmt.ljust(widths[0]),
                    kind.ljust(widths[1]),
                    *(str(v).rjust(w) for v, w in zip(values, widths[2:], strict=True)),
                ]
            )
        )
        total.add(cell)
        by_fmt[fmt].add(cell)
    print("-" * len(line))
    for fmt, cell in by_fmt.items():
        values = [getattr(cell, c) for c in COLUMNS]
        print(
            "  ".join(
                [
                    fmt.ljust(widths[0]),
                    "(all kinds)".ljust(widths[1]),
                    *(str(v).rjust(w) for v, w in zip(values, widths[2:], strict=True)),
                ]
            )
        )
    values = [getattr(total, c) for c in COLUMNS]
    print(
        "  ".join(
            [
                "total".ljust(widths[0]),
                "".ljust(widths[1]),
                *(str(v).rjust(w) for v, w in zip(values, widths[2:], strict=True)),
            ]
        )
    )
    print(
        f"\n{total.records:,} mutated records in {seconds:.0f}s: crashes {total.crashes}, "
        f"silent losses {total.silent_losses}, silent accepts {total.silent_accepts}"
    )
    problems = [
        (k, c)
        for k, c in table.items()
        if c.crashes or c.silent_losses or c.silent_accepts or c.false_rejects
    ]
    for (fmt, kind), cell in problems:
        for example in cell.examples:
            print(f"  {fmt} {kind}: {example}")
    if total.crashes or total.silent_losses or total.silent_accepts:
        sys.exit(1)


if __name__ == "__main__":
    main()
