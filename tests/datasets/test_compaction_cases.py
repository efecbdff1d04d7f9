"""Recorded compactions: the prefix starts again at the latest summary, the ``compactions``
trigger cuts right before each one, and ``recorded`` replays the summary the agent really used."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from ctxreplay.datasets.cases import (
    build_cases,
    materialise,
    parse_trigger,
    prefix_of,
    write_cases,
)
from ctxreplay.datasets.messages import Message, Part
from ctxreplay.datasets.store import Corpus
from ctxreplay.datasets.validate import FLAG_COMPACTION_SUMMARY
from ctxreplay.engines.replay import run_replay
from ctxreplay.runs import Run

from builders import make_corpus

SUMMARY = "Summary: the user wants the parser fixed; app.py line 7 holds the bug."


def compacted_session() -> list[Message]:
    """system 0; turn 1 (1-4), turn 2 (5-8); compaction summary 9; turn 3 (10-13).

    The summary is a user message flagged as a recorded compaction, as the Claude Code and
    Codex importers write it."""
    msgs = [Message("system", (Part.text("sys"),))]
    for t in (1, 2):
        msgs += [
            Message("user", (Part.text(f"question {t}"),)),
            Message("assistant", (Part.call(f"c{t}", "lookup", {"q": t}),)),
            Message("tool", (Part.response(f"c{t}", "body " * 200),)),
            Message("assistant", (Part.text(f"answer {t}"),)),
        ]
    msgs.append(Message("user", (Part.text(SUMMARY),), flags=(FLAG_COMPACTION_SUMMARY,)))
    msgs += [
        Message("user", (Part.text("question 3"),)),
        Message("assistant", (Part.call("c3", "lookup", {"q": 3}),)),
        Message("tool", (Part.response("c3", "short"),)),
        Message("assistant", (Part.text("answer 3"),)),
    ]
    return msgs


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    return make_corpus(tmp_path_factory.mktemp("cc") / "corpus", {"k": compacted_session()})


def test_the_compactions_trigger_cuts_right_before_the_summary(corpus: Corpus) -> None:
    cases = build_cases(corpus, [parse_trigger("compactions")])
    assert cases.height == 1
    row = cases.row(0, named=True)
    assert row["trigger"] == "compactions"
    assert row["cut"] == 9  # the summary message
    assert row["future_start"] == 10  # the future begins after the summary
    assert row["future_end"] == 14
    assert row["prefix_messages"] == 9  # system + two turns: the context the summary replaced
    assert row["user_turns"] == 2
    assert row["future_messages"] == 4
    assert row["future_requests"] == 2


def test_a_cut_after_a_compaction_sees_only_the_summary_and_after(corpus: Corpus) -> None:
    cases = build_cases(corpus, [parse_trigger("every:1")])
    after = cases.filter(cases["cut"] > 9).row(0, named=True)
    assert after["cut"] == 11
    assert after["prefix_messages"] == 2  # the summary and question 3
    assert after["user_turns"] == 2
    messages = corpus.load_session("s-k")
    visible = [m for m in messages if m.visible]
    assert [m.seq for m in prefix_of(visible, 11)] == [9, 10]
    assert [m.seq for m in prefix_of(visible, 9)] == list(range(9))
    assert [m.seq for m in prefix_of(visible, 4)] == [0, 1, 2, 3]


def test_materialise_gives_every_reader_the_same_prefix_future_and_recorded_summary(
    corpus: Corpus,
) -> None:
    messages = corpus.load_session("s-k")
    at = build_cases(corpus, [parse_trigger("compactions")]).row(0, named=True)
    case = materialise(at, messages)
    assert [m.seq for m in case.prefix] == list(range(9))
    assert [m.seq for m in case.future] == [10, 11, 12, 13]  # the summary is not the future
    assert case.compaction_at_cut == SUMMARY
    # a views row holds the cut and no future: the prefix alone, no compaction at cut 11
    view_row = {"case_id": "s-k@11", "cut": 11}
    assert materialise(view_row, messages) == materialise(
        {**view_row, "future_end": None}, messages
    )
    later = materialise(view_row, messages)
    assert ([m.seq for m in later.prefix], later.future, later.compaction_at_cut) == (
        [9, 10],
        (),
        None,
    )


def test_token_triggers_count_the_context_since_the_compaction(
    corpus: Corpus, tmp_path: Path
) -> None:
    # one token more than the whole context before the compaction: only a count that kept the
    # replaced messages would reach it after the compaction
    big = sum(m.tokens for m in corpus.load_session("s-k")[:9]) + 1
    assert build_cases(corpus, [parse_trigger(f"tokens:{big}")]).height == 0
    plain = make_corpus(
        tmp_path / "plain", {"p": [replace(m, flags=()) for m in compacted_session()]}
    )
    assert build_cases(plain, [parse_trigger(f"tokens:{big}")])["cut"].to_list() == [11]


def test_no_compaction_no_case(tmp_path: Path) -> None:
    plain = [replace(m, flags=()) for m in compacted_session()]
    corpus = make_corpus(tmp_path / "c", {"p": plain})
    assert build_cases(corpus, [parse_trigger("compactions")]).height == 0
    cases = build_cases(corpus, [parse_trigger("every:1")])
    assert cases.filter(cases["cut"] == 11)["prefix_messages"].to_list() == [11]


def test_recorded_replays_the_recorded_summary(corpus: Corpus, tmp_path: Path) -> None:
    cases = build_cases(corpus, [parse_trigger("compactions")])
    cases_path = tmp_path / "cases.parquet"
    write_cases(cases, cases_path, {})
    run_replay(
        corpus.path, cases_path, ["recorded", "noop"], tmp_path / "run", workers=1, progress=False
    )
    run = Run(tmp_path / "run")
    view = run.load_view("s-k@9", "recorded")
    texts = [m.text for m in view]
    # system prompt, the recorded summary, and the protected latest user message: turn 1 and
    # the calls of turn 2 are gone
    assert view[0].role == "system"
    assert texts[1] == f"<ctxreplay:summary>{SUMMARY}</ctxreplay:summary>"
    assert [m.role for m in view] == ["system", "user", "user", "assistant"]
    assert texts[2] == "question 2"
    assert view[3].text == "answer 2"
    noop = run.load_view("s-k@9", "noop")
    assert len(noop) == 9
    figures = run.table("figures", "recorded").row(0, named=True)
    assert figures["view_tokens"] < figures["prefix_tokens"]


def test_the_cli_says_why_no_compaction_case(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from ctxreplay.cli import main

    plain = [replace(m, flags=()) for m in compacted_session()]
    make_corpus(tmp_path / "c", {"p": plain})
    result = CliRunner().invoke(
        main, ["cases", str(tmp_path / "c"), "-o", str(tmp_path / "x.parquet"),
               "--trigger", "compactions"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "0 cases" in result.output
    assert "no session records a compaction" in result.output
