"""Options shared by several commands, declared once, and the path kinds commands expect.

Every option shows its environment variable in ``--help`` (``show_envvar``); an option's Python
name is its flag's name, so the variable is ``CTXREPLAY_<COMMAND>_<FLAG>`` with dashes as
underscores, as the README says.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ..datasets.cases import check_cases_file
from ..datasets.store import Corpus
from ..judges.base import DEFAULT_JUDGE
from ..runs import Run

F = TypeVar("F", bound=Callable[..., Any])

#: ``click.option`` with the environment variable shown in ``--help``
option = functools.partial(click.option, show_envvar=True)


def _combine(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    def apply(f: F) -> F:
        for d in reversed(decorators):
            f = d(f)
        return f

    return apply


def out(help: str, *, required: bool = True, default: Path | None = None) -> Callable[[F], F]:
    """``-o/--out``: where a command writes."""
    return option(
        "-o",
        "--out",
        required=required and default is None,
        default=default,
        type=click.Path(path_type=Path),
        help=help,
    )


quiet = option("--quiet", is_flag=True, help="No progress bars.")
seed = option("--seed", type=click.IntRange(min=0), default=0, help="Random seed.")
workers = option("--workers", type=click.IntRange(min=1), default=2, help="Worker processes.")
tariff = _combine(
    option(
        "--tariff", default=None, help="Tariff name from the tariffs file [default: its default]."
    ),
    option(
        "--tariffs",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        default=None,
        help="A tariffs TOML file instead of the built-in prices.",
    ),
)
endpoint = _combine(
    option("--base-url", default=None, help="OpenAI-compatible endpoint (llm judge)."),
    option("--model", default=None, help="Model name (llm judge)."),
    option(
        "--api-key-env",
        default=None,
        help="Environment variable holding the API key [default: OPENAI_API_KEY].",
    ),
)


def judge(
    default: str | None = DEFAULT_JUDGE, help: str = "Judge label or name."
) -> Callable[[F], F]:
    return option("--judge", default=default, help=help)


def _check_kind(kind: str) -> Callable[[click.Context, click.Parameter, Path | None], Path | None]:
    """Open the path as a ``kind`` before the command does any work, so a wrong kind of path
    (a run given where a corpus is expected, a Parquet file that is not a cases file) is one
    clear line, not a traceback half way through."""

    def check(_ctx: click.Context, _param: click.Parameter, value: Path | None) -> Path | None:
        if value is not None:
            if kind == "corpus":
                Corpus(value)
            elif kind == "run":
                Run(value)
            else:
                check_cases_file(value if value.is_file() else value / "cases.parquet")
        return value

    return check


def folder(kind: str) -> Callable[[F], F]:
    """The positional ``corpus`` or ``run`` argument, checked to be one."""
    return click.argument(
        kind, type=click.Path(exists=True, path_type=Path), callback=_check_kind(kind)
    )


cases = option(
    "--cases",
    required=True,
    type=click.Path(exists=True, path_type=Path),
    callback=_check_kind("cases"),
    help="Cases file from `ctxreplay cases`.",
)
