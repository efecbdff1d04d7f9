"""The ``ctxreplay`` group and its one error contract.

A ``CtxreplayError`` (bad input, options or files) becomes one line on stderr, ``error: …``, and
exit status 2, here and nowhere else; click's own usage errors keep their usage text and also exit
2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import sys
from typing import Any, NoReturn

import click

from ..errors import CtxreplayError
from ..version import __version__

#: exit status of a user error (bad input, options or files), as click uses for usage errors
USER_ERROR = 2


def fail(message: str, code: int = 1) -> NoReturn:
    """Stop with one line on stderr: 1 for "ran, but the result is a failure", 2 for usage."""
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


class Group(click.Group):
    """Maps ``CtxreplayError`` to one line and exit 2, once for every command."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CtxreplayError as e:
            message = str(e).strip().splitlines() or [type(e).__name__]
            fail(message[0] if len(message) == 1 else "; ".join(message), USER_ERROR)


@click.group(
    cls=Group,
    context_settings={
        "auto_envvar_prefix": "CTXREPLAY",
        "help_option_names": ["-h", "--help"],
        "show_default": True,
    },
)
@click.version_option(__version__, prog_name="ctxreplay")
def main() -> None:
    """Replay recorded agent traces through context-management policies, offline.

    Every option can also be set through the environment variable shown in its help,
    CTXREPLAY_<COMMAND>_<OPTION> (dashes as underscores).
    """


def echo_text(text: object) -> None:
    """Print text that may hold trace content: control characters become visible escapes."""
    from ..reports.formatting import visible_controls

    click.echo(visible_controls(str(text)))
