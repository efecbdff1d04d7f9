"""Explicit cuts from a labels ``cases.jsonl``: future ends, skipped sessions, the messages horizon."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from ctxreplay.cli import main
from ctxreplay.datasets.cases import (
    CaseError,
    Cut,
    Horizon,
    build_cases,
    parse_horizon,
    parse_trigger,
    read_cases,
    read_cuts,
)
from ctxreplay.datasets.store import Corpus


def labels_file(path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_labels_cases_set_the_future_end_and_skip_other_corpora(corpus: Corpus, tmp_path) -> None:
    path = tmp_path / "cases.jsonl"
    labels_file(
        path,
        [
            {"case": "x1", "corpus": "c", "session_id": "s-b", "cut": 6, "future_seqs": [6, 7, 8]},
            {"case": "x2", "corpus": "c", "session_id": "s-a", "cut": 2, "future_seqs": [2]},
            {"case": "x3", "corpus": "other", "session_id": "s-zz", "cut": 4, "future_seqs": [4]},
        ],
    )
    cuts = read_cuts(path)
    assert cuts["s-b"] == [Cut(6, 9, optional=True)]
    skipped: list[tuple[str, int]] = []
    cases = build_cases(corpus, [], cuts=cuts, skipped=skipped)
    assert skipped == [("s-zz", 4)]
    rows = {r["case_id"]: r for r in cases.iter_rows(named=True)}
    assert set(rows) == {"s-a@2", "s-b@6"}
    b = rows["s-b@6"]
    # exactly the labelled horizon: messages 6, 7, 8 — the future stops before message 9
    assert (b["future_start"], b["future_end"], b["future_messages"]) == (6, 9, 3)
    assert b["future_requests"] == 2  # the call at 6 and the answer at 8
    a = rows["s-a@2"]
    assert (a["future_end"], a["future_messages"], a["future_requests"]) == (3, 1, 1)
    # the labelled end wins over a horizon
    again = build_cases(corpus, [], cuts=cuts, horizon=parse_horizon("turns:5"))
    assert again.filter(again["case_id"] == "s-b@6")["future_end"].item() == 9


def test_no_matching_labels_row_is_an_error(corpus: Corpus, tmp_path) -> None:
    path = tmp_path / "cases.jsonl"
    labels_file(path, [{"session_id": "elsewhere", "cut": 4, "future_seqs": [4, 5]}])
    with pytest.raises(CaseError, match="none of the 1 explicit cuts names a session"):
        build_cases(corpus, [], cuts=read_cuts(path))
    # a CSV stays strict: every session it names must be in the corpus
    csv = tmp_path / "cuts.csv"
    csv.write_text("session,cut\ns-a,2\nelsewhere,4\n")
    with pytest.raises(CaseError, match="'elsewhere', which is not in the corpus"):
        build_cases(corpus, [], cuts=read_cuts(csv))


def test_labels_file_is_detected_by_content_and_checked(corpus: Corpus, tmp_path) -> None:
    path = tmp_path / "cuts.txt"  # no telling suffix: JSON lines by content
    labels_file(path, [{"session_id": "s-a", "cut": 6, "future_seqs": [6, 7]}])
    assert read_cuts(path) == {"s-a": [Cut(6, 8, optional=True)]}
    csv = tmp_path / "cuts.txt"
    csv.write_text("session,cut\ns-a,6\n")
    assert read_cuts(csv) == {"s-a": [Cut(6)]}
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"session_id": "s-a", "cut": 6}\n{"session_id": "s-a", "cut": "six"}\n')
    with pytest.raises(CaseError, match=r"bad.jsonl, line 2: cut 'six' is not a message index"):
        read_cuts(bad)
    bad.write_text('{"session_id": "s-a", "cut": 6, "future_seqs": [2, 3]}\n')
    with pytest.raises(CaseError, match="line 1: future_seqs end before the cut"):
        read_cuts(bad)
    bad.write_text("{oops\n")
    with pytest.raises(CaseError, match="line 1: not JSON"):
        read_cuts(bad)


def test_messages_horizon_counts_visible_messages(corpus: Corpus) -> None:
    assert parse_horizon("messages:3") == Horizon("messages", 3)
    assert parse_horizon("turns:2") == Horizon("turns", 2)
    with pytest.raises(CaseError, match="messages:K"):
        parse_horizon("messages:0")
    cases = build_cases(corpus, [parse_trigger("user-turns")], horizon=parse_horizon("messages:3"))
    row = cases.filter(cases["case_id"] == "s-b@6").row(0, named=True)
    assert (row["future_end"], row["future_messages"], row["future_requests"]) == (9, 3, 2)
    # turns:K still counts agent requests: 6 and 8, stopping before the third at 10
    turns = build_cases(corpus, [parse_trigger("user-turns")], horizon=parse_horizon("turns:2"))
    row = turns.filter(turns["case_id"] == "s-b@6").row(0, named=True)
    assert (row["future_end"], row["future_requests"]) == (10, 2)
    # the last case of a session: the horizon runs past the end
    last = cases.filter(cases["case_id"] == "s-b@18").row(0, named=True)
    assert (last["future_end"], last["future_messages"]) == (21, 3)


def test_cli_cases_from_labels(corpus: Corpus, tmp_path) -> None:
    path = tmp_path / "cases.jsonl"
    labels_file(
        path,
        [
            {"session_id": "s-b", "cut": 10, "future_seqs": [10, 11]},
            {"session_id": "s-other", "cut": 2, "future_seqs": [2]},
            {"session_id": "s-other2", "cut": 2, "future_seqs": [2]},
        ],
    )
    out = tmp_path / "cases.parquet"
    result = CliRunner().invoke(
        main, ["cases", str(corpus.path), "--cuts", str(path), "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "1 cases from 1 sessions" in result.output
    assert "skipped 2 cuts of 2 sessions not in this corpus" in result.output
    frame, meta = read_cases(out)
    assert frame.row(0, named=True)["future_end"] == 12 and meta["cuts_skipped"] == 2
    labels_file(path, [{"session_id": "s-nowhere", "cut": 2}])
    failed = CliRunner().invoke(
        main, ["cases", str(corpus.path), "--cuts", str(path), "-o", str(out)]
    )
    assert failed.exit_code == 2 and "none of the 1 explicit cuts" in failed.output
    help_text = CliRunner().invoke(main, ["cases", "--help"]).output
    assert "cases.jsonl" in help_text and "messages:K" in help_text
