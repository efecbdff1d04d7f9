"""Word lists and small text generators shared by the workloads.

Everything here draws from the ``random.Random`` it is given, so a session is a pure function of
its seed. Nothing here produces planted anchors: anchors come from ``anchor_pool.AnchorPool`` and are
placed by the workloads themselves; filler text is built so it never contains the phrase
``saved to`` (the marker of a recovery route).
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping, Sequence
from typing import TypeVar

T = TypeVar("T")

FIRST_NAMES = (
    "Maja", "Tomasz", "Lena", "Jonas", "Amira", "Kenji", "Sofia", "Mateo", "Ingrid", "Rafael",
    "Priya", "Oskar", "Chloe", "Dmitri", "Nadia", "Hugo", "Aisha", "Lukas", "Elena", "Farid",
    "Greta", "Ivan", "Julia", "Kofi", "Leila", "Marco", "Noor", "Olga", "Pavel", "Quentin",
    "Rosa", "Stefan", "Tara", "Ulrich", "Vera", "Wim", "Yara", "Zoltan", "Beatriz", "Cyril",
)  # fmt: skip
LAST_NAMES = (
    "Kowalski", "Lindqvist", "Moreau", "Okafor", "Tanaka", "Varga", "Schneider", "Rossi",
    "Novak", "Haddad", "Fischer", "Andersen", "Dubois", "Ferreira", "Gruber", "Horvat",
    "Jansen", "Keller", "Laine", "Meyer", "Nieminen", "Ortega", "Petrov", "Quinn", "Richter",
    "Silva", "Torres", "Usman", "Vogel", "Weber", "Yilmaz", "Zielinski", "Bauer", "Costa",
    "Eriksen", "Brandt", "Castillo", "Duarte", "Engel", "Falk",
)  # fmt: skip
COMPANIES = (
    "Northwind Logistics", "Brightfield Analytics", "Calder & Finch", "Harbourline Freight",
    "Marlow Systems", "Eastgate Foods", "Kestrel Energy", "Lumen Retail Group",
    "Orchard Biotech", "Pinecrest Insurance", "Quarry Lane Media", "Redwater Utilities",
    "Silverline Telecom", "Tessera Health", "Umbra Capital", "Vantage Mobility",
    "Westbrook Pharma", "Alder Robotics", "Bluecoast Hotels", "Cobalt Mining Partners",
)  # fmt: skip
CITIES = (
    ("Rotterdam", "NL", "3089 KL"), ("Hamburg", "DE", "20457"), ("Lyon", "FR", "69002"),
    ("Milan", "IT", "20121"), ("Gdansk", "PL", "80-862"), ("Porto", "PT", "4050-279"),
    ("Ghent", "BE", "9000"), ("Aarhus", "DK", "8000"), ("Graz", "AT", "8020"),
    ("Bilbao", "ES", "48001"), ("Tampere", "FI", "33100"), ("Brno", "CZ", "602 00"),
    ("Cork", "IE", "T12 X70A"), ("Malmo", "SE", "211 20"), ("Leipzig", "DE", "04109"),
)  # fmt: skip
STREETS = (
    "Harbour Industrial Park", "Wilhelminakade", "Rue de la Republique", "Via Solferino",
    "Dlugi Targ", "Rua das Flores", "Korenmarkt", "Aboulevarden", "Herrengasse",
    "Gran Via de Don Diego Lopez de Haro", "Hameenkatu", "Masarykova", "Oliver Plunkett Street",
    "Stortorget", "Karl-Liebknecht-Strasse", "Keizersgracht", "Rue Mercière", "Corso Como",
)  # fmt: skip
EMAIL_DOMAINS = (
    "brightfield-logistics.pl", "harbourline.nl", "kestrel-energy.de", "lumenretail.fr",
    "orchardbio.ie", "pinecrest-ins.be", "silverline.pt", "tessera-health.dk", "vantage.at",
    "alder-robotics.fi", "bluecoast.es", "eastgatefoods.se", "marlowsys.cz", "westbrook.it",
)  # fmt: skip
PRODUCTS = (
    "ergonomic office chair", "standing desk frame", "27-inch monitor arm", "noise-cancelling headset",
    "mechanical keyboard", "USB-C docking station", "laptop stand", "wireless presenter",
    "label printer", "thermal receipt roll (box of 50)", "barcode scanner", "conference speakerphone",
    "4-port KVM switch", "whiteboard wall panel", "cable management tray", "desk lamp with dimmer",
)  # fmt: skip
MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip
REGIONS = (
    "DACH", "Benelux", "Nordics", "Iberia", "France", "Italy", "UK & Ireland", "CEE",
)  # fmt: skip


def person(rng: random.Random) -> tuple[str, str]:
    return rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)


def pick(rng: random.Random, items: Sequence[T], k: int) -> list[T]:
    """``k`` distinct items in a random order (all of them when ``k`` is larger)."""
    return rng.sample(list(items), min(k, len(items)))


def date(rng: random.Random, year: int = 2024) -> str:
    return f"{year}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def long_date(rng: random.Random, year: int = 2024) -> str:
    return f"{rng.randint(1, 28)} {rng.choice(MONTHS)} {year}"


def sentence_case(text: str) -> str:
    return text[:1].upper() + text[1:]


# --- prose ----------------------------------------------------------------------------------


class Prose:
    """Fills sentence templates from a lexicon: ``{key}`` picks a random entry of ``lexicon[key]``.

    Two generic keys are always available: ``{num}`` (a plain figure) and ``{pct}`` (a
    percentage). Templates must not contain double quotes or backslashes (sentences may be cut
    out as verbatim anchors).
    """

    def __init__(self, rng: random.Random, lexicon: Mapping[str, Sequence[str]]) -> None:
        self.rng = rng
        self.lexicon = lexicon

    def fill(self, template: str) -> str:
        out: list[str] = []
        used: set[str] = set()
        i = 0
        while i < len(template):
            j = template.find("{", i)
            if j < 0:
                out.append(template[i:])
                break
            k = template.index("}", j)
            out.append(template[i:j])
            value = self._value(template[j + 1 : k])
            for _ in range(5):  # the same word twice in one sentence reads as a bug
                if value not in used:
                    break
                value = self._value(template[j + 1 : k])
            used.add(value)
            out.append(value)
            i = k + 1
        return sentence_case("".join(out))

    def _value(self, key: str) -> str:
        rng = self.rng
        if key == "num":
            return f"{rng.randint(12, 980)}"
        if key == "pct":
            return f"{rng.randint(2, 61)}.{rng.randint(0, 9)}%"
        if key == "year":
            return str(rng.choice((2019, 2020, 2021, 2022, 2023, 2024)))
        if key == "fyear":
            return str(rng.choice((2027, 2028, 2030, 2032, 2035)))
        if key == "month":
            return rng.choice(MONTHS)
        return rng.choice(list(self.lexicon[key]))

    def sentences(self, templates: Sequence[str], n: int, avoid: Collection[str] = ()) -> list[str]:
        """``n`` sentences, avoiding an immediate repeat of a template and any text in ``avoid``."""
        out: list[str] = []
        last = -1
        for _ in range(n):
            for _attempt in range(50):
                idx = self.rng.randrange(len(templates))
                if idx == last and len(templates) > 1:
                    idx = (idx + 1) % len(templates)
                sentence = self.fill(templates[idx])
                if sentence not in avoid:
                    break
            last = idx
            out.append(sentence)
        return out


def wrap(text: str, width: int = 96) -> list[str]:
    """Greedy word wrap (keeps long words whole)."""
    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    if line:
        lines.append(line)
    return lines


def _numeric(cell: str) -> bool:
    return bool(cell) and cell.replace(",", "").replace(".", "").replace("-", "").isdigit()


def _widths(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[int]:
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    return widths


def _row(row: Sequence[str], widths: Sequence[int]) -> str:
    cells = (c.rjust(w) if _numeric(c) else c.ljust(w) for c, w in zip(row, widths, strict=True))
    return " | ".join(cells).rstrip()


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], footer: str | None = None) -> str:
    """A psql-style aligned table (numbers right-aligned)."""
    widths = _widths(headers, rows)
    lines = [" | ".join(h.center(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("-+-".join("-" * w for w in widths))
    lines += [_row(row, widths) for row in rows]
    lines.append(footer if footer is not None else f"({len(rows)} rows)")
    return "\n".join(" " + line for line in lines)
