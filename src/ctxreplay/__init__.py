"""ctxreplay: replay recorded agent traces through context-management policies, offline.

The public names are importable from here (loaded on first use, so ``import ctxreplay`` stays
cheap)::

    from ctxreplay import replay_messages
    outcome = replay_messages(openai_messages, "tool-prune:keep=1")
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from . import arrow_memory  # noqa: F401  (first: it chooses Arrow's allocator before pyarrow loads)
from .version import __version__

#: public name → the module that defines it
_EXPORTS = {
    "replay_messages": "api",
    "as_messages": "api",
    "view_as_openai": "api",
    "view_request": "api",
    "Message": "datasets.messages",
    "Part": "datasets.messages",
    "Corpus": "datasets.store",
    "Run": "runs",
    "Outcome": "replay.outcome",
    "Policy": "policies.base",
    "make_policy": "policies.base",
    "policy": "policies.base",
    "Judge": "judges.base",
    "judge": "judges.base",
    "make_judge": "judges.base",
    "import_paths": "datasets.ingest",
    "cut_corpus": "datasets.cases",
    "run_replay": "engines.replay",
    "run_judge": "engines.judge",
    "build_report": "reports.report",
    "CtxreplayError": "errors",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'ctxreplay' has no attribute {name!r}")
    value = getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
