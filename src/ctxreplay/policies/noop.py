"""``noop``: the reference policy that keeps every object (0% pruned)."""

from __future__ import annotations

from dataclasses import dataclass

from ..replay.context import PrefixContext
from ..replay.plan import Plan
from .base import Policy, policy
from .budget import Need


@policy("noop")
class Noop(Policy):
    """Keeps everything: the view is the prefix itself.

    Anchor: none; it is the reference row of every comparison (pruning rate exactly 0.0, and the
    no-impact rate a judge gives the unedited prefix). No parameters.
    """

    @dataclass(frozen=True)
    class Params:
        """None: noop has no parameters."""

    def propose(self, ctx: PrefixContext, need: Need) -> Plan:
        return Plan()
