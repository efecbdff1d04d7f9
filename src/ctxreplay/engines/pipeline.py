"""The one-command pipeline: synthesise or import → cases → replay → judge → report.

Each stage writes into one folder. ``OUT/pipeline.json`` records, per stage, every input and
option its output was made from (source files with their size and time, the synthetic seed,
the corpus and cases fingerprints, the case options, the tariff); a re-run reuses a stage only
when they all match, and otherwise redoes it — and every stage after it — saying what changed.
Within the run, the engines themselves skip what is done (new policies, new judges).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..datasets.cases import cut_corpus
from ..datasets.store import Corpus
from ..files import atomic_write_text, file_fingerprint
from ..judges.base import DEFAULT_JUDGE

#: every built-in deterministic policy at its registered defaults (the one set of defaults)
DEMO_POLICIES: tuple[str, ...] = (
    "noop",
    "oldest-turn",
    "tool-prune",
    "tool-mask+prune",
    "hybrid",
    "observation-masking",
    "clear-tool-uses",
    "recorded",
    "self-gc",
    "agent-forgetting",
)


@dataclass
class PipelineConfig:
    out: Path
    sources: list[str] = field(default_factory=list)  # trace files; empty → synthetic corpus
    synth_sessions: int = 200
    seed: int = 0
    triggers: tuple[str, ...] = ("user-turns",)
    window: int | None = None
    horizon: str = "all"
    suite: str | None = None
    sample: int | None = None
    policies: tuple[str, ...] = DEMO_POLICIES
    workers: int = 2
    engine: str = "local"  # or "ray": the same output (not an input of any stage)
    ray_address: str | None = None
    tariff: str | None = None
    tariffs_path: str | None = None
    judge: str = DEFAULT_JUDGE
    judge_options: dict[str, str] = field(default_factory=dict)
    reference: str | None = None
    bootstrap: int = 2000
    report_format: str = "terminal"
    progress: bool = True


STATE = "pipeline.json"


@dataclass(frozen=True)
class Stage:
    """One stage of the pipeline: its output and everything that decides what it holds."""

    name: str
    output: Path
    inputs: dict[str, Any]

    def changes(self, recorded: dict[str, Any] | None) -> list[str]:
        """What differs from the inputs recorded when the output was made ([] = the same)."""
        if not self.output.exists():
            return ["not made yet"]
        if recorded is None:
            return ["no record of how it was made"]
        return [
            f"{key} {_short(recorded.get(key))} → {_short(value)}"
            for key, value in self.inputs.items()
            if recorded.get(key) != value
        ]


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _files_state(sources: Sequence[str]) -> list[list[Any]]:
    """Each source file with its size and modification time: a changed or added file is a
    changed input (content hashing a large corpus on every run would cost more than the import
    check is worth)."""
    from ..datasets.ingest import expand

    out: list[list[Any]] = []
    for f in expand(sources):
        st = f.stat() if f.exists() else None
        out.append([str(f.resolve()), st.st_size if st else None, st.st_mtime_ns if st else None])
    return out


class Pipeline:
    """The stages of one output folder, reused only when their recorded inputs match."""

    def __init__(self, cfg: PipelineConfig, echo: Callable[[str], Any]) -> None:
        self.cfg = cfg
        self.echo = echo
        self.path = cfg.out / STATE
        self.state: dict[str, Any] = {}
        if self.path.is_file():
            try:
                self.state = json.loads(self.path.read_text())
            except ValueError:
                self.state = {}

    def fresh(self, stage: Stage, *after: Path) -> bool:
        """True when ``stage``'s output can be reused; otherwise its output and everything made
        from it (``after``) are removed, and the reason is said."""
        changed = stage.changes(self.state.get(stage.name))
        if not changed:
            self.echo(f"{stage.name}: reusing {stage.output} (same inputs)")
            return True
        if changed != ["not made yet"]:
            self.echo(f"{stage.name}: redoing ({'; '.join(changed)})")
        for path in (stage.output, *after):
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
        self.state.pop(stage.name, None)
        self._save()
        return False

    def done(self, stage: Stage) -> None:
        self.state[stage.name] = stage.inputs
        self._save()

    def _save(self) -> None:
        atomic_write_text(self.path, json.dumps(self.state, indent=2, sort_keys=True) + "\n")


def corpus_stage(cfg: PipelineConfig) -> Stage:
    inputs: dict[str, Any] = (
        {"sources": _files_state(cfg.sources)}
        if cfg.sources
        else {"synth_sessions": cfg.synth_sessions, "seed": cfg.seed}
    )
    return Stage("corpus", cfg.out / "corpus", inputs)


def cases_stage(cfg: PipelineConfig, corpus: Corpus) -> Stage:
    inputs = {
        "corpus": corpus.fingerprint(),
        "triggers": list(cfg.triggers),
        "window": cfg.window,
        "horizon": cfg.horizon,
        "suite": cfg.suite,
        "sample": cfg.sample,
        "seed": cfg.seed,
    }
    return Stage("cases", cfg.out / "cases.parquet", inputs)


def replay_stage(cfg: PipelineConfig, corpus: Corpus, cases: Path) -> Stage:
    """What every replayed chunk depends on besides its policy (policies added later are
    replayed into the same run; the engine skips what it has)."""
    inputs = {
        "corpus": corpus.fingerprint(),
        "cases": file_fingerprint(cases),
        "tariff": cfg.tariff,
        "tariffs": file_fingerprint(cfg.tariffs_path) if cfg.tariffs_path else None,
    }
    return Stage("replay", cfg.out / "run", inputs)


def run_pipeline(cfg: PipelineConfig, echo: Callable[[str], Any] = print) -> Path:
    """Run every stage whose output is missing or was made from other inputs; returns the run
    folder. A stage made from other inputs is redone, and so is every stage after it."""
    from ..datasets.ingest import import_paths
    from ..datasets.synth import generate
    from ..reports import build_report
    from .judge import run_judge
    from .replay import run_replay

    os.makedirs(cfg.out, exist_ok=True)
    pipeline = Pipeline(cfg, echo)
    cases_path, run = cfg.out / "cases.parquet", cfg.out / "run"
    stage = corpus_stage(cfg)
    if not pipeline.fresh(stage, cases_path, run):
        if cfg.sources:
            echo(import_paths(cfg.sources, stage.output, progress=cfg.progress).render())
        else:
            synth = generate(
                stage.output, sessions=cfg.synth_sessions, seed=cfg.seed, progress=cfg.progress
            )
            echo(synth.render())
        pipeline.done(stage)
    corpus = Corpus(stage.output)
    stage = cases_stage(cfg, corpus)
    if not pipeline.fresh(stage, run):
        frame, _ = cut_corpus(
            corpus,
            cases_path,
            triggers=cfg.triggers,
            window=cfg.window,
            horizon=cfg.horizon,
            suite=cfg.suite,
            sample=cfg.sample,
            seed=cfg.seed,
        )
        echo(f"cases: {frame.height} from {frame['session_id'].n_unique()} sessions → {cases_path}")
        pipeline.done(stage)
    stage = replay_stage(cfg, corpus, cases_path)
    pipeline.fresh(stage)
    summary = run_replay(
        corpus.path,
        cases_path,
        cfg.policies,
        run,
        workers=cfg.workers,
        tariff=cfg.tariff,
        tariffs_path=cfg.tariffs_path,
        progress=cfg.progress,
        seed=cfg.seed,
        engine=cfg.engine,
        ray_address=cfg.ray_address,
    )
    pipeline.done(stage)
    echo(summary.render())
    judged = run_judge(
        run,
        cfg.judge,
        workers=cfg.workers,
        progress=cfg.progress,
        overrides=dict(cfg.judge_options),
        engine=cfg.engine,
        ray_address=cfg.ray_address,
    )
    echo(judged.render())
    report = build_report(
        run, judge=judged.judge, reference=cfg.reference, seed=cfg.seed, bootstrap=cfg.bootstrap
    )
    echo(report.render(cfg.report_format))
    for path in report.save(cfg.out / "report.html"):
        echo(f"HTML report: {path}")
    return run
