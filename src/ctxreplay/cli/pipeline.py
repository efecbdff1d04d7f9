"""Whole-pipeline commands: run (with --config), demo."""

from __future__ import annotations

import tomllib
from pathlib import Path

import click

from .app import main
from .options import endpoint, engine, judge, option, out, quiet, seed, tariff, workers


def _load_config(ctx: click.Context, _param: click.Parameter, value: Path | None) -> None:
    """``--config run.toml``: its keys become the command's defaults (flag or parameter names)."""
    if value is None:
        return
    try:
        doc = tomllib.loads(value.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise click.BadParameter(f"{value}: {e}") from None
    names = {p.name for p in ctx.command.params if p.name}
    by_flag = {
        o.lstrip("-").replace("-", "_"): p.name
        for p in ctx.command.params
        for o in p.opts
        if p.name
    }
    values = {}
    for key, v in doc.items():
        name = by_flag.get(key.replace("-", "_"), key.replace("-", "_"))
        if name not in names:
            raise click.BadParameter(
                f"{value}: unknown key {key!r}; the keys are this command's options"
            )
        param = next(p for p in ctx.command.params if p.name == name)
        if getattr(param, "multiple", False) and isinstance(v, str):
            v = [v]  # `source = "traces/"` for `source = ["traces/"]`: one value of a list
        values[name] = v
    ctx.default_map = {**(ctx.default_map or {}), **values}


@main.command("run")
@option(
    "--config",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    callback=_load_config,
    is_eager=True,
    expose_value=False,
    help="TOML file whose keys are these options.",
)
@out("Folder for every stage.")
@option("--source", multiple=True, help="Trace files or folders to import [default: synthesise].")
@option("--synth-sessions", type=click.IntRange(min=1), default=200, help="Synthetic sessions.")
@seed
@option("--trigger", multiple=True, default=("user-turns",), help="Case triggers (repeatable).")
@option("--window", type=click.IntRange(min=1), default=None, help="Window for fraction:F.")
@option("--horizon", default="all", help="all · turns:K · messages:K.")
@option("--suite", default=None, help="hard or hard:N.")
@option("--sample", type=click.IntRange(min=1), default=None, help="Keep N cases at random.")
@option("--policy", multiple=True, help="Repeatable [default: every built-in policy].")
@workers
@engine
@tariff
@judge()
@endpoint
@option("--reference", default=None, help="Policy the others are compared with.")
@option("--bootstrap", type=click.IntRange(min=1), default=2000, help="Bootstrap resamples.")
@option(
    "--report-format",
    type=click.Choice(["terminal", "markdown", "csv", "json"]),
    default="terminal",
    help="Format of the printed report.",
)
@quiet
def run_cmd(
    out: Path,
    source: tuple[str, ...],
    synth_sessions: int,
    seed: int,
    trigger: tuple[str, ...],
    window: int | None,
    horizon: str,
    suite: str | None,
    sample: int | None,
    policy: tuple[str, ...],
    workers: int,
    engine: str,
    ray_address: str | None,
    tariff: str | None,
    tariffs: Path | None,
    judge: str,
    base_url: str | None,
    model: str | None,
    api_key_env: str | None,
    reference: str | None,
    bootstrap: int,
    report_format: str,
    quiet: bool,
) -> None:
    """Import (or synthesise) → cases → replay → judge → report, reusing stages already done."""
    from ..engines.pipeline import DEMO_POLICIES, PipelineConfig, run_pipeline

    endpoint = {"base_url": base_url, "model": model, "api_key_env": api_key_env}
    cfg = PipelineConfig(
        out=out,
        sources=list(source),
        synth_sessions=synth_sessions,
        seed=seed,
        triggers=tuple(trigger),
        window=window,
        horizon=horizon,
        suite=suite,
        sample=sample,
        policies=tuple(policy) or DEMO_POLICIES,
        workers=workers,
        engine=engine,
        ray_address=ray_address,
        tariff=tariff,
        tariffs_path=str(tariffs) if tariffs else None,
        judge=judge,
        judge_options={k: v for k, v in endpoint.items() if v is not None},
        reference=reference,
        bootstrap=bootstrap,
        report_format=report_format,
        progress=not quiet,
    )
    run_pipeline(cfg, echo=click.echo)


@main.command("demo")
@out("Folder for every stage.", default=Path("ctxreplay-demo"))
@option("--sessions", type=click.IntRange(min=1), default=200, help="Synthetic sessions.")
@seed
@workers
@quiet
def demo_cmd(out: Path, sessions: int, seed: int, workers: int, quiet: bool) -> None:
    """The whole job on the built-in synthetic corpus, offline: every policy, judged, reported."""
    from ..engines.pipeline import PipelineConfig, run_pipeline

    run_pipeline(
        PipelineConfig(
            out=out, synth_sessions=sessions, seed=seed, workers=workers, progress=not quiet
        ),
        echo=click.echo,
    )
