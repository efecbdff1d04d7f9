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

from .builder import Rule, SessionBuilder
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
from .common import (
    READ_FILE,
    TRUNCATION_NOTE,
    middle_spans,
    numbered_slice,
    tool,
    tools_block,
    truncated,
)
from .vocab import FIRST_NAMES, LAST_NAMES

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

CONTRACTS = (
    (
        "Please never modify anything under the tests/ directory, QA owns those files.",
        "anything under the tests/ directory",
        "As you asked, I did not modify anything under the tests/ directory.",
    ),
    (
        "Don't add any new third-party dependencies, we ship this to air-gapped customers.",
        "new third-party dependencies",
        "The change uses only the standard library, so there are no new third-party dependencies.",
    ),
    (
        "Keep the public signature of {func}() exactly as it is; other teams call it directly.",
        "public signature of {func}()",
        "I kept the public signature of {func}() unchanged, as you asked; only its internals moved.",
    ),
    (
        "Please don't commit anything yourself, I want to review the diff and commit it myself.",
        "review the diff and commit it myself",
        "Nothing is committed: the changes are in the working tree so you can review the diff and commit it myself, as you put it.",
    ),
    (
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


def _paths(rng: random.Random, pkg: str) -> tuple[list[str], list[str]]:
    subs = rng.sample(SUBPACKAGES, 4)
    mods = rng.sample(MODULES, rng.randint(8, 12))
    src = [f"src/{pkg}/{subs[i % len(subs)]}/{m}.py" for i, m in enumerate(mods)]
    tests = [f"tests/{p.split('/')[2]}/test_{p.rsplit('/', 1)[1]}" for p in src]
    return src, tests


def build(b: SessionBuilder) -> str:
    rng = b.rng
    pool = b.pool
    pkg, desc = rng.choice(PROJECTS)
    gen = CodeGen(rng, pkg)
    root = f"/workspace/{pkg}"
    src, tests = _paths(rng, pkg)
    main_i = rng.randrange(len(src))
    main, test_main = src[main_i], tests[main_i]
    main_mod = main.rsplit("/", 1)[1][:-3]
    bench = f"benchmarks/bench_{main_mod}.py"
    noun, verb = rng.choice(NOUNS), rng.choice(VERBS)
    func = f"{verb}_{noun}"
    helper_noun = rng.choice([n for n in NOUNS if n != noun])
    helper_func = f"_{rng.choice(VERBS)}_{helper_noun}"
    helper_sub = rng.choice([s for s in SUBPACKAGES if f"/{s}/" not in main])
    helper = f"src/{pkg}/{helper_sub}/_{helper_noun}_{rng.choice(('shim', 'legacy', 'compat', 'impl'))}.py"
    param = rng.choice(("utf-16", "bom", "crlf", "folded", "large", "empty", "truncated"))
    # another module that calls the helper: its tests fail after the first fix (the blocker)
    caller_i = rng.choice([i for i in range(len(src)) if i != main_i])
    caller, test_caller = src[caller_i], tests[caller_i]
    caller_mod = caller.rsplit("/", 1)[1][:-3]

    # --- the system prompt: tools and a repository map (always present) -----------------
    repo_map = [f"  {p}" for p in (*src, *tests, bench, "pyproject.toml", "README.md")]
    b.system(
        f"You are an autonomous coding agent working in the repository at {root} ({desc}).\n"
        "Work in small steps: reproduce a problem before fixing it, read a file before editing "
        "it, and run the relevant tests after every change. Be concise with the user.\n"
        f"{TRUNCATION_NOTE}\n\n# Tools\n{tools_block(TOOLS)}\n\n# Repository map\n"
        + "\n".join(repo_map)
        + "\n\n# Conventions\n- Python 3.11, formatted with ruff, type hints on public functions.\n"
        "- Tests run with pytest; keep changes minimal and explain them briefly."
    )

    # --- planted code: the line to fix sits in the middle of the module ------------------------
    def long_call_line() -> tuple[str, str, str, str, str]:
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
                return line, fixed, wrong, kw1, shift

    anchor_line, fixed_line, wrong_line, kw1, shift = long_call_line()
    special = Special(
        func,
        f"{gen.var()}: bytes, *, {gen.var()}: int = 0",
        (
            f'    """Return the {noun} length for one {param} input."""',
            *gen.statements(4, rng.randint(3, 6)),
            f"    {anchor_line}",
            *gen.statements(4, rng.randint(2, 4)),
            f"    return {anchor_line.split(' = ', 1)[0]}",
        ),
    )
    n_main = b.size(150, 380, cap=400)
    for _ in range(8):  # keep the planted line in the middle of the file
        main_lines = gen.module(main_mod, rng.choice(SUMMARIES).format(noun=noun), n_main, special)
        if middle_spans(numbered(main_lines), [anchor_line]):
            break
    helper_lines = gen.module(
        helper.rsplit("/", 1)[1][:-3], f"Low-level {helper_noun} helpers.", rng.randint(80, 200)
    )
    def_line = main_lines.index(f"def {func}({special.params}) -> {special.returns}:") + 1

    # --- turn 1: the bug report, with a standing constraint --------------------------------------
    contracts = rng.sample(CONTRACTS, 2 if rng.random() < 0.35 else 1)
    contracts = [tuple(s.format(func=func) for s in c) for c in contracts]
    b.standing_rule(
        rng.choice(RULES).format(
            lines=rng.choice((30, 40, 50, 60)),
            ticket=pool.fresh(lambda: f"{pkg.upper()}-{rng.randint(1000, 9999)}"),
        )
    )
    test_name = f"test_{func}[{param}]"
    turn1 = b.user(
        f"Hi! {test_main} started failing after yesterday's merge: {test_name} fails on "
        f"{param} input. Can you find the cause and fix it? " + " ".join(c[0] for c in contracts)
    )
    first_msg = f"AssertionError: assert {rng.randint(1000, 9999)} == {rng.randint(1000, 9999)}"
    nodes_main = [*test_ids(rng, [test_main], b.size(40, 110)), f"{test_main}::{test_name}"]
    nodes_main = sorted(set(nodes_main))
    fail1 = Failure(
        f"{test_main}::{test_name}",
        (
            f"def {test_name.split('[')[0]}(sample):",
            f"    result = {func}(sample)",
            f">       assert result == EXPECTED[{param!r}]",
        ),
        first_msg,
        f"{main}:{def_line + len(special.body) - 3}",
    )
    b.call(
        "run_tests",
        {"target": test_main},
        "\n".join(pytest_log(rng, root, nodes_main, [fail1])),
        text="Let me reproduce the failure first.",
        error=True,
    )

    grep_lines = [
        f"{main}:{def_line}:def {func}({special.params}) -> {special.returns}:",
        f"{helper}:{rng.randint(20, 60)}:def {helper_func}(data: bytes, *args, **kwargs) -> int:",
        f"{caller}:{rng.randint(10, 300)}:    return {helper_func}({gen.var()}, {gen.var()})",
        *(
            f"{rng.choice(src)}:{rng.randint(10, 300)}:    return {helper_func}({gen.var()}, {gen.var()})"
            for _ in range(rng.randint(2, 6))
        ),
        *(
            f"{rng.choice(tests)}:{rng.randint(10, 200)}:from {pkg}.{helper_sub} import {helper_func}"
            for _ in range(rng.randint(1, 3))
        ),
    ]
    g = b.call(
        "grep",
        {"pattern": helper_func, "path": "src/"},
        "\n".join(sorted(set(grep_lines))),
        text=f"The failure is inside {func}; let me see where its length helper lives.",
    )
    m1 = b.call("read_file", {"path": main}, numbered(main_lines))
    defer_helper = rng.random() < 0.5  # read the helper only when the second failure points at it

    def read_helper(text: str) -> None:
        h1 = b.call("read_file", {"path": helper}, numbered(helper_lines), text=text)
        b.plant(
            "locator_handle",
            helper,
            g.result_seq,
            h1.call_seq,
            "helper module path found only in the grep output, then opened with read_file",
        )

    if not defer_helper:
        read_helper(f"{func} delegates to {helper_func}; reading that module too.")

    b.call(
        "edit_file",
        {"path": main, "old_str": wrong_line, "new_str": fixed_line},
        f"Error: old_str not found in {main}. No changes were made; check whitespace and exact text.",
        error=True,
        text=f"The {param} case is measured before the prefix is removed. Fixing the offset.",
    )
    e1 = b.call(
        "edit_file",
        {"path": main, "old_str": anchor_line, "new_str": fixed_line},
        f"The file {main} has been edited. 1 occurrence replaced.",
        text="My first attempt didn't match the file exactly; retrying with the exact line.",
    )
    b.plant(
        "verbatim_source",
        anchor_line,
        m1.result_seq,
        e1.call_seq,
        "edit_file.old_str copies a line from the middle of the first read of the module",
    )

    # the fix moves the failure: the latest run holds the current blocker
    x, y = rng.sample(range(1000, 9999), 2)
    live = f"{noun} length {x} != expected {y}"
    other_test = f"test_{func}_roundtrip[{rng.choice(('latin-1', 'ascii', 'tabs', 'nested'))}]"
    nodes_main2 = sorted({*nodes_main, f"{test_main}::{other_test}"})
    fail2 = Failure(
        f"{test_main}::{other_test}",
        (
            f"def {other_test.split('[')[0]}(sample):",
            f"    encoded = {func}(sample, strict=True)",
            ">       assert encoded == sample.expected_length",
        ),
        f"AssertionError: {live}",
        f"{main}:{def_line + 4}",
    )
    r2 = b.call(
        "run_tests",
        {"target": test_main},
        "\n".join(pytest_log(rng, root, nodes_main2, [fail2])),
        error=True,
    )
    main_lines2 = [ln.replace(anchor_line, fixed_line) for ln in main_lines]
    fix2_old = next(
        ln.strip()
        for ln in main_lines2[def_line:]
        if ln.startswith("    ") and "=" in ln and len(ln.strip()) > 20
    )
    asks = 0
    if rng.random() < 0.5:
        asks += 1
        b.say(
            f"The {param} test passes now, but the roundtrip test in the same file fails. "
            f"I think the fix is incomplete rather than wrong. Shall I continue with it?"
        )
        b.user(
            rng.choice(
                ("Yes please, go ahead.", "Sure, continue.", "Go on, but keep the change small.")
            )
        )
    need = b.call(
        "read_file",
        {"path": main},
        numbered(main_lines2),
        text=f"The remaining failure is `{live}`: the prefix is now subtracted twice on "
        "the strict path. Re-reading the module after my edit.",
    )
    b.plant(
        "live_state",
        live,
        r2.result_seq,
        need.call_seq,
        "assertion message of the latest run_tests on the same target (earlier runs differ)",
    )
    if defer_helper:
        read_helper(f"The strict path goes through {helper_func}; checking what it already strips.")
    b.call(
        "edit_file",
        {
            "path": main,
            "old_str": fix2_old,
            "new_str": fix2_old + "  # strict path already stripped",
        },
        f"The file {main} has been edited. 1 occurrence replaced.",
    )
    b.call("run_tests", {"target": test_main}, "\n".join(pytest_log(rng, root, nodes_main2, [])))

    # the current blocker: another caller of the helper now fails on short inputs
    blocker = pool.fresh(
        lambda: f"ValueError: {helper_func}: {kw1} must be >= 0, got -{rng.randint(1, 480)}"
    )
    short_test = f"test_{caller_mod}_short_{rng.choice(NOUNS)}"
    nodes_caller = sorted(
        {*test_ids(rng, [test_caller], b.size(20, 60)), f"{test_caller}::{short_test}"}
    )
    fail3 = Failure(
        f"{test_caller}::{short_test}",
        (
            f"def {short_test}(tiny_sample):",
            "    payload = tiny_sample.encode()",
            f">       assert {func}(payload) == len(payload)",
        ),
        blocker,
        f"{helper}:{rng.randint(20, 90)}",
    )
    bk = b.call(
        "run_tests",
        {"target": test_caller},
        "\n".join(pytest_log(rng, root, nodes_caller, [fail3])),
        text=f"{test_main} passes. {helper_func} is shared, so I'm running the tests of "
        f"{caller_mod}, another caller, as well.",
        error=True,
    )
    if rng.random() < 0.7:
        asks += 1
        b.say(
            f"{test_main} passes now, but one test in {test_caller} fails on a short input. "
            "I didn't touch that module, so it is most likely a side effect of my fix. "
            "Should I fix it in this change as well?"
        )
        b.user(rng.choice(YES))
    clamp = b.call(
        "edit_file",
        {"path": main, "old_str": shift, "new_str": f"{kw1}=max(0, {shift.split('=', 1)[1]})"},
        f"The file {main} has been edited. 1 occurrence replaced.",
        text=f"The blocker is `{blocker}`: for inputs shorter than the prefix the new {kw1} "
        "goes negative. Clamping it at zero.",
    )
    b.plant(
        "live_state",
        blocker,
        bk.result_seq,
        clamp.call_seq,
        "error line of the most recent failed run (the current blocker), quoted by the fix",
    )
    b.call("run_tests", {"target": test_caller}, "\n".join(pytest_log(rng, root, nodes_caller, [])))
    b.say(
        f"All tests in {test_main} and {test_caller} pass now. The bug was an off-by-prefix in "
        f"{func}: the length was measured before the {param} prefix was removed; the new "
        f"{kw1} is clamped at zero for short inputs."
    )

    # --- benchmark: evidence figures -------------------------------------------------------------
    runs = [rng.uniform(250, 600) for _ in range(50)]
    ordered = sorted(runs)
    mean = pool.fresh(lambda: f"mean {sum(runs) / 50 + rng.uniform(-0.04, 0.04):.1f} ms")
    p95 = pool.fresh(lambda: f"p95 {ordered[47] + rng.uniform(0.01, 0.09):.1f} ms")
    bench_out = [f"$ python {bench} --runs 50", "warming up (5 runs) ... done"]
    bench_out += [
        f"run {i + 1:02d}/50  {t:7.1f} ms  rss {rng.randint(80, 140)} MiB"
        for i, t in enumerate(runs)
    ]
    bench_out.append(
        f"summary: n=50  {mean}  p50 {ordered[25]:.1f} ms  {p95}  max {ordered[-1]:.1f} ms"
    )
    b.user(
        rng.choice(
            (
                f"Thanks! Could you check the fix didn't slow down {func}? There's a benchmark script.",
                f"Nice. Please run the {main_mod} benchmark so we know the performance impact.",
            )
        )
    )
    bs = b.call("bash", {"command": f"python {bench} --runs 50"}, "\n".join(bench_out))
    bn = b.say(
        f"Benchmark done: {mean} over 50 runs, in line with what I'd expect for this input "
        "size; the distribution has no outliers worth chasing."
    )
    b.plant(
        "evidence_detail", mean, bs.result_seq, bn, "mean latency figure from the benchmark output"
    )

    # --- optional turns, in a random order ----------------------------------------------------
    episodes = ["history", "suite"]
    # at most ten user turns: two extra questions leave room for two optional episodes
    episodes += rng.sample(["explain", "lint", "explain2"], rng.randint(0, 3 - asks // 2))
    rng.shuffle(episodes)
    contract_turns_left = list(contracts)
    state = {"suite_route": None}
    read_paths = {main}

    for ep in episodes:
        if ep == "history":
            b.user(
                f"When did this break? Please find the commit that introduced the bug in {main}."
            )
            hashes = [pool.git_hash() for _ in range(rng.randint(12, 24))]
            culprit = rng.randrange(2, len(hashes))
            subjects = [
                f"{rng.choice(VERBS)}: {rng.choice(('tidy', 'speed up', 'handle', 'refactor', 'fix', 'document'))} {rng.choice(NOUNS)} {rng.choice(('handling', 'parsing', 'limits', 'errors', 'tests'))}"
                for _ in hashes
            ]
            subjects[culprit] = f"{main_mod}: measure {noun} before stripping the prefix"
            log = b.call(
                "bash",
                {"command": f"git log --pretty=oneline -n {len(hashes)} -- {main}"},
                "\n".join(f"{h} {s}" for h, s in zip(hashes, subjects, strict=True)),
            )
            author = (rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES))
            show = [
                f"commit {hashes[culprit]}",
                f"Author: {author[0]} {author[1]} <{author[0].lower()}@{pkg}.dev>",
                f"Date:   {rng.choice(('Mon', 'Tue', 'Wed', 'Thu', 'Fri'))} {rng.choice(('Mar', 'Apr', 'May', 'Jun'))} {rng.randint(1, 28)} {rng.randint(8, 19):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d} 2025 +0200",
                "",
                f"    {subjects[culprit]}",
                "",
                f"    The {noun} length is now computed once, up front, for all inputs.",
                "",
                f" {main} | {rng.randint(6, 40)} ++++++++-----",
                f" {test_main} | {rng.randint(2, 12)} +++-",
                f" 2 files changed, {rng.randint(10, 50)} insertions(+), {rng.randint(3, 30)} deletions(-)",
            ]
            sh = b.call(
                "bash",
                {"command": f"git show --stat {hashes[culprit]}"},
                "\n".join(show),
                text="The subject of one commit matches the bug exactly; showing it.",
            )
            b.plant(
                "locator_handle",
                hashes[culprit],
                log.result_seq,
                sh.call_seq,
                "commit hash taken from git log output, then shown",
            )
            b.say(
                f'It came in with the commit "{subjects[culprit]}" by {author[0]} {author[1]}: '
                f"it moved the {noun} length computation before the prefix is stripped."
            )
        elif ep == "suite":
            b.user(
                rng.choice(
                    (
                        "Before we wrap up, run the whole test suite please.",
                        "Can you run the full suite to make sure nothing else broke?",
                    )
                )
            )
            nodes_all = sorted({*nodes_main2, *test_ids(rng, tests, b.size(260, 420))})
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
            ]
            log = log[:-1] + warn + log[-1:]
            route = pool.output_path("pytest", "log")
            keep = 200
            suite = b.call("run_tests", {"target": "tests/"}, truncated(log, keep, route))
            state["suite_route"] = route
            if rng.random() < 0.5:
                rd = b.call(
                    "read_file",
                    {"path": route, "offset": keep, "limit": len(log) - keep},
                    numbered_slice(log, keep, len(log) - keep),
                    text="The output was cut before the summary; reading the rest of the saved log.",
                )
                b.plant(
                    "recovery_routing",
                    route,
                    suite.result_seq,
                    rd.call_seq,
                    "truncated run_tests output names the saved log; the agent reads it",
                )
                b.say(
                    "The full suite passes; there are a few deprecation warnings, none from the code I touched."
                )
            else:
                b.say(
                    "Everything in the visible part of the output passes; the harness cut the rest."
                )
                b.user("Were there any failures or warnings further down in that log?")
                rd = b.call(
                    "read_file",
                    {"path": route, "offset": keep, "limit": len(log) - keep},
                    numbered_slice(log, keep, len(log) - keep),
                    text="Let me read the rest of the saved log.",
                )
                b.plant(
                    "recovery_routing",
                    route,
                    suite.result_seq,
                    rd.call_seq,
                    "truncated run_tests output names the saved log; read in a later turn",
                )
                b.say(
                    "No failures. The tail has deprecation warnings only, all in code I did not change."
                )
        elif ep in ("explain", "explain2"):
            other = rng.choice([p for p in src if p not in read_paths])
            read_paths.add(other)
            b.user(
                f"While you're at it: how does {other.rsplit('/', 1)[1][:-3]} decide when to "
                f"{rng.choice(VERBS)} its {rng.choice(NOUNS)}s? Just explain, no changes."
            )
            b.call(
                "read_file",
                {"path": other},
                numbered(
                    gen.module(
                        other.rsplit("/", 1)[1][:-3],
                        rng.choice(SUMMARIES).format(noun=rng.choice(NOUNS)),
                        b.size(80, 260, cap=400),
                    )
                ),
            )
            if contract_turns_left and b.user_turns_since(turn1) >= 2 and rng.random() < 0.5:
                c = contract_turns_left.pop(0)
                n = b.say(
                    f"It checks the limit first and only then normalises, so a large input is "
                    f"rejected before any allocation. I didn't change anything there. {c[2]}"
                )
                b.plant("behavioural_contract", c[1], turn1, n, f"user constraint: {c[0]}")
            else:
                b.say(
                    "It checks the size limit first and only then normalises, so a large input is "
                    "rejected before any allocation. The retry path re-uses the same buffer."
                )
        elif ep == "lint":
            b.user("Can you run the linter on the package and fix whatever is quick to fix?")
            target = rng.choice([p for p in src if p not in read_paths])
            read_paths.add(target)
            t_lines = gen.module(
                target.rsplit("/", 1)[1][:-3],
                rng.choice(SUMMARIES).format(noun=rng.choice(NOUNS)),
                b.size(100, 260, cap=400),
            )
            findings = [
                f"{rng.choice(src)}:{rng.randint(5, 300)}:{rng.randint(1, 60)}: {code} {msg}"
                for code, msg in (
                    rng.choice(
                        (
                            ("F401", "`re` imported but unused"),
                            ("E501", "Line too long (104 > 100)"),
                            ("B006", "Do not use mutable data structures for argument defaults"),
                            ("UP007", "Use `X | Y` for type annotations"),
                            ("SIM108", "Use ternary operator instead of `if`-`else`-block"),
                        )
                    )
                    for _ in range(rng.randint(8, 24))
                )
            ]
            b.call(
                "bash",
                {"command": f"ruff check src/{pkg}"},
                "\n".join(findings)
                + f"\nFound {len(findings)} errors.\n[*] {rng.randint(2, 6)} fixable with the `--fix` option.",
            )
            rt = b.call("read_file", {"path": target}, numbered(t_lines))
            cands = [
                c
                for c in middle_spans(b.messages[rt.result_seq].responses[0].content or "", t_lines)
                if not c.startswith("#") and b.occurrences(c) == 1
            ]
            if cands:
                span = rng.choice(cands)
                ed = b.call(
                    "edit_file",
                    {
                        "path": target,
                        "old_str": span,
                        "new_str": span.replace(" = ", " = (", 1) + ")"
                        if " = " in span
                        else span + "  # noqa: E501",
                    },
                    f"The file {target} has been edited. 1 occurrence replaced.",
                )
                b.plant(
                    "verbatim_source",
                    span,
                    rt.result_seq,
                    ed.call_seq,
                    "edit_file.old_str copies a line from the middle of a file read once",
                )
            b.call(
                "bash",
                {"command": f"ruff check src/{pkg} --fix"},
                f"Found {len(findings)} errors ({len(findings) - 2} fixed, 2 remaining).",
            )
            b.say(
                "Fixed what ruff could fix automatically plus one long line by hand; the two "
                "remaining findings are style choices I'd rather leave to you."
            )

    # --- the summary: the later evidence figure and any constraint not yet honoured -------------
    b.user(
        rng.choice(
            (
                "Great, please write a short summary of what you changed, with the benchmark numbers.",
                "Thanks. Summarise the change for the PR description, including the benchmark figures.",
            )
        )
    )
    honour = " ".join([*(c[2] for c in contract_turns_left), b.rule_honour()]).strip()
    n = b.say(
        f"Summary:\n- Fixed {func} in {main}: the {noun} length was measured before the "
        f"{param} prefix was stripped; the strict path no longer subtracts it twice.\n"
        f"- {test_main} passes; the full suite passes.\n"
        f"- The new {kw1} is clamped at zero; {test_caller} caught that for short inputs.\n"
        f"- Benchmark ({bench}, 50 runs): {p95}, no regression.\n{honour}".rstrip()
    )
    b.plant(
        "evidence_detail",
        p95,
        bs.result_seq,
        n,
        "p95 latency from the benchmark, reported turns later",
    )
    for c in contract_turns_left:
        b.plant("behavioural_contract", c[1], turn1, n, f"user constraint: {c[0]}")
    b.plant_rule(n)
    return f"fix {test_name} in {pkg} ({main}), benchmark, history, full suite"
