"""Options shared by several commands, declared once, and the path kinds commands expect.

Every option shows its environment variable in ``--help`` (``show_envvar``); an option's Python
name is its flag's name, so the variable is ``CTXREPLAY_<COMMAND>_<FLAG>`` with dashes as
underscores, as the README says.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

import click

from .defaults import DEFAULT_JUDGE, registered_judges

F = TypeVar("F", bound=Callable[..., Any])

#: ``click.option`` with the environment variable shown in ``--help``
option = functools.partial(click.option, show_envvar=True)


def _combine(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    def apply(f: F) -> F:
        for d in reversed(decorators):
            f = d(f)
        return f

    return apply


#: what a command does with a URI it is given: pass it on (the code reads or writes it through
#: ``storage``), work on a local copy uploaded when the command ends ("stage"; "write": without
#: downloading what is there first), or read a local copy ("read")
Remote = Literal["native", "stage", "write", "read"]


class Location(click.ParamType):
    """A local path (as ``click.Path``) or a URI ``pyarrow.fs`` opens (``s3://bucket/prefix``):
    a URI is checked to exist when it must, and then passed on as a string or staged (a local
    copy for the command, uploaded when its context closes: ``storage.Staged``)."""

    name = "path"

    def __init__(
        self,
        *,
        exists: bool = False,
        file_okay: bool = True,
        dir_okay: bool = True,
        remote: Remote = "native",
    ) -> None:
        self.exists, self.remote = exists, remote
        self.local = click.Path(
            exists=exists, file_okay=file_okay, dir_okay=dir_okay, path_type=Path
        )

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from .. import storage

        if isinstance(value, Path) or not storage.is_uri(str(value)):
            return self.local.convert(value, param, ctx)
        uri = str(storage.location(str(value)))
        if self.exists and not storage.exists(uri):
            self.fail(f"{storage.redact(uri)} does not exist.", param, ctx)
        if self.remote == "native":
            return uri
        stage = storage.Staged(uri, fetch=self.remote != "write")
        close = (
            functools.partial(stage.close, upload_changes=False)
            if self.remote == "read"
            else stage.close
        )
        if ctx is not None:
            ctx.call_on_close(close)
        return stage.path


def out(
    help: str, *, required: bool = True, default: Path | None = None, remote: Remote = "stage"
) -> Callable[[F], F]:
    """``-o/--out``: where a command writes; a URI is written through a local copy uploaded
    when the command ends (``remote="native"``: the command writes the URI itself)."""
    return option(
        "-o",
        "--out",
        required=required and default is None,
        default=default,
        type=Location(remote=remote),
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
        type=Location(exists=True, dir_okay=False, remote="read"),
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

#: what ``judge`` and ``act`` take besides the judge: which pairs, the endpoint, how many
judging = _combine(
    option("--policy", multiple=True, help="Only these policies [default: all in the run]."),
    endpoint,
    option("--concurrency", default=None, help="Calls in flight per endpoint (model judges)."),
    option(
        "--limit",
        type=click.IntRange(min=1),
        default=None,
        help="Judge at most N pairs (for trying things out).",
    ),
    option(
        "--retry-unscored",
        is_flag=True,
        help="Also ask again the pairs left unscored by transient model failures (timeouts, "
        "connection errors, 429, 5xx), replacing their verdicts; never those the model answered.",
    ),
)


class ListedOption(click.Option):
    """An option whose help ends with a list made when the help is printed (the registered
    judges, built-ins and entry points alike), not when the CLI loads."""

    def __init__(self, *args: Any, listing: Callable[[], str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.listing = listing

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        base = self.help
        self.help = f"{base} {self.listing()}".strip()
        try:
            return super().get_help_record(ctx)
        finally:
            self.help = base


def judge_names() -> str:
    """The registered judges, for ``--judge``'s help."""
    names = " · ".join("deps:path=LABELS" if n == "deps" else n for n in registered_judges())
    return f"Judges: {names} (name[:key=value,...]; `ctxreplay judges` says what each does)."


def judge(
    default: str | None = DEFAULT_JUDGE, help: str = "Judge label or name."
) -> Callable[[F], F]:
    return option("--judge", default=default, help=help, cls=ListedOption, listing=judge_names)


PathOrUri = Path | str


def _check_kind(
    kind: str,
) -> Callable[[click.Context, click.Parameter, PathOrUri | None], PathOrUri | None]:
    """Open the path as a ``kind`` before the command does any work, so a wrong kind of path
    (a run given where a corpus is expected, a Parquet file that is not a cases file) is one
    clear line, not a traceback half way through."""

    def check(
        _ctx: click.Context, _param: click.Parameter, value: PathOrUri | None
    ) -> PathOrUri | None:
        if value is not None:
            from ..datasets.cases import cases_file_of, check_cases_file
            from ..datasets.store import Corpus
            from ..runs import Run, run_manifest

            if kind == "corpus":
                Corpus(value)
            elif kind == "run":
                Run(value) if isinstance(value, Path) else run_manifest(value)
            else:
                if isinstance(value, Path):
                    check_cases_file(value if value.is_file() else value / "cases.parquet")
                else:
                    check_cases_file(cases_file_of(value))
        return value

    return check


def folder(kind: str, remote: Remote | None = None) -> Callable[[F], F]:
    """The positional ``corpus`` or ``run`` argument, checked to be one. A corpus URI is passed
    on (``Corpus`` reads it); a run URI is staged: the command works on a local copy whose new
    and changed files are uploaded when it ends (``remote="native"``: the command reads and
    writes the URI itself)."""
    return click.argument(
        kind,
        type=Location(exists=True, remote=remote or ("native" if kind == "corpus" else "stage")),
        callback=_check_kind(kind),
    )


cases = option(
    "--cases",
    required=True,
    type=Location(exists=True),
    callback=_check_kind("cases"),
    help="Cases file from `ctxreplay cases`.",
)


engine = _combine(
    option(
        "--engine",
        type=click.Choice(["local", "ray"]),
        default="local",
        help="local: worker processes on this machine; ray: each chunk a Ray task, on a local "
        "Ray or a cluster (pip install 'ctxreplay[ray]'). The output is the same.",
    ),
    option(
        "--ray-address",
        default=None,
        help="With --engine ray: `auto` (the cluster `ray start` joined this node to) or "
        "ray://host:port [default: start a local Ray]. The run folder must be reachable from "
        "every node.",
    ),
)
