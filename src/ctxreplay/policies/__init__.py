"""Policies: one module per policy, registered by name; the plugin kit, from one module.

A third-party policy imports what it needs from here (``__all__``): it subclasses ``Policy``,
nests its ``Params`` (fields made with ``param``; ``BudgetParams`` adds the shared ``target`` and
``budget``), and returns a ``Plan`` of ``Edit`` s of the prefix's ``ContextObject`` s from
``plan(ctx)``. It is found through an entry point in the group ``ctxreplay.policies``
(``ctxreplay.registry``). The names are imported when first used, so importing this package, or
one policy's module, stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..registry import lazy_exports

if TYPE_CHECKING:
    from ..datasets.messages import Message, Part, Session
    from ..registry import NoParams, param
    from ..replay.context import CommitDecision, PrefixContext
    from ..replay.objects import ContextObject, ObjectIndex
    from ..replay.plan import Edit, Plan, PlannerError, Rehearsal, rehearse
    from ..replay.view import View
    from .base import Policy, make_policy, policies, policy
    from .budget import BudgetParams, Need, budget_of, extend, need_for, spend

__getattr__ = lazy_exports(
    __name__,
    {
        "ctxreplay.datasets.messages": ("Message", "Part", "Session"),
        "ctxreplay.registry": ("NoParams", "param"),
        "ctxreplay.replay.context": ("CommitDecision", "PrefixContext"),
        "ctxreplay.replay.objects": ("ContextObject", "ObjectIndex"),
        "ctxreplay.replay.plan": ("Edit", "Plan", "PlannerError", "Rehearsal", "rehearse"),
        "ctxreplay.replay.view": ("View",),
        "ctxreplay.policies.base": ("Policy", "make_policy", "policies", "policy"),
        "ctxreplay.policies.budget": (
            "BudgetParams",
            "Need",
            "budget_of",
            "extend",
            "need_for",
            "spend",
        ),
    },
)

__all__ = [
    "BudgetParams",
    "CommitDecision",
    "ContextObject",
    "Edit",
    "Message",
    "Need",
    "NoParams",
    "ObjectIndex",
    "Part",
    "Plan",
    "PlannerError",
    "Policy",
    "PrefixContext",
    "Rehearsal",
    "Session",
    "View",
    "budget_of",
    "extend",
    "make_policy",
    "need_for",
    "param",
    "policies",
    "policy",
    "rehearse",
    "spend",
]
