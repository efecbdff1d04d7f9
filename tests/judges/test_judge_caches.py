"""What the deterministic judges keep between cases (per session, per message object) never
changes a verdict: one judge judging many cases, sessions and views in a row gives what a
fresh judge gives for each, whatever the sessions share (the same message ids and sequence
numbers, the same texts, a text copied in one session and not the other). And what the engine
leaves out for them (token counts they never read, the fields of unchanged view entries) changes
no verdict either (issue 15)."""

from __future__ import annotations

import functools
import json
import shutil
from dataclasses import replace

import pytest

from ctxreplay.engines import judge as engine
from ctxreplay.engines.judge import run_judge
from ctxreplay.engines.replay import run_replay
from ctxreplay.judges.anchor_judge import AnchorJudge
from ctxreplay.judges.base import Judge, JudgeInput, Verdict
from ctxreplay.judges.flow import FlowJudge
from ctxreplay.judges.flow.messages import SCANS as _SCANS
from ctxreplay.judges.flow.messages import Source as _Message
from ctxreplay.replay.plan import Edit
from ctxreplay.runs import read_verdicts
from ctxreplay.text.facts import LineIndex, facts_of

from builders import call, counted, result, say, system, user, view_input

CODE = "\n".join(f"def step_{i}(x):\n    return x * {i} + offset_{i}" for i in range(1, 9))


def session(variant: str) -> list:
    """Two sessions with the same shape, call ids and sequence numbers, different content:
    ``a`` copies code from a file read before both cuts (into its last edit), ``b`` does not;
    each acts on its own record, and ``a``'s agent repeats a rule only ``a``'s user stated."""
    record = {
        "line_id": f"LINE-10{variant.upper()}2",
        "status": "Suspended" if variant == "a" else "Active",
    }
    # a's last edit copies the file it read; b's repeats its own first edit
    again = "print('the same line written twice, by the agent itself')"
    first = "pass  # a first try" if variant == "a" else again
    copied = CODE.split("\n", 4)[4] if variant == "a" else again
    return counted(
        [
            system("You are a support and coding agent."),
            user(
                "Never restart a line without asking me first."
                if variant == "a"
                else "Always use the staging database for tests."
            ),
            call("c1", "get_line", {"id": record["line_id"]}),
            result("c1", json.dumps(record)),
            call("c2", "read_file", {"path": "steps.py"}),
            result("c2", CODE if variant == "a" else "empty file"),
            say(f"Line {record['line_id']} is {record['status']}."),
            user("Go on."),
            call("c3", "edit_file", {"path": "steps.py", "new_str": first}),
            result("c3", "ok"),
            call("c4", "resume_line", {"line_id": record["line_id"]}),
            say("I will not restart the line without asking you first."),
            call("c5", "edit_file", {"path": "steps2.py", "new_str": copied}),
            result("c5", "ok"),
        ]
    )


@functools.cache
def messages(variant: str) -> tuple:
    """A session's messages, made once: its cases share the message objects, as the engine's
    cases of one session do (what the judges key their caches by)."""
    return tuple(session(variant))


def inputs(variant: str, cut: int, *edits: Edit) -> JudgeInput:
    msgs = messages(variant)
    item = view_input(msgs[:cut], msgs[cut:], *edits)
    return replace(item, session_id=f"s-{variant}", case_id=f"{variant}-{cut}")


VIEWS = [(), (Edit("function:read_file:2", "prune"),), (Edit("function:get_line:1", "prune"),)]


def items() -> list[JudgeInput]:
    """Cases of two sessions, each under three views (as under three policies), and the first
    session again."""
    out = []
    for variant in ("a", "b", "a"):
        for cut in (8, 10):
            out += [inputs(variant, cut, *edits) for edits in VIEWS]
    return out


def as_tuple(v: Verdict) -> tuple:
    return (v.label, v.losses, v.reason, v.dependencies, v.recoverable)


@pytest.mark.parametrize("make", [FlowJudge, AnchorJudge])
def test_one_judge_in_a_row_gives_what_a_fresh_judge_gives(make: type[Judge]) -> None:
    cases = items()
    shared = make()
    in_a_row = [as_tuple(shared.judge(item)) for item in cases]
    fresh = [as_tuple(make().judge(item)) for item in cases]
    assert in_a_row == fresh
    # the sessions differ where it matters, and the views of one case differ
    assert fresh[0:6] != fresh[6:12]
    assert fresh[0][0] == "no_impact" and fresh[1][0] == "impact"
    assert fresh[0:6] == fresh[12:18]  # the first session again: the same verdicts
    # a later case of a session finds a copy from a message analysed for an earlier case
    assert any(loss.category == "verbatim_source" for loss in fresh[4][1])


def test_a_copy_found_in_one_session_is_not_found_in_the_next() -> None:
    """Word runs of an earlier session's messages do not make a copy in a later one."""
    judge = FlowJudge()

    def code_copied(v: Verdict) -> bool:
        return any(
            loss.category == "verbatim_source" and loss.anchor.startswith("def step_")
            for loss in v.losses
        )

    assert code_copied(judge.judge(inputs("a", 8, *VIEWS[1])))
    other = judge.judge(inputs("b", 8, *VIEWS[1]))
    assert as_tuple(other) == as_tuple(FlowJudge().judge(inputs("b", 8, *VIEWS[1])))
    assert not code_copied(other)


def test_facts_by_token_once_scanned_and_once_indexed() -> None:
    """A message whose facts are all found (a JSON result) is scanned for its first
    ``_SCANS`` tokens, then indexed; a text of lines is searched (a ``LineIndex``), never cut
    whole. Both give the facts holding each token, in order."""
    rows = [{"item": f"item_{i}", "cost": i * 7, "ref": f"R{i:04d}-X"} for i in range(60)]
    lines = "\n".join(f"item_{i} costs {i * 7} eur, ref R{i:04d}-X" for i in range(60))
    for body, indexed in ((json.dumps(rows), True), (lines, False)):
        msg = counted([call("c1", "list_items", {}), result("c1", body)])[1]
        info = _Message.of(msg)
        all_facts = facts_of(body)
        probes = [*sorted({t for f in all_facts for t in f.tokens})[: 3 * _SCANS], "absent-token"]
        for t in probes * 2:  # past the scans, from the index; each asked twice
            assert info.with_token(t) == [f for f in all_facts if t in f.tokens], t
        assert (info._by_token is not None) is indexed
        assert isinstance(info.parts[0], LineIndex) is not indexed


def test_engine_leaves_out_what_these_judges_do_not_read(
    synth_corpus, synth_cases, tmp_path, monkeypatch
) -> None:
    """Token counts (the index's objects get 0) and the fields of unchanged view entries: the
    verdicts are those of the plain inputs."""
    assert not FlowJudge.reads_token_counts and not AnchorJudge.reads_token_counts
    assert Judge.reads_token_counts
    runs = [tmp_path / name / "run" for name in ("lean", "plain")]
    run_replay(
        synth_corpus, synth_cases, ["noop", "tool-prune"], runs[0], workers=1, progress=False
    )
    shutil.copytree(runs[0], runs[1])
    for judge in ("flow", "anchor"):
        run_judge(runs[0], judge, workers=1, progress=False)
    # the plain inputs: every prefix counted, every view row converted whole
    monkeypatch.setattr(FlowJudge, "reads_token_counts", True)
    monkeypatch.setattr(AnchorJudge, "reads_token_counts", True)
    monkeypatch.setattr(engine, "_view_rows", lambda table: table.to_pylist())
    for judge in ("flow", "anchor"):
        run_judge(runs[1], judge, workers=1, progress=False)
    for judge in ("flow", "anchor"):
        lean, plain = (read_verdicts(r, judge).drop("run").sort("policy", "case_id") for r in runs)
        assert lean.height > 0 and lean.equals(plain), judge


def test_view_rows_keep_what_view_messages_reads(synth_corpus, synth_cases, tmp_path) -> None:
    import pyarrow.parquet as pq

    from ctxreplay.runs import Run, slug, view_messages

    run = tmp_path / "run"
    run_replay(synth_corpus, synth_cases, ["tool-prune"], run, workers=1, progress=False)
    parts = sorted((run / "views" / slug(Run(run).policies[0])).glob("*.parquet"))
    table = pq.read_table(parts[0])
    lean, whole = engine._view_rows(table), table.to_pylist()
    assert [r["case_id"] for r in lean] == [r["case_id"] for r in whole]
    edited = 0
    for a, b in zip(lean, whole, strict=True):
        assert {k: v for k, v in a.items() if k != "entries"} == {
            k: v for k, v in b.items() if k != "entries"
        }
        for x, y in zip(a["entries"], b["entries"], strict=True):
            if y["parts"] is None:
                assert x == {"parts": None, "index": y["index"]}
            else:
                assert x == y
                edited += 1
        prefix = [object()] * (1 + max(e["index"] or 0 for e in b["entries"]))
        unchanged = [e for e in b["entries"] if e["parts"] is None]
        assert view_messages(
            [{"parts": None, "index": e["index"]} for e in unchanged], prefix
        ) == view_messages(unchanged, prefix)
    assert edited  # the policy changed something, so both kinds of entries were seen


def test_a_message_looked_into_gives_what_its_facts_hold() -> None:
    """A prefix message's analysis (``_Message``: its parts' facts, a text of lines as a
    ``LineIndex``) gives, for every token, the facts of ``message_facts`` that hold it, in
    order, and its fields, rules and told tokens, whatever its parts and whether or not it was
    heard in a future first (``_Told``)."""
    from ctxreplay.datasets.messages import Message, Part
    from ctxreplay.judges.flow.messages import Heard as _Told
    from ctxreplay.judges.flow.messages import message_facts, told
    from ctxreplay.text.facts import LineIndex, token_set

    texts = [
        "Paid $1,284.00 on item_7. Next: /srv/a_b.py",
        "Status: Suspended\nline_id: L-1002",
        '{"id": "A-1", "rows": [1, 2]}',
        "a\n[1, 2]\nb",
        "on May\n20, 2024 it failed: error code 3",
        "",
    ]
    messages = []
    for a in texts:
        for b in texts:
            messages += [
                Message("tool", (Part.response("c1", a),)),
                Message("user", (Part.text(a),)),
                Message("user", (Part.text(a), Part.text(b))),
                Message("assistant", (Part.text(a), Part.call("c2", "run", {"cmd": b}))),
                Message("assistant", (Part.text(a), Part.text(b))),
                Message("assistant", (Part.call("c3", "run", {"x": a}),)),
                Message("tool", (Part.response("c1", a), Part.response("c2", b))),
                Message("user", (Part.text(a), Part.call("c4", "f", {"y": b}))),
            ]
    indexed = 0
    for m in messages:
        found = message_facts(m)
        probe = {t for f in found for t in f.tokens} | {"zzz", "a", "1"}
        heard = _Told.of(m) if m.role != "assistant" else None
        if heard is not None:
            assert heard.tokens == token_set(told(m))
        for info in (_Message.of(m), _Message.of(m, heard)):
            indexed += any(isinstance(p, LineIndex) for p in info.parts)
            assert info.tokens == token_set(told(m))
            assert info.fields == [f for f in found if f.kind == "field" and f.key]
            assert info.rules == _Message.of(m).rules
            for t in sorted(probe) * 2:  # the second time, from what was looked up
                assert info.with_token(t) == [f for f in found if t in f.tokens], (m, t)
            assert info.holding({"zzz"}) == []
    assert indexed > len(messages) // 4  # texts of lines are indexed, not cut whole


def test_what_is_always_in_view_is_tokenised_as_one_text() -> None:
    """The always-in-view text's tokens are its messages' own, found once each, and those of
    the joined text where a prose date may run from one message into the next."""
    from ctxreplay.datasets.messages import Message, Part
    from ctxreplay.judges.base import rendered
    from ctxreplay.text.facts import squash, token_set

    texts = [
        "System: be brief. Due on May",
        "5, 2024 at the latest",
        "  \n 20th",
        "Paid $1,284.00 on item_7 at /srv/a_b.py",
        "sept.\n",
        "3 cases, 1,000 rows",
        "",
        "plain words",
    ]
    from ctxreplay.judges.flow.index import SessionIndex

    index = SessionIndex()
    for a in texts:
        for b in texts:
            for c in ("", "2024", "next"):
                messages = [
                    Message("system", (Part.text(a),)),
                    Message("user", (Part.text(b),)),
                    Message("user", (Part.text(c),)),
                ]
                joined = "\n".join(rendered(m) for m in messages)
                want = (joined, token_set(joined), squash(joined))
                assert index.always(messages) == want, (a, b, c)
                assert index.always(messages) == want  # and again, from what was found
    assert token_set("due on may\n5, 2024") != token_set("due on may") | token_set("5, 2024")


def test_values_by_object_are_made_once_per_object_not_per_equal_value() -> None:
    from ctxreplay.datasets.messages import Message, Part
    from ctxreplay.judges.base import ByObject

    made: list[Message] = []

    def make(m: Message) -> str:
        made.append(m)
        return f"value {len(made)}"

    memo: ByObject[Message, str] = ByObject()
    a, b = Message("user", (Part.text("same"),)), Message("user", (Part.text("same"),))
    assert a == b and a is not b
    assert [memo.get(a, make), memo.get(b, make), memo.get(a, make)] == [
        "value 1",
        "value 2",
        "value 1",
    ]
    assert made == [a, b] and made[0] is a and made[1] is b


def test_a_key_is_named_near_its_value_as_a_scan_of_every_pair_finds() -> None:
    """``_named_together`` finds the value nearest each place of the key (positions by token,
    a bisection): what comparing every place of the key with every place of the value finds."""
    import random

    from ctxreplay.judges.flow.messages import Said as _Said
    from ctxreplay.judges.flow.rules import named_together as _named_together
    from ctxreplay.text.facts import Fact

    rng = random.Random(7)
    for _ in range(2000):
        seq = [rng.choice("kvxyz") for _ in range(rng.randrange(0, 30))]
        said = _Said("", [], seq, frozenset(seq), [], [], [], frozenset(), "", {})
        fact = Fact(
            "field", "k: v", ("k:v",), frozenset(rng.sample("vxy", rng.randrange(1, 3))), ("k",)
        )
        window = rng.randrange(0, 6)
        key_at = [i for i, t in enumerate(seq) if t == "k"]
        value_at = [i for i, t in enumerate(seq) if t in fact.tokens]
        want = (
            {"k"} <= said.present
            and fact.tokens <= said.present
            and any(abs(i - j) <= window for i in key_at for j in value_at)
        )
        assert _named_together(fact, said, window) == want, (seq, fact.tokens, window)


def test_a_source_put_after_later_ones_holds_only_what_none_later_holds() -> None:
    """A protected turn put among the sources after later ones were (``_Sources.put``): the
    latest holder of each token stays the latest, the positions with a key, a rule, the
    agent's own stay in order, and what a future message reads is added to what it finds held."""
    from ctxreplay.judges.flow.index import Sources as _Sources
    from ctxreplay.judges.flow.messages import PROTECTED as _PROTECTED
    from ctxreplay.judges.flow.messages import Source as _Message
    from ctxreplay.text.facts import Fact

    def message(role: str, tokens: str, key: str = "", rule: bool = False) -> _Message:
        toks = frozenset(tokens.split())
        rules = [Fact("sentence", tokens, (), toks)] if rule else []
        by_key = {key: [0]} if key else {}
        fields = [Fact("field", f"{key}: x", (), toks, (key,))] if key else []
        return _Message(role, False, [], fields, rules, toks, tokens, toks, by_key)

    found = _Sources()
    for _ in range(4):
        found.sources.append((len(found.sources), _PROTECTED))
    held: set[str] = set()  # a future message's runs some source holds: it reads a, e and z
    found.readers = {"a": [held], "e": [held], "z": [held]}
    found.put(0, message("user", "a b", key="id", rule=True))
    found.put(2, message("assistant", "b c", key="id"))
    found.put(3, message("user", "c d", rule=True))
    found.put(1, message("user", "a b c e", key="id", rule=True))  # the protected turn, later
    assert found.latest_of == {"a": 1, "b": 2, "c": 3, "d": 3, "e": 1}
    assert found.latest_gram == found.latest_of  # (its word runs are its tokens here)
    assert found.keyed == {"id": [0, 1, 2]} and found.ruled == [0, 1, 3]
    assert found.agents == [2] and held == {"a", "e"}
