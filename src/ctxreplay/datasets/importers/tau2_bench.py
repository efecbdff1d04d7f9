"""tau2-bench results (sierra-research/tau2-bench ``Results`` JSON: ``data/simulations/*.json``).

One JSON object ``{timestamp, info{agent_info, user_info, environment_info{domain_name, policy,
tool_defs}}, tasks[], simulations[{id, task_id, trial, reward_info, messages[]}]}``; each
simulation is one session, keyed by its ``id``, and a bad simulation rejects only itself.

How the records map:

* The agent's system prompt is not recorded. It is rebuilt from ``environment_info.policy`` with
  tau2's ``LLMAgent`` template (``<instructions>…</instructions><policy>…</policy>``) and
  prepended, flagged ``system_rebuilt``; for another agent implementation the policy alone is used.
* Messages are ``{role, content, tool_calls[{id, name, arguments: object, requestor}], reasoning,
  usage, raw_data, errors, timestamp}``; tool results are ``{role: tool, id, content, requestor,
  error}``. ``raw_data`` repeats the provider response and is not kept; ``errors`` (rejected
  earlier generations) only flags the message ``generation_retried``.
* The user simulator's device tool calls (``requestor == "user"``: a ``user`` message with
  ``tool_calls`` and the results answering it) never reach the agent: kept, ``visible=False``.
* A damaged document is read member by member: the simulations that parse still import, the
  damaged stretch of ``simulations`` is one reject (a damaged ``info`` rejects the file: the
  system prompt could not be rebuilt). Bytes that are not UTF-8 reject only their simulation.
* ``usage`` of an ``assistant`` message is the agent's request and becomes ``Message.usage``.
  ``usage`` of a ``user`` message is the *user simulator's* request; it is not the agent's cost,
  and the corpus sums ``Message.usage`` per session, so it goes to the session metadata
  (``simulator_usage``) instead, next to ``user_cost``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..messages import Message, Part, Session, Usage, usage_from
from ..rejects import RecordError, Reject, inspect_value
from ..validate import FLAG_SYSTEM_REBUILT, FLAG_TIMESTAMP_INVALID
from .base import Importer, expect, importers, require
from .openai_chat import file_digest
from .parts import content_parts
from .reader import salvage_file
from .records import Record, checked_record, sub_record
from .sniffing import Sample, capped, sample_of
from .times import timestamp_of

#: tau2 ``LLMAgent``'s instruction and system template (tau2/agent/llm_agent.py)
AGENT_INSTRUCTION = (
    "You are a customer service agent that helps the user according to the <policy> provided "
    "below.\nIn each turn you can either:\n- Send a message to the user.\n- Make a tool call.\n"
    "You cannot do both at the same time.\n\nTry to be helpful and always follow the policy. "
    "Always make sure you generate valid JSON only."
)
SYSTEM_TEMPLATE = "<instructions>\n{instruction}\n</instructions>\n<policy>\n{policy}\n</policy>"

FLAG_GENERATION_RETRIED = "generation_retried"
__all__ = ["FLAG_GENERATION_RETRIED", "FLAG_SYSTEM_REBUILT", "Tau2BenchImporter"]

_ROLES = ("assistant", "user", "tool", "system")


def rebuild_system_prompt(policy: str, implementation: Any) -> tuple[str, str]:
    """The agent's system prompt and how it was obtained."""
    if implementation in (None, "llm_agent"):
        return SYSTEM_TEMPLATE.format(instruction=AGENT_INSTRUCTION, policy=policy), "llm_agent"
    return policy, "policy_only"


@importers.register("tau2-bench")
class Tau2BenchImporter(Importer):
    """tau2-bench ``Results`` documents: one session per simulation."""

    suffixes = (".json",)

    def sniff(self, path: Path, head: bytes) -> float:
        return _results_score(sample_of(path, head))

    def read(self, path: Path) -> Iterator[Session | Reject]:
        doc = self.document(path, check_utf8=False)  # bytes are checked per simulation
        if isinstance(doc, Reject):
            yield from self._salvage(path, doc)
            return
        try:
            value = expect(doc.value, dict, "$", "tau2 results")
            sims = expect(require(value, "simulations", "$"), list, "$.simulations", "simulations")
        except RecordError as e:
            yield self.reject(path, doc, e.reason, e.detail, e.json_path)
            return
        if not sims:
            yield self.reject(
                path, doc, "empty_session", "the results hold no simulations", "$.simulations"
            )
            return
        self.tally.seen += len(sims) - 1  # the document stands for its simulations
        records = (sub_record(i, sim) for i, sim in enumerate(sims))
        yield from self._simulations(path, value, records)

    def _salvage(self, path: Path, failed: Reject) -> Iterator[Session | Reject]:
        """A document that does not parse: the simulations that do, when ``info`` is whole."""
        found = salvage_file(path, failed, "simulations", self.name)
        if found is None or "info" in found[2]:
            yield failed
            return
        members, elements, _broken = found
        self.tally.seen += len(elements) - 1
        yield from self._simulations(path, members, iter(elements))

    def _simulations(
        self, path: Path, doc: dict[str, Any], records: Iterator[Record | Reject]
    ) -> Iterator[Session | Reject]:
        context = _DocumentContext(doc, file_digest(path), path)
        for record in records:
            if isinstance(record, Reject):
                yield record
                continue
            record = checked_record(record, self.name, path)
            if isinstance(record, Reject):
                record.json_path = f"$.simulations[{record.record}]" + (record.json_path or "$")[1:]
                yield record
                continue
            yield from self.guarded(
                path,
                record,
                lambda rec=record: [self._session(context, rec.index, rec.value)],
            )

    def _session(self, ctx: _DocumentContext, index: int, sim: Any) -> Session:
        where = f"$.simulations[{index}]"
        if ctx.info_problem is not None:
            reason, at = ctx.info_problem
            raise RecordError(reason, "the results' info (policy, agent) is unreadable", at)
        expect(sim, dict, where, "simulation")
        source_id = str(expect(require(sim, "id", where), (str, int), f"{where}.id", "id"))
        raw_messages = expect(
            require(sim, "messages", where), list, f"{where}.messages", "messages"
        )
        messages: list[Message] = []
        if ctx.system_prompt is not None:
            messages.append(
                Message(
                    role="system",
                    parts=(Part.text(ctx.system_prompt),),
                    flags=(FLAG_SYSTEM_REBUILT,),
                    source_path="$.info.environment_info.policy",
                )
            )
        simulator = {"prompt_tokens": 0, "completion_tokens": 0, "requests": 0}
        for j, raw in enumerate(raw_messages):
            message, sim_usage = _message(raw, f"{where}.messages[{j}]")
            messages.append(message)
            if sim_usage is not None:
                simulator["requests"] += 1
                simulator["prompt_tokens"] += sim_usage.prompt_tokens or 0
                simulator["completion_tokens"] += sim_usage.completion_tokens or 0
        reward_info = sim.get("reward_info") if isinstance(sim.get("reward_info"), dict) else {}
        metadata: dict[str, Any] = {
            **ctx.metadata,
            "task_id": sim.get("task_id"),
            "trial": sim.get("trial"),
            "seed": sim.get("seed"),
            "reward": reward_info.get("reward"),
            "termination_reason": sim.get("termination_reason"),
            "agent_cost": sim.get("agent_cost"),
            "user_cost": sim.get("user_cost"),
            "duration": sim.get("duration"),
            "start_time": sim.get("start_time"),
            "simulator_usage": simulator if simulator["requests"] else None,
        }
        return Session(
            source_format=self.name,
            source_session_id=source_id,
            messages=messages,
            key=f"{ctx.digest}:{index}:{source_id}",
            source_location=str(ctx.path),
            source_record=index,
            workload=ctx.workload,
            metadata={k: v for k, v in metadata.items() if v is not None},
        )


class _DocumentContext:
    """What every simulation of one results file shares."""

    def __init__(self, doc: dict[str, Any], digest: str, path: Path) -> None:
        info_problem = inspect_value(doc.get("info"))
        if info_problem is not None:  # every session would carry it: each is rejected
            doc = {**doc, "info": {}}
            self.info_problem: tuple[str, str] | None = info_problem
        else:
            self.info_problem = None
        self.digest = digest
        self.path = path
        info = _dict(doc.get("info"))
        env = _dict(info.get("environment_info"))
        agent = _dict(info.get("agent_info"))
        user = _dict(info.get("user_info"))
        domain = env.get("domain_name")
        self.workload = f"tau2-bench/{domain}" if isinstance(domain, str) else "tau2-bench"
        policy = env.get("policy")
        self.system_prompt: str | None = None
        how = "absent"
        if isinstance(policy, str) and policy:
            self.system_prompt, how = rebuild_system_prompt(policy, agent.get("implementation"))
        tool_defs = env.get("tool_defs")
        self.metadata: dict[str, Any] = {
            "domain": domain,
            "agent_implementation": agent.get("implementation"),
            "model": agent.get("llm"),
            "user_model": user.get("llm"),
            "system_prompt": how,
            "tool_defs": len(tool_defs) if isinstance(tool_defs, list | dict) else None,
        }


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _message(raw: Any, where: str) -> tuple[Message, Usage | None]:
    """One tau2 message, and the simulator usage it carried (user messages only)."""
    expect(raw, dict, where, "message")
    role = expect(require(raw, "role", where), str, f"{where}.role", "role")
    if role not in _ROLES:
        raise RecordError("unknown_role", f"role {role!r} is not a tau2 role", f"{where}.role")
    timestamp, bad_time = timestamp_of(raw.get("timestamp"))
    time_flags = (FLAG_TIMESTAMP_INVALID,) if bad_time else ()
    if role == "tool":
        call_id = expect(require(raw, "id", where), str, f"{where}.id", "tool result id")
        content = raw.get("content")
        if content is None:
            text = ""
        else:
            text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        return (
            Message(
                role="tool",
                parts=(Part.response(call_id, text),),
                is_error=raw.get("error") is True,
                visible=raw.get("requestor") != "user",
                timestamp=timestamp,
                flags=time_flags,
                source_path=where,
            ),
            None,
        )
    parts: list[Part] = []
    reasoning = raw.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        parts.append(Part("reasoning", content=reasoning))
    parts.extend(content_parts(raw.get("content"), f"{where}.content"))
    calls = raw.get("tool_calls") or []
    expect(calls, list, f"{where}.tool_calls", "tool_calls")
    for k, call in enumerate(calls):
        cw = f"{where}.tool_calls[{k}]"
        expect(call, dict, cw, "tool call")
        call_id = expect(require(call, "id", cw), str, f"{cw}.id", "tool call id")
        name = expect(require(call, "name", cw), str, f"{cw}.name", "tool name")
        parts.append(Part.call(call_id, name, call.get("arguments", {})))
    usage = usage_from(raw.get("usage"))
    flags = ((FLAG_GENERATION_RETRIED,) if raw.get("errors") else ()) + time_flags
    # A user message that makes tool calls is routed to the user's device, not to the agent.
    visible = not (role == "user" and bool(calls))
    message = Message(
        role=role,
        parts=tuple(parts),
        visible=visible,
        flags=flags,
        usage=usage if role == "assistant" else None,
        timestamp=timestamp,
        source_path=where,
    )
    return message, usage if role == "user" else None


#: detection: ``info.environment_info`` with agent/user info or simulations
RESULTS_SCORE = 0.95
#: ``simulations`` shaped like tau2's, without the ``info``
SIMULATIONS_SCORE = 0.9
#: ``info.environment_info`` alone
INFO_ONLY_SCORE = 0.6


def _results_score(sample: Sample) -> float:
    """A tau2 ``Results`` document: ``info.environment_info`` and/or ``simulations[]``."""
    if sample.layout != "document" or not isinstance(sample.records[0], dict):
        return 0.0
    return capped(_shape_score(sample.records[0]), sample.records[0])


def _shape_score(doc: dict[str, Any]) -> float:
    info = doc.get("info")
    env = info.get("environment_info") if isinstance(info, dict) else None
    sims = doc.get("simulations")
    sims_shaped = isinstance(sims, list) and all(
        isinstance(s, dict) and ("messages" in s or "task_id" in s) for s in sims[:3]
    )
    if isinstance(env, dict) and isinstance(info, dict):
        if "agent_info" in info or "user_info" in info or sims_shaped:
            return RESULTS_SCORE
        return INFO_ONLY_SCORE
    if sims_shaped and sims:
        return SIMULATIONS_SCORE
    return 0.0
