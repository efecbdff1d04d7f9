"""Facts of a prefix message, normalised so that a later use can be recognised.

A *fact* is the smallest piece of a message that a later turn can depend on: a field of structured
tool output (``path → value``, from JSON or ``key: value`` lines), a row of a list or a record, a
line of text or code, an error line, a sentence of the user's. Each carries

- its normalised tokens (case folded; thousands separators, currency signs and ``.00`` dropped;
  ``May 20, 2024`` → ``2024-05-20``), so that ``"$1,339.00"`` in a tool result and ``1339`` in
  a later reply are one value;
- a *probe*: the exact text (whitespace removed) that must still be in a view for the fact to be
  there.

Token weights make common words and boilerplate count for nothing: inverse document frequency
over the corpus's sessions, with a floor for tokens whose shape makes them specific (identifiers
that mix letters and digits, paths, file names, long numbers).
"""

from __future__ import annotations

import bisect
import functools
import itertools
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast

from .anchors import STOPWORDS

_MONTHS = {
    m: i
    for i, names in enumerate(
        [
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ],
        start=1,
    )
    for m in names
}
_PROSE_DATE = re.compile(
    r"\b(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?\s+(\d{1,2})(?:st|nd|rd|th)?"
    r"(?:,?\s+((?:19|20)\d\d))?\b"
)
#: what a prose date needs, found fast (a literal first): a month name (all start with one of
#: these stems) then a dot, spaces and a digit; text without it holds none
_DATE_HINT = re.compile("(?:" + "|".join(sorted({m[:3] for m in _MONTHS})) + r")[a-z]*\.?\s+\d")
#: a comma between a digit and three more; a dot and zeros after a digit. Each starts with its
#: literal and looks behind it for the digit (``(?<=\d),`` matches the same commas, but a pattern
#: that starts with a look-behind is tried at every position of a text)
_THOUSANDS = re.compile(r",(?<=\d,)(?=\d{3}\b)")
_CURRENCY = re.compile(r"[$€£¥](?=\d)")
_ZERO_CENTS = re.compile(r"\.(?<=\d\.)0+\b")
_TOKEN = re.compile(r"[a-z0-9_]+(?:[.\-/@:+][a-z0-9_]+)*")
_ISO_DATE = re.compile(r"(?:19|20)\d\d-\d\d-\d\d")


def _currency(t: str) -> bool:
    """Whether ``_CURRENCY`` matches: its signs looked for first, each by a scan in C (a
    pattern that starts with a character class is tried at every position of the text)."""
    return ("$" in t or "€" in t or "£" in t or "¥" in t) and _CURRENCY.search(t) is not None


#: words that carry no fact whatever the corpus says: the anchor judge's stop words (function
#: words and the vocabulary of instructions) and JSON's literals
STOP = (
    STOPWORDS
    | frozenset(("had", "has", "have", "he", "her", "his", "its", "may", "might", "she"))
    | frozenset(("was", "were", "where", "why", "yes", "true", "false", "null", "none"))
)


def _date(m: re.Match[str]) -> str:
    month, day, year = _MONTHS[m.group(1)], int(m.group(2)), m.group(3)
    if not 1 <= day <= 31:
        return m.group(0)
    return f"{year}-{month:02d}-{day:02d}" if year else f"{month:02d}-{day:02d}"


def normalise(text: str) -> str:
    """Case, currency, thousands separators, zero cents and prose dates made uniform."""
    t = text.lower()
    # each rewrite only where the characters it needs are there: most text has none of them,
    # and the judges normalise every line of a corpus
    if _DATE_HINT.search(t):
        t = _PROSE_DATE.sub(_date, t)
    if _currency(t):
        t = _CURRENCY.sub("", t)
    if "," in t:
        t = _THOUSANDS.sub("", t)
    return _ZERO_CENTS.sub("", t) if ".0" in t else t


def tokens(text: str) -> list[str]:
    """Normalised tokens in order. A path is followed by its file name (``/docs/log.csv`` →
    ``log.csv``) and an ISO date by its month and day, the forms prose uses for them."""
    t = normalise(text)
    found: list[str] = _TOKEN.findall(t)
    # what each token may need, known from the whole text: most need nothing
    if _plain(t):
        return found
    out: list[str] = []
    for tok in found:
        out.extend(_more(tok))
    return out


def _more(tok: str) -> tuple[str, ...]:
    """What one raw token of ``_TOKEN`` stands for: itself without edge underscores (nothing if
    it was all underscores), then a path's file name or an ISO date's month and day."""
    if "_" in tok:
        tok = tok.strip("_")
        if not tok:
            return ()
    if "/" in tok:
        name = tok.rsplit("/", 1)[-1]
        return (tok, name) if name else (tok,)
    if len(tok) == 10 and _ISO_DATE.fullmatch(tok):  # a date's only length
        return (tok, tok[5:])
    if tok.startswith("0x") and len(tok) > 6 and _HEX.fullmatch(tok, 2):
        return (tok, tok[2:])  # a hex literal is also its digits, as a listing prints them
    return (tok,)


_HEX = re.compile(r"[0-9a-f]+")


def _expand(raw: set[str]) -> set[str]:
    """The union of ``_more`` over distinct raw tokens: most are themselves, and only those
    with a ``_``, a ``/`` or a date's length are looked at one by one."""
    special = [t for t in raw if "_" in t or "/" in t or len(t) == 10 or t.startswith("0x")]
    if not special:
        return raw
    out = raw.difference(special)
    for tok in special:
        out.update(_more(tok))
    return out


#: texts this short are tokenised through a memo: field values, keys and short lines recur
#: across the messages and sessions of a corpus
_MEMO_CHARS = 80
#: what recurs does so soon: 4,096 entries hit as often as 65,536 on the synthetic corpus, and
#: 65,536 of them held about 50 MB in each judge process
_MEMO_ENTRIES = 1 << 12


@functools.lru_cache(maxsize=_MEMO_ENTRIES)
def _short_token_set(text: str) -> frozenset[str]:
    return _token_set(text)


def _token_set(text: str) -> frozenset[str]:
    return _normalised_token_set(normalise(text))


def _normalised_token_set(t: str) -> frozenset[str]:
    found = _TOKEN.findall(t)
    if _plain(t):
        return frozenset(found)
    return frozenset(_expand(set(found)))


def _plain(normalised: str) -> bool:
    """Whether every token of a normalised text stands for itself alone (``_more`` changes a
    token only where it has a ``_`` or a ``/``, or is an ISO date)."""
    return not (
        "_" in normalised
        or "/" in normalised
        or "0x" in normalised
        or ("-" in normalised and _ISO_DATE.search(normalised) is not None)
    )


def token_set(text: str) -> frozenset[str]:
    """``frozenset(tokens(text))``, faster: each distinct token is looked at once, and short
    texts are memoised (a pure function of the text)."""
    if len(text) <= _MEMO_CHARS:
        return _short_token_set(text)
    return _token_set(text)


def squash(text: str) -> str:
    """Whitespace removed: the form in which a probe is looked up in a view."""
    return "".join(text.split())


# --- weights --------------------------------------------------------------------------------

_CODELIKE = re.compile(r"(?=.*[a-z])(?=.*\d).{4,}|.*[/@].*[a-z].*|[a-z_]\w*\.[a-z]{1,5}|\w+_\w+")


@functools.lru_cache(maxsize=1 << 16)
def shape_floor(token: str) -> float:
    """How specific a token is by its shape alone."""
    if len(token) < 2 or token in STOP:
        return 0.0
    if _CODELIKE.fullmatch(token):
        return 1.0
    if token.isdigit():
        return 1.0 if len(token) >= 5 else 0.5 if len(token) >= 3 else 0.0
    if re.fullmatch(r"\d+(?:[.:\-/]\d+)+", token):  # decimals, dates, times
        return 0.5 if len(token) >= 4 else 0.0
    return 0.0


#: weights remembered at most (about 10 MB)
_WEIGHTS_CACHED = 1 << 16


@dataclass(frozen=True)
class Weights:
    """Inverse document frequency over a corpus's sessions, with a floor for specific shapes.

    A token in at most two sessions weighs 1; one in ``common`` (default 30%) of the sessions or
    more weighs 0 (the vocabulary of a tool or of the domain); log-linear between. Tokens in more
    than ``boilerplate`` (90%) of the sessions weigh 0 whatever their shape; below that an id of
    a shared test database (``L1002`` in most sessions of a benchmark) still counts as an id. With fewer than
    ``min_sessions`` sessions document frequency means nothing and every non-stop word weighs 1.
    """

    df: Mapping[str, int] = field(default_factory=dict)
    sessions: int = 0
    common: float = 0.3
    boilerplate: float = 0.9
    min_sessions: int = 8
    _cache: dict[str, float] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __call__(self, token: str) -> float:
        cached = self._cache.get(token)
        if cached is None:
            if len(self._cache) >= _WEIGHTS_CACHED:  # a process judging a large corpus sees
                self._cache.clear()  # most of its vocabulary: kept bounded
            cached = self._cache[token] = self._weigh(token)
        return cached

    def _weigh(self, token: str) -> float:
        if len(token) < 2 or token in STOP:
            return 0.0
        n = self.sessions
        if n < self.min_sessions:
            return 1.0 if not token.isdigit() or len(token) >= 3 else 0.0
        df = self.df.get(token, 1)
        if df / n > self.boilerplate:
            return 0.0
        top = self.common * n
        idf = (
            1.0 if df <= 2 else max(0.0, math.log(top / df) / math.log(top / 2)) if top > 2 else 0.0
        )
        return min(1.0, max(idf, shape_floor(token)))


def document_frequency(session_texts: Iterable[Iterable[str]]) -> tuple[dict[str, int], int]:
    """In how many sessions each token occurs (only tokens in three or more are kept)."""
    df, n = raw_document_frequency(session_texts)
    return {t: c for t, c in df.items() if c >= 3}, n


def raw_document_frequency(
    session_texts: Iterable[Iterable[str]],
) -> tuple[dict[str, int], int]:
    """In how many sessions each token occurs, all tokens (partial counts of a corpus add up:
    ``document_frequency`` is these counts, summed and filtered)."""
    df: Counter[str] = Counter()
    n = 0
    for texts in session_texts:
        n += 1
        raw: set[str] = set()
        for text in texts:
            raw.update(_TOKEN.findall(normalise(text)))
        # the session's tokens are the raw tokens of its texts, each expanded once (counted
        # by ``Counter.update``, a loop in C: a corpus has millions of them)
        df.update(_expand(raw))
    return df, n


# --- facts ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Fact:
    kind: str  # field | row | line | error | sentence
    text: str  # as shown to a person
    probes: tuple[str, ...]  # whitespace-free texts; the fact is in a view if one of them is
    tokens: frozenset[str]
    key: tuple[str, ...] = ()  # the field's key words, for a field
    row: Fact | None = None  # the record a field belongs to
    #: the text as it stood in its message, for a person, where ``text`` is rebuilt from pieces
    #: (a copied span's pieces joined by spaces: ``" Project Alpha " , type``); never compared,
    #: never looked up: what a judge decides reads ``text`` and ``probes`` alone
    shown: str | None = field(default=None, compare=False)

    def in_text(self, squashed: str) -> bool:
        return any(p in squashed for p in self.probes)


#: lines that report a failure or a state the next steps must work around
ERROR = re.compile(
    r"\b(error|errors|exception|traceback|failed|failure|fatal|denied|refused|not found|"
    r"no such file|cannot|can't|could not|couldn't|unable to|invalid|not available|not enough|"
    r"does not exist|doesn't exist|unknown|undefined|timed out|exit code [1-9]\d*)\b",
    re.IGNORECASE,
)
KV_LINE = re.compile(
    r"^\s*[-*•]?\s*\**([A-Za-z][\w()/-]*(?: [\w()/-]+){0,2})\**\s*[:=]\s*\**(.+?)\**\s*$"
)
_SENTENCE = re.compile(r"(?:[^.!?\n]|[.!?](?=\S))+[.!?]?")
_MAX_LINE = 400


@functools.lru_cache(maxsize=1 << 14)
def key_words(key: str) -> tuple[str, ...]:
    words = re.sub(r"([a-z])([A-Z])", r"\1 \2", key).replace("_", " ").replace("-", " ")
    return tuple(w for w in tokens(words) if w not in STOP)


#: ``json.dumps(value, separators=(",", ":"), ensure_ascii=...)``, without building an encoder
#: per call
_ENCODE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_ENCODE_ASCII = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True).encode


def _compact(value: object, ascii_: bool) -> str:
    return _ENCODE_ASCII(value) if ascii_ else _ENCODE(value)


def _as_ascii(value: object, plain: str) -> str:
    """``_compact(value, True)`` given ``plain`` = ``_compact(value, False)``: the same text
    where that holds nothing the ASCII form escapes (non-ASCII characters and DEL)."""
    return plain if plain.isascii() and "\x7f" not in plain else _ENCODE_ASCII(value)


def _json_probes(value: object, plain: str | None = None) -> tuple[str, ...]:
    if plain is None:
        plain = _compact(value, False)
    return tuple({squash(plain), squash(_as_ascii(value, plain))})


def _scalar_text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _json_facts(value: object, path: tuple[str, ...] = ()) -> Iterator[Fact]:
    """Fields (``key: scalar``) and rows (objects inside lists, and the top record) of JSON; a
    field knows its row, since a decision on a record rests on the record's other fields."""
    if isinstance(value, dict):
        # a long text inside a field (a command's output, a file's content) is a text of lines:
        # its lines are its facts, not one field (nor a row) that holds all of it
        texts = {k for k, v in value.items() if _is_text(v)}
        # each scalar's tokens, once: its field's, and its share of the row's
        scalar_tokens = [
            token_set(_scalar_text(v))
            for k, v in value.items()
            if not isinstance(v, dict | list) and k not in texts
        ]
        row: Fact | None = None
        if scalar_tokens:
            row_tokens = frozenset().union(*scalar_tokens)
            plain = _compact(value, False)
            row = Fact("row", plain, _json_probes(value, plain), row_tokens)
        at = iter(scalar_tokens)
        for k, v in value.items():
            if isinstance(v, dict | list):
                yield from _json_facts(v, (*path, str(k)))
                continue
            if k in texts:
                yield from _embedded_facts(v)
                continue
            text = _scalar_text(v)
            pair = _compact(k, False) + ":" + _compact(v, False)
            ascii_pair = (
                pair
                if pair.isascii() and "\x7f" not in pair
                else _compact(k, True) + ":" + _compact(v, True)
            )
            probes = tuple({squash(pair), squash(ascii_pair)})
            yield Fact("field", f"{k}: {text}", probes, next(at), key_words(k), row)
        if row is not None:
            yield row
    elif isinstance(value, list):
        for v in value:
            if isinstance(v, dict | list):
                yield from _json_facts(v, path)
            else:
                text = _scalar_text(v)
                key = key_words(path[-1]) if path else ()
                yield Fact("field", text, _json_probes(v), token_set(text), key)


#: a JSON string this long, or with a line break, is a text of its own
TEXT_VALUE = 200


def _is_text(v: object) -> bool:
    return isinstance(v, str) and ("\n" in v or len(v) > TEXT_VALUE)


def _embedded_facts(text: str) -> Iterator[Fact]:
    """The facts of a text held in a JSON string, each probed as the JSON holds it (escaped)
    and as it reads decoded."""
    for f in _line_facts(text, False):
        escaped = json.dumps(f.text, ensure_ascii=False)[1:-1]
        yield Fact(f.kind, f.text, tuple({*f.probes, squash(escaped)}), f.tokens, f.key, f.row)


def json_pairs(value: object, key: str = "") -> Iterator[tuple[tuple[str, ...], str]]:
    """(key words, scalar text) of every leaf of a JSON value: what a tool call's arguments say."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from json_pairs(v, str(k))
    elif isinstance(value, list):
        for v in value:
            yield from json_pairs(v, key)
    elif value is not None:
        yield key_words(key) if key else (), _scalar_text(value)


def parse_json(text: str) -> object | None:
    """The JSON document a text is, or None (only an object or array counts)."""
    s = text.strip()
    if not s or s[0] not in "[{":
        return None
    try:
        return cast("object | None", json.loads(s))
    except ValueError:
        return None


#: what every match of ``ERROR`` holds, lower-cased (each of its phrases, as a trie: tried a
#: first letter at a time): an ASCII line without any is not an error line, found without
#: running the slower case-blind pattern over it
_ERROR_HINT = re.compile(
    r"e(?:rror|xception|xit code )|t(?:raceback|imed out)|f(?:ail(?:ed|ure)|atal)"
    r"|d(?:enied|oes(?:n't| not) exist)|refused|no(?:t (?:found|available|enough)| such file)"
    r"|c(?:an(?:not|'t)|ould(?: not|n't))|un(?:able to|known|defined)|invalid"
)


def is_error(line: str) -> bool:
    """``ERROR.search(line) is not None``, faster on the lines that name no error."""
    if line.isascii() and _ERROR_HINT.search(line.lower()) is None:
        return False
    return ERROR.search(line) is not None


def piece_tokens(text: str) -> Callable[[str], frozenset[str]]:
    """``token_set`` for the pieces of ``text`` (its lines, stripped, and their sentences),
    faster: each rewrite of ``normalise`` (currency signs, thousands separators, zero cents)
    and each expansion of a token (``_``, ``/``, ISO dates) that applies nowhere in the text
    applies in none of its pieces, so it is looked for once per text, not once per piece.
    A piece is a substring of the text cut only at line breaks, spaces and the
    ``.!?`` before a space: a match of those patterns inside a piece is one inside the text.
    A text with a prose date (whose pattern reaches over line breaks) is tokenised piece by
    piece as before."""
    return _piece_normaliser(text)[0]


def _piece_normaliser(text: str) -> tuple[Callable[[str], frozenset[str]], str | None]:
    """``piece_tokens(text)``, and the text as it normalises each piece: ``normalise(text)``,
    whose lines are its lines' (None for a text with a prose date)."""
    lowered = text.lower()
    if _DATE_HINT.search(lowered) and _PROSE_DATE.search(lowered):
        return token_set, None  # (a piece holds a prose date only where the text does)
    currency = _currency(lowered)
    if currency:
        lowered = _CURRENCY.sub("", lowered)
    thousands = "," in lowered and _THOUSANDS.search(lowered) is not None
    if thousands:
        lowered = _THOUSANDS.sub("", lowered)
    cents = ".0" in lowered and _ZERO_CENTS.search(lowered) is not None
    if cents:
        lowered = _ZERO_CENTS.sub("", lowered)
    plain = _plain(lowered)
    findall = _TOKEN.findall

    def tokenise(piece: str) -> frozenset[str]:
        t = piece.lower()
        if currency and _CURRENCY.search(t):
            t = _CURRENCY.sub("", t)
        if thousands and "," in t:
            t = _THOUSANDS.sub("", t)
        if cents and ".0" in t:
            t = _ZERO_CENTS.sub("", t)
        if plain or _plain(t):
            return frozenset(findall(t))
        return frozenset(_expand(set(findall(t))))

    return tokenise, lowered


def _line_facts(text: str, prose: bool) -> list[Fact]:
    """The facts of a text's lines (a numbered listing's read without their numbers, and
    probed with them: as the message holds them)."""
    tokenise = piece_tokens(text)
    errors = _may_err(text)
    out: list[Fact] = []
    lines = text.splitlines()
    for raw, k in zip(lines, _numbered_prefixes(lines), strict=True):
        out.extend(_facts_of_line(raw[k:], tokenise, errors, prose, squash(raw[:k])))
    return out


def _may_err(text: str) -> bool:
    """Whether a line of ``text`` may be an error line: not when the text is ASCII and the hint
    finds no error phrase anywhere in it."""
    return not text.isascii() or _ERROR_HINT.search(text.lower()) is not None


def _facts_of_line(
    raw: str,
    tokenise: Callable[[str], frozenset[str]],
    errors: bool,
    prose: bool,
    number: str = "",
) -> list[Fact]:
    """The facts of one line of a text (``tokenise``: ``piece_tokens`` of the text; ``errors``:
    ``_may_err`` of it)."""
    line = raw.strip()
    if not line:
        return []
    if line[0] in "[{":  # what ``parse_json`` looks for first
        parsed = parse_json(line)
        if isinstance(parsed, dict | list):
            return list(_json_facts(parsed))
    kind = "error" if errors and is_error(line) else "line"
    out: list[Fact] = []
    for piece in _pieces_of(line, prose):
        toks = tokenise(piece)
        if not toks:
            continue
        k = "error" if kind == "error" and ERROR.search(piece) else kind
        if prose and k == "line":
            k = "sentence"
        probes = (number + squash(piece),) if number and not out else (squash(piece),)
        out.append(Fact(k, piece, probes, toks))
        field = None if number else _field_of(piece, probes)  # a file's code holds no fields
        if field is not None:
            out.append(field)
    return out


def _pieces_of(line: str, prose: bool) -> list[str]:
    """The pieces a stripped line's facts are cut from: its sentences, in prose or when it is
    long, else the line."""
    if prose or len(line) > _MAX_LINE:
        return [s.strip() for s in _SENTENCE.findall(line) if s.strip()]
    return [line]


def _field_of(piece: str, probes: tuple[str, ...] | None = None) -> Fact | None:
    """A key and its value, where a piece is a ``Key: value`` line (``KV_LINE``, which needs a
    ``:`` or ``=``) with a short value that holds a token (``probes``: the piece's, if found)."""
    m = KV_LINE.match(piece) if ":" in piece or "=" in piece else None
    if m and len(m.group(2)) <= 120:
        value_toks = token_set(m.group(2))
        if value_toks:
            probes = (squash(piece),) if probes is None else probes
            return Fact("field", piece, probes, value_toks, key_words(m.group(1)))
    return None


class LineIndex:
    """The facts of a text of lines (a tool's output: a listing, a file, a log), found a line
    at a time when a token is looked up: most lines of a prefix are never looked
    into, and a line's facts cost dozens of times a search of the text for a token.

    The facts are those ``facts_of`` gives, in its order. A token of a line's pieces is a
    substring of the line as normalised (its pieces normalise as the text does, and a token is
    a piece's match, or one with its edge underscores stripped, a path's file name, a date's
    month and day), so the lines a search of the normalised text finds are the only ones that
    can hold it, except a JSON line (its values are decoded), looked into every time. The
    fields (the facts with a key, which a future naming the key looks for in every message)
    are found at once: only a ``Key: value`` piece or a JSON line holds one.

    Only for a text that is not one JSON document and has no prose date (``index_of``)."""

    __slots__ = (
        "_cut", "_done", "_errors", "_json", "_lines", "_norm", "_starts", "_tokenise", "fields",
    )  # fmt: skip

    def __init__(self, text: str, tokenise: Callable[[str], frozenset[str]], norm: str) -> None:
        self._lines = text.splitlines()
        self._cut = _numbered_prefixes(self._lines)
        norm_lines = norm.splitlines(keepends=True)
        if len(norm_lines) != len(self._lines):  # normalising never adds or takes line breaks
            raise ValueError("a text's lines and its normalised lines differ")
        self._norm = norm
        self._starts = list(itertools.accumulate(map(len, norm_lines), initial=0))
        self._tokenise, self._errors = tokenise, _may_err(text)
        self._done: dict[int, list[Fact]] = {}
        self._json: list[int] = []
        self.fields: list[Fact] = []
        for j, raw in enumerate(self._lines):
            if "[" in raw or "{" in raw:
                start = raw.lstrip()[:1]
                if start in ("[", "{"):
                    found = self._facts(j)
                    if found and found[0].kind in ("field", "row"):  # it is a JSON document
                        self._json.append(j)
                        self.fields.extend(f for f in found if f.kind == "field" and f.key)
                        continue
            if not self._cut[j] and (":" in raw or "=" in raw):  # (a listing's code: none)
                self.fields.extend(f for f in self._fields_of(raw) if f.key)

    def errors(self) -> list[Fact]:
        """Its error lines' facts, in order."""
        if not self._errors:
            return []
        return [
            f
            for j, raw in enumerate(self._lines)
            if is_error(raw[self._cut[j] :])
            for f in self._facts(j)
            if f.kind == "error"
        ]

    def tokens(self) -> frozenset[str]:
        """``token_set`` of the text: that of its normalised form, which it is made from."""
        return _normalised_token_set(self._norm)

    def _fields_of(self, raw: str) -> Iterator[Fact]:
        """The fields ``_facts_of_line`` finds in a line that is not JSON, without tokenising
        its pieces (a piece a field is found in holds a token: its key starts with a letter)."""
        for piece in _pieces_of(raw.strip(), False):
            field = _field_of(piece)
            if field is not None:
                yield field

    def _facts(self, j: int) -> list[Fact]:
        found = self._done.get(j)
        if found is None:
            raw, k = self._lines[j], self._cut[j]
            found = self._done[j] = _facts_of_line(
                raw[k:], self._tokenise, self._errors, False, squash(raw[:k])
            )
        return found

    def with_token(self, t: str) -> list[Fact]:
        """The facts holding token ``t``, in order."""
        if not t:
            return []  # no fact holds an empty token (and it is in every line)
        norm, starts = self._norm, self._starts
        lines = set(self._json)
        at = norm.find(t)
        while at >= 0:
            j = bisect.bisect_right(starts, at) - 1
            lines.add(j)
            at = norm.find(t, starts[j + 1])
        return [f for j in sorted(lines) for f in self._facts(j) if t in f.tokens]


def index_of(text: str, prose: bool = False) -> list[Fact] | LineIndex:
    """The facts of a text as ``facts_of`` gives them, or, for a text of lines that is neither
    prose nor one JSON document and has no prose date, a ``LineIndex`` of them."""
    if prose:
        return facts_of(text, prose)
    parsed = parse_json(text)
    if isinstance(parsed, dict | list):
        return list(_json_facts(parsed))
    tokenise, norm = _piece_normaliser(text)
    if norm is not None:
        try:
            return LineIndex(text, tokenise, norm)
        except ValueError:  # (lines that normalise into other lines: facts_of's, whole)
            pass
    return _line_facts(text, prose)


def facts_of(text: str, prose: bool = False) -> list[Fact]:
    """Every fact of one message's text (a tool result, a user or an assistant message)."""
    parsed = parse_json(text)
    if isinstance(parsed, dict | list):
        return list(_json_facts(parsed))
    return _line_facts(text, prose)


# --- copied spans -----------------------------------------------------------------------------

SHINGLE = 24
#: copies are found through runs of this many words and punctuation marks
GRAM = 6
#: a word, or one character that is neither a word's nor a space (``\S`` is tried only where
#: ``\w`` failed: it matches what ``[^\w\s]`` does, and is the faster test)
_PIECE = re.compile(r"\w+|\S")


def pieces(text: str) -> list[str]:
    """Words and single punctuation marks: a copy that re-quotes or re-indents code still
    shares them in order."""
    return _PIECE.findall(text)


def grams(words: Sequence[str], n: int = GRAM) -> list[str]:
    """Every run of ``n`` consecutive pieces, joined by one space."""
    return list(_runs(words, n))


def _runs(words: Sequence[str], n: int) -> Iterator[str]:
    if n < 1:
        return (" ".join(words[i : i + n]) for i in range(len(words) - n + 1))
    return map(" ".join, zip(*(words[k:] for k in range(n)), strict=False))  # no slices


def gram_set(
    words: Sequence[str], among: frozenset[str] | None = None, n: int = GRAM
) -> frozenset[str]:
    """The distinct runs of ``grams(words, n)``; with ``among``, only those in it. A text looked
    into for copies by a few later messages needs only the runs they hold (``among``): a tool's
    output has thousands of runs, of which an agent copies a handful, and a set of them all
    cost more than finding them."""
    runs = _runs(words, n)
    if among is None:
        return frozenset(runs)
    return among.intersection(runs) if among else frozenset()  # (none joined for none)


def copied_runs(
    words: Sequence[str], hits: Iterable[tuple[int, int]], n: int = GRAM
) -> list[tuple[int, str]]:
    """Maximal runs of ``words`` (a future message) whose every ``n``-gram comes from one earlier
    source: (that source, the copied text, its pieces joined by spaces). ``hits``: (position,
    source) of each gram of ``grams(words, n)`` that comes from a source, by position; the
    others come from none. Only the hits are looked at: a message of thousands of words copying
    a few lines costs a step per copied gram, not one per word."""
    return [(src, " ".join(words[start:stop])) for src, start, stop in copied_spans(words, hits, n)]


def copied_spans(
    words: Sequence[str], hits: Iterable[tuple[int, int]], n: int = GRAM
) -> list[tuple[int, int, int]]:
    """``copied_runs`` as (source, first piece, end piece): where each run is in ``words``, so
    that its text can be shown as the message wrote it (``piece_text``)."""
    runs: list[tuple[int, int, int]] = []
    start = last = -2
    current: int | None = None
    for j, src in hits:
        if j != last + 1 or src != current:
            if current is not None:
                runs.append((current, start, min(last + n, len(words))))
            start, current = j, src
        last = j
    if current is not None:
        runs.append((current, start, min(last + n, len(words))))
    return runs


def piece_text(text: str, start: int, stop: int) -> str:
    """The text of pieces ``start`` to ``stop`` of ``pieces(text)`` as ``text`` has them (the
    spaces between pieces as written, runs of whitespace made one space): a copied span for a
    person to read, ``"Project Alpha", type`` rather than its pieces joined,
    ``" Project Alpha " , type``.

    >>> piece_text('name: "Project Alpha", type', 2, 8)
    '"Project Alpha", type'
    """
    spans = [m.span() for m in itertools.islice(_PIECE.finditer(text), stop)]
    return spanned_text(text, spans, start, stop)


def piece_spans(text: str) -> list[tuple[int, int]]:
    """Where each of ``pieces(text)`` is in ``text``: what ``spanned_text`` reads."""
    return [m.span() for m in _PIECE.finditer(text)]


def spanned_text(text: str, spans: Sequence[tuple[int, int]], start: int, stop: int) -> str:
    """``piece_text`` of a text whose ``piece_spans`` (at least the first ``stop``) are known."""
    stop = min(stop, len(spans))
    if start >= stop:
        return ""
    return " ".join(text[spans[start][0] : spans[stop - 1][1]].split())


# --- numbered listings ----------------------------------------------------------------------

#: a line of a numbered listing: ``cat -n``/``nl`` (``     12\t``), Claude Code's reader
#: (``    12→``), SWE-agent's ``open`` (``12:``)
_NUMBERED = re.compile(r"^[ \t]*(\d{1,7})(?:\t|→|:(?!\d\d))")


def _numbered_prefixes(lines: Sequence[str]) -> list[int]:
    """The length of each line's line-number prefix where the text is a numbered listing (at
    least three lines numbered, each the one before it plus one), else 0 for every line."""
    found = [_NUMBERED.match(line) for line in lines]
    numbered = [(j, int(m.group(1))) for j, m in enumerate(found) if m]
    if len(numbered) < 3:
        return [0] * len(lines)
    steps = sum(1 for (_, a), (_, b) in itertools.pairwise(numbered) if b == a + 1)
    if steps < (len(numbered) - 1) * 0.8:
        return [0] * len(lines)
    return [m.end() if m else 0 for m in found]


def unnumbered(text: str) -> str:
    """A numbered listing without its line numbers (what a later copy of it holds); any other
    text as it is."""
    if "\n" not in text:
        return text
    lines = text.split("\n")
    cut = _numbered_prefixes(lines)
    if not any(cut):
        return text
    return "\n".join(line[k:] for line, k in zip(lines, cut, strict=True))


@dataclass(frozen=True)
class RawPieces:
    """A text's pieces less its line numbers, each with where it is in the text: found once per
    source message, then searched by every copy looked up in it (a copied span is looked up
    where each of its first piece's places is, not at every piece of the source)."""

    text: str
    spans: list[tuple[str, int, int]]  # piece, raw start, raw end
    at: dict[str, list[int]]  # piece → its indexes in ``spans``, in order

    @classmethod
    def of(cls, text: str) -> RawPieces:
        lines = text.split("\n")
        cut = _numbered_prefixes(lines)
        spans: list[tuple[str, int, int]] = []
        at: dict[str, list[int]] = {}
        offset = 0
        for line, k in zip(lines, cut, strict=True):
            for m in _PIECE.finditer(line, k):
                at.setdefault(m.group(), []).append(len(spans))
                spans.append((m.group(), offset + m.start(), offset + m.end()))
            offset += len(line) + 1
        return cls(text, spans, at)

    def find(self, wanted: Sequence[str]) -> str | None:
        """The stretch of the text whose pieces are ``wanted`` (the first), None where none."""
        n = len(wanted)
        if not n:
            return None
        spans = self.spans
        for i in self.at.get(wanted[0], ()):
            if i + n > len(spans):
                break
            if all(spans[i + j][0] == wanted[j] for j in range(1, n)):
                return self.text[spans[i][1] : spans[i + n - 1][2]]
        return None


def raw_of_pieces(text: str, wanted: Sequence[str]) -> str | None:
    """The stretch of ``text`` (line numbers and all) whose pieces, less its line numbers, are
    ``wanted``: where a copy came from, as the message holds it. None where it is not there."""
    return RawPieces.of(text).find(wanted)
