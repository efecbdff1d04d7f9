"""The pool of planted anchor strings: unique, non-trivial ids, paths and figures.

An anchor is the exact text a planted dependency hangs on. Every one must be unique inside its
session and unlikely to occur by chance anywhere else, so each generator mixes a fixed shape (what
a real id, path or figure looks like) with enough random digits. ``AnchorPool`` remembers what it
handed out and never repeats itself; the session check (``builder.check_dependencies``) is what
finally proves uniqueness, and a session that fails it is regenerated with the next sub-seed.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

HEX = "0123456789abcdef"
UPPER = "ABCDEFGHJKLMNPQRSTUVWXYZ"  # no I or O: they read as digits
ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

#: Characters JSON text would escape: an anchor used inside tool-call arguments must avoid them.
_JSON_ESCAPED = re.compile(r'["\\\x00-\x1f]')


def json_safe(text: str) -> bool:
    """True when ``json.dumps`` keeps ``text`` verbatim (no quote, backslash or control char)."""
    return not _JSON_ESCAPED.search(text)


def trivial(anchor: str) -> bool:
    """Too short or too common to count as an anchor (small integers, bare words)."""
    s = anchor.strip()
    if len(s) < 6:
        return True
    if s.replace(",", "").replace(".", "").isdigit() and len(s.replace(",", "")) < 6:
        return True
    return bool(s.isalpha() and s.islower() and " " not in s)


class AnchorPool:
    """Hands out fresh anchors; never the same string twice in one session."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()  # membership only, never iterated (determinism)

    def fresh(self, make: Callable[[], str]) -> str:
        """A value of ``make`` not handed out before (draws again on a repeat)."""
        for _ in range(1000):
            s = make()
            if s not in self.used:
                self.used.add(s)
                return s
        raise RuntimeError("anchor space exhausted")

    # --- raw material ---------------------------------------------------------------------
    def _hex(self, n: int) -> str:
        return "".join(self.rng.choice(HEX) for _ in range(n))

    def _upper(self, n: int) -> str:
        return "".join(self.rng.choice(UPPER) for _ in range(n))

    # --- handles ------------------------------------------------------------------------------
    def hex(self, n: int = 8) -> str:
        return self.fresh(lambda: self._hex(n))

    def git_hash(self) -> str:
        return self.fresh(lambda: self._hex(40))

    def uuid(self) -> str:
        def make() -> str:
            h = self._hex(32)
            return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{self.rng.choice('89ab')}{h[17:20]}-{h[20:]}"

        return self.fresh(make)

    def order_id(self) -> str:
        return self.fresh(lambda: f"ORD-{self.rng.randint(10000, 99999)}-{self._upper(2)}")

    def customer_id(self) -> str:
        return self.fresh(lambda: f"CUS-{self.rng.randint(100000, 999999)}")

    def ticket_id(self) -> str:
        return self.fresh(lambda: f"TCK-{self.rng.randint(100000, 999999)}")

    def refund_id(self) -> str:
        return self.fresh(lambda: f"RFD-{self.rng.randint(10000, 99999)}-{self._upper(2)}")

    def label_id(self) -> str:
        return self.fresh(lambda: f"LBL-{self._upper(3)}{self.rng.randint(1000000, 9999999)}")

    def email(self, first: str, last: str, domain: str) -> str:
        styles = (
            lambda: f"{first[0].lower()}.{last.lower()}@{domain}",
            lambda: f"{first.lower()}.{last.lower()}@{domain}",
            lambda: f"{first.lower()}{self.rng.randint(10, 99)}@{domain}",
            lambda: f"{last.lower()}.{first[0].lower()}{self.rng.randint(2, 9)}@{domain}",
        )
        return self.fresh(lambda: self.rng.choice(styles)())

    def output_path(self, kind: str, ext: str) -> str:
        """Where a harness saved a full payload it truncated, e.g. ``/tmp/outputs/pytest-8f2a91c3.log``."""
        return self.fresh(lambda: f"/tmp/outputs/{kind}-{self._hex(8)}.{ext}")

    def url(self, host: str, *segments: str, ext: str = "") -> str:
        def make() -> str:
            tail = "/".join(segments)
            return f"https://{host}/{tail}-{self._hex(6)}{ext}"

        return self.fresh(make)

    def revision(self) -> str:
        return self.fresh(lambda: f"rev-{self._hex(8)}")

    # --- figures ------------------------------------------------------------------------------
    def amount(self, lo: float, hi: float) -> str:
        """``1,284,331.07``: thousands separators, non-zero cents, at least 4 digits."""

        def make() -> str:
            value = self.rng.uniform(lo, hi)
            cents = self.rng.randint(1, 99)
            s = f"{int(value):,}.{cents:02d}"
            return s if len(s.replace(",", "").replace(".", "")) >= 6 else f"1,{s}"

        return self.fresh(make)

    def decimal(self, lo: float, hi: float, places: int = 1) -> str:
        def make() -> str:
            s = f"{self.rng.uniform(lo, hi):.{places}f}"
            return s if not s.endswith("0") else s[:-1] + str(self.rng.randint(1, 9))

        return self.fresh(make)

    def count(self, lo: int, hi: int) -> str:
        """A count with a thousands separator (``3,918``), never a small integer."""
        return self.fresh(lambda: f"{self.rng.randint(max(lo, 1001), hi):,}")
