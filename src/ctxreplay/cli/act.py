"""``ctxreplay act``: the counterfactual next-action judge under its own name.

``ctxreplay act RUN --base-url … --model …`` is ``ctxreplay judge RUN --judge counterfactual``
(it runs that command) with the same options: usage, cost and the response cache go through the
shared model client, so a re-run makes no call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from .app import main
from .judge import judge_cmd
from .options import engine, folder, judging, option, quiet, workers


@main.command("act")
@folder("run")
@judging
@option(
    "--tools",
    type=click.Choice(["auto", "session", "derived", "none"]),
    default=None,
    help="Tool definitions sent: the trace's, derived from its calls, or none [default: auto].",
)
@workers
@engine
@quiet
@click.pass_context
def act_cmd(ctx: click.Context, run: Path, tools: str | None, **options: Any) -> None:
    """Ask a model for its next action on each view and on the full prefix (the baseline):
    no impact when they match. Equal to `ctxreplay judge RUN --judge counterfactual`."""
    spec = "counterfactual" if tools is None else f"counterfactual:tools={tools}"
    ctx.invoke(judge_cmd, run=run, judge=spec, **options)
