"""Third-party plugins: a package on disk, found through entry points, used from the CLI.

``acme_ctx`` below is what a plugin author writes: one module with a policy, a judge and an
importer, importing only from the three public kits (``ctxreplay.policies``,
``ctxreplay.judges``, ``ctxreplay.datasets.importers``), and a ``.dist-info`` folder whose
``entry_points.txt`` names them in the groups ``ctxreplay.policies``, ``ctxreplay.judges`` and
``ctxreplay.importers``. The CLI runs in a subprocess with the folder on its ``PYTHONPATH``, as an
installed package would be found. The registry's own rules (lazy lookups, the built-in maps,
clashes refused) are tested on fresh registries in-process, so the real ones stay untouched.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import ctxreplay.datasets.importers as importer_kit
import ctxreplay.judges as judge_kit
import ctxreplay.policies as policy_kit
from ctxreplay.registry import PluginClashError, Registry, UnknownPluginError, target_of

PLUGIN = '''
"""acme-ctx: a third party's policy, judge and importer for ctxreplay."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ctxreplay.datasets.importers import (
    Importer, Message, Part, Record, Reject, Session, expect, require, sample_of,
)
from ctxreplay.judges import Judge, JudgeInput, Loss, Verdict
from ctxreplay.policies import Edit, Need, Plan, Policy, PrefixContext, param


class KeepLast(Policy):
    """Clears every tool result but the newest few."""

    @dataclass(frozen=True)
    class Params:
        keep: int = param(1, "newest tool results kept", ge=0)

    def propose(self, ctx: PrefixContext, need: Need) -> Plan:
        functions = [f for f in ctx.index.functions() if not f.protected]
        old = functions[: max(0, len(functions) - self.params.keep)]
        return Plan(tuple(Edit(f.id, "prune", placeholder="[acme cleared]") for f in old))


class Strict(Judge):
    """Any object the view changed is a loss."""

    @dataclass(frozen=True)
    class Params:
        category: str = param("evidence_detail", "the category of every loss")

    def judge(self, item: JudgeInput) -> Verdict:
        changed = sorted(o for o, action in item.actions.items() if action != "keep")
        losses = tuple(Loss(self.params.category, o, o, None) for o in changed)
        return Verdict("impact" if losses else "no_impact", losses, f"{len(losses)} changed")


class AcmeLog(Importer):
    """``.acmelog`` files: one JSON document ``{"acme_log": 1, "id", "messages"}``."""

    suffixes = (".acmelog",)

    def sniff(self, path: Path, head: bytes) -> float:
        sample = sample_of(path, head)
        first = sample.records[0] if sample.records else None
        return 0.95 if isinstance(first, dict) and first.get("acme_log") == 1 else 0.0

    def read(self, path: Path) -> Iterator[Session | Reject]:
        doc = self.document(path)
        if not isinstance(doc, Record):
            yield doc
            return
        yield from self.guarded(path, doc, lambda: [self._session(path, doc)])

    def _session(self, path: Path, record: Record) -> Session:
        value = expect(record.value, dict, "$", "log")
        messages = []
        for i, m in enumerate(expect(require(value, "messages", "$"), list, "$.messages")):
            if "call" in m:
                parts = (Part.call(m["call"], m["tool"], {"path": m["path"]}),)
            elif "result" in m:
                parts = (Part.response(m["result"], m["text"], m["tool"]),)
            else:
                parts = (Part.text(m["text"]),)
            messages.append(Message(m["role"], parts, seq=i))
        return Session(self.name, value["id"], messages, source_location=str(path))
'''

ENTRY_POINTS = """\
[ctxreplay.policies]
acme-keep-last = acme_ctx:KeepLast

[ctxreplay.judges]
acme-strict = acme_ctx:Strict

[ctxreplay.importers]
acme-log = acme_ctx:AcmeLog
"""


def read_file(path: str, body: str) -> list[dict[str, str]]:
    """A ``read_file`` call and its result."""
    call = f"c{abs(hash(path)) % 10_000}"
    return [
        {"role": "assistant", "call": call, "tool": "read_file", "path": path},
        {"role": "tool", "result": call, "tool": "read_file", "text": body},
    ]


#: one session: three user turns, each reading a file
LOG = {
    "acme_log": 1,
    "id": "acme-1",
    "messages": [
        {"role": "system", "text": "You are a careful coding agent."},
        {"role": "user", "text": "Read config.toml and tell me the port."},
        *read_file("config.toml", "[server]\nport = 8443\n" + "# padding line\n" * 40),
        {"role": "assistant", "text": "The port is 8443."},
        {"role": "user", "text": "Now read app.py."},
        *read_file("app.py", "import os\nPORT = int(os.environ['PORT'])\n" + "pass\n" * 40),
        {"role": "assistant", "text": "app.py reads PORT from the environment."},
        {"role": "user", "text": "Set PORT to the port from the config and read main.py."},
        *read_file("main.py", "from app import PORT\nprint(PORT)\n" + "# more\n" * 40),
        {"role": "assistant", "text": "Run it with PORT=8443."},
    ],
}


def distribution(root: Path, name: str, entry_points: str) -> Path:
    """A ``<name>-0.1.dist-info`` folder as pip would install it (METADATA, entry points)."""
    info = root / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)
    return root


@pytest.fixture(scope="module")
def plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the ``acme_ctx`` module and its distribution ``acme-ctx``."""
    root = tmp_path_factory.mktemp("site")
    (root / "acme_ctx.py").write_text(textwrap.dedent(PLUGIN))
    return distribution(root, "acme-ctx", ENTRY_POINTS)


def cli(*args: str | Path, path: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``ctxreplay ARGS`` in a new process with ``path`` first on its ``PYTHONPATH``."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(path), os.environ.get("PYTHONPATH")])),
    }
    return subprocess.run(
        [sys.executable, "-m", "ctxreplay", *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, (
        f"{done.args}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    )
    return done.stdout


# --- a third party's package, from the CLI ----------------------------------------------------


def test_a_plugin_package_is_listed_imported_replayed_and_judged_from_the_cli(
    plugin: Path, tmp_path: Path
) -> None:
    def ctxreplay(*args: str | Path) -> str:
        return ok(cli(*args, path=plugin, cwd=tmp_path))

    listed = ctxreplay("policies").splitlines()
    at = listed.index("acme-keep-last: Clears every tool result but the newest few.")
    assert listed[at + 1] == "    keep (int, default 1, range >= 0): newest tool results kept"
    assert "noop: Keeps everything: the view is the prefix itself." in listed  # built-ins too
    judges = ctxreplay("judges").splitlines()
    assert "acme-strict: Any object the view changed is a loss." in judges

    log = tmp_path / "traces" / "session.acmelog"
    log.parent.mkdir()
    log.write_text(json.dumps(LOG))
    ctxreplay("import", log.parent, "-o", "corpus", "--quiet")  # detected: no --format
    sessions = pq.read_table(tmp_path / "corpus" / "sessions").to_pylist()
    assert [(s["source_format"], s["source_session_id"]) for s in sessions] == [
        ("acme-log", "acme-1")
    ]

    ctxreplay("cases", "corpus", "-o", "cases.parquet", "--trigger", "user-turns")
    policies = ("--policy", "acme-keep-last:keep=0", "--policy", "noop")
    ctxreplay("replay", "corpus", "--cases", "cases.parquet", *policies, "-o", "run", "--quiet")
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["policies"]["acme-keep-last:keep=0"]["params"] == {"keep": 0}
    ctxreplay("judge", "run", "--judge", "acme-strict", "--quiet")  # in worker processes
    verdicts = [
        row
        for f in sorted((tmp_path / "run").rglob("*.parquet"))
        if "verdict" in f.as_posix()
        for row in pq.read_table(f).to_pylist()
    ]
    labels = {(v["policy"], v["label"]) for v in verdicts}
    # cases cut at the second and third user turns: the plugin policy cleared every earlier
    # result, so its plugin judge finds losses; noop changed nothing
    assert labels == {("acme-keep-last:keep=0", "impact"), ("noop", "no_impact")}


def test_a_plugin_that_takes_a_built_in_name_is_refused_naming_both(
    plugin: Path, synth_corpus: Path, synth_cases: Path, tmp_path: Path
) -> None:
    clash = distribution(
        tmp_path / "site", "acme-clash", "[ctxreplay.policies]\nnoop = acme_ctx:KeepLast\n"
    )
    path = Path(f"{clash}{os.pathsep}{plugin}")
    replay = ["replay", str(synth_corpus), "--cases", str(synth_cases), "--policy", "noop"]
    for args in (["policies"], [*replay, "-o", "run", "--quiet"]):
        done = cli(*args, path=path, cwd=tmp_path)
        assert (done.returncode, done.stderr) == (
            2,
            "error: the policy 'noop' of distribution 'acme-clash' (acme_ctx:KeepLast, entry "
            "point group ctxreplay.policies) clashes with the built-in policy 'noop' "
            "(ctxreplay.policies.noop:Noop): a plugin may not take a built-in's name; rename "
            "its entry point or uninstall it\n",
        ), args
    assert not (tmp_path / "run").exists()
    # the other kinds are not affected
    assert "acme-strict: Any object the view changed is a loss." in ok(
        cli("judges", path=path, cwd=tmp_path)
    )


# --- the registry's rules, on fresh registries ------------------------------------------------


class Thing:
    """A plugin of the fresh registries below."""


class Other:
    """Another."""


def test_two_distributions_claiming_one_name_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    group = "ctxreplay.tests.things"
    distribution(tmp_path / "a", "thing-a", f"[{group}]\nthing = {__name__}:Thing\n")
    distribution(tmp_path / "b", "thing-b", f"[{group}]\nthing = {__name__}:Other\n")
    monkeypatch.syspath_prepend(str(tmp_path / "a"))
    monkeypatch.syspath_prepend(str(tmp_path / "b"))
    registry: Registry[type] = Registry("thing", group)
    with pytest.raises(PluginClashError) as e:
        registry.names()
    assert "the thing 'thing' is claimed by distribution 'thing-" in str(e.value)
    assert {"'thing-a'", "'thing-b'", f"{__name__}:Thing", f"{__name__}:Other"} <= set(
        str(e.value).replace("(", " ").replace(")", " ").split()
    )
    with pytest.raises(PluginClashError):  # every lookup, not only the first
        registry.get("thing")


def test_an_entry_point_naming_the_built_in_itself_is_not_a_clash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    group = "ctxreplay.tests.same"
    distribution(tmp_path, "thing-same", f"[{group}]\nthing = {__name__}:Thing\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry: Registry[type] = Registry("thing", group, {"thing": f"{__name__}:Thing"})
    registry.register("thing")(Thing)
    assert registry.names() == ["thing"]
    assert registry.get("thing") is Thing


def test_an_entry_point_loads_only_when_its_name_is_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    group = "ctxreplay.tests.lazy"
    (tmp_path / "lazy_thing.py").write_text("class Lazy:\n    '''Loaded late.'''\n")
    distribution(tmp_path, "lazy-thing", f"[{group}]\nlazy = lazy_thing:Lazy\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry: Registry[type] = Registry("thing", group)
    assert registry.names() == ["lazy"] and "lazy" in registry
    assert "lazy_thing" not in sys.modules
    lazy = registry.get("lazy")
    assert lazy.__name__ == "Lazy" and lazy.name == "lazy"  # type: ignore[attr-defined]
    sys.modules.pop("lazy_thing")
    with pytest.raises(UnknownPluginError, match=r"^unknown thing 'nope'; available: lazy$"):
        registry.get("nope")


def test_an_object_registered_under_a_built_in_name_is_refused() -> None:
    registry: Registry[type] = Registry(
        "thing", "ctxreplay.tests.none", {"thing": target_of(Thing)}
    )
    registry.register("thing")(Other)  # an in-process decorator, before the built-in loads
    with pytest.raises(PluginClashError, match=rf"is built in \({re.escape(target_of(Thing))}\)"):
        registry.get("thing")
    with pytest.raises(PluginClashError, match="is already registered"):
        registry.register("thing")(Thing)


def test_a_built_in_whose_module_does_not_register_it_is_a_bug_named() -> None:
    # noop's module registers Noop with the real policies registry, not with this one
    registry: Registry[type] = Registry(
        "policy", "ctxreplay.tests.none", {"nop": "ctxreplay.policies.noop:Noop"}
    )
    with pytest.raises(LookupError, match="does not register itself under that name"):
        registry.get("nop")


def test_a_map_may_be_named_by_reference_and_is_read_on_first_use() -> None:
    registry: Registry[type] = Registry(
        "importer", "ctxreplay.tests.none", "ctxreplay.datasets.importers:BUILTIN"
    )
    assert registry.builtins is not None and registry.builtins == importer_kit.BUILTIN


# --- the built-in maps ---------------------------------------------------------------------

KINDS = {
    "policy": ("ctxreplay.policies", policy_kit.policies),
    "judge": ("ctxreplay.judges", judge_kit.judges),
    "importer": ("ctxreplay.datasets.importers", importer_kit.importers),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_map_names_every_module_that_registers_a_plugin(kind: str) -> None:
    """Every module of the package that registers a plugin is in the kind's map, under the
    name its decorator gives, and each entry is the class its module defines."""
    package, registry = KINDS[kind]
    found = {}
    for info in pkgutil.walk_packages(importlib.import_module(package).__path__, f"{package}."):
        module = importlib.import_module(info.name)
        found |= {
            name: target_of(obj)
            for name, obj in registry._items.items()
            if getattr(obj, "__module__", None) == module.__name__
        }
    assert found == dict(registry.builtins)


def test_names_imports_no_plugin_module() -> None:
    code = (
        "import sys\n"
        "from ctxreplay.policies import policies\n"
        "from ctxreplay.datasets.importers import importers\n"
        "from ctxreplay.judges import judges\n"
        "registries = (policies, importers, judges)\n"
        "names = [n for r in registries for n in r.names()]\n"
        "modules = {t.partition(':')[0] for r in registries for t in r.builtins.values()}\n"
        "print(len(names), sorted(modules & set(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split(maxsplit=1) == [
        str(sum(len(r.builtins) for _, r in KINDS.values())),
        "[]\n",
    ]


# --- the kits ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kit", [policy_kit, judge_kit, importer_kit], ids=lambda k: k.__name__)
def test_each_kit_name_is_importable_from_its_package(kit: object) -> None:
    for name in kit.__all__:  # type: ignore[attr-defined]
        assert getattr(kit, name) is not None, name
    assert {"Message", "Part", "Session"} <= set(kit.__all__)  # type: ignore[attr-defined]


def test_importing_the_policy_and_judge_packages_imports_no_kit_module() -> None:
    code = (
        "import sys\n"
        "import ctxreplay.policies, ctxreplay.judges\n"
        "print(sorted(m for m in sys.modules if m.startswith(('ctxreplay.policies.',"
        " 'ctxreplay.judges.', 'ctxreplay.replay', 'pyarrow'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
