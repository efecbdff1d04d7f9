"""The README cannot drift: every ``ctxreplay`` command it shows names a real command, and every
option it gives that command exists and takes the kind of value shown."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from ctxreplay.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


def snippets() -> list[str]:
    """Each ``ctxreplay …`` command of the README: inline code and lines of code blocks."""
    text = README.read_text()
    found: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        joined = block.replace("\\\n", " ")
        found += [ln.split("#")[0].strip() for ln in joined.splitlines() if "ctxreplay " in ln]
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    found += [" ".join(s.split()) for s in re.findall(r"`(ctxreplay [^`]+)`", prose, re.S)]
    return [s[s.index("ctxreplay ") :] for s in found if s]


def _clean(snippet: str) -> list[str]:
    """Tokens of a snippet, with the README's notations read as one concrete example: ``a|b``
    (alternatives) → a, ``[--x y]`` (optional) → --x y, ``…`` (elided) dropped."""
    words = shlex.split(snippet.replace("[", " ").replace("]", " ").replace("…", " "))
    out = []
    for w in words:
        if w.startswith("-") or "|" not in w or w.startswith("'"):
            out.append(w)
        else:
            out.append(w.split("|")[0])
    return out[1:]  # without "ctxreplay"


def _command(words: list[str]) -> tuple[click.Command, list[str]]:
    cmd: click.Command = main
    while isinstance(cmd, click.Group) and words and words[0] in cmd.commands:
        cmd, words = cmd.commands[words[0]], words[1:]
    return cmd, words


@pytest.mark.parametrize("snippet", snippets())
def test_readme_command_and_options_exist(snippet: str) -> None:
    cmd, rest = _command(_clean(snippet))
    assert (cmd is not main and not isinstance(cmd, click.Group)) or snippet.endswith("serve"), (
        snippet
    )
    options = {o: p for p in cmd.params for o in p.opts if isinstance(p, click.Option)}
    for i, word in enumerate(rest):
        if not word.startswith("-"):
            continue
        flag = word.split("=")[0]
        assert flag in options, f"{snippet!r}: {cmd.name} has no option {flag}"
        param = options[flag]
        if not param.is_flag and "=" not in word and i + 1 < len(rest):
            value = rest[i + 1]
            if isinstance(param.type, click.Choice):
                assert value in param.type.choices, f"{snippet!r}: {flag} {value}"
            elif isinstance(param.type, click.types.IntParamType):
                assert value.lstrip("-").isdigit(), f"{snippet!r}: {flag} {value}"


def test_the_readme_shows_most_commands() -> None:
    shown = {_command(_clean(s))[0].name for s in snippets()}
    assert {
        "import",
        "cases",
        "replay",
        "judge",
        "calibrate",
        "report",
        "audit",
        "sweep",
        "run",
        "synth",
        "sql",
        "demo",
        "show",
        "policies",
        "export-verdicts",
    } <= shown
