"""A run's report as data: its tables and the metadata that says how they were made.

``builder.build_report_data`` computes a ``ReportData``; the renderers (``render``) format one
and import nothing else of the report, so neither side imports the other. ``report.Report``
is this data with its renderings as methods (the public API).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from .frontier import Frontier
from .tables import AGREEMENT_SCHEMA, JUDGES_SCHEMA, LOSSES_SCHEMA, every_loss


@dataclass(frozen=True)
class ReportData:
    """Every table of a run's report, and the metadata needed to reproduce it.

    Frames: ``no_impact``, ``paired``, ``taxonomy``, ``examples`` (example losses with their
    ``show`` commands), ``cost``, ``commit_reasons``. A report holds counts of the losses (the
    taxonomy), never every loss: ``losses`` reads them from the run when asked.
    """

    run: Path
    judge: str | None
    reference: str | None
    seed: int
    bootstrap: int
    alpha: float
    no_impact: pl.DataFrame
    paired: pl.DataFrame
    taxonomy: pl.DataFrame
    examples: pl.DataFrame
    cost: pl.DataFrame
    commit_reasons: pl.DataFrame
    failures: pl.DataFrame  # why cases have no score: unscored reasons, planner failures
    meta: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    frontier: Frontier | None = None  # when the run is a sweep (``ctxreplay sweep``)
    #: when the run holds several judges: each judge's no-impact per policy, and every pair's
    #: agreement (Cohen's kappa); empty otherwise
    judges: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=JUDGES_SCHEMA))
    agreement: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=AGREEMENT_SCHEMA))

    @property
    def losses(self) -> pl.DataFrame:
        """Every loss of the report's judge (``LOSSES_SCHEMA``), read from the run now: a report
        does not hold them (``loss_count``, ``loss_cases`` and the taxonomy count them)."""
        if self.judge is None:
            return pl.DataFrame(schema=LOSSES_SCHEMA)
        return every_loss(self.run, self.judge)

    @property
    def loss_count(self) -> int:
        """How many losses the judge's scored verdicts hold, in all."""
        return int(self.taxonomy["losses"].sum()) if self.taxonomy.height else 0

    @property
    def loss_cases(self) -> int:
        """How many distinct (policy, category, case) the losses fall in."""
        return int(self.taxonomy["cases"].sum()) if self.taxonomy.height else 0

    def tables(self) -> dict[str, pl.DataFrame]:
        """The tables a report shows, by name, in report order."""
        return {
            "no_impact": self.no_impact,
            "paired": self.paired,
            "taxonomy": self.taxonomy,
            "examples": self.examples,
            "cost": self.cost,
            "commit_reasons": self.commit_reasons,
            "failures": self.failures,
            **(
                {"judges": self.judges, "agreement": self.agreement}
                if self.agreement.height
                else {}
            ),
            **(self.frontier.tables() if self.frontier is not None else {}),
        }
