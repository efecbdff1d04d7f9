"""The one-command pipeline: synthesise or import → cases → replay (→ judge → report).

Each stage writes into one folder and is skipped when its output is already there, so a
re-run only does what is missing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..datasets.cases import cut_corpus
from ..datasets.store import Corpus
from ..judges.base import DEFAULT_JUDGE

DEMO_POLICIES: tuple[str, ...] = (
    "noop",
    "oldest-turn",
    "tool-prune",
    "tool-mask+prune",
    "hybrid",
    "observation-masking",
    "clear-tool-uses:trigger=0",
    "recorded",
    "self-gc",
    "agent-forgetting:reminder_tokens=8000",
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
    tariff: str | None = None
    tariffs_path: str | None = None
    judge: str = DEFAULT_JUDGE
    judge_options: dict[str, str] = field(default_factory=dict)
    reference: str | None = None
    bootstrap: int = 2000
    report_format: str = "terminal"
    progress: bool = True


def prepare_corpus(cfg: PipelineConfig) -> tuple[Corpus, str]:
    path = cfg.out / "corpus"
    if (path / "manifest.json").exists():
        return Corpus(path), f"corpus: reusing {path}"
    if cfg.sources:
        from ..datasets.ingest import import_paths

        summary = import_paths(cfg.sources, path, progress=cfg.progress)
        return Corpus(path), summary.render()
    from ..datasets.synth import generate

    summary = generate(path, sessions=cfg.synth_sessions, seed=cfg.seed, progress=cfg.progress)
    return Corpus(path), summary.render()


def prepare_cases(cfg: PipelineConfig, corpus: Corpus) -> tuple[Path, str]:
    path = cfg.out / "cases.parquet"
    if path.exists():
        return path, f"cases: reusing {path}"
    frame, path = cut_corpus(
        corpus,
        path,
        triggers=cfg.triggers,
        window=cfg.window,
        horizon=cfg.horizon,
        suite=cfg.suite,
        sample=cfg.sample,
        seed=cfg.seed,
    )
    return path, f"cases: {frame.height} from {frame['session_id'].n_unique()} sessions → {path}"


def run_pipeline(cfg: PipelineConfig, echo=print) -> Path:
    """Run every stage that is not done yet; returns the run folder."""
    from ..reports import build_report
    from .judge import run_judge
    from .replay import run_replay

    os.makedirs(cfg.out, exist_ok=True)
    corpus, said = prepare_corpus(cfg)
    echo(said)
    cases, said = prepare_cases(cfg, corpus)
    echo(said)
    run = cfg.out / "run"
    summary = run_replay(
        corpus.path,
        cases,
        cfg.policies,
        run,
        workers=cfg.workers,
        tariff=cfg.tariff,
        tariffs_path=cfg.tariffs_path,
        progress=cfg.progress,
        seed=cfg.seed,
    )
    echo(summary.render())
    judged = run_judge(
        run,
        cfg.judge,
        workers=cfg.workers,
        progress=cfg.progress,
        overrides=dict(cfg.judge_options),
    )
    echo(judged.render())
    report = build_report(
        run, judge=judged.judge, reference=cfg.reference, seed=cfg.seed, bootstrap=cfg.bootstrap
    )
    echo(report.render(cfg.report_format))
    for path in report.save(cfg.out / "report.html"):
        echo(f"HTML report: {path}")
    return run
