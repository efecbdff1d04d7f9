"""``recorded``: replay the context edits the agent really made, when its trace records them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..datasets.messages import arguments_object
from ..registry import param
from ..replay.context import PrefixContext
from ..replay.objects import ContextObject
from ..replay.plan import Edit, Plan
from . import _select as sel
from .base import Policy, policy
from .budget import Need

#: keys under which a context_apply call lists its batch
BATCH_KEYS = ("results", "batch", "items", "edits", "archive", "archives")
ID_KEYS = ("result_id", "id", "handle")
NOTE_KEYS = ("note", "summary", "replacement")


@policy("recorded")
class Recorded(Policy):
    """Replays the ``context_apply`` batches recorded in the trace; nothing else.

    Anchor: the tool surface of agent-controlled forgetting (Franke): the acting model calls
    ``context_apply`` with a batch of ``{result_id, note}`` items, and the harness archives each
    named tool result, leaving the model's note in its place; ``context_recover`` brings an
    original back as a new tool result. Replaying a trace, an applied batch becomes folds with
    the recorded notes (``<ctxreplay:archived id="rN" …>note</…>``); recorded recoveries are
    already in the trace as ordinary tool results, so they need no edit: the stub stays where
    the original was, and the recovered copy is a tool result with its own fresh id, which a
    later batch may archive in turn (naming the original again is "already archived").

    Which batches count: only ``context_apply`` calls answered in the prefix by a result that is
    not an error (the harness accepted them). Like the original harness, a batch with an
    unknown, duplicate, non-tool or already archived result id is rejected whole and replays as
    nothing (listed in ``plan.meta["rejected"]``). Result ids are ``r<N>``, N the session-local
    call number of the function object, shared with ``agent-forgetting``.

    Recorded compactions (Claude Code's ``/compact`` and auto-compact, Codex CLI's ``compacted``
    records): at a case cut right before one (``--trigger compactions``) the agent replaced its
    whole context with the recorded summary. That replays as: every turn but the protected
    latest user message pruned, with its calls, and the recorded summary placed after the system
    prompt. The protected latest user message stays, which the real compaction also summarised:
    the view keeps slightly more than the agent did.

    Parameters: ``tool_name`` the apply tool's name (``context_apply``; MCP-prefixed names such
    as ``mcp__ctx__context_apply`` match too).
    """

    @dataclass(frozen=True)
    class Params:
        tool_name: str = param(
            "context_apply", "the apply tool's name (MCP-prefixed names match too)"
        )

    def handles(self, ctx: PrefixContext) -> dict[str, str]:
        return sel.handles(ctx.index)

    def propose(self, ctx: PrefixContext, need: Need) -> Plan:
        if ctx.recorded_compaction is not None:
            return compaction_plan(ctx, ctx.recorded_compaction)
        edits, rejected = recorded_edits(ctx, self.params.tool_name)
        return Plan(tuple(edits), meta={"rejected": rejected} if rejected else {})


def compaction_plan(ctx: PrefixContext, summary: str) -> Plan:
    """The recorded compaction at this cut: everything but the latest user message goes, the
    recorded summary takes its place."""
    latest = ctx.index.latest_turn
    edits = [
        Edit(t.id, "prune", reason="recorded_compaction")
        for t in ctx.index.turns()
        if t.id != latest and t.tokens > 0
    ]
    edits += [
        Edit(f.id, "prune", reason="recorded_compaction")
        for f in sel.editable_functions(ctx)
        if f.parent == latest
    ]
    return Plan(tuple(edits), summary=summary, meta={"recorded_compaction": True})


def is_apply_tool(tool_name: str | None, name: str = "context_apply") -> bool:
    """``context_apply``, or an MCP-prefixed name such as ``mcp__ctx__context_apply``."""
    return tool_name is not None and (tool_name == name or tool_name.endswith(f"__{name}"))


def recorded_edits(
    ctx: PrefixContext, tool_name: str = "context_apply"
) -> tuple[list[Edit], list[str]]:
    """The folds that the prefix's accepted ``context_apply`` calls made, in order, and the
    batches that replay as nothing (``"<call id>: <why>"``). Shared with ``agent-forgetting``,
    whose acting model sees the prefix as the agent did: with these results already archived."""
    archived: set[str] = set()
    edits: list[Edit] = []
    rejected: list[str] = []
    editable = {f.id for f in sel.editable_functions(ctx)}
    for apply_call in _applied_calls(ctx, tool_name):
        items = batch_items(arguments_object(sel.call_part(ctx, apply_call)))
        batch, problem = _resolve(ctx, apply_call, items, archived, editable)
        if problem is not None:
            rejected.append(f"{apply_call.id}: {problem}")
            continue
        for obj, note in batch:
            archived.add(obj.id)
            edits.append(Edit(obj.id, "fold", note=note, reason=f"recorded:{apply_call.id}"))
    return edits, rejected


def _applied_calls(ctx: PrefixContext, name: str) -> list[ContextObject]:
    """The apply calls the harness accepted: answered in the prefix, not by an error."""
    return [f for f in ctx.index.functions() if is_apply_tool(f.tool_name, name) and not f.is_error]


def _resolve(
    ctx: PrefixContext,
    apply_call: ContextObject,
    items: list[tuple[str, str]] | None,
    archived: set[str],
    editable: set[str],
) -> tuple[list[tuple[ContextObject, str]], str | None]:
    if not items:
        return [], "no batch in the arguments"
    out: list[tuple[ContextObject, str]] = []
    seen: set[str] = set()
    for handle, note in items:
        obj = sel.object_for_handle(ctx.index, handle)
        if obj is None or obj.call_index >= apply_call.call_index:
            return [], f"unknown result id {handle!r}"
        if obj.id in seen:
            return [], f"duplicate result id {handle!r}"
        if obj.id in archived:
            return [], f"result id {handle!r} already archived"
        if obj.id not in editable:
            return [], f"result id {handle!r} is protected"
        seen.add(obj.id)
        out.append((obj, note))
    return out, None


def batch_items(arguments: Any) -> list[tuple[str, str]] | None:
    """``(result_id, note)`` pairs of a context_apply call, whatever key holds the list."""
    if isinstance(arguments, dict):
        for key in BATCH_KEYS:
            if isinstance(arguments.get(key), list):
                arguments = arguments[key]
                break
        else:
            arguments = [arguments]
    if not isinstance(arguments, list):
        return None
    items = []
    for item in arguments:
        if not isinstance(item, dict):
            return None
        handle = next((str(item[k]) for k in ID_KEYS if item.get(k) is not None), None)
        if handle is None:
            return None
        note = next((str(item[k]) for k in NOTE_KEYS if item.get(k) is not None), "")
        items.append((handle, note))
    return items
