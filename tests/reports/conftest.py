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

from judged_run import DROPPED, POLICIES, UNSCORED


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
        import_paths(sorted(fixtures.iterdir()), path, progress=False)

    from ctxreplay.runs import slug

    run = judged_run(tmp_path_factory, "otel-report", imported, ["noop", "tool-prune"])
    assert os.listdir(run / "verdicts") == [slug("flow")]
    return run


@pytest.fixture(scope="module")
def report(small_run: Path):
    """The report of the small run (flow judge, 200 bootstrap resamples)."""
    from ctxreplay.reports import build_report

    return build_report(small_run, bootstrap=200)
