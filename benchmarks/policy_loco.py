"""Leave-one-corpus-out (LOCO) measurement of the ``working-set`` policy against gold labels,
and its frontier beside every other policy family (issue 30).

A policy whose need model is fitted on labelled traces is only as good as it is on traces it
was not fitted on. This harness runs the whole protocol on the six labelled corpora (gold-dev's
tau-bench, tau2-bench, swe-agent, openhands; gold-long's claude-code, codex-cli):

1. **import, cut, replay, judge** exactly as ``judge_loco.py`` does (its stages are reused):
   every family taking ``target=`` at 0.1–0.5 plus the short recency windows, judged by the gold
   ``deps`` judge (strict, whitespace, recovery);
2. **candidates**: every result ``working-set`` could remove in every labelled case, with the
   need model's features (``ctxreplay.policies.working_set.features``) and whether the result
   holds a required dependency's text found nowhere else in the prefix;
3. **fit**, per held-out corpus, the need model's weights on the other five corpora (a logistic
   regression, statsmodels ``Logit``, L1-penalised with ``--alpha``), and once on all six (the
   shipped defaults: ``--fit`` prints them as the policy's ``Params``);
4. **replay** ``working-set`` with each fold's weights at every target, **judge** it with gold,
   and keep for each corpus only the views of the weights fitted without it;
5. **print** the held-out frontier (editable pruning, strict and recovery gold no-impact) per
   labels set and per corpus beside every other family's points, whether any other family's
   point prunes at least as much at no lower strict no-impact, the paired McNemar tests against
   each heuristic at the same target (exact binomial on the discordant cases), and the issue's
   targets.

Every stage is kept in ``--out`` and reused by a re-run.

    python benchmarks/policy_loco.py [--out DIR] [--alpha A] [--fit] [--base PARAMS] [--quick]
                                     [--workers N]

``--quick`` runs the same protocol on the small labelled fixture of ``tests/fixtures/loco``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import judge_loco as jl
import numpy as np
import polars as pl
from _shared import SHARED
from statsmodels.discrete.discrete_model import Logit
from statsmodels.stats.contingency_tables import mcnemar

from ctxreplay.datasets.cases import read_cases
from ctxreplay.datasets.store import Corpus
from ctxreplay.datasets.tokenizer import get_tokenizer
from ctxreplay.engines.replay import prefix_context
from ctxreplay.engines.sweep import gold_specs
from ctxreplay.errors import CtxreplayError
from ctxreplay.judges.base import make_judge, rendered
from ctxreplay.judges.labels import LabelSet
from ctxreplay.policies.base import make_policy
from ctxreplay.policies.working_set import FEATURES, WorkingSet, features
from ctxreplay.runs import Run

FAMILY = "working-set"
#: the heuristics the issue names (their curves must lie below ours)
HEURISTICS = (
    "oldest-turn",
    "tool-prune",
    "tool-mask+prune",
    "observation-masking",
    "hybrid",
    "clear-tool-uses",
    "prune-summarise",
)
RECENCY = "tool-prune"
TARGETS = jl.TARGETS
#: our own rule's points: no target, every result predicted below the need removed
THRESHOLDS = (0.02, 0.03, 0.04, 0.05, 0.06)
#: the weights of the need model: the intercept, then one per feature (``Params`` names)
WEIGHTS = ("bias", *(f"w_{f}" for f in FEATURES))
#: a labels set → its corpora, and each group the frontier is printed for
GROUPS: dict[str, tuple[str, ...]] = {name: cs for name, cs in jl.LABEL_SETS.items()}
#: the issue's target on gold-long, held out
TARGET_STRICT = 0.90
TARGET_PRUNING = 0.40
QUICK_GROUPS = {"labels-a": ("build", "shop"), "labels-b": ("air",)}
QUICK_HEURISTICS = ("tool-prune", "oldest-turn")
#: on the fixture every result is a few tokens: nothing would free ``min_saving``
QUICK_BASE = "min_saving=0,prune_below=1.0"


class PolicyLocoError(CtxreplayError, ValueError):
    """The protocol cannot run as asked."""


# --- candidates and their labels --------------------------------------------------------------


def candidate_rows(corpus: Corpus, cases_path: Path, labels: LabelSet, base: str) -> pl.DataFrame:
    """One row per (labelled case, result ``working-set`` could remove): its corpus, the
    features, and ``needed``: the result holds a required dependency's text that no other
    message of the prefix holds (removing it alone loses the dependency)."""
    cases, _ = read_cases(cases_path)
    named = {(c.session_id, c.cut): c for c in labels.cases}
    policy = WorkingSet(_params(base))
    count = get_tokenizer().count
    rows: list[dict[str, Any]] = []
    by_session: dict[str, list[dict[str, Any]]] = {}
    for row in cases.iter_rows(named=True):
        by_session.setdefault(row["session_id"], []).append(row)
    for sid, messages in corpus.iter_sessions(sorted(by_session)):
        for row in by_session[sid]:
            case = named.get((sid, row["cut"]))
            if case is None:
                continue
            ctx, _ = prefix_context(row, messages, count, {})
            texts = [rendered(m) for m in ctx.messages]
            required = [
                d.text for d in labels.dependencies.get(case.case, ()) if d.necessity == "required"
            ]
            candidates = [c.obj for c in policy.candidates(ctx)]
            x = features(ctx, candidates)
            for f in candidates:
                body = texts[f.result_index]
                others = "\n".join(t for i, t in enumerate(texts) if i != f.result_index)
                needed = any(t in body and t not in others for t in required)
                rows.append(
                    {"corpus": case.corpus or "", "case": case.case, "object": f.id,
                     "needed": needed, **dict(zip(FEATURES, x[f.id], strict=True))}
                )  # fmt: skip
    schema = {"corpus": pl.String, "case": pl.String, "object": pl.String, "needed": pl.Boolean}
    return pl.DataFrame(rows, schema={**schema, **dict.fromkeys(FEATURES, pl.Float64)})


def _params(base: str) -> WorkingSet.Params:
    return WorkingSet(None).params if not base else _spec_policy(base).params


def _spec_policy(params: str) -> WorkingSet:
    policy = make_policy(f"{FAMILY}:{params}" if params else FAMILY)
    assert isinstance(policy, WorkingSet)
    return policy


@dataclass(frozen=True)
class Fit:
    """The need model's weights fitted on some corpora (``WEIGHTS`` → value), or the policy's
    defaults when those corpora cannot fit one (``why`` says so)."""

    on: tuple[str, ...]
    weights: dict[str, float]
    rows: int
    positives: int
    why: str | None = None


def fit(rows: pl.DataFrame, on: Sequence[str], alpha: float) -> Fit:
    """Logistic regression of ``needed`` on ``FEATURES`` over the rows of ``on``."""
    train = rows.filter(pl.col("corpus").is_in(list(on)))
    y = train["needed"].cast(pl.Int64).to_numpy()
    positives = int(y.sum())
    defaults = {
        f.name: float(getattr(WorkingSet(None).params, f.name))
        for f in fields(WorkingSet.Params)
        if f.name in WEIGHTS
    }
    if positives == 0 or positives == len(y):
        why = f"{positives} of {len(y)} results needed: no model to fit; the defaults kept"
        return Fit(tuple(on), defaults, len(y), positives, why)
    x = np.column_stack([np.ones(len(y)), *(train[f].to_numpy() for f in FEATURES)])
    model = Logit(y, x).fit_regularized(alpha=alpha, disp=0)
    weights = {name: round(float(w), 3) for name, w in zip(WEIGHTS, model.params, strict=True)}
    return Fit(tuple(on), weights, len(y), positives)


def spec_of(weights: Mapping[str, float], knob: str, base: str) -> str:
    """``knob``: ``target=0.3`` (the shared budget) or ``remove_below=0.03`` (the own rule)."""
    params = [knob, *(f"{k}={v}" for k, v in weights.items())]
    return f"{FAMILY}:" + ",".join(([base] if base else []) + params)


# --- the protocol -----------------------------------------------------------------------------


@dataclass
class Setup:
    protocol: jl.Protocol
    groups: dict[str, tuple[str, ...]]
    others: tuple[str, ...]  # the other policies' specs (every family's budget grid)
    heuristics: tuple[str, ...]
    base: str  # parameters every working-set spec carries
    alpha: float


@dataclass(frozen=True)
class Result:
    views: pl.DataFrame  # one row per (case, policy): corpus, family, target, gold labels
    frontier: pl.DataFrame
    fits: dict[str, Fit]
    tests: pl.DataFrame
    met: bool


def family_of(label: str) -> str:
    return label.split(":", 1)[0]


def param_of(label: str, name: str) -> float | None:
    for item in label.partition(":")[2].split(","):
        key, _, value = item.partition("=")
        if key == name:
            return float(value)
    return None


def target_of(label: str) -> float | None:
    return param_of(label, "target")


def knob_of(label: str) -> str:
    """How one of our points spends: ``target=0.3`` or ``remove_below=0.03``."""
    t = target_of(label)
    if t is not None:
        return f"target={t}"
    below = param_of(label, "remove_below")  # a label leaves out a value equal to the default
    return f"remove_below={WorkingSet(None).params.remove_below if below is None else below}"


def measure(s: Setup, echo: Callable[[str], None] = print) -> Result:
    p = s.protocol
    p.sets = {"others": s.others}
    labels, label_of = jl.prepare(p, echo)
    corpus = Corpus(p.corpus)
    rows = candidate_rows(corpus, p.cases, labels, s.base)
    rows.write_parquet(p.out / "candidates.parquet")
    corpora = sorted(set(rows["corpus"].to_list()) | {c for cs in s.groups.values() for c in cs})
    fits = {held: fit(rows, [c for c in corpora if c != held], s.alpha) for held in corpora}
    fits["all"] = fit(rows, corpora, s.alpha)
    knobs = [f"target={t}" for t in TARGETS] + [f"remove_below={b}" for b in THRESHOLDS]
    ours = {(held, k): spec_of(f.weights, k, s.base) for held, f in fits.items() for k in knobs}
    p.sets = {"others": s.others, FAMILY: tuple(dict.fromkeys(ours.values()))}
    labels, label_of = jl.prepare(p, echo)
    members = jl.membership(p.sets, label_of)
    jl.judge_all(p, list(dict.fromkeys(members["policy"].to_list())), echo)
    gold = {v: make_judge(spec).label for v, spec in gold_specs(p.labels).items()}
    views = jl.view_table(p.run, labels, members, [], gold)
    figures = Run(p.run).table("figures").select("case_id", "policy", "editable_pruning")
    views = views.join(figures, on=["case_id", "policy"], how="left")
    # each corpus keeps the views of the weights fitted without it; the others' as they are
    # (two folds may fit the same weights: a label can stand for several held-out corpora)
    held = pl.DataFrame(
        [{"policy": label_of[spec], "corpus": h} for (h, _), spec in ours.items() if h != "all"],
        schema={"policy": pl.String, "corpus": pl.String},
    ).unique()
    views = views.with_columns(
        family=pl.col("policy").map_elements(family_of, return_dtype=pl.String),
        target=pl.col("policy").map_elements(target_of, return_dtype=pl.Float64),
    )
    views = pl.concat(
        [
            views.filter(pl.col("family") != FAMILY),
            views.filter(pl.col("family") == FAMILY).join(held, on=["policy", "corpus"]),
        ]
    ).unique(["case_id", "policy"], keep="first", maintain_order=True)
    # our point is one across the folds: each corpus scored by the weights fitted without it
    views = views.with_columns(
        point=pl.when(pl.col("family") == FAMILY)
        .then(
            pl.format(
                "{}:{} (LOCO)",
                pl.lit(FAMILY),
                pl.col("policy").map_elements(knob_of, return_dtype=pl.String),
            )
        )
        .otherwise(pl.col("policy"))
    )
    views.write_parquet(p.out / "policy_views.parquet")
    frontier = frontier_table(views, s.groups)
    frontier.write_parquet(p.out / "frontier.parquet")
    tests = paired_tests(views, s.groups, s.heuristics)
    met = report(frontier, tests, fits, s, echo)
    return Result(views, frontier, fits, tests, met)


# --- tables -----------------------------------------------------------------------------------


def _scope(
    views: pl.DataFrame, groups: Mapping[str, Sequence[str]]
) -> list[tuple[str, pl.DataFrame]]:
    scopes = [(g, views.filter(pl.col("corpus").is_in(list(cs)))) for g, cs in groups.items()]
    corpora = sorted(set(views["corpus"].to_list()))
    return scopes + [(c, views.filter(pl.col("corpus") == c)) for c in corpora]


def frontier_table(views: pl.DataFrame, groups: Mapping[str, Sequence[str]]) -> pl.DataFrame:
    """Per scope (each labels set, each corpus) and policy point: cases, mean editable pruning,
    strict and recovery gold no-impact (views gold left unscored are left out)."""
    frames = []
    for scope, frame in _scope(views, groups):
        scored = frame.filter(pl.col("gold_strict") != "unscored")
        frames.append(
            scored.group_by("family", "target", "point")
            .agg(
                cases=pl.len(),
                editable_pruning=pl.col("editable_pruning").mean(),
                strict=(pl.col("gold_strict") == "no_impact").mean(),
                recovery=(pl.col("gold_recovery") == "no_impact").mean(),
            )
            .with_columns(scope=pl.lit(scope))
        )
    return (
        pl.concat(frames)
        .select("scope", "family", "target", "point", "cases", "editable_pruning", "strict",
                "recovery")
        .sort("scope", "family", "target", nulls_last=True)
    )  # fmt: skip


def paired_tests(
    views: pl.DataFrame, groups: Mapping[str, Sequence[str]], heuristics: Sequence[str]
) -> pl.DataFrame:
    """``working-set`` against each heuristic at the same target, case by case on strict gold:
    ``ours_only`` cases only ours keeps whole, ``theirs_only`` the reverse, McNemar's exact
    p-value."""
    out = []
    for scope, frame in _scope(views, groups):
        ok = frame.filter(
            (pl.col("gold_strict") != "unscored") & pl.col("target").is_not_null()
        ).with_columns(ok=pl.col("gold_strict") == "no_impact")
        ours = ok.filter(pl.col("family") == FAMILY)
        for h in heuristics:
            theirs = ok.filter(pl.col("family") == h)
            for t in TARGETS:
                a = ours.filter(pl.col("target") == t).select("case", ours_ok="ok")
                b = theirs.filter(pl.col("target") == t).select("case", theirs_ok="ok")
                pair = a.join(b, on="case", how="inner")
                if pair.height == 0:
                    continue
                yes = int((pair["ours_ok"] & ~pair["theirs_ok"]).sum())
                no = int((~pair["ours_ok"] & pair["theirs_ok"]).sum())
                both = int((pair["ours_ok"] & pair["theirs_ok"]).sum())
                neither = pair.height - yes - no - both
                test = mcnemar([[both, yes], [no, neither]], exact=True)
                out.append(
                    {"scope": scope, "heuristic": h, "target": t, "cases": pair.height,
                     "ours_only": yes, "theirs_only": no, "p_value": float(test.pvalue)}
                )  # fmt: skip
    schema = {"scope": pl.String, "heuristic": pl.String, "target": pl.Float64,
              "cases": pl.Int64, "ours_only": pl.Int64, "theirs_only": pl.Int64,
              "p_value": pl.Float64}  # fmt: skip
    return pl.DataFrame(out, schema=schema)


def dominated_by(
    frontier: pl.DataFrame, scope: str, heuristics: Sequence[str]
) -> dict[str, list[str]]:
    """Each of our points → the other families' points that prune at least as much with at
    least as high strict no-impact (better or equal on both axes)."""
    here = frontier.filter(pl.col("scope") == scope)
    ours = here.filter(pl.col("family") == FAMILY)
    others = here.filter(pl.col("family").is_in(list(heuristics)))
    out: dict[str, list[str]] = {}
    for row in ours.iter_rows(named=True):
        beaten = others.filter(
            (pl.col("editable_pruning") >= row["editable_pruning"])
            & (pl.col("strict") >= row["strict"])
        )
        out[row["point"]] = beaten["point"].to_list()
    return out


def _pct(x: float | None) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:5.1f}"


def report(
    frontier: pl.DataFrame,
    tests: pl.DataFrame,
    fits: Mapping[str, Fit],
    s: Setup,
    echo: Callable[[str], None],
) -> bool:
    echo("")
    echo(
        f"need model fits (L1 logistic, alpha {s.alpha:.2f}): held-out corpus → rows, needed, weights"
    )
    for held, f in fits.items():
        shown = " ".join(f"{k}={v:+.2f}" for k, v in f.weights.items())
        echo(f"  {held:12} {f.rows:5} rows {f.positives:4} needed  {f.why or shown}")
    scopes = list(dict.fromkeys(frontier["scope"].to_list()))
    for scope in [*s.groups, *(x for x in scopes if x not in s.groups)]:
        here = frontier.filter(pl.col("scope") == scope)
        if here.height == 0:
            continue
        echo("")
        echo(f"{scope}: held out — editable pruned %, strict no-impact %, with recovery %")
        echo(f"  {'policy':44} {'cases':>5} {'pruned':>6} {'strict':>6} {'recov':>6}")
        for row in here.sort("editable_pruning").iter_rows(named=True):
            name = row["point"]
            echo(
                f"  {name[:44]:44} {row['cases']:5} {_pct(row['editable_pruning']):>6} "
                f"{_pct(row['strict']):>6} {_pct(row['recovery']):>6}"
            )
        if scope not in s.groups:
            continue
        beaten = dominated_by(frontier, scope, [f for f in set(frontier["family"]) if f != FAMILY])
        ours = here.filter(pl.col("family") == FAMILY).sort("editable_pruning")
        for row in ours.iter_rows(named=True):
            by = beaten.get(row["point"], [])
            echo(
                f"  {row['point']}: "
                + (f"matched or bettered on both axes by {len(by)}: {', '.join(by[:4])}" if by
                   else "no other point prunes as much at no lower strict no-impact")
            )  # fmt: skip
        t = tests.filter(pl.col("scope") == scope)
        if t.height:
            echo(
                "  paired (McNemar exact, strict, same target): heuristic  target  ours-only/theirs-only p"
            )
            for row in t.sort("heuristic", "target").iter_rows(named=True):
                echo(
                    f"    {row['heuristic']:20} {row['target']:.1f}  {row['ours_only']:3}/"
                    f"{row['theirs_only']:<3} p={row['p_value']:.3g}"
                )
    return check_targets(frontier, tests, s, echo)


def check_targets(
    frontier: pl.DataFrame, tests: pl.DataFrame, s: Setup, echo: Callable[[str], None]
) -> bool:
    """The issue's targets on the long sessions' labels set, held out."""
    long = next(iter(g for g in s.groups if g != "gold-dev"), next(iter(s.groups)))
    here = frontier.filter((pl.col("scope") == long) & (pl.col("family") == FAMILY))
    points = here.filter(
        (pl.col("strict") >= TARGET_STRICT) & (pl.col("editable_pruning") >= TARGET_PRUNING)
    )
    echo("")
    echo(f"targets on {long}, held out:")
    best = here.filter(pl.col("strict") >= TARGET_STRICT).sort("editable_pruning").tail(1)
    shown = (
        f"best ≥ {100 * TARGET_STRICT:.0f}% strict point prunes "
        f"{_pct(best['editable_pruning'][0])}% ({best['point'][0]})"
        if best.height
        else f"no point reaches {100 * TARGET_STRICT:.0f}% strict"
    )
    first = points.height > 0
    echo(f"  [{'met' if first else 'NOT met'}] ≥ {100 * TARGET_STRICT:.0f}% strict at ≥ "
         f"{100 * TARGET_PRUNING:.0f}% editable pruned: {shown}")  # fmt: skip
    recency = tests.filter(
        (pl.col("scope") == long) & (pl.col("heuristic") == RECENCY) & (pl.col("target") >= 0.2)
    )
    beat = recency.height > 0 and all(
        r["ours_only"] > r["theirs_only"] and r["p_value"] < 0.05
        for r in recency.iter_rows(named=True)
    )
    detail = ", ".join(
        f"{r['target']:.1f}: {r['ours_only']}/{r['theirs_only']} p={r['p_value']:.2g}"
        for r in recency.sort("target").iter_rows(named=True)
    )
    echo(f"  [{'met' if beat else 'NOT met'}] {RECENCY} beaten at every target 0.2–0.5 "
         f"(paired, p < 0.05): {detail or 'no pairs'}")  # fmt: skip
    return first and beat


# --- entry point ------------------------------------------------------------------------------


def other_specs(heuristics: Sequence[str] | None = None) -> tuple[str, ...]:
    families = [f for f in jl.target_families() if f != FAMILY]
    if heuristics is not None:
        families = [f for f in families if f in heuristics]
    return tuple(f"{f}:target={t}" for f in families for t in TARGETS)


def real_setup(out: Path, alpha: float, workers: int, progress: bool) -> Setup:
    sources = [SHARED / "corpora" / c for cs in GROUPS.values() for c in cs]
    label_dirs = [SHARED / name for name in GROUPS]
    missing = [str(x) for x in (*sources, *label_dirs) if not x.exists()]
    if missing:
        raise PolicyLocoError(f"not found: {', '.join(missing)}")
    protocol = jl.Protocol(out, sources, label_dirs, {}, {}, workers, progress)
    return Setup(protocol, dict(GROUPS), other_specs(), HEURISTICS, "", alpha)


def quick_setup(out: Path, alpha: float, workers: int, progress: bool) -> Setup:
    sources = sorted(p for p in (jl.FIXTURE / "corpora").iterdir() if p.is_dir())
    label_dirs = sorted(p for p in jl.FIXTURE.glob("labels-*") if p.is_dir())
    protocol = jl.Protocol(out, sources, label_dirs, {}, {}, workers, progress)
    others = other_specs(QUICK_HEURISTICS)
    return Setup(protocol, dict(QUICK_GROUPS), others, QUICK_HEURISTICS, QUICK_BASE, alpha)


def defaults_text(f: Fit) -> str:
    """The fitted weights as they are written in ``WorkingSet.Params``."""
    return "\n".join(f"{k} = {v}" for k, v in f.weights.items())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Leave-one-corpus-out frontier of the working-set policy on gold-dev and "
        "gold-long (issue 30)."
    )
    parser.add_argument("--out", type=Path, default=None, help="work folder, reused by a re-run")
    parser.add_argument("--alpha", type=float, default=1.0, help="L1 penalty of the fit (1.0)")
    parser.add_argument("--fit", action="store_true", help="print the weights fitted on all")
    parser.add_argument(
        "--base",
        default=None,
        metavar="PARAMS",
        help="parameters every working-set point carries, e.g. 'min_saving=300' "
        f"(default: none; with --quick, {QUICK_BASE})",
    )
    parser.add_argument("--quick", action="store_true", help="the small labelled fixture")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    out = args.out or Path("/tmp/policy-loco-quick" if args.quick else "/tmp/policy-loco")
    make = quick_setup if args.quick else real_setup
    started = time.perf_counter()
    try:
        setup = make(out, args.alpha, max(1, args.workers), not args.quiet)
        if args.base is not None:
            _spec_policy(args.base)  # checked before any work
            setup.base = args.base
        result = measure(setup)
    except (CtxreplayError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.fit:
        print("\nweights fitted on every corpus (WorkingSet.Params defaults):")
        print(defaults_text(result.fits["all"]))
    print(f"\ndone in {time.perf_counter() - started:.1f}s; tables in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
