"""``ctxreplay act``: the counterfactual next-action judge under its own name.

``ctxreplay act RUN --base-url … --model …`` is ``ctxreplay judge RUN --judge counterfactual``
with the same endpoint options: usage, cost and the response cache go through the shared model
client, so a re-run makes no call.
"""

from __future__ import annotations

from pathlib import Path

import click

from .app import main
from .options import endpoint, folder, option, quiet


@main.command("act")
@folder("run")
@option("--policy", multiple=True, help="Only these policies [default: all in the run].")
@endpoint
@option("--concurrency", default=None, help="Calls in flight per endpoint.")
@option(
    "--tools",
    type=click.Choice(["auto", "session", "derived", "none"]),
    default=None,
    help="Tool definitions sent: the trace's, derived from its calls, or none [default: auto].",
)
@option(
    "--limit",
    type=click.IntRange(min=1),
    default=None,
    help="Judge at most N pairs (for trying things out).",
)
@option(
    "--retry-unscored",
    is_flag=True,
    help="Also ask again the pairs left unscored by transient model failures.",
)
@quiet
def act_cmd(
    run: Path,
    policy: tuple[str, ...],
    base_url: str | None,
    model: str | None,
    api_key_env: str | None,
    concurrency: str | None,
    tools: str | None,
    limit: int | None,
    retry_unscored: bool,
    quiet: bool,
) -> None:
    """Ask a model for its next action on each view and on the full prefix (the baseline):
    no impact when they match. Equal to `ctxreplay judge RUN --judge counterfactual`."""
    from ..engines.judge import run_judge

    given = {
        "base_url": base_url,
        "model": model,
        "api_key_env": api_key_env,
        "concurrency": concurrency,
        "tools": tools,
    }
    summary = run_judge(
        run,
        "counterfactual",
        policies=policy or None,
        limit=limit,
        progress=not quiet,
        overrides={k: v for k, v in given.items() if v is not None},
        retry_unscored=retry_unscored,
    )
    click.echo(summary.render())
