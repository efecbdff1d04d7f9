"""Library values that options' defaults and help texts show, and the judges ``--judge`` lists.

The modules that define them load polars, pyarrow and the judges' models; copied here, building
the command tree (and printing any help) loads none of them. ``tests/cli/test_startup.py``
checks every copy against its source.
"""

from __future__ import annotations

import sys
from importlib.metadata import entry_points

#: ``judges.base.DEFAULT_JUDGE``: the judge used when none is named
DEFAULT_JUDGE = "flow"
#: the names of ``judges.base.BUILTIN_MODULES``: the judges the package itself registers
BUILTIN_JUDGES = ("anchor", "counterfactual", "deps", "flow", "llm", "probe", "truth")
#: ``judges.base.judges.group``: the entry-point group third-party judges register in
JUDGES_GROUP = "ctxreplay.judges"
#: ``reports.tables.EXAMPLES``: example losses a report shows
EXAMPLES = 10
#: ``reports.formatting.DEFAULT_WIDTH``: line width when the output is not a terminal
DEFAULT_WIDTH = 100
#: ``reports.formatting.MIN_WIDTH``: the narrowest width a renderer accepts
MIN_WIDTH = 40


def registered_judges() -> list[str]:
    """Every judge ``judges.names()`` lists, sorted. Once the registry is loaded (a judge
    registered in this process) it is asked; before, the built-ins and the entry points' names
    are listed without importing a judge."""
    registry = sys.modules.get("ctxreplay.judges.base")
    if registry is not None:
        names: list[str] = registry.judges.names()
        return names
    return sorted({*BUILTIN_JUDGES, *(ep.name for ep in entry_points(group=JUDGES_GROUP))})
