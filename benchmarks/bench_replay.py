"""Replay throughput and memory as the corpus grows.

Part 1: cases per second for each policy alone (one worker, the synthetic corpus at 4×).
Part 2: every policy together at 1×, 4× and 16× the corpus: wall time, case-policies per second
and the peak resident memory of the replaying process (a fresh process per size) — time should
grow linearly and memory stay flat, because the engine streams fixed chunks of whole sessions.

    python benchmarks/bench_replay.py [--base 25] [--workers 1]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ctxreplay.engines.pipeline import DEMO_POLICIES

POLICIES = list(DEMO_POLICIES)

CHILD = """
import json, resource, sys, time
from ctxreplay.engines.replay import run_replay
corpus, cases, out, workers = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
policies = json.loads(sys.argv[5])
t = time.perf_counter()
s = run_replay(corpus, cases, policies, out, workers=workers, progress=False)
elapsed = time.perf_counter() - t
self_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
child_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"cases": s.cases, "seconds": elapsed, "peak_mb": max(self_kb, child_kb) / 1024}))
"""


def build(root: Path, sessions: int) -> tuple[Path, Path, int]:
    from ctxreplay.datasets.cases import build_cases, parse_trigger, write_cases
    from ctxreplay.datasets.store import Corpus
    from ctxreplay.datasets.synth import generate

    corpus = root / f"corpus-{sessions}"
    summary = generate(corpus, sessions=sessions, seed=0, progress=False)
    frame = build_cases(Corpus(corpus), [parse_trigger("user-turns")])
    cases = write_cases(frame, root / f"cases-{sessions}.parquet", {})
    return corpus, cases, summary.tokens


def replay(
    corpus: Path, cases: Path, out: Path, workers: int, policies: list[str]
) -> dict[str, float]:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            CHILD,
            str(corpus),
            str(cases),
            str(out),
            str(workers),
            json.dumps(policies),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--base", type=int, default=25, help="sessions at 1×")
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="ctxreplay-bench-"))
    started = time.perf_counter()
    sizes = {}
    for scale in (1, 4, 16):
        sizes[scale] = build(root, args.base * scale)
    print(f"built corpora in {time.perf_counter() - started:.1f}s under {root}\n")

    corpus, cases, _ = sizes[4]
    print(f"per policy, {args.base * 4} sessions, workers={args.workers}")
    print(f"{'policy':<40} {'cases':>6} {'s':>7} {'cases/s':>9}")
    for policy in POLICIES:
        r = replay(corpus, cases, root / f"run-{policy.replace(':', '_')}", args.workers, [policy])
        print(
            f"{policy:<40} {r['cases']:>6} {r['seconds']:>7.2f} {r['cases'] / r['seconds']:>9,.0f}"
        )

    print(f"\nall {len(POLICIES)} policies together, workers={args.workers}")
    print(
        f"{'scale':>5} {'sessions':>8} {'tokens':>12} {'cases':>6} {'s':>7} {'case-policies/s':>16} {'peak MB':>8}"
    )
    for scale, (corpus, cases, tokens) in sizes.items():
        r = replay(corpus, cases, root / f"all-{scale}", args.workers, POLICIES)
        rate = r["cases"] * len(POLICIES) / r["seconds"]
        print(
            f"{scale:>4}× {args.base * scale:>8} {tokens:>12,} {r['cases']:>6} {r['seconds']:>7.2f} {rate:>16,.0f} {r['peak_mb']:>8.0f}"
        )


if __name__ == "__main__":
    main()
