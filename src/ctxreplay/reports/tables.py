"""The report's tables, as polars frames built from a run folder and its verdicts.

``build_report(run)`` returns a ``Report`` holding every table; each table is also a function of
its inputs (``no_impact_table(outcomes, ...)`` etc.) so it can be tested without a run folder.

Per-case outcomes join the run's figures (every replayed case) with one judge's verdicts:

- a case without a verdict is *not judged* (e.g. ``ctxreplay judge --limit``);
- an ``unscored`` verdict is counted, and leaves every denominator;
- ``n`` is the number of scored verdicts (no_impact + impact).

Percentages are fractions × 100, unrounded; renderers round.

>>> report = build_report("RUN")  # doctest: +SKIP
>>> report.no_impact.select("policy", "n", "pruning_pct", "no_impact_pct")  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shlex
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from ..errors import CtxreplayError
from ..judges.base import DEFAULT_JUDGE
from ..runs import (
    Run,
    RunError,
    judge_label,
    query_verdicts,
    read_table,
    read_verdicts,
    slug,
    verdict_judges,
)
from ..schema import CATEGORIES
from ..tariffs import Tariff
from . import stats
from .correction import JudgeAccuracy, corrected_interval
from .recovery import (
    RECOVERY_SCHEMA,
    recovery_price,
    via_recovery_pct,
)

#: Example losses a report shows in all (``ctxreplay report --examples``; ``example_losses``).
EXAMPLES = 10


class ReportError(CtxreplayError, ValueError):
    pass


def as_run(run: Run | str | os.PathLike[str]) -> Run:
    return run if isinstance(run, Run) else Run(run)


def show_command(run: Run | str | os.PathLike[str], case_id: str, policy: str) -> str:
    """The exact shell command that opens one case under one policy."""
    path = run.path if isinstance(run, Run) else Path(run)
    return f"ctxreplay show {shlex.quote(str(path))} {shlex.quote(case_id)} --policy {shlex.quote(policy)}"


# --- inputs ---------------------------------------------------------------------------------


def resolve_judge(verdicts: pl.DataFrame, judge: str | None) -> str | None:
    """``runs.judge_label``, failing as a report does."""
    return judge_label(verdicts, judge, ReportError)


#: the verdict columns ``outcomes`` joins to the figures (those present in the verdicts given)
VERDICT_COLUMNS = ["label", "losses", "recoverable", "explanation", "unscored_reason"]

#: the figures columns the report's tables read (``build_report`` reads no other)
FIGURE_COLUMNS = [
    "policy", "policy_name", "case_id", "session_id", "pruning_rate", "editable_pruning",
    "view_tokens", "committed", "commit_reason", "planner_failure", "requests",
    "input_baseline", "input_policy", "cached_max_baseline", "cached_max_policy",
    "output_tokens", "cache_break_tokens", "usd_baseline_low", "usd_baseline_high",
    "usd_policy_low", "usd_policy_high", "planner_usd", "recorded_cache",
]  # fmt: skip


def outcomes(
    run: Run,
    judge: str | None,
    verdicts: pl.DataFrame | None = None,
    *,
    figures: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """One row per (policy, case): figures joined with the judge's verdict (label null: not judged).

    ``verdicts``: the run's verdicts when already read (``read_verdicts(run.path)``), of which
    the ``VERDICT_COLUMNS`` present are joined (a report reads only those it uses);
    ``figures``: the run's figures when already read (``run.table("figures")``).
    """
    figures = figures if figures is not None else run.table("figures")
    if judge is None:
        verdicts = pl.DataFrame(
            schema={"policy": pl.String, "case_id": pl.String, "label": pl.String}
        ).with_columns(
            pl.lit(None).alias("losses"),
            pl.lit(None, pl.Int32).alias("recoverable"),
            pl.lit(None, pl.String).alias("explanation"),
            pl.lit(None, pl.String).alias("unscored_reason"),
        )
    else:
        verdicts = verdicts if verdicts is not None else read_verdicts(run.path)
        verdicts = verdicts.filter(pl.col("judge") == judge).select(
            "policy", "case_id", *[c for c in VERDICT_COLUMNS if c in verdicts.columns]
        )
    joined = figures.join(verdicts, on=["policy", "case_id"], how="left")
    # a case whose planner failed kept the prefix because of the failure, not because of a
    # decision: it has no result to score, whatever a judge says of the unchanged prefix
    return joined.with_columns(
        pl.when(pl.col("planner_failure").is_not_null())
        .then(pl.lit("planner_failed"))
        .otherwise(pl.col("label"))
        .alias("label")
    )


def order_policies(run: Run, frame: pl.DataFrame) -> list[str]:
    """Policies in manifest order, then any others present in the frame."""
    seen = list(run.policies)
    extra = sorted(set(frame["policy"].to_list()) - set(seen)) if frame.height else []
    present = set(frame["policy"].to_list()) if frame.height else set()
    return [p for p in seen if p in present] + extra


#: The scored verdicts: no_impact or impact (unscored and not judged leave every denominator).
SCORED = pl.col("label").is_in(["no_impact", "impact"])


def scored_rows(outcomes: pl.DataFrame) -> pl.DataFrame:
    """The rows of ``outcomes`` with a scored verdict."""
    return outcomes.filter(SCORED)


def policy_summary(
    frame: pl.DataFrame, alpha: float = 0.05, *, pruning: str = "editable_pruning"
) -> dict[str, Any]:
    """What the no-impact table and the sweep frontier both say of one policy.

    ``frame``: the policy's rows of ``outcomes`` (with the recovery costs of
    ``recovery.with_recovery_cost``). Keys: ``cases``, ``not_judged``, ``unscored``, ``n``
    (scored), ``no_impact``; ``pruning_pct``, the mean of the figures column ``pruning`` over
    the cases that have it (NaN when none does, e.g. a column that came after the run was
    written); ``no_impact_pct`` with its Wilson interval (``wilson_lo``, ``wilson_hi``);
    ``recovery_pct`` (``recovery.via_recovery_pct``) and ``leans_on_recovery`` (it is above 0);
    and the price of recovery (``RECOVERY_SCHEMA``).
    """
    labels = frame["label"]
    scored = scored_rows(frame)
    k = int((scored["label"] == "no_impact").sum())
    n = scored.height
    w = stats.wilson(k, n, alpha)
    via = via_recovery_pct(scored)
    return {
        "cases": frame.height,
        "not_judged": int(labels.is_null().sum()),
        "unscored": int((labels == "unscored").sum()),
        "planner_failed": int((labels == "planner_failed").sum()),
        "n": n,
        "no_impact": k,
        "pruning_pct": stats.pct(stats.mean_or_nan(frame.get_column(pruning, default=None))),
        "no_impact_pct": stats.pct(w.estimate),
        "wilson_lo": stats.pct(w.low),
        "wilson_hi": stats.pct(w.high),
        "recovery_pct": via,
        "leans_on_recovery": bool(via > 0),  # NaN (nothing scored): False
        **recovery_price(scored, alpha),
    }


# --- (a) no-impact ----------------------------------------------------------------------------

NO_IMPACT_SCHEMA = {
    "policy": pl.String,
    "name": pl.String,
    "cases": pl.Int64,
    "not_judged": pl.Int64,
    "unscored": pl.Int64,
    "planner_failed": pl.Int64,  # cases whose model planner failed: kept out of n, like unscored
    "n": pl.Int64,
    "no_impact": pl.Int64,
    "pruning_pct": pl.Float64,
    "pruning_lo": pl.Float64,
    "pruning_hi": pl.Float64,
    "editable_pruning_pct": pl.Float64,  # NaN for runs written before the column existed
    "no_impact_pct": pl.Float64,
    "wilson_lo": pl.Float64,
    "wilson_hi": pl.Float64,
    "boot_lo": pl.Float64,
    "boot_hi": pl.Float64,
    "recovery_pct": pl.Float64,
    # some scored case is no-impact only through recovery: marked † wherever it is ranked
    "leans_on_recovery": pl.Boolean,
}

#: Columns added to the no-impact table when the run holds a calibration of the judge.
CORRECTED_SCHEMA = {
    "corrected_no_impact_pct": pl.Float64,
    "corrected_lo": pl.Float64,
    "corrected_hi": pl.Float64,
    "corrected_dropped": pl.Int64,  # bootstrap resamples dropped (judge no better than chance)
}


def no_impact_table(
    outcomes: pl.DataFrame,
    policies: Sequence[str],
    *,
    seed: int = 0,
    n_boot: int = 2000,
    alpha: float = 0.05,
    calibration: JudgeAccuracy | None = None,
) -> pl.DataFrame:
    """Per policy: n judged, unscored, mean pruning % (cluster bootstrap CI), no-impact % with
    Wilson and cluster-bootstrap CIs — the shape of the Self-GC tables.

    Pruning is the mean over every replayed case of the policy; no-impact counts only scored
    verdicts (``n`` = no_impact + impact).

    ``calibration``: the judge's confusion against reference labels; when given, the table also
    has the no-impact rate corrected for the judge's sensitivity and specificity (Rogan–Gladen,
    ``correction.py``) with a bootstrap interval over both the cases and the calibration sample
    (columns of ``CORRECTED_SCHEMA``); without it those columns are absent.
    """
    schema = {**NO_IMPACT_SCHEMA, **(CORRECTED_SCHEMA if calibration is not None else {})}
    schema.update(RECOVERY_SCHEMA)  # the price of recovery, appended at the end
    rows = []
    for policy in policies:
        frame = outcomes.filter(pl.col("policy") == policy)
        summary = policy_summary(frame, alpha)
        scored = scored_rows(frame)
        prune = stats.cluster_bootstrap_mean(
            frame["pruning_rate"].fill_null(0.0).to_numpy(),
            frame["session_id"].to_list(),
            seed,
            n_boot,
            alpha,
        )
        ok = (scored["label"] == "no_impact").cast(pl.Float64).to_numpy()
        sessions = scored["session_id"].to_list()
        draws = stats.cluster_draws(ok, sessions, seed, n_boot)  # shared by both intervals
        boot = stats.cluster_interval(draws, alpha)
        names = frame["policy_name"].drop_nulls()
        corrected: dict[str, Any] = {}
        if calibration is not None:
            c = corrected_interval(ok, sessions, calibration, seed, n_boot, alpha, draws=draws)
            corrected = {
                "corrected_no_impact_pct": stats.pct(c.estimate),
                "corrected_lo": stats.pct(c.low),
                "corrected_hi": stats.pct(c.high),
                "corrected_dropped": c.dropped,
            }
        rows.append(
            {
                **summary,
                "policy": policy,
                "name": names[0] if len(names) else policy,
                "pruning_pct": stats.pct(prune.estimate),
                "pruning_lo": stats.pct(prune.low),
                "pruning_hi": stats.pct(prune.high),
                "editable_pruning_pct": summary["pruning_pct"],  # mean of editable_pruning
                "boot_lo": stats.pct(boot.low),
                "boot_hi": stats.pct(boot.high),
                **corrected,
            }
        )
    return pl.DataFrame(rows, schema=schema)


def best_row(frame: pl.DataFrame, by: str = "no_impact_pct") -> dict[str, Any]:
    """The row with the highest ``by`` (no-impact; ``strict_no_impact_pct`` for the leader a
    user who will not pay for recoveries picks); ties go to more ``pruning_pct``, then to the
    ``policy`` label. The frame must have a row, none with a NaN ``by`` (NaN sorts first)."""
    return frame.sort([by, "pruning_pct", "policy"], descending=[True, True, False]).row(
        0, named=True
    )


#: the default reference must remove at least this share of the prefix (percent): a policy
#: that prunes nearly nothing trivially keeps every dependency and says nothing as a reference
REFERENCE_MIN_PRUNING = 10.0


def best_policy(table: pl.DataFrame, by: str = "no_impact_pct") -> str | None:
    """The default reference of the paired tests: the highest no-impact rate (``by``: or
    strict no-impact, named beside it in the report) among the policies that prune at least
    ``REFERENCE_MIN_PRUNING`` % (ties: more pruning, then the name); when none does, among all
    scored policies."""
    scored = table.filter((pl.col("n") > 0) & pl.col(by).is_not_nan())
    if scored.height == 0:
        return None
    pruning = scored.filter(pl.col("pruning_pct") >= REFERENCE_MIN_PRUNING)
    return str(best_row(pruning if pruning.height else scored, by)["policy"])


FAILURES_SCHEMA = {"policy": pl.String, "kind": pl.String, "reason": pl.String, "cases": pl.Int64}


def failures_table(outcomes: pl.DataFrame, policies: Sequence[str]) -> pl.DataFrame:
    """Why cases have no score, per policy: ``unscored`` verdicts by the judge's reason and
    ``planner_failed`` cases by the planner's error (first line), most frequent first."""
    unscored = outcomes.filter(pl.col("label") == "unscored").select(
        "policy", pl.lit("unscored").alias("kind"), pl.col("unscored_reason").alias("reason")
    )
    failed = outcomes.filter(pl.col("label") == "planner_failed").select(
        "policy",
        pl.lit("planner_failed").alias("kind"),
        pl.col("planner_failure").str.split("\n").list.first().alias("reason"),
    )
    both = pl.concat([unscored, failed]).with_columns(pl.col("reason").fill_null("(no reason)"))
    if both.height == 0:
        return pl.DataFrame(schema=FAILURES_SCHEMA)
    counted = both.group_by("policy", "kind", "reason").agg(pl.len().cast(pl.Int64).alias("cases"))
    return sort_failures(counted, policies)


def sort_failures(counted: pl.DataFrame, policies: Sequence[str]) -> pl.DataFrame:
    """``failures_table``'s counts (policy, kind, reason, cases) in its order: by policy, then
    kind, the most frequent reason first."""
    order = {p: i for i, p in enumerate(policies)}
    return (
        counted.with_columns(pl.col("policy").replace_strict(order, default=len(order)).alias("o"))
        .sort(["o", "kind", "cases", "reason"], descending=[False, False, True, False])
        .drop("o")
        .select(list(FAILURES_SCHEMA))
    )


class SameViews:
    """``same_views`` policy by policy: ``add`` each policy's figures in report order, then
    read ``lines`` (a report holds one policy's figures at a time)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._seen: dict[tuple[int, str], str] = {}

    def add(self, policy: str, figures: pl.DataFrame) -> None:
        rows = figures.filter(pl.col("policy") == policy).sort("case_id")
        if rows.height == 0:
            return
        # a digest of the (case, view tokens, committed) rows, not a tuple of them in memory
        hashes = rows.select("case_id", "view_tokens", "committed").hash_rows(seed=0)
        key = (rows.height, hashlib.sha256(hashes.to_numpy().tobytes()).hexdigest())
        if key in self._seen:
            self.lines.append(
                f"{policy} made the same view as {self._seen[key]} on all {rows.height:,} cases "
                f"(its own rule never changed what it kept): their rows are one result"
            )
        else:
            self._seen[key] = policy


def same_views(figures: pl.DataFrame, policies: Sequence[str]) -> list[str]:
    """One line per policy whose views equal an earlier policy's on every case (same tokens and
    the same commits): two rows of one result, which a reader should know."""
    seen = SameViews()
    for policy in policies:
        seen.add(policy, figures)
    return seen.lines


# --- (b) paired comparisons -------------------------------------------------------------------

PAIRED_SCHEMA = {
    "policy": pl.String,
    "reference": pl.String,
    "n_paired": pl.Int64,
    "both_no_impact": pl.Int64,
    "b": pl.Int64,  # policy no_impact, reference impact
    "c": pl.Int64,  # policy impact, reference no_impact
    "both_impact": pl.Int64,
    "test": pl.String,
    "statistic": pl.Float64,
    "p": pl.Float64,
    "p_holm": pl.Float64,
    "diff_pct": pl.Float64,
    "diff_lo": pl.Float64,
    "diff_hi": pl.Float64,
}


def pairs(scored: pl.DataFrame, policy: str, reference: str) -> pl.DataFrame:
    """The cases both policies scored: ``policy``'s rows of ``scored`` (policy, case_id, ok:
    no_impact, …) with the reference's ``ok`` as ``ref_ok``."""
    ref = scored.filter(pl.col("policy") == reference).select(
        "case_id", pl.col("ok").alias("ref_ok")
    )
    return scored.filter(pl.col("policy") == policy).join(ref, on="case_id", how="inner")


def discordant(both: pl.DataFrame) -> tuple[int, int, int]:
    """(n, b, c) of paired cases (``pairs``): n pairs, b = the policy no-impact and the
    reference not, c = the reverse."""
    ok, ref_ok = both["ok"], both["ref_ok"]
    return both.height, int((ok & ~ref_ok).sum()), int((~ok & ref_ok).sum())


def paired_table(
    outcomes: pl.DataFrame,
    policies: Sequence[str],
    reference: str,
    *,
    seed: int = 0,
    n_boot: int = 2000,
    alpha: float = 0.05,
    exact_below: int | None = stats.EXACT_BELOW,
) -> pl.DataFrame:
    """Each policy against ``reference`` on the cases both scored.

    b = cases the policy kept no-impact and the reference did not, c = the reverse. McNemar's
    test on (b, c) — exact binomial below ``exact_below`` discordant pairs, chi-square with
    continuity correction from there (column ``test``) — Holm-adjusted across the compared
    policies, and the difference in no-impact rate (policy − reference, percentage points) with
    a paired session-cluster bootstrap interval.
    """
    scored = scored_pairs(outcomes)
    rows = [
        paired_row(
            scored,
            policy,
            reference,
            seed=seed,
            n_boot=n_boot,
            alpha=alpha,
            exact_below=exact_below,
        )
        for policy in policies
        if policy != reference
    ]
    return with_holm(rows, alpha)


def scored_pairs(outcomes: pl.DataFrame) -> pl.DataFrame:
    """What the paired comparisons read of ``outcomes``: policy, case_id, session_id and ``ok``
    (no_impact) of the scored rows."""
    return scored_rows(outcomes).select(
        "policy", "case_id", "session_id", (pl.col("label") == "no_impact").alias("ok")
    )


def paired_row(
    scored: pl.DataFrame,
    policy: str,
    reference: str,
    *,
    seed: int = 0,
    n_boot: int = 2000,
    alpha: float = 0.05,
    exact_below: int | None = stats.EXACT_BELOW,
) -> dict[str, Any]:
    """One row of ``paired_table`` (``p_holm`` NaN until ``with_holm``); ``scored``:
    ``scored_pairs`` of (at least) the two policies."""
    both = pairs(scored, policy, reference)
    ok = both["ok"]
    ref_ok = both["ref_ok"]
    _, b, c = discordant(both)
    diff = stats.paired_bootstrap_diff(
        ok.cast(pl.Float64).to_numpy(),
        ref_ok.cast(pl.Float64).to_numpy(),
        both["session_id"].to_list(),
        seed,
        n_boot,
        alpha,
    )
    cells = (int((ok & ref_ok).sum()), b, c, int((~ok & ~ref_ok).sum()))
    return paired_record(policy, reference, cells, diff, exact_below)


def paired_record(
    policy: str,
    reference: str,
    cells: tuple[int, int, int, int],
    diff: stats.BootstrapInterval,
    exact_below: int | None = stats.EXACT_BELOW,
) -> dict[str, Any]:
    """A row of ``paired_table`` from its 2×2 cells (both no-impact, b, c, both impact) and
    its paired bootstrap of the difference; McNemar's test on (b, c)."""
    both_ok, b, c, both_impact = cells
    n = both_ok + b + c + both_impact
    test = stats.mcnemar(b, c, exact_below) if n else None
    return {
        "policy": policy,
        "reference": reference,
        "n_paired": n,
        "both_no_impact": both_ok,
        "b": b,
        "c": c,
        "both_impact": both_impact,
        "test": test.method if test else None,
        "statistic": test.statistic if test else math.nan,
        "p": test.pvalue if test else math.nan,
        "p_holm": math.nan,
        "diff_pct": stats.pct(diff.estimate),
        "diff_lo": stats.pct(diff.low),
        "diff_hi": stats.pct(diff.high),
    }


def with_holm(rows: Sequence[dict[str, Any]], alpha: float = 0.05) -> pl.DataFrame:
    """The paired table of ``paired_row`` rows, Holm-adjusted across them."""
    frame = pl.DataFrame(rows, schema=PAIRED_SCHEMA)
    if frame.height:
        adjusted = stats.holm(frame["p"].to_list(), alpha).adjusted
        frame = frame.with_columns(pl.Series("p_holm", adjusted, dtype=pl.Float64))
    return frame


# --- (c) failure taxonomy ---------------------------------------------------------------------

LOSSES_SCHEMA = {
    "policy": pl.String,
    "category": pl.String,
    "case_id": pl.String,
    "session_id": pl.String,
    "anchor": pl.String,
    "source_object": pl.String,
    "need_seq": pl.Int64,
    "detail": pl.String,
    "show": pl.String,
}


#: a loss before its ``show`` command (``scored_losses``), and the order losses are listed in
LOSS_COLUMNS = {k: v for k, v in LOSSES_SCHEMA.items() if k != "show"}
LOSS_ORDER = ["policy", "category", "case_id", "need_seq", "anchor"]


def scored_losses(outcomes: pl.DataFrame, verdicts: pl.DataFrame | None = None) -> pl.DataFrame:
    """Every lost dependency of every scored verdict of ``outcomes`` (rows with ``losses``),
    in ``LOSS_ORDER``, without the ``show`` command (``with_show`` adds it to the rows kept).

    ``verdicts``: the (case_id, losses) of the judge's verdicts when ``outcomes`` (the rows of
    one policy) do not carry them: only the scored cases' non-empty losses are taken, rather
    than every verdict's losses copied into the rows first."""
    if verdicts is None:
        if "losses" not in outcomes.columns:
            return pl.DataFrame(schema=LOSS_COLUMNS)
        scored = scored_rows(outcomes).select("policy", "case_id", "session_id", "losses")
        if scored.height == 0 or not isinstance(scored.schema["losses"], pl.List):
            return pl.DataFrame(schema=LOSS_COLUMNS)  # no verdicts: a null column, nothing lost
        return _loss_rows(scored.filter(pl.col("losses").list.len() > 0).explode("losses"))
    return _joined_losses(scored_rows(outcomes).select("policy", "case_id", "session_id"), verdicts)


def _joined_losses(keys: pl.DataFrame, verdicts: pl.DataFrame) -> pl.DataFrame:
    """``scored_losses`` of the scored cases ``keys`` (policy, case_id, session_id of one
    policy) from the verdicts' (case_id, losses). The losses of one case keep their order and
    no two cases tie in ``LOSS_ORDER``, so the order of the cases does not matter."""
    if keys.height == 0 or not isinstance(verdicts.schema["losses"], pl.List):
        return pl.DataFrame(schema=LOSS_COLUMNS)
    return _loss_rows(
        verdicts.select("case_id", "losses")
        .filter(
            pl.col("case_id").is_in(keys["case_id"].implode()) & (pl.col("losses").list.len() > 0)
        )
        .explode("losses")
        .join(keys, on="case_id", how="left", maintain_order="left")
    )


def _loss_rows(exploded: pl.DataFrame) -> pl.DataFrame:
    """One row per loss (``LOSS_COLUMNS``, in ``LOSS_ORDER``) of exploded ``losses``."""
    loss = pl.col("losses").struct
    return (
        exploded.select(
            "policy",
            loss.field("category").alias("category"),
            "case_id",
            "session_id",
            loss.field("anchor").alias("anchor"),
            loss.field("source_object").alias("source_object"),
            loss.field("need_seq").cast(pl.Int64).alias("need_seq"),
            loss.field("detail").alias("detail"),
        )
        .cast(LOSS_COLUMNS)  # type: ignore[arg-type]
        .sort(LOSS_ORDER, nulls_last=True, maintain_order=True)
    )


#: verdicts whose losses ``loss_summary`` explodes at once
LOSS_CHUNK = 2048

#: a (policy, category, case): the examples take one loss of each
TRIPLE = ["policy", "category", "case_id"]


def loss_summary(
    outcomes: pl.DataFrame, verdicts: pl.DataFrame, limit: int, chunk: int = LOSS_CHUNK
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One policy's ``loss_counts`` and its candidate examples (``top_ranked`` of
    ``rank_examples``, with every ``LOSS_COLUMNS``), as ``scored_losses(outcomes, verdicts)``
    gives them, exploding the losses of ``chunk`` verdicts at a time.

    A case's losses are all in its verdict, so the counts add up chunk by chunk, and the first
    loss of each (policy, category, case) is found in its chunk; the ranks need only those
    triples, and the full losses are read again for the few candidates."""
    keys = scored_rows(outcomes).select("policy", "case_id", "session_id")
    counts, firsts = [], []
    for start in range(0, verdicts.height, max(chunk, 1)):
        part = _joined_losses(keys, verdicts.slice(start, chunk))
        if part.height == 0:
            continue
        counts.append(loss_counts(part))
        firsts.append(
            part.unique(TRIPLE, keep="first", maintain_order=True).select(*TRIPLE, "session_id")
        )
    if not firsts:
        return pl.DataFrame(schema=LOSS_COUNTS_SCHEMA), pl.DataFrame(schema=LOSS_COLUMNS)
    total = (
        pl.concat(counts)
        .group_by("policy", "category", maintain_order=True)
        .agg(pl.col("cases").sum(), pl.col("losses").sum())
        .select(list(LOSS_COUNTS_SCHEMA))
    )
    if limit <= 0:
        return total, pl.DataFrame(schema=LOSS_COLUMNS)
    top = top_ranked(rank_examples(pl.concat(firsts).sort(TRIPLE)), limit)
    picked = top["case_id"].implode()
    full = _joined_losses(
        keys.filter(pl.col("case_id").is_in(picked)),
        verdicts.filter(pl.col("case_id").is_in(picked)),
    ).unique(TRIPLE, keep="first", maintain_order=True)
    return total, top.join(full, on=[*TRIPLE, "session_id"], how="left", maintain_order="left")


def with_show(run: Run | str | os.PathLike[str], losses: pl.DataFrame) -> pl.DataFrame:
    """``losses`` (``scored_losses``) with the command that opens each one's case, in their
    order: ``show_command`` once per (case, policy), joined back (one Arrow row per loss, no
    Python object per loss)."""
    pairs = losses.select("policy", "case_id").unique(maintain_order=True)
    shows = pairs.with_columns(
        show=pl.Series([show_command(run, c, p) for p, c in pairs.iter_rows()], dtype=pl.String)
    )
    return (
        losses.join(shows, on=["policy", "case_id"], how="left", maintain_order="left")
        .cast(LOSSES_SCHEMA)  # type: ignore[arg-type]
        .select(list(LOSSES_SCHEMA))
    )


def losses_frame(run: Run | str | os.PathLike[str], outcomes: pl.DataFrame) -> pl.DataFrame:
    """Every lost dependency of every scored verdict, with the command that opens its case."""
    return with_show(run, scored_losses(outcomes))


TAXONOMY_SCHEMA = {
    "policy": pl.String,
    "category": pl.String,
    "n": pl.Int64,  # scored verdicts of the policy
    "cases": pl.Int64,  # of which with at least one loss of the category
    "losses": pl.Int64,  # lost dependencies of the category
    "rate_pct": pl.Float64,  # cases / n × 100
}

LOSS_COUNTS_SCHEMA = {
    "policy": pl.String,
    "category": pl.String,
    "cases": pl.Int64,
    "losses": pl.Int64,
}


def loss_counts(losses: pl.DataFrame) -> pl.DataFrame:
    """Per (policy, category) of ``losses``: the cases with a loss of it, and its losses — what
    the taxonomy and the examples' summary say of every loss (summed policy by policy)."""
    return (
        losses.group_by("policy", "category")
        .agg(
            pl.col("case_id").n_unique().cast(pl.Int64).alias("cases"),
            pl.len().cast(pl.Int64).alias("losses"),
        )
        .select(list(LOSS_COUNTS_SCHEMA))
    )


def taxonomy_table(
    outcomes: pl.DataFrame, losses: pl.DataFrame, policies: Sequence[str]
) -> pl.DataFrame:
    """Policy × category: cases with ≥ 1 loss of the category, losses, and the share of scored
    cases (long form; all six categories for every policy, then any other category a judge used)."""
    scored = {p: outcomes.filter((pl.col("policy") == p) & SCORED).height for p in policies}
    return taxonomy_from_counts(scored, loss_counts(losses), policies)


def taxonomy_from_counts(
    scored: Mapping[str, int], counts: pl.DataFrame, policies: Sequence[str]
) -> pl.DataFrame:
    """``taxonomy_table`` from each policy's scored verdicts and ``loss_counts``."""
    extra = sorted(set(counts["category"].to_list()) - set(CATEGORIES))
    index: dict[tuple[str, str], tuple[int, int]] = {}
    for p, c, k, n in counts.select(list(LOSS_COUNTS_SCHEMA)).iter_rows():
        before = index.get((p, c), (0, 0))
        index[(p, c)] = (before[0] + k, before[1] + n)  # counts of disjoint sets of cases
    rows = []
    for policy in policies:
        n = scored.get(policy, 0)
        for category in (*CATEGORIES, *extra):
            cases, lost = index.get((policy, category), (0, 0))
            rows.append(
                {
                    "policy": policy,
                    "category": category,
                    "n": n,
                    "cases": cases,
                    "losses": lost,
                    "rate_pct": 100.0 * cases / n if n else math.nan,
                }
            )
    return pl.DataFrame(rows, schema=TAXONOMY_SCHEMA)


def example_losses(
    losses: pl.DataFrame, limit: int = EXAMPLES, policies: Sequence[str] | None = None
) -> pl.DataFrame:
    """Up to ``limit`` losses in all, spread as widely as they go: a loss of each policy (in
    ``policies`` order, else by name) before a second of any, then a loss of each of its other
    categories, and only then second losses of a (policy, category); one per case, from as many
    different sessions as there are (cases of one session often lose the same anchor at
    successive cuts)."""
    if losses.height == 0 or limit <= 0:
        return losses.head(0)
    order = list(policies or ())
    order += sorted(set(losses["policy"].to_list()) - set(order))
    return pick_examples(rank_examples(losses), limit, order).select(list(LOSSES_SCHEMA))


def rank_examples(losses: pl.DataFrame) -> pl.DataFrame:
    """``losses`` (in ``LOSS_ORDER``) one per (policy, category, case), ranked for
    ``example_losses``: the k-th loss of its (policy, category) is in round ``_round``, and in a
    round a policy's categories take turns (``_turn``). A policy's ranks depend on its own losses
    only, so a report ranks policy by policy and keeps each one's ``top_ranked``."""
    firsts = losses.unique(["policy", "category", "case_id"], keep="first", maintain_order=True)
    return (
        firsts.with_columns(
            pl.int_range(pl.len()).over(["policy", "category", "session_id"]).alias("_session")
        )
        .sort(["policy", "category", "_session", "case_id"])
        # the k-th loss of its (policy, category) is in round k; in a round, policies take turns
        .with_columns(pl.int_range(pl.len()).over(["policy", "category"]).alias("_round"))
        .sort(["policy", "_round", "category"])
        .with_columns(pl.int_range(pl.len()).over(["policy", "_round"]).alias("_turn"))
    )


def top_ranked(ranked: pl.DataFrame, limit: int) -> pl.DataFrame:
    """The first ``limit`` of one policy's ``rank_examples``: all that ``pick_examples`` can take
    of it, whatever the other policies' ranks."""
    return ranked.sort(["_round", "_turn"]).head(limit)


def pick_examples(ranked: pl.DataFrame, limit: int, order: Sequence[str]) -> pl.DataFrame:
    """The examples among ranked losses (``rank_examples``, every policy in ``order``): round by
    round, policies taking turns in ``order``; listed by policy, category and case."""
    return (
        ranked.with_columns(
            pl.col("policy").replace_strict(order, range(len(order))).alias("_policy")
        )
        .sort(["_round", "_turn", "_policy"])
        .head(limit)
        .sort(["_policy", "category", "case_id"])
        .drop("_session", "_round", "_turn", "_policy")
    )


def normalise_category(category: str, known: Sequence[str] = CATEGORIES) -> str:
    """``locator/handle``, ``Locator-Handle``, ``behavioral contract`` → the schema's name."""
    key = _category_key(category)
    if key in known:
        return key
    raise ReportError(f"unknown category {category!r}; categories: {', '.join(known)}")


def _category_key(category: str) -> str:
    return re.sub(r"[\s/\-]+", "_", category.strip().lower()).replace("behavioral", "behavioural")


# --- a run read policy by policy ------------------------------------------------------------


def policy_figures(
    run: Run, policy: str, columns: Sequence[str] | None = FIGURE_COLUMNS
) -> pl.DataFrame | None:
    """One policy's figures, only ``columns`` read (None: every column); None when the run has
    no figures folder for it. The caller checks the run first (``Run.check``)."""
    folder = run.path / "figures" / slug(policy)
    if not folder.is_dir():
        return None
    return read_table("figures", sorted(folder.glob("*.parquet")), run.path, columns=columns)


#: what identifies a verdict: one per (judge, policy, case_id)
VERDICT_KEYS = ["judge", "policy", "case_id"]


def policy_verdicts(
    run: Run | str | os.PathLike[str],
    policy: str,
    columns: Sequence[str],
    judge: str | None = None,
    *,
    losses_of: str | None = None,
) -> pl.DataFrame:
    """One policy's verdicts (of one judge label when given), ``VERDICT_KEYS`` and ``columns``
    only, filtered and projected while scanning: the verdicts ``read_verdicts`` returns of it.
    ``losses_of``: with the ``losses`` of this judge label's verdicts (null for the others')."""
    where = pl.col("policy") == policy
    if judge is not None:
        where = where & (pl.col("judge") == judge)
    keep: list[pl.Expr] = [pl.col(c) for c in dict.fromkeys([*VERDICT_KEYS, *columns])]
    if losses_of is not None:
        keep.append(pl.when(pl.col("judge") == losses_of).then(pl.col("losses")).alias("losses"))
    return query_verdicts(
        as_run(run).path,
        lambda scan: (
            scan.filter(where).select(keep).unique(VERDICT_KEYS, keep="first", maintain_order=True)
        ),
    )


def verdict_index(run: Run | str | os.PathLike[str]) -> pl.DataFrame:
    """The distinct (judge, judge_name, policy) of a run's verdicts, without holding a verdict
    (empty when the run has none): which judges, by which names, judged which policies."""
    return query_verdicts(
        as_run(run).path,
        lambda scan: scan.select("judge", "judge_name", "policy").unique(maintain_order=True),
    )


def judge_names(index: pl.DataFrame) -> pl.DataFrame:
    """(judge, judge_name) of a ``verdict_index``: what ``resolve_judge`` reads."""
    return index.select("judge", "judge_name").unique(maintain_order=True)


def judged_outcomes(
    run: Run, judge: str | None, policy: str, figures: pl.DataFrame
) -> pl.DataFrame:
    """``outcomes`` of one policy with its losses: what the losses of a report and an audit are
    read from (label, with planner failures, and losses only)."""
    verdicts = policy_verdicts(run, policy, ["label", "losses"], judge) if judge else None
    return outcomes(run, judge, verdicts, figures=figures)


def _policy_losses(run: Run, judge: str | None, policies: Sequence[str]) -> Iterator[pl.DataFrame]:
    """Each policy's ``scored_losses``, one policy at a time."""
    for policy in policies:
        figures = policy_figures(
            run, policy, ["policy", "case_id", "session_id", "planner_failure"]
        )
        if figures is not None and figures.height:
            yield scored_losses(judged_outcomes(run, judge, policy, figures))


def every_loss(
    run: Run | str | os.PathLike[str], judge: str | None, policy: str | None = None
) -> pl.DataFrame:
    """Every loss of one judge label (``losses_frame`` of the run's outcomes), read policy by
    policy; ``policy``: that policy's only."""
    r = as_run(run)
    r.check()
    policies = [r.resolve_policy(policy)] if policy is not None else r.policies
    found = list(_policy_losses(r, judge, policies))
    if not found:
        return pl.DataFrame(schema=LOSSES_SCHEMA)
    return with_show(r, pl.concat(found).sort(LOSS_ORDER, nulls_last=True, maintain_order=True))


def audit(
    run: Run | str | os.PathLike[str],
    category: str,
    policy: str | None = None,
    judge: str | None = DEFAULT_JUDGE,
) -> pl.DataFrame:
    """Every loss of one failure category, with its evidence and the ``show`` command.

    Columns: policy, category, case_id, session_id, anchor, source_object, need_seq, detail,
    show. ``policy`` (a label or a name) keeps one policy. Read policy by policy, keeping only
    the category's losses.
    """
    r = as_run(run)
    label = resolve_judge(verdict_judges(r.path), judge)
    r.check()
    key = _category_key(category)
    target, unknown = None, None
    if policy is not None:
        try:
            target = r.resolve_policy(policy)
        except RunError as e:
            unknown = e
    if unknown is not None and key in CATEGORIES:
        raise unknown
    # a category of the schema needs only the policy's losses; another must be one a judge used
    policies = [target] if target is not None and key in CATEGORIES else r.policies
    found: set[str] = set()
    kept = []
    for losses in _policy_losses(r, label, policies):
        found.update(losses["category"].to_list())
        kept.append(losses.filter(pl.col("category") == key))
    normalise_category(category, (*CATEGORIES, *sorted(found - set(CATEGORIES))))
    if unknown is not None:
        raise unknown
    out = (
        pl.concat(kept).sort(LOSS_ORDER, nulls_last=True, maintain_order=True)
        if kept
        else pl.DataFrame(schema=LOSS_COLUMNS)
    )
    if target is not None:
        out = out.filter(pl.col("policy") == target)
    return with_show(r, out)


# --- judges side by side, their agreement and disagreements -------------------------------

#: what a run's verdicts say, judge by judge: the columns the judge tables read
LABEL_COLUMNS = ["judge", "policy", "case_id", "label"]


def judge_labels(verdicts: pl.DataFrame, figures: pl.DataFrame | None = None) -> pl.DataFrame:
    """(judge, policy, case_id, label) of every verdict; with ``figures``, a case whose planner
    failed is ``planner_failed`` whatever the judge said (as in ``outcomes``)."""
    frame = verdicts.select(LABEL_COLUMNS)
    if figures is None or "planner_failure" not in figures.columns:
        return frame
    failed = figures.filter(pl.col("planner_failure").is_not_null()).select(
        "policy", "case_id", pl.lit(True).alias("_failed")
    )
    return (
        frame.join(failed.unique(["policy", "case_id"]), on=["policy", "case_id"], how="left")
        .with_columns(
            pl.when(pl.col("_failed")).then(pl.lit("planner_failed")).otherwise(pl.col("label"))
        )
        .drop("_failed")
    )


JUDGES_SCHEMA = {
    "judge": pl.String,
    "policy": pl.String,
    "verdicts": pl.Int64,
    "unscored": pl.Int64,
    "n": pl.Int64,  # scored: no_impact + impact
    "no_impact": pl.Int64,
    "no_impact_pct": pl.Float64,
    "wilson_lo": pl.Float64,
    "wilson_hi": pl.Float64,
}


def judges_table(
    labels: pl.DataFrame, policies: Sequence[str], alpha: float = 0.05
) -> pl.DataFrame:
    """Judge × policy: the no-impact rate each judge gives each policy, with its Wilson
    interval, so judges (flow, llm, probe, counterfactual, gold labels) sit side by side.
    ``labels``: ``judge_labels``. Judges in name order, policies in ``policies`` order."""
    return judges_from_counts(label_counts(labels), policies, alpha)


LABEL_COUNTS_SCHEMA = {
    "judge": pl.String,
    "policy": pl.String,
    "label": pl.String,
    "verdicts": pl.Int64,
}


def label_counts(labels: pl.DataFrame) -> pl.DataFrame:
    """Verdicts per (judge, policy, label) of ``judge_labels``: all ``judges_table`` reads
    (summed policy by policy)."""
    return (
        labels.group_by("judge", "policy", "label")
        .agg(pl.len().cast(pl.Int64).alias("verdicts"))
        .select(list(LABEL_COUNTS_SCHEMA))
    )


def judges_from_counts(
    counts: pl.DataFrame, policies: Sequence[str], alpha: float = 0.05
) -> pl.DataFrame:
    """``judges_table`` from ``label_counts``."""
    index: dict[tuple[str, str], dict[str | None, int]] = {}
    for judge, policy, label, verdicts in counts.select(list(LABEL_COUNTS_SCHEMA)).iter_rows():
        of = index.setdefault((judge, policy), {})
        of[label] = of.get(label, 0) + verdicts
    rows = []
    for judge in sorted(set(counts["judge"].to_list())):
        for policy in policies:
            of = index.get((judge, policy), {})
            total = sum(of.values())
            if total == 0:
                continue
            k = of.get("no_impact", 0)
            n = k + of.get("impact", 0)
            w = stats.wilson(k, n, alpha)
            rows.append(
                {
                    "judge": judge,
                    "policy": policy,
                    "verdicts": total,
                    "unscored": of.get("unscored", 0),
                    "n": n,
                    "no_impact": k,
                    "no_impact_pct": stats.pct(w.estimate),
                    "wilson_lo": stats.pct(w.low),
                    "wilson_hi": stats.pct(w.high),
                }
            )
    return pl.DataFrame(rows, schema=JUDGES_SCHEMA)


AGREEMENT_SCHEMA = {
    "judge_a": pl.String,
    "judge_b": pl.String,
    "n": pl.Int64,  # (case, policy) pairs both scored
    "agree": pl.Int64,
    "agreement_pct": pl.Float64,
    "kappa": pl.Float64,  # NaN when undefined (each judge gave one label only)
    "kappa_lo": pl.Float64,
    "kappa_hi": pl.Float64,
    "both_impact": pl.Int64,
    "a_impact_only": pl.Int64,
    "b_impact_only": pl.Int64,
    "both_no_impact": pl.Int64,
}


def agreement_table(labels: pl.DataFrame, judges: Sequence[str] | None = None) -> pl.DataFrame:
    """Every pair of judges: Cohen's kappa (``stats.cohen_kappa``, positive = impact) and raw
    agreement over the (case, policy) pairs both scored; unscored, planner-failed and
    unjudged pairs leave the comparison. ``labels``: ``judge_labels``; ``judges``: these
    labels only, in this order (default: every judge, by name)."""
    names = list(judges) if judges is not None else sorted(set(labels["judge"].to_list()))
    return agreement_from_counts(agreement_counts(labels, names), names)


#: a pair of judges' 2×2 table over the (case, policy) pairs both scored, positive = impact:
#: (both impact, a impact only, b impact only, both no impact)
PairTable = tuple[int, int, int, int]


def agreement_counts(
    labels: pl.DataFrame, judges: Sequence[str]
) -> dict[tuple[str, str], PairTable]:
    """Every pair (a, b) of ``judges`` (a before b): its ``PairTable`` over ``labels``
    (``judge_labels``), which sum over disjoint sets of (case, policy) pairs (policy by
    policy)."""
    scored = labels.filter(SCORED).select(
        "judge", "policy", "case_id", (pl.col("label") == "impact").alias("impact")
    )
    out: dict[tuple[str, str], PairTable] = {}
    for i, a in enumerate(judges):
        for b in judges[i + 1 :]:
            both = (
                scored.filter(pl.col("judge") == a)
                .drop("judge")
                .join(
                    scored.filter(pl.col("judge") == b).drop("judge"),
                    on=["policy", "case_id"],
                    suffix="_b",
                )
            )
            x, y = both["impact"], both["impact_b"]
            out[(a, b)] = (
                int((x & y).sum()),
                int((x & ~y).sum()),
                int((~x & y).sum()),
                int((~x & ~y).sum()),
            )
    return out


def add_counts(
    total: dict[tuple[str, str], PairTable], more: Mapping[tuple[str, str], PairTable]
) -> None:
    """Add ``more`` pair tables (``agreement_counts``) into ``total``, cell by cell."""
    for pair, cells in more.items():
        before = total.get(pair, (0, 0, 0, 0))
        total[pair] = (
            before[0] + cells[0],
            before[1] + cells[1],
            before[2] + cells[2],
            before[3] + cells[3],
        )


def agreement_from_counts(
    counts: Mapping[tuple[str, str], PairTable], judges: Sequence[str]
) -> pl.DataFrame:
    """``agreement_table`` from ``agreement_counts`` of these judges (in this order)."""
    rows = []
    for i, a in enumerate(judges):
        for b in judges[i + 1 :]:
            tt, tf, ft, ff = counts.get((a, b), (0, 0, 0, 0))
            k = stats.cohen_kappa([[tt, tf], [ft, ff]])
            rows.append(
                {
                    "judge_a": a,
                    "judge_b": b,
                    "n": k.n,
                    "agree": k.agree,
                    "agreement_pct": stats.pct(k.agreement),
                    "kappa": k.kappa,
                    "kappa_lo": k.low,
                    "kappa_hi": k.high,
                    "both_impact": tt,
                    "a_impact_only": tf,
                    "b_impact_only": ft,
                    "both_no_impact": ff,
                }
            )
    return pl.DataFrame(rows, schema=AGREEMENT_SCHEMA)


DISAGREEMENTS_SCHEMA = {
    "case_id": pl.String,
    "policy": pl.String,
    "session_id": pl.String,
    "judge": pl.String,
    "label": pl.String,
    "reason": pl.String,  # the judge's explanation, or why it could not score
    "show": pl.String,
}


def disagreements(
    run: Run | str | os.PathLike[str],
    judges: Sequence[str] | None = None,
    policy: str | None = None,
) -> pl.DataFrame:
    """The (case, policy) pairs where the judges' scored labels differ: one row per judge of
    each such pair (its label and reason; an unscored judge is listed but does not make a
    disagreement), with the command that opens the case. ``judges``: labels or names (default:
    every judge of the run, at least two); ``policy``: one policy."""
    r = as_run(run)
    verdicts = read_verdicts(
        r.path,
        columns=[*LABEL_COLUMNS, "judge_name", "session_id", "explanation", "unscored_reason"],
    )
    present = sorted(set(verdicts["judge"].to_list()))
    chosen = (
        list(dict.fromkeys(str(resolve_judge(verdicts, j)) for j in judges)) if judges else present
    )
    if len(chosen) < 2:
        raise ReportError(
            "disagreements need verdicts from two judges; this run has: "
            + (", ".join(present) or "none")
        )
    v = verdicts.filter(pl.col("judge").is_in(chosen))
    if policy is not None:
        v = v.filter(pl.col("policy") == r.resolve_policy(policy))
    split = (
        v.filter(SCORED)
        .group_by("policy", "case_id")
        .agg(pl.col("label").n_unique().alias("labels"))
        .filter(pl.col("labels") > 1)
        .select("policy", "case_id")
    )
    if split.height == 0:
        return pl.DataFrame(schema=DISAGREEMENTS_SCHEMA)
    order = {j: i for i, j in enumerate(chosen)}
    out = v.join(split, on=["policy", "case_id"]).with_columns(
        pl.coalesce("explanation", "unscored_reason").alias("reason"),
        pl.col("judge").replace_strict(order, default=len(order)).alias("_order"),
    )
    shows = split.with_columns(
        show=pl.Series([show_command(r, c, p) for p, c in split.iter_rows()], dtype=pl.String)
    )
    return (
        out.join(shows, on=["policy", "case_id"])
        .sort(["case_id", "policy", "_order"])
        .select(list(DISAGREEMENTS_SCHEMA))
        .cast(DISAGREEMENTS_SCHEMA)  # type: ignore[arg-type]
    )


# --- (d) cost -------------------------------------------------------------------------------

COST_SCHEMA = {
    "policy": pl.String,
    "cases": pl.Int64,
    "committed": pl.Int64,
    "cache_breaks": pl.Int64,
    "cache_break_tokens": pl.Int64,
    "requests": pl.Int64,
    "recovery_requests": pl.Int64,
    "input_baseline": pl.Int64,
    "input_policy": pl.Int64,
    "recovery_tokens": pl.Int64,
    "input_saved_pct": pl.Float64,
    "cached_max_baseline": pl.Int64,
    "cached_max_policy": pl.Int64,
    "output_tokens": pl.Int64,
    "usd_baseline_low": pl.Float64,
    "usd_baseline_high": pl.Float64,
    "usd_policy_low": pl.Float64,
    "usd_policy_high": pl.Float64,
    "usd_recovery_low": pl.Float64,
    "usd_recovery_high": pl.Float64,
    "usd_delta_low": pl.Float64,
    "usd_delta_high": pl.Float64,
    "planner_usd": pl.Float64,
    "recorded_cache": pl.Int64,
    "commit_decisions": pl.String,
}

_MEASURED = re.compile(r"\s[-+]?\d[\d.eE+-]*(?:\s+USD)?(?=\s*(?:<=|>=|<|>|=))")


def commit_kind(reason: str | None) -> str:
    """A commit reason without the case's measured value: ``pruning 0.786 > 0.3`` →
    ``pruning > 0.3``, so reasons can be counted."""
    if not reason:
        return "none"
    return _MEASURED.sub("", reason).strip()


def commit_reasons(figures: pl.DataFrame) -> pl.DataFrame:
    """Policy × (committed, reason kind): case counts of the commit decisions."""
    if figures.height == 0:
        return pl.DataFrame(
            schema={
                "policy": pl.String,
                "committed": pl.Boolean,
                "reason": pl.String,
                "cases": pl.Int64,
            }
        )
    return (
        figures.select(
            "policy",
            pl.col("committed").fill_null(False),
            pl.col("commit_reason")
            .map_elements(commit_kind, return_dtype=pl.String)
            .alias("reason"),
        )
        .group_by(["policy", "committed", "reason"])
        .agg(pl.len().cast(pl.Int64).alias("cases"))
        .pipe(sort_reasons)
    )


def sort_reasons(reasons: pl.DataFrame) -> pl.DataFrame:
    """``commit_reasons`` rows in its order (each policy's counted apart, then sorted together)."""
    return reasons.sort(
        ["policy", "committed", "cases", "reason"], descending=[False, True, True, False]
    )


#: the figures' cost columns ``cost_table`` sums, integers and USD
COST_INTS = (
    "requests", "input_baseline", "input_policy", "cached_max_baseline", "cached_max_policy",
    "output_tokens",
)  # fmt: skip
COST_FLOATS = (
    "usd_baseline_low", "usd_baseline_high", "usd_policy_low", "usd_policy_high", "planner_usd",
)  # fmt: skip


def cost_row(
    policy: str, sums: Mapping[str, Any], decisions: pl.DataFrame, tariff: Tariff | None
) -> dict[str, Any]:
    """One policy's row of ``cost_table`` from its sums over cases (``COST_INTS``,
    ``COST_FLOATS``, cases, committed, cache breaks and their tokens, recoveries, recorded
    cache hits, and the recoveries' rounded payload and request tokens) and its commit
    reasons."""
    payload, request = int(sums["payload"]), int(sums["request"])
    recovery = payload + request
    rec_low = rec_high = 0.0
    if tariff is not None and recovery:
        rec_low = tariff.cost(recovery, request, 0)
        rec_high = tariff.cost(recovery, 0, 0)
    base, pol = int(sums["input_baseline"]), int(sums["input_policy"]) + recovery
    summary = "; ".join(
        f"{'commit' if r['committed'] else 'skip'}: {r['reason']} ×{r['cases']}"
        for r in decisions.iter_rows(named=True)
    )
    usd = {c: float(sums[c]) for c in COST_FLOATS}
    return {
        "policy": policy,
        "cases": int(sums["cases"]),
        "committed": int(sums["committed"]),
        "cache_breaks": int(sums["cache_breaks"]),
        "cache_break_tokens": int(sums["cache_break_tokens"]),
        "requests": int(sums["requests"]),
        "recovery_requests": int(sums["recoveries"] or 0),
        "input_baseline": base,
        "input_policy": pol,
        "recovery_tokens": recovery,
        "input_saved_pct": 100.0 * (base - pol) / base if base else math.nan,
        "cached_max_baseline": int(sums["cached_max_baseline"]),
        "cached_max_policy": int(sums["cached_max_policy"]) + request,
        "output_tokens": int(sums["output_tokens"]),
        "usd_baseline_low": usd["usd_baseline_low"],
        "usd_baseline_high": usd["usd_baseline_high"],
        "usd_policy_low": usd["usd_policy_low"] + rec_low,
        "usd_policy_high": usd["usd_policy_high"] + rec_high,
        "usd_recovery_low": rec_low,
        "usd_recovery_high": rec_high,
        "usd_delta_low": usd["usd_policy_low"] + rec_low - usd["usd_baseline_low"],
        "usd_delta_high": usd["usd_policy_high"] + rec_high - usd["usd_baseline_high"],
        "planner_usd": usd["planner_usd"],
        "recorded_cache": int(sums["recorded_cache"]),
        "commit_decisions": summary,
    }


def cost_table(
    figures: pl.DataFrame,
    policies: Sequence[str],
    reasons: pl.DataFrame | None = None,
    tariff: Tariff | None = None,
) -> pl.DataFrame:
    """Per policy, sums over its cases of the figures' cost columns (see ``replay/cost.py``),
    with what its recoveries would cost added: a policy whose no-impact leans on recovering
    archived payloads pays for it in extra requests, so its saving is net of them.

    Each case's future requests are costed as if the policy edited at that cut only; USD is a
    range, low = perfect prefix caching, high = no caching (unless the trace recorded cache hits),
    and the delta is policy − baseline under the same assumption (low with low, high with high).
    ``cache_breaks`` counts committed cases whose edit broke the prompt cache. Recoveries
    (``recovery.with_recovery_cost``: one extra request per recovery, re-sending the view and
    bringing back the payload) are priced with ``tariff``: low, the re-sent view served from the
    cache; high, none of it; ``input_policy`` and the policy's USD include them.
    """
    reasons = reasons if reasons is not None else commit_reasons(figures)
    rows = []
    for policy in policies:
        f = figures.filter(pl.col("policy") == policy)

        def total(col: str, frame: pl.DataFrame = f) -> int:
            return int(frame[col].fill_null(0).sum()) if col in frame.columns else 0

        def usd(col: str, frame: pl.DataFrame = f) -> float:
            return float(frame[col].fill_null(0.0).sum())

        committed = f.filter(pl.col("committed").fill_null(False))
        sums: dict[str, Any] = {
            "cases": f.height,
            "committed": committed.height,
            "cache_breaks": int((committed["cache_break_tokens"].fill_null(0) > 0).sum()),
            "cache_break_tokens": total("cache_break_tokens", committed),
            "payload": round(usd("recovery_payload_tokens")) if "recoveries" in f.columns else 0,
            "request": round(usd("recovery_request_tokens")) if "recoveries" in f.columns else 0,
            "recoveries": total("recoveries"),
            "recorded_cache": int(f["recorded_cache"].fill_null(False).sum()),
            **{c: total(c) for c in COST_INTS},
            **{c: usd(c) for c in COST_FLOATS},
        }
        rows.append(cost_row(policy, sums, reasons.filter(pl.col("policy") == policy), tariff))
    return pl.DataFrame(rows, schema=COST_SCHEMA)


# --- the report -----------------------------------------------------------------------------
