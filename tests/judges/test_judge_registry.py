"""A built-in judge named on its own loads its own module only (issue 15): ``ctxreplay judge
flow`` does not import the probe judge's statistics packages."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ctxreplay.judges.base import BUILTIN_MODULES, judges


@pytest.mark.parametrize("name", sorted(BUILTIN_MODULES))
def test_each_builtin_judge_is_in_its_module(name: str) -> None:
    """The map names the module that registers each judge, and every judge is in it."""
    assert judges.get(name).__module__ == f"ctxreplay.judges.{BUILTIN_MODULES[name]}"
    assert set(judges.names()) >= set(BUILTIN_MODULES)


def test_a_builtin_judge_loads_its_module_alone() -> None:
    code = (
        "import sys\n"
        "from ctxreplay.judges.base import make_judge, judges\n"
        "j = make_judge('flow')\n"
        "print(type(j).__module__, 'ctxreplay.judges.probe' in sys.modules,"
        " 'statsmodels' in sys.modules)\n"
        "print(sorted(judges.names()))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out[0] == "ctxreplay.judges.flow.judge False False"
    # asking for every name still loads every judge
    assert eval(out[1]) == sorted({*BUILTIN_MODULES, *eval(out[1])})
    assert set(eval(out[1])) >= set(BUILTIN_MODULES)
