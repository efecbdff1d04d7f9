"""The case browser as a static site (like ``inspect view bundle``): the same page and script
as the server, with the answers written beside them as script files, so it opens from disk
(``file://`` loads scripts, not fetched JSON) and can be shared. ``--redact`` replaces every
trace text by its length."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path
from typing import Any

from tqdm import tqdm

from ..files import atomic_write_text
from . import MAX_PAGES
from .grid import ViewerError, all_rows, facets
from .pages import Pages
from .server import static_file

#: the most policies whose every pair gets an A/B page in a bundle
MAX_AB_POLICIES = 30


class BundleTooLarge(ViewerError):
    """A bundle would write more case pages than allowed."""


def _script(data: Any, key: str | None = None) -> str:
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    if key is None:
        return f"window.CTXREPLAY_BUNDLE={body};\n"
    return f"window.CTXREPLAY_PUT({json.dumps(key)},{body});\n"


def write_bundle(
    pages: Pages, out: Path, *, progress: bool = True, max_pages: int = MAX_PAGES
) -> dict[str, int]:
    """Write the site into ``out``; returns how many pages of each kind it holds. A run with
    more (case, policy) pairs than ``max_pages`` is refused before anything is written."""
    n_pairs = pages.grid.frame.height
    if n_pairs > max_pages:
        raise BundleTooLarge(
            f"a bundle holds one page per (case, policy): this run has {n_pairs:,}, more than "
            f"--max-pages {max_pages:,}; choose policies with --policy, or raise --max-pages"
        )
    out = Path(out)
    (out / "static").mkdir(parents=True, exist_ok=True)
    for name in ("app.js", "app.css"):
        shutil.copyfile(static_file(name), out / "static" / name)
    grid = pages.grid
    rows = all_rows(grid)
    if pages.redact:
        for r in rows:
            r["search"] = "\n".join([r["case_id"], r["session_id"], r["policy"]]).lower()
    cases: dict[str, int] = {}
    data = out / "data"
    for folder in ("case", "ab"):
        (data / folder).mkdir(parents=True, exist_ok=True)
    pairs = [(r["case_id"], r["policy"]) for r in rows]
    for n, (case_id, policy) in enumerate(
        tqdm(pairs, desc="case pages", unit="page", disable=not progress)
    ):
        atomic_write_text(
            data / "case" / f"{n}.js", _script(pages.case(case_id, policy), f"case:{n}")
        )
        cases[f"{case_id}\u0000{policy}"] = n
    ab: dict[str, int] = {}
    policies = grid.policies[:MAX_AB_POLICIES]
    for n, (a, b) in enumerate(itertools.permutations(policies, 2)):
        atomic_write_text(data / "ab" / f"{n}.js", _script(pages.ab(a, b), f"ab:{n}"))
        ab[f"{a}\u0000{b}"] = n
    meta = {**pages.meta(), "mode": "bundle", "labelling": False}
    bundle = {"meta": meta, "facets": facets(grid), "rows": rows, "frontier": pages.frontier(),
              "cases": cases, "ab": ab, "ab_policies": policies}  # fmt: skip
    atomic_write_text(data / "bundle.js", _script(bundle))
    shutil.copyfile(static_file("index.html"), out / "index.html")
    return {"case pages": len(cases), "A/B pages": len(ab)}
