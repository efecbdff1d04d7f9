"""Texts for the tests that check a fast path against its plain form: hand-written samples, and
random ones made of their lines with characters swapped for those of an alphabet the patterns
care about (half are random characters alone)."""

from __future__ import annotations

import random
from collections.abc import Sequence


def random_texts(
    samples: Sequence[str],
    alphabet: Sequence[str],
    n: int,
    seed: int,
    max_chars: int = 80,
    max_lines: int = 5,
) -> list[str]:
    rng = random.Random(seed)
    lines = [line for s in samples for line in s.split("\n")]
    out = []
    for _ in range(n):
        if rng.random() < 0.5:
            out.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, max_chars))))
        else:
            mixed = "\n".join(rng.choice(lines) for _ in range(rng.randint(1, max_lines)))
            out.append("".join(c if rng.random() > 0.05 else rng.choice(alphabet) for c in mixed))
    return out
