"""The README's plugin example is a working policy: its code is run as written, registered
under the name its entry point gives, and replayed on a hand-built session."""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctxreplay.policies import policies
from ctxreplay.policies.base import make_policy
from ctxreplay.replay.outcome import replay_case

from sessions import reads

README = Path(__file__).resolve().parents[2] / "README.md"


def section() -> str:
    text = README.read_text()
    return text.split("### Your own policy, judge or importer", 1)[1].split("\n## ", 1)[0]


@pytest.fixture
def keep_last(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The README's module ``acme_ctx``, imported as the entry point would import it."""
    block = re.search(r"```python\n(.*?)```", section(), re.S)  # the section's one example
    assert block is not None
    module = types.ModuleType("acme_ctx")
    monkeypatch.setitem(sys.modules, "acme_ctx", module)
    exec(compile(block.group(1), "README.md", "exec"), module.__dict__)
    [(name, target)] = re.findall(r'^([\w-]+) = "acme_ctx:(\w+)"$', section(), re.M)
    policies.register(name)(getattr(module, target))
    yield name
    policies._items.pop(name, None)


def test_the_entry_point_group_is_the_one_the_registry_reads() -> None:
    assert '[project.entry-points."ctxreplay.policies"]' in section()
    assert policies.group == "ctxreplay.policies"


def test_the_readme_policy_clears_all_but_the_newest_results(keep_last: str) -> None:
    session = reads(4)
    out = replay_case(make_policy(f"{keep_last}:keep=2"), session.ctx())
    assert [(e.object_id, e.action, e.placeholder) for e in out.plan.edits] == [
        ("function:bash:1", "prune", "[cleared]"),
        ("function:bash:2", "prune", "[cleared]"),
    ]
    assert out.committed and out.view.tokens < out.view.prefix_tokens
    assert out.policy == "keep-last:keep=2"
