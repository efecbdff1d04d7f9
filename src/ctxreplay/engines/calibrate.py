"""Judge calibration: agreement between judges, accuracy against labels or planted truth.

Positive = ``impact``. Pairs where either side is unscored leave the comparison and are counted.
Cohen's kappa and its asymptotic 95% interval are ``reports.stats.cohen_kappa`` (statsmodels'
``cohens_kappa``), the one the report's judge agreement uses too. Per category, a judge
"reports" a category when one of its losses carries it; sensitivity and specificity are
computed for each category against the reference's losses.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from ..reports.stats import cohen_kappa
from ..runs import CalibrationError, calibration_path
from ..schema import CATEGORIES

if TYPE_CHECKING:
    from .judge import JudgeSummary


@dataclass(frozen=True)
class Rates:
    tp: int
    fn: int
    fp: int
    tn: int

    @property
    def sensitivity(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def specificity(self) -> float | None:
        return self.tn / (self.tn + self.fp) if self.tn + self.fp else None

    @property
    def accuracy(self) -> float | None:
        n = self.tp + self.fn + self.fp + self.tn
        return (self.tp + self.tn) / n if n else None


@dataclass(frozen=True)
class Calibration:
    judge: str
    against: str
    n: int
    unscored: int  # pairs left out because one side was unscored
    missing: int  # pairs the reference has and the judge does not (or the reverse)
    overall: Rates
    kappa: float | None
    kappa_ci: tuple[float, float] | None
    per_category: dict[str, Rates] = field(default_factory=dict)

    def table(self) -> pl.DataFrame:
        rows = [_rates_row("overall (impact)", self.overall)]
        rows += [_rates_row(c, r) for c, r in self.per_category.items()]
        return pl.DataFrame(rows)

    def render(self) -> str:
        o = self.overall
        lines = [
            f"{self.judge} against {self.against}: {self.n} pairs compared"
            f" ({self.unscored} left out as unscored, {self.missing} without a counterpart)",
            "confusion (rows: reference, columns: judge)",
            "                 judge impact   judge no_impact",
            f"  ref impact     {o.tp:>12}   {o.fn:>15}",
            f"  ref no_impact  {o.fp:>12}   {o.tn:>15}",
        ]
        if self.kappa is not None:
            ci = (
                f"[{self.kappa_ci[0]:.3f}, {self.kappa_ci[1]:.3f}] (95% CI)"
                if self.kappa_ci
                else "(CI undefined)"
            )
            lines.append(f"Cohen's kappa {self.kappa:.3f} {ci}")
        else:
            lines.append("Cohen's kappa undefined (one class only)")
        table = self.table().drop("tp", "fn", "fp", "tn")
        with pl.Config(
            tbl_rows=20,
            tbl_cols=-1,
            tbl_width_chars=160,
            tbl_hide_dataframe_shape=True,
            float_precision=3,
        ):
            lines.append(str(table))
        return "\n".join(lines)


def _rates_row(name: str, r: Rates) -> dict[str, Any]:
    return {
        "category": name,
        "positives": r.tp + r.fn,
        "negatives": r.tn + r.fp,
        "tp": r.tp,
        "fn": r.fn,
        "fp": r.fp,
        "tn": r.tn,
        "sensitivity": r.sensitivity,
        "specificity": r.specificity,
        "accuracy": r.accuracy,
    }


def _rates(truth: list[bool], guess: list[bool]) -> Rates:
    t = np.array(truth, dtype=bool)
    g = np.array(guess, dtype=bool)
    return Rates(int((t & g).sum()), int((t & ~g).sum()), int((~t & g).sum()), int((~t & ~g).sum()))


def _categories(losses: Any) -> set[str]:
    return {loss["category"] for loss in (losses or [])}


def compare(judged: pl.DataFrame, reference: pl.DataFrame, judge: str, against: str) -> Calibration:
    """``judged`` and ``reference``: frames with policy, case_id, label and (optionally) losses."""
    ref = (
        reference.select(
            "policy",
            "case_id",
            pl.col("label").alias("ref_label"),
            pl.col("losses").alias("ref_losses"),
        )
        if "losses" in reference.columns
        else reference.select(
            "policy",
            "case_id",
            pl.col("label").alias("ref_label"),
            pl.lit(None).alias("ref_losses"),
        )
    )
    both = judged.select("policy", "case_id", "label", "losses").join(
        ref, on=["policy", "case_id"], how="full", coalesce=True
    )
    missing = both.filter(pl.col("label").is_null() | pl.col("ref_label").is_null()).height
    both = both.drop_nulls(["label", "ref_label"])
    scored = both.filter((pl.col("label") != "unscored") & (pl.col("ref_label") != "unscored"))
    unscored = both.height - scored.height
    truth = (scored["ref_label"] == "impact").to_list()
    guess = (scored["label"] == "impact").to_list()
    overall = _rates(truth, guess)
    kappa = ci = None
    # kappa is undefined when both raters put everything in one class (nan)
    k = cohen_kappa([[overall.tp, overall.fn], [overall.fp, overall.tn]])
    if not math.isnan(k.kappa):
        kappa = k.kappa
        ci = (k.low, k.high) if not math.isnan(k.low) else None
    per: dict[str, Rates] = {}
    if "losses" in reference.columns and scored.height:
        ref_cats = [_categories(x) for x in scored["ref_losses"].to_list()]
        got_cats = [_categories(x) for x in scored["losses"].to_list()]
        for c in CATEGORIES:
            per[c] = _rates([c in r for r in ref_cats], [c in g for g in got_cats])
    return Calibration(judge, against, scored.height, unscored, missing, overall, kappa, ci, per)


def read_labels(path: str | os.PathLike[str]) -> pl.DataFrame:
    """Human labels: a CSV with case_id, policy, label (impact|no_impact) and optional category."""
    frame = pl.read_csv(Path(path), infer_schema_length=0)
    need = {"case_id", "policy", "label"}
    if not need <= set(frame.columns):
        raise CalibrationError(f"{path}: needs columns {', '.join(sorted(need))}")
    bad = frame.filter(~pl.col("label").is_in(["impact", "no_impact", "unscored"]))
    if bad.height:
        raise CalibrationError(f"{path}: label must be impact or no_impact (row {bad.row(0)})")
    if "category" in frame.columns:
        frame = frame.with_columns(
            losses=pl.when(pl.col("category").is_not_null() & (pl.col("category") != ""))
            .then(pl.concat_list(pl.struct(category=pl.col("category"))))
            .otherwise(None)
        )
    return frame


# --- against dependency labels on real traces (``--against deps:LABELS``) --------------------


def deps_spec(labels: str | os.PathLike[str], variant: str = "strict") -> str:
    """The ``deps`` judge spec for a labels path (canonical, so the label is stable)."""
    from ..judges.labels import canonical_labels_path

    path = canonical_labels_path(labels)
    if "," in path:
        raise CalibrationError(f"a labels path may not contain a comma: {path}")
    return f"deps:path={path},variant={variant}"


def parse_deps_against(against: str) -> str | None:
    """The labels path of ``deps:PATH`` (or ``deps:path=PATH``), None for anything else."""
    if not against.startswith("deps:"):
        return None
    rest = against[len("deps:") :]
    if rest.startswith("path="):
        rest = rest[len("path=") :]
    if not rest:
        raise CalibrationError(
            "--against deps:PATH needs the labels folder (or dependencies.jsonl)"
        )
    return rest


@dataclass(frozen=True)
class Interval:
    estimate: float | None
    low: float | None
    high: float | None

    @staticmethod
    def wilson(k: int, n: int) -> Interval:
        from ..reports.stats import wilson

        if n == 0:
            return Interval(None, None, None)
        w = wilson(k, n)
        return Interval(w.estimate, w.low, w.high)

    def show(self) -> str:
        if self.estimate is None:
            return "undefined"
        return f"{self.estimate:.3f} [{self.low:.3f}, {self.high:.3f}]"


def _intervals(r: Rates) -> tuple[Interval, Interval]:
    """Sensitivity and specificity of a confusion, with Wilson 95% intervals."""
    return Interval.wilson(r.tp, r.tp + r.fn), Interval.wilson(r.tn, r.tn + r.fp)


@dataclass(frozen=True)
class VariantResult:
    """A judge against one scoring variant of the gold labels."""

    variant: str
    reference: str  # the deps judge label holding the gold verdicts
    calibration: Calibration
    per_corpus: dict[str, Calibration]
    missed: dict[str, int]  # category → gold dependencies lost where the judge said no_impact
    missed_views: int  # views the judge called no_impact but gold says impact

    @property
    def sensitivity(self) -> Interval:
        return _intervals(self.calibration.overall)[0]

    @property
    def specificity(self) -> Interval:
        return _intervals(self.calibration.overall)[1]


def _confusion(r: Rates) -> dict[str, Any]:
    """The counts of a confusion, its sensitivity and specificity (Wilson 95%) and agreement."""
    sens, spec = _intervals(r)
    return {
        "tp": r.tp,
        "fn": r.fn,
        "fp": r.fp,
        "tn": r.tn,
        "sensitivity": sens.estimate,
        "sensitivity_low": sens.low,
        "sensitivity_high": sens.high,
        "specificity": spec.estimate,
        "specificity_low": spec.low,
        "specificity_high": spec.high,
        "agreement": r.accuracy,
    }


def _rates_dict(c: Calibration) -> dict[str, Any]:
    return {
        "n": c.n,
        "unscored": c.unscored,
        "missing": c.missing,
        **_confusion(c.overall),
        "kappa": c.kappa,
        "kappa_low": c.kappa_ci[0] if c.kappa_ci else None,
        "kappa_high": c.kappa_ci[1] if c.kappa_ci else None,
    }


@dataclass(frozen=True)
class GoldCalibration:
    """A judge against dependency labels, in the three scoring variants (strict first)."""

    judge: str
    labels: str
    variants: tuple[VariantResult, ...]
    #: what running the ``deps`` judge of each variant did (in the order of ``variants``)
    judged: tuple[JudgeSummary, ...] = field(default=(), compare=False, repr=False)

    def variant(self, name: str) -> VariantResult:
        """The result against one scoring variant (strict, whitespace, recovery)."""
        return next(v for v in self.variants if v.variant == name)

    def rows(self) -> list[dict[str, Any]]:
        """One flat row per (variant, scope, name): scope overall · corpus · category · missed."""
        empty = (
            dict.fromkeys(_rates_dict(self.variants[0].calibration), None) if self.variants else {}
        )
        rows: list[dict[str, Any]] = []
        for v in self.variants:
            base = {"judge": self.judge, "variant": v.variant, "reference": v.reference}
            rows.append(
                {
                    **base,
                    "scope": "overall",
                    "name": "all",
                    **_rates_dict(v.calibration),
                    "missed": None,
                }
            )
            for corpus, c in v.per_corpus.items():
                rows.append(
                    {**base, "scope": "corpus", "name": corpus, **_rates_dict(c), "missed": None}
                )
            for cat, r in v.calibration.per_category.items():
                row = {**base, "scope": "category", "name": cat, **empty, "missed": None}
                row.update(n=r.tp + r.fn + r.fp + r.tn, **_confusion(r))
                rows.append(row)
            for cat, n in v.missed.items():
                rows.append({**base, "scope": "missed", "name": cat, **empty, "missed": n})
        return rows

    def table(self) -> pl.DataFrame:
        return pl.DataFrame(self.rows(), infer_schema_length=None)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"judge": self.judge, "labels": self.labels, "variants": []}
        for v in self.variants:
            out["variants"].append(
                {
                    "variant": v.variant,
                    "reference": v.reference,
                    **_rates_dict(v.calibration),
                    "per_category": [
                        _rates_row(c, r) for c, r in v.calibration.per_category.items()
                    ],
                    "per_corpus": {k: _rates_dict(c) for k, c in v.per_corpus.items()},
                    "missed_views": v.missed_views,
                    "missed_dependencies": v.missed,
                }
            )
        return out

    def render(self) -> str:
        parts: list[str] = []
        for v in self.variants:
            c = v.calibration
            lines = [f"=== gold: dependency labels, {v.variant} ({v.reference}) ==="]
            lines.append(c.render())
            agreement = c.overall.accuracy
            lines.append(
                f"sensitivity {v.sensitivity.show()}  specificity {v.specificity.show()}"
                "  (Wilson 95%)"
            )
            lines.append(
                "agreement "
                + (f"{agreement:.3f}" if agreement is not None else "undefined")
                + f" over {c.n} views; gold impact {c.overall.tp + c.overall.fn}"
            )
            if v.per_corpus:
                lines.append("per corpus:")
                for corpus, pc in v.per_corpus.items():
                    o = pc.overall
                    sens, spec = _intervals(o)
                    kappa = f"{pc.kappa:.3f}" if pc.kappa is not None else "undefined"
                    lines.append(
                        f"  {corpus:<14} n {pc.n:>4}  tp {o.tp:>3} fn {o.fn:>3} fp {o.fp:>3}"
                        f" tn {o.tn:>4}  sensitivity {sens.show()}  specificity {spec.show()}"
                        f"  kappa {kappa}"
                    )
            total = sum(v.missed.values())
            lines.append(
                f"missed: {v.missed_views} views judged no_impact that lose {total} gold "
                "dependencies"
                + (": " + ", ".join(f"{k} {n}" for k, n in v.missed.items() if n) if total else "")
            )
            parts.append("\n".join(lines))
        return "\n\n".join(parts)


def judged_by(run_path: str | os.PathLike[str], judge: str) -> tuple[str, pl.DataFrame]:
    """The label of ``judge`` in the run and its verdicts; an error naming the command to run
    when it has none."""
    from ..runs import judge_verdicts, verdict_judges

    names = verdict_judges(run_path)
    if not names.filter((pl.col("judge") == judge) | (pl.col("judge_name") == judge)).height:
        raise CalibrationError(
            f"no verdicts from judge {judge!r} in {run_path}; "
            f"run: ctxreplay judge {run_path} --judge {judge}"
        )
    label, verdicts = judge_verdicts(run_path, judge, names=names)
    assert label is not None
    return label, verdicts


def _gold_verdicts(
    run_path: str | os.PathLike[str],
    labels: str | os.PathLike[str],
    variant: str,
    *,
    policies: list[str] | tuple[str, ...] | None = None,
    workers: int = 2,
    progress: bool = False,
) -> tuple[JudgeSummary, pl.DataFrame]:
    """Run the ``deps`` judge of one labels variant over the run (resumable; ``policies``: only
    these) and read its verdicts back: its ``JudgeSummary`` and every verdict it holds."""
    from ..runs import read_verdicts
    from .judge import run_judge

    spec = deps_spec(labels, variant)
    summary = run_judge(run_path, spec, policies=policies, workers=workers, progress=progress)
    verdicts = read_verdicts(run_path, summary.judge).filter(pl.col("judge") == summary.judge)
    return summary, verdicts


def calibrate_against_deps(
    run_path: str | os.PathLike[str],
    judge: str,
    labels: str | os.PathLike[str],
    *,
    policies: list[str] | tuple[str, ...] | None = None,
    workers: int = 2,
    progress: bool = False,
    store: bool = True,
) -> GoldCalibration:
    """Judge ``judge``'s verdicts in a run against dependency labels, in every variant.

    The ``deps`` judge runs first, over ``policies`` only when given (resumable; its verdicts are
    kept under labels like ``deps:path=…,variant=…``; its summaries are ``judged`` of the result).

    Strict no-impact is no loss and no recovery, so against the strict and whitespace variants
    a verdict that is no-impact only through recovery counts as impact (``strict_labels``);
    against the recovery variant it counts as it reads. The recovery result is the pairing the
    report's no-impact (which accepts recovery) is, and is stored as the judge's calibration in
    the run (``RUN/calibration/<slug(judge)>.json``, for the report's correction) unless
    ``store`` is False.
    """
    from ..judges.labels import VARIANTS, load_labels

    label, judged = judged_by(run_path, judge)
    gold = load_labels(labels)
    corpus_of = gold.corpus_of()
    if policies:
        judged = judged.filter(pl.col("policy").is_in(list(policies)))
    results: list[VariantResult] = []
    summaries: list[JudgeSummary] = []
    for variant in VARIANTS:
        summary, reference = _gold_verdicts(
            run_path, labels, variant, policies=policies, workers=workers, progress=progress
        )
        if policies:
            reference = reference.filter(pl.col("policy").is_in(list(policies)))
        summaries.append(summary)
        mine = judged if variant == "recovery" else strict_labels(judged)
        results.append(_variant_result(mine, reference, label, summary.judge, variant, corpus_of))
    out = GoldCalibration(
        label, str(Path(labels).resolve()), tuple(results), judged=tuple(summaries)
    )
    if store:
        write_calibration(run_path, out.variant("recovery").calibration)
    return out


def strict_labels(verdicts: pl.DataFrame) -> pl.DataFrame:
    """Verdicts with a no-impact that holds only through recovery (``recoverable`` > 0) made
    impact: the judge's strict no-impact (no loss and no recovery)."""
    if "recoverable" not in verdicts.columns:
        return verdicts
    recovered = (pl.col("label") == "no_impact") & (pl.col("recoverable").fill_null(0) > 0)
    return verdicts.with_columns(
        label=pl.when(recovered).then(pl.lit("impact")).otherwise(pl.col("label"))
    )


def _variant_result(
    judged: pl.DataFrame,
    reference: pl.DataFrame,
    judge: str,
    against: str,
    variant: str,
    corpus_of: dict[str, str],
) -> VariantResult:
    overall = compare(judged, reference, judge, against)
    per_corpus: dict[str, Calibration] = {}
    for corpus in sorted({c for c in corpus_of.values()}):
        sessions = [s for s, c in corpus_of.items() if c == corpus]
        j = judged.filter(pl.col("session_id").is_in(sessions))
        r = reference.filter(pl.col("session_id").is_in(sessions))
        if j.height or r.height:
            per_corpus[corpus or "(none)"] = compare(j, r, judge, against)
    both = judged.select("policy", "case_id", "label").join(
        reference.select("policy", "case_id", pl.col("label").alias("ref"), "losses"),
        on=["policy", "case_id"],
    )
    fn = both.filter((pl.col("label") == "no_impact") & (pl.col("ref") == "impact"))
    missed = dict.fromkeys(CATEGORIES, 0)
    for losses in fn["losses"].to_list():
        for loss in losses or ():
            missed[loss["category"]] = missed.get(loss["category"], 0) + 1
    return VariantResult(variant, against, overall, per_corpus, missed, fn.height)


def write_calibration(run_path: str | os.PathLike[str], c: Calibration) -> Path:
    """Store a judge's calibration in its run (atomically), positive = impact."""
    import datetime
    import json

    from ..files import atomic_write_text

    o = c.overall
    doc = {
        "judge": c.judge,
        "against": c.against,
        "tp": o.tp,
        "fn": o.fn,
        "fp": o.fp,
        "tn": o.tn,
        "sensitivity": o.sensitivity,
        "specificity": o.specificity,
        "kappa": c.kappa,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }
    path = calibration_path(run_path, c.judge)
    atomic_write_text(path, json.dumps(doc, indent=2) + "\n")
    return path


MISSED_SCHEMA = {
    "case_id": pl.String,
    "labels_case": pl.String,
    "policy": pl.String,
    "judge_label": pl.String,
    "category": pl.String,
    "dependency": pl.String,
    "source_object": pl.String,
    "need_seq": pl.Int64,
    "need_text": pl.String,
    "why": pl.String,
}


def _reported(dependency: str, judge_losses: Any) -> bool:
    """Whether one of the judge's losses names this dependency (its anchor overlaps the text)."""
    for loss in judge_losses or ():
        anchor = (loss.get("anchor") or "").strip()
        if anchor and (anchor in dependency or dependency in anchor):
            return True
    return False


def missed_dependencies(
    run_path: str | os.PathLike[str],
    judge: str,
    labels: str | os.PathLike[str],
    *,
    policy: str | None = None,
    variant: str = "strict",
    workers: int = 2,
    preview: int = 200,
) -> pl.DataFrame:
    """Every gold dependency a view lost that the judge missed: the judge said no_impact, or said
    impact without a loss whose anchor overlaps the dependency's text.

    Columns: ``MISSED_SCHEMA`` — the case, the labels' case name, the policy, the judge's label
    for the view, the category, the removed text, the object that held it, and the future
    message that needed it (seq and its first ``preview`` characters, as the annotators saw it).
    """
    from ..judges.base import rendered
    from ..judges.labels import load_labels
    from ..runs import Run

    _, judged = judged_by(run_path, judge)
    run = Run(run_path)
    if policy is not None:
        judged = judged.filter(pl.col("policy") == run.resolve_policy(policy))
    _, gold = _gold_verdicts(run_path, labels, variant, workers=workers)
    gold = gold.filter(pl.col("label") == "impact")
    both = gold.select("policy", "case_id", "session_id", pl.col("losses").alias("gold")).join(
        judged.select("policy", "case_id", "label", "losses"), on=["policy", "case_id"]
    )
    both = both.filter(pl.col("label") != "unscored").sort(["case_id", "policy"])
    key = load_labels(labels).by_key()
    rows: list[dict[str, Any]] = []
    cut_of = dict(run.table("figures").select("case_id", "cut").unique().iter_rows())
    for r in both.iter_rows(named=True):
        case = key.get((r["session_id"], cut_of[r["case_id"]]))
        for loss in r["gold"] or ():
            if r["label"] == "impact" and _reported(loss["anchor"], r["losses"]):
                continue
            rows.append(
                {
                    "case_id": r["case_id"],
                    "labels_case": case.case if case else None,
                    "policy": r["policy"],
                    "judge_label": r["label"],
                    "category": loss["category"],
                    "dependency": loss["anchor"],
                    "source_object": loss["source_object"],
                    "need_seq": loss["need_seq"],
                    "need_text": None,
                    "why": loss["detail"],
                    "_session": r["session_id"],
                }
            )
    if rows:
        wanted = {(row["_session"], row["need_seq"]) for row in rows}
        texts: dict[tuple[str, int], str] = {}
        for sid, messages in run.corpus.iter_sessions(sorted({s for s, _ in wanted})):
            for m in messages:
                if (sid, m.seq) in wanted:
                    texts[(sid, m.seq)] = " ".join(rendered(m).split())[:preview]
        for row in rows:
            row["need_text"] = texts.get((row.pop("_session"), row["need_seq"]))
    return pl.DataFrame(rows, schema=MISSED_SCHEMA)


def render_missed(frame: pl.DataFrame, judge: str, max_rows: int = 50) -> str:
    """The missed dependencies as a list for a person to read."""
    if frame.height == 0:
        return f"no gold dependency missed by {judge}"
    lines = [
        f"{frame.height} gold-required dependencies missed by {judge} "
        f"({frame['case_id'].n_unique()} cases, {frame['policy'].n_unique()} policies)"
    ]
    for r in frame.head(max_rows).iter_rows(named=True):
        lines.append(
            f"{r['case_id']} ({r['labels_case']})  policy {r['policy']}  [{r['category']}]"
            f"  judge {r['judge_label']}"
        )
        lines.append(f"  removed: {r['dependency']!r}  from {r['source_object'] or '(no object)'}")
        lines.append(f"  needed by message {r['need_seq']}: {r['need_text'] or ''}")
    if frame.height > max_rows:
        lines.append(f"… {frame.height - max_rows} more (--max-rows)")
    return "\n".join(lines)
