"""Coding workload: a repository, a failing test, a fix, a benchmark, history and a full run.

Planted dependencies:

- ``locator_handle``: a helper module's path found by ``grep`` (not in the repository map) and
  then opened with ``read_file``; a commit hash from ``git log`` then shown with ``git show``.
- ``verbatim_source``: a long line from the middle of the first read of a module, used as
  ``edit_file.old_str`` (also for a second file in the lint episode).
- ``live_state``: the assertion message of the latest of several ``run_tests`` on the same
  target, which the agent then names as the remaining failure; and the current blocker: the
  error line of a failed run of another caller's tests (the most recent errored result), quoted
  by the fix that follows it, usually after the user agrees to widen the change.
- ``evidence_detail``: the benchmark's mean and p95, reported right away and in the summary.
- ``recovery_routing``: the saved log of a truncated full-suite run, read later with read_file.
- ``behavioural_contract``: a constraint from the first user turn, honoured in a later turn; and
  a standing rule the user adds in the 2nd to 4th turn ("From now on, never push directly to
  main"), honoured in the closing summary.

A failing ``run_tests`` is an errored tool result (``is_error``), as a harness reports a non-zero
exit; no other category's source is ever an errored result.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .builder import Rule, Step
from .codegen import (
    NOUNS,
    VERBS,
    CodeGen,
    Failure,
    Special,
    numbered,
    pytest_log,
    test_ids,
)
from .common import READ_FILE, middle_spans, tool, truncated
from .vocab import FIRST_NAMES, LAST_NAMES
from .workload import ReadBack, Truncated, Workload

NAME = "coding"

PROJECTS = (
    ("heron", "HTTP header parsing and charset detection"),
    ("ledgerkit", "double-entry bookkeeping for small businesses"),
    ("tidewater", "time-series ingestion from IoT gateways"),
    ("quill", "a Markdown to HTML renderer"),
    ("pebble", "a background job scheduler"),
    ("marlin", "CSV to Parquet batch conversion"),
    ("osprey", "a log shipping agent"),
    ("fennel", "feature flag evaluation"),
)
SUBPACKAGES = ("core", "io", "codecs", "net", "util", "backends", "storage", "runtime")
MODULES = (
    "parser", "reader", "writer", "codec", "session", "cache", "config", "retry", "scheduler",
    "metrics", "schema", "validators", "transport", "encoding", "batching", "pool", "auth",
    "headers", "framing", "registry",
)  # fmt: skip
SUMMARIES = (
    "Parsing and validation of {noun} values.",
    "Reading {noun}s from byte streams with size limits.",
    "The {noun} cache and its eviction policy.",
    "Helpers that turn raw {noun}s into typed records.",
    "Scheduling of {noun} work across the worker pool.",
)

TOOLS = [
    tool("list_dir", "List the entries of a directory.", path=("string", "Directory path.")),
    tool(
        "grep",
        "Search file contents with a regular expression (ripgrep).",
        pattern=("string", "Regular expression."),
        path=("string", "?Directory or file to search."),
    ),
    READ_FILE,
    tool(
        "edit_file",
        "Replace one exact occurrence of old_str with new_str in a file.",
        path=("string", "File to edit."),
        old_str=("string", "Exact text to replace; must occur exactly once."),
        new_str=("string", "Replacement text."),
    ),
    tool(
        "run_tests",
        "Run pytest on a target (file, directory or node id) and return its output.",
        target=("string", "What to test."),
    ),
    tool("bash", "Run a shell command in the repository root.", command=("string", "Command.")),
]

#: Constraints of the first user turn; ``{func}`` is the function with the bug.
CONTRACTS = (
    Rule(
        "Please never modify anything under the tests/ directory, QA owns those files.",
        "anything under the tests/ directory",
        "As you asked, I did not modify anything under the tests/ directory.",
    ),
    Rule(
        "Don't add any new third-party dependencies, we ship this to air-gapped customers.",
        "new third-party dependencies",
        "The change uses only the standard library, so there are no new third-party dependencies.",
    ),
    Rule(
        "Keep the public signature of {func}() exactly as it is; other teams call it directly.",
        "public signature of {func}()",
        "I kept the public signature of {func}() unchanged, as you asked; only its internals moved.",
    ),
    Rule(
        "Please don't commit anything yourself, I want to review the diff and commit it myself.",
        "review the diff and commit it myself",
        "Nothing is committed: the changes are in the working tree so you can review the diff and commit it myself, as you put it.",
    ),
    Rule(
        "Everything has to stay compatible with Python 3.9, our oldest customer still runs it.",
        "compatible with Python 3.9",
        "The fix stays compatible with Python 3.9 (no match statements, no new syntax).",
    ),
)

#: Standing rules the user adds mid-session; honoured in the closing summary.
RULES = (
    Rule(
        "One more thing: from now on, never push directly to main, I'll open the PR from a branch.",
        "push directly to main",
        "I did not push directly to main, as you asked; the changes wait for your PR.",
    ),
    Rule(
        "Also, please keep the diff under {lines} lines from now on, reviewers here push back on "
        "anything bigger.",
        "diff under {lines} lines",
        "All edits together keep the diff under {lines} lines, as you asked.",
    ),
    Rule(
        "From now on, don't add new log statements anywhere, our log volume is already over budget.",
        "new log statements",
        "I added no new log statements, as you asked.",
    ),
    Rule(
        "Also, from now on always reference {ticket} in anything you write up for the PR, that's "
        "where QA tracks this bug.",
        "{ticket}",
        "Tracked under {ticket}, as you asked.",
    ),
)
#: Replies to "should I widen the change?"; no constraint words, so they state no rule.
YES = ("Yes, fix it here.", "Sure, same change please.", "Yes, go ahead.")


#: How the full-suite log is read back (``ReadBack``): right away, or once the user asks.
SUITE_READ_NOW = ReadBack(
    "The output was cut before the summary; reading the rest of the saved log.",
    "truncated run_tests output names the saved log; the agent reads it",
    "The full suite passes; there are a few deprecation warnings, none from the code I touched.",
)
SUITE_READ_LATER = ReadBack(
    "Let me read the rest of the saved log.",
    "truncated run_tests output names the saved log; read in a later turn",
    "No failures. The tail has deprecation warnings only, all in code I did not change.",
    before="Everything in the visible part of the output passes; the harness cut the rest.",
    ask="Were there any failures or warnings further down in that log?",
)
LINT_FINDINGS = (
    ("F401", "`re` imported but unused"),
    ("E501", "Line too long (104 > 100)"),
    ("B006", "Do not use mutable data structures for argument defaults"),
    ("UP007", "Use `X | Y` for type annotations"),
    ("SIM108", "Use ternary operator instead of `if`-`else`-block"),
)


def _paths(rng: random.Random, pkg: str) -> tuple[list[str], list[str]]:
    """Source modules of the package and their test files, in the same order."""
    subs = rng.sample(SUBPACKAGES, 4)
    mods = rng.sample(MODULES, rng.randint(8, 12))
    src = [f"src/{pkg}/{subs[i % len(subs)]}/{m}.py" for i, m in enumerate(mods)]
    tests = [f"tests/{p.split('/')[2]}/test_{p.rsplit('/', 1)[1]}" for p in src]
    return src, tests


def _module_name(path: str) -> str:
    """The module name of a source path (``src/pkg/io/reader.py`` → ``reader``)."""
    return path.rsplit("/", 1)[1][:-3]


@dataclass(frozen=True, slots=True)
class CallLine:
    """The planted line to fix: a call of the helper, its fix, and a near miss of it."""

    line: str  # as it stands in the module (the verbatim anchor)
    fixed: str  # the first fix: the keyword argument minus the prefix length
    wrong: str  # what the agent first tries to replace (not in the file)
    keyword: str  # the keyword whose value the fix shifts
    shift: str  # ``keyword=value - len(...)``, clamped by the last fix


class Coding(Workload):
    """A failing test fixed in three rounds, then a benchmark, history, the suite and a summary."""

    NAME = NAME
    TOOLS = TOOLS

    # the repository: paths and names drawn in ``plan``
    pkg: str
    desc: str
    gen: CodeGen
    root: str
    src: list[str]
    tests: list[str]
    main: str
    test_main: str
    main_mod: str
    bench: str
    noun: str
    func: str
    helper_noun: str
    helper_func: str
    helper_sub: str
    helper: str
    param: str
    caller: str
    test_caller: str
    caller_mod: str
    # the planted code
    call_line: CallLine
    special: Special
    main_lines: list[str]
    helper_lines: list[str]
    def_line: int
    # the conversation so far
    contracts: list[Rule]
    contracts_left: list[Rule]
    turn1: int
    test_name: str
    nodes_main: list[str]
    grep: Step
    first_read: Step
    defer_helper: bool
    nodes_main2: list[str]
    live: str
    second_run: Step
    asks: int
    p95: str
    bench_run: Step
    read_paths: set[str]

    def build(self) -> str:
        """Fix, blocker, benchmark, the episodes in their drawn order, then the summary."""
        self.plan()
        self.system_prompt()
        self.write_modules()
        self.report_bug()
        self.reproduce()
        self.find_helper()
        self.first_fix()
        self.second_failure()
        self.finish_fix()
        self.current_blocker()
        self.benchmark()
        episodes = {
            "history": self.history,
            "suite": self.suite,
            "explain": self.explain,
            "explain2": self.explain,
            "lint": self.lint,
        }
        for name in self.episode_order():
            episodes[name]()
        return self.summary()

    # --- the repository -------------------------------------------------------------------------
    def plan(self) -> None:
        """Draw the project, the module with the bug, its helper and another caller of it."""
        rng = self.rng
        self.pkg, self.desc = rng.choice(PROJECTS)
        self.gen = CodeGen(rng, self.pkg)
        self.root = f"/workspace/{self.pkg}"
        self.src, self.tests = _paths(rng, self.pkg)
        main_i = rng.randrange(len(self.src))
        self.main, self.test_main = self.src[main_i], self.tests[main_i]
        self.main_mod = _module_name(self.main)
        self.bench = f"benchmarks/bench_{self.main_mod}.py"
        self.noun, verb = rng.choice(NOUNS), rng.choice(VERBS)
        self.func = f"{verb}_{self.noun}"
        self.plan_helper()
        self.param = rng.choice(("utf-16", "bom", "crlf", "folded", "large", "empty", "truncated"))
        # another module that calls the helper: its tests fail after the first fix (the blocker)
        caller_i = rng.choice([i for i in range(len(self.src)) if i != main_i])
        self.caller, self.test_caller = self.src[caller_i], self.tests[caller_i]
        self.caller_mod = _module_name(self.caller)

    def plan_helper(self) -> None:
        """The helper module: not in the repository map, so only grep can find its path."""
        rng = self.rng
        self.helper_noun = rng.choice([n for n in NOUNS if n != self.noun])
        self.helper_func = f"_{rng.choice(VERBS)}_{self.helper_noun}"
        self.helper_sub = rng.choice([s for s in SUBPACKAGES if f"/{s}/" not in self.main])
        kind = rng.choice(("shim", "legacy", "compat", "impl"))
        self.helper = f"src/{self.pkg}/{self.helper_sub}/_{self.helper_noun}_{kind}.py"

    def system_prompt(self) -> None:
        """Tools and a repository map (always present)."""
        repo_map = [
            f"  {p}" for p in (*self.src, *self.tests, self.bench, "pyproject.toml", "README.md")
        ]
        self.system(
            f"You are an autonomous coding agent working in the repository at {self.root} "
            f"({self.desc}).\n"
            "Work in small steps: reproduce a problem before fixing it, read a file before editing "
            "it, and run the relevant tests after every change. Be concise with the user.",
            "\n\n# Repository map\n"
            + "\n".join(repo_map)
            + "\n\n# Conventions\n- Python 3.11, formatted with ruff, type hints on public "
            "functions.\n- Tests run with pytest; keep changes minimal and explain them briefly.",
        )

    # --- planted code: the line to fix sits in the middle of the module --------------------------
    def draw_call_line(self) -> CallLine:
        """A long call of the helper with five distinct names (a 60-110 character line)."""
        rng, gen, helper_func = self.rng, self.gen, self.helper_func
        while True:
            v, a, bb = gen.var(), gen.var(), gen.var()
            kw1 = rng.choice(("limit", "offset", "window", "budget"))
            kw2 = rng.choice(("strict", "encoding", "errors"))
            c, d = gen.var(), gen.var()
            line = f"{v} = {helper_func}({a}, {bb}, {kw1}={c}, {kw2}={d})"
            if 60 <= len(line) <= 110 and len({v, a, bb, c, d}) == 5:
                shift = f"{kw1}={c} - len({bb})"
                fixed = f"{v} = {helper_func}({a}, {bb}, {shift}, {kw2}={d})"
                wrong = f"{v} = {helper_func}({a}, {bb}, {kw1}={c}, {kw2}={d}, {kw1}_hint=None)"
                return CallLine(line, fixed, wrong, kw1, shift)

    def write_modules(self) -> None:
        """The buggy module (its planted line in the middle) and the helper module."""
        rng, gen = self.rng, self.gen
        self.call_line = line = self.draw_call_line()
        self.special = Special(
            self.func,
            f"{gen.var()}: bytes, *, {gen.var()}: int = 0",
            (
                f'    """Return the {self.noun} length for one {self.param} input."""',
                *gen.statements(4, rng.randint(3, 6)),
                f"    {line.line}",
                *gen.statements(4, rng.randint(2, 4)),
                f"    return {line.line.split(' = ', 1)[0]}",
            ),
        )
        n_main = self.b.size(150, 380, cap=400)
        for _ in range(8):  # keep the planted line in the middle of the file
            summary = rng.choice(SUMMARIES).format(noun=self.noun)
            self.main_lines = gen.module(self.main_mod, summary, n_main, self.special)
            if middle_spans(numbered(self.main_lines), [line.line]):
                break
        self.helper_lines = gen.module(
            _module_name(self.helper),
            f"Low-level {self.helper_noun} helpers.",
            rng.randint(80, 200),
        )
        special = self.special
        signature = f"def {self.func}({special.params}) -> {special.returns}:"
        self.def_line = self.main_lines.index(signature) + 1

    # --- the bug and its fix ----------------------------------------------------------------------
    def report_bug(self) -> None:
        """Turn 1: the bug report with one or two constraints; the standing rule is drawn."""
        rng = self.rng
        contracts = rng.sample(CONTRACTS, 2 if rng.random() < 0.35 else 1)
        self.contracts = [c.format(func=self.func) for c in contracts]
        self.contracts_left = list(self.contracts)
        self.b.standing_rule(
            rng.choice(RULES).format(
                lines=rng.choice((30, 40, 50, 60)),
                ticket=self.pool.fresh(lambda: f"{self.pkg.upper()}-{rng.randint(1000, 9999)}"),
            )
        )
        self.test_name = f"test_{self.func}[{self.param}]"
        self.turn1 = self.b.user(
            f"Hi! {self.test_main} started failing after yesterday's merge: {self.test_name} "
            f"fails on {self.param} input. Can you find the cause and fix it? "
            + " ".join(c.sentence for c in self.contracts)
        )

    def run_tests(
        self,
        target: str,
        nodes: list[str],
        failures: list[Failure],
        text: str | None = None,
    ) -> Step:
        """A pytest run on ``target``; an errored result when anything fails."""
        log = "\n".join(pytest_log(self.rng, self.root, nodes, failures))
        return self.b.call("run_tests", {"target": target}, log, text=text, error=bool(failures))

    def reproduce(self) -> None:
        """The failing test is run first: its result is the first errored result."""
        rng, func, name = self.rng, self.func, self.test_name
        first_msg = f"AssertionError: assert {rng.randint(1000, 9999)} == {rng.randint(1000, 9999)}"
        nodes = [
            *test_ids(rng, [self.test_main], self.b.size(40, 110)),
            f"{self.test_main}::{name}",
        ]
        self.nodes_main = sorted(set(nodes))
        fail = Failure(
            f"{self.test_main}::{name}",
            (
                f"def {name.split('[')[0]}(sample):",
                f"    result = {func}(sample)",
                f">       assert result == EXPECTED[{self.param!r}]",
            ),
            first_msg,
            f"{self.main}:{self.def_line + len(self.special.body) - 3}",
        )
        self.run_tests(
            self.test_main, self.nodes_main, [fail], "Let me reproduce the failure first."
        )

    def find_helper(self) -> None:
        """grep finds the helper's path; the module with the bug is read (the verbatim source)."""
        rng, gen, src, helper_func = self.rng, self.gen, self.src, self.helper_func
        sig = f"def {self.func}({self.special.params}) -> {self.special.returns}:"
        grep_lines = [
            f"{self.main}:{self.def_line}:{sig}",
            f"{self.helper}:{rng.randint(20, 60)}:def {helper_func}(data: bytes, *args, **kwargs) -> int:",
            f"{self.caller}:{rng.randint(10, 300)}:    return {helper_func}({gen.var()}, {gen.var()})",
            *(
                f"{rng.choice(src)}:{rng.randint(10, 300)}:    return {helper_func}({gen.var()}, {gen.var()})"
                for _ in range(rng.randint(2, 6))
            ),
            *(
                f"{rng.choice(self.tests)}:{rng.randint(10, 200)}:from {self.pkg}.{self.helper_sub} import {helper_func}"
                for _ in range(rng.randint(1, 3))
            ),
        ]  # fmt: skip
        self.grep = self.b.call(
            "grep",
            {"pattern": helper_func, "path": "src/"},
            "\n".join(sorted(set(grep_lines))),
            text=f"The failure is inside {self.func}; let me see where its length helper lives.",
        )
        self.first_read = self.b.call("read_file", {"path": self.main}, numbered(self.main_lines))
        # read the helper only when the second failure points at it
        self.defer_helper = rng.random() < 0.5
        if not self.defer_helper:
            self.read_helper(f"{self.func} delegates to {helper_func}; reading that module too.")

    def read_helper(self, text: str) -> None:
        """Open the helper by the path only grep showed (the locator's need)."""
        h1 = self.b.call("read_file", {"path": self.helper}, numbered(self.helper_lines), text=text)
        self.b.plant(
            "locator_handle",
            self.helper,
            self.grep.result_seq,
            h1.call_seq,
            "helper module path found only in the grep output, then opened with read_file",
        )

    def edited(self, path: str) -> str:
        """edit_file's success message."""
        return f"The file {path} has been edited. 1 occurrence replaced."

    def first_fix(self) -> None:
        """A near miss, then edit_file with the exact line copied from the first read."""
        main, line = self.main, self.call_line
        self.b.call(
            "edit_file",
            {"path": main, "old_str": line.wrong, "new_str": line.fixed},
            f"Error: old_str not found in {main}. No changes were made; check whitespace and "
            "exact text.",
            error=True,
            text=f"The {self.param} case is measured before the prefix is removed. Fixing the offset.",
        )
        e1 = self.b.call(
            "edit_file",
            {"path": main, "old_str": line.line, "new_str": line.fixed},
            self.edited(main),
            text="My first attempt didn't match the file exactly; retrying with the exact line.",
        )
        self.b.plant(
            "verbatim_source",
            line.line,
            self.first_read.result_seq,
            e1.call_seq,
            "edit_file.old_str copies a line from the middle of the first read of the module",
        )

    def second_failure(self) -> None:
        """The fix moves the failure: the latest run holds the current assertion message."""
        rng, func = self.rng, self.func
        x, y = rng.sample(range(1000, 9999), 2)
        self.live = f"{self.noun} length {x} != expected {y}"
        other = f"test_{func}_roundtrip[{rng.choice(('latin-1', 'ascii', 'tabs', 'nested'))}]"
        self.nodes_main2 = sorted({*self.nodes_main, f"{self.test_main}::{other}"})
        fail = Failure(
            f"{self.test_main}::{other}",
            (
                f"def {other.split('[')[0]}(sample):",
                f"    encoded = {func}(sample, strict=True)",
                ">       assert encoded == sample.expected_length",
            ),
            f"AssertionError: {self.live}",
            f"{self.main}:{self.def_line + 4}",
        )
        self.second_run = self.run_tests(self.test_main, self.nodes_main2, [fail])
        self.asks = 0
        if rng.random() < 0.5:
            self.asks += 1
            self.b.say(
                f"The {self.param} test passes now, but the roundtrip test in the same file fails. "
                f"I think the fix is incomplete rather than wrong. Shall I continue with it?"
            )
            self.b.user(
                rng.choice(
                    (
                        "Yes please, go ahead.",
                        "Sure, continue.",
                        "Go on, but keep the change small.",
                    )
                )
            )

    def finish_fix(self) -> None:
        """Quote the remaining failure, re-read the module, fix the strict path, re-run."""
        main, line = self.main, self.call_line
        main_lines2 = [ln.replace(line.line, line.fixed) for ln in self.main_lines]
        fix2_old = next(
            ln.strip()
            for ln in main_lines2[self.def_line :]
            if ln.startswith("    ") and "=" in ln and len(ln.strip()) > 20
        )
        need = self.b.call(
            "read_file",
            {"path": main},
            numbered(main_lines2),
            text=f"The remaining failure is `{self.live}`: the prefix is now subtracted twice on "
            "the strict path. Re-reading the module after my edit.",
        )
        self.b.plant(
            "live_state",
            self.live,
            self.second_run.result_seq,
            need.call_seq,
            "assertion message of the latest run_tests on the same target (earlier runs differ)",
        )
        if self.defer_helper:
            self.read_helper(
                f"The strict path goes through {self.helper_func}; checking what it already strips."
            )
        self.b.call(
            "edit_file",
            {"path": main, "old_str": fix2_old, "new_str": fix2_old + "  # strict path already stripped"},
            self.edited(main),
        )  # fmt: skip
        self.run_tests(self.test_main, self.nodes_main2, [])

    def current_blocker(self) -> None:
        """Another caller of the helper now fails on short inputs: its error line is the blocker."""
        rng, func, kw1, test_caller = self.rng, self.func, self.call_line.keyword, self.test_caller
        blocker = self.pool.fresh(
            lambda: (
                f"ValueError: {self.helper_func}: {kw1} must be >= 0, got -{rng.randint(1, 480)}"
            )
        )
        short_test = f"test_{self.caller_mod}_short_{rng.choice(NOUNS)}"
        nodes_caller = sorted(
            {*test_ids(rng, [test_caller], self.b.size(20, 60)), f"{test_caller}::{short_test}"}
        )
        fail = Failure(
            f"{test_caller}::{short_test}",
            (
                f"def {short_test}(tiny_sample):",
                "    payload = tiny_sample.encode()",
                f">       assert {func}(payload) == len(payload)",
            ),
            blocker,
            f"{self.helper}:{rng.randint(20, 90)}",
        )
        bk = self.run_tests(
            test_caller,
            nodes_caller,
            [fail],
            f"{self.test_main} passes. {self.helper_func} is shared, so I'm running the tests of "
            f"{self.caller_mod}, another caller, as well.",
        )
        self.ask_to_widen()
        self.clamp(blocker, bk, nodes_caller)

    def clamp(self, blocker: str, failed: Step, nodes_caller: list[str]) -> None:
        """The fix quotes the blocker and clamps the shifted value; the caller's tests pass."""
        func, kw1, test_caller = self.func, self.call_line.keyword, self.test_caller
        shift = self.call_line.shift
        clamp = self.b.call(
            "edit_file",
            {"path": self.main, "old_str": shift, "new_str": f"{kw1}=max(0, {shift.split('=', 1)[1]})"},
            self.edited(self.main),
            text=f"The blocker is `{blocker}`: for inputs shorter than the prefix the new {kw1} "
            "goes negative. Clamping it at zero.",
        )  # fmt: skip
        self.b.plant(
            "live_state",
            blocker,
            failed.result_seq,
            clamp.call_seq,
            "error line of the most recent failed run (the current blocker), quoted by the fix",
        )
        self.run_tests(test_caller, nodes_caller, [])
        self.b.say(
            f"All tests in {self.test_main} and {test_caller} pass now. The bug was an "
            f"off-by-prefix in {func}: the length was measured before the {self.param} prefix was "
            f"removed; the new {kw1} is clamped at zero for short inputs."
        )

    def ask_to_widen(self) -> None:
        """Most of the time the agent asks before touching the other caller's behaviour."""
        if self.rng.random() < 0.7:
            self.asks += 1
            self.b.say(
                f"{self.test_main} passes now, but one test in {self.test_caller} fails on a short "
                "input. I didn't touch that module, so it is most likely a side effect of my fix. "
                "Should I fix it in this change as well?"
            )
            self.b.user(self.rng.choice(YES))

    # --- benchmark: evidence figures -------------------------------------------------------------
    def benchmark(self) -> None:
        """The benchmark's mean is reported now, its p95 only in the summary."""
        rng, pool, func = self.rng, self.pool, self.func
        runs = [rng.uniform(250, 600) for _ in range(50)]
        ordered = sorted(runs)
        mean = pool.fresh(lambda: f"mean {sum(runs) / 50 + rng.uniform(-0.04, 0.04):.1f} ms")
        self.p95 = pool.fresh(lambda: f"p95 {ordered[47] + rng.uniform(0.01, 0.09):.1f} ms")
        out = [f"$ python {self.bench} --runs 50", "warming up (5 runs) ... done"]
        out += [
            f"run {i + 1:02d}/50  {t:7.1f} ms  rss {rng.randint(80, 140)} MiB"
            for i, t in enumerate(runs)
        ]
        out.append(
            f"summary: n=50  {mean}  p50 {ordered[25]:.1f} ms  {self.p95}  max {ordered[-1]:.1f} ms"
        )
        self.b.user(
            rng.choice(
                (
                    f"Thanks! Could you check the fix didn't slow down {func}? There's a benchmark script.",
                    f"Nice. Please run the {self.main_mod} benchmark so we know the performance impact.",
                )
            )
        )
        self.bench_run = self.b.call(
            "bash", {"command": f"python {self.bench} --runs 50"}, "\n".join(out)
        )
        bn = self.b.say(
            f"Benchmark done: {mean} over 50 runs, in line with what I'd expect for this input "
            "size; the distribution has no outliers worth chasing."
        )
        self.b.plant(
            "evidence_detail",
            mean,
            self.bench_run.result_seq,
            bn,
            "mean latency figure from the benchmark output",
        )

    # --- optional turns, in a random order ----------------------------------------------------
    def episode_order(self) -> list[str]:
        """History and the suite always; at most ten user turns leave room for a few more."""
        rng = self.rng
        episodes = ["history", "suite"]
        # two extra questions leave room for two optional episodes
        episodes += rng.sample(["explain", "lint", "explain2"], rng.randint(0, 3 - self.asks // 2))
        rng.shuffle(episodes)
        self.read_paths = {self.main}
        return episodes

    def history(self) -> None:
        """git log, then git show of the commit whose subject matches the bug."""
        rng, noun, main = self.rng, self.noun, self.main
        self.b.user(
            f"When did this break? Please find the commit that introduced the bug in {main}."
        )
        hashes = [self.pool.git_hash() for _ in range(rng.randint(12, 24))]
        culprit = rng.randrange(2, len(hashes))
        subjects = [
            f"{rng.choice(VERBS)}: {rng.choice(('tidy', 'speed up', 'handle', 'refactor', 'fix', 'document'))} {rng.choice(NOUNS)} {rng.choice(('handling', 'parsing', 'limits', 'errors', 'tests'))}"
            for _ in hashes
        ]  # fmt: skip
        subjects[culprit] = f"{self.main_mod}: measure {noun} before stripping the prefix"
        log = self.b.call(
            "bash",
            {"command": f"git log --pretty=oneline -n {len(hashes)} -- {main}"},
            "\n".join(f"{h} {s}" for h, s in zip(hashes, subjects, strict=True)),
        )
        author = (rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES))
        show = [
            f"commit {hashes[culprit]}",
            f"Author: {author[0]} {author[1]} <{author[0].lower()}@{self.pkg}.dev>",
            f"Date:   {rng.choice(('Mon', 'Tue', 'Wed', 'Thu', 'Fri'))} {rng.choice(('Mar', 'Apr', 'May', 'Jun'))} {rng.randint(1, 28)} {rng.randint(8, 19):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d} 2025 +0200",
            "",
            f"    {subjects[culprit]}",
            "",
            f"    The {noun} length is now computed once, up front, for all inputs.",
            "",
            f" {main} | {rng.randint(6, 40)} ++++++++-----",
            f" {self.test_main} | {rng.randint(2, 12)} +++-",
            f" 2 files changed, {rng.randint(10, 50)} insertions(+), {rng.randint(3, 30)} deletions(-)",
        ]  # fmt: skip
        sh = self.b.call(
            "bash",
            {"command": f"git show --stat {hashes[culprit]}"},
            "\n".join(show),
            text="The subject of one commit matches the bug exactly; showing it.",
        )
        self.b.plant(
            "locator_handle",
            hashes[culprit],
            log.result_seq,
            sh.call_seq,
            "commit hash taken from git log output, then shown",
        )
        self.b.say(
            f'It came in with the commit "{subjects[culprit]}" by {author[0]} {author[1]}: '
            f"it moved the {noun} length computation before the prefix is stripped."
        )

    def suite_log(self) -> list[str]:
        """The full suite's pytest log, with a warnings summary before its last line."""
        rng, root, src, tests = self.rng, self.root, self.src, self.tests
        nodes_all = sorted({*self.nodes_main2, *test_ids(rng, tests, self.b.size(260, 420))})
        log = pytest_log(rng, root, nodes_all, [], skipped=rng.randint(1, 6))
        warn = [
            "=============================== warnings summary ===============================",
            *(
                line
                for _ in range(rng.randint(2, 5))
                for line in (
                    f"{rng.choice(tests)}::test_{rng.choice(VERBS)}_{rng.choice(NOUNS)}",
                    f"  {root}/{rng.choice(src)}:{rng.randint(10, 300)}: DeprecationWarning: {rng.choice(NOUNS)}_{rng.choice(('mode', 'hint', 'flag'))} is deprecated, use {rng.choice(NOUNS)}_policy",
                )
            ),
            "-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html",
        ]  # fmt: skip
        return log[:-1] + warn + log[-1:]

    def suite(self) -> None:
        """The full suite: truncated by the harness, its saved log read back."""
        rng = self.rng
        self.b.user(
            rng.choice(
                (
                    "Before we wrap up, run the whole test suite please.",
                    "Can you run the full suite to make sure nothing else broke?",
                )
            )
        )
        log = self.suite_log()
        route = self.pool.output_path("pytest", "log")
        keep = 200
        run = self.b.call("run_tests", {"target": "tests/"}, truncated(log, keep, route))
        cut = Truncated(route, run.result_seq, log, keep)
        self.read_back(cut, SUITE_READ_NOW if rng.random() < 0.5 else SUITE_READ_LATER)

    def unread_module(self) -> str:
        """A source module the agent has not read yet (now marked as read)."""
        path = self.rng.choice([p for p in self.src if p not in self.read_paths])
        self.read_paths.add(path)
        return path

    def module_lines(self, path: str, lo: int) -> list[str]:
        """Plausible source of ``path``, ``lo`` to 260 lines times the session's scale."""
        summary = self.rng.choice(SUMMARIES).format(noun=self.rng.choice(NOUNS))
        return self.gen.module(_module_name(path), summary, self.b.size(lo, 260, cap=400))

    def explain(self) -> None:
        """An explain-only question about another module; may honour a first-turn contract."""
        rng = self.rng
        other = self.unread_module()
        self.b.user(
            f"While you're at it: how does {_module_name(other)} decide when to "
            f"{rng.choice(VERBS)} its {rng.choice(NOUNS)}s? Just explain, no changes."
        )
        self.b.call("read_file", {"path": other}, numbered(self.module_lines(other, 80)))
        if self.contracts_left and self.b.user_turns_since(self.turn1) >= 2 and rng.random() < 0.5:
            c = self.contracts_left.pop(0)
            n = self.b.say(
                f"It checks the limit first and only then normalises, so a large input is "
                f"rejected before any allocation. I didn't change anything there. {c.honour}"
            )
            self.plant_contract(c, self.turn1, n)
        else:
            self.b.say(
                "It checks the size limit first and only then normalises, so a large input is "
                "rejected before any allocation. The retry path re-uses the same buffer."
            )

    def lint(self) -> None:
        """ruff findings, one long line fixed by hand (a verbatim span of a file read once)."""
        rng, pkg = self.rng, self.pkg
        self.b.user("Can you run the linter on the package and fix whatever is quick to fix?")
        target = self.unread_module()
        lines = self.module_lines(target, 100)
        findings = [
            f"{rng.choice(self.src)}:{rng.randint(5, 300)}:{rng.randint(1, 60)}: {code} {msg}"
            for code, msg in (rng.choice(LINT_FINDINGS) for _ in range(rng.randint(8, 24)))
        ]
        self.b.call(
            "bash",
            {"command": f"ruff check src/{pkg}"},
            "\n".join(findings)
            + f"\nFound {len(findings)} errors.\n[*] {rng.randint(2, 6)} fixable with the "
            "`--fix` option.",
        )
        read = self.b.call("read_file", {"path": target}, numbered(lines))
        self.fix_long_line(target, lines, read)
        self.b.call(
            "bash",
            {"command": f"ruff check src/{pkg} --fix"},
            f"Found {len(findings)} errors ({len(findings) - 2} fixed, 2 remaining).",
        )
        self.b.say(
            "Fixed what ruff could fix automatically plus one long line by hand; the two "
            "remaining findings are style choices I'd rather leave to you."
        )

    def fix_long_line(self, target: str, lines: list[str], read: Step) -> None:
        """Edit a line from the middle of the file just read, copied verbatim as old_str."""
        body = self.b.messages[read.result_seq].responses[0].content or ""
        cands = [
            c
            for c in middle_spans(body, lines)
            if not c.startswith("#") and self.b.occurrences(c) == 1
        ]
        if not cands:
            return
        span = self.rng.choice(cands)
        new = span.replace(" = ", " = (", 1) + ")" if " = " in span else span + "  # noqa: E501"
        ed = self.b.call(
            "edit_file",
            {"path": target, "old_str": span, "new_str": new},
            self.edited(target),
        )
        self.b.plant(
            "verbatim_source",
            span,
            read.result_seq,
            ed.call_seq,
            "edit_file.old_str copies a line from the middle of a file read once",
        )

    # --- the summary: the later evidence figure and any constraint not yet honoured -------------
    def summary(self) -> str:
        """The PR summary: the p95 figure, any constraint still open, the standing rule."""
        self.b.user(
            self.rng.choice(
                (
                    "Great, please write a short summary of what you changed, with the benchmark numbers.",
                    "Thanks. Summarise the change for the PR description, including the benchmark figures.",
                )
            )
        )
        honour = self.honours(self.contracts_left)
        n = self.b.say(
            f"Summary:\n- Fixed {self.func} in {self.main}: the {self.noun} length was measured "
            f"before the {self.param} prefix was stripped; the strict path no longer subtracts it "
            f"twice.\n- {self.test_main} passes; the full suite passes.\n"
            f"- The new {self.call_line.keyword} is clamped at zero; {self.test_caller} caught "
            f"that for short inputs.\n"
            f"- Benchmark ({self.bench}, 50 runs): {self.p95}, no regression.\n{honour}".rstrip()
        )
        self.b.plant(
            "evidence_detail",
            self.p95,
            self.bench_run.result_seq,
            n,
            "p95 latency from the benchmark, reported turns later",
        )
        self.close(self.contracts_left, self.turn1, n)
        return f"fix {self.test_name} in {self.pkg} ({self.main}), benchmark, history, full suite"


#: The script ``WORKLOADS`` runs for this workload.
build = Coding.script
