"""A run's whole report: its data with its renderings as methods (the public ``Report``).

``build_report(run)`` reads a run folder and one judge's verdicts into a ``Report``; ``render`` and
``save`` write it as terminal text, Markdown, CSV, JSON or HTML. The data is built by
``builder`` (``ReportData``, which knows no renderer) and formatted by ``render`` (which imports
the data types only); this module joins the two, so neither imports the other.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path

from ..judges.base import DEFAULT_JUDGE
from ..runs import Run
from . import stats
from .builder import build_report_data
from .render import render, save, tradeoff_png
from .report_data import ReportData
from .tables import EXAMPLES


@dataclass(frozen=True)
class Report(ReportData):
    """A ``ReportData`` that renders itself: ``render``, ``save`` and ``plot`` call the free
    functions of ``render`` on it."""

    @classmethod
    def of(cls, data: ReportData) -> Report:
        """The report of built data (its frames shared, not copied)."""
        return cls(**{f.name: getattr(data, f.name) for f in fields(ReportData)})

    def plot(self, path: str | os.PathLike[str] | None = None) -> bytes:
        """The trade-off plot as PNG bytes (also written to ``path`` when given)."""
        return tradeoff_png(self, path)

    def render(self, fmt: str = "terminal", width: int | None = None) -> str:
        """The report as text: terminal, markdown, csv (sections), json or html. ``width``: the
        terminal text's line width (None: the terminal's, 100 when not a terminal; 0: no
        limit)."""
        return render(self, fmt, width)

    def save(
        self, path: str | os.PathLike[str], fmt: str | None = None, width: int | None = None
    ) -> list[Path]:
        """Write the report; csv to a folder (one file per table) unless ``path`` ends in .csv."""
        return save(self, path, fmt, width)


def build_report(
    run_path: Run | str | os.PathLike[str],
    judge: str | None = DEFAULT_JUDGE,
    reference: str | None = None,
    seed: int = 0,
    bootstrap: int = 2000,
    *,
    alpha: float = 0.05,
    examples: int = EXAMPLES,
    exact_below: int | None = stats.EXACT_BELOW,
    calibration_file: str | os.PathLike[str] | None = None,
) -> Report:
    """Every table of a run's report, ready to render (``builder.build_report_data`` says what
    each parameter does and how the run is read)."""
    return Report.of(
        build_report_data(
            run_path,
            judge,
            reference,
            seed,
            bootstrap,
            alpha=alpha,
            examples=examples,
            exact_below=exact_below,
            calibration_file=calibration_file,
        )
    )
