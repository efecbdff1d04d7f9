"""The package's import graph, from the source alone (no imports run).

`python tools/import_graph.py` prints the package-level and module-level cycles; the layer test
(`tests/test_layers.py`) checks the rules of ARCHITECTURE.md against the same graph. Every import
statement counts, wherever it stands: inside functions (lazy) and under ``if TYPE_CHECKING:``
too, since a module that names another's types depends on it as much as one that calls it.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "ctxreplay"


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the package by dotted name."""
    found: dict[str, Path] = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def _imported(module: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # ``from pkg import mod`` imports the module; ``from mod import name`` the module
            names = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        else:
            continue
        for name in names:
            if name.startswith(PACKAGE) and (target := _resolve(name, known)) and target != module:
                yield target


def graph(root: Path = ROOT) -> dict[str, set[str]]:
    """module → the package modules it imports (at any depth of the file: lazy and
    ``TYPE_CHECKING`` imports too)."""
    known = modules(root)
    return {module: set(_imported(module, path, known)) for module, path in known.items()}


def layer(module: str) -> str:
    """The layer a module belongs to: its first sub-package, or the top-level module's name."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else PACKAGE


def package_graph(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for module, targets in edges.items():
        out.setdefault(layer(module), set()).update(
            layer(t) for t in targets if layer(t) != layer(module)
        )
    return out


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    sys.setrecursionlimit(10_000)

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def main() -> None:
    edges = graph()
    packages = package_graph(edges)
    package_cycles = cycles(packages)
    module_cycles = cycles(edges)
    print(f"{len(edges)} modules, {sum(map(len, edges.values()))} import edges")
    print(f"package cycles: {len(package_cycles)}")
    for c in package_cycles:
        print("  " + " ↔ ".join(c))
    print(f"module cycles: {len(module_cycles)}")
    for c in module_cycles:
        print("  " + " ↔ ".join(c))


if __name__ == "__main__":
    main()
