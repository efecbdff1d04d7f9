"""The ``ctxreplay`` group and its one error contract.

A ``CtxreplayError`` (bad input, options or files) becomes one line on stderr, ``error: …``, and
exit status 2, here and nowhere else; so does each of click's own usage errors (a value out of
range, a missing path, an unknown option), with the command's help named; anything else is a
bug and keeps its traceback.
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


def usage_line(e: click.UsageError) -> str:
    """Click's usage error as the one line: what is wrong, and where the help is."""
    message = " ".join(e.format_message().split())
    command = e.ctx.command_path if e.ctx is not None else "ctxreplay"
    return f"{message} (see '{command} --help')"


class Group(click.Group):
    """Maps ``CtxreplayError`` and click's usage errors to one line and exit 2, once for every
    command."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["standalone_mode"] = False
        try:
            code = super().main(*args, **kwargs)
        except click.exceptions.NoArgsIsHelpError as e:  # a group given no command: its help
            click.echo(e.ctx.get_help() if e.ctx is not None else "")
            sys.exit(e.exit_code)
        except click.UsageError as e:
            fail(usage_line(e), USER_ERROR)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        except click.ClickException as e:
            e.show()
            sys.exit(e.exit_code)
        # standalone_mode=False returns an exit's code (--help, --version) instead of exiting
        sys.exit(code if isinstance(code, int) else 0)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CtxreplayError as e:
            message = str(e).strip().splitlines() or [type(e).__name__]
            fail(message[0] if len(message) == 1 else "; ".join(message), USER_ERROR)


@click.group(
    "ctxreplay",
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
