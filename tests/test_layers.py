"""The layer rules of ARCHITECTURE.md, checked on the import graph of the source.

Each layer may import only the layers its rule names; no package and no module imports itself
back through others. The graph is read from the source (``tools/import_graph.py``), lazy imports
inside functions and imports under ``if TYPE_CHECKING:`` included, so a rule cannot be dodged by
importing late or for annotations only.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from import_graph import PACKAGE, cycles, graph, layer, package_graph  # noqa: E402

FOUNDATION = {
    "errors",
    "files",
    "arrow_memory",
    "schema",
    "tariffs",
    "registry",
    "sqlview",
    "storage",
    "version",
}


def documented_rules() -> dict[str, set[str]]:
    """``layer: may import a, b, c`` lines of ARCHITECTURE.md's layer table."""
    text = (ROOT / "ARCHITECTURE.md").read_text()
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    rules: dict[str, set[str]] = {}
    for row in re.finditer(r"^\| `([a-z_]+)/?` \| ([^|]*) \|", section, re.M):
        allowed = set(re.findall(r"`([a-z_]+)/?`", row.group(2)))
        if "foundation" in allowed:
            allowed = (allowed - {"foundation"}) | FOUNDATION
        rules[row.group(1)] = allowed
    return rules


def test_every_layer_has_a_documented_rule() -> None:
    rules = documented_rules()
    layers = {layer(m) for m in graph()} - {"ctxreplay"}
    missing = sorted(layers - set(rules) - FOUNDATION)
    assert not missing, f"layers without a rule in ARCHITECTURE.md: {missing}"


def test_imports_follow_the_layer_rules() -> None:
    rules = documented_rules()
    for name in FOUNDATION:
        rules.setdefault(name, FOUNDATION - {name})
    broken = [
        f"{module} imports {target}"
        for module, targets in sorted(graph().items())
        for target in sorted(targets)
        if layer(target) != layer(module)
        and layer(module) in rules
        and layer(target) not in rules[layer(module)]
    ]
    assert not broken, "\n".join(broken)


def test_no_package_cycle() -> None:
    assert cycles(package_graph(graph())) == []


def test_no_module_cycle() -> None:
    assert cycles(graph()) == []


def test_the_replay_core_imports_no_engine_policy_or_io_layer() -> None:
    core = {t for m, ts in graph().items() if layer(m) == "replay" for t in ts}
    assert not {layer(t) for t in core} & {"engines", "policies", "judges", "runs", "cli"}


def test_the_replay_and_judge_engines_share_nothing_but_lower_layers() -> None:
    """What both need (the chunk size, token counting, the case's messages) lives below them
    (``runs``, ``datasets``), so either can change without the other."""
    edges = graph()
    engine = f"{PACKAGE}.engines"
    assert f"{engine}.replay" not in edges[f"{engine}.judge"]
    assert f"{engine}.judge" not in edges[f"{engine}.replay"]


@pytest.mark.parametrize(
    ("edges", "expected"),
    [
        ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"b"}, "b": set()}, []),
    ],
)
def test_cycle_finder_finds_cycles(edges: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert cycles(edges) == expected


def test_annotation_only_and_lazy_imports_are_edges(tmp_path: Path) -> None:
    package = tmp_path / PACKAGE
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "data.py").write_text(
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from .render import Page\n"
    )
    (package / "render.py").write_text("def page():\n    from .data import Data\n")
    edges = graph(tmp_path)
    assert edges[f"{PACKAGE}.data"] == {f"{PACKAGE}.render"}
    assert edges[f"{PACKAGE}.render"] == {f"{PACKAGE}.data"}
    assert cycles(edges) == [[f"{PACKAGE}.data", f"{PACKAGE}.render"]]
