"""Plausible Python source files, pytest logs and shell outputs for the coding workload."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

NOUNS = (
    "header", "payload", "chunk", "buffer", "record", "segment", "frame", "token", "entry",
    "batch", "offset", "window", "cursor", "schema", "field", "column", "span", "block",
    "marker", "checksum", "digest", "prefix", "suffix", "limit", "budget", "timeout", "retry",
    "encoding", "charset", "stream", "source", "target", "sink", "queue", "worker", "job",
    "lease", "slot", "shard", "index", "option", "policy", "rule", "state", "manifest",
)  # fmt: skip
VERBS = (
    "parse", "decode", "encode", "read", "write", "load", "dump", "validate", "normalize",
    "resolve", "compute", "build", "merge", "split", "flush", "fetch", "emit", "collect",
    "render", "apply", "strip", "detect", "convert", "check", "select", "update", "register",
    "schedule", "acquire", "release", "coerce", "expand",
)  # fmt: skip
ADJECTIVES = (
    "raw", "decoded", "pending", "current", "next", "cached", "stale", "local", "remote",
    "base", "total", "effective", "trailing", "leading", "padded", "aligned", "partial",
)  # fmt: skip
TYPES = (
    "bytes", "str", "int", "float", "bool", "list[str]", "dict[str, int]", "Sequence[bytes]",
    "Mapping[str, str]", "Iterable[bytes]", "tuple[int, int]",
)  # fmt: skip
ERRORS = ("ValueError", "DecodeError", "LimitExceeded", "ConfigError", "ProtocolError")
COMMENTS = (
    "Callers rely on the order being stable, so keep this a list.",
    "The v1 format wrote this field twice; tolerate both.",
    "Fast path: most inputs are small and already normalised.",
    "Do not log the payload itself, it may contain credentials.",
    "See the RFC section on folding for why this is lenient.",
    "Keep in sync with the constants in the CLI module.",
    "This is hot in profiles; avoid allocating per item.",
    "Windows tools emit a BOM here; strip it before measuring.",
    "Guard against a zero-length tail from truncated reads.",
    "Backwards compatible with configs written before 2.0.",
)  # fmt: skip
DOC_LINES = (
    "Return the {noun} after {verb}ing it in place.",
    "Split the input into {noun}s and validate each one.",
    "Compute the effective {noun} for the given options.",
    "Read one {noun} from the stream, honouring the size limit.",
    "Normalise a {noun} so that equal values compare equal.",
    "Yield {noun}s lazily; the caller owns the buffer.",
    "Merge two {noun} maps, the right one wins on conflicts.",
    "Check the {noun} against the configured policy.",
)  # fmt: skip


def camel(*words: str) -> str:
    return "".join(w.capitalize() for w in words)


@dataclass(frozen=True)
class Special:
    """A function planted in a module: its name and the lines of its body."""

    name: str
    params: str
    body: tuple[str, ...]
    returns: str = "int"


@dataclass(frozen=True, slots=True)
class _Slot:
    """Where a statement goes (indent, nesting depth) and the names drawn for it."""

    pad: str
    indent: int
    depth: int
    v: str
    a: str
    b: str


class CodeGen:
    """Plausible Python source: identifiers, statements, functions, classes, whole modules."""

    def __init__(self, rng: random.Random, pkg: str) -> None:
        self.rng = rng
        self.pkg = pkg

    # --- identifiers ------------------------------------------------------------------------
    def noun(self) -> str:
        return self.rng.choice(NOUNS)

    def var(self) -> str:
        r = self.rng.random()
        if r < 0.45:
            return f"{self.rng.choice(ADJECTIVES)}_{self.noun()}"
        if r < 0.8:
            return self.noun()
        return f"{self.noun()}_{self.rng.choice(('count', 'size', 'bytes', 'items', 'map'))}"

    def func(self) -> str:
        return f"{self.rng.choice(VERBS)}_{self.noun()}"

    def const(self) -> str:
        return f"{self.rng.choice(('MAX', 'DEFAULT', 'MIN'))}_{self.noun().upper()}_{self.rng.choice(('BYTES', 'SIZE', 'COUNT', 'SECONDS'))}"

    # --- statements ---------------------------------------------------------------------------
    def statements(self, indent: int, n: int, depth: int = 0) -> list[str]:
        """``n`` statements at ``indent``; blocks nest at most two deep."""
        out: list[str] = []
        for _ in range(n):
            kind = self.rng.random()
            v, a, b = self.var(), self.var(), self.var()
            at = _Slot(" " * indent, indent, depth, v, a, b)
            make = next(
                (f for bound, nests, f in STATEMENTS if kind < bound and (not nests or depth < 2)),
                CodeGen._comprehension,
            )
            out.extend(make(self, at))
        return out

    # --- one statement each; ``at`` says where and with which names -------------------------
    def _call(self, at: _Slot) -> list[str]:
        return [f"{at.pad}{at.v} = {self.func()}({at.a}, {at.b})"]

    def _lookup(self, at: _Slot) -> list[str]:
        return [f"{at.pad}{at.v} = {at.a}.{self.rng.choice(('get', 'pop', 'setdefault'))}({at.b})"]

    def _nested(self, at: _Slot, most: int) -> list[str]:
        return self.statements(at.indent + 4, self.rng.randint(1, most), at.depth + 1)

    def _if_none(self, at: _Slot) -> list[str]:
        return [f"{at.pad}if {at.v} is None:", *self._nested(at, 2)]

    def _limit(self, at: _Slot) -> list[str]:
        c = self.const()
        head = f"{at.pad}if len({at.a}) > {c}:"
        return [
            head,
            f'{at.pad}    raise {self.rng.choice(ERRORS)}(f"{self.noun()} too large: {{len({at.a})}} > {{{c}}}")',
        ]  # fmt: skip

    def _loop(self, at: _Slot) -> list[str]:
        item = self.noun()
        return [f"{at.pad}for {item} in {at.a}:", *self._nested(at, 3)]

    def _log(self, at: _Slot) -> list[str]:
        return [f'{at.pad}log.debug("{self.rng.choice(VERBS)} %d {self.noun()}s", len({at.a}))']

    def _append(self, at: _Slot) -> list[str]:
        return [f"{at.pad}{at.v}.append({self.func()}({at.a}))"]

    def _try(self, at: _Slot) -> list[str]:
        body = [f"{at.pad}try:", *self._nested(at, 2)]
        body.append(f"{at.pad}except {self.rng.choice(ERRORS)} as exc:")
        body.append(f"{at.pad}    raise {self.rng.choice(ERRORS)}(str(exc)) from exc")
        return body

    def _comment(self, at: _Slot) -> list[str]:
        return [f"{at.pad}# {self.rng.choice(COMMENTS)}"]

    def _increment(self, at: _Slot) -> list[str]:
        return [f"{at.pad}{at.v} += {at.a}"]

    def _comprehension(self, at: _Slot) -> list[str]:
        return [
            f"{at.pad}{at.v} = [{self.func()}(x) for x in {at.a} if x is not None and x != {at.b}]"
        ]

    def function(self, name: str | None = None, indent: int = 0, method: bool = False) -> list[str]:
        rng = self.rng
        pad = " " * indent
        name = name or self.func()
        params = ", ".join(f"{self.var()}: {rng.choice(TYPES)}" for _ in range(rng.randint(1, 3)))
        if method:
            params = f"self, {params}"
        ret = rng.choice(TYPES)
        noun = self.noun()
        doc = rng.choice(DOC_LINES).format(noun=noun, verb=rng.choice(VERBS))
        lines = [f"{pad}def {name}({params}) -> {ret}:", f'{pad}    """{doc}"""']
        lines.extend(self.statements(indent + 4, rng.randint(3, 9)))
        lines.append(f"{pad}    return {self.var()}")
        return lines

    def klass(self) -> list[str]:
        rng = self.rng
        name = camel(
            self.noun(), rng.choice(("Decoder", "Reader", "Cache", "Pool", "Policy", "Spec"))
        )
        lines = [
            "@dataclass",
            f"class {name}:",
            f'    """{camel(self.noun())} bookkeeping for one {self.noun()}."""',
            "",
        ]
        for _ in range(rng.randint(2, 4)):
            lines.append(f"    {self.var()}: {rng.choice(TYPES)}")
        lines.append(f"    {self.var()}: int = {rng.randint(2, 64)}")
        for _ in range(rng.randint(1, 3)):
            lines.append("")
            lines.extend(self.function(indent=4, method=True))
        return lines

    def block(self) -> list[str]:
        return self.klass() if self.rng.random() < 0.25 else self.function()

    def header(self, module: str, summary: str) -> list[str]:
        rng = self.rng
        others = [f"{self.pkg}.{rng.choice(('core', 'util', 'io', 'errors'))}" for _ in range(2)]
        lines = [
            f'"""{summary}',
            "",
            f"The {module} module is imported by the public API; keep its import time low.",
            '"""',
            "",
            "from __future__ import annotations",
            "",
            "import logging",
            "import re",
            "from collections.abc import Iterable, Mapping, Sequence",
            "from dataclasses import dataclass",
            "",
            f"from {others[0]} import {self.func()}, {self.func()}",
            f"from {others[1]} import {rng.choice(ERRORS)}",
            "",
            "log = logging.getLogger(__name__)",
            "",
        ]
        for _ in range(rng.randint(2, 5)):
            lines.append(
                f"{self.const()} = {rng.choice(('65_536', '4096', '30.0', '0x7F', '128'))}"
            )
        lines.append("")
        return lines

    def module(
        self, module: str, summary: str, n_lines: int, special: Special | None = None
    ) -> list[str]:
        """About ``n_lines`` lines; ``special`` (if any) starts near the middle of the file."""
        lines = self.header(module, summary)
        at = int(n_lines * self.rng.uniform(0.42, 0.5))
        placed = special is None
        while len(lines) < n_lines or not placed:
            if special is not None and not placed and len(lines) >= at:
                lines.extend(["", ""])
                lines.append(f"def {special.name}({special.params}) -> {special.returns}:")
                lines.extend(special.body)
                placed = True
                continue
            lines.extend(["", ""])
            lines.extend(self.block())
        return lines


#: Statement kinds by the draw that picks them: (upper bound, opens a nested block, maker); the
#: first that fits wins, so a nesting kind too deep falls through to the next; else a comprehension.
STATEMENTS: tuple[tuple[float, bool, Callable[[CodeGen, _Slot], list[str]]], ...] = (
    (0.22, False, CodeGen._call),
    (0.32, False, CodeGen._lookup),
    (0.42, True, CodeGen._if_none),
    (0.50, False, CodeGen._limit),
    (0.60, True, CodeGen._loop),
    (0.66, False, CodeGen._log),
    (0.72, False, CodeGen._append),
    (0.78, True, CodeGen._try),
    (0.84, False, CodeGen._comment),
    (0.90, False, CodeGen._increment),
)


def numbered(lines: Sequence[str], start: int = 1) -> str:
    """``cat -n`` style, as coding agents' file viewers print it."""
    return "\n".join(f"{i:6d}\t{line}" for i, line in enumerate(lines, start))


# --- test runs ----------------------------------------------------------------------------------

PARAMS = (
    "ascii", "utf-8", "utf-16", "latin-1", "empty", "large", "bom", "crlf", "folded", "tabs",
    "unicode", "nested", "truncated", "zero", "negative", "boundary",
)  # fmt: skip


def test_ids(rng: random.Random, test_files: Sequence[str], n: int) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        f = rng.choice(list(test_files))
        name = f"test_{rng.choice(VERBS)}_{rng.choice(NOUNS)}"
        node = f"{f}::{name}[{rng.choice(PARAMS)}]" if rng.random() < 0.6 else f"{f}::{name}"
        if node not in seen:
            seen.add(node)
            out.append(node)
    return sorted(out)


@dataclass(frozen=True)
class Failure:
    node: str
    source_lines: tuple[str, ...]
    message: str  # the E line, e.g. "AssertionError: decoded length 1187 != expected 1193"
    where: str  # e.g. "src/heron/codecs/header.py:148"


def pytest_log(
    rng: random.Random,
    root: str,
    nodes: Sequence[str],
    failures: Sequence[Failure],
    skipped: int = 0,
) -> list[str]:
    failed = {f.node for f in failures}
    total = len(nodes)
    lines = [
        "============================= test session starts ==============================",
        f"platform linux -- Python 3.11.{rng.randint(4, 10)}, pytest-8.{rng.randint(0, 3)}.{rng.randint(0, 3)}, pluggy-1.5.0",
        f"rootdir: {root}",
        "configfile: pyproject.toml",
        f"plugins: cov-5.0.0, xdist-3.{rng.randint(3, 6)}.0, hypothesis-6.{rng.randint(90, 112)}.0",
        f"collected {total} items",
        "",
    ]
    for i, node in enumerate(nodes):
        pct = f"[{int(100 * (i + 1) / total):3d}%]"
        status = "FAILED" if node in failed else "PASSED"
        lines.append(f"{node} {status}".ljust(72) + f" {pct}")
    if failures:
        lines += [
            "",
            "=================================== FAILURES ===================================",
        ]
        for f in failures:
            name = f.node.split("::", 1)[1]
            lines.append(f"_{'_' * 20} {name} {'_' * 20}")
            lines.append("")
            lines.extend(f"    {s}" for s in f.source_lines)
            lines.append(f"E       {f.message}")
            lines.append("")
            lines.append(f"{f.where}: {f.message.split(':', 1)[0]}")
    lines.append("=========================== short test summary info ============================")
    for f in failures:
        lines.append(f"FAILED {f.node} - {f.message}")
    passed = total - len(failures)
    secs = rng.uniform(1.5, 14.0)
    parts = [f"{len(failures)} failed"] if failures else []
    parts.append(f"{passed} passed")
    if skipped:
        parts.append(f"{skipped} skipped")
    lines.append(f"{'=' * 18} {', '.join(parts)} in {secs:.2f}s {'=' * 18}")
    return lines
