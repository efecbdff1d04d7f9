"""Judge throughput: verdicts per second of each deterministic judge on the same run.

Builds a run over the built-in synthetic corpus (the demo's policies, user-turn cases) unless
``--run`` names one, then judges it from scratch with each judge in turn (its verdicts and
corpus state are removed first, so nothing is reused) and prints wall time, verdicts/s and each
judge's time relative to the first.

    python benchmarks/bench_judge.py [--sessions 200] [--judge anchor --judge flow] [--run RUN]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from ctxreplay.datasets.cases import cut_corpus
from ctxreplay.datasets.store import Corpus
from ctxreplay.datasets.synth import generate
from ctxreplay.engines.judge import run_judge
from ctxreplay.engines.pipeline import DEMO_POLICIES
from ctxreplay.engines.replay import run_replay
from ctxreplay.runs import slug


def build_run(sessions: int, workers: int) -> Path:
    root = Path(tempfile.mkdtemp(prefix="ctxreplay-bench-judge-"))
    generate(root / "corpus", sessions=sessions, seed=0, progress=False)
    _, cases = cut_corpus(Corpus(root / "corpus"), root / "cases.parquet", triggers=["user-turns"])
    run_replay(
        root / "corpus", cases, list(DEMO_POLICIES), root / "run", workers=workers, progress=False
    )
    return root / "run"


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sessions", type=int, default=200)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--judge", dest="judges", action="append", default=None)
    ap.add_argument("--run", type=Path, default=None, help="Judge this run instead of a new one.")
    args = ap.parse_args()
    judges = args.judges or ["anchor", "flow"]
    run = args.run or build_run(args.sessions, args.workers)
    print(f"run {run} · workers {args.workers}")
    first: float | None = None
    for name in judges:
        for folder in ("verdicts", "judge-state"):
            for path in (run / folder).glob(f"{slug(name)}*"):
                shutil.rmtree(path) if path.is_dir() else path.unlink()
        started = time.perf_counter()
        summary = run_judge(run, name, workers=args.workers, progress=False)
        wall = time.perf_counter() - started
        first = first or wall
        print(
            f"  {name:<8} {summary.judged:>7,} verdicts in {wall:6.1f} s"
            f"  = {summary.judged / wall:7.0f} verdicts/s  ({wall / first:.2f}× {judges[0]})"
        )


if __name__ == "__main__":
    main()
