"""The ``counterfactual`` judge: ask a real model what it would do next on the view.

Every other judge reads the view and the recorded future and decides whether the future could
still be served. This one asks the question the Self-GC study (Hao et al. 2026) names as missing,
and that JetBrains' "The Complexity Trap" (Lindenbauer et al. 2025) answered online by re-running
SWE-bench: would the agent actually have acted differently on the pruned context? Offline, for
each (case, policy):

1. the **view** is sent as a real chat-completions request — the exact provider-valid messages
   ``ctxreplay show … --request openai-chat`` prints (``datasets.openai_format.to_openai``) —
   with the session's tool definitions where the trace recorded them (``tools`` of the session
   metadata: inspect-ai logs carry them) and, where it did not, minimal function schemas derived
   from the calls the trace makes (name, and each argument key with the JSON type of its first
   value); the model's answer is its **next action**;
2. the full **prefix** is sent the same way, as the **baseline**. Identical requests hit the
   shared response cache (and coalesce while in flight), so each case's baseline is paid once
   whatever the number of policies; a policy that keeps everything costs nothing;
3. the view's action is compared with the baseline's (the verdict) and with the recorded next
   action (the future's first agent message; kept for audit): same kind (a message or tool
   calls), same tools, arguments equivalent (normalised JSON, paths normalised, volatile parts of
   ids stripped: :func:`arguments_equivalent`, per tool through :func:`register_comparator`),
   and for messages the values stated (the flow judge's fact extraction, ``message_facts``).

``no_impact`` when the view's action matches the baseline's; ``impact`` otherwise, with a
:class:`~ctxreplay.judges.base.Loss` for each value of the baseline action (an argument, a
stated value) that the prefix holds and the view does not, filed in the six-category taxonomy;
``unscored`` with the reason when the baseline (or the view's answer) cannot be obtained: a
failed call, a refusal, an empty or truncated answer — never a silent pass.

The verdict's ``explanation`` names the three actions on one line, and ``raw`` holds them as
JSON (``{"view": …, "baseline": …, "recorded": …, "view_vs_baseline": …, …}``) for reports and
audits. Usage counts what this verdict paid: a cached baseline costs nothing.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

from ..datasets.messages import Message, Part
from ..datasets.openai_format import to_openai
from ..llm.completion import Completion, ModelCallError, is_transient
from ..llm.endpoint import EndpointParams
from ..llm.structured import withheld
from ..registry import param
from ..replay.objects import ObjectIndex, owner_of
from ..text.anchors import ROUTE, is_constraint
from ..text.facts import shape_floor, squash, token_set
from .base import JudgeInput, Loss, Verdict, availability, judge, parts_text
from .flow import message_facts
from .llm import ModelJudge, Spend

if TYPE_CHECKING:
    pass

TOOL_MODES = ("auto", "session", "derived", "none")

# --- actions ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One tool call of an action: the tool and its arguments (parsed JSON, else the raw text)."""

    name: str
    arguments: Any

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "arguments": self.arguments}


@dataclass(frozen=True)
class NextAction:
    """What an agent did next: ``tool_call`` (one or more calls, maybe with text) or
    ``message`` (text only)."""

    kind: str
    text: str = ""
    calls: tuple[Call, ...] = ()

    @property
    def tools(self) -> tuple[str, ...]:
        return tuple(sorted(c.name for c in self.calls))

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "text": self.text, "calls": [c.as_dict() for c in self.calls]}

    def describe(self, width: int = 160) -> str:
        """One line: ``call read_file {"path":"a.py"}`` or ``message "The total is 28.50"``."""
        if self.calls:
            shown = "; ".join(f"{c.name} {_compact(c.arguments)}" for c in self.calls)
            out = f"call {shown}"
        else:
            out = f"message {json.dumps(' '.join(self.text.split()), ensure_ascii=False)}"
        return out if len(out) <= width else out[: width - 1] + "…"


def _compact(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _parse_arguments(text: str | None) -> Any:
    if not text:
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return text


def action_of(text: str | None, calls: Sequence[tuple[str, str | None]]) -> NextAction:
    """An action from an answer's text and its calls as ``(name, JSON arguments)``."""
    parsed = tuple(Call(name, _parse_arguments(args)) for name, args in calls)
    return NextAction("tool_call" if parsed else "message", (text or "").strip(), parsed)


def action_from_completion(c: Completion) -> NextAction:
    """The next action a model answered with."""
    return action_of(c.text, [(t.name, t.arguments) for t in c.tool_calls])


def action_from_message(m: Message) -> NextAction:
    """The next action an agent message records (its text and its tool calls)."""
    text = "\n".join(p.content or "" for p in m.parts if p.type == "text")
    return action_of(text, [(p.name or "", p.arguments) for p in m.parts if p.type == "tool_call"])


def recorded_action(future: Sequence[Message]) -> tuple[NextAction, int] | None:
    """The recorded next action: the future's first agent message, and its seq."""
    for m in future:
        if m.role == "assistant":
            return action_from_message(m), m.seq
    return None


def action_problem(c: Completion) -> str | None:
    """Why an answer holds no usable action (refused, filtered, empty, truncated), or None."""
    problem = withheld(c)
    if problem:
        return problem
    if not c.tool_calls and not (c.text or "").strip():
        return "empty answer: neither text nor a tool call"
    for t in c.tool_calls:
        if not t.name:
            return "a tool call without a tool name"
        if c.finish_reason == "length" and isinstance(_parse_arguments(t.arguments), str):
            return f"tool call {t.name} truncated at max_tokens (its arguments are not JSON)"
    return None


# --- tool definitions -------------------------------------------------------------------------


def openai_tool(definition: Mapping[str, Any]) -> dict[str, Any] | None:
    """One tool definition as a chat-completions ``tools`` entry, from the shapes traces keep:
    OpenAI's own (``{"type": "function", "function": {...}}``), a bare function
    (``name``/``description``/``parameters``, inspect-ai's), or Anthropic's (``input_schema``).
    None for what names no tool."""
    fn = definition.get("function")
    if definition.get("type") == "function" and isinstance(fn, Mapping):
        definition = fn
    name = definition.get("name")
    if not isinstance(name, str) or not name:
        return None
    out: dict[str, Any] = {"name": name}
    if isinstance(definition.get("description"), str):
        out["description"] = definition["description"]
    schema = definition.get("parameters", definition.get("input_schema"))
    if isinstance(schema, Mapping):
        out["parameters"] = _strip_nulls(dict(schema))
    else:
        out["parameters"] = {"type": "object", "properties": {}}
    return {"type": "function", "function": out}


def _strip_nulls(value: Any) -> Any:
    """A JSON schema without null-valued keys (inspect-ai writes ``"default": null`` and the
    like, which some endpoints refuse)."""
    if isinstance(value, dict):
        return {k: _strip_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_strip_nulls(v) for v in value]
    return value


def session_tools(definitions: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """The session's recorded tool definitions as chat-completions ``tools`` (empty: none)."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for d in definitions or ():
        tool = openai_tool(d) if isinstance(d, Mapping) else None
        if tool is not None and tool["function"]["name"] not in seen:
            seen.add(tool["function"]["name"])
            out.append(tool)
    return out


_JSON_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


def _json_type(value: Any) -> dict[str, Any]:
    for kind, name in _JSON_TYPES:
        if isinstance(value, kind):
            return {"type": name}
    return {}


def derived_tools(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Minimal function schemas for a trace without tool definitions: each tool the messages
    call, with each argument key seen and the JSON type of its first value (no description,
    nothing required)."""
    props: dict[str, dict[str, dict[str, Any]]] = {}
    for m in messages:
        for p in m.calls:
            if not p.name:
                continue
            args = _parse_arguments(p.arguments)
            mine = props.setdefault(p.name, {})
            if isinstance(args, dict):
                for k, v in args.items():
                    mine.setdefault(str(k), _json_type(v))
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "parameters": {"type": "object", "properties": fields},
            },
        }
        for name, fields in props.items()
    ]


def tools_for(item: JudgeInput, mode: str = "auto") -> tuple[list[dict[str, Any]], str]:
    """The tools sent with both requests of a case, and where they came from: ``session`` (the
    trace's definitions), ``derived`` (from the calls of the prefix and the future: the
    agent's toolset is part of its environment, not information the view may lose) or ``none``.
    The baseline and every view of a case get the same tools."""
    if mode in ("auto", "session"):
        tools = session_tools(item.tools)
        if tools or mode == "session":
            return tools, "session" if tools else "none"
    if mode in ("auto", "derived"):
        tools = derived_tools([*item.prefix, *item.future])
        return tools, "derived" if tools else "none"
    return [], "none"


# --- comparing arguments ------------------------------------------------------------------------

_UUID = re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}", re.I)
_HEX = re.compile(r"(?<![0-9a-z])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{12,}(?![0-9a-z])", re.I)
_STAMP = re.compile(
    r"\d{4}-\d\d-\d\d[t _]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:z|[+-]\d\d:?\d\d)?|(?<!\d)1\d{9,12}(?!\d)",
    re.I,
)
_ID_KEY = re.compile(r"(?:^|[_\-.])(?:id|ids|uuid|guid|key|token|handle|ref)$|[a-z]Ids?$", re.I)
_PATH_KEY = re.compile(r"path|file|dir|folder|cwd|location", re.I)
_PATHLIKE = re.compile(r"^(?:~|\.{1,2})?/|^[\w.\-]+/[\w.\-/]*$|^[A-Za-z]:[\\/]")


def normalise_path(value: str) -> str:
    """A path as compared: separators unified, ``.``/``..``/doubled slashes and a trailing
    slash resolved, ``./`` dropped."""
    v = value.strip().replace("\\", "/")
    if not v:
        return v
    norm = posixpath.normpath(v)
    return norm[2:] if norm.startswith("./") else norm


def strip_volatile(value: str) -> str:
    """An id with its volatile parts (UUIDs, long hex hashes, timestamps, epoch numbers)
    replaced by placeholders: ``run-2024-05-01T10:00:00Z-a1b2c3d4e5f6`` and the same run
    started later compare equal."""
    v = _UUID.sub("<uuid>", value.strip())
    v = _STAMP.sub("<time>", v)
    return _HEX.sub("<hex>", v)


def normalise_value(value: Any, key: str = "") -> Any:
    """An argument value as compared: dict keys sorted and null values dropped, whole floats
    as ints, strings trimmed (paths normalised, ids stripped of volatile parts by their key or
    shape); strings holding JSON are compared as that JSON."""
    if isinstance(value, dict):
        return {
            str(k): normalise_value(v, str(k)) for k, v in sorted(value.items()) if v is not None
        }
    if isinstance(value, list | tuple):
        return [normalise_value(v, key) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if not isinstance(value, str):
        return value
    v = " ".join(value.split()) if "\n" not in value else value.strip()
    if v[:1] in "[{":
        try:
            return normalise_value(json.loads(v), key)
        except ValueError:
            pass
    if _PATH_KEY.search(key) or (" " not in v and _PATHLIKE.match(v)):
        v = normalise_path(v)
    if _ID_KEY.search(key) or (" " not in v and (_UUID.search(v) or _HEX.search(v))):
        v = strip_volatile(v)
    return v


Comparator = Callable[[Any, Any], bool]


def arguments_equivalent(a: Any, b: Any) -> bool:
    """The generic comparator: the same after :func:`normalise_value`."""
    return bool(normalise_value(a) == normalise_value(b))


#: per-tool comparators (tool name → comparator); the generic one for every other tool
_COMPARATORS: dict[str, Comparator] = {}


def register_comparator(tool: str, comparator: Comparator) -> None:
    """Compare this tool's arguments with ``comparator`` instead of the generic one (a tool
    whose arguments hold free text, a query whose word order does not matter, …)."""
    _COMPARATORS[tool] = comparator


def comparator_for(tool: str) -> Comparator:
    return _COMPARATORS.get(tool, arguments_equivalent)


def stated_values(text: str) -> frozenset[str]:
    """The specific values a message states — numbers, ids, paths, names of things —, through
    the flow judge's fact extraction (normalised: ``$1,339.00`` and ``1339`` are one)."""
    if not text.strip():
        return frozenset()
    facts = message_facts(Message("assistant", (Part.text(text),)))
    return frozenset(t for f in facts for t in f.tokens if shape_floor(t) >= 0.5)


@dataclass(frozen=True)
class Comparison:
    """How two actions compare; ``match`` when nothing differs."""

    same_kind: bool
    same_tools: bool
    same_arguments: bool
    same_facts: bool
    differences: tuple[str, ...] = ()

    @property
    def match(self) -> bool:
        return not self.differences

    def as_dict(self) -> dict[str, Any]:
        return {
            "match": self.match,
            "same_kind": self.same_kind,
            "same_tools": self.same_tools,
            "same_arguments": self.same_arguments,
            "same_facts": self.same_facts,
            "differences": list(self.differences),
        }


def compare_actions(a: NextAction, b: NextAction, fact_agreement: float = 0.75) -> Comparison:
    """Whether ``a`` does what ``b`` does: the same kind, the same tools (as a multiset, in any
    order), equivalent arguments call by call, and — for messages — the values stated agree
    (their Jaccard overlap at least ``fact_agreement``; two messages stating none agree)."""
    diffs: list[str] = []
    same_kind = a.kind == b.kind
    if not same_kind:
        diffs.append(f"kind {a.kind} ≠ {b.kind}")
    same_tools = a.tools == b.tools
    if not same_tools:
        diffs.append(f"tools {list(a.tools)} ≠ {list(b.tools)}")
    same_arguments = True
    if same_tools and a.calls:
        left = sorted(a.calls, key=lambda c: (c.name, _compact(normalise_value(c.arguments))))
        right = sorted(b.calls, key=lambda c: (c.name, _compact(normalise_value(c.arguments))))
        for x, y in zip(left, right, strict=True):
            if not comparator_for(x.name)(x.arguments, y.arguments):
                same_arguments = False
                diffs.append(
                    f"{x.name} arguments {_compact(x.arguments)[:80]} ≠ {_compact(y.arguments)[:80]}"
                )
    same_facts = True
    if same_kind and a.kind == "message":
        fa, fb = stated_values(a.text), stated_values(b.text)
        union = fa | fb
        overlap = len(fa & fb) / len(union) if union else 1.0
        if overlap < fact_agreement:
            same_facts = False
            only = sorted(fb - fa)[:5]
            extra = sorted(fa - fb)[:5]
            diffs.append(
                f"stated values differ (overlap {overlap:.2f}): missing {only}, other {extra}"
            )
    return Comparison(same_kind, same_tools, same_arguments, same_facts, tuple(diffs))


# --- locating what the view lost ------------------------------------------------------------


def action_values(action: NextAction) -> list[tuple[str, str]]:
    """The values an action depends on, as ``(where, value)``: each scalar argument (where:
    ``tool.key``) and each value its text states (where: ``message``)."""
    out: list[tuple[str, str]] = []

    def walk(tool: str, key: str, v: Any) -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                walk(tool, str(k), x)
        elif isinstance(v, list):
            for x in v:
                walk(tool, key, x)
        elif isinstance(v, str | int | float) and not isinstance(v, bool):
            text = str(v).strip()
            if len(text) >= 3:
                out.append((f"{tool}.{key}" if key else tool, text))

    for c in action.calls:
        walk(c.name, "", c.arguments)
    if action.text:
        out.extend(("message", v) for v in sorted(stated_values(action.text)) if len(v) >= 3)
    return out


def _holder(index: ObjectIndex, at: int) -> str | None:
    """The context object that holds prefix message ``at``."""
    owner = owner_of(index).get(at)
    if owner is not None:
        return owner.id
    for obj in index.objects:
        if at in obj.messages:
            return obj.id
    return None


_LOCATOR_WHERE = re.compile(
    r"(?:^|[._\-])(?:id|ids|path|file|url|uri|email|handle|key|name|ref)$", re.I
)


def _category(
    where: str, value: str, source: Message, object_id: str | None, item: JudgeInput, hidden: bool
) -> str:
    """The six-category taxonomy, for a value of the baseline action the view no longer holds."""
    if hidden or ROUTE.search(value):
        return "recovery_routing"
    obj = item.index.by_id.get(object_id or "")
    if source.is_error or (obj is not None and obj.is_error):
        return "live_state"
    if source.role == "user" and any(
        squash(value).lower() in squash(s).lower() and is_constraint(s)
        for s in re.split(r"(?<=[.!?])\s+", source.text)
    ):
        return "behavioural_contract"
    if len(value) >= 40:
        return "verbatim_source"
    if _LOCATOR_WHERE.search(where) or _PATHLIKE.match(value) or shape_floor(value.lower()) >= 1.0:
        return "locator_handle"
    return "evidence_detail"


class _Text:
    """A text values are looked for in: whitespace-free and case-folded for arguments (as
    written), and as normalised tokens for the values a message states (``$1,339.00`` holds
    ``1339``)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.squashed = squash(text).lower()
        self._tokens: frozenset[str] | None = None

    def holds(self, value: str, where: str) -> bool:
        if squash(value).lower() in self.squashed:
            return True
        if where != "message" or not self.text:
            return False
        if self._tokens is None:
            self._tokens = token_set(self.text)
        return value in self._tokens


def locate_losses(
    item: JudgeInput, baseline: NextAction, need_seq: int | None
) -> tuple[list[Loss], int, int]:
    """The values of the baseline action the prefix holds and the view does not, as losses
    (the latest prefix message holding each is its source); and how many values the prefix
    held (the dependencies), of which how many only an archive with a visible pointer keeps
    (recoverable: a loss all the same, since the model did not recover it)."""
    where_of: dict[str, str] = {}
    for where, value in action_values(baseline):
        where_of.setdefault(value, where)
    if not where_of:
        return [], 0, 0
    prefix = [_Text(parts_text(m.parts)) for m in item.prefix]
    view = _Text("\n".join(parts_text(m.parts) for m in item.view))
    recoverable_text = hidden_text = _Text("")
    if item.archives:
        found = availability(item, parts_text)
        recoverable_text, hidden_text = _Text(found.recoverable), _Text(found.unrouted)
    losses: list[Loss] = []
    dependencies = recoverable = 0
    for value, where in where_of.items():
        at = next(
            (i for i in range(len(prefix) - 1, -1, -1) if prefix[i].holds(value, where)), None
        )
        if at is None:
            continue  # not from the prefix: the model's own, or the task's general knowledge
        dependencies += 1
        if view.holds(value, where):
            continue
        in_archive = recoverable_text.holds(value, where)
        recoverable += in_archive
        hidden = not in_archive and hidden_text.holds(value, where)
        source = item.prefix[at]
        object_id = _holder(item.index, at)
        detail = f"{where} of the baseline action, held by prefix message {source.seq}"
        if in_archive:
            detail += " (recoverable through a visible pointer, not recovered)"
        losses.append(
            Loss(
                _category(where, value, source, object_id, item, hidden),
                value[:500],
                object_id,
                need_seq,
                detail,
            )
        )
    return losses, dependencies, recoverable


# --- the judge ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Asked:
    """One request's outcome: an action, or why there is none."""

    action: NextAction | None
    problem: str | None
    completion: Completion | None = None
    attempts: int = 0
    prompt_hash: str | None = None


def _spend(spent: Spend, asked: _Asked) -> None:
    if asked.completion is None:
        spent.failed(asked.attempts)
    else:
        spent.add(asked.completion)


def _unscored(what: str, problem: str | None) -> str:
    """The reason of an unscored verdict: a transient failure keeps the client's own words
    (``model call failed: http 500 after 4 attempts``), so that ``judge --retry-unscored`` asks
    it again (``raw`` says which request failed); any other problem says which answer is
    missing."""
    if is_transient(problem):
        return str(problem)
    return f"{what}: {problem}"


@judge("counterfactual")
class CounterfactualJudge(ModelJudge):
    """Counterfactual next-action replay (the online test of JetBrains' "Complexity Trap",
    offline): the model acts on the view and on the full prefix; impact when the actions differ."""

    reads_token_counts: ClassVar[bool] = False
    reads_session_tools: ClassVar[bool] = True

    @dataclass(frozen=True)
    class Params(EndpointParams):
        """The model's endpoint (the model judge's), then how it is asked and compared."""

        temperature: float = param(0.0, "sampling temperature of every request", ge=0)
        seed: int = param(0, "seed sent with every request (where the endpoint takes one)", ge=0)
        max_tokens: int = param(512, "most tokens of the model's next action", ge=1)
        tools: str = param(
            "auto",
            "tools sent: auto (the trace's definitions, else derived from its calls), session, "
            "derived, none",
            choices=TOOL_MODES,
        )
        fact_agreement: float = param(
            0.75,
            "two messages match when this share of the values they state (Jaccard) agree",
            ge=0,
            le=1,
        )
        max_prompt_tokens: int = param(
            0,
            "a prefix holding more stored tokens than this is unscored, not sent (0: no limit)",
            ge=0,
        )

    def __init__(self, params: CounterfactualJudge.Params | None = None) -> None:
        super().__init__(params)
        #: request key → its outcome, for requests the endpoint refused for good
        self._refused: dict[str, _Asked] = {}

    # --- requests -----------------------------------------------------------------------------

    def call_args(self, tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """The keyword arguments of every request of a case (``ModelClient.complete``)."""
        p = self.params
        return {
            "tools": list(tools) or None,
            "tool_choice": "auto" if tools else None,
            "temperature": p.temperature,
            "seed": p.seed,
            "max_tokens": p.max_tokens,
        }

    def requests(self, item: JudgeInput) -> dict[str, Any]:
        """The two chat-completions bodies of a (case, policy) as they are sent — ``view`` and
        ``baseline`` — and where the tools came from (``tools_from``)."""
        tools, source = tools_for(item, self.params.tools)
        args = self.call_args(tools)
        return {
            "view": self.client.request_body(to_openai(item.view), **args),
            "baseline": self.client.request_body(to_openai(item.prefix), **args),
            "tools_from": source,
        }

    def _ask(self, messages: Sequence[Message], args: Mapping[str, Any]) -> _Asked:
        """One request's action. A request the endpoint refused for good (a 4xx: too long,
        invalid) is remembered for the process, so a case's other policies do not send its
        baseline again (errors are never cached on disk: a later run asks again)."""
        body = to_openai(messages)
        key = self.client.prompt_hash(body, **args)
        refused = self._refused.get(key)
        if refused is not None:
            return replace(refused, attempts=0)
        try:
            c = self.client.complete(body, **args)
        except ModelCallError as e:
            asked = _Asked(None, f"model call failed: {e.reason}", None, e.attempts, key)
            if e.status is not None and 400 <= e.status < 500 and e.status not in (408, 409, 429):
                self._refused[key] = asked
            return asked
        problem = action_problem(c)
        if problem is not None:
            return _Asked(None, problem, c, c.attempts, c.prompt_hash)
        return _Asked(action_from_completion(c), None, c, c.attempts, c.prompt_hash)

    # --- the verdict ----------------------------------------------------------------------------

    def judge(self, item: JudgeInput) -> Verdict:
        p = self.params
        if p.max_prompt_tokens and sum(m.tokens for m in item.prefix) > p.max_prompt_tokens:
            return Verdict.unscored(
                f"baseline not asked: the prefix holds {sum(m.tokens for m in item.prefix)} "
                f"tokens, over max_prompt_tokens={p.max_prompt_tokens}"
            )
        tools, source = tools_for(item, p.tools)
        args = self.call_args(tools)
        baseline = self._ask(item.prefix, args)
        spent = Spend()
        _spend(spent, baseline)
        recorded = recorded_action(item.future)
        doc: dict[str, Any] = {
            "tools_from": source,
            "tools": len(tools),
            "recorded": recorded[0].as_dict() if recorded else None,
            "baseline": baseline.action.as_dict() if baseline.action else None,
        }
        if baseline.action is None:
            doc["baseline_problem"] = baseline.problem
            return Verdict.unscored(
                _unscored("baseline unavailable", baseline.problem),
                usage=spent.usage(),
                cache_hit=spent.cache_hit,
                prompt_hash=baseline.prompt_hash,
                raw=json.dumps(doc, ensure_ascii=False),
            )
        view = self._ask(item.view, args)
        _spend(spent, view)
        doc["view"] = view.action.as_dict() if view.action else None
        common: dict[str, Any] = {
            "usage": spent.usage(),
            "cache_hit": spent.cache_hit,
            "prompt_hash": view.prompt_hash,
        }
        if view.action is None:
            doc["view_problem"] = view.problem
            return Verdict.unscored(
                _unscored("view's action unavailable", view.problem),
                raw=json.dumps(doc, ensure_ascii=False),
                **common,
            )
        versus = compare_actions(view.action, baseline.action, p.fact_agreement)
        doc["view_vs_baseline"] = versus.as_dict()
        if recorded is not None:
            rec, _ = recorded
            doc["view_vs_recorded"] = compare_actions(view.action, rec, p.fact_agreement).as_dict()
            doc["baseline_vs_recorded"] = compare_actions(
                baseline.action, rec, p.fact_agreement
            ).as_dict()
        need_seq = recorded[1] if recorded else (item.future[0].seq if item.future else None)
        losses, dependencies, recoverable = locate_losses(item, baseline.action, need_seq)
        doc["dependencies"] = dependencies
        line = f"view: {view.action.describe(100)} · baseline: {baseline.action.describe(100)}" + (
            f" · recorded: {recorded[0].describe(100)}" if recorded else ""
        )
        raw = json.dumps(doc, ensure_ascii=False)
        if versus.match:
            return Verdict(
                "no_impact",
                reason=f"same action as the baseline · {line}"[:1000],
                dependencies=dependencies,
                raw=raw,
                **common,
            )
        located = f"{len(losses)} located" if losses else "the missing information not located"
        return Verdict(
            "impact",
            losses=tuple(losses),
            reason=f"{'; '.join(versus.differences)} ({located}) · {line}"[:1000],
            dependencies=dependencies,
            recoverable=recoverable,
            raw=raw,
            **common,
        )
