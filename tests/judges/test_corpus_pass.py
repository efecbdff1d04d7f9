"""The corpus pass of the judges: counts summed over blocks of sessions equal one pass over the
whole corpus, whatever the block size, and only keys at or over the threshold come back."""

from __future__ import annotations

from collections import Counter

import pytest

from ctxreplay.datasets.store import Corpus
from ctxreplay.judges.anchor_judge import anchor_document_frequency
from ctxreplay.judges.base import corpus_frequencies, make_judge
from ctxreplay.judges.flow import frequency_of as _frequency_of


@pytest.mark.parametrize("apart", [False, True], ids=["arrow-here", "duckdb-apart"])
def test_block_counts_add_up_to_the_whole_corpus(
    synth_corpus, apart: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both ways of summing the blocks (Arrow in this process for small counts, DuckDB in a
    process of its own for large ones) give the whole corpus's counts."""
    if apart:
        monkeypatch.setattr("ctxreplay.judges.base.APART_BYTES", 0)
    corpus = Corpus(synth_corpus)
    sessions = [m for _, m in corpus.iter_sessions()]
    for count in (anchor_document_frequency, _frequency_of):
        whole, n = count(sessions)
        assert n == len(sessions) >= 10
        for block in (1, 3, 10_000):
            df, k = corpus_frequencies(corpus, count, block=block)
            assert (df, k) == (dict(whole), n)
        df, _ = corpus_frequencies(corpus, count, at_least=lambda n: n // 4, block=3)
        assert df == {key: c for key, c in whole.items() if c >= n // 4}
        assert 0 < len(df) < len(whole)


def test_judge_states_from_the_pass(synth_corpus) -> None:
    """Anchor keeps the anchors of more than ``common_fraction`` of the sessions; flow the
    tokens of three sessions or more, exactly as counted over the whole corpus."""
    corpus = Corpus(synth_corpus)
    sessions = [m for _, m in corpus.iter_sessions()]
    anchors, n = anchor_document_frequency(sessions)
    judge = make_judge("anchor")
    fraction = judge.params.common_fraction
    assert judge.corpus_state(corpus) == sorted(
        a for a, c in Counter(anchors).items() if c / n > fraction
    )
    tokens, n = _frequency_of(sessions)
    state = make_judge("flow").corpus_state(corpus)
    assert state == {"df": {t: c for t, c in tokens.items() if c >= 3}, "sessions": n}
