"""The anchor fast paths of issue 15 (second round) give what the plain forms give.

Patterns found from their first ``-`` (``_UUID_AT_DASH``, ``_DATE_AT_DASH``), ``_FILE`` started
with a character class, hashes and identifiers looked for only in the lines holding
``_MIXED``, adjacent hinted lines joined into one block, and a session's anchors found over its
distinct lines at once (``anchor_texts_of_all``): each is checked against the plain form,
written out here, on hand-picked texts and on random ones over the characters that matter.
"""

from __future__ import annotations

import random
import re

import pytest

from ctxreplay.text import anchors
from ctxreplay.text.anchors import anchor_texts, anchor_texts_of_all, extract

from random_texts import random_texts

PLAIN_UUID = re.compile(
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
PLAIN_DATE = re.compile(r"\b(?:19|20)\d\d-[01]\d-[0-3]\d(?:[T ][0-2]\d:[0-5]\d(?::[0-5]\d)?)?\b")
PLAIN_FILE = re.compile(
    r"(?<![\w/.-])[\w-]{2,}\.(?:py|js|ts|tsx|jsx|go|rs|java|rb|c|h|cpp|hpp|cs|md|txt|"
    r"json|yaml|yml|toml|ini|cfg|csv|sql|sh|html|css|xml|log|lock|pdf|docx?|xlsx?)\b"
)
PLAIN_HASH = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,64}\b")
PLAIN_ID = re.compile(
    r"(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)+(?![\w-])"
    r"|(?<![\w-])(?=\w*\d)(?=\w*[A-Z])[A-Z0-9]{5,}(?![\w-])"
)

SAMPLES = [
    "uuid 123e4567-e89b-12d3-a456-426614174000 and x123e4567-e89b-12d3-a456-426614174000",
    "-123e4567-e89b-12d3-a456-426614174000-123e4567-e89b-12d3-a456-426614174000",
    "123e4567-e89b-12d3-a456-426614174000123e4567-e89b-12d3-a456-426614174000 end",
    "2024-05-20 2024-05-20T10:42:07 x2024-05-20 1999-12-31-2000-01-01 2024-05-202024-05-20",
    "١٩٩٩-12-31 20٢٤-05-20 2024-13-40 2024-05-20T25:61 -2024-05-20- _2024-05-20",
    "read src/a.py, x.md, .hidden.py, a-b.json, /abs/c.sh, -x.py _y.py é.py ab.pyc a.b.py",
    "ORD-88213-KX ab_12cd AB12C Q3REV x9- -x9-1 a-1 1-a deadbeef0 0deadbeef cafe-12 ß1-a",
    "commit 3f9a2c1d8e, 12ab 1_a a_1 A1 ab-cd ab12 12345 1234 ABCDE A1B2C3 a1-b2-c3_d4",
]
ALPHABET = [
    *"aAbBcfFxXzZ0123456789-_./:@ '\"`\n\t~éß٣İ",
    "2024-05-2",
    "1999-12-",
    "T10:42",
    "123e4567-",
    "e89b-",
    "426614174000",
    "deadbeef",
    ".py",
    ".json",
    "AB12",
    "src/",
]


TEXTS = SAMPLES + random_texts(SAMPLES, ALPHABET, 3000, seed=1515, max_chars=90, max_lines=6)


@pytest.mark.parametrize(
    ("fast", "head", "plain"),
    [
        (anchors._UUID_AT_DASH, anchors._UUID_HEAD, PLAIN_UUID),
        (anchors._DATE_AT_DASH, anchors._DATE_HEAD, PLAIN_DATE),
        (anchors._FILE, 0, PLAIN_FILE),
    ],
)
def test_patterns_found_from_a_later_character_find_the_same_matches(
    fast: re.Pattern[str], head: int, plain: re.Pattern[str]
) -> None:
    found_any = False
    for text in TEXTS:
        want = [m.span() for m in plain.finditer(text)]
        got = [(m.start() - head, m.end()) for m in fast.finditer(text)]
        assert got == want, text
        found_any = found_any or bool(want)
    assert found_any  # the texts do hold matches


def test_every_hash_and_identifier_is_in_a_line_holding_the_mixed_hint() -> None:
    seen = 0
    for text in TEXTS:
        for pattern in (PLAIN_HASH, PLAIN_ID):
            for m in pattern.finditer(text):
                start = text.rfind("\n", 0, m.start()) + 1
                end = text.find("\n", m.end())
                line = text[start : end if end >= 0 else len(text)]
                assert anchors._MIXED.search(line), (m.group(), line)
                seen += 1
    assert seen > 100


def test_blocks_join_adjacent_hinted_lines() -> None:
    text = "a/b\nc/d\nno\ne/f\n\ng/h/\n/"
    blocks = anchors._blocks_with(text, "/")
    assert [text[s:e] for s, e in blocks] == ["a/b\nc/d", "e/f", "g/h/\n/"]
    assert anchors._blocks_with("no hint", "/") == []
    for text in TEXTS[:500]:
        lines = [text[s:e] for s, e in anchors._lines_with(text, "/")]
        joined = [text[s:e] for s, e in anchors._blocks_with(text, "/")]
        assert [line for block in joined for line in block.split("\n")] == lines


def test_anchors_of_texts_are_the_union_of_each_texts_anchors() -> None:
    rng = random.Random(7)
    for _ in range(600):
        group = [rng.choice(TEXTS) for _ in range(rng.randint(0, 5))]
        group += [group[0]] if group else []  # repeated texts and lines
        want: set[str] = set().union(*(anchor_texts(t) for t in group))
        assert anchor_texts_of_all(group) == want, group
    assert anchor_texts_of_all([]) == set()


def test_a_texts_anchors_are_its_lines_anchors() -> None:
    """What ``anchor_texts_of_all`` rests on: no anchor spans or depends on another line."""
    for text in TEXTS:
        by_line: set[str] = set().union(*(anchor_texts(line) for line in text.split("\n")))
        assert anchor_texts(text) == by_line, text
        assert {a.text for a in extract(text)} == by_line
