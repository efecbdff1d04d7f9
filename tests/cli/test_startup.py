"""The CLI loads what its command tree needs and nothing else: importing it and printing every
command's help, in a fresh interpreter, loads none of the heavy libraries the commands use; the
values the help shows without loading their modules are the library's."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

from builders import load_benchmark

#: libraries only a command's work needs (the benchmark times the same list)
HEAVY = list(load_benchmark("bench_cli_startup").HEAVY)


def in_fresh_python(code: str) -> Any:
    """What ``code`` prints as JSON on its last line, run in a new interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_every_help_is_printed_without_a_heavy_library() -> None:
    result = in_fresh_python(
        f"""
        import json, sys

        import click
        from click.testing import CliRunner

        from ctxreplay.cli import main

        def paths(command, path):
            yield path
            if isinstance(command, click.Group):
                for name, sub in command.commands.items():
                    yield from paths(sub, [*path, name])

        helps = {{}}
        for path in paths(main, []):
            out = CliRunner().invoke(main, [*path, "--help"])
            helps[" ".join(path)] = (out.exit_code, out.output.startswith("Usage: "))
        loaded = [m for m in {HEAVY!r} if m in sys.modules]
        print(json.dumps({{"helps": helps, "loaded": loaded}}))
        """
    )
    helps = result["helps"]
    assert {"", "judge", "report", "view", "local-model", "local-model serve"} <= set(helps)
    assert all(h == [0, True] for h in helps.values()), helps
    assert result["loaded"] == []


def test_the_help_lists_the_judges_the_registry_has() -> None:
    """Listed before the registry loads (the built-ins copied, the entry points read), the
    judges are those it then names."""
    before, after = in_fresh_python(
        """
        import json

        from ctxreplay.cli.defaults import registered_judges

        before = registered_judges()
        from ctxreplay.judges.base import judges

        print(json.dumps([before, judges.names()]))
        """
    )
    assert before == after


def test_the_copied_values_are_the_library_s() -> None:
    from ctxreplay.cli import defaults
    from ctxreplay.judges.base import DEFAULT_JUDGE, judges
    from ctxreplay.reports.formatting import DEFAULT_WIDTH, MIN_WIDTH
    from ctxreplay.reports.tables import EXAMPLES

    assert defaults.DEFAULT_JUDGE == DEFAULT_JUDGE
    assert judges.group == defaults.JUDGES_GROUP
    assert (defaults.EXAMPLES, defaults.DEFAULT_WIDTH, defaults.MIN_WIDTH) == (
        EXAMPLES,
        DEFAULT_WIDTH,
        MIN_WIDTH,
    )


def test_every_name_of_reports_loads() -> None:
    """``ctxreplay.reports`` loads its names on first use: each one it exports is there."""
    import ctxreplay.reports as reports
    from ctxreplay.reports import stats

    for name in reports.__all__:
        assert getattr(reports, name) is not None, name
    assert reports.wilson is stats.wilson
    assert reports.EXPORT_FORMATS is sys.modules["ctxreplay.reports.exports"].FORMATS
    assert set(reports.__all__) <= set(dir(reports))
