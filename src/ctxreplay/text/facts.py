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

import functools
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

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
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_CURRENCY = re.compile(r"[$€£¥](?=\d)")
_ZERO_CENTS = re.compile(r"(?<=\d)\.0+\b")
_TOKEN = re.compile(r"[a-z0-9_]+(?:[.\-/@:+][a-z0-9_]+)*")
_ISO_DATE = re.compile(r"(?:19|20)\d\d-\d\d-\d\d")

#: words that carry no fact whatever the corpus says: the anchor judge's stop words (function
#: words and the vocabulary of instructions) and JSON's literals
STOP = (
    STOPWORDS
    | frozenset(("had", "has", "have", "he", "her", "his", "its", "may", "might", "she"))
    | frozenset(("was", "were", "where", "why", "yes", "true", "false", "null", "none"))
)


def normalise(text: str) -> str:
    """Case, currency, thousands separators, zero cents and prose dates made uniform."""
    t = text.lower()

    def date(m: re.Match[str]) -> str:
        month, day, year = _MONTHS[m.group(1)], int(m.group(2)), m.group(3)
        if not 1 <= day <= 31:
            return m.group(0)
        return f"{year}-{month:02d}-{day:02d}" if year else f"{month:02d}-{day:02d}"

    # each rewrite only where the characters it needs are there: most text has none of them,
    # and the judges normalise every line of a corpus (issue 15)
    if _DATE_HINT.search(t):
        t = _PROSE_DATE.sub(date, t)
    if _CURRENCY.search(t):
        t = _CURRENCY.sub("", t)
    if "," in t:
        t = _THOUSANDS.sub("", t)
    return _ZERO_CENTS.sub("", t) if ".0" in t else t


def tokens(text: str) -> list[str]:
    """Normalised tokens in order. A path is followed by its file name (``/docs/log.csv`` →
    ``log.csv``) and an ISO date by its month and day, the forms prose uses for them."""
    t = normalise(text)
    found: list[str] = _TOKEN.findall(t)
    # what each token may need, known from the whole text: most need nothing (issue 15)
    strip, paths, dates = "_" in t, "/" in t, _ISO_DATE.search(t) is not None
    if not (strip or paths or dates):
        return found
    out: list[str] = []
    for tok in found:
        if strip:
            tok = tok.strip("_")
            if not tok:
                continue
        out.append(tok)
        if paths and "/" in tok and (name := tok.rsplit("/", 1)[-1]):
            out.append(name)
        elif dates and len(tok) == 10 and _ISO_DATE.fullmatch(tok):  # a date's only length
            out.append(tok[5:])
    return out


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
    df: dict[str, int] = {}
    n = 0
    for texts in session_texts:
        n += 1
        seen: set[str] = set()
        for text in texts:
            seen.update(tokens(text))
        for t in seen:
            df[t] = df.get(t, 0) + 1
    return {t: c for t, c in df.items() if c >= 3}, n


# --- facts ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Fact:
    kind: str  # field | row | line | error | sentence
    text: str  # as shown to a person
    probes: tuple[str, ...]  # whitespace-free texts; the fact is in a view if one of them is
    tokens: frozenset[str]
    key: tuple[str, ...] = ()  # the field's key words, for a field
    row: Fact | None = None  # the record a field belongs to

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


def key_words(key: str) -> tuple[str, ...]:
    words = re.sub(r"([a-z])([A-Z])", r"\1 \2", key).replace("_", " ").replace("-", " ")
    return tuple(w for w in tokens(words) if w not in STOP)


def _compact(value: object, ascii_: bool) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=ascii_)


def _json_probes(value: object) -> tuple[str, ...]:
    return tuple({squash(_compact(value, False)), squash(_compact(value, True))})


def _scalar_text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _json_facts(value: object, path: tuple[str, ...] = ()) -> Iterator[Fact]:
    """Fields (``key: scalar``) and rows (objects inside lists, and the top record) of JSON; a
    field knows its row, since a decision on a record rests on the record's other fields."""
    if isinstance(value, dict):
        scalars = [(str(k), v) for k, v in value.items() if not isinstance(v, dict | list)]
        row: Fact | None = None
        if scalars:
            row_tokens = frozenset(t for _, v in scalars for t in tokens(_scalar_text(v)))
            row = Fact("row", _compact(value, False), _json_probes(value), row_tokens)
        for k, v in value.items():
            if isinstance(v, dict | list):
                yield from _json_facts(v, (*path, str(k)))
                continue
            text = _scalar_text(v)
            probes = tuple({squash(_compact(k, a) + ":" + _compact(v, a)) for a in (False, True)})
            yield Fact("field", f"{k}: {text}", probes, frozenset(tokens(text)), key_words(k), row)
        if row is not None:
            yield row
    elif isinstance(value, list):
        for v in value:
            if isinstance(v, dict | list):
                yield from _json_facts(v, path)
            else:
                text = _scalar_text(v)
                key = key_words(path[-1]) if path else ()
                yield Fact("field", text, _json_probes(v), frozenset(tokens(text)), key)


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
        return json.loads(s)
    except ValueError:
        return None


def _line_facts(text: str, prose: bool) -> Iterator[Fact]:
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        parsed = parse_json(line)
        if isinstance(parsed, dict | list):
            yield from _json_facts(parsed)
            continue
        kind = "error" if ERROR.search(line) else "line"
        pieces = (
            [s.strip() for s in _SENTENCE.findall(line) if s.strip()]
            if prose or len(line) > _MAX_LINE
            else [line]
        )
        for piece in pieces:
            toks = frozenset(tokens(piece))
            if not toks:
                continue
            k = "error" if kind == "error" and ERROR.search(piece) else kind
            if prose and k == "line":
                k = "sentence"
            yield Fact(k, piece, (squash(piece),), toks)
            m = KV_LINE.match(piece)
            if m and len(m.group(2)) <= 120:
                value_toks = frozenset(tokens(m.group(2)))
                if value_toks:
                    yield Fact("field", piece, (squash(piece),), value_toks, key_words(m.group(1)))


def facts_of(text: str, prose: bool = False) -> list[Fact]:
    """Every fact of one message's text (a tool result, a user or an assistant message)."""
    parsed = parse_json(text)
    if isinstance(parsed, dict | list):
        return list(_json_facts(parsed))
    return list(_line_facts(text, prose))


# --- copied spans -----------------------------------------------------------------------------

SHINGLE = 24
#: copies are found through runs of this many words and punctuation marks
GRAM = 6
_PIECE = re.compile(r"\w+|[^\w\s]")


def pieces(text: str) -> list[str]:
    """Words and single punctuation marks: a copy that re-quotes or re-indents code still
    shares them in order."""
    return _PIECE.findall(text)


def grams(words: Sequence[str], n: int = GRAM) -> list[str]:
    """Every run of ``n`` consecutive pieces, joined by one space."""
    if n < 1:
        return [" ".join(words[i : i + n]) for i in range(len(words) - n + 1)]
    return list(map(" ".join, zip(*(words[k:] for k in range(n)), strict=False)))  # no slices


def copied_runs(
    words: Sequence[str],
    source_of: Callable[[str], int | None],
    n: int = GRAM,
    found: Sequence[str] | None = None,
) -> list[tuple[int, str]]:
    """Maximal runs of ``words`` (a future message) whose every ``n``-gram comes from one earlier
    source: (that source, the copied text). ``found``: ``grams(words, n)``, when the caller
    has them already."""
    runs: list[tuple[int, str]] = []
    start, current = -1, None
    sources = [source_of(g) for g in (grams(words, n) if found is None else found)]
    for j, src in enumerate([*sources, None]):
        if src != current or src is None:
            if current is not None:
                runs.append((current, " ".join(words[start : j - 1 + n])))
            start, current = j, src
    return runs
