"""``ctxreplay local-model serve``: the local SmolLM2 server, for the llm judge and planners.

Thin: parse options, start :class:`~ctxreplay.llm.local.LocalModelServer`, print where it
listens, wait for Ctrl-C.
"""

from __future__ import annotations

import time

import click

from ..llm.local import LocalModelServer, LocalModelUnavailable

DEFAULT_PORT = 8089


@click.group("local-model")
def local_model() -> None:
    """A small real model (SmolLM2-135M-Instruct) served offline on 127.0.0.1."""


@local_model.command("serve")
@click.option(
    "--port", type=int, default=DEFAULT_PORT, show_default=True, help="0 picks a free port."
)
@click.option("--ctx", "n_ctx", type=int, default=8192, show_default=True, help="Context size.")
@click.option(
    "--threads", type=int, default=None, help="CPU threads [default: half the cores, 1-4]."
)
@click.option("--parallel", type=int, default=1, show_default=True, help="Request slots.")
@click.option("--verbose", is_flag=True, help="Show llama.cpp's log on stderr.")
def serve(port: int, n_ctx: int, threads: int | None, parallel: int, verbose: bool) -> None:
    """Serve the model until Ctrl-C; prints the base URL to pass as base_url."""
    server = LocalModelServer(
        port=port, n_ctx=n_ctx, threads=threads, parallel=parallel, verbosity=3 if verbose else 0
    )
    try:
        server.start()
    except LocalModelUnavailable as e:
        raise click.ClickException(str(e)) from None
    click.echo(server.base_url)
    click.echo(
        f"model {server.model}; use e.g. --judge 'llm:base_url={server.base_url},"
        f"model={server.model},tariff=local'. Ctrl-C stops.",
        err=True,
    )
    try:
        while True:  # short sleeps keep the main thread ready for Ctrl-C
            time.sleep(0.25)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
