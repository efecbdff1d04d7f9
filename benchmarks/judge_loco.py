"""Leave-one-corpus-out (LOCO) measurement of a judge against gold dependency labels (issue 29).

A judge is only as good as its agreement with labels on real traces, and a figure measured on
the corpora its thresholds were tuned on overstates it. This harness runs the whole protocol
and prints the only figure that counts — each corpus scored by the judge spec chosen *without*
it — beside the in-sample figure (the spec chosen on every corpus), so the gap between the two
is the overfitting:

1. **import** the six labelled corpora (gold-dev: tau-bench, tau2-bench, swe-agent, openhands;
   gold-long: claude-code, codex-cli) into one corpus;
2. **cut** exactly the labelled cases (``ctxreplay cases --cuts`` on the merged labels'
   ``cases.jsonl``: each case's future ends where its labels' ``future_seqs`` end, 8 visible
   messages for gold-dev and 10 for gold-long; checked here against the labels);
3. **replay** the standard policy set (``DEMO_POLICIES``) and the budget grid (every family
   taking ``target=`` at 0.1–0.5, plus a few ``keep=`` points) into one run;
4. **judge** with the gold ``deps`` judge (strict, whitespace, recovery) and each ``--judge``;
5. build the **per-view table** (``views.parquet``: one row per view and policy set);
6. **select** per held-out corpus the judge spec with the best mean kappa over the other
   corpora (strict gold, both sets pooled; ties → the spec given first), score it on the
   held-out corpus, and **print** the confusion, sensitivity, specificity and kappa per corpus,
   per policy set and per gold variant, with the pooled row, the in-sample figures, verdicts/s
   and whether the issue's targets are met.

Every stage is kept in ``--out`` and reused by a re-run: the import, the cases and the run are
redone only when what they were made from changed (``engines.pipeline.Pipeline``), and replay
and judge skip the chunks and verdicts they already have.

    python benchmarks/judge_loco.py [--out DIR] [--judge SPEC ...] [--grid GRID ...]
                                    [--quick] [--workers N]

``--quick`` runs the same protocol on the small labelled fixture of ``tests/fixtures/loco``
(three fixture corpora, two labels sets) with a small policy set, in seconds.

The scoring and selection functions (``score_views``, ``loco_select``, ``in_sample_select``,
``loco_scores``, …) work on the per-view table alone and can be imported from another script.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
from _shared import ROOT, SHARED

from ctxreplay.datasets.cases import cut_corpus, read_cases
from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.store import Corpus
from ctxreplay.engines.calibrate import Rates, compare
from ctxreplay.engines.judge import run_judge
from ctxreplay.engines.pipeline import DEMO_POLICIES, Pipeline, PipelineConfig, Stage
from ctxreplay.engines.pipeline import _files_state as files_state
from ctxreplay.engines.replay import run_replay
from ctxreplay.engines.sweep import gold_specs, parse_grid
from ctxreplay.errors import CtxreplayError
from ctxreplay.files import atomic_write_text, file_fingerprint
from ctxreplay.judges.base import DEFAULT_JUDGE, make_judge
from ctxreplay.judges.labels import VARIANTS, LabelSet, load_labels
from ctxreplay.policies.base import make_policy, policies
from ctxreplay.registry import describe_params
from ctxreplay.runs import Run, read_verdicts

FIXTURE = ROOT / "tests" / "fixtures" / "loco"

#: the corpora of each labels set, as folders of ``SHARED/corpora``
LABEL_SETS: dict[str, tuple[str, ...]] = {
    "gold-dev": ("tau-bench", "tau2-bench", "swe-agent", "openhands"),
    "gold-long": ("claude-code", "codex-cli"),
}
TARGETS = (0.1, 0.2, 0.3, 0.4, 0.5)
#: the budget grid's points beyond ``target=``: the short recency windows
KEEP_POINTS = (
    "tool-prune:keep=1",
    "tool-prune:keep=2",
    "observation-masking:keep=1",
    "observation-masking:keep=2",
    *(f"prune-summarise:keep={k}" for k in range(1, 5)),
)
#: the fixture's policy sets (``--quick``): one policy is in both sets, as it may be in the real
#: ones, and one folds behind a pointer so the recovery variant differs
QUICK_SETS: dict[str, tuple[str, ...]] = {
    "standard": ("noop", "tool-prune:keep=1"),
    "grid": ("tool-prune:keep=1", "oldest-turn:mode=fold"),
}
SET_NAMES = ("standard", "grid")
BOTH = "both"  # the two sets pooled, each view once
OVERALL = "overall"  # every corpus pooled
GOLD = {v: f"gold_{v}" for v in VARIANTS}  # variant → its column in the per-view table
#: the suffix of a judge's column of labels that count a recoverable loss as no loss
AT_RECOVERY = "@recovery"

#: the issue's targets, on strict gold
TARGET_SENSITIVITY = 0.90
TARGET_SPECIFICITY = 0.85
TARGET_KAPPA = 0.75
TARGET_ABSTENTION = 0.10


class LocoError(CtxreplayError, ValueError):
    """The protocol cannot run as asked (bad spec, labels that do not fit the corpus)."""


# --- the policy sets --------------------------------------------------------------------------


def target_families() -> list[str]:
    """Every registered policy family with a ``target=`` parameter (the shared budget)."""
    return sorted(
        name
        for name in policies.names()
        if "target" in {p.name for p in describe_params(policies.get(name).Params)}
    )


def budget_grid() -> tuple[str, ...]:
    """Every family taking ``target=`` at each of ``TARGETS``, then ``KEEP_POINTS``."""
    return (
        *(f"{family}:target={t}" for family in target_families() for t in TARGETS),
        *KEEP_POINTS,
    )


def real_sets() -> dict[str, tuple[str, ...]]:
    return {"standard": DEMO_POLICIES, "grid": budget_grid()}


def policy_labels(sets: Mapping[str, Sequence[str]]) -> tuple[dict[str, str], list[str]]:
    """Every spec of the sets parsed before any work: (spec → its label, the problems)."""
    labels: dict[str, str] = {}
    problems: list[str] = []
    for spec in dict.fromkeys(s for specs in sets.values() for s in specs):
        try:
            labels[spec] = make_policy(spec).label
        except (ValueError, TypeError, CtxreplayError) as e:
            problems.append(f"policy {spec}: {e}")
    return labels, problems


def membership(sets: Mapping[str, Sequence[str]], label_of: Mapping[str, str]) -> pl.DataFrame:
    """(policy label, set): a policy in both sets has a row in each."""
    rows = [
        {"policy": label_of[spec], "set": name}
        for name, specs in sets.items()
        for spec in dict.fromkeys(specs)
    ]
    return pl.DataFrame(rows, schema={"policy": pl.String, "set": pl.String}).unique(
        maintain_order=True
    )


# --- the judge specs --------------------------------------------------------------------------


def judge_specs(judges: Sequence[str], grids: Sequence[str]) -> list[str]:
    """The candidate judge specs: each ``--judge``, then each ``--grid`` point (the sweep's grid
    syntax, ``family:param=a,b;other=lo..hi``; as in the sweep, the family's defaults are a
    point), the same label kept once, in the order given (ties in the selection go to the
    first)."""
    specs = list(judges)
    for text in grids:
        g = parse_grid(text)
        specs.append(g.family)
        names = [p for p, _ in g.params]
        for combo in itertools.product(*(v for _, v in g.params)) if g.params else ():
            values = zip(names, combo, strict=True)
            specs.append(g.family + ":" + ",".join(f"{k}={v}" for k, v in values))
    return specs or [DEFAULT_JUDGE]


def judge_labels(specs: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """Every judge spec parsed before any work: (label → spec, kept once per label; problems)."""
    out: dict[str, str] = {}
    problems: list[str] = []
    for spec in specs:
        try:
            label = make_judge(spec).label
        except (ValueError, TypeError, CtxreplayError) as e:
            problems.append(f"judge {spec}: {e}")
            continue
        if label.startswith("deps:") or label.startswith("gold_"):
            problems.append(f"judge {spec}: the gold labels are not a candidate judge")
            continue
        out.setdefault(label, spec)
    return out, problems


# --- stages -----------------------------------------------------------------------------------


@dataclass
class Protocol:
    """What one measurement is made of: the corpora, the labels sets, the policy sets, the
    candidate judges, and where every stage is kept."""

    out: Path
    sources: list[Path]  # trace folders or files, imported into one corpus
    label_dirs: list[Path]  # labels sets (cases.jsonl + dependencies.jsonl), merged
    sets: dict[str, tuple[str, ...]]
    judges: dict[str, str]  # label → spec, in the order given
    workers: int = 2
    progress: bool = True
    timings: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def corpus(self) -> Path:
        return self.out / "corpus"

    @property
    def labels(self) -> Path:
        return self.out / "labels"

    @property
    def cases(self) -> Path:
        return self.out / "cases.parquet"

    @property
    def run(self) -> Path:
        return self.out / "run"


def merge_labels(dirs: Sequence[Path], out: Path) -> LabelSet:
    """One labels folder holding every set: both files concatenated (case names must differ),
    rewritten only when the content changes, so its fingerprint says when the labels did."""
    cases: list[str] = []
    deps: list[str] = []
    for d in dirs:
        load_labels(d)  # each set is checked on its own, naming its own file and line
        cases += [x for x in (d / "cases.jsonl").read_text().splitlines() if x.strip()]
        deps += [x for x in (d / "dependencies.jsonl").read_text().splitlines() if x.strip()]
    out.mkdir(parents=True, exist_ok=True)
    for name, lines in (("cases.jsonl", cases), ("dependencies.jsonl", deps)):
        text = "".join(line + "\n" for line in lines)
        path = out / name
        if not path.is_file() or path.read_text() != text:
            atomic_write_text(path, text)
    return load_labels(out)  # a case name given twice across sets fails here


def check_cases(corpus: Corpus, cases: pl.DataFrame, labels: LabelSet) -> list[str]:
    """Each labelled case cut once, its prefix the labelled prefix and its future exactly the
    labelled horizon (``future_seqs``): what the labels cover and no more."""
    rows = {(r["session_id"], r["cut"]): r for r in cases.iter_rows(named=True)}
    visible = {
        sid: [m.seq for m in messages if m.visible]
        for sid, messages in corpus.iter_sessions(sorted({c.session_id for c in labels.cases}))
    }
    problems: list[str] = []
    for c in labels.cases:
        row = rows.get((c.session_id, c.cut))
        if row is None:
            problems.append(f"{c.case}: session {c.session_id} cut {c.cut} was not cut")
            continue
        seqs = visible.get(c.session_id, [])
        future = [s for s in seqs if row["future_start"] <= s < row["future_end"]]
        if c.future_seqs and future != list(c.future_seqs):
            problems.append(
                f"{c.case}: future {future[:3]}…({len(future)}) is not the labelled "
                f"{list(c.future_seqs[:3])}…({len(c.future_seqs)})"
            )
        if c.prefix_seqs and row["prefix_messages"] != len(c.prefix_seqs):
            problems.append(
                f"{c.case}: prefix of {row['prefix_messages']} messages, labelled "
                f"{len(c.prefix_seqs)}"
            )
    if cases.height != len(labels.cases):
        problems.append(f"{cases.height} cases cut for {len(labels.cases)} labelled")
    return problems


def prepare(p: Protocol, echo: Callable[[str], None]) -> tuple[LabelSet, dict[str, str]]:
    """Import, cut and replay (each reused when made from the same inputs); returns the merged
    labels and policy spec → label."""
    label_of, problems = policy_labels(p.sets)
    if problems:
        raise LocoError("the policy sets do not parse:\n  " + "\n  ".join(problems))
    p.out.mkdir(parents=True, exist_ok=True)
    labels = merge_labels(p.label_dirs, p.labels)
    pipeline = Pipeline(PipelineConfig(out=p.out), echo)
    stage = Stage("corpus", p.corpus, {"sources": files_state([str(s) for s in p.sources])})
    if not pipeline.fresh(stage, p.cases, p.run):
        echo(import_paths(p.sources, p.corpus, progress=p.progress).render())
        pipeline.done(stage)
    corpus = Corpus(p.corpus)
    cuts = p.labels / "cases.jsonl"
    stage = Stage(
        "cases", p.cases, {"corpus": corpus.fingerprint(), "cuts": file_fingerprint(cuts)}
    )
    if not pipeline.fresh(stage, p.run):
        skipped: list[tuple[str, int]] = []
        frame, _ = cut_corpus(corpus, p.cases, cuts=cuts, skipped=skipped)
        echo(
            f"cases: {frame.height} from {frame['session_id'].n_unique()} sessions → {p.cases}"
            + (f" ({len(skipped)} labelled cuts of sessions not in the corpus)" if skipped else "")
        )
        pipeline.done(stage)
    cases, _ = read_cases(p.cases)
    problems = check_cases(corpus, cases, labels)
    if problems:
        raise LocoError("the cases do not fit the labels:\n  " + "\n  ".join(problems))
    horizons = sorted({len(c.future_seqs) for c in labels.cases})
    echo(f"cases: {cases.height}, each future its labelled horizon ({horizons} messages)")
    # the gold verdicts are kept under the labels' path, not their content: new labels, new run
    stage = Stage(
        "replay",
        p.run,
        {
            "corpus": corpus.fingerprint(),
            "cases": file_fingerprint(p.cases),
            "labels": file_fingerprint(p.labels / "dependencies.jsonl"),
        },
    )
    pipeline.fresh(stage)
    specs = list(dict.fromkeys(label_of.values()))  # a policy in both sets is replayed once
    summary = run_replay(p.corpus, p.cases, specs, p.run, workers=p.workers, progress=p.progress)
    pipeline.done(stage)
    echo(
        f"replay: {len(specs)} policies × {cases.height} cases "
        f"({summary.computed} chunk-policies computed, {summary.skipped} reused) "
        f"in {summary.seconds:.1f}s"
    )
    return labels, label_of


def judge_all(p: Protocol, labels_of_policies: Sequence[str], echo: Callable[[str], None]) -> None:
    """Every view judged by the three gold variants and every candidate judge (resumable).
    The time of each judge is kept in ``OUT/timings.json`` when it judged anything, so a re-run
    that judges nothing still says how fast each was."""
    path = p.out / "timings.json"
    saved: dict[str, dict[str, float]] = json.loads(path.read_text()) if path.is_file() else {}
    specs = [*gold_specs(p.labels).values(), *p.judges.values()]
    for spec in specs:
        summary = run_judge(
            p.run, spec, policies=list(labels_of_policies), workers=p.workers, progress=p.progress
        )
        if summary.judged:
            saved[summary.judge] = {"verdicts": summary.judged, "seconds": summary.seconds}
            echo(
                f"judge {summary.judge}: {summary.judged} verdicts in {summary.seconds:.1f}s "
                f"({summary.judged / max(summary.seconds, 1e-9):.0f}/s)"
            )
        else:
            echo(f"judge {summary.judge}: all {summary.skipped} verdicts already there")
    atomic_write_text(path, json.dumps(saved, indent=2, sort_keys=True) + "\n")
    p.timings = saved


# --- the per-view table -----------------------------------------------------------------------


def view_table(
    run: Path,
    labels: LabelSet,
    members: pl.DataFrame,
    judges: Sequence[str],
    gold: Mapping[str, str],
) -> pl.DataFrame:
    """One row per (case, policy, set): the labels' case name and corpus, the policy, its set,
    the gold label in each variant (``gold_strict``, …) and each judge's label (a column named
    by the judge's label). A policy in both sets has a row in each.

    A judge's verdict that is no-impact only through recovery (``recoverable`` > 0) is
    ``impact`` in its column, as strict no-impact is (no loss and no recovery), and
    ``no_impact`` in its ``<label>@recovery`` column, which the recovery variant of gold is
    compared with."""
    cases, _ = read_cases(Run(run).manifest["cases_path"])
    named = pl.DataFrame(
        [
            {"session_id": c.session_id, "cut": c.cut, "case": c.case, "corpus": c.corpus or ""}
            for c in labels.cases
        ]
    )
    frame = (
        cases.select("case_id", "session_id", "cut")
        .join(named, on=["session_id", "cut"], how="inner")
        .join(members, how="cross")
    )
    columns = {**{GOLD[v]: gold[v] for v in VARIANTS}, **{j: j for j in judges}}
    for column, label in columns.items():
        verdicts = read_verdicts(run, label, ["judge", "policy", "case_id", "label", "recoverable"])
        verdicts = verdicts.filter(pl.col("judge") == label)
        if column in judges:  # (gold's variants say themselves what recovery counts for)
            recovered = (pl.col("label") == "no_impact") & (pl.col("recoverable").fill_null(0) > 0)
            labels = [
                pl.when(recovered).then(pl.lit("impact")).otherwise(pl.col("label")).alias(column),
                pl.col("label").alias(f"{column}{AT_RECOVERY}"),
            ]
        else:
            labels = [pl.col("label").alias(column)]
        frame = frame.join(
            verdicts.select("policy", "case_id", *labels), on=["policy", "case_id"], how="left"
        )
    missing = frame.filter(pl.any_horizontal(pl.col(list(columns)).is_null()))
    if missing.height:
        row = missing.row(0, named=True)
        raise LocoError(
            f"{missing.height} views lack a verdict (e.g. {row['case_id']} {row['policy']}); "
            f"re-run to judge them"
        )
    return frame.select(
        "case", "corpus", "policy", "set", "case_id", "session_id", "cut", *columns,
        *(f"{j}{AT_RECOVERY}" for j in judges),
    ).sort("corpus", "case", "set", "policy")  # fmt: skip


# --- scoring ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Score:
    """A judge against gold on a set of views: impact is the positive class. Views the judge
    left unscored (or gold did) leave the confusion and are counted."""

    views: int
    unscored: int  # views the judge did not score (its abstentions)
    gold_unscored: int  # views gold did not score (labels that do not fit the prefix)
    rates: Rates
    kappa: float | None

    @property
    def sensitivity(self) -> float | None:
        return self.rates.sensitivity

    @property
    def specificity(self) -> float | None:
        return self.rates.specificity

    @property
    def abstention(self) -> float | None:
        return self.unscored / self.views if self.views else None

    def as_dict(self) -> dict[str, Any]:
        r = self.rates
        return {
            "views": self.views,
            "unscored": self.unscored,
            "gold_unscored": self.gold_unscored,
            "tp": r.tp,
            "fn": r.fn,
            "fp": r.fp,
            "tn": r.tn,
            "sensitivity": self.sensitivity,
            "specificity": self.specificity,
            "kappa": self.kappa,
            "abstention": self.abstention,
        }


def score_views(views: pl.DataFrame, judge: str, variant: str = "strict") -> Score:
    """Score the judge column ``judge`` of a per-view frame against gold ``variant``, each
    (case, policy) once (a policy in both sets counts once when the sets are pooled). The
    confusion and kappa are ``engines.calibrate.compare``'s, as ``ctxreplay calibrate`` gives
    them."""
    gold = GOLD[variant]
    frame = views.unique(["case_id", "policy"], keep="first", maintain_order=True)
    column = f"{judge}{AT_RECOVERY}" if variant == "recovery" else judge
    if column not in frame.columns:
        column = judge
    judged = frame.select("policy", "case_id", pl.col(column).alias("label"), losses=pl.lit(None))
    reference = frame.select("policy", "case_id", pl.col(gold).alias("label"))
    c = compare(judged, reference, judge, gold)
    return Score(
        frame.height,
        int((frame[judge] == "unscored").sum()),
        int((frame[gold] == "unscored").sum()),
        c.overall,
        c.kappa,
    )


def corpora_of(views: pl.DataFrame) -> list[str]:
    return sorted(set(views["corpus"].to_list()))


def criterion(views: pl.DataFrame, judge: str, corpora: Sequence[str]) -> float | None:
    """The selection criterion: the mean over ``corpora`` of the judge's kappa against strict
    gold, both policy sets pooled. A corpus whose kappa is undefined (one class on both sides)
    is left out of the mean; None when no corpus has one."""
    kappas = [score_views(views.filter(pl.col("corpus") == c), judge).kappa for c in corpora]
    defined = [k for k in kappas if k is not None]
    return sum(defined) / len(defined) if defined else None


@dataclass(frozen=True)
class Choice:
    """The judge spec chosen on some corpora, with every candidate's criterion there."""

    judge: str
    on: tuple[str, ...]  # the corpora it was chosen on
    criterion: float | None
    ranking: tuple[tuple[str, float | None], ...]


def choose(views: pl.DataFrame, judges: Sequence[str], corpora: Sequence[str]) -> Choice:
    """The candidate with the highest criterion on ``corpora``; ties (and a None for every
    candidate) go to the first given."""
    ranking = tuple((j, criterion(views, j, corpora)) for j in judges)
    best = ranking[0]
    for j, c in ranking[1:]:
        if c is not None and (best[1] is None or c > best[1]):
            best = (j, c)
    return Choice(best[0], tuple(corpora), best[1], ranking)


def loco_select(views: pl.DataFrame, judges: Sequence[str]) -> dict[str, Choice]:
    """Held-out corpus → the judge chosen on every other corpus (never on itself)."""
    corpora = corpora_of(views)
    return {held: choose(views, judges, [c for c in corpora if c != held]) for held in corpora}


def in_sample_select(views: pl.DataFrame, judges: Sequence[str]) -> Choice:
    """The judge chosen on every corpus: what a figure tuned on all the data reports."""
    return choose(views, judges, corpora_of(views))


def sets_of(views: pl.DataFrame) -> list[tuple[str, pl.DataFrame]]:
    """(name, views) of each policy set, then of the sets pooled (``both``)."""
    names = [s for s in SET_NAMES if s in set(views["set"].to_list())]
    names += sorted(set(views["set"].to_list()) - set(names))
    return [(s, views.filter(pl.col("set") == s)) for s in names] + [(BOTH, views)]


def loco_scores(
    views: pl.DataFrame, held_out: Mapping[str, Choice], in_sample: Choice
) -> pl.DataFrame:
    """Every figure: scope (``held_out``: each corpus by the judge chosen without it, and the
    corpora pooled, each view labelled by its own fold's choice; ``in_sample``: every corpus by
    the judge chosen on all), variant, set (``standard``, ``grid``, ``both``), corpus (or
    ``overall``), the judge that scored it, and the ``Score``'s fields."""
    pooled = views
    for suffix in ("", AT_RECOVERY):  # the strict labels, and those counting recovery
        # a corpus without a fold (none) keeps the in-sample choice
        by_fold = pl.col(f"{in_sample.judge}{suffix}")
        for corpus, choice in held_out.items():
            by_fold = (
                pl.when(pl.col("corpus") == corpus)
                .then(pl.col(f"{choice.judge}{suffix}"))
                .otherwise(by_fold)
            )
        if f"{in_sample.judge}{suffix}" in views.columns:
            pooled = pooled.with_columns(by_fold.alias(f"_held_out{suffix}"))
    rows: list[dict[str, Any]] = []
    for variant in VARIANTS:
        for set_name, frame in sets_of(pooled):
            for scope in ("held_out", "in_sample"):
                for corpus in corpora_of(views):
                    judge = held_out[corpus].judge if scope == "held_out" else in_sample.judge
                    s = score_views(frame.filter(pl.col("corpus") == corpus), judge, variant)
                    rows.append(_row(scope, variant, set_name, corpus, judge, s))
                judge = "_held_out" if scope == "held_out" else in_sample.judge
                shown = "(per fold)" if scope == "held_out" else in_sample.judge
                s = score_views(frame, judge, variant)
                rows.append(_row(scope, variant, set_name, OVERALL, shown, s))
    return pl.DataFrame(rows, infer_schema_length=None)


def _row(
    scope: str, variant: str, set_name: str, corpus: str, judge: str, s: Score
) -> dict[str, Any]:
    return {
        "scope": scope,
        "variant": variant,
        "set": set_name,
        "corpus": corpus,
        "judge": judge,
        **s.as_dict(),
    }


@dataclass(frozen=True)
class TargetCheck:
    """The issue's targets on strict gold, held out: each criterion, met or not, and where not."""

    criterion: str
    met: bool
    failing: tuple[str, ...]


def check_targets(scores: pl.DataFrame) -> list[TargetCheck]:
    """Sensitivity ≥ 0.90 and specificity ≥ 0.85 on every held-out corpus in each policy set,
    kappa ≥ 0.75 on the pooled row of each set (and both together), abstentions ≤ 10% on every
    corpus (both sets pooled). An undefined figure (no gold impact, say) does not fail."""
    held = scores.filter((pl.col("scope") == "held_out") & (pl.col("variant") == "strict"))
    per_corpus = held.filter((pl.col("corpus") != OVERALL) & (pl.col("set") != BOTH))
    out: list[TargetCheck] = []
    for column, floor in (("sensitivity", TARGET_SENSITIVITY), ("specificity", TARGET_SPECIFICITY)):
        bad = per_corpus.filter(pl.col(column) < floor)
        out.append(
            TargetCheck(
                f"{column} ≥ {floor:.2f} on every held-out corpus, each set",
                bad.height == 0,
                tuple(
                    f"{r['corpus']}/{r['set']} {r[column]:.3f}" for r in bad.iter_rows(named=True)
                ),
            )
        )
    overall = held.filter(pl.col("corpus") == OVERALL)
    bad = overall.filter(pl.col("kappa").is_null() | (pl.col("kappa") < TARGET_KAPPA))
    out.append(
        TargetCheck(
            f"kappa ≥ {TARGET_KAPPA:.2f} overall (pooled held-out, each set and both)",
            bad.height == 0,
            tuple(f"{r['set']} {_num(r['kappa'])}" for r in bad.iter_rows(named=True)),
        )
    )
    both = held.filter((pl.col("set") == BOTH) & (pl.col("corpus") != OVERALL))
    bad = both.filter(pl.col("abstention") > TARGET_ABSTENTION)
    out.append(
        TargetCheck(
            f"abstentions ≤ {TARGET_ABSTENTION:.0%} on every corpus",
            bad.height == 0,
            tuple(f"{r['corpus']} {r['abstention']:.1%}" for r in bad.iter_rows(named=True)),
        )
    )
    return out


# --- rendering --------------------------------------------------------------------------------


def _num(x: float | None, width: int = 5) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—".rjust(width)
    return f"{x:.3f}".rjust(width)


def render_scores(scores: pl.DataFrame, show_judge: bool = False) -> str:
    """Per gold variant, one table: each corpus and the pooled row, per policy set; the
    held-out confusion, abstentions and figures, the in-sample figures beside them and the
    kappa gap (held out − in-sample: the overfitting); ``show_judge``: the judge that scored
    each held-out row (when there were several candidates)."""
    held = scores.filter(pl.col("scope") == "held_out")
    ins = {
        (r["variant"], r["set"], r["corpus"]): r
        for r in scores.filter(pl.col("scope") == "in_sample").iter_rows(named=True)
    }
    width = max(12, *(len(c) for c in held["corpus"].to_list()))
    head = (
        f"  {'corpus':<{width}} {'set':<8} {'views':>5} {'tp':>4} {'fn':>4} {'fp':>4} {'tn':>5}"
        f" {'unsc':>4} {'abst':>5}  {'sens':>5} {'spec':>5} {'kappa':>6}  │ in-sample"
        f" {'sens':>5} {'spec':>5} {'kappa':>6}  {'Δkappa':>6}" + ("  judge" if show_judge else "")
    )
    parts: list[str] = []
    for variant in VARIANTS:
        lines = [f"=== gold {variant}: held out (each corpus by the judge chosen without it) ==="]
        lines.append(head)
        frame = held.filter(pl.col("variant") == variant)
        last = None
        for r in frame.iter_rows(named=True):
            if last is not None and r["set"] != last:
                lines.append("")
            last = r["set"]
            i = ins[(variant, r["set"], r["corpus"])]
            gap = (
                r["kappa"] - i["kappa"]
                if r["kappa"] is not None and i["kappa"] is not None
                else None
            )
            abst = f"{r['abstention']:.1%}" if r["abstention"] is not None else "—"
            lines.append(
                f"  {r['corpus']:<{width}} {r['set']:<8} {r['views']:>5} {r['tp']:>4} {r['fn']:>4}"
                f" {r['fp']:>4} {r['tn']:>5} {r['unscored']:>4} {abst:>5}  "
                f"{_num(r['sensitivity'])} {_num(r['specificity'])} {_num(r['kappa'], 6)}  │"
                f" {'':9} {_num(i['sensitivity'])} {_num(i['specificity'])} "
                f"{_num(i['kappa'], 6)}  "
                + (f"{gap:+.3f}" if gap is not None else "—").rjust(6)
                + (f"  {r['judge']}" if show_judge else "")
            )
        parts.append("\n".join(lines))
    gold_unscored = scores.filter(
        (pl.col("scope") == "held_out") & (pl.col("set") == BOTH) & (pl.col("corpus") == OVERALL)
    )
    for r in gold_unscored.filter(pl.col("gold_unscored") > 0).iter_rows(named=True):
        parts.append(
            f"note: gold ({r['variant']}) left {r['gold_unscored']} views unscored (labels that "
            "do not fit the prefix); they are out of every confusion"
        )
    return "\n\n".join(parts)


def render_choices(held_out: Mapping[str, Choice], in_sample: Choice) -> str:
    lines = ["judge chosen per fold (criterion: mean kappa over the other corpora, strict gold,"]
    lines.append("both sets pooled; ties → the first given)")
    for corpus, c in held_out.items():
        lines.append(f"  held out {corpus:<14} → {c.judge}  (criterion {_num(c.criterion)})")
    lines.append(
        f"  in-sample (all corpora) → {in_sample.judge}  (criterion {_num(in_sample.criterion)})"
    )
    if len(in_sample.ranking) > 1:
        lines.append(
            "  in-sample ranking: " + ", ".join(f"{j} {_num(k)}" for j, k in in_sample.ranking)
        )
    return "\n".join(lines)


def render_targets(checks: Iterable[TargetCheck]) -> str:
    lines = ["targets (issue 29; strict gold, held out):"]
    for c in checks:
        lines.append(f"  [{'met' if c.met else 'NOT met'}] {c.criterion}")
        if c.failing:
            lines.append("      failing: " + "; ".join(c.failing))
    return "\n".join(lines)


def render_speed(timings: Mapping[str, Mapping[str, float]], judges: Iterable[str]) -> str:
    lines = ["judge speed (verdicts/s, from the run that judged them):"]
    for label in judges:
        t = timings.get(label)
        if t:
            rate = t["verdicts"] / max(t["seconds"], 1e-9)
            lines.append(
                f"  {label}: {int(t['verdicts'])} verdicts in {t['seconds']:.1f}s → {rate:.1f}/s"
            )
        else:
            lines.append(f"  {label}: not timed (judged before timings were kept)")
    return "\n".join(lines)


# --- the protocol -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    views: pl.DataFrame
    scores: pl.DataFrame
    held_out: dict[str, Choice]
    in_sample: Choice
    targets: list[TargetCheck]


def measure(p: Protocol, echo: Callable[[str], None] = print) -> Result:
    """Run every stage (reusing what is done), write ``views.parquet`` and ``scores.parquet``
    in ``p.out``, and print the tables."""
    labels, label_of = prepare(p, echo)
    members = membership(p.sets, label_of)
    policy_list = list(dict.fromkeys(members["policy"].to_list()))
    judge_all(p, policy_list, echo)
    gold = {v: make_judge(s).label for v, s in gold_specs(p.labels).items()}
    judges = list(p.judges)
    views = view_table(p.run, labels, members, judges, gold)
    views.write_parquet(p.out / "views.parquet")
    held_out = loco_select(views, judges)
    in_sample = in_sample_select(views, judges)
    scores = loco_scores(views, held_out, in_sample)
    scores.write_parquet(p.out / "scores.parquet")
    targets = check_targets(scores)
    per_set = ", ".join(
        f"{s} {views.filter(pl.col('set') == s)['policy'].n_unique()} policies "
        f"({views.filter(pl.col('set') == s).height} views)"
        for s in SET_NAMES
    )
    echo("")
    echo(
        f"{views['case'].n_unique()} cases of {len(corpora_of(views))} corpora; {per_set}; "
        f"per-view table {p.out / 'views.parquet'}"
    )
    echo("")
    echo(render_scores(scores, show_judge=len(judges) > 1))
    echo("")
    echo(render_choices(held_out, in_sample))
    echo("")
    echo(render_speed(p.timings, [*gold.values(), *judges]))
    echo("")
    echo(render_targets(targets))
    return Result(views, scores, held_out, in_sample, targets)


def real_protocol(out: Path, judges: dict[str, str], workers: int, progress: bool) -> Protocol:
    sources = [SHARED / "corpora" / c for cs in LABEL_SETS.values() for c in cs]
    label_dirs = [SHARED / name for name in LABEL_SETS]
    missing = [str(x) for x in (*sources, *label_dirs) if not x.exists()]
    if missing:
        raise LocoError(f"not found: {', '.join(missing)}")
    return Protocol(out, sources, label_dirs, real_sets(), judges, workers, progress)


def quick_protocol(out: Path, judges: dict[str, str], workers: int, progress: bool) -> Protocol:
    """The fixture: three small corpora (``FIXTURE/corpora/*``) and two labels sets."""
    sources = sorted(p for p in (FIXTURE / "corpora").iterdir() if p.is_dir())
    label_dirs = sorted(p for p in FIXTURE.glob("labels-*") if p.is_dir())
    return Protocol(out, sources, label_dirs, dict(QUICK_SETS), judges, workers, progress)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Leave-one-corpus-out measurement of a judge against the gold dependency "
        "labels of gold-dev and gold-long (issue 29)."
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="work folder, reused by a re-run "
        "(default /tmp/judge-loco, or /tmp/judge-loco-quick with --quick)",
    )
    parser.add_argument(
        "--judge",
        action="append",
        default=[],
        metavar="SPEC",
        help="a candidate judge spec (repeatable; default: flow)",
    )
    parser.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="GRID",
        help="candidate judge specs as a sweep grid, e.g. "
        "'flow:threshold=0.5,0.7;min_copy=20,40' (the family's defaults too)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="the small labelled fixture of tests/fixtures/loco (seconds)",
    )
    parser.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    judges, problems = judge_labels(judge_specs(args.judge, args.grid))
    if problems:
        print("error: " + "; ".join(problems), file=sys.stderr)
        return 2
    out = args.out or Path("/tmp/judge-loco-quick" if args.quick else "/tmp/judge-loco")
    make = quick_protocol if args.quick else real_protocol
    started = time.perf_counter()
    try:
        p = make(out, judges, max(1, args.workers), not args.quiet)
        result = measure(p)
    except (CtxreplayError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    met = sum(t.met for t in result.targets)
    print(
        f"\ndone in {time.perf_counter() - started:.1f}s ({met}/{len(result.targets)} targets met);"
        f" tables in {out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
