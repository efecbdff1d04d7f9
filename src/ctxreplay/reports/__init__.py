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

from importlib import import_module
from typing import TYPE_CHECKING, Any

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

#: public name → (the module that defines it, its name there): loaded on first use, so that
#: importing one submodule (``reports.formatting``) does not load the plot's matplotlib or the
#: exports
_EXPORTS = {
    "EXPORT_FORMATS": ("exports", "FORMATS"),
    "ExportSummary": ("exports", "ExportSummary"),
    "export_verdicts": ("exports", "export_verdicts"),
    "verdict_records": ("exports", "verdict_records"),
    "tradeoff_plot": ("plot", "tradeoff_plot"),
    "FORMATS": ("render", "FORMATS"),
    "RenderError": ("formatting", "RenderError"),
    "render": ("render", "render"),
    "save": ("render", "save"),
    "Report": ("report", "Report"),
    "build_report": ("report", "build_report"),
    **{
        name: ("stats", name)
        for name in (
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
        )
    },
    "ReportError": ("tables", "ReportError"),
    "audit": ("tables", "audit"),
    "show_command": ("tables", "show_command"),
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = _EXPORTS[name]
    value = getattr(import_module(f".{module}", __name__), attribute)
    globals()[name] = value
    return value


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
