"""A policy whose docstring sends the reader to ``docs/policies.md`` has its section there, and
that section names every parameter the policy takes (a renamed knob fails here, not in a
reader's hands)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ctxreplay.policies.base import BUILTIN, policies
from ctxreplay.registry import describe_params

DOCS = Path(__file__).resolve().parents[2] / "docs" / "policies.md"
POINTER = re.compile(r"docs/policies\.md#([a-z0-9+-]+)")


def sections() -> dict[str, str]:
    parts = re.split(r"^## (\S+)\n", DOCS.read_text(), flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def pointed() -> list[str]:
    return [name for name in sorted(BUILTIN) if POINTER.search(policies.get(name).__doc__ or "")]


def test_the_long_descriptions_live_in_the_docs_not_in_the_code() -> None:
    assert pointed() == ["agent-forgetting", "prune-summarise", "self-gc"]
    for name in BUILTIN:
        assert (policies.get(name).__doc__ or "").count("\n") < 30, name


@pytest.mark.parametrize("name", pointed())
def test_each_pointer_names_its_own_section_and_the_section_every_parameter(name: str) -> None:
    doc = policies.get(name).__doc__ or ""
    assert POINTER.findall(doc) == [name]
    section = sections()[name]
    missing = [
        p.name
        for p in describe_params(policies.get(name).Params)
        if p.name not in ("target", "budget", "run_dir") and f"``{p.name}``" not in section
    ]
    assert missing == []
