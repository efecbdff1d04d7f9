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
                                   [--storage local,s3] [--nodes 1|2] [--policies a,b,c]
                                   [--target 1000000] [--cores-per-node 32] [--tariff gpt-4o-mini]

With ``--storage s3`` the same stages run with the corpus and cases on a moto S3 server started
here (uploaded untimed) and the run on it too (its tasks publish their parts there). With
``--nodes 2`` (``s3`` only) the Ray stages run on a real two-node Ray cluster started here
(``tests/ray_nodes.py``: a head node, and a worker node that cannot see this machine's ``/tmp``),
the ``--cpus`` split between them. Each stage also times the flow judge's corpus pass apart:
worker processes on this machine (local) against Ray tasks over the cluster (ray). The llm
judge's estimate uses its prompt tokens per verdict, rendered (not sent) over the first size's
run, at a stated tariff, answer length and endpoint throughput.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
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


def where(root: Path, store: str | None) -> tuple[str, str, str]:
    """Corpus, cases and the folder runs go in: under ``root``, or under the S3 URI ``store``
    (the corpus and cases uploaded there by :func:`upload`)."""
    base = store or str(root)
    return f"{base}/corpus", f"{base}/cases.parquet", base


def upload(root: Path, store: str) -> None:
    """The corpus and cases of ``root`` copied to ``store`` (untimed: an import to S3 is
    ``bench_object_storage.py``'s)."""
    from ctxreplay import storage

    storage.upload(root / "corpus", f"{store}/corpus")
    storage.write_bytes(f"{store}/cases.parquet", (root / "cases.parquet").read_bytes())


def corpus_pass_seconds(corpus: str, address: str | None = None, ray: bool = False) -> float:
    """The flow judge's corpus pass over ``corpus``: in worker processes here, or (``ray``) as
    Ray tasks over the cluster this process is connected to."""
    from ctxreplay.datasets.store import Corpus
    from ctxreplay.engines.judge import ray_pass
    from ctxreplay.judges.base import corpus_pass, make_judge

    judge, opened = make_judge("flow"), Corpus(corpus)
    t = time.perf_counter()
    with corpus_pass(functools.partial(ray_pass, address=address) if ray else None):
        judge.corpus_state(opened)
    return time.perf_counter() - t


def local_stages(
    root: Path, cpus: int, policies: str, store: str | None, address: str | None = None
) -> dict[str, Any]:
    """In a child: replay and judge with the local engine (into ``run-local``), timed in the
    process like the Ray stages (imports and start-up left out of both)."""
    from ctxreplay.engines.judge import run_judge
    from ctxreplay.engines.replay import run_replay

    corpus, cases, base = where(root, store)
    names = policy_list(policies)
    t = time.perf_counter()
    r = run_replay(corpus, cases, names, f"{base}/run-local", workers=cpus, progress=False)
    out: dict[str, Any] = {"replay": {"seconds": time.perf_counter() - t}}
    t = time.perf_counter()
    run_judge(f"{base}/run-local", "flow", workers=cpus, progress=False)
    out["judge-flow"] = {"seconds": time.perf_counter() - t}
    out["pass"] = {"seconds": corpus_pass_seconds(corpus)}
    out["cases"] = r.cases
    return out


def ray_stages(
    root: Path, cpus: int, policies: str, store: str | None, address: str | None = None
) -> dict[str, Any]:
    """In a child: start a local Ray (or join the cluster at ``address``), replay and judge
    with the Ray engine (into ``run-ray``)."""
    import ray

    from ctxreplay.engines.judge import run_judge
    from ctxreplay.engines.replay import run_replay

    corpus, cases, base = where(root, store)
    out: dict[str, Any] = {}
    started = time.perf_counter()
    if address:
        ray.init(address=address, log_to_driver=False)
    else:
        ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    out["ray_start_s"] = time.perf_counter() - started
    t = time.perf_counter()
    names = policy_list(policies)
    r = run_replay(corpus, cases, names, f"{base}/run-ray", progress=False, engine="ray")
    out["replay"] = _stage(time.perf_counter() - t, r.cases * len(names))
    t = time.perf_counter()
    j = run_judge(f"{base}/run-ray", "flow", progress=False, engine="ray")
    out["judge-flow"] = _stage(time.perf_counter() - t, j.judged)
    out["pass"] = _stage(corpus_pass_seconds(corpus, address, ray=True), 0)
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
        "nodes": len({t.node for t in last_tasks}),
    }


def child(
    stage: str, root: Path, cpus: int, policies: str, store: str | None, cluster: Any = None
) -> dict[str, Any]:
    """``local_stages`` or ``ray_stages`` in a fresh process; with its wall time and the peak
    RSS (MB) of it and the processes it waited for (the local engine's workers; not Ray's,
    which its tasks report). ``cluster``: the two-node cluster the Ray stages join."""
    started = time.perf_counter()
    address = ["--address", cluster.address] if cluster is not None else []
    proc = subprocess.Popen(
        [sys.executable, __file__, "--stage", stage, "--root", str(root), "--cpus", str(cpus),
         "--policies", policies, *(["--store", store] if store else []), *address],
        stdout=subprocess.PIPE, env=cluster.env if cluster is not None else None,
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


def llm_estimate(
    verdicts: float,
    prompt_tokens: float,
    completion_tokens: float,
    tariff: str,
    requests_per_s: float,
) -> dict[str, Any]:
    """The llm judge for ``verdicts`` verdicts: tokens, USD at ``tariff`` (``tariffs.toml``:
    prompts uncached, the worst case), and endpoint-hours at ``requests_per_s`` per endpoint."""
    from ctxreplay.tariffs import load_tariff

    price = load_tariff(tariff)
    usd = verdicts * price.cost(round(prompt_tokens), 0, round(completion_tokens))
    return {
        "verdicts": verdicts, "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens, "tariff": tariff,
        "usd_per_mtok_in": price.input, "usd_per_mtok_out": price.output, "usd": usd,
        "requests_per_s": requests_per_s,
        "endpoint_hours": verdicts / requests_per_s / 3600,
    }  # fmt: skip


def local_copy(server: Any, mult: int, root: Path) -> Path:
    """The local run of a size, where the llm judge's prompts are rendered from (a copy of it
    when it is on the S3 server)."""
    if (root / "run-local").is_dir() or server is None:
        return root / "run-local"
    from ctxreplay import storage

    storage.download(server.uri(f"x{mult}/run-local"), root / "run-local")
    return root / "run-local"


def prompt_tokens(run: Path) -> float:
    """The llm judge's mean prompt tokens per (case, policy) of a run, rendered, not sent
    (``bench_llm_prompt.measure`` at the judge's default budget)."""
    from bench_llm_prompt import measure

    from ctxreplay.judges.llm import LLMJudgeParams

    judged, _, _ = measure(run, LLMJudgeParams().max_prompt_tokens)
    return sum(judged) / max(1, len(judged))


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--base", type=int, default=125, help="sessions at 1×")
    ap.add_argument("--sizes", default="1,4,16", help="multiples of the base")
    ap.add_argument("--cpus", type=int, default=2, help="local workers, and the local Ray's CPUs")
    ap.add_argument("--policies", default=POLICIES, help="comma-separated, or `run`")
    ap.add_argument(
        "--storage", default="local", help="local, s3 (a moto S3 server here), or local,s3"
    )
    ap.add_argument("--keep", type=Path, default=None, help="keep the data under this folder")
    ap.add_argument("--target", type=int, default=1_000_000, help="sessions to estimate for")
    ap.add_argument("--cores-per-node", type=int, default=32, help="for the estimate")
    ap.add_argument("--efficiency", type=float, default=0.8, help="for the estimate")
    ap.add_argument("--tariff", default="gpt-4o-mini", help="llm judge model, for the estimate")
    ap.add_argument(
        "--completion-tokens", type=float, default=300, help="llm judge answer, for the estimate"
    )
    ap.add_argument(
        "--endpoint-rps", type=float, default=4.0,
        help="llm judge requests/s one endpoint serves (e.g. 16 in flight × 4 s)",
    )  # fmt: skip
    ap.add_argument(
        "--nodes", type=int, choices=(1, 2), default=1,
        help="2: the Ray stages on a two-node Ray cluster started here (needs --storage s3)",
    )  # fmt: skip
    ap.add_argument("--address", help=argparse.SUPPRESS)
    ap.add_argument(
        "--no-llm", action="store_true", help="leave out the llm judge's estimate (its prompts "
        "are rendered over the first size's run: minutes at 16×)",
    )  # fmt: skip
    ap.add_argument("--stage", help=argparse.SUPPRESS)
    ap.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--store", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.stage in ("local", "ray"):
        stages = local_stages if args.stage == "local" else ray_stages
        print(json.dumps(stages(args.root, args.cpus, args.policies, args.store, args.address)))
        return
    base = args.keep or Path(tempfile.mkdtemp(prefix="bench-ray-"))
    os.environ.setdefault("CTXREPLAY_CACHE_DIR", str(base / "cache"))
    kinds = args.storage.split(",")
    if args.nodes == 2 and kinds != ["s3"]:
        raise SystemExit("--nodes 2 needs --storage s3: the worker node sees no local folder")
    with contextlib.ExitStack() as stack:
        server = cluster = None
        if "s3" in kinds:
            sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
            from s3_server import ENV, free_port, moto_s3

            server = stack.enter_context(moto_s3("bench"))
            if args.nodes == 2:
                from ray_nodes import TESTS, two_nodes

                env = {k: os.environ[k] for k in ENV}
                env |= {"CTXREPLAY_CACHE_DIR": "/tmp/ctxreplay-cache", "PYTHONPATH": str(TESTS)}
                head = max(1, args.cpus // 2)
                cluster = stack.enter_context(
                    two_nodes(free_port(), head_cpus=head, worker_cpus=max(1, args.cpus - head),
                              worker_env=env)
                )  # fmt: skip
        rows, llm_tokens = sizes(args, base, kinds, server, cluster)
    print(
        f"\n{'size':>5} {'sessions':>8} {'storage':<7} {'stage':<11} {'local s':>8} {'ray s':>7} "
        f"{'ray/local':>9} {'local MB':>9} {'driver MB':>9} {'worker MB':>9} {'tasks':>6} "
        f"{'workers':>7} {'nodes':>5} {'ray start s':>11}"
    )
    for mult, kind, local, remote in rows:
        for name in ("replay", "judge-flow", "pass"):
            lo, ra = local[name], remote[name]
            print(
                f"{mult:>4}× {remote['sessions']:>8} {kind:<7} {name:<11} {lo['seconds']:8.1f} "
                f"{ra['seconds']:7.1f} {ra['seconds'] / lo['seconds']:9.2f} "
                f"{local['peak_mb']:9.0f} {remote['driver_mb']:9.0f} "
                f"{ra['worker_mb']:9.0f} {ra['tasks']:>6} {ra['workers']:>7} {ra['nodes']:>5} "
                f"{remote['ray_start_s']:11.1f}"
            )
    print(
        "\n(seconds: in the process, start-up and imports left out; local MB: the local "
        "child and its workers; driver MB / worker MB: the Ray driver, the largest Ray worker; "
        "s3: corpus, cases and runs on the S3 server, each task publishing its parts there; "
        "pass: the flow judge's corpus pass alone, worker processes here against Ray tasks; "
        f"ray on {'a two-node cluster' if cluster is not None else 'one machine'})"
    )
    # the estimate, from the largest size's task time per unit
    mult, _, local, remote = max(rows, key=lambda r: r[0])
    per_session = remote["cases"] / remote["sessions"]
    n_policies = len(policy_list(args.policies))
    print(
        f"\nestimate for {args.target:,} sessions, from the {mult}× run: "
        f"{per_session:.2f} cases/session, {n_policies} policies, "
        f"{args.cores_per_node} cores/node, efficiency {args.efficiency:.0%}"
    )
    units = 0.0
    for name in ("replay", "judge-flow"):
        ra = remote[name]
        e = estimate(
            name, args.target, per_session, n_policies, ra["task_seconds"] / max(1, ra["units"]),
            args.cores_per_node, args.efficiency,
        )  # fmt: skip
        units = e.units
        print(
            f"  {name:<11} {e.units:>14,.0f} units × {e.seconds_per_unit * 1000:7.2f} ms = "
            f"{e.core_hours:8.1f} core-hours = {e.node_hours:6.2f} node-hours "
            f"(10 nodes: {e.node_hours / 10 * 60:5.1f} min)"
        )
        print(f"    inputs: {json.dumps(asdict(e))}")
    if args.no_llm:
        return
    llm = llm_estimate(units, llm_tokens, args.completion_tokens, args.tariff, args.endpoint_rps)
    print(
        f"  judge-llm   {units:>14,.0f} verdicts × {llm_tokens:,.0f} prompt + "
        f"{args.completion_tokens:,.0f} completion tokens = ${llm['usd']:,.0f} at {args.tariff}; "
        f"{llm['endpoint_hours']:,.0f} endpoint-hours at {args.endpoint_rps:g} requests/s "
        f"(100 endpoints: {llm['endpoint_hours'] / 100:,.1f} h)"
    )
    print(f"    inputs: {json.dumps(llm)}")


def sizes(
    args: argparse.Namespace, base: Path, kinds: list[str], server: Any, cluster: Any = None
) -> tuple[list[tuple[int, str, dict[str, Any], dict[str, Any]]], float]:
    """Every size, on every storage: (size, storage, local, ray), and the llm judge's mean
    prompt tokens per verdict (measured at the first size: it does not grow with the corpus)."""
    rows: list[tuple[int, str, dict[str, Any], dict[str, Any]]] = []
    llm_tokens = 0.0
    for mult in (int(x) for x in args.sizes.split(",")):
        sessions = args.base * mult
        root = base / f"x{mult}"
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        for name in SETUP:
            in_child(name, root, sessions, args.cpus, args.policies)
        for kind in kinds:
            store = server.uri(f"x{mult}") if kind == "s3" else None
            if store:
                upload(root, store)
            local = child("local", root, args.cpus, args.policies, store)
            remote = child("ray", root, args.cpus, args.policies, store, cluster)
            remote["sessions"] = sessions
            rows.append((mult, kind, local, remote))
            print(f"  {mult:>2}× {kind} done ({sessions} sessions)", file=sys.stderr, flush=True)
        if not llm_tokens and not args.no_llm:
            llm_tokens = prompt_tokens(local_copy(server, mult, root))
        if args.keep is None:
            shutil.rmtree(root)
    return rows, llm_tokens


if __name__ == "__main__":
    main()
