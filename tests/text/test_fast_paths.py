"""The faster forms of the text functions give exactly what the plain forms gave (issue 15).

Each fast path (a pattern rewritten to start with a character class, a kind of anchor looked
for only in the lines that can hold it, a memo, a hint checked before a slow pattern, one JSON
encoding standing for two) is checked against the plain form, written out here as it was,
on hand-picked texts and on a few thousand random ones over the characters the patterns care
about.
"""

from __future__ import annotations

import json
import random
import re

import pytest

from ctxreplay.text import anchors, facts
from ctxreplay.text.anchors import Anchor, anchor_texts, extract
from ctxreplay.text.facts import (
    ERROR,
    document_frequency,
    facts_of,
    is_error,
    normalise,
    raw_document_frequency,
    token_set,
    tokens,
)

from random_texts import random_texts

# --- the plain forms --------------------------------------------------------------------------

PLAIN = {
    "_URL": r"\bhttps?://[^\s\"'<>()\[\]{}`]+",
    "_EMAIL": r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b",
    "_UUID": r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",
    "_HASH": r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,64}\b",
    "_PATH": r"(?<![\w/.:-])(?:~|\.{1,2})?/?[\w.@+-]+(?:/[\w.@+-]+)+/?"
    r"|(?<![\w/.:-])[\w.@+-]+/(?![\w/])",
    "_FILE": r"(?<![\w/.-])[\w-]{2,}\.(?:py|js|ts|tsx|jsx|go|rs|java|rb|c|h|cpp|hpp|cs|md|txt|"
    r"json|yaml|yml|toml|ini|cfg|csv|sql|sh|html|css|xml|log|lock|pdf|docx?|xlsx?)\b",
    "_ID": r"(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)+(?![\w-])"
    r"|(?<![\w-])(?=\w*\d)(?=\w*[A-Z])[A-Z0-9]{5,}(?![\w-])",
    "_NUMBER": r"(?<![\w.,])[-+$€£]?\d{1,3}(?:,\d{3})+(?:\.\d+)?%?(?![\w,])"
    r"|(?<![\w.,])[-+$€£]?\d+\.\d+%?(?![\w.])|(?<![\w.,])\d{5,}(?![\w.,])",
    "_QUOTE": r"“([^”\n]{12,400})”|\"([^\"\n]{12,400})\"|`([^`\n]{12,400})`"
    r"|(?<!\w)'([^'\n]{12,400})'(?!\w)",
    "_DATE": r"\b(?:19|20)\d\d-[01]\d-[0-3]\d(?:[T ][0-2]\d:[0-5]\d(?::[0-5]\d)?)?\b",
}
P = {name: re.compile(pattern) for name, pattern in PLAIN.items()}
PLAIN_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
PLAIN_ZERO_CENTS = re.compile(r"(?<=\d)\.0+\b")


def plain_extract(text: str) -> list[Anchor]:
    found: dict[str, Anchor] = {}
    covered = bytearray(len(text))

    def add(match_text: str, start: int, kind: str) -> None:
        t = anchors._trim(match_text)
        end = start + len(t)
        if len(t) < 4 or covered.find(0, start, end) < 0:
            return
        covered[start:end] = b"\x01" * (end - start)
        found.setdefault(t, Anchor(t, kind))

    for m in P["_URL"].finditer(text):
        add(m.group(), m.start(), "url")
    for m in P["_EMAIL"].finditer(text):
        add(m.group(), m.start(), "email")
    for m in P["_UUID"].finditer(text):
        add(m.group(), m.start(), "uuid")
    for m in P["_PATH"].finditer(text):
        if anchors._looks_like_path(m.group()):
            add(m.group(), m.start(), "path")
    for m in P["_DATE"].finditer(text):
        add(m.group(), m.start(), "number")
    for m in P["_FILE"].finditer(text):
        add(m.group(), m.start(), "path")
    for m in P["_HASH"].finditer(text):
        add(m.group(), m.start(), "hash")
    for m in P["_ID"].finditer(text):
        add(m.group(), m.start(), "id")
    for m in P["_NUMBER"].finditer(text):
        if not anchors._is_trivial_number(m.group().strip("+-$€£%")):
            add(m.group(), m.start(), "number")
    for m in P["_QUOTE"].finditer(text):
        group = next(g for g in range(1, 5) if m.group(g) is not None)
        inner = m.group(group).strip()
        if len(inner) >= 12 and " " in inner:
            add(inner, m.start(group), "quote")
    return sorted(found.values(), key=lambda a: text.find(a.text))


def plain_normalise(text: str) -> str:
    t = text.lower()
    if facts._DATE_HINT.search(t):
        t = facts._PROSE_DATE.sub(facts._date, t)
    if facts._CURRENCY.search(t):
        t = facts._CURRENCY.sub("", t)
    if "," in t:
        t = PLAIN_THOUSANDS.sub("", t)
    return PLAIN_ZERO_CENTS.sub("", t) if ".0" in t else t


def plain_tokens(text: str) -> list[str]:
    t = plain_normalise(text)
    found = facts._TOKEN.findall(t)
    strip, paths, dates = "_" in t, "/" in t, facts._ISO_DATE.search(t) is not None
    out: list[str] = []
    for tok in found:
        if strip:
            tok = tok.strip("_")
            if not tok:
                continue
        out.append(tok)
        if paths and "/" in tok and (name := tok.rsplit("/", 1)[-1]):
            out.append(name)
        elif dates and len(tok) == 10 and facts._ISO_DATE.fullmatch(tok):
            out.append(tok[5:])
    return out


# --- texts ------------------------------------------------------------------------------------

SAMPLES = [
    "Refund ORD-88213-KX of $1,284.50 (cap 1,000.00) by 2024-05-20T10:42:07; see "
    "https://track.example.com/p/ZX81 or mail ops+refunds@example.co.uk",
    "read src/refunds/handlers.py, ~/notes/a.md, ../x/y, tests/ and and/or 3/4 2024/05/01",
    "commit 3f9a2c1d8e and uuid 123e4567-e89b-12d3-a456-426614174000, hash deadbeef",
    "ABC12 X9Y8Z7 AB-12 ab_12cd a-b c_1 -x9-1 x9- Q3REV 12345 1234 12,345,678 .5 3.14159",
    "He said \"please never touch the prod database\" and 'keep the public API unchanged' ok",
    "`run the full test suite first` and “quoted with curly marks here”, it's a don't-care",
    "row 1\nrow 2: 1,\n234 x\n$\n5 May\n20, 2024 and May 20, 2024 and 5th may",
    "İstanbul ÉRROR Traceback: KeyError \u2028 next ſtatus ١٢٣٤٥ ٣.٥ Ｆａｉｌｅｄ",
    "Error: cannot open file; exit code 2; couldn't; timed out; no such file; not found",
    "1.00 2.50 $3.00 10.000 1,000.0 0.0 v1.0 1.0.0",
]
ALPHABET = [
    *"aAbBcfFxXzZ0123456789-_./:@$€£¥%+, '\"`“”\n\t~éß٣İ\x7f",
    "://",
    "https://",
    "2024-05-0",
    "deadbeef",
    ".py",
    "@x.io",
    "May 5",
    "1,234",
    ".00",
    "error",
    "Failed",
    "AB12",
]


TEXTS = SAMPLES + random_texts(SAMPLES, ALPHABET, 3000, seed=15)


@pytest.mark.parametrize("name", ["_UUID", "_HASH", "_DATE", "_ID", "_NUMBER", "_QUOTE"])
def test_rewritten_patterns_find_the_same_matches(name: str) -> None:
    fast, plain = getattr(anchors, name), P[name]
    for text in TEXTS:
        got = [(m.span(), m.groups()) for m in fast.finditer(text)]
        assert got == [(m.span(), m.groups()) for m in plain.finditer(text)], text


def test_extract_is_what_every_pattern_over_the_whole_text_finds() -> None:
    for text in TEXTS:
        want = [(a.text, a.kind) for a in plain_extract(text)]
        assert [(a.text, a.kind) for a in extract(text)] == want, text
        assert anchor_texts(text) == {t for t, _ in want}, text


def test_lines_with_a_hint_are_the_lines_holding_it() -> None:
    text = "a/b\nno slash\n\nx / y\nlast/"
    spans = list(anchors._lines_with(text, "/"))
    assert [text[s:e] for s, e in spans] == ["a/b", "x / y", "last/"]
    assert list(anchors._lines_with("", "/")) == []
    assert [text[s:e] for s, e in anchors._lines_with(text, re.compile("sl"))] == ["no slash"]


def test_tokens_token_set_and_normalise() -> None:
    for text in TEXTS:
        want = plain_tokens(text)
        assert normalise(text) == plain_normalise(text), text
        assert tokens(text) == want, text
        assert token_set(text) == frozenset(want), text
        assert token_set(text) == frozenset(want), text  # the memo gives the same again


def test_error_lines() -> None:
    for text in TEXTS + [t.upper() for t in SAMPLES]:
        for line in text.splitlines() or [text]:
            assert is_error(line) == (ERROR.search(line) is not None), line


def test_document_frequency_of_parts_adds_up() -> None:
    sessions = [t.split("\n") for t in TEXTS[:400]]
    whole, n = document_frequency(sessions)
    plain: dict[str, int] = {}
    for texts in sessions:
        for t in {tok for text in texts for tok in plain_tokens(text)}:
            plain[t] = plain.get(t, 0) + 1
    assert (whole, n) == ({t: c for t, c in plain.items() if c >= 3}, len(sessions))
    summed: dict[str, int] = {}
    for part in (sessions[:150], sessions[150:]):
        counts, _ = raw_document_frequency(part)
        for t, c in counts.items():
            summed[t] = summed.get(t, 0) + c
    assert {t: c for t, c in summed.items() if c >= 3} == whole


def plain_probes(value: object) -> tuple[str, ...]:
    def compact(v: object, a: bool) -> str:
        return json.dumps(v, separators=(",", ":"), ensure_ascii=a)

    return tuple({facts.squash(compact(value, False)), facts.squash(compact(value, True))})


def test_json_probes_with_and_without_escapes() -> None:
    """One JSON encoding stands for both where they are the same text (ASCII, no DEL)."""
    values = [
        {"name": "Zoë", "n": 1},
        {"k\x7f": "a\x7fb", "x": [1, "é"]},
        {"plain": "ascii only", "ctl": "a\u0001b\nc"},
        ["é", "\u2028", 1.5, None, True],
        {"a b": {"c": "d"}},
    ]
    for value in values:
        for text in (json.dumps(value), json.dumps(value, ensure_ascii=False)):
            for f in facts_of(text):
                if f.kind == "row":
                    assert set(f.probes) == set(plain_probes(json.loads(f.text)))
            fields = [f for f in facts_of(text) if f.kind == "field" and ": " in f.text]
            for f in fields:
                assert len(f.probes) in (1, 2)
    record = {"name": "Zoë\x7f", "id": 7}
    fact = next(f for f in facts_of(json.dumps(record)) if f.kind == "field" and f.key)
    pair = {
        facts.squash(
            json.dumps("name", ensure_ascii=a) + ":" + json.dumps("Zoë\x7f", ensure_ascii=a)
        )
        for a in (False, True)
    }
    assert set(fact.probes) == pair and len(pair) == 2


# --- facts: one tokenising of a text's pieces, and of the whole text -------------------------

#: texts cut into lines and sentences (prose), with every rewrite of ``normalise`` at the cuts
PIECE_TEXTS = [
    "Paid $1,284.00 on 3 May. Total 1,000.50. Next: $5.00!\nrow_1 a/b.py 2024-05-20 ok.",
    "costs 5.00. Next 1,000? Yes $7 and $ 8, 1,0000 and x.0 and 2.000\n\n  - Status: Done  ",
    "May\n20, 2024 here. And june 6th.\nno date",
    '{"a": 1}\n[1, "x"]\nplain line: value_1\n{not json',
    "İstanbul ĞÜŞ Σ ΣΑΣ. ſtatus 1,000.00 € 5 and €5. Ｆａｉｌｅｄ\nerror: cannot open /tmp/x_y",
    "a. . b!! c? d.e f...g 1.5. 2.0. v1.0.0. _x_ __ /// ...",
    "x" * 500 + ". " + "Long line 1,234.00 with sentences. " * 20,
]


def _plain_line_facts(text: str, prose: bool) -> list[tuple[str, str, frozenset[str]]]:
    """``_line_facts`` as it was: every piece tokenised on its own with ``token_set``."""
    out = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        parsed = facts.parse_json(line)
        if isinstance(parsed, dict | list):
            out.extend((f.kind, f.text, f.tokens) for f in facts._json_facts(parsed))
            continue
        kind = "error" if is_error(line) else "line"
        pieces = (
            [s.strip() for s in facts._SENTENCE.findall(line) if s.strip()]
            if prose or len(line) > facts._MAX_LINE
            else [line]
        )
        for piece in pieces:
            toks = token_set(piece)
            if not toks:
                continue
            k = "error" if kind == "error" and ERROR.search(piece) else kind
            if prose and k == "line":
                k = "sentence"
            out.append((k, piece, toks))
            m = facts.KV_LINE.match(piece)
            if m and len(m.group(2)) <= 120:
                value_toks = token_set(m.group(2))
                if value_toks:
                    out.append(("field", piece, value_toks))
    return out


def test_piece_tokens_is_token_set_of_each_piece() -> None:
    for text in PIECE_TEXTS + TEXTS:
        tokenise = facts.piece_tokens(text)
        for line in text.splitlines():
            for piece in [line.strip(), *(s.strip() for s in facts._SENTENCE.findall(line))]:
                if piece:
                    assert tokenise(piece) == token_set(piece), (text, piece)


def test_line_facts_are_what_each_piece_alone_gives() -> None:
    for text in PIECE_TEXTS + TEXTS:
        for prose in (False, True):
            got = [(f.kind, f.text, f.tokens) for f in facts._line_facts(text, prose)]
            assert got == _plain_line_facts(text, prose), (text, prose)


#: texts of lines a ``LineIndex`` must look into with care: a JSON line whose values are
#: escaped (their tokens are not in the text), key lines long and short, CRLF and other line
#: breaks, a month name without a date, a date across a line break (no index: facts_of's)
INDEX_TEXTS = [
    '{"name": "caf\\u00e9 x_\\u0031", "n": 5}\nplain caf\u00e9 line\n[1, "\\u0041b"]',
    "Status: Suspended\r\nline_id = L-1002\r\n  - Owner: **Ann**\r\nno key here 7",
    "a\x0bb: 1\x0cc\x1cd = e_f\x1d\x1eg\x85h: 2\u2028i\u2029j: k_l",
    "Decision 3 of the market 5; mayor 2 and junk 9\nso no date here: 1,000.00",
    "on May\n5, 2024 it failed: error code 3",
    "key: " + "v " * 200 + ". Other: x.\n" + "Long: line 1,234.00 here. " * 20,
    'x_1 /srv/a_b.py __init__ _edge_ 2024-05-20 05-20\n{}\n[]\n{"a": {}}\n[oops: 1',
]


def _index_tokens(text: str, found: list[facts.Fact]) -> set[str]:
    """Every token of the facts, and some that no fact holds (parts of tokens, other words)."""
    held = {t for f in found for t in f.tokens}
    return held | {t[:2] for t in held} | {t[1:] for t in held} | {"zzz", "0", "1", "e"}


def test_a_line_index_finds_what_the_facts_of_the_text_hold() -> None:
    """``index_of`` gives ``facts_of``'s facts, or for a text of lines a ``LineIndex`` whose
    lookups (facts holding a token, in order) and fields are those of ``facts_of``'s facts."""
    indexed = 0
    for text in PIECE_TEXTS + INDEX_TEXTS + TEXTS + [t.upper() for t in SAMPLES] + ["\n\n"]:
        expected = facts_of(text)
        index = facts.index_of(text)
        if not isinstance(index, facts.LineIndex):
            assert index == expected, text
            continue
        indexed += 1
        assert index.tokens() == token_set(text), text
        assert index.fields == [f for f in expected if f.kind == "field" and f.key], text
        for t in sorted(_index_tokens(text, expected)):
            assert index.with_token(t) == [f for f in expected if t in f.tokens], (text, t)
        assert index.with_token("zzz") == index.with_token("zzz")  # and again, from its lines
    assert indexed > 2000  # most texts are indexed, not left to facts_of
    assert facts.index_of("on May\n5, 2024") == facts_of("on May\n5, 2024")  # a prose date
    assert facts.index_of('{"a": "b c"}') == facts_of('{"a": "b c"}')  # one JSON document
    assert facts.index_of("Status: ok. Done.", prose=True) == facts_of("Status: ok. Done.", True)


def test_a_line_index_looks_into_the_lines_a_token_can_be_on() -> None:
    """Only the lines whose normalised text holds a lookup's token are cut into facts, once
    each; a JSON line (its values decoded: ``x1y`` is written ``x\\u0031y``) and a line that
    may hold a field are looked into at once."""
    lines = [f"row {i:03d} holds item_{i:03d} at /srv/f{i:03d}.py" for i in range(200)]
    index = facts.index_of("\n".join([*lines, '{"id": "x\\u0031y"}', "Owner: Ann"]))
    assert isinstance(index, facts.LineIndex)
    assert sorted(index._done) == [200]  # the JSON line; the key line is matched, not cut
    assert [(f.kind, f.text) for f in index.fields] == [
        ("field", "id: x1y"),
        ("field", "Owner: Ann"),
    ]
    assert [f.text for f in index.with_token("item_017")] == [lines[17]]
    assert sorted(index._done) == [17, 200]
    assert [f.kind for f in index.with_token("x1y")] == ["field", "row"]
    assert [f.text for f in index.with_token("f003.py")] == [lines[3]]
    assert [f.text for f in index.with_token("1.5")] == []  # in no line's text
    assert sorted(index._done) == [3, 17, 200]


def test_a_text_whose_lines_do_not_normalise_line_for_line_is_cut_whole(monkeypatch) -> None:
    """The index leans on the normalised text having the text's lines: where it would not,
    ``index_of`` gives ``facts_of``'s facts instead of a wrong index."""
    text = "Status: ok\nitem_1 at /srv/a.py"
    tokenise = facts.piece_tokens(text)
    with pytest.raises(ValueError, match="lines"):
        facts.LineIndex(text, tokenise, "status: ok item_1 at /srv/a.py")
    monkeypatch.setattr(facts, "_piece_normaliser", lambda t: (tokenise, t.lower() + "\n!"))
    assert facts.index_of(text) == facts_of(text)


def plain_copied_runs(words: list[str], source_of, n: int) -> list[tuple[int, str]]:
    """``copied_runs`` as it was: a step per gram, every gram's source asked for."""
    runs: list[tuple[int, str]] = []
    start, current = -1, None
    sources = [source_of(g) for g in facts.grams(words, n)]
    for j, src in enumerate([*sources, None]):
        if src != current or src is None:
            if current is not None:
                runs.append((current, " ".join(words[start : j - 1 + n])))
            start, current = j, src
    return runs


def test_copied_runs_from_their_hits_are_the_runs_of_every_gram() -> None:
    """The runs found from the grams that come from a source alone (their positions) are the
    maximal runs a pass over every gram finds: adjacent runs from two sources stay apart, a
    gram from no source breaks a run, and a gram repeated in the message is a hit at each of
    its places."""
    rng = random.Random(15)
    checked = 0
    for _ in range(600):
        words = [rng.choice("abcdefg") for _ in range(rng.randrange(0, 40))]
        n = rng.choice([1, 2, 3, facts.GRAM])
        found = facts.grams(words, n)
        source = {g: rng.choice([None, None, 0, 1, 2]) for g in set(found)}
        at: dict[str, list[int]] = {}
        for j, g in enumerate(found):
            at.setdefault(g, []).append(j)
        hits = sorted((j, source[g]) for g in at if source[g] is not None for j in at[g])
        want = plain_copied_runs(words, source.get, n)
        assert facts.copied_runs(words, hits, n) == want, (words, n)
        checked += bool(want)
    assert checked > 300  # most cases copy something


def test_a_copied_span_reads_as_its_message_wrote_it() -> None:
    """``copied_spans`` are where ``copied_runs`` are; ``piece_text`` gives their text as the
    message had it (spaces as written, runs of whitespace one space), not the pieces joined by
    spaces that a person read as ``" Project Alpha " , type`` (issue 28)."""
    text = 'card:\n  name:  "Project Alpha",\ttype: /tmp/out/page-a41aa94f.md\n'
    words = facts.pieces(text)
    found = facts.grams(words, 3)
    hits = [(j, 0) for j in range(2, len(found))]
    [(src, start, stop)] = facts.copied_spans(words, hits, 3)
    assert facts.copied_runs(words, hits, 3) == [(src, " ".join(words[start:stop]))]
    assert (
        " ".join(words[start:stop])
        == 'name : " Project Alpha " , type : / tmp / out / page - a41aa94f . md'
    )
    assert (
        facts.piece_text(text, start, stop)
        == 'name: "Project Alpha", type: /tmp/out/page-a41aa94f.md'
    )
    assert facts.piece_text(text, 0, 2) == "card:"


SPACES = ["\u00a0", "\u2003", "\u3000", "\x0b", "\x1c", "\u2028", "\u0301", "ٯ", "_", "\r\n"]


def test_pieces_are_words_and_marks_as_the_plain_pattern_finds_them() -> None:
    """``\\w+|\\S`` finds the pieces ``\\w+|[^\\w\\s]`` finds, whatever the spaces and marks."""
    plain = re.compile(r"\w+|[^\w\s]")
    texts = TEXTS + random_texts(SAMPLES, ALPHABET + SPACES, 2000, seed=25)
    assert sum(any(s in t for s in SPACES[:6]) for t in texts) > 500  # Unicode spaces, often
    for text in texts:
        assert facts.pieces(text) == plain.findall(text), text


def test_the_word_runs_kept_are_those_among_the_given() -> None:
    rng = random.Random(25)
    for _ in range(400):
        words = [rng.choice("abcd.") for _ in range(rng.randrange(0, 30))]
        n = rng.choice([1, 2, facts.GRAM])
        every = frozenset(facts.grams(words, n))
        among = frozenset({g for g in every if rng.random() < 0.3} | {"x y", "not a run"})
        assert facts.gram_set(words, None, n) == every
        assert facts.gram_set(words, among, n) == every & among
        assert facts.gram_set(words, frozenset(), n) == frozenset()
