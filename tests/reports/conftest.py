"""A small judged run shared by the report tests: 6 synthetic sessions × 3 policies.

Besides the flow judge's verdicts the run holds an ``edited`` judge: the flow verdicts with
three tool-prune cases made unscored and two dropped (not judged), to check denominators.
"""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from judged_run import DROPPED, POLICIES, UNSCORED


@pytest.fixture(scope="session")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from ctxreplay.datasets.cases import build_cases, parse_trigger, write_cases
    from ctxreplay.datasets.store import Corpus
    from ctxreplay.datasets.synth import generate
    from ctxreplay.engines.judge import run_judge
    from ctxreplay.engines.replay import run_replay
    from ctxreplay.runs import read_verdicts, slug
    from ctxreplay.schema import VERDICTS

    cache = tmp_path_factory.getbasetemp() / "ctxreplay-cache"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CTXREPLAY_CACHE_DIR", str(cache))
        root = tmp_path_factory.mktemp("reports")
        generate(root / "corpus", sessions=6, seed=5, progress=False)
        corpus = Corpus(root / "corpus")
        cases = write_cases(
            build_cases(corpus, [parse_trigger("user-turns")]),
            root / "cases.parquet",
            {"corpus_fingerprint": corpus.fingerprint()},
        )
        run = root / "run"
        run_replay(root / "corpus", cases, POLICIES, run, workers=1, progress=False)
        run_judge(run, "flow", workers=1, progress=False)

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
    from ctxreplay.datasets.cases import build_cases, parse_trigger, write_cases
    from ctxreplay.datasets.ingest import import_paths
    from ctxreplay.datasets.store import Corpus
    from ctxreplay.engines.judge import run_judge
    from ctxreplay.engines.replay import run_replay

    fixtures = Path(__file__).resolve().parent.parent / "fixtures" / "otel"
    cache = tmp_path_factory.getbasetemp() / "ctxreplay-cache"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CTXREPLAY_CACHE_DIR", str(cache))
        root = tmp_path_factory.mktemp("otel-report")
        import_paths(sorted(fixtures.iterdir()), root / "corpus", progress=False)
        corpus = Corpus(root / "corpus")
        cases = write_cases(
            build_cases(corpus, [parse_trigger("user-turns")]),
            root / "cases.parquet",
            {"corpus_fingerprint": corpus.fingerprint()},
        )
        run = root / "run"
        run_replay(root / "corpus", cases, ["noop", "tool-prune"], run, workers=1, progress=False)
        run_judge(run, "flow", workers=1, progress=False)
    assert os.listdir(run / "verdicts")
    return run
