"""SWE-agent trajectories (SWE-agent/SWE-agent ``.traj`` files, v0.7 and v1.x).

A ``.traj`` is one JSON object ``{environment, trajectory[{action, observation, response,
thought, state}], history[{role, content, agent, is_demo, message_type, thought, action,
tool_calls?, tool_call_ids?}], info{exit_status, submission, model_stats}}``; one file is one
session whose source id is the file stem. ``history`` is what the model saw and is the message
list; ``trajectory`` only helps find commands. Two styles:

* function calling: ``assistant`` messages carry OpenAI ``tool_calls`` and observations are
  ``role: tool`` messages naming their calls in ``tool_call_ids``;
* textual: the command is text inside the ``assistant`` message (a fenced block or
  ``<command>`` tags) and the observation is the next ``user`` message. The importer makes that
  explicit: the assistant message gets a ``tool_call`` part (id ``swe-<history index>``, name the
  command's first word, arguments ``{"command": <command>}``) and its text keeps the prose without
  the command envelope (so the command is not counted twice; flag ``textual_command``, plus
  ``command_in_text`` when the command could not be cut out of the prose). The observation stays a
  ``user`` message whose content is a ``tool_call_response`` part with that id.

Demonstrations (``is_demo: true``) were in the model's context: kept as plain text, flagged
``demo``. The first non-demo ``user`` message (the task) stays a plain user turn. Call ids a
replayed run reused after the earlier call was answered are renamed (``call_id_renamed``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..messages import Message, Part, Session, as_dict
from ..rejects import RecordError, Reject
from .base import Importer, expect, importers, require
from .openai_chat import file_digest
from .parts import content_parts
from .records import Record
from .sniffing import capped, sample_of

FLAG_DEMO = "demo"
FLAG_TEXTUAL_COMMAND = "textual_command"
FLAG_COMMAND_IN_TEXT = "command_in_text"

_ROLES = ("system", "user", "assistant", "tool")
_BLOCKS = re.compile(r"```[^\n`]*\n(?P<fence>.*?)```|<command>(?P<tag>.*?)</command>", re.S)


def last_command_block(text: str) -> re.Match[str] | None:
    """The last fenced block or ``<command>`` element of an assistant message."""
    matches = list(_BLOCKS.finditer(text))
    return matches[-1] if matches else None


def _block_body(match: re.Match[str]) -> str:
    return match.group("fence") if match.group("fence") is not None else match.group("tag")


def split_command(content: str, thought: Any, command: str) -> tuple[str, bool]:
    """The prose of an assistant message without its command, and whether the cut was made."""
    cmd = command.strip()
    if isinstance(thought, str) and content.startswith(thought) and cmd in content[len(thought) :]:
        return thought, True  # SWE-agent's own split: content == thought + command envelope
    block = last_command_block(content)
    if block is not None and _block_body(block).strip() == cmd:
        return content[: block.start()] + content[block.end() :], True
    return content, False


#: detection: a ``history`` of SWE-agent messages (with ``agent``, ``is_demo``, ...)
HISTORY_SCORE = 0.9
#: a ``trajectory`` of action/observation steps
TRAJECTORY_SCORE = 0.85
#: added for the ``.traj`` ending, which only SWE-agent uses
TRAJ_SUFFIX_BONUS = 0.05


@importers.register("swe-agent")
class SweAgentImporter(Importer):
    """SWE-agent ``.traj`` files, textual and function-calling."""

    suffixes = (".traj", ".json")

    def sniff(self, path: Path, head: bytes) -> float:
        sample = sample_of(path, head)
        if sample.layout != "document":
            return 0.0
        score = capped(_trajectory_score(sample.records[0]), sample.records[0])
        return score + TRAJ_SUFFIX_BONUS if score and path.suffix == ".traj" else score

    def read(self, path: Path) -> Iterator[Session | Reject]:
        self._digest = file_digest(path)
        doc = self.document(path)
        if isinstance(doc, Reject):
            yield doc
            return
        yield from self.guarded(path, doc, lambda: self.sessions_from_record(path, doc))

    def sessions_from_record(self, path: Path, record: Record) -> Iterator[Session]:
        value = expect(record.value, dict, "$", "trajectory file")
        history = expect(require(value, "history", "$"), list, "$.history", "history")
        trajectory: list[Any] = (
            value["trajectory"] if isinstance(value.get("trajectory"), list) else []
        )
        function_calling = any(
            isinstance(m, dict) and (m.get("tool_calls") or m.get("role") == "tool")
            for m in history
        )
        messages = _function_calling(history) if function_calling else _textual(history, trajectory)
        info = as_dict(value.get("info"))
        agents = sorted({m["agent"] for m in history if isinstance(m.get("agent"), str)})
        metadata: dict[str, Any] = {
            "style": "function_calling" if function_calling else "textual",
            "exit_status": info.get("exit_status"),
            "model_stats": info.get("model_stats"),
            "has_submission": bool(info.get("submission")),
            "environment": value.get("environment")
            if isinstance(value.get("environment"), str)
            else None,
            "agents": agents or None,
            "demo_messages": sum(1 for m in messages if FLAG_DEMO in m.flags) or None,
            "trajectory_steps": len(trajectory) if "trajectory" in value else None,
        }
        yield Session(
            source_format=self.name,
            source_session_id=path.stem,
            messages=messages,
            # several runs of one instance share a stem: the file digest keeps keys apart
            key=f"{self._digest}:{record.index}:{path.stem}",
            source_location=str(path),
            source_record=record.index,
            workload="swe-agent",
            metadata={k: v for k, v in metadata.items() if v is not None},
        )


def _entry(raw: Any, where: str) -> tuple[str, list[Part], tuple[str, ...]]:
    """Role, content parts and flags of one history entry."""
    expect(raw, dict, where, "history entry")
    role = expect(require(raw, "role", where), str, f"{where}.role", "role")
    if role not in _ROLES:
        raise RecordError("unknown_role", f"role {role!r} is not a SWE-agent role", f"{where}.role")
    parts = content_parts(raw.get("content"), f"{where}.content")
    return role, parts, (FLAG_DEMO,) if raw.get("is_demo") else ()


def _as_response(call_id: str | None, parts: list[Part], name: str | None = None) -> list[Part]:
    text = "\n".join(p.content or "" for p in parts if p.type == "text")
    media = [p for p in parts if p.type not in ("text", "reasoning")]
    return [Part.response(call_id, text, name), *media]


def _function_calling(history: list[Any]) -> list[Message]:
    out: list[Message] = []
    for i, raw in enumerate(history):
        where = f"$.history[{i}]"
        role, parts, flags = _entry(raw, where)
        if role == "tool":
            ids = expect(
                require(raw, "tool_call_ids", where), list, f"{where}.tool_call_ids", "ids"
            )
            if not ids:
                raise RecordError(
                    "missing_field", "tool message names no call", f"{where}.tool_call_ids"
                )
            # one observation answers the call(s) it names; extra ids get an empty result
            parts = _as_response(ids[0], parts) + [Part.response(str(x), "") for x in ids[1:]]
        for k, call in enumerate(raw.get("tool_calls") or []):
            cw = f"{where}.tool_calls[{k}]"
            expect(call, dict, cw, "tool call")
            fn = expect(require(call, "function", cw), dict, f"{cw}.function", "function")
            name = expect(require(fn, "name", f"{cw}.function"), str, f"{cw}.function.name")
            call_id = expect(require(call, "id", cw), str, f"{cw}.id", "tool call id")
            parts.append(Part.call(call_id, name, fn.get("arguments", "{}")))
        out.append(Message(role=role, parts=tuple(parts), flags=flags, source_path=where))
    return out


def _textual(history: list[Any], trajectory: list[Any]) -> list[Message]:
    assistants = [
        i
        for i, m in enumerate(history)
        if isinstance(m, dict) and m.get("role") == "assistant" and not m.get("is_demo")
    ]
    # trajectory steps line up with the non-demo assistant messages only when counts agree
    step_action = (
        {i: s.get("action") for i, s in zip(assistants, trajectory, strict=True)}
        if len(assistants) == len(trajectory) and all(isinstance(s, dict) for s in trajectory)
        else {}
    )
    out: list[Message] = []
    pending: str | None = None  # the synthesized call the next user message answers
    for i, raw in enumerate(history):
        where = f"$.history[{i}]"
        role, parts, flags = _entry(raw, where)
        answers, pending = pending, None
        if role == "user" and answers is not None and FLAG_DEMO not in flags:
            parts = _as_response(answers, parts)
        elif role == "assistant" and FLAG_DEMO not in flags:
            text = "\n".join(p.content or "" for p in parts if p.type == "text")
            command = _command(raw, text, step_action.get(i))
            if command is not None:
                pending = f"swe-{i}"
                prose, cut = split_command(text, raw.get("thought"), command)
                others = [p for p in parts if p.type != "text"]
                parts = [*([Part.text(prose)] if prose else []), *others]
                parts.append(Part.call(pending, command.split()[0], {"command": command}))
                flags = (
                    *flags,
                    FLAG_TEXTUAL_COMMAND,
                    *(() if cut else (FLAG_COMMAND_IN_TEXT,)),
                )
        out.append(Message(role=role, parts=tuple(parts), flags=flags, source_path=where))
    return out


def _command(raw: dict[str, Any], text: str, step_action: Any) -> str | None:
    """The command an assistant message ran: its ``action``, the trajectory's, or its text's."""
    for candidate in (raw.get("action"), step_action):
        if isinstance(candidate, str) and candidate.strip():
            return candidate.rstrip("\n")
    block = last_command_block(text)
    if block is not None and _block_body(block).strip():
        return _block_body(block).strip("\n")
    return None


def _trajectory_score(doc: Any) -> float:
    """A ``.traj``: ``history`` of SWE-agent messages and/or ``trajectory`` of steps."""
    if not isinstance(doc, dict):
        return 0.0
    history = doc.get("history")
    if isinstance(history, list) and history:
        entries = [m for m in history[:8] if isinstance(m, dict)]
        if len(entries) < len(history[:8]) or any("kind" in m for m in entries):
            return 0.0  # events, not messages
        if any(isinstance(m.get("role"), str) for m in entries) and any(
            "agent" in m or "is_demo" in m or "message_type" in m for m in entries
        ):
            return HISTORY_SCORE
    trajectory = doc.get("trajectory")
    if isinstance(trajectory, list) and trajectory:
        steps = trajectory[:8]
        if all(isinstance(t, dict) and "action" in t and "observation" in t for t in steps):
            return TRAJECTORY_SCORE
    return 0.0
