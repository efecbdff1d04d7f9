"""``ctxreplay local-model serve``: the local SmolLM2 server, for the llm judge and planners.

Thin: parse options, start :class:`~ctxreplay.llm.local.LocalModelServer`, print where it
listens, wait for Ctrl-C.
"""

from __future__ import annotations

import time

import click

from ..llm.local import LocalModelServer, LocalModelUnavailable
from .options import option

DEFAULT_PORT = 8089


@click.group("local-model")
def local_model() -> None:
    """A small real model (SmolLM2-135M-Instruct) served offline on 127.0.0.1."""


@local_model.command("serve")
@option("--port", type=click.IntRange(min=0), default=DEFAULT_PORT, help="0 picks a free port.")
@option("--ctx", type=click.IntRange(min=512), default=8192, help="Context size in tokens.")
@option(
    "--threads",
    type=click.IntRange(min=1),
    default=None,
    help="CPU threads [default: half the cores, 1-4].",
)
@option("--parallel", type=click.IntRange(min=1), default=1, help="Request slots.")
@option("--verbose", is_flag=True, help="Show llama.cpp's log on stderr.")
def serve(port: int, ctx: int, threads: int | None, parallel: int, verbose: bool) -> None:
    """Serve the model until Ctrl-C; prints the base URL to pass as base_url."""
    server = LocalModelServer(
        port=port, n_ctx=ctx, threads=threads, parallel=parallel, verbosity=3 if verbose else 0
    )
    try:
        server.start()
    except LocalModelUnavailable as e:
        raise click.ClickException(str(e)) from None
    try:  # the address is printed inside it: a Ctrl-C right after it is caught too
        click.echo(server.base_url)
        click.echo(
            f"model {server.model}; use e.g. --judge 'llm:base_url={server.base_url},"
            f"model={server.model},tariff=local'. Ctrl-C stops.",
            err=True,
        )
        while True:  # short sleeps keep the main thread ready for Ctrl-C
            time.sleep(0.25)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
