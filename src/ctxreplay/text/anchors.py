"""Exact anchors: the strings a future action reuses verbatim from the prefix.

Kinds: ``url``, ``email``, ``uuid``, ``hash``, ``path``, ``id`` (order, task, record and user
identifiers: letters and digits mixed, or joined by ``-``/``_``), ``number`` (figures and table
values with enough digits to be specific), ``quote`` (quoted text) and ``span`` (long verbatim
bodies: an argument value or a line of text of 40+ characters). The extraction is generic — it
knows nothing about any corpus — and filters what is trivially shared: small numbers, years,
common words.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

LOCATOR_KINDS = frozenset({"url", "email", "uuid", "hash", "path", "id"})

_URL = re.compile(r"\bhttps?://[^\s\"'<>()\[\]{}`]+")
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
#: ``_UUID``, ``_HASH``, ``_DATE``, ``_ID``, ``_NUMBER`` and ``_QUOTE`` each start with what the
#: first character of a match is, and look behind it for what comes before the match: ``\b``
#: before a character of ``[0-9a-f]`` is ``(?<!\w[0-9a-f])`` after it. They find the same
#: matches as the plain forms (``\b[0-9a-fA-F]{8}-...``), but a pattern that starts with a
#: character class is tried only where the class matches, one that starts with ``\b`` or a
#: look-behind at every position of a text.
_UUID = re.compile(
    r"[0-9a-fA-F](?<!\w[0-9a-fA-F])"
    r"[0-9a-fA-F]{7}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
#: hex of 7 to 64 digits, with a letter and a digit (``(?=[0-9a-f]*[a-f])`` at the start holds
#: where the first character is a letter, or where it holds after it)
_HASH = re.compile(
    r"[0-9a-f](?<!\w[0-9a-f])(?:(?<=[a-f])|(?=[0-9a-f]*[a-f]))(?:(?<=\d)|(?=[0-9a-f]*\d))"
    r"[0-9a-f]{6,63}\b"
)
_PATH = re.compile(
    r"(?<![\w/.:-])(?:~|\.{1,2})?/?[\w.@+-]+(?:/[\w.@+-]+)+/?|(?<![\w/.:-])[\w.@+-]+/(?![\w/])"
)
#: its first character taken before the look-behind (``(?<![\w/.-])`` before it), as for ``_ID``
_FILE = re.compile(
    r"[\w-](?<![\w/.-][\w-])[\w-]+\.(?:py|js|ts|tsx|jsx|go|rs|java|rb|c|h|cpp|hpp|cs|md|txt|json|yaml|yml|toml|ini|cfg|csv|sql|sh|html|css|xml|log|lock|pdf|docx?|xlsx?)\b"
)
#: an identifier: letters and digits joined by ``-``/``_``, or capitals and digits
_ID = re.compile(
    r"[A-Za-z0-9](?<![\w-][A-Za-z0-9])(?:"
    r"(?:(?<=\d)|(?=[\w-]*\d))(?:(?<=[A-Za-z])|(?=[\w-]*[A-Za-z]))"
    r"[A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)+(?![\w-])"
    r"|(?<=[A-Z0-9])(?:(?<=\d)|(?=\w*\d))(?:(?<=[A-Z])|(?=\w*[A-Z]))[A-Z0-9]{4,}(?![\w-])"
    r")"
)
#: a number with thousands separators, a decimal, or five digits or more, maybe signed
_NUMBER = re.compile(
    r"[-+$€£\d](?<![\w.,][-+$€£\d])(?:"
    r"(?<=[-+$€£])\d{1,3}(?:,\d{3})+(?:\.\d+)?%?(?![\w,])"
    r"|(?<=\d)\d{0,2}(?:,\d{3})+(?:\.\d+)?%?(?![\w,])"
    r"|(?<=[-+$€£])\d+\.\d+%?(?![\w.])"
    r"|(?<=\d)\d*\.\d+%?(?![\w.])"
    r"|(?<=\d)\d{4,}(?![\w.,])"
    r")"
)
#: quoted text, each kind of quote closed by its own partner; a single quote only where it
#: cannot be an apostrophe
_QUOTE = re.compile(
    r"“([^”\n]{12,400})”|\"([^\"\n]{12,400})\"|`([^`\n]{12,400})`|'(?<!\w')([^'\n]{12,400})'(?!\w)"
)
_YEAR = re.compile(r"^(?:19|20)\d\d$")
_DATE = re.compile(
    r"(?:19|20)(?<!\w\d\d)\d\d-[01]\d-[0-3]\d(?:[T ][0-2]\d:[0-5]\d(?::[0-5]\d)?)?\b"
)

#: ``_UUID`` and ``_DATE`` found from their first ``-``, the fixed-width part before it checked
#: behind: a literal first character is searched for at C speed, where a class as common as hex
#: digits is tried at every one of them. A match starts ``_UUID_HEAD``/``_DATE_HEAD``
#: characters before where these find it; the matches are the same, in the same order (a match
#: found from a ``-`` after the end of the one before cannot start inside it: the end of a match
#: is no word character, and its last four characters are no run of digits or hex).
_UUID_AT_DASH = re.compile(
    r"-(?<=[0-9a-fA-F]{8}-)(?<!\w[0-9a-fA-F]{8}-)"
    r"[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
_UUID_HEAD = 8
_DATE_AT_DASH = re.compile(
    r"-(?<=(?:19|20)\d\d-)(?<!\w\d\d\d\d-)[01]\d-[0-3]\d(?:[T ][0-2]\d:[0-5]\d(?::[0-5]\d)?)?\b"
)
_DATE_HEAD = 4
#: what every hash and identifier holds: an ASCII digit next to an ASCII letter, or with one
#: ``-``/``_`` between them (both are runs of ASCII letters and digits, single ``-``/``_``
#: between, with a letter and a digit); starting with a digit, it is searched for at C speed
_MIXED = re.compile(r"[0-9](?:[-_]?[A-Za-z]|(?<=[A-Za-z][0-9])|(?<=[A-Za-z][-_][0-9]))")

MIN_SPAN = 40


@dataclass(frozen=True, slots=True)
class Anchor:
    text: str
    kind: str

    @property
    def is_locator(self) -> bool:
        return self.kind in LOCATOR_KINDS


def _trim(s: str) -> str:
    return s.rstrip(".,;:!?)]}>'\"")


_DATE_OR_FRACTION = re.compile(r"[\d/.-]+")
_EXTENSION = re.compile(r"\.[A-Za-z]\w{0,5}$")
_NOT_DIGIT = re.compile(r"\D")


def _looks_like_path(t: str) -> bool:
    """Rooted, with an extension, three segments deep, or a folder (``tests/``); not ``and/or``."""
    if _DATE_OR_FRACTION.fullmatch(t):  # dates and fractions
        return False
    segments = [s for s in t.split("/") if s]
    return (
        t.startswith(("/", "~/", "./", "../"))
        or bool(_EXTENSION.search(t))
        or len(segments) >= 3
        or (t.endswith("/") and len(segments) == 1)
    )


def _is_trivial_number(text: str) -> bool:
    digits = _NOT_DIGIT.sub("", text)
    if _YEAR.match(text):
        return True
    if "." in text or "," in text:
        return len(digits) < 3
    return len(digits) < 5


#: what every file name holds (``.py`` and the like): a line without it holds none
_FILE_HINT = re.compile(_FILE.pattern[_FILE.pattern.index(r"\.(?:") :])


def _lines_with(text: str, hint: str | re.Pattern[str]) -> Iterator[tuple[int, int]]:
    """(start, end) of each line of ``text`` holding ``hint`` (a string, or a pattern that
    matches within a line). No anchor pattern matches across a line break, and each treats a
    line break before or after a match as it treats the start or end of a text: a pattern
    run over these lines alone (``finditer(text, start, end)``) finds what it finds in the
    whole text, where every match holds its hint."""
    at = 0
    literal = hint if isinstance(hint, str) else None
    search = hint.search if isinstance(hint, re.Pattern) else None
    while True:
        if literal is not None:
            hit = text.find(literal, at)
        else:
            assert search is not None
            m = search(text, at)
            hit = m.start() if m else -1
        if hit < 0:
            return
        start = text.rfind("\n", 0, hit) + 1
        end = text.find("\n", hit)
        if end < 0:
            end = len(text)
        yield start, end
        at = end + 1


def _blocks_with(text: str, hint: str | re.Pattern[str]) -> list[tuple[int, int]]:
    """The lines of :func:`_lines_with`, runs of adjacent ones joined into one (start, end):
    a pattern that matches within lines finds the same over a run as over each of its lines,
    in one call where dense hits (a listing with an id on each line) took one per line."""
    out: list[tuple[int, int]] = []
    for start, end in _lines_with(text, hint):
        if out and out[-1][1] + 1 == start:
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def _in_lines(
    pattern: re.Pattern[str], text: str, hint: str | re.Pattern[str]
) -> Iterator[re.Match[str]]:
    for start, end in _blocks_with(text, hint):
        yield from pattern.finditer(text, start, end)


def _anchors(text: str) -> dict[str, Anchor]:
    """Anchors in ``text`` by text, in the order found: each kind in turn (the more specific
    first), a match wholly inside an earlier one left out. A kind is only looked for in the
    lines that hold what all its matches hold (a ``/`` for a path): most lines of a tool's
    output hold no URL, e-mail address, path or date."""
    found: dict[str, Anchor] = {}
    covered = bytearray(len(text))  # 1 where an earlier, more specific anchor already matched

    def add(match_text: str, start: int, kind: str) -> None:
        t = _trim(match_text)
        end = start + len(t)
        if len(t) < 4 or covered.find(0, start, end) < 0:  # wholly inside an earlier match
            return
        covered[start:end] = b"\x01" * (end - start)
        if t not in found:
            found[t] = Anchor(t, kind)

    for m in _in_lines(_URL, text, "://"):
        add(m.group(), m.start(), "url")
    for m in _in_lines(_EMAIL, text, "@"):
        add(m.group(), m.start(), "email")
    dashed = "-" in text
    for m in _UUID_AT_DASH.finditer(text) if dashed else ():
        start = m.start() - _UUID_HEAD
        add(text[start : m.end()], start, "uuid")
    for m in _in_lines(_PATH, text, "/"):
        if _looks_like_path(m.group()):
            add(m.group(), m.start(), "path")
    for m in _DATE_AT_DASH.finditer(text) if dashed else ():
        start = m.start() - _DATE_HEAD
        add(text[start : m.end()], start, "number")
    for m in _in_lines(_FILE, text, _FILE_HINT):
        add(m.group(), m.start(), "path")
    mixed = _blocks_with(text, _MIXED)  # hashes and identifiers are only in these lines
    for start, end in mixed:
        for m in _HASH.finditer(text, start, end):
            add(m.group(), m.start(), "hash")
    for start, end in mixed:
        for m in _ID.finditer(text, start, end):
            add(m.group(), m.start(), "id")
    for m in _NUMBER.finditer(text):
        if not _is_trivial_number(m.group().strip("+-$€£%")):
            add(m.group(), m.start(), "number")
    for m in _QUOTE.finditer(text):
        group = next(g for g in range(1, 5) if m.group(g) is not None)
        inner = m.group(group).strip()
        if len(inner) >= 12 and " " in inner:
            add(inner, m.start(group), "quote")
    return found


def extract(text: str) -> list[Anchor]:
    """Anchors in ``text``, in order of first appearance, without duplicates."""
    return sorted(_anchors(text).values(), key=lambda a: text.find(a.text))


def anchor_texts(text: str) -> set[str]:
    """The texts of ``extract(text)``, unordered (what a document frequency counts)."""
    return set(_anchors(text))


def anchor_texts_of_all(texts: Iterable[str]) -> set[str]:
    """The union of ``anchor_texts`` over ``texts``, each distinct line looked at once.

    No anchor pattern matches across a line break, and each treats a line break as the start
    or end of a text, so a text's anchors are its lines' anchors (an anchor left out because
    an earlier one holds it is left out beside it, on the same line): the union over texts is
    the anchors of their distinct lines joined, found in one call where a session's texts
    repeat lines (a file read twice, a listing shown again) and each took a call.
    """
    return set(_anchors("\n".join(dict.fromkeys(line for t in texts for line in t.split("\n")))))


def argument_values(arguments: str | None) -> Iterator[str]:
    """String values of a tool call's arguments (nested), or the raw text if not JSON."""
    if not arguments:
        return
    try:
        value = json.loads(arguments)
    except ValueError:
        yield arguments
        return
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            yield v
        elif isinstance(v, dict):
            stack.extend(reversed(list(v.values())))
        elif isinstance(v, list):
            stack.extend(reversed(v))
        elif isinstance(v, int | float) and not isinstance(v, bool):
            yield str(v)


def spans(values: Iterable[str], min_len: int = MIN_SPAN) -> list[Anchor]:
    """Long verbatim bodies: whole values, and their lines, of ``min_len`` characters or more."""
    out: dict[str, Anchor] = {}
    for v in values:
        for candidate in (v, *v.splitlines()):
            c = candidate.strip()
            if len(c) >= min_len and " " in c:
                out.setdefault(c, Anchor(c, "span"))
    return list(out.values())


#: sentences in a user's words that bind later behaviour
CONSTRAINT = re.compile(
    r"\b(never|always|do not|don't|dont|must|must not|make sure|only use|only|avoid|"
    r"without|keep the|keep it|no more than|at most|at least|instead of|stick to|from now on)\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(
    r"(?:[^.!?\n]|[.!?](?=\S))+[.!?]?"
)  # "3.9" and "app.py" do not end a sentence
STOPWORDS = frozenset(
    [
        "the",
        "a",
        "an",
        "and",
        "or",
        "but",
        "to",
        "of",
        "in",
        "on",
        "at",
        "for",
        "with",
        "by",
        "from",
        "as",
        "is",
        "are",
        "be",
        "been",
        "it",
        "this",
        "that",
        "these",
        "those",
        "please",
        "you",
        "your",
        "i",
        "we",
        "our",
        "my",
        "me",
        "us",
        "them",
        "they",
        "do",
        "does",
        "did",
        "not",
        "no",
        "any",
        "all",
        "each",
        "every",
        "only",
        "always",
        "never",
        "must",
        "make",
        "sure",
        "keep",
        "use",
        "using",
        "avoid",
        "without",
        "instead",
        "more",
        "than",
        "least",
        "most",
        "from",
        "now",
        "should",
        "would",
        "could",
        "can",
        "will",
        "just",
        "also",
        "very",
        "so",
        "if",
        "then",
        "than",
        "when",
        "what",
        "which",
        "who",
        "how",
        "there",
        "here",
    ]
)


_IMPERATIVE = re.compile(
    r"^(?:(?:please|also|and|but|so|now|from now on|going forward),?\s+)*"
    r"(?:never|always|do not|don't|dont|make sure|ensure|avoid|only|stick to|keep|use|stop)\b",
    re.IGNORECASE,
)
_ASKED = re.compile(
    r"\b(?:i|we)\s+(?:want|need|would like|'d like|expect)\s+you\s+to\b", re.IGNORECASE
)
_FIRST_PERSON = re.compile(r"^(?:i|i'm|i've|i'd|we|we're|we've|my|our)\b", re.IGNORECASE)


def is_constraint(sentence: str) -> bool:
    """A standing instruction to the agent — not a question, not a statement about oneself."""
    s = sentence.strip()
    if len(s.split()) < 3 or s.endswith("?"):
        return False
    if _IMPERATIVE.search(s) or _ASKED.search(s):
        return True
    return bool(CONSTRAINT.search(s)) and not _FIRST_PERSON.match(s)


def constraints(text: str) -> list[str]:
    """Sentences of a user message that state a standing constraint."""
    return [s.strip() for s in _SENTENCE.findall(text) if is_constraint(s)]


_WORD = re.compile(r"[\w./-]+")


def key_terms(sentence: str) -> list[str]:
    """Distinctive terms of a constraint: content words and code-like tokens."""
    terms = []
    for w in _WORD.findall(sentence):
        w = w.strip(".-")
        if len(w) >= 4 and w.lower() not in STOPWORDS:
            terms.append(w)
    return terms


def shared_phrase(sentence: str, text: str) -> str | None:
    """The longest run of 2+ consecutive key words of ``sentence`` that ``text`` repeats, or a single
    code-like term (path, identifier) it repeats — evidence that ``text`` acts on the constraint.

    Ties go to the earliest run. A run that ``text`` repeats has every shorter run from the same
    first word repeated too (a prefix of a substring is one), so the longest run from each word
    is found by extending it until ``text`` no longer holds it: a few substring searches per word
    where trying every (start, end) pair took a quadratic number.
    """
    words = _WORD.findall(sentence)
    n = len(words)
    lowered = text.lower()
    content = [w.lower() not in STOPWORDS and len(w) >= 3 for w in words]
    # content words from i to the end: a run needs two, so later starts can be skipped
    after = [0] * (n + 1)
    for i in range(n - 1, -1, -1):
        after[i] = after[i + 1] + content[i]
    best: str | None = None
    end = 0  # the longest run from the previous word ends here: from this word it reaches as far
    for i in range(n - 1):
        if after[i] < 2:
            break
        end = max(end, i)
        while end < n and " ".join(words[i : end + 1]).lower() in lowered:
            end += 1
        # words[i:end] is the longest run from word i that ``text`` repeats
        if end - i >= 2 and sum(content[i:end]) >= 2:
            phrase = " ".join(words[i:end])
            if best is None or len(phrase) > len(best):
                best = phrase
    if best:
        return best
    for t in key_terms(sentence):
        if re.search(r"[/_.\d]", t) and t.lower() in lowered:
            return t
    return None


#: text around an anchor that announces it as the way back to a full payload
ROUTE = re.compile(
    r"(saved to|written to|stored (?:at|in)|full (?:output|log|result)s? (?:is |are )?(?:in|at|available)|"
    r"truncated|context_recover|<ctxreplay:folded|<ctxreplay:archived|archived as)",
    re.IGNORECASE,
)


def announces_route(source_text: str, anchor: str, window: int = 160) -> bool:
    at = source_text.find(anchor)
    if at < 0:
        return False
    return bool(ROUTE.search(source_text[max(0, at - window) : at + len(anchor) + 20]))
