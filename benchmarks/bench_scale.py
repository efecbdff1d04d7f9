"""The whole pipeline as the corpus grows: wall time and peak memory of every stage.

synth → export (JSONL) → import → cases → replay → judge (flow and anchor) → report, at 1×, 4× and
16× a base number of synthetic sessions. Each stage runs in a child process of its own, so its
peak resident memory (``ru_maxrss`` of that child and of the workers it started) is its own.
Memory should stay flat (the stages stream fixed chunks) and time grow linearly; the judges
should take at most replay's time. Tokens/s compares each stage with a bare tokenisation pass
over the same text (what any exact-count import must at least do).

    python benchmarks/bench_scale.py [--base 125] [--sizes 1,4,16] [--workers 2] [--keep DIR]
                                     [--policies run|a,b,c]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _shared import in_child as child_process

#: the policies replayed by default; ``--policies run`` replays those of ``ctxreplay run`` (ten):
#: the judges' work per case is the same for any number of policies, replay's grows with it
POLICIES = "noop,tool-prune,oldest-turn,observation-masking"
STAGES = ("synth", "export", "import", "cases", "replay", "judge-flow", "judge-anchor", "report")


def policy_list(spec: str) -> list[str]:
    """``run`` → the policies of ``ctxreplay run``; else a comma-separated list."""
    if spec == "run":
        from ctxreplay.engines.pipeline import DEMO_POLICIES

        return list(DEMO_POLICIES)
    return spec.split(",")


def stage(
    name: str, root: Path, sessions: int, workers: int, policies: str = POLICIES
) -> dict[str, Any]:
    """Run one stage in this process (the child); what it made, for the table."""
    from ctxreplay.datasets.store import Corpus

    out: dict[str, Any] = {}
    if name == "synth":
        from ctxreplay.datasets.synth import generate

        generate(root / "synth", sessions=sessions, seed=0, progress=False)
    elif name == "export":
        from ctxreplay.datasets.export import export_corpus

        out["sessions"] = export_corpus(root / "synth", root / "traces.jsonl")
        out["mb"] = (root / "traces.jsonl").stat().st_size / 1e6
    elif name == "import":
        from ctxreplay.datasets.ingest import import_paths

        s = import_paths([root / "traces.jsonl"], root / "corpus", progress=False)
        out.update(sessions=s.sessions, messages=s.messages, tokens=s.tokens)
    elif name == "cases":
        from ctxreplay.datasets.cases import cut_corpus

        frame, _ = cut_corpus(Corpus(root / "corpus"), root / "cases.parquet", triggers=["every:4"])
        out["cases"] = frame.height
    elif name == "replay":
        from ctxreplay.engines.replay import run_replay

        r = run_replay(
            root / "corpus", root / "cases.parquet", policy_list(policies), root / "run",
            workers=workers, progress=False,
        )  # fmt: skip
        out["views"] = r.cases * len(policy_list(policies))
    elif name.startswith("judge-"):
        from ctxreplay.engines.judge import run_judge

        j = run_judge(root / "run", name.removeprefix("judge-"), workers=workers, progress=False)
        out["verdicts"] = j.judged
    elif name == "tokpass":
        out.update(tokenisation_floor(root))
    elif name == "report":
        from ctxreplay.reports.report import build_report

        report = build_report(root / "run")
        out["policies"] = report.no_impact.height
    else:
        raise SystemExit(f"unknown stage {name}")
    return out


def in_child(
    name: str, root: Path, sessions: int, workers: int, policies: str = POLICIES
) -> dict[str, Any]:
    """One stage in a fresh process: its result, wall time and peak RSS (MB)."""
    return child_process(
        [sys.executable, __file__, "--stage", name, "--root", str(root),
         "--sessions", str(sessions), "--workers", str(workers), "--policies", policies],
        f"stage {name} at {sessions} sessions",
    )  # fmt: skip


def tokenisation_floor(root: Path) -> dict[str, Any]:
    """Seconds to tokenise every message text of the corpus once, and the tokens (run in a
    child too: the parent stays small, so the children's peak memory is their own)."""
    from ctxreplay.datasets.store import Corpus
    from ctxreplay.datasets.tokenizer import get_tokenizer

    corpus = Corpus(root / "corpus")
    texts = [
        s for _, ms in corpus.iter_sessions() for m in ms for p in m.parts for s in p.token_texts()
    ]
    tok = get_tokenizer(corpus.tokenizer_name)
    tok.count("warm up")
    started = time.perf_counter()
    total = sum(tok.count_many(texts))
    return {"floor_seconds": time.perf_counter() - started, "tokens": total}


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--base", type=int, default=125, help="sessions at 1×")
    ap.add_argument("--sizes", default="1,4,16", help="multiples of the base")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--keep", type=Path, default=None, help="keep the data under this folder")
    ap.add_argument(
        "--policies", default=POLICIES, help="comma-separated, or `run` for ctxreplay run's ten"
    )
    ap.add_argument("--stage", help=argparse.SUPPRESS)
    ap.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--sessions", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.stage:
        print(json.dumps(stage(args.stage, args.root, args.sessions, args.workers, args.policies)))
        return
    base = args.keep or Path(tempfile.mkdtemp(prefix="bench-scale-"))
    rows: list[tuple[int, str, dict[str, Any]]] = []
    floors: dict[int, tuple[float, int]] = {}
    for mult in (int(x) for x in args.sizes.split(",")):
        sessions = args.base * mult
        root = base / f"x{mult}"
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        for name in STAGES:
            rows.append((mult, name, in_child(name, root, sessions, args.workers, args.policies)))
            print(f"  {mult:>2}× {name:<12} {rows[-1][2]['seconds']:7.1f} s  "
                  f"{rows[-1][2]['peak_mb']:7.0f} MB", file=sys.stderr, flush=True)  # fmt: skip
        floor = in_child("tokpass", root, sessions, args.workers)
        floors[mult] = (floor["floor_seconds"], floor["tokens"])
        if args.keep is None:
            shutil.rmtree(root)
    print(
        f"\n{'size':>5} {'stage':<13} {'seconds':>8} {'peak MB':>8} {'tok/s':>12} {'vs tok pass':>11}  made"
    )
    for mult, name, r in rows:
        floor_s, tokens = floors[mult]
        made = {k: v for k, v in r.items() if k not in ("seconds", "peak_mb")}
        rate = (
            tokens / r["seconds"]
            if name in ("import", "replay", "judge-flow", "judge-anchor")
            else None
        )
        ratio = r["seconds"] / floor_s if rate else None
        print(
            f"{mult:>4}× {name:<13} {r['seconds']:8.1f} {r['peak_mb']:8.0f} "
            f"{(f'{rate:,.0f}' if rate else ''):>12} {(f'{ratio:.1f}×' if ratio else ''):>11}  "
            f"{json.dumps(made)}"
        )
    print(
        f"\n{'size':>5} {'tokens':>12} {'tok pass s':>10} {'judge-flow/replay':>18} {'judge-anchor/replay':>20}"
    )
    for mult, (floor_s, tokens) in floors.items():
        t = {name: r["seconds"] for m, name, r in rows if m == mult}
        print(
            f"{mult:>4}× {tokens:>12,} {floor_s:>10.2f} {t['judge-flow'] / t['replay']:>18.2f} "
            f"{t['judge-anchor'] / t['replay']:>20.2f}"
        )
    peaks = {name: [r["peak_mb"] for _, n, r in rows if n == name] for name in STAGES}
    print("\npeak RSS growth from the smallest to the largest size:")
    for name, values in peaks.items():
        print(
            f"  {name:<13} {values[0]:7.0f} → {values[-1]:7.0f} MB  ({values[-1] / values[0] - 1:+.0%})"
        )


if __name__ == "__main__":
    main()
