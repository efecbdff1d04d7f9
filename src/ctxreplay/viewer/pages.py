"""What every page of the case browser reads, the same for the server and the static bundle:
one object over a run (its grid built once, rebuilt when the run's verdicts change) answering
each page's question as JSON-ready data."""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from ..runs import Run
from .compare import ab, frontier
from .detail import case_detail, redacted
from .grid import Grid, GridQuery, ViewerError, build_grid, grid_page
from .labelling import Labelling


def _verdict_stamp(run: Path) -> tuple[tuple[str, int, int], ...]:
    """What changes when a judge writes verdicts: each part's name, size and time."""
    root = run / "verdicts"
    if not root.is_dir():
        return ()
    return tuple(
        sorted(
            (str(p), s.st_size, s.st_mtime_ns) for p in root.glob("*/*.parquet") if (s := p.stat())
        )
    )


class Pages:
    """A run, read for the case browser."""

    def __init__(
        self,
        run: str | Path,
        *,
        judge: str | None = None,
        redact: bool = False,
        labels: Path | None = None,
        sample: int = 20,
        seed: int = 0,
        policies: Sequence[str] = (),
    ) -> None:
        self.run = Run(run)
        self.run.check()
        self.judge, self.redact, self.policies = judge, redact, list(policies) or None
        self._lock = threading.Lock()
        self._stamp = _verdict_stamp(self.run.path)
        self._grid = build_grid(self.run, judge, self.policies)
        self.labelling = (
            Labelling(self.run, self._grid, labels, sample, seed) if labels is not None else None
        )

    @property
    def grid(self) -> Grid:
        """The grid, rebuilt when a judge has written verdicts since it was built."""
        with self._lock:
            stamp = _verdict_stamp(self.run.path)
            if stamp != self._stamp:
                self._grid, self._stamp = build_grid(self.run, self.judge, self.policies), stamp
                if self.labelling is not None:
                    self.labelling.grid = self._grid
            return self._grid

    def meta(self) -> dict[str, Any]:
        grid = self.grid
        return {
            "run": str(self.run.path),
            "pairs": grid.frame.height,
            "redact": self.redact,
            "labelling": self.labelling is not None,
        }

    def grid_page(self, params: dict[str, list[str]]) -> dict[str, Any]:
        return grid_page(self.grid, GridQuery.parse(params))

    def case(self, case_id: str, policy: str) -> dict[str, Any]:
        if not case_id or not policy:
            raise ViewerError("a case page needs case= and policy=")
        grid = self.grid
        detail = case_detail(self.run, case_id, policy)
        others = grid.frame.filter(pl.col("case_id") == case_id).select(
            "policy", "label", "strict", "editable"
        )
        detail["policies"] = [
            {**r, "editable": None if math.isnan(r["editable"] or 0.0) else r["editable"]}
            for r in others.iter_rows(named=True)
        ]
        return redacted(detail) if self.redact else detail

    def ab(self, a: str, b: str) -> dict[str, Any]:
        grid = self.grid
        if not a or not b:  # the first two policies of the run, unless told
            if len(grid.policies) < 2:
                raise ViewerError("A/B needs two policies; this run has one")
            a, b = a or grid.policies[0], b or next(p for p in grid.policies if p != a)
        return {**ab(grid, a, b), "policies": grid.policies}

    def frontier(self) -> dict[str, Any]:
        return frontier(self.grid)

    def need_labelling(self) -> Labelling:
        if self.labelling is None:
            raise ViewerError("not labelling: start `ctxreplay view RUN --label DIR`")
        return self.labelling

    def label_case(self, case_id: str) -> dict[str, Any]:
        labelling = self.need_labelling()
        return labelling.case(case_id or labelling.state["sample"][0])
