"""A small judged run shared by the report tests: 6 synthetic sessions × 3 policies.

Besides the flow judge's verdicts the run holds an ``edited`` judge: the flow verdicts with
three tool-prune cases made unscored and two dropped (not judged), to check denominators.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from judged_run import DROPPED, POLICIES, UNSCORED, XSS, XSS_SESSION


def judged_run(
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    make_corpus: Callable[[Path], object],
    policies: Sequence[str],
) -> Path:
    """A corpus made by ``make_corpus(path)``, cut at user turns, replayed under ``policies``
    and judged by the flow judge, in the session's shared tokenizer cache; returns the run."""
    from ctxreplay.datasets.cases import cut_corpus
    from ctxreplay.datasets.store import Corpus
    from ctxreplay.engines.judge import run_judge
    from ctxreplay.engines.replay import run_replay

    cache = tmp_path_factory.getbasetemp() / "ctxreplay-cache"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CTXREPLAY_CACHE_DIR", str(cache))
        root = tmp_path_factory.mktemp(name)
        make_corpus(root / "corpus")
        _, cases = cut_corpus(
            Corpus(root / "corpus"), root / "cases.parquet", triggers=["user-turns"]
        )
        run = root / "run"
        run_replay(root / "corpus", cases, policies, run, workers=1, progress=False)
        run_judge(run, "flow", workers=1, progress=False)
    return run


@pytest.fixture(scope="session")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from ctxreplay.datasets.synth import generate
    from ctxreplay.runs import read_verdicts, slug
    from ctxreplay.schema import VERDICTS

    def synthetic(path: Path) -> None:
        generate(path, sessions=6, seed=5, progress=False)

    run = judged_run(tmp_path_factory, "reports", synthetic, POLICIES)
    judged = read_verdicts(run, "flow").sort(["policy", "case_id"])
    prune = judged.filter(pl.col("policy") == "tool-prune")
    unscored = set(prune["case_id"].head(UNSCORED).to_list())
    dropped = set(prune["case_id"].slice(UNSCORED, DROPPED).to_list())
    edited = (
        judged.filter(~((pl.col("policy") == "tool-prune") & pl.col("case_id").is_in(dropped)))
        .with_columns(
            pl.lit("edited").alias("judge"),
            pl.lit("edited").alias("judge_name"),
        )
        .to_dicts()
    )
    for row in edited:
        if row["policy"] == "tool-prune" and row["case_id"] in unscored:
            row.update(
                label="unscored",
                losses=[],
                n_losses=0,
                unscored_reason="test: made unscored",
                explanation=None,
            )
    folder = run / "verdicts" / slug("edited")
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(edited, schema=VERDICTS), folder / "part-0.parquet")
    return run


@pytest.fixture(scope="session")
def otel_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A judged run over the OTel GenAI fixtures: sessions whose metadata names their trace."""
    from ctxreplay.datasets.ingest import import_paths

    fixtures = Path(__file__).resolve().parent.parent / "fixtures" / "otel"

    def imported(path: Path) -> None:
        import_paths(
            [fixtures / "otlp_spans.json", fixtures / "flat_spans.jsonl"], path, progress=False
        )

    from ctxreplay.runs import slug

    run = judged_run(tmp_path_factory, "otel-report", imported, ["noop", "tool-prune"])
    assert os.listdir(run / "verdicts") == [slug("flow")]
    return run


@pytest.fixture(scope="session")
def xss_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A judged run whose trace holds ``XSS`` in a tool result that the next turn copies, in a
    session named ``XSS_SESSION``: tool-prune:keep=1 loses it, so the payload is in the report's
    example losses (anchor, case id, ``show`` command) as well as in its ids."""
    from builders import call, make_corpus, result, say, system, user

    rows = "\n".join(
        f"order ORD-{77700 + i} total {100 + i}.40 EUR status shipped" for i in range(30)
    )
    messages = [
        system(),
        user("Look up the refund for the customer."),
        call("c1", "get_orders", {"customer": "C-1"}),
        result("c1", rows + f"\nnote: customer wrote {XSS} ORD-77731 refund 512.40 EUR"),
        call("c2", "get_customer", {"customer": "C-1"}),
        result("c2", "name: Ann\n" * 40),
        call("c3", "get_tickets", {"customer": "C-1"}),
        result("c3", "ticket T-1 open\n" * 40),
        say("I have the orders."),
        user("What did the customer write about the refund?"),
        say(f"The customer wrote {XSS} ORD-77731 refund 512.40 EUR, so refund 512.40 EUR."),
    ]

    def corpus(path: Path) -> None:
        make_corpus(path, {XSS_SESSION: messages, "plain": messages})

    return judged_run(tmp_path_factory, "xss", corpus, ["noop", "tool-prune:keep=1"])


#: the fold grid of the sweep run: self-gc folding everything, so no-impact leans on recovery
FOLD = "self-gc:fold_min_tokens=50;short_tokens=10;commit_threshold=0"


@pytest.fixture(scope="session")
def sweep_run(
    synth_corpus: Path, synth_cases: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """A small sweep of the synthetic corpus: tool-prune keep=1..2 and ``FOLD`` (with their
    defaults), noop, judged by flow and by gold dependency labels (strict and with recovery)."""
    from ctxreplay.engines.sweep import run_sweep
    from sweep_labels import write_labels

    root = tmp_path_factory.mktemp("frontier")
    cache = tmp_path_factory.getbasetemp() / "ctxreplay-cache"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CTXREPLAY_CACHE_DIR", str(cache))
        labels = write_labels(synth_corpus, synth_cases, root / "labels")
        run_sweep(
            synth_corpus,
            synth_cases,
            ["tool-prune:keep=1..2", FOLD],
            root / "run",
            policies=["noop"],
            labels=labels,
            workers=2,
            progress=False,
        )
    return root / "run"


@pytest.fixture(scope="module")
def report(small_run: Path):
    """The report of the small run (flow judge, 200 bootstrap resamples)."""
    from ctxreplay.reports import build_report

    return build_report(small_run, bootstrap=200)
