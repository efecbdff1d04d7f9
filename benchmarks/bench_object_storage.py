"""The pipeline with its corpus, cases and run on local folders and on an S3 server: what object
storage costs per stage.

import → cases → replay → judge (flow) on a synthetic corpus of ``--sessions`` sessions, once with
local folders and once with every path an ``s3://`` URI on moto's S3 server on 127.0.0.1 (started
here; the trace file is uploaded first, untimed), each stage run locally and then on S3 before
the next. Each stage is the real command (``python -m ctxreplay …``) in a child process of its
own, measured as ``bench_scale.py`` measures (wall time; peak RSS of the child and the workers
it waited for). The server runs in this process, so its memory is not counted.

    python benchmarks/bench_object_storage.py [--sessions 125] [--workers 2] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

from bench_scale import POLICIES, in_child, policy_list  # noqa: E402

STAGES = ("import", "cases", "replay", "judge")


def commands(where: str, traces: str, workers: int) -> dict[str, list[str]]:
    """Each stage's command with corpus, cases and run under ``where`` (a folder or a URI)."""
    corpus, cases, run = f"{where}/corpus", f"{where}/cases.parquet", f"{where}/run"
    replay = ["replay", corpus, "--cases", cases, "-o", run, "--quiet", "--workers", str(workers)]
    return {
        "import": ["import", traces, "-o", corpus, "--quiet"],
        "cases": ["cases", corpus, "-o", cases, "--trigger", "every:4"],
        "replay": [*replay, *[a for p in policy_list(POLICIES) for a in ("--policy", p)]],
        "judge": ["judge", run, "--judge", "flow", "--quiet", "--workers", str(workers)],
    }


def measure(args: list[str]) -> tuple[float, float]:
    """Seconds and peak RSS (MB) of one ``ctxreplay`` command in a child process."""
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "ctxreplay", *args], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"`ctxreplay {' '.join(args)}` failed (status {status})")
    return time.perf_counter() - started, usage.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sessions", type=int, default=125, help="synthetic sessions")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--keep", type=Path, default=None, help="keep the local data here")
    args = ap.parse_args()
    from ctxreplay import storage
    from s3_server import moto_s3

    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-objects-"))
    shutil.rmtree(root / "local", ignore_errors=True)
    (root / "local").mkdir(parents=True)
    os.environ.setdefault("CTXREPLAY_CACHE_DIR", str(root / "cache"))
    for name in ("synth", "export"):  # the trace file, as bench_scale makes it
        in_child(name, root, args.sessions, args.workers)
    traces = root / "traces.jsonl"
    rows: dict[str, dict[str, tuple[float, float]]] = {"local": {}, "s3": {}}
    with moto_s3("bench") as s3:
        storage.write_bytes(s3.uri("traces.jsonl"), traces.read_bytes())
        where = {
            "local": commands(str(root / "local"), str(traces), args.workers),
            "s3": commands(s3.uri("data"), s3.uri("traces.jsonl"), args.workers),
        }
        for name in STAGES:  # local and S3 in turn, so a busy machine slows both alike
            for side, cmds in where.items():
                rows[side][name] = measure(cmds[name])
                print(f"  {side:<5} {name:<7} {rows[side][name][0]:7.1f} s", file=sys.stderr)
        objects = len(s3.keys("data/"))
    print(
        f"\n{args.sessions} sessions, {len(policy_list(POLICIES))} policies, "
        f"{args.workers} workers; {objects} objects on S3"
    )
    print(f"{'stage':<8} {'local s':>8} {'s3 s':>8} {'s3/local':>9} {'local MB':>9} {'s3 MB':>8}")
    for name in STAGES:
        (ls, lm), (ss, sm) = rows["local"][name], rows["s3"][name]
        print(f"{name:<8} {ls:8.1f} {ss:8.1f} {ss / ls:8.2f}× {lm:9.0f} {sm:8.0f}")
    total = [sum(r[n][0] for n in STAGES) for r in (rows["local"], rows["s3"])]
    print(f"{'total':<8} {total[0]:8.1f} {total[1]:8.1f} {total[1] / total[0]:8.2f}×")
    if args.keep is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
