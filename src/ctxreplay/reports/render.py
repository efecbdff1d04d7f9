"""A report as text: terminal tables (default), Markdown, CSV, JSON, or one self-contained HTML file.

Renderers are free functions over a ``ReportData`` and only format what
``builder.build_report_data`` computed (``report.Report`` calls them as methods). Terminal and
Markdown share the same display tables (rounded, intervals written "[lo, hi]"); CSV and JSON
carry the unrounded frames; HTML carries both plus the trade-off plot as an embedded PNG, so the
file opens offline.
"""

from __future__ import annotations

import base64
import html
import json
import math
import os
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

from ..files import atomic_write_text
from ..judges.base import DEFAULT_JUDGE
from ..schema import CATEGORIES
from .correction import describe as describe_calibration
from .formatting import (
    MARK,
    MARK_NOTE,
    Display,
    RenderError,
    category_title,
    ci,
    count,
    display,
    fit_table,
    marked,
    no_impact_cell,
    num,
    pval,
    recovery_columns,
    recovery_lines,
    strict_columns,
    terminal_width,
    usd,
    usd_delta,
    usd_range,
    visible_controls,
    wrap,
    wrap_command,
)
from .frontier import frontier_displays
from .leaders import level_leaders, merged_levels
from .recovery import row_leans_on_recovery
from .report_data import ReportData
from .tables import best_policy

FORMATS = ("terminal", "markdown", "csv", "json", "html")
SUFFIXES = {
    ".txt": "terminal",
    ".md": "markdown",
    ".markdown": "markdown",
    ".csv": "csv",
    ".json": "json",
    ".html": "html",
    ".htm": "html",
}


# --- display tables (shared by terminal, markdown and html) ---------------------------------


def correction_lines(report: ReportData) -> tuple[str, ...]:
    """What the corrected no-impact columns mean, and the calibration behind them (none when
    the run holds no calibration of the report's judge)."""
    cal = report.meta.get("calibration")
    if not cal or "corrected_no_impact_pct" not in report.no_impact.columns:
        return ()
    return (str(cal.get("explanation") or ""), describe_calibration(cal))


def _no_impact_columns(
    report: ReportData,
) -> list[tuple[str, Callable[[dict[str, Any]], str], bool]]:
    columns: list[tuple[str, Callable[[dict[str, Any]], str], bool]] = [
        ("policy", lambda r: r["policy"], False),
        ("cases", lambda r: count(r["cases"]), True),
        ("n", lambda r: count(r["n"]), True),
        ("unscored", lambda r: count(r["unscored"]), True),
        *(
            [("planner failed", lambda r: count(r["planner_failed"]), True)]
            if report.no_impact.height and report.no_impact["planner_failed"].sum()
            else []
        ),
        ("not judged", lambda r: count(r["not_judged"]), True),
        ("prune %", lambda r: num(r["pruning_pct"]), True),
        ("editable prune %", lambda r: num(r.get("editable_pruning_pct")), True),
        ("prune 95% CI", lambda r: ci(r["pruning_lo"], r["pruning_hi"]), True),
        # ranked by no-impact: a pass through recovery is marked, strict no-impact beside it
        ("no-impact %", no_impact_cell, True),
        *strict_columns(report.no_impact),
        ("Wilson 95% CI", lambda r: ci(r["wilson_lo"], r["wilson_hi"]), True),
        ("cluster 95% CI", lambda r: ci(r["boot_lo"], r["boot_hi"]), True),
    ]
    if "corrected_no_impact_pct" in report.no_impact.columns:
        columns += [
            ("corrected no-impact %", lambda r: num(r["corrected_no_impact_pct"]), True),
            ("corrected 95% CI", lambda r: ci(r["corrected_lo"], r["corrected_hi"]), True),
        ]
    columns.append(("via recovery %", lambda r: num(r["recovery_pct"]), True))
    columns += recovery_columns(report.no_impact)
    return columns


def displays(report: ReportData) -> list[Display]:
    """The report's tables as formatted cells, in report order (examples excepted)."""
    out = [
        display(
            "no_impact",
            "No-impact and pruning by policy",
            "n = scored verdicts (unscored are counted and leave the denominator); pruning is the "
            "mean over all replayed cases with a session-cluster bootstrap 95% CI; no-impact has "
            "its Wilson 95% CI and a session-cluster bootstrap 95% CI; via recovery % = scored cases "
            "whose no-impact relies on recovering a folded payload through its visible pointer; "
            "editable prune % = the mean share of the editable tokens removed (the prefix minus "
            "system/developer messages and the latest user message; – for runs written before "
            "it was recorded).",
            _no_impact_columns(report),
            report.no_impact.to_dicts(),
            (*correction_lines(report), *recovery_lines(report.no_impact)),
        ),
        display(
            "paired",
            f"Paired comparisons against {report.reference or '–'}",
            "Cases both policies scored. b = policy no-impact where the reference had impact, "
            "c = the reverse. McNemar: "
            + str(report.meta.get("mcnemar", ""))
            + "; p adjusted by Holm across the compared policies. Δ = policy − reference in "
            "percentage points, paired session-cluster bootstrap 95% CI.",
            [
                ("policy", lambda r: r["policy"], False),
                ("n paired", lambda r: count(r["n_paired"]), True),
                ("both ok", lambda r: count(r["both_no_impact"]), True),
                ("b", lambda r: count(r["b"]), True),
                ("c", lambda r: count(r["c"]), True),
                ("both lost", lambda r: count(r["both_impact"]), True),
                ("test", lambda r: r["test"] or "–", False),
                ("p", lambda r: pval(r["p"]), True),
                ("p (Holm)", lambda r: pval(r["p_holm"]), True),
                ("Δ no-impact pp", lambda r: num(r["diff_pct"]), True),
                ("95% CI", lambda r: ci(r["diff_lo"], r["diff_hi"]), True),
            ],
            report.paired.to_dicts(),
        ),
        _taxonomydisplay(report),
        display(
            "cost_tokens",
            "Cost: tokens",
            "Sums over cases of each case's future requests (as if the policy edited at that cut "
            "only). Cached = what perfect prefix caching could serve. Cache breaks = committed "
            "cases whose edit invalidated the cached prefix. Recoveries = the extra requests that "
            "bring back archived payloads the judge found needed; the policy's input includes "
            "their tokens, so saved % is net of them.",
            [
                ("policy", lambda r: r["policy"], False),
                ("cases", lambda r: count(r["cases"]), True),
                ("committed", lambda r: count(r["committed"]), True),
                ("cache breaks", lambda r: count(r["cache_breaks"]), True),
                ("requests", lambda r: count(r["requests"]), True),
                ("recoveries", lambda r: count(r["recovery_requests"]), True),
                ("input baseline", lambda r: count(r["input_baseline"]), True),
                ("input policy", lambda r: count(r["input_policy"]), True),
                ("of which recovery", lambda r: count(r["recovery_tokens"]), True),
                ("saved % (net)", lambda r: num(r["input_saved_pct"]), True),
                ("cached max baseline", lambda r: count(r["cached_max_baseline"]), True),
                ("cached max policy", lambda r: count(r["cached_max_policy"]), True),
                ("output", lambda r: count(r["output_tokens"]), True),
            ],
            report.cost.to_dicts(),
        ),
        display(
            "cost_usd",
            "Cost: USD (tariff " + str((report.meta.get("tariff") or {}).get("name", "?")) + ")",
            "Ranges low–high: low assumes perfect prefix caching, high no caching (a recorded "
            "cache makes them equal). Δ = policy − baseline, with perfect caching / with none; the "
            "policy includes its planner's model cost and its recoveries (recovery USD).",
            [
                ("policy", lambda r: r["policy"], False),
                (
                    "baseline USD",
                    lambda r: usd_range(r["usd_baseline_low"], r["usd_baseline_high"]),
                    True,
                ),
                (
                    "policy USD",
                    lambda r: usd_range(r["usd_policy_low"], r["usd_policy_high"]),
                    True,
                ),
                (
                    "Δ USD cached / uncached",
                    lambda r: usd_delta(r["usd_delta_low"], r["usd_delta_high"]),
                    True,
                ),
                (
                    "recovery USD",
                    lambda r: usd_range(r["usd_recovery_low"], r["usd_recovery_high"]),
                    True,
                ),
                ("planner USD", lambda r: usd(r["planner_usd"]), True),
                ("commit decisions", lambda r: r["commit_decisions"] or "–", False),
            ],
            report.cost.to_dicts(),
        ),
    ]
    out[0] = marked(out[0])  # a no-impact leaning on recovery is marked †: say what it means
    out[1:1] = judge_displays(report)  # several judges: side by side, and their agreement
    if report.failures.height:
        out.insert(
            1,
            display(
                "failures",
                "Cases without a score, and why",
                "unscored: the judge could not decide (its reason); planner_failed: the policy's "
                "model planner failed, so the case kept its prefix for no decision of the policy. "
                "Both are left out of n and of every rate.",
                [
                    ("policy", lambda r: r["policy"], False),
                    ("kind", lambda r: r["kind"], False),
                    ("cases", lambda r: count(r["cases"]), True),
                    ("reason", lambda r: _clip(r["reason"], 100), False),
                ],
                report.failures.to_dicts(),
                identity=2,
            ),
        )
    out[1:1] = frontier_displays(report)  # a sweep's frontier, right after the no-impact table
    return out


def judge_displays(report: ReportData) -> list[Display]:
    """When the run holds several judges: each judge's no-impact per policy, and every pair's
    agreement (Cohen's kappa) with the command that lists where they disagree."""
    if report.agreement.height == 0:
        return []
    run = shlex.quote(str(report.run))
    return [
        display(
            "judges",
            "No-impact by judge",
            "Each judge's verdicts of the same views: n = its scored verdicts; no-impact with "
            "its Wilson 95% CI.",
            [
                ("judge", lambda r: r["judge"], False),
                ("policy", lambda r: r["policy"], False),
                ("n", lambda r: count(r["n"]), True),
                ("unscored", lambda r: count(r["unscored"]), True),
                ("no-impact %", lambda r: num(r["no_impact_pct"]), True),
                ("Wilson 95% CI", lambda r: ci(r["wilson_lo"], r["wilson_hi"]), True),
            ],
            report.judges.to_dicts(),
            identity=2,
        ),
        display(
            "agreement",
            "Judge agreement",
            "Pairs of judges over the (case, policy) pairs both scored (unscored and unjudged "
            "pairs left out): raw agreement, and Cohen's kappa (impact as positive) with its "
            "asymptotic 95% CI; – where undefined (a judge gave one label only).",
            [
                ("judge A", lambda r: r["judge_a"], False),
                ("judge B", lambda r: r["judge_b"], False),
                ("n", lambda r: count(r["n"]), True),
                ("agree %", lambda r: num(r["agreement_pct"]), True),
                ("kappa", lambda r: num(r["kappa"], 3), True),
                ("kappa 95% CI", lambda r: ci(r["kappa_lo"], r["kappa_hi"], 3), True),
                ("A impact only", lambda r: count(r["a_impact_only"]), True),
                ("B impact only", lambda r: count(r["b_impact_only"]), True),
            ],
            report.agreement.to_dicts(),
            (
                "Where they disagree, each judge's label and reason: "
                f"`ctxreplay audit {run} --disagreements [--judges A,B]`.",
            ),
            identity=2,
        ),
    ]


def render_disagreements(frame: pl.DataFrame, max_rows: int = 50, width: int = 0) -> str:
    """The pairs where judges disagree (``tables.disagreements``), for a person to read: each
    judge's label and reason, and the command that opens the case."""
    pairs = frame.select("case_id", "policy").unique(maintain_order=True)
    if pairs.height == 0:
        return "the judges agree on every (case, policy) pair both scored"
    judges = ", ".join(dict.fromkeys(frame["judge"].to_list()))
    lines = [f"{pairs.height} (case, policy) pairs where the judges disagree ({judges})"]
    name = max(len(j) for j in frame["judge"].to_list())
    for case_id, policy in pairs.head(max_rows).iter_rows():
        rows = frame.filter((pl.col("case_id") == case_id) & (pl.col("policy") == policy))
        lines.append(f"{case_id}  policy {policy}")
        for r in rows.iter_rows(named=True):
            reason = visible_controls(_clip(r["reason"], 160))
            lines += wrap(f"{r['judge']:<{name}}  {r['label']:<9}  {reason}", width, "  ", "    ")
        lines += wrap_command(rows["show"][0], width, "  $ ", "      ")
    if pairs.height > max_rows:
        lines.append(f"… {pairs.height - max_rows} more (--max-rows)")
    return "\n".join(lines)


#: how much of a lost anchor ``render_audit`` shows (whitespace collapsed)
AUDIT_ANCHOR = 240


def render_audit(frame: pl.DataFrame, max_rows: int = 50, width: int = 0) -> str:
    """One category's losses (``tables.audit``), for a person to read: per loss, a line naming
    the policy, the case, the source object and the seq that needed it; the lost anchor and the
    judge's detail, wrapped to ``width`` (0: no limit); and the ``ctxreplay show`` command on a
    line of its own, whole whatever the width, so that it pastes as it is. Ids are never cut."""
    lines: list[str] = []
    for r in frame.head(max_rows).iter_rows(named=True):
        lines.append(
            f"{r['policy']} · {r['case_id']} · from {r['source_object'] or '–'}, "
            f"needed at seq {count(r['need_seq'])}"
        )
        anchor = visible_controls(_clip(r["anchor"], AUDIT_ANCHOR))
        lines += wrap(f"lost: {anchor}", width, "  ", "        ")
        if r["detail"]:
            how = visible_controls(_clip(r["detail"], 400))
            lines += wrap(f"how: {how}", width, "  ", "       ")
        lines.append(f"  $ {r['show']}")
    if frame.height > max_rows:
        lines.append(f"… {frame.height - max_rows} more (--max-rows)")
    return "\n".join(lines)


def _taxonomydisplay(report: ReportData) -> Display:
    tax = report.taxonomy
    categories = list(dict.fromkeys(tax["category"].to_list())) if tax.height else list(CATEGORIES)
    rows = []
    for policy in dict.fromkeys(tax["policy"].to_list()):
        mine = {r["category"]: r for r in tax.filter(pl.col("policy") == policy).to_dicts()}
        n = next(iter(mine.values()))["n"] if mine else 0
        cells = [policy, count(n)]
        for c in categories:
            r = mine.get(c)
            cells.append("–" if r is None or not n else f"{r['cases']} ({r['rate_pct']:.1f}%)")
        rows.append(tuple(cells))
    return Display(
        "taxonomy",
        "Failure taxonomy",
        "Scored cases with at least one lost dependency of each category (share of n). A case "
        "can lose several categories.",
        ("policy", "n", *(category_title(c) for c in categories)),
        tuple(rows),
        (False, *([True] * (len(categories) + 1))),
    )


def _clip(text: str | None, width: int = 90) -> str:
    t = " ".join((text or "").split())
    return t if len(t) <= width else t[: width - 1] + "…"


# --- terminal -------------------------------------------------------------------------------


def _header_lines(report: ReportData) -> list[str]:
    m = report.meta
    return [
        f"ctxreplay report: {report.run}",
        f"corpus {m.get('corpus_path')} ({m.get('corpus_fingerprint')}) · "
        f"judge {report.judge or '–'} ({m.get('verdicts', 0)} verdicts) · "
        f"reference {report.reference or '–'} ({m.get('reference_chosen')}) · "
        f"seed {report.seed} · {report.bootstrap} bootstrap resamples",
    ]


def ranked_figures(row: dict[str, Any]) -> str:
    """A ranked policy's figures in words: no-impact (marked ``MARK`` when it leans on
    recovery), strict no-impact, recoveries per case and pruning."""
    return (
        f"no-impact {num(row['no_impact_pct'])}%{f' {MARK}' if row_leans_on_recovery(row) else ''}, "
        f"strict no-impact {num(row['strict_no_impact_pct'])}%, "
        f"{num(row['recoveries_per_case'])} recoveries per case, prune {num(row['pruning_pct'])}%"
    )


def best_policy_lines(report: ReportData) -> list[str]:
    """The report's best-policy lines: the reference (the best no-impact, unless given) with
    its strict no-impact and recoveries beside its no-impact; when it was chosen and another
    policy has the best strict no-impact among the same candidates, that one too (the pick of
    a user who won't pay for recoveries); and what the marker means when it is shown."""
    table = report.no_impact
    rows = {r["policy"]: r for r in table.to_dicts()}
    ref = rows.get(report.reference or "")
    if ref is None or not ref["n"]:
        return []
    chosen = report.meta.get("reference_chosen") != "given"
    kind = "reference (best no-impact)" if chosen else "reference"
    lines = [f"{kind}: {ref['policy']}: {ranked_figures(ref)}"]
    strict = best_policy(table, "strict_no_impact_pct") if chosen else None
    if strict is not None and strict != ref["policy"]:
        lines.append(
            f"best strict no-impact (no loss and no recovery): {strict}: "
            f"{ranked_figures(rows[strict])}"
        )
    if any(row_leans_on_recovery(rows[p]) for p in (ref["policy"], strict) if p is not None):
        lines.append(MARK_NOTE)
    return lines


def examples_summary(report: ReportData) -> str:
    """How many of the run's losses the examples show, and the commands that show more."""
    shown, total = report.examples.height, report.loss_count
    if total == 0:
        return ""
    run = shlex.quote(str(report.run))
    judge = (
        f" --judge {shlex.quote(report.judge)}"
        if report.judge and report.judge != DEFAULT_JUDGE
        else ""
    )
    cases = report.loss_cases  # distinct (policy, category, case)
    more = f"more: `ctxreplay report {run}{judge} --examples N`; " if shown < cases else ""
    return (
        f"{shown:,} of {total:,} losses shown; {more}every loss of one category: "
        f"`ctxreplay audit {run}{judge} --category CATEGORY [--policy POLICY]`."
    )


def render_terminal(report: ReportData, width: int | None = None) -> str:
    """The report as terminal text at most ``width`` characters wide (None: the terminal's, 100
    when not a terminal; 0: no limit). Numbers, ids and commands are never cut: text wraps, and
    a table too wide for its numbers is split into column groups that repeat the row's identity
    columns (``formatting.fit_table``)."""
    w = terminal_width(width)
    lines: list[str] = []
    # lines that name runs, policies, cases and commands wrap at spaces, never inside a word
    for line in _header_lines(report):
        lines += wrap(line, w, "", "  ", cut=False)
    for line in best_policy_lines(report):
        lines += wrap(line, w, "", "  ", cut=False)
    for note in report.notes:
        lines += wrap(f"note: {note}", w, "", "  ", cut=False)
    for d in displays(report):
        lines += ["", *wrap(d.title, w), *fit_table(d, w)]
        for line in d.footer:
            lines += wrap(line, w, cut=False)
    lines += ["", "Example losses (open one with the command under it)"]
    if report.examples.height == 0:
        lines.append("(none)")
    for r in report.examples.iter_rows(named=True):
        lines += wrap(
            f"{r['policy']} · {category_title(r['category'])} · {r['case_id']}: "
            f"{_clip(r['anchor'], 70)!r} from {r['source_object']}, needed at seq {r['need_seq']}",
            w,
            "  ",
            "    ",
            cut=False,
        )
        lines += wrap_command(r["show"], w, "    $ ", "        ")
    summary = examples_summary(report)
    if summary:
        lines += wrap(summary, w, cut=False)
    return "\n".join(lines) + "\n"


# --- markdown -------------------------------------------------------------------------------


def _md_cell(text: str) -> str:
    """A table cell that trace text cannot break out of: HTML is escaped (Markdown renders raw
    HTML: ``<img src=x onerror=…>`` would run), table and line syntax neutralised."""
    text = visible_controls(text).replace("\\", "\\\\").replace("|", "\\|")
    return html.escape(" ".join(text.split("\n")), quote=False)


def _md_table(d: Display) -> list[str]:
    out = [
        "| " + " | ".join(_md_cell(h) for h in d.headers) + " |",
        "| " + " | ".join("---:" if n else "---" for n in d.numeric) + " |",
    ]
    out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in d.rows]
    return out


def render_markdown(
    report: ReportData, plot_href: str | None = None, frontier_href: str | None = None
) -> str:
    m = report.meta
    lines = [
        f"# ctxreplay report: `{report.run}`",
        "",
        f"- corpus: `{m.get('corpus_path')}` (fingerprint `{m.get('corpus_fingerprint')}`)",
        f"- judge: `{report.judge or '–'}` ({m.get('verdicts', 0)} verdicts)",
        f"- reference policy: `{report.reference or '–'}` ({m.get('reference_chosen')})",
        f"- bootstrap: {report.bootstrap} session resamples, seed {report.seed}",
        "- policies: "
        + ", ".join(
            f"`{label}` {json.dumps(p.get('params', {}), sort_keys=True)}"
            for label, p in (m.get("policies") or {}).items()
        ),
    ]
    lines[5:5] = [f"- {_md_cell(line)}" for line in best_policy_lines(report)]  # by the reference
    if m.get("calibration"):
        lines.append(f"- {describe_calibration(m['calibration'])}")
    lines += [f"- note: {n}" for n in report.notes]
    if plot_href:
        lines += ["", f"![pruning vs no-impact]({plot_href})"]
    if frontier_href:
        lines += ["", f"![sweep frontier: pruning vs no-impact per family]({frontier_href})"]
    for d in displays(report):
        lines += ["", f"## {d.title}", "", d.note, "", *_md_table(d)]
        for line in d.footer:
            lines += ["", line]
    lines += ["", "## Example losses", ""]
    summary = examples_summary(report)
    if summary:
        lines += [summary, ""]
    ex = display(
        "examples",
        "",
        "",
        [
            ("policy", lambda r: r["policy"], False),
            ("category", lambda r: category_title(r["category"]), False),
            ("case", lambda r: r["case_id"], False),
            ("anchor", lambda r: _clip(r["anchor"], 80), False),
            ("source", lambda r: r["source_object"] or "–", False),
            ("seq", lambda r: count(r["need_seq"]), True),
            ("open", lambda r: f"`{r['show']}`", False),
        ],
        report.examples.to_dicts(),
    )
    lines += _md_table(ex) if ex.rows else ["(none)"]
    return "\n".join(lines) + "\n"


# --- csv and json ---------------------------------------------------------------------------


def _plain(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(pl.col(pl.Float64).fill_nan(None))


def table_csv(frame: pl.DataFrame) -> str:
    return _plain(frame).write_csv()


def render_csv(report: ReportData) -> str:
    """All tables in one text, each under a ``# name`` line (``save`` writes one file each)."""
    parts = []
    for name, frame in report.tables().items():
        parts.append(f"# {name}\n{table_csv(frame)}")
    return "\n".join(parts)


def _json_value(x: Any) -> Any:
    if isinstance(x, float) and math.isnan(x):
        return None
    if isinstance(x, dict):
        return {k: _json_value(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_json_value(v) for v in x]
    return x


def render_json(report: ReportData) -> str:
    doc = {
        "kind": "ctxreplay-report",
        "meta": report.meta,
        "notes": list(report.notes),
        "judge": report.judge,
        "reference": report.reference,
        "tables": {name: _json_value(f.to_dicts()) for name, f in report.tables().items()},
    }
    return json.dumps(doc, indent=2, ensure_ascii=False, default=str) + "\n"


# --- html -----------------------------------------------------------------------------------

# How the page keeps its tables on the page and its ids whole (checked in a real browser by
# tests/reports/test_html_browser.py at 1,400 and 1,000 px):
# - every table sits in its own horizontally scrolling region (``div.scroll``), so a table wider
#   than the page scrolls there and the page itself never does; its first column (the policy)
#   stays in view while it scrolls;
# - free text (trace text, reasons) wraps, at word boundaries where it can;
# - ids (policy labels, case ids, object ids, judges) and commands are ``.tok``: never wrapped
#   (``white-space: nowrap``) and selected whole by one click (``user-select: all``), so they
#   copy as one string with no script; a ``ctxreplay show …`` command, long because it holds
#   the run's path, scrolls inside its cell rather than widening the table;
# - the page runs no script at all, and its Content-Security-Policy forbids any (and any fetch):
#   trace text is escaped, and were an escape ever missed, nothing it injects could run.
_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;
max-width:1500px;padding:0 1.5rem;color:#1d2228}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #dde1e6}
.scroll{max-width:100%;overflow-x:auto;margin:.5rem 0 1rem}
.scroll:focus-visible{outline:2px solid #8ab4f8}
table{border-collapse:collapse;font-size:13px}
th,td{padding:.3rem .6rem;border-bottom:1px solid #e6e9ed;vertical-align:top;text-align:left}
th{background:#f4f6f8}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
td.n,td.nw{white-space:nowrap}th.group{text-align:center;border-bottom:1px solid #cfd5db}
.scroll .first{position:sticky;left:0;z-index:1;background:#fff;box-shadow:inset -1px 0 #e6e9ed}
.scroll th.first{background:#f4f6f8}
td.text{min-width:12rem;max-width:26rem;overflow-wrap:anywhere}
code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;background:#f4f6f8;padding:.1rem .3rem;
border-radius:3px}
.tok{white-space:nowrap;-webkit-user-select:all;user-select:all}
div.cmd{width:0;min-width:100%;overflow-x:auto;white-space:nowrap;color:#57606a}
tr.loss td{border-bottom:none}tr.open td{padding-top:0}
p code.tok,h1 code.tok,dd code.tok{display:inline-block;max-width:100%;overflow-x:auto;
vertical-align:bottom}
.lean{color:#9a6700;white-space:nowrap;font-size:12px}
p.note{color:#57606a;font-size:12.5px;max-width:900px}dl.meta{display:grid;
grid-template-columns:max-content minmax(0,1fr);gap:.2rem 1rem;font-size:13px}
dl.meta dt{color:#57606a}dl.meta dd{margin:0;overflow-wrap:anywhere}
img.plot{max-width:100%;height:auto;border:1px solid #e6e9ed}td.zero{color:#9aa3ab}
"""

#: the page may load nothing and run nothing: its images are inline, its style is inline
_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

#: display columns that hold ids (rendered ``.tok``: one line, selected whole)
_ID_HEADERS = frozenset(
    {
        "policy",
        "judge",
        "judge A",
        "judge B",
        "leader",
        "its best point",
        "point",
        "family",
        "vs family",
        "case",
        "name",
    }
)
#: display columns of short text that should not wrap (a level "≥ 10…40%")
_NOWRAP_HEADERS = frozenset({"level"})
#: display columns of free text: wrap, even inside a long run of characters
_TEXT_HEADERS = frozenset({"reason", "commit decisions"})


def _esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _tok(text: Any, code: bool = False) -> str:
    """An id or a command as one unwrapped string, selected whole by a click."""
    tag = "code" if code else "span"
    return f'<{tag} class="tok">{_esc(text)}</{tag}>'


def _inline(text: str) -> str:
    """Escaped text whose `backticked` spans (commands, in notes and footers) are ``.tok``."""
    pieces = str(text).split("`")
    if len(pieces) % 2 == 0:  # an unmatched backtick: the text as it is
        return _esc(text)
    return "".join(_tok(p, code=True) if i % 2 else _esc(p) for i, p in enumerate(pieces))


def _classed(tag: str, body: str, classes: list[str]) -> str:
    cls = f' class="{" ".join(classes)}"' if classes else ""
    return f"<{tag}{cls}>{body}</{tag}>"


def _cell(header: str, value: str, numeric: bool, first: bool) -> str:
    classes = ["first"] if first else []
    if numeric:
        classes.append("n")
        body = _esc(value)
    elif header in _ID_HEADERS and value not in ("", "–"):
        classes.append("id")
        body = _tok(value)
    else:
        if header in _NOWRAP_HEADERS:
            classes.append("nw")
        elif header in _TEXT_HEADERS:
            classes.append("text")
        body = _esc(value)
    return _classed("td", body, classes)


def _scroll(table: str, label: str) -> str:
    """A table in its own horizontally scrolling region (focusable, so keys scroll it too)."""
    return (
        f'<div class="scroll" role="region" tabindex="0" aria-label="{_esc(label)}">{table}</div>'
    )


def _html_table(d: Display, cls: str = "") -> str:
    head = "".join(
        _classed("th", _esc(h), ["first"] * (i == 0) + ["n"] * n)
        for i, (h, n) in enumerate(zip(d.headers, d.numeric, strict=True))
    )
    body = []
    for row in d.rows:
        cells = "".join(
            _cell(h, c, n, i == 0)
            for i, (h, c, n) in enumerate(zip(d.headers, row, d.numeric, strict=True))
        )
        body.append(f"<tr>{cells}</tr>")
    if not body:
        body.append(f'<tr><td colspan="{len(d.headers)}">(none)</td></tr>')
    table = (
        f'<table id="{_esc(d.key)}" class="{_esc(cls)}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )
    return _scroll(table, d.title)


def _leader_rows(r: dict[str, Any], mark: str) -> list[str]:
    """The summary rows of one (merged) level: one row when the same policy leads by no-impact
    and by strict no-impact, else one per ranking; the figure it is ranked by in bold, and a
    no-impact that leans on recovery marked."""

    def leader(prefix: str, by_plain: bool, by_strict: bool) -> dict[str, Any]:
        return {
            "policy": r[prefix],
            "prune": r[f"{prefix}_pruning_pct"],
            "plain": r[f"{prefix}_no_impact_pct"],
            "strict": r[f"{prefix}_strict_pct"],
            "leans": r[f"{prefix}_leans"],
            "by_plain": by_plain,
            "by_strict": by_strict,
        }

    if r["strict_leader"] is None:
        ranks = [leader("leader", True, False)]
    elif r["strict_leader"] == r["leader"]:
        ranks = [leader("leader", True, True)]
    else:
        ranks = [leader("leader", True, False), leader("strict_leader", False, True)]

    def bold(text: str, on: bool) -> str:
        return f"<b>{text}</b>" if on else text

    out = []
    for i, k in enumerate(ranks):
        by = " and ".join(
            name
            for name, on in (("no-impact", k["by_plain"]), ("strict no-impact", k["by_strict"]))
            if on
        )
        level = f'<td class="first nw" rowspan="{len(ranks)}">{_esc(r["_levels"])}</td>'
        plain = _esc(num(k["plain"])) + (f" {_esc(mark)}" if k["leans"] else "")
        out.append(
            f"<tr>{level if i == 0 else ''}<td>{_esc(by)}</td>"
            f'<td class="id">{_tok(k["policy"])}</td>'
            f'<td class="n">{_esc(num(k["prune"]))}</td>'
            f'<td class="n">{bold(plain, k["by_plain"])}</td>'
            f'<td class="n">{bold(_esc(num(k["strict"])), k["by_strict"])}</td></tr>'
        )
    return out


def summary_html(report: ReportData) -> str:
    """The page's headline: the best policy at each pruning level by no-impact and by strict
    no-impact (``leaders.level_leaders``; consecutive levels with the same leaders share a row),
    strict no-impact beside no-impact, and a no-impact that leans on recovery marked as the
    report's tables mark it. Empty when no policy has a scored verdict."""
    levels = level_leaders(report.no_impact)
    if levels.height == 0:
        return ""
    merged = merged_levels(levels)
    rows = [row for r in merged for row in _leader_rows(r, MARK)]
    table = (
        '<table id="summary"><thead><tr><th class="first">prune at least</th><th>best by</th>'
        '<th>policy</th><th class="n">prune %</th><th class="n">no-impact %</th>'
        '<th class="n">strict no-impact %</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
    note = (
        f"Judge {report.judge or '–'}. At each level, among the policies with scored verdicts "
        "that prune at least that share of the prefix (prune % as in the no-impact table), the "
        "one with the highest no-impact and the one with the highest strict no-impact (no loss "
        "and no recovery); ties go to more pruning. The figure a policy is ranked by is in bold. "
        "Consecutive levels with the same leaders share a row."
    )
    leaning = any(r["leader_leans"] or r["strict_leader_leans"] for r in merged)
    footer = (
        f'<p class="note footer">{_esc(MARK)} = this no-impact leans on recovery: some of its '
        "cases pass only because the agent can recover a folded payload through its visible "
        "pointer (an extra request each); its strict no-impact stands beside it.</p>"
        if leaning
        else ""
    )
    return (
        '<h2 id="h-summary">Summary: the best policy at each pruning level</h2>'
        f'<p class="note">{_esc(note)}</p>'
        + _scroll(table, "best policy per pruning level")
        + footer
    )


def render_html(report: ReportData, png: bytes | None = None) -> str:
    """One self-contained page: inline CSS, the plots as base64 PNGs, no external resource and
    no script (its Content-Security-Policy allows neither). The summary of the best policy per
    pruning level comes first; layout choices are in the comment above ``_CSS``."""
    m = report.meta
    png = png if png is not None else tradeoff_png(report)
    img = base64.b64encode(png).decode("ascii")
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>ctxreplay report: {_esc(report.run.name)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>ctxreplay report: {_tok(report.run, code=True)}</h1>",
    ]
    for note in report.notes:
        parts.append(f'<p class="note">note: {_inline(note)}</p>')
    parts.append(summary_html(report))
    parts.append('<h2 id="tradeoff">Pruning vs no-impact</h2>')
    parts.append(
        f'<img class="plot" alt="pruning rate against no-impact rate, one point per policy" '
        f'src="data:image/png;base64,{img}">'
    )
    if report.frontier is not None:
        frontier_png = base64.b64encode(report.frontier.plot()).decode("ascii")
        parts.append('<h2 id="frontier">Sweep frontier: pruning vs no-impact per family</h2>')
        parts.append(
            '<img class="plot" alt="sweep frontier: pruning against no-impact, one line per '
            f'family, Pareto points ringed" src="data:image/png;base64,{frontier_png}">'
        )
    for d in displays(report):
        parts.append(f'<h2 id="h-{_esc(d.key)}">{_esc(d.title)}</h2>')
        parts.append(f'<p class="note">{_inline(d.note)}</p>')
        parts.append(_html_table(d))
        parts += [f'<p class="note footer">{_inline(line)}</p>' for line in d.footer]
    parts.append('<h2 id="audit">Audit: example losses</h2>')
    parts.append(
        '<p class="note">Each row is one dependency the view lost; the command opens the case '
        "under the policy: the prefix and what the view made of it, and the future message that "
        "needed the lost text. Click a command (or an id) to select all of it.</p>"
    )
    summary = examples_summary(report)
    if summary:
        parts.append(f'<p class="note">{_inline(summary)}</p>')
    rows = []
    for r in report.examples.iter_rows(named=True):
        source = r["source_object"]
        rows.append(
            '<tr class="loss">'
            f'<td class="id">{_tok(r["policy"])}</td>'
            f"<td>{_esc(category_title(r['category']))}</td>"
            f'<td class="id">{_tok(r["case_id"], code=True)}</td>'
            f'<td class="text">{_esc(_clip(r["anchor"], 160))}</td>'
            f'<td class="id">{_tok(source, code=True) if source else "–"}</td>'
            f'<td class="n">{_esc(count(r["need_seq"]))}</td>'
            f'<td class="text">{_esc(r["detail"] or "")}</td></tr>'
            # the command on a row of its own, the table's width: readable without scrolling
            '<tr class="open"><td colspan="7"><div class="cmd">open with: '
            f'<code class="tok show">{_esc(r["show"])}</code></div></td></tr>'
        )
    if not rows:
        rows.append('<tr><td colspan="7">(none)</td></tr>')
    parts.append(
        _scroll(
            '<table id="examples"><thead><tr><th>policy</th><th>category</th>'
            '<th>case</th><th>anchor</th><th>source object</th><th class="n">need seq</th>'
            f"<th>detail</th></tr></thead><tbody>{''.join(rows)}</tbody>"
            "</table>",
            "example losses",
        )
    )
    parts.append('<h2 id="meta">Run</h2><dl class="meta">')
    cases = m.get("cases") or {}
    for key, value in (
        ("run", m.get("run")),
        ("corpus", f"{m.get('corpus_path')} (fingerprint {m.get('corpus_fingerprint')})"),
        ("cases", f"{m.get('cases_path')} (fingerprint {m.get('cases_fingerprint')})"),
        ("triggers", ", ".join(cases.get("triggers") or []) or "–"),
        ("horizon", cases.get("horizon")),
        ("suite", cases.get("suite")),
        ("tokenizer", m.get("tokenizer")),
        ("tariff", json.dumps(m.get("tariff"), sort_keys=True)),
        ("judge", f"{report.judge} ({m.get('verdicts', 0)} verdicts)"),
        (
            "judge calibration",
            describe_calibration(m["calibration"]) if m.get("calibration") else "none in this run",
        ),
        ("reference", f"{report.reference} ({m.get('reference_chosen')})"),
        (
            "seeds",
            f"replay {m.get('replay_seed')}, cases {cases.get('seed')}, report {report.seed}",
        ),
        ("bootstrap", f"{report.bootstrap} session resamples, alpha {report.alpha}"),
        ("McNemar", m.get("mcnemar")),
        (
            "ctxreplay",
            f"{m.get('ctxreplay_version')} (run made with {m.get('run_ctxreplay_version')})",
        ),
        ("run created", f"{m.get('run_created_at')}, completed {m.get('run_completed_at')}"),
        ("report created", m.get("report_created_at")),
    ):
        parts.append(f"<dt>{_esc(key)}</dt><dd>{_esc(value if value is not None else '–')}</dd>")
    parts.append("</dl>")
    parts.append('<h2 id="policies">Policies</h2>')
    params_rows = []
    for label, p in (m.get("policies") or {}).items():
        params = json.dumps(p.get("params", {}), sort_keys=True)
        params_rows.append(
            f'<tr><td class="first id">{_tok(label)}</td><td class="id">{_tok(p.get("name"))}</td>'
            f"<td><code>{_esc(params)}</code></td></tr>"
        )
    parts.append(
        _scroll(
            '<table id="policy-params"><thead><tr><th class="first">policy</th><th>name</th>'
            f"<th>parameters</th></tr></thead><tbody>{''.join(params_rows)}</tbody></table>",
            "policies and their parameters",
        )
    )
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


# --- entry points ---------------------------------------------------------------------------


def tradeoff_png(report: ReportData, path: str | os.PathLike[str] | None = None) -> bytes:
    """The report's trade-off plot as PNG bytes (also written to ``path`` when given)."""
    from .plot import tradeoff_plot  # matplotlib loads only when a plot is drawn

    return tradeoff_plot(report.no_impact, path, title=f"{report.run.name} · judge {report.judge}")


def render(report: ReportData, fmt: str = "terminal", width: int | None = None) -> str:
    """The report as one text in ``fmt``: terminal, markdown, csv, json or html. ``width``: the
    terminal text's line width (None: the terminal's, 100 when not a terminal; 0: no limit)."""
    if fmt == "terminal":
        return render_terminal(report, width)
    if fmt in ("markdown", "md"):
        return render_markdown(report)
    if fmt == "csv":
        return render_csv(report)
    if fmt == "json":
        return render_json(report)
    if fmt == "html":
        return render_html(report)
    raise RenderError(f"unknown format {fmt!r}; formats: {', '.join(FORMATS)}")


def format_for(path: str | os.PathLike[str]) -> str:
    """The format a path's suffix implies; a path without a suffix is a folder of CSV files. An
    unknown suffix is refused (``report.pdf`` once became a folder named ``report.pdf/``)."""
    suffix = Path(path).suffix.lower()
    if not suffix:
        return "csv"
    if suffix not in SUFFIXES:
        known = ", ".join(SUFFIXES)
        raise RenderError(
            f"cannot write a report as {suffix} ({path}): name it {known}, or a folder without "
            "an extension for one CSV file per table and the plots (or give --format)"
        )
    return SUFFIXES[suffix]


def save(
    report: ReportData,
    path: str | os.PathLike[str],
    fmt: str | None = None,
    width: int | None = None,
) -> list[Path]:
    """Write the report to ``path``; returns the files written.

    csv: one file per table (plus ``tradeoff.png``) in the folder ``path``, or all tables as
    ``# name`` sections when ``path`` ends in .csv. markdown: the file plus ``<stem>.png`` beside
    it, linked from the page. html: one self-contained file. terminal/json: one file (terminal
    text ``width`` wide, as ``render``).
    """
    out = Path(path)
    fmt = fmt or format_for(out)
    if fmt not in FORMATS and fmt != "md":
        raise RenderError(f"unknown format {fmt!r}; formats: {', '.join(FORMATS)}")
    written: list[Path] = []
    if fmt == "csv" and out.suffix.lower() != ".csv":
        out.mkdir(parents=True, exist_ok=True)
        for name, frame in report.tables().items():
            f = out / f"{name}.csv"
            atomic_write_text(f, table_csv(frame))
            written.append(f)
        png = out / "tradeoff.png"
        tradeoff_png(report, png)
        if report.frontier is not None:
            written.append(out / "frontier.png")
            report.frontier.plot(written[-1])
        return [*written, png]
    out.parent.mkdir(parents=True, exist_ok=True)
    if fmt in ("markdown", "md"):
        png = out.with_suffix(".png")
        tradeoff_png(report, png)
        if report.frontier is not None:
            frontier_png = out.with_name(f"{out.stem}-frontier.png")
            report.frontier.plot(frontier_png)
            atomic_write_text(
                out, render_markdown(report, plot_href=png.name, frontier_href=frontier_png.name)
            )
            return [out, png, frontier_png]
        atomic_write_text(out, render_markdown(report, plot_href=png.name))
        return [out, png]
    atomic_write_text(out, render(report, fmt, width))  # never a half-written report
    return [out]
