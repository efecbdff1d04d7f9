"""Judges: one module per judge, registered by name; the plugin kit, from one module.

A third-party judge imports what it needs from here (``__all__``): it subclasses ``Judge``,
nests its ``Params`` (fields made with ``param``), and turns a ``JudgeInput`` (the prefix, the
view, the real future, the archives) into a ``Verdict`` whose ``Loss`` es name what the view lost.
It is found through an entry point in the group ``ctxreplay.judges`` (``ctxreplay.registry``).
The names are imported when first used: the judges' base needs the corpus store (pyarrow), which
importing this package, or a judge's helper module, does not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..registry import lazy_exports

if TYPE_CHECKING:
    from ..datasets.messages import Message, Part, Session
    from ..registry import NoParams, param
    from ..replay.objects import ContextObject, ObjectIndex
    from ..replay.view import Archive
    from .base import (
        Availability,
        Judge,
        JudgeInput,
        JudgeUsage,
        Label,
        Loss,
        Verdict,
        availability,
        judge,
        judges,
        make_judge,
        parts_text,
        rendered,
        tally,
        token_text,
    )

__getattr__ = lazy_exports(
    __name__,
    {
        "ctxreplay.datasets.messages": ("Message", "Part", "Session"),
        "ctxreplay.registry": ("NoParams", "param"),
        "ctxreplay.replay.objects": ("ContextObject", "ObjectIndex"),
        "ctxreplay.replay.view": ("Archive",),
        "ctxreplay.judges.base": (
            "Availability",
            "Judge",
            "JudgeInput",
            "Label",
            "Loss",
            "JudgeUsage",
            "Verdict",
            "availability",
            "judge",
            "judges",
            "make_judge",
            "parts_text",
            "rendered",
            "tally",
            "token_text",
        ),
    },
)

__all__ = [
    "Archive",
    "Availability",
    "ContextObject",
    "Judge",
    "JudgeInput",
    "JudgeUsage",
    "Label",
    "Loss",
    "Message",
    "NoParams",
    "ObjectIndex",
    "Part",
    "Session",
    "Verdict",
    "availability",
    "judge",
    "judges",
    "make_judge",
    "param",
    "parts_text",
    "rendered",
    "tally",
    "token_text",
]
