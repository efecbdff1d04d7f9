"""The local engine against the Ray engine on the same synthetic corpus, and what 1M sessions need.

At 1×, 4× and 16× a base number of synthetic sessions (made as ``bench_scale.py`` makes them:
synth → export → import → cases, each stage a child process), replay and the flow judge run
once with the local engine (in a child of their own: the time in the process, and the peak RSS of
the child and its worker processes) and once with ``--engine ray`` on a local Ray of ``--cpus``
CPUs (another child: Ray's start-up timed apart, the driver's peak RSS, and the largest peak RSS
a Ray worker reported from its tasks). Then the overhead ratio ray/local, and, from the per-view and
per-verdict cost measured in the Ray tasks at the largest size, the on-paper estimate for a
1M-session corpus (:func:`estimate`; its inputs are printed with it).

    python benchmarks/bench_ray.py [--base 125] [--sizes 1,4,16] [--cpus 2] [--keep DIR]
                                   [--policies a,b,c] [--target 1000000] [--cores-per-node 32]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from bench_scale import POLICIES, in_child, policy_list

#: the stages that make the corpus and the cases (``bench_scale``'s)
SETUP = ("synth", "export", "import", "cases")


def local_stages(root: Path, cpus: int, policies: str) -> dict[str, Any]:
    """In a child: replay and judge with the local engine (into ``run-local``), timed in the
    process like the Ray stages (imports and start-up left out of both)."""
    from ctxreplay.engines.judge import run_judge
    from ctxreplay.engines.replay import run_replay

    names = policy_list(policies)
    t = time.perf_counter()
    r = run_replay(
        root / "corpus", root / "cases.parquet", names, root / "run-local", workers=cpus,
        progress=False,
    )  # fmt: skip
    out: dict[str, Any] = {"replay": {"seconds": time.perf_counter() - t}}
    t = time.perf_counter()
    run_judge(root / "run-local", "flow", workers=cpus, progress=False)
    out["judge-flow"] = {"seconds": time.perf_counter() - t}
    out["cases"] = r.cases
    return out


def ray_stages(root: Path, cpus: int, policies: str) -> dict[str, Any]:
    """In a child: start a local Ray, replay and judge with the Ray engine (into ``run-ray``)."""
    import ray

    from ctxreplay.engines.judge import run_judge
    from ctxreplay.engines.replay import run_replay

    out: dict[str, Any] = {}
    started = time.perf_counter()
    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    out["ray_start_s"] = time.perf_counter() - started
    t = time.perf_counter()
    names = policy_list(policies)
    r = run_replay(
        root / "corpus", root / "cases.parquet", names, root / "run-ray", progress=False,
        engine="ray",
    )  # fmt: skip
    out["replay"] = _stage(time.perf_counter() - t, r.cases * len(names))
    t = time.perf_counter()
    j = run_judge(root / "run-ray", "flow", progress=False, engine="ray")
    out["judge-flow"] = _stage(time.perf_counter() - t, j.judged)
    out["cases"] = r.cases
    out["driver_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    ray.shutdown()
    return out


def _stage(seconds: float, units: int) -> dict[str, Any]:
    """A Ray stage: wall time, units (views or verdicts), and what its tasks reported."""
    from ctxreplay.engines.ray_engine import last_tasks

    return {
        "seconds": seconds,
        "units": units,
        "tasks": len(last_tasks),
        "task_seconds": sum(t.seconds for t in last_tasks),
        "worker_mb": max((t.max_rss_mb for t in last_tasks), default=0.0),
        "workers": len({(t.host, t.pid) for t in last_tasks}),
    }


def child(stage: str, root: Path, cpus: int, policies: str) -> dict[str, Any]:
    """``local_stages`` or ``ray_stages`` in a fresh process; with its wall time and the peak
    RSS (MB) of it and the processes it waited for (the local engine's workers; not Ray's,
    which its tasks report)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, __file__, "--stage", stage, "--root", str(root), "--cpus", str(cpus),
         "--policies", policies],
        stdout=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    output = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"the {stage} stages failed in {root} (status {status})")
    result: dict[str, Any] = json.loads(output.decode().strip().splitlines()[-1])
    result.update(seconds=time.perf_counter() - started, peak_mb=usage.ru_maxrss / 1024)
    return result


@dataclass(frozen=True)
class Estimate:
    """Nodes × hours of one stage for a corpus, from a measured cost per unit."""

    stage: str
    units: float  # views (replay) or verdicts (judge)
    seconds_per_unit: float  # core-seconds, measured in the Ray tasks
    cores_per_node: int
    efficiency: float  # share of a core's time spent in tasks (scheduling, I/O, stragglers)
    core_hours: float
    node_hours: float


def estimate(
    stage: str,
    sessions: int,
    cases_per_session: float,
    policies: int,
    seconds_per_unit: float,
    cores_per_node: int = 32,
    efficiency: float = 0.8,
) -> Estimate:
    """The on-paper cost of ``stage`` for ``sessions`` sessions: one unit (a view, or a
    verdict) per (case, policy), each ``seconds_per_unit`` core-seconds, at ``efficiency``."""
    units = sessions * cases_per_session * policies
    core_hours = units * seconds_per_unit / efficiency / 3600
    return Estimate(
        stage, units, seconds_per_unit, cores_per_node, efficiency, core_hours,
        core_hours / cores_per_node,
    )  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--base", type=int, default=125, help="sessions at 1×")
    ap.add_argument("--sizes", default="1,4,16", help="multiples of the base")
    ap.add_argument("--cpus", type=int, default=2, help="local workers, and the local Ray's CPUs")
    ap.add_argument("--policies", default=POLICIES, help="comma-separated, or `run`")
    ap.add_argument("--keep", type=Path, default=None, help="keep the data under this folder")
    ap.add_argument("--target", type=int, default=1_000_000, help="sessions to estimate for")
    ap.add_argument("--cores-per-node", type=int, default=32, help="for the estimate")
    ap.add_argument("--efficiency", type=float, default=0.8, help="for the estimate")
    ap.add_argument("--stage", help=argparse.SUPPRESS)
    ap.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.stage in ("local", "ray"):
        stages = local_stages if args.stage == "local" else ray_stages
        print(json.dumps(stages(args.root, args.cpus, args.policies)))
        return
    base = args.keep or Path(tempfile.mkdtemp(prefix="bench-ray-"))
    rows: list[tuple[int, dict[str, Any], dict[str, Any]]] = []
    for mult in (int(x) for x in args.sizes.split(",")):
        sessions = args.base * mult
        root = base / f"x{mult}"
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        for name in SETUP:
            in_child(name, root, sessions, args.cpus, args.policies)
        local = child("local", root, args.cpus, args.policies)
        remote = child("ray", root, args.cpus, args.policies)
        remote["sessions"] = sessions
        rows.append((mult, local, remote))
        print(f"  {mult:>2}× done ({sessions} sessions)", file=sys.stderr, flush=True)
        if args.keep is None:
            shutil.rmtree(root)
    print(
        f"\n{'size':>5} {'sessions':>8} {'stage':<11} {'local s':>8} {'ray s':>7} "
        f"{'ray/local':>9} {'local MB':>9} {'driver MB':>9} {'worker MB':>9} {'tasks':>6} "
        f"{'workers':>7} {'ray start s':>11}"
    )
    for mult, local, remote in rows:
        for name in ("replay", "judge-flow"):
            lo, ra = local[name], remote[name]
            print(
                f"{mult:>4}× {remote['sessions']:>8} {name:<11} {lo['seconds']:8.1f} "
                f"{ra['seconds']:7.1f} {ra['seconds'] / lo['seconds']:9.2f} "
                f"{local['peak_mb']:9.0f} {remote['driver_mb']:9.0f} {ra['worker_mb']:9.0f} "
                f"{ra['tasks']:>6} {ra['workers']:>7} {remote['ray_start_s']:11.1f}"
            )
    print(
        "\n(seconds: in the process, start-up and imports left out; local MB: the local "
        "child and its workers; driver MB / worker MB: the Ray driver, the largest Ray worker)"
    )
    # the estimate, from the largest size's task time per unit
    mult, local, remote = rows[-1]
    per_session = remote["cases"] / remote["sessions"]
    n_policies = len(policy_list(args.policies))
    print(
        f"\nestimate for {args.target:,} sessions, from the {mult}× run: "
        f"{per_session:.2f} cases/session, {n_policies} policies, "
        f"{args.cores_per_node} cores/node, efficiency {args.efficiency:.0%}"
    )
    for name in ("replay", "judge-flow"):
        ra = remote[name]
        e = estimate(
            name, args.target, per_session, n_policies, ra["task_seconds"] / max(1, ra["units"]),
            args.cores_per_node, args.efficiency,
        )  # fmt: skip
        print(
            f"  {name:<11} {e.units:>14,.0f} units × {e.seconds_per_unit * 1000:7.2f} ms = "
            f"{e.core_hours:8.1f} core-hours = {e.node_hours:6.2f} node-hours "
            f"(10 nodes: {e.node_hours / 10 * 60:5.1f} min)"
        )
        print(f"    inputs: {json.dumps(asdict(e))}")


if __name__ == "__main__":
    main()
