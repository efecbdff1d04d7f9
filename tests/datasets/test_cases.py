"""Cases: cut points at request points, triggers, horizons, suites and explicit cuts."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from ctxreplay.cli import main
from ctxreplay.datasets.cases import (
    CaseError,
    build_cases,
    parse_horizon,
    parse_trigger,
    read_cases,
)
from ctxreplay.datasets.store import Corpus
from ctxreplay.datasets.tokenizer import get_tokenizer

from builders import convo


def test_user_turn_cuts_are_request_points(corpus: Corpus) -> None:
    cases = build_cases(corpus, [parse_trigger("user-turns")])
    a = cases.filter(cases["session_id"] == "s-a")
    # turns 2 and 3 start at 5 and 9; the agent's request follows at 6 and 10
    assert a["cut"].to_list() == [6, 10]
    assert a["trigger"].to_list() == ["user-turn:2", "user-turn:3"]
    assert cases.filter(cases["session_id"] == "s-c").height == 0  # one turn: nothing before it


def test_every_k_never_cuts_between_call_and_result(corpus: Corpus) -> None:
    cases = build_cases(corpus, [parse_trigger("every:1")])
    b = cases.filter(cases["session_id"] == "s-b")["cut"].to_list()
    # request points: each assistant message after a user turn, tool results all answered
    assert b == [2, 4, 6, 8, 10, 12, 14, 16, 18, 20]
    every3 = build_cases(corpus, [parse_trigger("every:3")])
    assert every3.filter(every3["session_id"] == "s-b")["cut"].to_list() == [6, 12, 18]


def test_token_trigger_fires_at_first_crossing(corpus: Corpus) -> None:
    tok = get_tokenizer()
    msgs = convo("b", 5, "beta beta ")
    tokens = [sum(tok.count(s) for p in m.parts for s in p.token_texts()) for m in msgs]
    threshold = 300
    # request points: an assistant message right after a user message or a tool result
    crossing = next(
        i
        for i, m in enumerate(msgs)
        if m.role == "assistant"
        and msgs[i - 1].role in ("user", "tool")
        and sum(tokens[:i]) >= threshold
    )
    cases = build_cases(corpus, [parse_trigger(f"tokens:{threshold}")])
    row = cases.filter(cases["session_id"] == "s-b").row(0, named=True)
    assert row["cut"] == crossing
    assert row["prefix_tokens"] == sum(tokens[:crossing])
    assert row["trigger"] == f"tokens:{threshold}"


def test_fraction_needs_window() -> None:
    assert parse_trigger("fraction:0.5", window=1000).value == 500
    with pytest.raises(CaseError, match="window"):
        parse_trigger("fraction:0.5")
    with pytest.raises(CaseError):
        parse_trigger("sometimes")


def test_horizon_limits_future_requests(corpus: Corpus) -> None:
    cases = build_cases(corpus, [parse_trigger("user-turns")], horizon=parse_horizon("turns:2"))
    row = cases.filter(cases["case_id"] == "s-b@6").row(0, named=True)
    assert row["future_requests"] == 2
    # requests 6 and 8, and what arrives before the third request (tool 7, user 9)
    assert (row["future_start"], row["future_end"]) == (6, 10)
    full = build_cases(corpus, [parse_trigger("user-turns")])
    assert full.filter(full["case_id"] == "s-b@6").row(0, named=True)["future_end"] == 21


def test_explicit_cuts_by_source_id_and_validation(corpus: Corpus, tmp_path) -> None:
    csv = tmp_path / "cuts.csv"
    csv.write_text("session,cut\nb,10\ns-a,6\n")
    from ctxreplay.datasets.cases import read_cuts

    cases = build_cases(corpus, [], cuts=read_cuts(csv))
    assert sorted(cases["case_id"].to_list()) == ["s-a@6", "s-b@10"]
    csv.write_text("session,cut\nb,3\n")  # message 3 is a tool result, not a request point
    with pytest.raises(CaseError, match="request point"):
        build_cases(corpus, [], cuts=read_cuts(csv))


def test_hard_suite_keeps_highest_tool_pressure_and_sample_is_seeded(corpus: Corpus) -> None:
    cases = build_cases(corpus, [parse_trigger("every:1")], suite="hard:1")
    assert cases["session_id"].unique().to_list() == ["s-b"]  # longest tool bodies per prefix
    one = build_cases(corpus, [parse_trigger("every:1")], sample=4, seed=7)
    two = build_cases(corpus, [parse_trigger("every:1")], sample=4, seed=7)
    assert one.height == 4 and one["case_id"].to_list() == two["case_id"].to_list()


def test_cli_writes_cases_with_metadata(corpus: Corpus, tmp_path) -> None:
    out = tmp_path / "cases.parquet"
    result = CliRunner().invoke(
        main,
        [
            "cases",
            str(corpus.path),
            "-o",
            str(out),
            "--trigger",
            "user-turns",
            "--horizon",
            "turns:1",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "6 cases from 2 sessions" in result.output
    frame, meta = read_cases(out)
    assert frame.height == 6 and meta["horizon"] == "turns:1"
    assert meta["corpus_fingerprint"] == corpus.fingerprint()


def test_cases_are_the_same_however_the_corpus_files_are_split(tmp_path) -> None:
    """Cutting reads one message file at a time: a corpus written in one file and the same
    corpus written one session per file give identical cases."""
    from ctxreplay.datasets.store import CorpusWriter
    from ctxreplay.datasets.synth import iter_sessions

    sessions = [s.session for s in iter_sessions(12, 5, None)]
    frames = []
    for name, flush in (("whole", 1_000_000), ("split", 1)):
        w = CorpusWriter(tmp_path / name, get_tokenizer(), flush_messages=flush, compact=False)
        for s in sessions:
            w.add(s)
        w.close([])
        corpus = Corpus(tmp_path / name)
        frames.append(build_cases(corpus, [parse_trigger("every:2"), parse_trigger("tokens:3000")]))
    split_files = list((tmp_path / "split" / "messages").rglob("*.parquet"))
    assert len(split_files) >= 12
    assert len(list((tmp_path / "whole" / "messages").rglob("*.parquet"))) < len(split_files)
    assert frames[0].height > 20
    assert frames[0].equals(frames[1])


def test_a_context_that_splits_a_call_from_its_result_is_never_cut(tmp_path) -> None:
    """A message recorded between a call and its result (text typed while a tool ran) makes
    every later context one no provider accepts, until a compaction starts it again: those
    assistant messages are never cut, and the command says how many it left out."""
    from ctxreplay.datasets.messages import Message, Part

    from builders import make_corpus, result, say, system, user

    compact = Message("user", (Part.text("Summary of the work so far."),))
    compact = Message(compact.role, compact.parts, flags=("compaction_summary",))
    corpus = make_corpus(
        tmp_path / "c",
        {
            "split": [
                system(),  # 0
                user("Look the order up."),  # 1
                Message("assistant", (Part.call("c1", "lookup", {"id": 7}),)),  # 2: a cut
                user("Hurry, please."),  # 3: typed while the lookup ran
                result("c1", "order 7: shipped"),  # 4
                say("Order 7 has shipped."),  # 5: never cut
                user("And order 8?"),  # 6
                say("Let me check order 8."),  # 7: never cut
                compact,  # 8: the context starts again here
                user("Now order 9."),  # 9
                say("Order 9 is on its way."),  # 10: a cut again
            ]
        },
    )
    unsendable: list[tuple[str, int]] = []
    frame = build_cases(corpus, [parse_trigger("every:1")], unsendable=unsendable)
    assert frame["cut"].to_list() == [2, 10]
    assert unsendable == [("s-split", 5), ("s-split", 7)]
    out = CliRunner().invoke(
        main, ["cases", str(corpus.path), "-o", str(tmp_path / "c.parquet"), "--trigger", "every:1"]
    )
    assert out.exit_code == 0, out.output
    assert (
        "never cut: 2 assistant messages of 1 sessions whose recorded context no provider "
        "accepts (a message between a tool call and its result; e.g. s-split@5)"
    ) in " ".join(out.output.split())
    assert read_cases(tmp_path / "c.parquet")[1]["unsendable_points"] == 2


def test_sessions_without_a_case_are_counted_by_why(corpus: Corpus, tmp_path) -> None:
    """s-c has one user turn: user-turns cuts nothing there, and says so; every:20 cuts nothing
    in any (fewer request points), and the CLI prints the counts."""
    from collections import Counter

    why: Counter[str] = Counter()
    cases = build_cases(corpus, [parse_trigger("user-turns")], no_case=why)
    assert set(cases["session_id"]) == {"s-a", "s-b"}
    assert why == Counter({"one user turn (user-turns cuts after the second and later ones)": 1})
    why.clear()
    build_cases(corpus, [parse_trigger("every:20")], no_case=why)
    assert why == Counter({"fewer than 20 request points (every:20)": 3})
    why.clear()
    build_cases(corpus, [parse_trigger("tokens:100000")], no_case=why)
    assert why == Counter({"its context never reaches 100,000 tokens at a request point": 3})
    out = CliRunner().invoke(
        main,
        ["cases", str(corpus.path), "-o", str(tmp_path / "x.parquet"), "--trigger", "user-turns"],
    )
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert "  1 session gave no case:" in lines
    assert "          1 one user turn (user-turns cuts after the second and later ones)" in lines
