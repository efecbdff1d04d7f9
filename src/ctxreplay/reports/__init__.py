"""Reports on a judged run: tables, statistics, the trade-off plot, renderings and exports.

>>> from ctxreplay.reports import build_report
>>> report = build_report("RUN", judge="anchor")  # doctest: +SKIP
>>> report.no_impact  # polars frame: policy, n, pruning_pct, no_impact_pct, CIs  # doctest: +SKIP
>>> print(report.render("terminal"))  # doctest: +SKIP
>>> report.save("report.html")  # one self-contained file  # doctest: +SKIP

Modules: ``stats`` (Wilson, cluster bootstrap, McNemar, Holm), ``tables`` (frames and
``Report``), ``plot`` (trade-off PNG), ``render`` (terminal, markdown, csv, json, html),
``exports`` (OTel ``gen_ai.evaluation.result`` events, Phoenix Parquet, Langfuse scores).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..registry import lazy_exports

if TYPE_CHECKING:  # the names, for type checkers; at run time each loads on first use
    from .exports import FORMATS as EXPORT_FORMATS
    from .exports import ExportSummary, export_verdicts, verdict_records
    from .formatting import RenderError
    from .plot import tradeoff_plot
    from .render import FORMATS, render, save
    from .report import Report, build_report
    from .stats import (
        BootstrapInterval,
        HolmResult,
        McNemarResult,
        Proportion,
        cluster_bootstrap_mean,
        holm,
        mcnemar,
        mcnemar_exact,
        paired_bootstrap_diff,
        wilson,
    )
    from .tables import ReportError, audit, show_command

#: each name is loaded on first use, so that importing one submodule (``reports.formatting``)
#: does not load the plot's matplotlib or the exports
__getattr__ = lazy_exports(
    __name__,
    {
        "ctxreplay.reports.exports": (
            ("EXPORT_FORMATS", "FORMATS"),
            "ExportSummary",
            "export_verdicts",
            "verdict_records",
        ),
        "ctxreplay.reports.plot": ("tradeoff_plot",),
        "ctxreplay.reports.render": ("FORMATS", "render", "save"),
        "ctxreplay.reports.formatting": ("RenderError",),
        "ctxreplay.reports.report": ("Report", "build_report"),
        "ctxreplay.reports.stats": (
            "BootstrapInterval",
            "HolmResult",
            "McNemarResult",
            "Proportion",
            "cluster_bootstrap_mean",
            "holm",
            "mcnemar",
            "mcnemar_exact",
            "paired_bootstrap_diff",
            "wilson",
        ),
        "ctxreplay.reports.tables": ("ReportError", "audit", "show_command"),
    },
)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "EXPORT_FORMATS",
    "FORMATS",
    "BootstrapInterval",
    "ExportSummary",
    "HolmResult",
    "McNemarResult",
    "Proportion",
    "RenderError",
    "Report",
    "ReportError",
    "audit",
    "build_report",
    "cluster_bootstrap_mean",
    "export_verdicts",
    "holm",
    "mcnemar",
    "mcnemar_exact",
    "paired_bootstrap_diff",
    "render",
    "save",
    "show_command",
    "tradeoff_plot",
    "verdict_records",
    "wilson",
]
