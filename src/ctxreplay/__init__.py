"""ctxreplay: replay recorded agent traces through context-management policies, offline.

The public names are importable from here (loaded on first use, so ``import ctxreplay`` stays
cheap)::

    from ctxreplay import replay_messages
    outcome = replay_messages(openai_messages, "tool-prune:keep=1")
"""

from __future__ import annotations

import os
from importlib import import_module
from typing import Any

from .version import __version__

#: whether the user chose Arrow's allocator (``ARROW_DEFAULT_MEMORY_POOL``) before ctxreplay did.
#: Arrow reads that variable once, when pyarrow is first imported, for every buffer its C++ code
#: allocates (Parquet readers and writers included), so it is set here, before any module of
#: the package imports pyarrow: see ``arrow_memory``.
ARROW_POOL_CHOSEN = bool(os.environ.get("ARROW_DEFAULT_MEMORY_POOL"))
if not ARROW_POOL_CHOSEN:
    os.environ["ARROW_DEFAULT_MEMORY_POOL"] = "system"

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
