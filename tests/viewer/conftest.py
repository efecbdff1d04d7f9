"""A small judged run for the case browser, the browser server on it, and a headless Chromium."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from viewing import POLICIES, XSS, XSS_SESSION, Server, session, start_server

from browser import chromium


@pytest.fixture(scope="session")
def viewer_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three sessions (one named and filled with markup) cut at user turns, replayed under
    ``POLICIES``, judged by flow and by ``other``: flow's verdicts with the first impact made
    no_impact, so exactly one pair has judges that disagree."""
    from ctxreplay.datasets.cases import cut_corpus
    from ctxreplay.engines.judge import run_judge
    from ctxreplay.engines.replay import run_replay
    from ctxreplay.runs import read_verdicts, slug
    from ctxreplay.schema import VERDICTS

    from builders import make_corpus

    root = tmp_path_factory.mktemp("viewer")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CTXREPLAY_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ctxreplay-cache"))
        corpus = make_corpus(
            root / "corpus",
            {XSS_SESSION: session(XSS), "plain-a": session("fine"), "plain-b": session("ok")},
        )
        _, cases = cut_corpus(corpus, root / "cases.parquet", triggers=["user-turns"])
        run = root / "run"
        run_replay(root / "corpus", cases, POLICIES, run, workers=1, progress=False)
        run_judge(run, "flow", workers=1, progress=False)
    rows = read_verdicts(run, "flow").sort(["policy", "case_id"]).to_dicts()
    first = next(r for r in rows if r["label"] == "impact")
    for r in rows:
        r.update(judge="other", judge_name="other")
        if r is first:
            r.update(label="no_impact", losses=[], n_losses=0)
    folder = run / "verdicts" / slug("other")
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=VERDICTS), folder / "part-0.parquet")
    return run


@pytest.fixture(scope="module")
def server(viewer_run: Path) -> Iterator[Server]:
    s = start_server(viewer_run)
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with chromium(tmp_path_factory.mktemp("chromium-profile")) as driver:
        yield driver
