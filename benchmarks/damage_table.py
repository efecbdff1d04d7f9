"""Damaged run and corpus state: what each command says, and what a resumed run repairs.

Builds a small run (a synthetic corpus, ``ctxreplay synth``; two policies; the flow judge), then,
on a fresh copy per kind of damage, damages it and runs the commands that read it, as a user
would (each in a subprocess): the readers (``info``, ``sql``, ``report``, ``show``,
``export-verdicts``, ``audit``) first, then the repairs (``replay`` with the same arguments,
``judge``), then ``report`` again. It prints one row per command — damage, command, exit
status, first line of output — and checks that no output holds a traceback and that each
resumed replay/judge repaired what it can (the same rows as the undamaged run, or the refusal or
unscored verdicts the damage calls for).

    python benchmarks/damage_table.py [--sessions 12] [--keep DIR]

Exit status 0 when every check holds, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

POLICIES = ["tool-prune:keep=1", "self-gc"]
CTX = [sys.executable, "-m", "ctxreplay.cli"]


@dataclass
class Result:
    command: str
    code: int
    first: str
    traceback: bool


@dataclass
class Case:
    """One kind of damage: how to apply it, and what must hold once replay and judge ran."""

    kind: str
    damage: Callable[[Path], None]
    replay_cases: str = "cases.parquet"  # the cases file the resumed replay is given
    expect: str = "repaired"  # repaired | refused | unscored | corpus
    rows: list[Result] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def run(args: list[str], cwd: Path) -> Result:
    env = {**os.environ, "CTXREPLAY_CACHE_DIR": str(cwd / "cache"), "COLUMNS": "200"}
    done = subprocess.run([*CTX, *args], cwd=cwd, capture_output=True, text=True, env=env)
    out = done.stdout + done.stderr
    lines = [line for line in (done.stderr if done.returncode else done.stdout).splitlines()]
    lines = [line.strip() for line in lines if line.strip()] or [
        line.strip() for line in out.splitlines() if line.strip()
    ]
    first = (lines[0] if lines else "").replace(str(cwd) + "/", "")
    shown = " ".join(a if " " not in a else f'"{a}"' for a in args)
    return Result(shown, done.returncode, first, "Traceback" in out)


# --- building the undamaged run ------------------------------------------------------------


def build_base(root: Path, sessions: int) -> dict[str, object]:
    root.mkdir(parents=True)
    steps = [
        ["synth", "-o", "corpus", "--sessions", str(sessions), "--quiet"],
        ["cases", "corpus", "-o", "cases.parquet", "--trigger", "user-turns"],
        ["cases", "corpus", "-o", "other-cases.parquet", "--trigger", "every:3"],
        [
            "replay",
            "corpus",
            "--cases",
            "cases.parquet",
            "-o",
            "run",
            *(x for p in POLICIES for x in ("--policy", p)),
            "--quiet",
        ],
        ["judge", "run", "--quiet"],
    ]
    for step in steps:
        r = run(step, root)
        if r.code:
            raise SystemExit(f"building the run failed at `{r.command}`: {r.first}")
    return counts(root / "run")


def counts(run_dir: Path) -> dict[str, object]:
    """What a whole run holds: rows per table and policy, verdicts, unscored verdicts."""
    from ctxreplay.runs import Run, read_verdicts

    r = Run(run_dir)
    out: dict[str, object] = {
        t: r.table(t).group_by("policy").len().sort("policy").rows()
        for t in ("figures", "decisions", "views")
    }
    v = read_verdicts(run_dir)
    out["verdicts"] = v.height
    out["unscored"] = int((v["label"] == "unscored").sum())
    return out


# --- the damages ---------------------------------------------------------------------------


def _part(root: Path, table: str, policy: str = "self-gc", chunk: int = 1) -> Path:
    from ctxreplay.runs import slug

    return root / "run" / table / slug(policy) / f"chunk-{chunk:05d}.parquet"


def _truncate(path: Path, keep: float = 0.5) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def _first_verdict_part(root: Path) -> Path:
    return sorted((root / "run" / "verdicts").glob("*/*.parquet"))[0]


def _sidecar_files(root: Path) -> list[Path]:
    return sorted(p for p in (root / "run" / "sidecar").rglob("*") if p.is_file())


def _forget_verdicts(root: Path) -> None:
    shutil.rmtree(root / "run" / "verdicts")


def alter_sidecar(root: Path) -> None:
    _forget_verdicts(root)  # judged afresh: the damaged payload is met while judging
    path = _sidecar_files(root)[0]
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def delete_sidecar(root: Path) -> None:
    _forget_verdicts(root)
    _sidecar_files(root)[0].unlink()


def leftover_temps(root: Path) -> None:
    folder = _part(root, "figures").parent
    old = time.time() - 3600
    for name in (
        ".chunk-00000.parquet.999999999-deadbeef.tmp",  # its writer's pid is gone
        ".chunk-00001.parquet.abcd1234.tmp",  # older versions named no pid
        f".manifest.json.{os.getpid()}-live0001.tmp",  # a live process's: must stay
    ):
        path = folder / name if "chunk" in name else root / "run" / name
        path.write_bytes(b"half a file")
        os.utime(path, (old, old))


def verdicts_a_file(root: Path) -> None:
    _forget_verdicts(root)
    (root / "run" / "verdicts").write_text("not a folder\n")


def corrupt_manifest(root: Path) -> None:
    path = root / "run" / "manifest.json"
    path.write_text(path.read_text()[:200])


def delete_manifest(root: Path) -> None:
    (root / "run" / "manifest.json").unlink()


def corrupt_corpus_manifest(root: Path) -> None:
    path = root / "corpus" / "manifest.json"
    path.write_text(path.read_text()[:100])


def truncate_corpus_messages(root: Path) -> None:
    _truncate(sorted((root / "corpus" / "messages").rglob("*.parquet"))[0])


def delete_done_marker(root: Path) -> None:
    from ctxreplay.runs import done_path

    done_path(root / "run", "self-gc", 1).unlink()


def delete_part(root: Path) -> None:
    _part(root, "decisions", "tool-prune:keep=1", 0).unlink()


def corrupt_judge_state(root: Path) -> None:
    for path in (root / "run" / "judge-state").glob("*.json"):
        path.write_text("{not json")
    _first_verdict_part(root).unlink()  # so the judge has work, and needs its state


CASES = [
    Case("truncated figures part", lambda r: _truncate(_part(r, "figures"))),
    Case("truncated views part", lambda r: _truncate(_part(r, "views"))),
    Case("truncated decisions part", lambda r: _truncate(_part(r, "decisions", chunk=0))),
    Case("deleted decisions part", delete_part),
    Case("truncated verdicts part", lambda r: _truncate(_first_verdict_part(r))),
    Case("deleted done-marker", delete_done_marker),
    Case("deleted manifest, same cases", delete_manifest),
    Case(
        "deleted manifest, other cases",
        delete_manifest,
        replay_cases="other-cases.parquet",
        expect="refused",
    ),
    Case("corrupted manifest JSON", corrupt_manifest),
    Case("truncated corpus messages part", truncate_corpus_messages, expect="corpus"),
    Case("corrupted corpus manifest", corrupt_corpus_manifest, expect="corpus"),
    Case("altered sidecar payload", alter_sidecar, expect="unscored"),
    Case("deleted sidecar payload", delete_sidecar, expect="unscored"),
    Case("leftover .tmp files", leftover_temps),
    Case("verdicts folder is a file", verdicts_a_file),
    Case("corrupted judge-state JSON", corrupt_judge_state),
]


# --- running one case ----------------------------------------------------------------------


def prepare(base: Path, root: Path) -> None:
    for name in ("corpus", "run", "cases.parquet", "other-cases.parquet"):
        src = base / name
        if src.is_dir():
            shutil.copytree(src, root / name)
        else:
            shutil.copy2(src, root / name)
    manifest = root / "run" / "manifest.json"
    doc = json.loads(manifest.read_text())
    doc["corpus_path"] = str((root / "corpus").resolve())
    doc["cases_path"] = str((root / "cases.parquet").resolve())
    manifest.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")


def play(
    case: Case, base: Path, root: Path, show: tuple[str, str], whole: dict[str, object]
) -> Case:
    prepare(base, root)
    case.damage(root)
    readers = [
        ["info", "corpus"],
        ["sql", "run", "SELECT count(*) AS n FROM figures"],
        ["report", "run"],
        ["show", "run", show[0], "--policy", show[1]],
        ["export-verdicts", "run", "--to", "otel", "-o", "verdicts.jsonl"],
        ["audit", "run", "--category", "live_state"],
    ]
    repairs = [
        [
            "replay",
            "corpus",
            "--cases",
            case.replay_cases,
            "-o",
            "run",
            *(x for p in POLICIES for x in ("--policy", p)),
            "--quiet",
        ],
        ["judge", "run", "--quiet"],
        ["report", "run"],
    ]
    for args in readers:
        case.rows.append(run(args, root))
    replay_at = len(case.rows)
    for args in repairs:
        case.rows.append(run(args, root))
    for r in case.rows:
        if r.traceback:
            case.problems.append(f"traceback from `{r.command}`")
    replay, judge, report = case.rows[replay_at:]
    if case.expect == "refused":
        if replay.code != 2 or "cannot be attributed" not in replay.first:
            case.problems.append(f"replay did not refuse: exit {replay.code} {replay.first!r}")
        return case
    if case.expect == "corpus":
        if not any(r.code == 2 and "corpus" in r.first for r in case.rows):
            case.problems.append("no command named the damaged corpus file")
        return case
    if replay.code or judge.code or report.code:
        case.problems.append(
            f"not repaired: replay {replay.code}, judge {judge.code}, report {report.code}"
        )
        return case
    now = counts(root / "run")
    if case.expect == "unscored":
        if now["verdicts"] != whole["verdicts"] or not now["unscored"]:
            case.problems.append(f"expected every pair judged, some unscored: {now}")
    elif now != whole:
        case.problems.append(f"the run differs from the undamaged one: {now} ≠ {whole}")
    if case.kind == "leftover .tmp files":
        left = sorted(p.name for p in (root / "run").rglob(".*.tmp"))
        if left != [f".manifest.json.{os.getpid()}-live0001.tmp"]:
            case.problems.append(f"temporary files left: {left}")
    return case


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sessions", type=int, default=12)
    ap.add_argument("--keep", type=Path, default=None, help="Work here and keep it.")
    ap.add_argument("--jobs", type=int, default=4)
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="ctxreplay-damage-"))
    base = work / "base"
    started = time.perf_counter()
    whole = build_base(base, args.sessions)
    from ctxreplay.runs import Run

    views = Run(base / "run").table("views", "self-gc")
    with_archive = views.filter(pl.col("archives").list.len() > 0)
    show = (str((with_archive if with_archive.height else views)["case_id"][0]), "self-gc")
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        done = list(
            pool.map(
                lambda ic: play(ic[1], base, work / f"d{ic[0]:02d}", show, whole),
                enumerate(CASES),
            )
        )
    kw = max(len(c.kind) for c in done)
    cw = 44
    print(f"{'damage':<{kw}}  {'command':<{cw}}  exit  first line of output")
    print(f"{'-' * kw}  {'-' * cw}  ----  {'-' * 60}")
    for c in done:
        for i, r in enumerate(c.rows):
            name = c.kind if i == 0 else ""
            print(f"{name:<{kw}}  {r.command[:cw]:<{cw}}  {r.code:>4}  {r.first[:150]}")
    bad = [c for c in done if c.problems]
    tracebacks = sum(r.traceback for c in done for r in c.rows)
    print(
        f"\n{len(done)} kinds of damage, {sum(len(c.rows) for c in done)} commands, "
        f"{tracebacks} tracebacks, {len(done) - len(bad)} checks held "
        f"({time.perf_counter() - started:.0f}s, in {work})"
    )
    for c in bad:
        for p in c.problems:
            print(f"FAILED {c.kind}: {p}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
