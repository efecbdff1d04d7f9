"""The flow judge's rules of round 2, each on a hand-built session: a view that keeps what the
future needs, and one that removes it. And the patterns seen on traces the judge was not tuned
on: a status footer every observation repeats, generic and habitual arguments, a tiny output
inside a later date, an environment error the agent works around without naming it, a command's
output wrapped in JSON, a numbered file listing, a hex literal, a written file's identifiers."""

from __future__ import annotations

import json
from dataclasses import replace

from ctxreplay.judges.base import Verdict
from ctxreplay.judges.flow import FlowJudge
from ctxreplay.replay.plan import Edit

from builders import call, counted, result, say, system, user, view_input


def judge_case(messages: list, cut: int, *edits: Edit, judge: FlowJudge | None = None) -> Verdict:
    """Prefix = messages before ``cut``; the view commits ``edits``; the judge sees the rest (the
    whole session given, as the engine gives it)."""
    msgs = tuple(counted(messages))
    item = replace(view_input(msgs[:cut], msgs[cut:], *edits), session=msgs)
    return (judge or FlowJudge()).judge(item)


def prune(object_id: str) -> Edit:
    return Edit(object_id, "prune")


def lost(v: Verdict) -> list[str]:
    return [loss.anchor for loss in v.losses]


def hows(v: Verdict) -> set[str]:
    return {loss.detail.split(", used by ")[1].split(":")[0] for loss in v.losses}


# --- a status footer every observation repeats (SWE-agent's "(Open file: …)") ---------------


def footer(path: str) -> str:
    return f"(Open file: {path})\n(Current directory: /repo)"


def footer_session() -> list:
    return [
        system(),
        user("Reproduce the bug in reproduce.py, then fix it."),
        call("c1", "open", {"path": "reproduce.py"}),
        result("c1", f"1:import lib\n2:print(lib.parse('x'))\n{footer('/repo/reproduce.py')}"),
        call("c2", "create", {"path": "notes.txt"}),
        result("c2", f"[File: notes.txt (0 lines)]\n{footer('/repo/reproduce.py')}"),
        call("c3", "search", {"q": "def parse"}),
        result("c3", f"lib.py:10: def parse(s):\n{footer('/repo/reproduce.py')}"),
        call("c4", "open", {"path": "lib.py"}),
        result("c4", f"10:def parse(s):\n11:    return TABLE[s]\n{footer('/repo/lib.py')}"),
        user("Go on."),
        call("c5", "python", {"cmd": "python reproduce.py"}),
    ]


def test_a_footer_every_observation_repeats_is_no_fact() -> None:
    """The future runs reproduce.py; the footer naming it stands in three observations of the
    session: no one of them is what the run rests on, so clearing all but the last result (whose
    footer names another file) loses nothing. Read as a fact, the footer was a lost locator."""
    cleared = [prune(f"function:{t}:{n}") for t, n in (("open", 1), ("create", 2), ("search", 3))]
    assert judge_case(footer_session(), 11, *cleared).label == "no_impact"
    off = FlowJudge(FlowJudge.Params(boilerplate=0))
    v = judge_case(footer_session(), 11, *cleared, judge=off)
    assert v.label == "impact" and "(Open file: /repo/reproduce.py)" in lost(v)


# --- generic keys and habitual arguments -------------------------------------------------------


def test_an_argument_passed_out_of_habit_rests_on_no_message() -> None:
    """The agent passes the same workdir in every call; an old error line that holds the path
    is no dependency of the next call (it was, by the key and value rule, before)."""
    work = "/mnt/d/ai/MoonMind"

    def shell(cid: str, cmd: str) -> object:
        return call(cid, "shell", {"command": ["bash", "-lc", cmd], "workdir": work})

    messages = [
        system(),
        user("Set up the project."),
        shell("c1", "ls"),
        result("c1", f"{work}/.specify/common.sh: line 3: $'\\r': command not found"),
        shell("c2", "cat README.md"),
        result("c2", "# MoonMind"),
        shell("c3", "git status"),
        result("c3", "On branch main"),
        user("Now run the tests."),
        shell("c4", "pytest -q"),
    ]
    v = judge_case(messages, 9, prune("function:shell:1"))
    assert v.label == "no_impact", v.losses
    once = FlowJudge(FlowJudge.Params(habit=0))
    assert judge_case(messages, 9, prune("function:shell:1"), judge=once).label == "impact"


def test_generic_keys_in_code_are_no_fields() -> None:
    """``timeout=timeout`` and ``text=True`` in a file the agent read name no value the future
    needs: writing code with the same keywords does not depend on the read."""
    code = "def run(cmd, timeout):\n    return subprocess.run(cmd, text=True, timeout=timeout)"
    messages = [
        system(),
        user("Add a helper like run()."),
        call("c1", "read_file", {"path": "util.py"}),
        result("c1", code),
        user("Write it."),
        call(
            "c2", "write_file", {"path": "other.py", "content": "x = run(['ls'], timeout=timeout)"}
        ),
    ]
    assert judge_case(messages, 5, prune("function:read_file:1")).label == "no_impact"


def test_a_field_that_repeats_its_key_is_no_field_of_a_command_s_output() -> None:
    """A diff the agent printed holds ``timeout=timeout``; the future writes a schema with a
    ``timeout`` property. The line names nothing but its key, so the schema rests on no part of
    the diff (it did, as a field named by key and value, before). A field with a value of its
    own (``retries=seven_max``) named with its key still is a use."""

    def messages(line: str, written: str) -> list:
        return [
            system(),
            user("Show me what changed."),
            call("c1", "bash", {"command": "git diff tools.py"}),
            result(
                "c1", f"diff --git a/tools.py b/tools.py\n-        cmd,\n-        {line}\n+    )"
            ),
            user("Now write the tool's schema."),
            call("c2", "write_file", {"path": "schema.json", "content": written}),
        ]

    schema = json.dumps({"properties": {"timeout": {"type": "integer", "default": 30}}})
    echo = messages("timeout=timeout", schema)
    corpus = FlowJudge()  # a corpus where `timeout` is a common word, as it is in code
    corpus.use_state({"df": {"timeout": 60}, "sessions": 100})
    assert judge_case(echo, 5, prune("function:bash:1"), judge=corpus).label == "no_impact"
    own = messages("retries=seven_max", json.dumps({"retries": "seven_max"}))
    v = judge_case(own, 5, prune("function:bash:1"))
    assert v.label == "impact" and "retries=seven_max" in " ".join(lost(v))


# --- a tiny output inside a later date ---------------------------------------------------------


def test_a_tiny_output_is_not_used_by_a_date_that_holds_it() -> None:
    messages = [
        system(),
        user("What year does the changelog start?"),
        call("c1", "shell", {"command": "head -c4 CHANGELOG"}),
        result("c1", json.dumps({"output": "2025\n", "metadata": {"exit_code": 0}})),
        user("Write today's entry."),
        call("c2", "apply_patch", {"input": "## 2025-11-13\n- fixed parsing"}),
    ]
    assert judge_case(messages, 5, prune("function:shell:1")).label == "no_impact"


# --- an environment error worked around ---------------------------------------------------------


def mail_session() -> list:
    return [
        system(),
        user("Email the report to Mark."),
        call("c1", "bash", {"command": "mail -s report mark@example.com < report.txt"}),
        result("c1", "bash: mail: command not found"),
        call("c2", "bash", {"command": "apt-get install -y mailutils"}),
    ]


def test_an_environment_error_the_next_call_works_around_is_needed() -> None:
    """The last result says ``mail`` does not exist; the next call installs mailutils without
    naming the error: the error is what it rests on."""
    assert judge_case(mail_session(), 4).label == "no_impact"
    v = judge_case(mail_session(), 4, prune("function:bash:1"))
    assert v.label == "impact" and "bash: mail: command not found" in lost(v)
    assert hows(v) == {"state"} and {loss.category for loss in v.losses} == {"live_state"}
    off = FlowJudge(FlowJudge.Params(latest_errors=False))
    assert judge_case(mail_session(), 4, prune("function:bash:1"), judge=off).label == "no_impact"


# --- a command's output wrapped in JSON (Codex CLI) ------------------------------------------


def codex_session() -> list:
    listing = "\n".join(f"src/module_{i}.py: {i * 10} lines" for i in range(1, 30))
    spec = "# Spec\nThe parser MUST reject empty input.\nOwner: team-kappa-7"
    return [
        system(),
        user("Summarise the project."),
        call("c1", "shell", {"command": ["bash", "-lc", "wc -l src/*.py"]}),
        result("c1", json.dumps({"output": listing + "\n", "metadata": {"exit_code": 0}})),
        call("c2", "shell", {"command": ["bash", "-lc", "cat SPEC.md"]}),
        result("c2", json.dumps({"output": spec + "\n", "metadata": {"exit_code": 0}})),
        user("Who owns it?"),
        say("The spec names team-kappa-7 as the owner."),
    ]


def test_text_inside_a_json_output_is_its_lines_not_one_field() -> None:
    """The owner line of SPEC.md is what the answer uses, not the whole output: the loss is
    that line, probed as the JSON holds it; the listing (which the answer does not use) is not
    lost with a token of it."""
    v = judge_case(codex_session(), 7, prune("function:shell:2"))
    assert v.label == "impact" and lost(v) == ["Owner: team-kappa-7"]
    assert judge_case(codex_session(), 7, prune("function:shell:1")).label == "no_impact"


# --- a numbered listing, copied without its numbers ------------------------------------------

BODY = [
    "def invert(data):",
    "    if not data.children:",
    "        return data",
    "    flipped = [invert(c) for c in data.children]",
    "    return Node(data.name, list(reversed(flipped)))",
]


def listing_session() -> list:
    numbered = "\n".join(f"{n:6d}\t{line}" for n, line in enumerate(BODY, start=40))
    old = "\n".join(BODY).replace("reversed", "sorted")  # an older version, unnumbered
    return [
        system(),
        user("Move invert() to its own module."),
        call("c1", "edit_file", {"path": "tree.py", "old": old, "new": "pass"}),
        result("c1", f"String to replace not found in file.\nString: {old}"),
        call("c2", "read_file", {"path": "tree.py"}),
        result("c2", "Here is the file:\n" + numbered),
        user("Do it."),
        call("c3", "write_file", {"path": "invert.py", "content": "\n".join(BODY)}),
    ]


def test_a_copy_of_a_numbered_listing_is_from_the_listing() -> None:
    """The new file copies the read (line numbers and all in the message), not the older
    unnumbered echo of the failed edit: pruning the echo loses nothing, pruning the read
    loses the copy, probed as the read holds it."""
    assert judge_case(listing_session(), 7, prune("function:edit_file:1")).label == "no_impact"
    v = judge_case(listing_session(), 7, prune("function:read_file:2"))
    assert v.label == "impact" and hows(v) == {"copy"}
    assert all("\t" in a or "41" in "".join(a.split()) or "invert" in a for a in lost(v))


def test_a_field_is_not_read_out_of_a_file_s_code() -> None:
    """``name: "Root"`` in a numbered file listing is code, not a field of tool output."""
    from ctxreplay.text.facts import facts_of

    listing = "\n".join(f"{n:6d}\t{x}" for n, x in enumerate(['name: "Root",', "id: 1,"], 3))
    assert {f.kind for f in facts_of("x\n" + listing + "\n     5\tend")} == {"line"}


# --- a hex literal and its digits ---------------------------------------------------------------


def test_a_hex_literal_is_the_digits_a_listing_prints() -> None:
    modulus = "C7F10C9630187955A702E71739240C35D448C7149C796EC2E34A3F8E516C2E52"
    messages = [
        system(),
        user("Recover the key."),
        call("c1", "cat", {"path": "capsule.json"}),
        result("c1", json.dumps({"pubkey": [modulus, "5"]})),
        user("Build the public key."),
        call("c2", "RsaCtfTool.py", {"command": f"RsaCtfTool.py --createpub -n 0x{modulus} -e 5"}),
    ]
    assert judge_case(messages, 5).label == "no_impact"
    assert judge_case(messages, 5, prune("function:cat:1")).label == "impact"


# --- what a body the agent writes names ----------------------------------------------------------


def test_a_written_file_names_its_locators_not_its_identifiers() -> None:
    """A long file the agent writes reuses identifiers of an earlier read (``img_path``,
    ``time.time``): no dependency by those; the file name it names (``bill.pdf``, from an
    error) is."""
    code = "\n".join(
        ["import time", "def run(images):", "    start = time.time()"]
        + [f"    for img_path in images[{i}:]:\n        print(img_path)" for i in range(30)]
    )
    messages = [
        system(),
        user("Speed up the loop."),
        call("c1", "read_file", {"path": "loop.py"}),
        result("c1", code),
        call("c2", "open", {"path": "/docs/bill.pdf"}),
        result("c2", "I/O Error: Couldn't open file '/docs/bill.pdf': No such file"),
        user("Write the new version and a note."),
        call("c3", "write_file", {"path": "loop2.py", "content": code.replace("print", "log")}),
        call("c4", "write_file", {"path": "note.md", "content": "x\n" * 3 + "bill.pdf is missing"}),
    ]
    # the code is copied verbatim (a copy of the read), so keep the read and drop the error:
    v = judge_case(messages, 7, prune("function:open:2"))
    assert v.label == "impact" and any("bill.pdf" in a for a in lost(v))
    # the copy of the read is a copy, not a use of its identifiers one by one
    v = judge_case(messages, 7, prune("function:read_file:1"))
    assert hows(v) == {"copy"}


# --- a small value under the key a result gave it ------------------------------------------------


def test_an_element_index_passed_under_its_key_is_a_use() -> None:
    page = json.dumps(
        {"elements": [{"index": 7, "tag": "a"}, {"index": 8, "tag": "input", "text": ""}]}
    )
    messages = [
        system(),
        user("Log in as theagentcompany."),
        call("c1", "browser_view", {}),
        result("c1", page),
        call("c2", "browser_type", {"index": 8, "text": "theagentcompany"}),
    ]
    assert judge_case(messages, 4).label == "no_impact"
    v = judge_case(messages, 4, prune("function:browser_view:1"))
    assert v.label == "impact" and lost(v) == ["index: 8"]
    off = FlowJudge(FlowJudge.Params(small_values=False))
    assert judge_case(messages, 4, prune("function:browser_view:1"), judge=off).label == "no_impact"


# --- a value still in view elsewhere -------------------------------------------------------------


def itinerary_session() -> list:
    flights = [{"flight_number": "HAT039", "origin": "ATL"}, {"flight_number": "HAT136"}]
    return [
        system(),
        user("Book me JFK to SEA on May 20."),
        call("c1", "search_flights", {"origin": "JFK", "destination": "SEA"}),
        result("c1", json.dumps(flights)),
        say("I found HAT136 then HAT039. Shall I book them?"),
        user("Yes."),
        call("c2", "book", {"flight_number": "HAT039"}),
    ]


def test_a_value_the_agent_restated_is_still_there_when_its_record_goes() -> None:
    """The search result is pruned, but the agent's own message (which the view keeps) names
    HAT039: the booking call has what it needs."""
    v = judge_case(itinerary_session(), 6, prune("function:search_flights:1"))
    assert v.label == "no_impact", v.losses
    off = FlowJudge(FlowJudge.Params(elsewhere=False))
    v = judge_case(itinerary_session(), 6, prune("function:search_flights:1"), judge=off)
    assert v.label == "impact" and "flight_number: HAT039" in lost(v)


# --- one case's uses are never another's -------------------------------------------------------


def test_uses_are_per_case_not_per_case_id() -> None:
    """Two different cases under one case id (two runs): the second is judged for itself."""
    a = tuple(counted(mail_session()))
    b = tuple(counted(itinerary_session()))
    first = view_input(a[:4], a[4:], prune("function:bash:1"), case_id="same")
    second = view_input(b[:6], b[6:], prune("function:search_flights:1"), case_id="same")
    judge = FlowJudge()
    assert judge.judge(first).label == "impact"
    fresh = FlowJudge().uses(second)
    assert judge.uses(second) == fresh and all(u.need_seq == 6 for u in fresh)


def test_the_anchor_judge_is_per_case_too() -> None:
    from ctxreplay.judges.anchor_judge import AnchorJudge

    a = tuple(counted(mail_session()))
    b = tuple(counted(itinerary_session()))
    first = view_input(a[:4], a[4:], case_id="same")
    second = view_input(b[:6], b[6:], case_id="same")
    judge = AnchorJudge()
    judge.dependencies(first)
    assert judge.dependencies(second) == AnchorJudge().dependencies(second)
