"""A report as text: terminal tables (default), Markdown, CSV, JSON, or one self-contained HTML file.

Renderers only format what ``tables.build_report`` computed. Terminal and Markdown share the same
display tables (rounded, intervals written "[lo, hi]"); CSV and JSON carry the unrounded frames;
HTML carries both plus the trade-off plot as an embedded PNG, so the file opens offline.
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
from typing import TYPE_CHECKING, Any

import polars as pl

from ..judges.base import DEFAULT_JUDGE
from ..schema import CATEGORIES
from .correction import describe as describe_calibration
from .formatting import (
    Display,
    RenderError,
    category_title,
    ci,
    count,
    display,
    fit_table,
    num,
    pval,
    recovery_columns,
    recovery_lines,
    terminal_width,
    usd,
    usd_delta,
    usd_range,
    visible_controls,
    wrap,
    wrap_command,
)

if TYPE_CHECKING:
    from .report import Report

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


# --- number formats -------------------------------------------------------------------------


# --- display tables (shared by terminal, markdown and html) ---------------------------------


def correction_lines(report: Report) -> tuple[str, ...]:
    """What the corrected no-impact columns mean, and the calibration behind them (none when
    the run holds no calibration of the report's judge)."""
    cal = report.meta.get("calibration")
    if not cal or "corrected_no_impact_pct" not in report.no_impact.columns:
        return ()
    return (str(cal.get("explanation") or ""), describe_calibration(cal))


def _no_impact_columns(
    report: Report,
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
        ("no-impact %", lambda r: num(r["no_impact_pct"]), True),
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


def displays(report: Report) -> list[Display]:
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
            ),
        )
    from .frontier import frontier_displays

    out[1:1] = frontier_displays(report)  # a sweep's frontier, right after the no-impact table
    return out


def judge_displays(report: Report) -> list[Display]:
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


def _taxonomydisplay(report: Report) -> Display:
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


def _header_lines(report: Report) -> list[str]:
    m = report.meta
    return [
        f"ctxreplay report: {report.run}",
        f"corpus {m.get('corpus_path')} ({m.get('corpus_fingerprint')}) · "
        f"judge {report.judge or '–'} ({m.get('verdicts', 0)} verdicts) · "
        f"reference {report.reference or '–'} ({m.get('reference_chosen')}) · "
        f"seed {report.seed} · {report.bootstrap} bootstrap resamples",
    ]


def examples_summary(report: Report) -> str:
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


def render_terminal(report: Report, width: int | None = None) -> str:
    """The report as terminal text at most ``width`` characters wide (None: the terminal's, 100
    when not a terminal; 0: no limit). Numbers are never cut: text wraps, and a table too wide
    for its numbers is split into column groups that repeat the policy column."""
    w = terminal_width(width)
    lines: list[str] = []
    for line in _header_lines(report):
        lines += wrap(line, w, "", "  ")
    for note in report.notes:
        lines += wrap(f"note: {note}", w, "", "  ")
    for d in displays(report):
        lines += ["", *wrap(d.title, w), *fit_table(d, w)]
        for line in d.footer:
            lines += wrap(line, w)
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
        )
        lines += wrap_command(r["show"], w, "    $ ", "        ")
    summary = examples_summary(report)
    if summary:
        lines += wrap(summary, w)
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
    report: Report, plot_href: str | None = None, frontier_href: str | None = None
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


def render_csv(report: Report) -> str:
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


def render_json(report: Report) -> str:
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

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;
max-width:1200px;padding:0 1rem;color:#1d2228}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #dde1e6}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:13px}
th,td{padding:.3rem .6rem;border-bottom:1px solid #e6e9ed;vertical-align:top}
th{background:#f4f6f8;text-align:left}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;background:#f4f6f8;padding:.1rem .3rem;
border-radius:3px;word-break:break-all}
p.note{color:#57606a;font-size:12.5px;max-width:900px}dl.meta{display:grid;
grid-template-columns:max-content 1fr;gap:.2rem 1rem;font-size:13px}dl.meta dt{color:#57606a}
img.plot{max-width:100%;border:1px solid #e6e9ed}td.zero{color:#9aa3ab}
"""


def _esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _html_table(d: Display, cls: str = "") -> str:
    head = "".join(
        f'<th class="n">{_esc(h)}</th>' if n else f"<th>{_esc(h)}</th>"
        for h, n in zip(d.headers, d.numeric, strict=True)
    )
    body = []
    for row in d.rows:
        cells = "".join(
            f'<td class="n">{_esc(c)}</td>' if n else f"<td>{_esc(c)}</td>"
            for c, n in zip(row, d.numeric, strict=True)
        )
        body.append(f"<tr>{cells}</tr>")
    if not body:
        body.append(f'<tr><td colspan="{len(d.headers)}">(none)</td></tr>')
    return (
        f'<table id="{_esc(d.key)}" class="{_esc(cls)}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def render_html(report: Report, png: bytes | None = None) -> str:
    """One self-contained page: inline CSS, the plot as a base64 PNG, no external resource."""
    m = report.meta
    png = png if png is not None else report.plot()
    img = base64.b64encode(png).decode("ascii")
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>ctxreplay report: {_esc(report.run.name)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>ctxreplay report: <code>{_esc(report.run)}</code></h1>",
    ]
    for note in report.notes:
        parts.append(f'<p class="note">note: {_esc(note)}</p>')
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
        parts.append(f'<p class="note">{_esc(d.note)}</p>')
        parts.append(_html_table(d))
        parts += [f'<p class="note footer">{_esc(line)}</p>' for line in d.footer]
    parts.append('<h2 id="audit">Audit: example losses</h2>')
    parts.append(
        '<p class="note">Each row is one dependency the view lost; the command opens the case '
        "under the policy: the prefix and what the view made of it, and the future message that "
        "needed the lost text.</p>"
    )
    summary = examples_summary(report)
    if summary:
        parts.append(f'<p class="note">{_esc(summary)}</p>')
    rows = []
    for r in report.examples.iter_rows(named=True):
        rows.append(
            "<tr>"
            f"<td>{_esc(r['policy'])}</td><td>{_esc(category_title(r['category']))}</td>"
            f"<td><code>{_esc(r['case_id'])}</code></td>"
            f"<td>{_esc(_clip(r['anchor'], 160))}</td>"
            f"<td><code>{_esc(r['source_object'] or '–')}</code></td>"
            f'<td class="n">{_esc(count(r["need_seq"]))}</td>'
            f"<td>{_esc(r['detail'] or '')}</td>"
            f'<td><code class="show">{_esc(r["show"])}</code></td>'
            "</tr>"
        )
    if not rows:
        rows.append('<tr><td colspan="8">(none)</td></tr>')
    parts.append(
        '<table id="examples"><thead><tr><th>policy</th><th>category</th><th>case</th>'
        '<th>anchor</th><th>source object</th><th class="n">need seq</th><th>detail</th>'
        f"<th>open with</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
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
    parts.append(
        '<h2 id="policies">Policies</h2><table id="policy-params"><thead><tr><th>policy</th>'
        "<th>name</th><th>parameters</th></tr></thead><tbody>"
    )
    for label, p in (m.get("policies") or {}).items():
        params = json.dumps(p.get("params", {}), sort_keys=True)
        parts.append(
            f"<tr><td>{_esc(label)}</td><td>{_esc(p.get('name'))}</td>"
            f"<td><code>{_esc(params)}</code></td></tr>"
        )
    parts.append("</tbody></table></body></html>")
    return "\n".join(parts) + "\n"


# --- entry points ---------------------------------------------------------------------------


def render(report: Report, fmt: str = "terminal", width: int | None = None) -> str:
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
    """The format a path's suffix implies; a path without a known suffix is a CSV folder."""
    return SUFFIXES.get(Path(path).suffix.lower(), "csv")


def save(
    report: Report,
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
            f.write_text(table_csv(frame))
            written.append(f)
        png = out / "tradeoff.png"
        report.plot(png)
        if report.frontier is not None:
            written.append(out / "frontier.png")
            report.frontier.plot(written[-1])
        return [*written, png]
    out.parent.mkdir(parents=True, exist_ok=True)
    if fmt in ("markdown", "md"):
        png = out.with_suffix(".png")
        report.plot(png)
        if report.frontier is not None:
            frontier_png = out.with_name(f"{out.stem}-frontier.png")
            report.frontier.plot(frontier_png)
            out.write_text(
                render_markdown(report, plot_href=png.name, frontier_href=frontier_png.name)
            )
            return [out, png, frontier_png]
        out.write_text(render_markdown(report, plot_href=png.name))
        return [out, png]
    out.write_text(render(report, fmt, width))
    return [out]
