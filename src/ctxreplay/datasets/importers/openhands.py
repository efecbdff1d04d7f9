"""OpenHands agent-SDK evaluation outputs (OpenHands/benchmarks ``output.jsonl``).

One JSON line per instance: ``{instance_id, instruction, history[event], metrics, metadata,
test_result, error}``, where ``history`` is the SDK event log (``openhands.sdk.event``):

* ``MessageEvent``: ``llm_message{role, content[TextContent|ImageContent], reasoning_content}``
  plus ``extended_content`` (text the SDK appends for the model);
* ``ActionEvent``: one tool call ``tool_call{id, name, arguments: JSON text}`` with the
  ``thought`` / ``reasoning_content`` / ``thinking_blocks`` of the response that made it.
  Consecutive actions sharing one ``llm_response_id`` are parallel calls of one assistant message;
* ``ObservationEvent``: the result of ``tool_call_id`` (``observation{kind, output | content |
  message, error, screenshot_data, ...}``) as a ``tool`` message; a bash observation keeps the
  ``metadata.prefix``/``suffix`` the SDK shows the model (``[The command completed with exit code
  0.]``), a browser screenshot becomes an image ``blob`` part (counted, never dropped), ``error``
  marks the message ``is_error``;
* ``SystemPromptEvent`` → ``system`` message; ``CondensationSummaryEvent`` → the ``user`` message
  holding the condenser's summary; ``AgentErrorEvent`` and ``UserRejectObservation`` → error
  results of their call; the SDK's internal events (condensation requests, state updates, pauses,
  token and completion logs) carry no LLM message and are only counted in the metadata
  (``skipped_events``). An event of a kind the SDK does not define is counted too
  (``unknown_events``) and flags the message before it ``unknown_event_kind``: something the
  model may have seen could be missing.

When the log does not start with a user message, ``instruction`` (the task the benchmark sent)
is inserted as the first user message, flagged ``from_instruction``. Actions without an
observation are kept (validation flags them ``unanswered_tool_call``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..messages import Message, Part, Session, Usage, as_dict, usage_from
from ..rejects import Reject
from ..validate import FLAG_FROM_INSTRUCTION, FLAG_TIMESTAMP_INVALID
from .base import Importer, expect, importers, require
from .openai_chat import file_digest
from .parts import content_parts
from .records import Record
from .sniffing import capped, sample_of
from .times import timestamp_of

FLAG_UNKNOWN_EVENT_KIND = "unknown_event_kind"
__all__ = ["FLAG_FROM_INSTRUCTION", "FLAG_UNKNOWN_EVENT_KIND", "OpenHandsImporter"]

#: events that become messages
LLM_EVENTS = frozenset(
    {"MessageEvent", "ActionEvent", "ObservationEvent", "SystemPromptEvent", "AgentErrorEvent",
     "UserRejectObservation", "CondensationSummaryEvent"}
)  # fmt: skip
#: the SDK's events that never reach the model
INTERNAL_EVENTS = frozenset(
    {"ConversationStateUpdateEvent", "CondensationRequest", "Condensation", "PauseEvent",
     "LLMCompletionLogEvent", "TokenEvent", "ConversationErrorEvent", "ServerErrorEvent"}
)  # fmt: skip


@importers.register("openhands")
class OpenHandsImporter(Importer):
    """OpenHands SDK event logs as written by the OpenHands benchmarks harness."""

    suffixes = (".jsonl", ".json")

    def sniff(self, path: Path, head: bytes) -> float:
        return sample_of(path, head).mean(_output_score)

    def read(self, path: Path) -> Iterator[Session | Reject]:
        self._digest = file_digest(path)
        yield from super().read(path)

    def sessions_from_record(self, path: Path, record: Record) -> Iterator[Session]:
        value = expect(record.value, dict, "$", "output row")
        instance_id = str(
            expect(require(value, "instance_id", "$"), (str, int), "$.instance_id", "instance_id")
        )
        history = expect(require(value, "history", "$"), list, "$.history", "history")
        metrics = as_dict(value.get("metrics"))
        log = _EventLog(_usage_by_response(metrics))
        for i, event in enumerate(history):
            log.add(event, f"$.history[{i}]")
        messages = log.finish()
        instruction = value.get("instruction")
        first = next((k for k, m in enumerate(messages) if m.role != "system"), len(messages))
        leading_user = first < len(messages) and messages[first].role == "user"
        if not leading_user and isinstance(instruction, str) and instruction:
            task = Message(
                role="user",
                parts=(Part.text(instruction),),
                flags=(FLAG_FROM_INSTRUCTION,),
                source_path="$.instruction",
            )
            messages.insert(first, task)
        yield Session(
            source_format=self.name,
            source_session_id=instance_id,
            messages=messages,
            key=f"{self._digest}:{record.index}:{instance_id}",
            source_location=str(path),
            source_record=record.index,
            workload=_workload(value),
            metadata=_metadata(value, metrics, log),
        )


def _run_metadata(value: dict[str, Any]) -> dict[str, Any]:
    meta = value.get("metadata")
    if isinstance(meta, str):
        try:
            meta = json.loads(meta)
        except ValueError:
            return {}
    return meta if isinstance(meta, dict) else {}


def _workload(value: dict[str, Any]) -> str:
    dataset = _run_metadata(value).get("dataset")
    return f"openhands/{dataset.rsplit('/', 1)[-1]}" if isinstance(dataset, str) else "openhands"


def _metadata(value: dict[str, Any], metrics: dict[str, Any], log: _EventLog) -> dict[str, Any]:
    run = _run_metadata(value)
    llm = as_dict(run.get("llm"))
    out: dict[str, Any] = {
        "instance_id": value.get("instance_id"),
        "model": llm.get("model"),  # only the model: the llm block also holds credentials
        "dataset": run.get("dataset"),
        "max_iterations": run.get("max_iterations"),
        "test_result": value.get("test_result"),
        "error": value.get("error"),
        "accumulated_cost": metrics.get("accumulated_cost"),
        "parallel_call_groups": log.parallel_groups or None,
        "skipped_events": dict(log.skipped) or None,
        "unknown_events": dict(log.unknown) or None,
    }
    return {k: v for k, v in out.items() if v is not None}


def _usage_by_response(metrics: dict[str, Any]) -> dict[str, Usage]:
    """Per-response token usage, when the run recorded ``metrics.token_usages``."""
    out: dict[str, Usage] = {}
    for item in metrics.get("token_usages") or []:
        if isinstance(item, dict) and isinstance(item.get("response_id"), str):
            usage = usage_from(item)
            if usage is not None:
                out[item["response_id"]] = usage
    return out


class _EventLog:
    """Turns events into messages, merging parallel actions into one assistant message."""

    def __init__(self, usage: dict[str, Usage]) -> None:
        self.usage = usage
        self.messages: list[Message] = []
        self.actions: list[tuple[str, dict[str, Any]]] = []
        self.skipped: Counter[str] = Counter()
        self.unknown: Counter[str] = Counter()
        self.unknown_at: list[int] = []  # messages made before each unknown event
        self.parallel_groups = 0

    def add(self, event: Any, where: str) -> None:
        expect(event, dict, where, "event")
        kind = expect(require(event, "kind", where), str, f"{where}.kind", "kind")
        if kind == "ActionEvent":
            response = event.get("llm_response_id")
            if self.actions and (
                response is None or response != self.actions[0][1].get("llm_response_id")
            ):
                self._flush()
            self.actions.append((where, event))
            return
        self._flush()
        if kind == "MessageEvent":
            self.messages.append(_message_event(event, where))
        elif kind == "ObservationEvent":
            self.messages.append(_observation_event(event, where))
        elif kind == "SystemPromptEvent":
            prompt = event.get("system_prompt")
            text = prompt.get("text") if isinstance(prompt, dict) else prompt
            text = expect(text, str, f"{where}.system_prompt", "system prompt")
            self.messages.append(Message("system", (Part.text(text),), source_path=where))
        elif kind in ("AgentErrorEvent", "UserRejectObservation"):
            body = event.get("error") or event.get("rejection_reason") or ""
            self.messages.append(
                Message(
                    role="tool",
                    parts=(Part.response(_call_id(event, where), str(body)),),
                    is_error=True,
                    source_path=where,
                    **_time(event),
                )
            )
        elif kind == "CondensationSummaryEvent":
            summary = expect(require(event, "summary", where), str, f"{where}.summary", "summary")
            self.messages.append(
                Message("user", (Part.text(summary),), source_path=where, **_time(event))
            )
        elif kind in INTERNAL_EVENTS:
            self.skipped[kind] += 1
        else:
            self.unknown[kind] += 1
            self.unknown_at.append(len(self.messages))

    def finish(self) -> list[Message]:
        self._flush()
        for at in self.unknown_at:
            i = max(0, min(at, len(self.messages)) - 1)
            if i < len(self.messages) and FLAG_UNKNOWN_EVENT_KIND not in self.messages[i].flags:
                m = self.messages[i]
                self.messages[i] = replace(m, flags=(*m.flags, FLAG_UNKNOWN_EVENT_KIND))
        return self.messages

    def _flush(self) -> None:
        if not self.actions:
            return
        group, self.actions = self.actions, []
        if len(group) > 1:
            self.parallel_groups += 1
        reasoning: list[Part] = []
        text: list[Part] = []
        calls: list[Part] = []
        for where, event in group:
            reasoning.extend(_reasoning(event))
            thought = event.get("thought")
            if isinstance(thought, str):
                thought = [thought]
            text.extend(content_parts(thought or [], f"{where}.thought"))
            calls.append(_action_call(event, where))
        first_where, first = group[0]
        response = first.get("llm_response_id")
        time = _time(first)
        if any(_time(event)["flags"] for _, event in group[1:]):  # a later call's time is bad
            time["flags"] = (FLAG_TIMESTAMP_INVALID,)
        self.messages.append(
            Message(
                role="assistant",
                parts=(*reasoning, *text, *calls),
                usage=self.usage.get(response) if isinstance(response, str) else None,
                source_path=first_where,
                **time,
            )
        )


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _time(event: dict[str, Any]) -> dict[str, Any]:
    """The event's ``timestamp`` and, when it was there but unusable, the flag saying so."""
    timestamp, bad = timestamp_of(event.get("timestamp"))
    return {"timestamp": timestamp, "flags": (FLAG_TIMESTAMP_INVALID,) if bad else ()}


def _output_score(record: Any) -> float:
    return capped(_shape_score(record), record)


#: detection: a history with the events of model calls
LLM_EVENTS_SCORE = 0.95
#: a history of events, each with its ``kind``
EVENTS_SCORE = 0.75
#: an output row (``instance_id``, ``instruction``) whose history holds no role messages
TASK_SCORE = 0.7


def _shape_score(record: Any) -> float:
    """An output row: ``{instance_id, instruction?, history: [events with a kind]}``."""
    if not isinstance(record, dict) or not isinstance(record.get("history"), list):
        return 0.0
    events = [e for e in record["history"][:16] if isinstance(e, dict)]
    kinds = {e.get("kind") for e in events}
    if kinds & LLM_EVENTS:
        return LLM_EVENTS_SCORE
    if events and all(isinstance(k, str) for k in kinds):
        return EVENTS_SCORE
    if "instance_id" in record and "instruction" in record:
        return TASK_SCORE if not any("role" in e for e in events) else 0.0
    return 0.0


def _call_id(event: dict[str, Any], where: str) -> str:
    return expect(require(event, "tool_call_id", where), str, f"{where}.tool_call_id", "id")


def _reasoning(obj: dict[str, Any]) -> list[Part]:
    parts: list[Part] = []
    if isinstance(obj.get("reasoning_content"), str) and obj["reasoning_content"]:
        parts.append(Part("reasoning", content=obj["reasoning_content"]))
    for block in obj.get("thinking_blocks") or []:
        if isinstance(block, dict) and isinstance(block.get("thinking"), str):
            parts.append(Part("reasoning", content=block["thinking"]))
    return parts


def _action_call(event: dict[str, Any], where: str) -> Part:
    call = event.get("tool_call")
    if isinstance(call, dict):
        cw = f"{where}.tool_call"
        call_id = expect(require(call, "id", cw), str, f"{cw}.id", "tool call id")
        name = expect(require(call, "name", cw), str, f"{cw}.name", "tool name")
        return Part.call(call_id, name, call.get("arguments", "{}"))
    # older logs: no recorded call, rebuild it from the typed action
    action = as_dict(event.get("action"))
    name = expect(require(event, "tool_name", where), str, f"{where}.tool_name", "tool name")
    args = {k: v for k, v in action.items() if k != "kind"}
    return Part.call(_call_id(event, where), name, args)


def _content(items: Any, where: str) -> list[Part]:
    """SDK content lists: TextContent as text, ImageContent (``image_urls``) as images."""
    if isinstance(items, list):
        converted: list[Any] = []
        for item in items:
            if isinstance(item, dict) and item.get("type") == "image" and "image_urls" in item:
                urls = item.get("image_urls") or []
                converted.extend({"type": "image_url", "image_url": {"url": u}} for u in urls)
            else:
                converted.append(item)
        items = converted
    return content_parts(items, where)


def _message_event(event: dict[str, Any], where: str) -> Message:
    message = expect(require(event, "llm_message", where), dict, f"{where}.llm_message")
    mw = f"{where}.llm_message"
    role = message.get("role") or ("user" if event.get("source") == "user" else "assistant")
    role = expect(role, str, f"{mw}.role", "role")
    parts = [*_reasoning(message), *_content(message.get("content"), f"{mw}.content")]
    parts.extend(_content(event.get("extended_content") or [], f"{where}.extended_content"))
    for k, call in enumerate(message.get("tool_calls") or []):
        cw = f"{mw}.tool_calls[{k}]"
        expect(call, dict, cw, "tool call")
        fn = call.get("function") if isinstance(call.get("function"), dict) else call
        call_id = expect(require(call, "id", cw), str, f"{cw}.id", "tool call id")
        name = expect(require(fn, "name", cw), str, f"{cw}.name", "tool name")
        parts.append(Part.call(call_id, name, fn.get("arguments", "{}")))
    return Message(role=role, parts=tuple(parts), source_path=where, **_time(event))


def _observation_event(event: dict[str, Any], where: str) -> Message:
    ow = f"{where}.observation"
    obs = expect(require(event, "observation", where), dict, ow, "observation")
    body: list[Part] = []
    for key in ("output", "content", "message"):
        if key in obs and obs[key] is not None:
            body = _content(obs[key], f"{ow}.{key}")
            break
    text = "\n".join(p.content or "" for p in body if p.type == "text")
    media = [p for p in body if p.type not in ("text", "reasoning")]
    meta = as_dict(obs.get("metadata"))
    if obs.get("kind") == "ExecuteBashObservation":
        text = f"{_str(meta.get('prefix')) or ''}{text}{_str(meta.get('suffix')) or ''}"
    error = obs.get("error")
    if isinstance(error, str) and error:
        text = f"{text}\n{error}" if text else error
    screenshot = obs.get("screenshot_data")
    if isinstance(screenshot, str) and screenshot:
        media.append(_screenshot(screenshot))
    name = _str(event.get("tool_name"))
    return Message(
        role="tool",
        parts=(Part.response(_call_id(event, where), text, name), *media),
        is_error=error is True or (isinstance(error, str) and bool(error)),
        source_path=where,
        **_time(event),
    )


def _screenshot(data: str) -> Part:
    mime = "image/png"
    if data.startswith("data:"):
        header, _, data = data.partition(",")
        mime = header[5:].split(";")[0] or mime
    return Part("blob", content=data, mime_type=mime, modality="image")
