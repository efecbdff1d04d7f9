"""``shared_phrase`` finds the longest repeated run of a constraint's words by extending runs
(issue 15): it must answer exactly what the quadratic search it replaced answered, kept here as
the reference, on sentences and texts built to repeat runs of each other (ties, stop words,
short words, case, code-like terms, Unicode whose lower case is longer or depends on context)."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ctxreplay.text.anchors import STOPWORDS, key_terms, shared_phrase


def shared_phrase_quadratic(sentence: str, text: str) -> str | None:
    """The implementation before issue 15: every (start, end) run, longest first."""
    words = re.findall(r"[\w./-]+", sentence)
    best: str | None = None
    lowered = text.lower()
    for i in range(len(words)):
        for j in range(len(words), i + 1, -1):
            phrase = " ".join(words[i:j])
            content = [w for w in words[i:j] if w.lower() not in STOPWORDS and len(w) >= 3]
            if (
                len(content) >= 2
                and phrase.lower() in lowered
                and (best is None or len(phrase) > len(best))
            ):
                best = phrase
                break
    if best:
        return best
    for t in key_terms(sentence):
        if re.search(r"[/_.\d]", t) and t.lower() in lowered:
            return t
    return None


def _words(text: str) -> list[str]:
    return text.split()


VOCAB = [
    # stop words and short words: runs of them never count
    *_words("the a to of do not never always use it is on we"),
    # content words, in several cases
    *_words("deploy Deploy DEPLOY staging branch main tests run api key billing refund orders"),
    # code-like terms (the single-term fallback)
    *_words("app.py src/app.py L1002 user_id v3.9 a/b -x ./run.sh x."),
    # Unicode: lower case that grows (İ → i̇), that depends on position (Σ), and folds (ß, ǅ)
    *_words("İstanbul ΟΔΟΣ ΣΑΣ straße ǅemal Ωmega"),
]
SEPARATORS = [" ", "  ", ", ", "; ", "\n", " (", ") ", ": ", " — "]

word_lists = st.lists(st.sampled_from(VOCAB), min_size=0, max_size=14)


def joined(words: list[str], seps: list[str]) -> str:
    out = []
    for k, w in enumerate(words):
        out.append(w)
        if k < len(words) - 1:
            out.append(seps[k % len(seps)])
    return "".join(out)


@st.composite
def sentence_and_text(draw: st.DrawFn) -> tuple[str, str]:
    """A sentence, and a text that repeats some runs of its words (re-cased, re-spaced),
    mixed with other words and arbitrary characters."""
    words = draw(word_lists)
    sentence = joined(words, draw(st.lists(st.sampled_from(SEPARATORS), min_size=1, max_size=4)))
    pieces: list[str] = []
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["run", "words", "noise"]))
        if kind == "run" and words:
            i = draw(st.integers(0, len(words) - 1))
            j = draw(st.integers(i, len(words)))
            run = " ".join(words[i:j])
            case = draw(st.sampled_from(["same", "lower", "upper", "title"]))
            run = {"same": run, "lower": run.lower(), "upper": run.upper(), "title": run.title()}[
                case
            ]
            pieces.append(run)
        elif kind == "words":
            pieces.append(" ".join(draw(word_lists)))
        else:
            pieces.append(draw(st.text(max_size=20)))
    text = draw(st.sampled_from(["\n", " ", ""])).join(pieces)
    return sentence, text


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sentence_and_text())
@example(("Never deploy the staging branch to main", "we never deploy the staging branch"))
@example(("use deploy staging, then deploy staging branch", "deploy staging branch deploy staging"))
@example(("ΟΔΟΣ ΣΑΣ straße orders", "οδος σας straße orders"))
@example(("İstanbul orders refund", "i̇stanbul orders refund"))
@example(("always run ./run.sh", "then ./run.sh"))
@example(("", ""))
def test_shared_phrase_matches_the_quadratic_search(case: tuple[str, str]) -> None:
    sentence, text = case
    assert shared_phrase(sentence, text) == shared_phrase_quadratic(sentence, text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60), st.text(max_size=120))
def test_shared_phrase_matches_on_arbitrary_text(sentence: str, text: str) -> None:
    assert shared_phrase(sentence, text) == shared_phrase_quadratic(sentence, text)


def test_ties_go_to_the_earliest_run() -> None:
    sentence = "deploy staging then orders refund"
    text = "orders refund and deploy staging"
    assert shared_phrase(sentence, text) == "deploy staging"
    assert shared_phrase_quadratic(sentence, text) == "deploy staging"
