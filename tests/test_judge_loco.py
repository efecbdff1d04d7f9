"""``benchmarks/judge_loco.py``: the leave-one-corpus-out harness, on a fixture whose confusion is
known by hand.

The fixture (``tests/fixtures/loco``) holds three small corpora and two labels sets, as the real
protocol merges gold-dev and gold-long: ``labels-a`` labels ``shop`` and ``build`` (OpenAI-chat
JSONL) with a horizon of 3 messages, ``labels-b`` labels ``air`` (tau-bench JSON) with a horizon
of 2. ``--quick`` replays ``noop`` and ``tool-prune:keep=1`` (the standard set) and
``tool-prune:keep=1`` and ``oldest-turn:mode=fold`` (the grid; the first policy is in both sets)
and judges with ``flow``. Every case's tool results come before its latest user message, so
nothing a policy touches is protected.

What each view keeps, and so each verdict:

- ``noop`` keeps everything: gold no_impact and flow no_impact in all six cases (6 TN).
- ``tool-prune:keep=1`` clears every tool result but the newest (message 5, or 9 in
  shop/cancel):

  - shop/cancel: the profile (3, ``"payment": "credit_card_7755"``) and the pending order (7,
    ``"status": "pending"``), both required, are cleared → gold impact; the call and the reply
    copy ``credit_card_7755`` → flow impact. **TP**
  - shop/refund: the order (3, ``"delivered_days_ago": 40``, required) is cleared → gold impact;
    the answer ("no: it is too late for that") repeats no word of it → flow no_impact. **FN**
  - build/rename: the file read (3), whose body the edit's ``old_string`` copies (required), is
    cleared → gold impact, flow impact. **TP**
  - build/docs: the search result whose URL the answer repeats is cleared, but the URL is
    labelled only *helpful* → gold no_impact; flow sees the copied URL → impact. **FP**
  - air/gate: the reservation (3, ``"status": "confirmed"``, helpful) is cleared, the gate (5,
    required) kept → gold no_impact; the answer says the reservation "is confirmed" → flow
    impact. **FP**
  - air/cancel: the user profile (3), which nothing uses, is cleared; ``"cancellable": true``
    (5) is kept and the policy line is the system prompt → gold no_impact, flow no_impact. **TN**
- ``oldest-turn:mode=fold`` folds the oldest turn between the first and the latest user turn
  behind a visible pointer. Only shop/cancel has one (turn 2, messages 5–10): strict gold impact
  (``"status": "pending"`` left the view), recovery gold no_impact (it is behind the pointer),
  flow no_impact only through recovery, which strict no-impact is not → strict **TP**,
  recovery **TN**. The other cases have two user turns, nothing is folded: 5 TN.

Per corpus and set against strict gold (tp fn fp tn): standard — shop 1 1 0 2, build 1 0 1 2,
air 0 0 1 3, overall 2 1 2 7 (kappa: p_o = 9/12, p_e = 3/12·4/12 + 9/12·8/12 = 7/12, so
(9/12 − 7/12) / (5/12) = 0.4); grid — shop 2 1 0 1, build 1 0 1 2, air 0 0 1 3, overall
3 1 2 6; both (each of the 18 distinct views once) — overall 3 1 2 12. With recovery gold (and
the judge's label counting a recoverable loss as none) the fold's TP is a TN: shop grid
1 1 0 2, both overall 2 1 2 13.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

from builders import load_benchmark, quick_twice, run_benchmark

loco = load_benchmark("judge_loco")


@dataclass
class Quick:
    out: Path
    first: subprocess.CompletedProcess[str]
    again: subprocess.CompletedProcess[str]

    def scores(self) -> pl.DataFrame:
        return pl.read_parquet(self.out / "scores.parquet")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return run_benchmark("judge_loco", *args)


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> Quick:
    out = tmp_path_factory.mktemp("loco") / "work"
    return Quick(out, *quick_twice("judge_loco", out))


def confusion(scores: pl.DataFrame, corpus: str, set_name: str, variant: str = "strict"):
    row = scores.filter(
        (pl.col("scope") == "held_out")
        & (pl.col("corpus") == corpus)
        & (pl.col("set") == set_name)
        & (pl.col("variant") == variant)
    )
    assert row.height == 1, row
    return tuple(row.select("tp", "fn", "fp", "tn").row(0))


def test_quick_confusion_per_corpus_and_overall(quick: Quick) -> None:
    s = quick.scores()
    assert confusion(s, "shop", "standard") == (1, 1, 0, 2)
    assert confusion(s, "build", "standard") == (1, 0, 1, 2)
    assert confusion(s, "air", "standard") == (0, 0, 1, 3)
    assert confusion(s, "overall", "standard") == (2, 1, 2, 7)
    assert confusion(s, "shop", "grid") == (2, 1, 0, 1)
    assert confusion(s, "overall", "grid") == (3, 1, 2, 6)
    assert confusion(s, "overall", "both") == (3, 1, 2, 12)
    assert confusion(s, "overall", "standard", "whitespace") == (2, 1, 2, 7)
    assert confusion(s, "shop", "grid", "recovery") == (1, 1, 0, 2)
    assert confusion(s, "overall", "both", "recovery") == (2, 1, 2, 13)
    overall = s.filter(
        (pl.col("scope") == "held_out")
        & (pl.col("corpus") == "overall")
        & (pl.col("set") == "standard")
        & (pl.col("variant") == "strict")
    ).row(0, named=True)
    assert overall["kappa"] == pytest.approx(0.4)
    assert overall["sensitivity"] == pytest.approx(2 / 3)
    assert overall["specificity"] == pytest.approx(7 / 9)
    assert overall["unscored"] == 0 and overall["abstention"] == 0
    # one candidate: held out and in-sample are the same figures
    held = s.filter(pl.col("scope") == "held_out").drop("scope", "judge")
    ins = s.filter(pl.col("scope") == "in_sample").drop("scope", "judge")
    assert held.equals(ins)


def test_quick_prints_the_tables_choices_speed_and_targets(quick: Quick) -> None:
    out = quick.first.stdout
    assert "=== gold strict: held out" in out and "=== gold recovery: held out" in out
    line = next(x for x in out.splitlines() if x.split()[:2] == ["overall", "standard"])
    assert line.split()[2:7] == ["12", "2", "1", "2", "7"]
    assert "held out shop" in out and "→ flow" in out
    assert "flow: 18 verdicts" in out and "/s" in out
    assert "[NOT met] kappa ≥ 0.75 overall" in out
    assert "[met] abstentions ≤ 10% on every corpus" in out


def test_quick_per_view_table(quick: Quick) -> None:
    views = pl.read_parquet(quick.out / "views.parquet")
    assert views.columns[:4] == ["case", "corpus", "policy", "set"]
    assert {"gold_strict", "gold_whitespace", "gold_recovery", "flow"} <= set(views.columns)
    assert views.height == 24  # 6 cases × 2 policies × 2 sets
    both = views.filter(pl.col("policy") == "tool-prune:keep=1")["set"].unique().sort()
    assert both.to_list() == ["grid", "standard"]
    assert set(views["corpus"].to_list()) == {"shop", "build", "air"}
    row = views.filter((pl.col("case") == "q-shop-refund") & (pl.col("set") == "grid"))
    row = row.filter(pl.col("policy") == "tool-prune:keep=1").row(0, named=True)
    assert (row["gold_strict"], row["flow"]) == ("impact", "no_impact")


def test_quick_each_future_is_its_labelled_horizon(quick: Quick) -> None:
    cases = pl.read_parquet(quick.out / "cases.parquet")
    horizon = {
        sid.split("-")[0]: n for sid, n in cases.select("session_id", "future_messages").iter_rows()
    }
    assert horizon == {"openai": 3, "tau": 2}  # labels-a: 3 messages, labels-b: 2


def test_quick_rerun_reuses_every_stage(quick: Quick) -> None:
    out = quick.again.stdout
    for stage in ("corpus", "cases"):
        assert f"{stage}: reusing" in out
    assert "0 chunk-policies computed" in out
    assert "judge flow: all 18 verdicts already there" in out
    assert "flow: 18 verdicts in" in out  # the speed measured by the first run


def test_a_bad_judge_spec_stops_before_any_work(tmp_path: Path) -> None:
    done = _run("--quick", "--out", str(tmp_path / "w"), "--judge", "flow:no_such=1")
    assert done.returncode == 2
    assert done.stderr.startswith("error: judge flow:no_such=1")
    assert not (tmp_path / "w").exists()


def test_every_policy_spec_parses_and_the_grid_covers_every_target_family() -> None:
    sets = loco.real_sets()
    label_of, problems = loco.policy_labels(sets)
    assert problems == []
    assert len(set(label_of.values())) == len(label_of)  # no two specs make the same policy
    assert len(sets["standard"]) == 10
    for family in loco.target_families():
        points = [p for p in sets["grid"] if p.startswith(f"{family}:target=")]
        assert len(points) == len(loco.TARGETS), family
    _, problems = loco.policy_labels({"grid": ["tool-prune:keep=-1"]})
    assert len(problems) == 1 and problems[0].startswith("policy tool-prune:keep=-1")


def test_judge_grid_expands_like_the_sweep() -> None:
    specs = loco.judge_specs(["anchor"], ["flow:threshold=0.5,0.7;min_copy=20"])
    assert specs == [
        "anchor",
        "flow",
        "flow:threshold=0.5,min_copy=20",
        "flow:threshold=0.7,min_copy=20",
    ]
    assert loco.judge_specs([], []) == ["flow"]


def _views(judged: dict[str, dict[str, list[str]]]) -> pl.DataFrame:
    """Four views per corpus with gold impact, impact, no_impact, no_impact; ``judged``: judge →
    corpus → its four labels."""
    gold = ["impact", "impact", "no_impact", "no_impact"]
    rows = []
    for corpus in ("A", "B", "C"):
        for i, g in enumerate(gold):
            row = {
                "case": f"{corpus}{i}",
                "case_id": f"{corpus}{i}",
                "corpus": corpus,
                "policy": "p",
                "set": "standard",
                **{v: g for v in loco.GOLD.values()},
            }
            row.update({j: labels[corpus][i] for j, labels in judged.items()})
            rows.append(row)
    return pl.DataFrame(rows)


def test_loco_select_never_chooses_on_the_held_out_corpus() -> None:
    """j1 is perfect on A and B and inverted on C (kappa 1, 1, −1); j2 has one miss on A and on B
    (tp 1 fn 1 fp 0 tn 2: kappa 0.5) and is perfect on C; j3 equals j2 (a tie: j2 is given
    first). Held out A: on B and C, j1 averages 0, j2 0.75 → j2; the same for B; held out C: on
    A and B, j1 1, j2 0.5 → j1. In-sample: j1 1/3, j2 2/3 → j2. Held out pooled: A and B by j2
    (1 1 0 2 each) and C by j1 (0 2 2 0) → 2 4 2 4; in-sample pooled by j2: 4 2 0 6."""
    perfect = ["impact", "impact", "no_impact", "no_impact"]
    inverted = ["no_impact", "no_impact", "impact", "impact"]
    one_miss = ["impact", "no_impact", "no_impact", "no_impact"]
    j2 = {"A": one_miss, "B": one_miss, "C": perfect}
    views = _views({"j1": {"A": perfect, "B": perfect, "C": inverted}, "j2": j2, "j3": j2})
    judges = ["j1", "j2", "j3"]
    held = loco.loco_select(views, judges)
    assert {c: ch.judge for c, ch in held.items()} == {"A": "j2", "B": "j2", "C": "j1"}
    assert held["A"].on == ("B", "C") and held["A"].criterion == pytest.approx(0.75)
    assert held["C"].criterion == pytest.approx(1.0)
    ins = loco.in_sample_select(views, judges)
    assert ins.judge == "j2" and ins.criterion == pytest.approx(2 / 3)
    scores = loco.loco_scores(views, held, ins)
    assert confusion(scores, "overall", "standard") == (2, 4, 2, 4)
    assert confusion(scores, "C", "standard") == (0, 2, 2, 0)
    in_sample = scores.filter(
        (pl.col("scope") == "in_sample")
        & (pl.col("corpus") == "overall")
        & (pl.col("set") == "standard")
        & (pl.col("variant") == "strict")
    )
    assert tuple(in_sample.select("tp", "fn", "fp", "tn").row(0)) == (4, 2, 0, 6)


def test_unscored_views_leave_the_confusion_and_are_counted() -> None:
    views = _views(
        {"j": {c: ["impact", "unscored", "no_impact", "unscored"] for c in ("A", "B", "C")}}
    )
    s = loco.score_views(views.filter(pl.col("corpus") == "A"), "j")
    assert (s.views, s.unscored, s.abstention) == (4, 2, 0.5)
    assert (s.rates.tp, s.rates.fn, s.rates.fp, s.rates.tn) == (1, 0, 0, 1)
    checks = {
        c.criterion.split()[0]: c
        for c in loco.check_targets(
            loco.loco_scores(
                views, loco.loco_select(views, ["j"]), loco.in_sample_select(views, ["j"])
            )
        )
    }
    assert not checks["abstentions"].met and len(checks["abstentions"].failing) == 3
