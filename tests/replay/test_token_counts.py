"""Replay reads the token counts the corpus stores and counts exactly what policies write."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from ctxreplay.datasets.cases import cut_corpus
from ctxreplay.datasets.messages import Message
from ctxreplay.datasets.store import Corpus
from ctxreplay.datasets.tokenizer import Tokenizer
from ctxreplay.engines import replay as replay_engine
from ctxreplay.engines.pipeline import DEMO_POLICIES
from ctxreplay.engines.replay import run_replay
from ctxreplay.runs import Run

from builders import call, coding_session, count, make_corpus, result, say, system, user

#: policies that write text of their own: pointers of folded turns, masks, placeholders, notes
WRITERS = [
    *DEMO_POLICIES,
    "oldest-turn:mode=fold,target=0.6",
    "self-gc:target=0.5",
    "prune-summarise:target=0.5",
    "observation-masking:target=0.5",
    "agent-forgetting:target=0.5",
]


def exact(messages: list[Message]) -> int:
    return sum(count(s) for m in messages for p in m.parts for s in p.token_texts())


def session_with_parallel_calls() -> list[Message]:
    """Messages of several parts: text beside calls, two results in one user message."""
    return [
        system(),
        user("Compare the two configs."),
        call("a1", "read_file", {"path": "a.toml"}, "Reading both."),
        result("a1", "\n".join(f"key_{i} = {i}" for i in range(80))),
        user("And the third one, please."),
        call("a2", "read_file", {"path": "c.toml"}, "Reading the third."),
        result("a2", "\n".join(f"other_{i} = {i * 3}" for i in range(90))),
        say("key_7 is 7 in a.toml and other_7 is 21 in c.toml."),
        user("Thanks: now summarise."),
        say("Done."),
    ]


@pytest.fixture(scope="module")
def hand_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("counts")
    corpus = make_corpus(
        root / "corpus", {"code": coding_session(), "configs": session_with_parallel_calls()}
    )
    cases = cut_corpus(corpus, root / "cases.parquet", triggers=["every:1"])[1]
    return root / "corpus", cases, root


def test_the_corpus_stores_each_parts_exact_count(hand_run: tuple[Path, Path, Path]) -> None:
    corpus, _, _ = hand_run
    rows = pl.read_parquet(corpus / "messages" / "**" / "*.parquet").sort("session_id", "seq")
    multi = 0
    for messages_row in rows.iter_rows(named=True):
        parts = messages_row["parts"]
        stored = messages_row["part_tokens"]
        assert len(stored) == len(parts)
        assert sum(stored) == messages_row["tokens"]
        multi += len(parts) > 1
    assert multi >= 2  # the calls with text beside them
    for sid, messages, known in Corpus(corpus).counted_sessions(rows["session_id"].unique()):
        for m in messages:
            for p in m.parts:
                assert known[p] == sum(count(s) for s in p.token_texts()), (sid, p)


def test_every_view_counts_exactly_what_it_holds(hand_run: tuple[Path, Path, Path]) -> None:
    """The figures' view tokens are the real count of the view's messages, whatever a policy
    wrote into it (a folded turn's pointer, a mask, a placeholder, a note)."""
    corpus, cases, root = hand_run
    out = root / "writers"
    run_replay(corpus, cases, WRITERS, out, workers=1, progress=False)
    r = Run(out)
    figures = r.table("figures")
    edited = figures.filter(pl.col("view_tokens") < pl.col("prefix_tokens"))
    assert edited["policy"].n_unique() >= 6  # most policies edited some case
    for row in figures.iter_rows(named=True):
        view = r.load_view(row["case_id"], row["policy"])
        assert row["view_tokens"] == exact(view), (row["policy"], row["case_id"])
        assert sum(m.tokens for m in view) == row["view_tokens"]


def test_a_folded_turns_pointer_is_counted(hand_run: tuple[Path, Path, Path]) -> None:
    """oldest-turn folds whole turns behind a pointer message: the pointer's tokens are in the
    view's count (they were once counted as 0)."""
    corpus, cases, root = hand_run
    out = root / "fold"
    run_replay(corpus, cases, ["oldest-turn:mode=fold,target=0.6"], out, workers=1, progress=False)
    r = Run(out)
    pointers = 0
    for row in r.table("figures").filter(pl.col("n_fold") > 0).iter_rows(named=True):
        view = r.load_view(row["case_id"], row["policy"])
        for m in view:
            if "ctxreplay:folded" in m.text:
                assert m.tokens == exact([m]) > 0
                pointers += 1
    assert pointers > 0


def spy_on_counts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text the tokenizer counts from now on, in this process."""
    seen: list[str] = []
    original = Tokenizer.count

    def spy(self: Tokenizer, text: str) -> int:
        seen.append(text)
        return original(self, text)

    monkeypatch.setattr(Tokenizer, "count", spy)
    replay_engine.cached_counter.cache_clear()  # no count of an earlier test remembered
    return seen


def prefix_texts(corpus: Path) -> set[str]:
    return {
        s
        for _, ms in Corpus(corpus).iter_sessions()
        for m in ms
        for p in m.parts
        for s in p.token_texts()
    }


def test_replay_counts_none_of_the_texts_the_corpus_counted(
    hand_run: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus, cases, root = hand_run
    seen = spy_on_counts(monkeypatch)
    run_replay(corpus, cases, WRITERS, root / "spied", workers=1, progress=False)
    assert seen  # the policies' own text is counted
    assert not set(seen) & prefix_texts(corpus)


def test_a_corpus_without_stored_part_counts_replays_the_same(
    hand_run: tuple[Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A corpus imported before parts' counts were stored: one-part messages take their
    message's count, the parts of the others are counted; the figures are the same."""
    corpus, cases, _ = hand_run
    old = tmp_path / "corpus"
    shutil.copytree(corpus, old)
    for path in (old / "messages").rglob("*.parquet"):
        table = pq.read_table(path)
        pq.write_table(table.drop_columns(["part_tokens"]), path)
    seen = spy_on_counts(monkeypatch)
    run_replay(old, cases, ["noop", "tool-prune"], tmp_path / "old", workers=1, progress=False)
    counted_again = set(seen) & prefix_texts(corpus)
    assert counted_again  # the parts of the messages with text beside their calls
    run_replay(corpus, cases, ["noop", "tool-prune"], tmp_path / "new", workers=1, progress=False)
    columns = ["policy", "case_id", "prefix_tokens", "view_tokens", "editable_tokens"]
    before = Run(tmp_path / "old").table("figures").select(columns).sort("policy", "case_id")
    after = Run(tmp_path / "new").table("figures").select(columns).sort("policy", "case_id")
    assert before.equals(after)
