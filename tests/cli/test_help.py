"""Help texts list what is registered, not a list written once: a judge added by a plugin
appears in ``--judge``'s help like the built-ins."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from click.testing import CliRunner

from ctxreplay.cli import main
from ctxreplay.judges.base import Judge, JudgeInput, Verdict, judges


@pytest.fixture
def extra_judge():
    @dataclass(frozen=True)
    class Params:
        pass

    class Extra(Judge):
        """A judge registered by a test, as an entry point would."""

        def judge(self, item: JudgeInput) -> Verdict:
            return Verdict.unscored("test")

    Extra.Params = Params
    judges.register("extra-test-judge")(Extra)
    yield "extra-test-judge"
    judges._items.pop("extra-test-judge", None)


@pytest.mark.parametrize("command", ["judge", "calibrate"])
def test_judge_help_lists_every_registered_judge(command: str, extra_judge: str) -> None:
    out = CliRunner().invoke(main, [command, "--help"], terminal_width=400)
    assert out.exit_code == 0, out.output
    flat = " ".join(out.output.split())
    for name in judges.names():
        shown = "deps:path=LABELS" if name == "deps" else name
        assert shown in flat, name
    assert {"counterfactual", "probe", extra_judge} <= set(judges.names())
