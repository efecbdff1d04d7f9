"""``ctxreplay sweep``: replay and judge a grid of policy parameters in one run folder.

A grid is ``family:param=values`` with several parameters separated by ``;`` (their product)::

    tool-prune:keep=1..8                 an integer range, inclusive
    self-gc:commit_threshold=0.1..0.3/0.1   a range with a step (floats when any bound is)
    tool-prune:keep=1,2,4;clear_at_least=0,2000   lists, and the product of two parameters

Each combination becomes the policy spec ``family:param=value,...``; the family's defaults are
always one point as well. Every point is checked against the policy's ``Params`` before any work
(``SweepError`` lists every problem at once). ``run_sweep`` then replays every point (finished
chunks are skipped), judges every point with the chosen judge and, given dependency labels, with
the gold ``deps`` judge (strict, whitespace and recovery variants; the strict calibration of the
judge is stored in the run), all in one run folder: re-running the same sweep does no new work and
adding a value computes only the new points. The run manifest records the sweep under ``sweep``
(families, grids, points, judges), which is how ``ctxreplay report`` knows to add the frontier.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import CtxreplayError
from ..judges.base import DEFAULT_JUDGE
from ..registry import UnknownPluginError

#: the most points one grid may expand to (a typo like ``keep=1..100000`` is an error, not a job)
MAX_POINTS = 500

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_RANGE = re.compile(rf"^\s*({_NUMBER})\s*\.\.\s*({_NUMBER})\s*(?:/\s*({_NUMBER})\s*)?$")
_INT = re.compile(r"^\s*[-+]?\d+\s*$")


class SweepError(CtxreplayError, ValueError):
    """A grid that cannot be swept; the message names every problem."""


@dataclass(frozen=True)
class Grid:
    """One ``--grid``: a policy family and the values of each parameter (raw strings)."""

    text: str
    family: str
    params: tuple[tuple[str, tuple[str, ...]], ...]

    def as_dict(self) -> dict[str, Any]:
        return {"text": self.text, "family": self.family, "params": dict(self.params)}


@dataclass(frozen=True)
class Point:
    """One policy of the sweep: its spec, the label its results are kept under, and where it
    came from (``defaults``, ``grid`` or ``policy`` for an extra ``--policy``)."""

    family: str
    spec: str
    label: str
    values: tuple[tuple[str, str], ...]  # the parameters the grid set (raw)
    source: str

    @property
    def is_default(self) -> bool:
        return self.label == self.family

    def as_dict(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "spec": self.spec,
            "label": self.label,
            "values": dict(self.values),
            "source": self.source,
            "default": self.is_default,
        }


# --- parsing --------------------------------------------------------------------------------


def _format(x: float) -> str:
    """A float range value as a spec string, without binary noise (0.1 + 2 × 0.1 → '0.3')."""
    return repr(round(float(x), 10))


def parse_values(text: str, where: str = "") -> tuple[str, ...]:
    """The values of one parameter: ``a,b,c``, ``a..b`` (integers, inclusive) or ``a..b/step``.

    >>> parse_values("1..4")
    ('1', '2', '3', '4')
    >>> parse_values("0.1..0.3/0.1")
    ('0.1', '0.2', '0.3')
    >>> parse_values("2..10/4")
    ('2', '6', '10')
    >>> parse_values("rules, llm")
    ('rules', 'llm')
    """
    at = f" in {where}" if where else ""
    m = _RANGE.match(text)
    if m:
        lo_s, hi_s, step_s = m.groups()
        ints = all(s is None or _INT.match(s) for s in (lo_s, hi_s, step_s))
        if step_s is None and not ints:
            raise SweepError(
                f"a range of non-integers needs a step, as in 0.1..0.5/0.1{at}: {text!r}"
            )
        lo, hi = (int(lo_s), int(hi_s)) if ints else (float(lo_s), float(hi_s))
        step: float = (int(step_s) if ints else float(step_s)) if step_s is not None else 1
        if step <= 0:
            raise SweepError(f"the step of a range must be positive{at}: {text!r}")
        if hi < lo:
            raise SweepError(f"a range must go up (low..high){at}: {text!r}")
        count = math.floor((hi - lo) / step + 1e-9) + 1
        if count > MAX_POINTS:
            raise SweepError(f"the range {text!r}{at} has {count} values (at most {MAX_POINTS})")
        if ints:
            return tuple(str(lo + i * int(step)) for i in range(count))
        return tuple(_format(lo + i * step) for i in range(count))
    if ".." in text:
        raise SweepError(f"a range is low..high or low..high/step, with numbers{at}: {text!r}")
    values = tuple(v.strip() for v in text.split(","))
    if not text.strip() or any(v == "" for v in values):
        raise SweepError(f"empty value{at}: {text!r}")
    if len(set(values)) != len(values):
        raise SweepError(f"a value is given twice{at}: {text!r}")
    return values


def parse_grid(text: str) -> Grid:
    """``family[:param=values[;param=values...]]`` → a ``Grid`` (syntax only; ``expand`` checks
    the names and values against the registered policy).

    >>> parse_grid("tool-prune:keep=1..3;clear_at_least=0,2000").params
    (('keep', ('1', '2', '3')), ('clear_at_least', ('0', '2000')))
    """
    family, sep, rest = text.partition(":")
    family = family.strip()
    if not family:
        raise SweepError(
            f"a grid starts with the policy family, as in tool-prune:keep=1..8: {text!r}"
        )
    params: list[tuple[str, tuple[str, ...]]] = []
    if sep and rest.strip():
        for item in rest.split(";"):
            if not item.strip():
                continue
            name, eq, values = item.partition("=")
            name = name.strip().replace("-", "_")
            if not eq or not name:
                raise SweepError(f"{item.strip()!r} in grid {text!r} is not param=values")
            if any(name == p for p, _ in params):
                raise SweepError(f"parameter {name!r} is given twice in grid {text!r}")
            params.append((name, parse_values(values, f"grid {text!r}")))
    return Grid(text.strip(), family, tuple(params))


def _grid_problems(g: Grid) -> list[str]:
    """What the policy's own parameter parsing (``registry.parse_params``, once per value)
    rejects in a grid: an unknown family, the parameters it does not have (reported alone), or
    one message per value that does not parse as its parameter's declared type."""
    from ..policies.base import policies
    from ..registry import describe_params, parse_params

    try:
        cls: Any = policies.get(g.family)
    except UnknownPluginError as e:
        return [f"grid {g.text!r}: {e}"]
    types = {info.name: info.type for info in describe_params(cls.Params)}
    unknown: list[str] = []
    bad: list[str] = []
    for name, values in g.params:
        for value in values:
            try:
                parse_params(cls.Params, {name: value})
            except (ValueError, TypeError) as e:
                if name not in types:  # the name is rejected, whatever the value
                    unknown.append(name)
                    break
                bad.append(f"grid {g.text!r}: {name}={value} is not a valid {types[name]} ({e})")
    if unknown:
        return [
            f"grid {g.text!r}: {g.family} has no parameter {', '.join(map(repr, unknown))}; "
            f"its parameters: {', '.join(types)}"
        ]
    return bad


def _spec(family: str, values: Sequence[tuple[str, str]]) -> str:
    return family + (":" + ",".join(f"{k}={v}" for k, v in values) if values else "")


def expand(grids: Sequence[Grid | str], policies: Sequence[str] = ()) -> list[Point]:
    """Every point of the grids (each family's defaults first), then the extra policies, with
    duplicates (same label) kept once. Checks every family, parameter and value first and raises
    one ``SweepError`` that lists every problem."""
    from ..policies.base import make_policy

    parsed = [g if isinstance(g, Grid) else parse_grid(g) for g in grids]
    if not parsed and not policies:
        raise SweepError("give at least one --grid family:param=values")
    problems: list[str] = []
    points: list[Point] = []
    seen: dict[str, Point] = {}

    def add(
        family: str, values: Sequence[tuple[str, str]], source: str, spec: str | None = None
    ) -> None:
        spec = spec or _spec(family, values)
        try:
            policy = make_policy(spec)
        except (ValueError, TypeError, UnknownPluginError) as e:
            problems.append(f"{spec}: {e}")
            return
        if policy.label in seen:
            return
        point = Point(policy.name or family, spec, policy.label, tuple(values), source)
        seen[policy.label] = point
        points.append(point)

    defaults_done: set[str] = set()
    for g in parsed:
        bad = _grid_problems(g)
        if bad:
            problems.extend(bad)
            continue
        if g.family not in defaults_done:
            defaults_done.add(g.family)
            add(g.family, (), "defaults")
        names = [p for p, _ in g.params]
        combos = list(itertools.product(*(v for _, v in g.params)))
        if len(combos) > MAX_POINTS:
            problems.append(f"grid {g.text!r} has {len(combos)} points (at most {MAX_POINTS})")
            continue
        for combo in combos if g.params else []:
            add(g.family, tuple(zip(names, combo, strict=True)), "grid")
    for spec in policies:
        family = spec.partition(":")[0].strip()
        add(family, (), "policy", spec=spec)
    if problems:
        raise SweepError("the sweep cannot run:\n  " + "\n  ".join(dict.fromkeys(problems)))
    return points


def families(points: Sequence[Point]) -> list[str]:
    return list(dict.fromkeys(p.family for p in points))


# --- running --------------------------------------------------------------------------------


@dataclass
class SweepSummary:
    run: Path
    points: list[Point]
    replay: Any = None  # replay.engine.ReplaySummary
    judged: list[Any] = field(default_factory=list)  # judges.engine.JudgeSummary per judge
    calibration: Any = None  # judges.calibrate.GoldCalibration when labels were given

    @property
    def computed(self) -> int:
        """Chunk-policies replayed by this call (0 when everything was already there)."""
        return int(self.replay.computed) if self.replay is not None else 0

    @property
    def verdicts(self) -> int:
        """Verdicts written by this call, over every judge."""
        return sum(s.judged for s in self.judged)

    def render(self) -> str:
        lines = [
            f"sweep: {len(self.points)} points of {len(families(self.points))} families → {self.run}",
        ]
        for fam in families(self.points):
            labels = [p.label for p in self.points if p.family == fam]
            lines.append(f"  {fam}: " + ", ".join(labels))
        if self.replay is not None:
            lines += ["", self.replay.render()]
        for s in self.judged:
            lines += ["", s.render()]
        if self.calibration is not None:
            for v in self.calibration.variants:
                lines.append(
                    f"judge {self.calibration.judge} against gold ({v.variant}): sensitivity "
                    f"{v.sensitivity.show()}, specificity {v.specificity.show()}"
                )
        lines += [
            "",
            f"new work: {self.computed} chunk-policies replayed, {self.verdicts} verdicts judged",
            f"next: ctxreplay report {self.run}",
        ]
        return "\n".join(lines)


def gold_specs(labels: str | os.PathLike[str]) -> dict[str, str]:
    """Variant → the ``deps`` judge spec of a labels set (strict, whitespace, recovery)."""
    from ..judges.labels import VARIANTS
    from .calibrate import deps_spec

    return {v: deps_spec(labels, v) for v in VARIANTS}


def run_sweep(
    corpus: str | os.PathLike[str],
    cases: str | os.PathLike[str],
    grids: Sequence[Grid | str],
    out: str | os.PathLike[str],
    *,
    policies: Sequence[str] = (),
    judge: str = DEFAULT_JUDGE,
    labels: str | os.PathLike[str] | None = None,
    workers: int = 2,
    tariff: str | None = None,
    tariffs_path: str | None = None,
    progress: bool = True,
    echo: Callable[[str], None] | None = None,
    engine: str = "local",
    ray_address: str | None = None,
) -> SweepSummary:
    """Replay and judge every point of the grids into ``out``, reusing what is already there
    (``engine``: ``local`` or ``ray``, as for replay and judge; the gold labels are local)."""
    from ..judges.base import make_judge
    from ..judges.labels import load_labels
    from .calibrate import calibrate_against_deps
    from .judge import run_judge
    from .replay import run_replay

    parsed = [g if isinstance(g, Grid) else parse_grid(g) for g in grids]
    points = expand(parsed, policies)
    try:
        judge_label = make_judge(judge).label
    except (ValueError, TypeError, UnknownPluginError) as e:
        raise SweepError(f"judge {judge!r}: {e}") from None
    gold: dict[str, str] = {}
    if labels is not None:
        load_labels(labels)  # a bad labels set fails here, before any work
        gold = {v: make_judge(s).label for v, s in gold_specs(labels).items()}
    summary = SweepSummary(Path(out), points)
    labels_of_points = [p.label for p in points]
    summary.replay = run_replay(
        corpus,
        cases,
        [p.spec for p in points],
        out,
        workers=workers,
        tariff=tariff,
        tariffs_path=tariffs_path,
        progress=progress,
        engine=engine,
        ray_address=ray_address,
    )
    if echo:
        echo(summary.replay.render())
    summary.judged.append(
        run_judge(
            out,
            judge,
            policies=labels_of_points,
            workers=workers,
            progress=progress,
            engine=engine,
            ray_address=ray_address,
        )
    )
    if labels is not None:
        summary.calibration = calibrate_against_deps(
            out, judge_label, labels, policies=labels_of_points, workers=workers, progress=progress
        )
        summary.judged.extend(summary.calibration.judged)
    record_sweep(out, parsed, points, policies, judge_label, labels, gold)
    return summary


def record_sweep(
    out: str | os.PathLike[str],
    grids: Sequence[Grid],
    points: Sequence[Point],
    policies: Sequence[str],
    judge: str,
    labels: str | os.PathLike[str] | None,
    gold: dict[str, str],
) -> dict[str, Any]:
    """Write the sweep into the run manifest (``manifest["sweep"]``): the latest sweep wins."""
    from ..datasets.store import created_at
    from ..files import atomic_write_text

    path = Path(out) / "manifest.json"
    manifest = json.loads(path.read_text())
    sweep = {
        "families": families(points),
        "grids": [g.as_dict() for g in grids],
        "policies": list(policies),
        "points": [p.as_dict() for p in points],
        "judge": judge,
        "labels": str(Path(labels).resolve()) if labels is not None else None,
        "gold": gold,
        "updated_at": created_at(),
    }
    manifest["sweep"] = sweep
    atomic_write_text(path, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return sweep
