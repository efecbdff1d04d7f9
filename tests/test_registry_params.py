"""Plugin parameters are declared one way (``registry.param`` fields of a ``Params`` frozen
dataclass nested in the plugin), carry a one-line meaning and a range, and out-of-range values
are refused wherever a plugin is built: ``make_policy``, ``make_judge``, a manifest's
``rebuild``, direct construction and the CLI."""

from __future__ import annotations

import dataclasses
import inspect
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxreplay.cli import main
from ctxreplay.errors import ParameterError
from ctxreplay.judges.base import judges, make_judge
from ctxreplay.llm.endpoint import EndpointParams
from ctxreplay.policies._model_planner import ModelParams
from ctxreplay.policies.base import make_policy, policies, rebuild_policy
from ctxreplay.policies.tool_prune import ToolPrune
from ctxreplay.registry import (
    check_params,
    describe_params,
    first_sentence,
    param,
    params_label,
    params_to_dict,
    parse_params,
    plain_text,
)

#: The one exception to "declared with ``param``, nested in the plugin": the model-endpoint
#: parameter classes belong to the model-client layer (``llm/endpoint.py``,
#: ``policies/_model_planner.py``, ``judges/llm.py``), which declares its fields as plain
#: dataclass fields; their fields have no meaning and no range here ("no doc, no range").
ENDPOINT_CLASSES = {"EndpointParams", "ModelParams", "LLMJudgeParams"}
#: the LLM judge uses ``LLMJudgeParams`` itself (``Params = LLMJudgeParams``) for the same reason
ALIASED_PARAMS = {("judge", "llm")}


def plugins() -> list[tuple[str, str, type]]:
    return [("policy", n, c) for n, c in policies.items()] + [
        ("judge", n, c) for n, c in judges.items()
    ]


PLUGINS = plugins()
IDS = [f"{kind}:{name}" for kind, name, _ in PLUGINS]


def declared_by(params_type: type, field: str) -> type:
    """The class of ``params_type``'s MRO that declares ``field`` (the most derived one)."""
    return next(k for k in params_type.__mro__ if field in inspect.get_annotations(k))


# --- one way --------------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "name", "cls"), PLUGINS, ids=IDS)
def test_every_plugin_declares_params_as_a_nested_frozen_dataclass(kind, name, cls):
    params = cls.Params
    assert dataclasses.is_dataclass(params) and params.__dataclass_params__.frozen
    if (kind, name) in ALIASED_PARAMS:
        assert params.__name__ in ENDPOINT_CLASSES
        return
    assert "Params" in vars(cls), f"{name} inherits its Params instead of declaring them"
    assert params.__qualname__ == f"{cls.__qualname__}.Params"


@pytest.mark.parametrize(("kind", "name", "cls"), PLUGINS, ids=IDS)
def test_every_parameter_has_a_one_line_meaning_and_a_default_in_its_range(kind, name, cls):
    undocumented = [
        info.name
        for info in describe_params(cls.Params)
        if not info.help and declared_by(cls.Params, info.name).__name__ not in ENDPOINT_CLASSES
    ]
    assert undocumented == []
    assert all("\n" not in info.help for info in describe_params(cls.Params))
    check_params(cls.Params())  # every default is in its range


def test_the_endpoint_exception_is_only_the_endpoint_fields():
    endpoint = {f.name for f in dataclasses.fields(ModelParams)}
    assert {f.name for f in dataclasses.fields(EndpointParams)} <= endpoint
    self_gc = {i.name: i for i in describe_params(policies.get("self-gc").Params)}
    assert [n for n, i in self_gc.items() if not i.help] == [
        f.name for f in dataclasses.fields(ModelParams)
    ]
    assert self_gc["base_url"].range == "" and self_gc["temperature"].range == ""


def test_param_is_a_plain_default_for_labels_and_manifests():
    @dataclasses.dataclass(frozen=True)
    class Params:
        keep: int = param(3, "kept", ge=0)
        tools: tuple[str, ...] = param(help="tools", default_factory=tuple)

    assert Params().keep == 3 and Params().tools == ()
    assert params_label("x", Params()) == "x"
    assert params_label("x", Params(keep=4, tools=("a", "b"))) == "x:keep=4,tools=a|b"
    assert params_to_dict(Params(keep=4)) == {"keep": 4, "tools": ()}
    assert [tuple(i) for i in describe_params(Params)] == [
        ("keep", "int", 3, "kept", ">= 0"),
        ("tools", "tuple[str, ...]", (), "tools", ""),
    ]


# --- ranges ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        # ge (a count)
        ("tool-prune:keep=-1", "policy tool-prune: keep must be >= 0; got -1"),
        ("observation-masking:keep=-1", "policy observation-masking: keep must be >= 0; got -1"),
        ("hybrid:digest_chars=0", "policy hybrid: digest_chars must be >= 1; got 0"),
        # [0, 1] (a fraction), NaN included
        ("tool-prune:target=1.5", "policy tool-prune: target must be in [0, 1]; got 1.5"),
        ("oldest-turn:target_ratio=1.5", "policy oldest-turn: target_ratio must be in [0, 1]"),
        ("tool-mask+prune:head_ratio=nan", "policy tool-mask+prune: head_ratio must be in [0, 1]"),
        # a narrower upper bound
        ("self-gc:mask_ratio=0.6", "policy self-gc: mask_ratio must be in [0, 0.5]; got 0.6"),
        # an optional count: None is fine, a negative is not
        ("tool-prune:protect_tokens=-5", "policy tool-prune: protect_tokens must be >= 0; got -5"),
        # choices
        ("oldest-turn:mode=drop", "policy oldest-turn: mode must be one of prune | fold"),
        # a value of the wrong type: the parameter, its type and the value
        ("tool-prune:keep=three", "policy tool-prune: keep must be an integer; got 'three'"),
        ("self-gc:target=lots", "policy self-gc: target must be a number; got 'lots'"),
        ("tool-prune:protect_tokens=x", "policy tool-prune: protect_tokens must be an integer"),
    ],
)
def test_out_of_range_policy_values_are_refused_naming_the_parameter(spec, message):
    with pytest.raises(ParameterError) as e:
        make_policy(spec)
    assert str(e.value).startswith(message)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("flow:threshold=0", "judge flow: threshold must be > 0; got 0.0"),
        ("flow:row_share=2", "judge flow: row_share must be in [0, 1]; got 2.0"),
        ("anchor:min_span=0", "judge anchor: min_span must be >= 1; got 0"),
        ("deps:path=x,variant=loose", "judge deps: variant must be one of strict | whitespace"),
    ],
)
def test_out_of_range_judge_values_are_refused_naming_the_parameter(spec, message):
    with pytest.raises(ParameterError) as e:
        make_judge(spec)
    assert str(e.value).startswith(message)


def test_the_bounds_themselves_and_none_are_accepted():
    assert make_policy("tool-prune:keep=0,target=1,protect_tokens=none").params.keep == 0
    assert make_policy("tool-prune:target=0").label == "tool-prune"
    assert make_policy("self-gc:mask_ratio=0.5").params.mask_ratio == 0.5
    assert make_policy("tool-mask+prune:head_chars=0").params.head_chars == 0


def test_direct_construction_and_rebuild_are_checked_too():
    with pytest.raises(ParameterError, match=r"^policy tool-prune: keep must be >= 0; got -1$"):
        ToolPrune(ToolPrune.Params(keep=-1))
    with pytest.raises(ParameterError, match=r"^policy tool-prune: target must be in \[0, 1\]"):
        rebuild_policy({"name": "tool-prune", "params": {"target": 1.5}})
    with pytest.raises(ParameterError, match=r"^policy tool-prune: budget must be a whole number"):
        rebuild_policy({"name": "tool-prune", "params": {"budget": 1.5}})
    with pytest.raises(ParameterError, match=r"^judge flow: min_copy must be >= 1; got 0$"):
        judges.rebuild({"name": "flow", "params": {"min_copy": 0}})


def test_a_grid_value_out_of_range_is_refused_when_parsed():
    cls = policies.get("tool-prune")
    with pytest.raises(ParameterError, match=r"^keep must be >= 0; got -2$"):
        parse_params(cls.Params, {"keep": "-2"})


def test_the_cli_refuses_an_out_of_range_value_in_one_line_without_a_run_folder(
    synth_corpus: Path, synth_cases: Path, tmp_path: Path
):
    run = tmp_path / "run"
    out = CliRunner().invoke(
        main,
        [
            "replay",
            str(synth_corpus),
            "--cases",
            str(synth_cases),
            "--policy",
            "tool-prune:keep=-1",
            "-o",
            str(run),
            "--quiet",
        ],
    )
    assert out.exit_code == 2, out.output
    assert out.stderr == "error: policy tool-prune: keep must be >= 0; got -1\n"
    assert out.stdout == ""
    assert not run.exists()


# --- what `ctxreplay policies` / `ctxreplay judges` print -----------------------------------


def block(text: str, name: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{name}: "))
    end = next(
        (i for i in range(start + 1, len(lines)) if not lines[i].startswith("    ")), len(lines)
    )
    return lines[start:end]


def test_policies_prints_the_whole_first_sentence_and_each_parameter():
    out = CliRunner().invoke(main, ["policies"])
    assert out.exit_code == 0, out.output
    assert block(out.stdout, "tool-prune") == [
        "tool-prune: Clear tool results outside a recent window; the call envelopes stay.",
        "    target (float, default 0.0, range [0, 1]): remove at least this share of the "
        "editable tokens (the prefix less system/developer messages and the latest user "
        "message); 0: the policy's own rule",
        "    budget (int, default 0, range >= 0): the view must fit in this many tokens "
        "(remove prefix − budget); 0: no budget",
        "    keep (int, default 3, range >= 0): most recent tool uses whose results stay "
        "(counted over all tool uses)",
        "    protect_tokens (int | None, default None, range >= 0): when set, replaces keep: "
        "newest tool-output tokens protected, the rest cleared",
        "    exclude_tools (tuple[str, ...], default ()): tools whose results are never cleared",
        "    placeholder (str, default '[Old tool result content cleared]'): the text a cleared "
        "result reads",
        "    clear_at_least (int, default 0, range >= 0): fewer tokens freed than this → no "
        "edit at all (0: any saving)",
        "    trigger_tokens (int, default 0, range >= 0): act only when the prefix holds at "
        "least this many tokens (0: always)",
    ]
    # a first sentence over two docstring lines, RST markup removed, not cut
    assert block(out.stdout, "clear-tool-uses")[0] == (
        "clear-tool-uses: Anthropic context editing, strategy clear_tool_uses_20250919 (beta "
        "header context-management-2025-06-27), with its exact parameter surface and defaults."
    )
    assert block(out.stdout, "self-gc")[0] == (
        "self-gc: Self-GC (Hao et al. 2026): a planner proposes fold/mask/prune over indexed "
        "objects; the harness rehearses and commits; the commit is cache-aware."
    )
    assert block(out.stdout, "noop") == ["noop: Keeps everything: the view is the prefix itself."]
    assert "``" not in out.stdout and ":func:" not in out.stdout


def test_judges_prints_the_same_for_judges():
    out = CliRunner().invoke(main, ["judges"])
    assert out.exit_code == 0, out.output
    assert block(out.stdout, "anchor") == [
        "anchor: Exact-anchor dependency audit (Self-GC's no-impact criterion, made "
        "deterministic).",
        "    min_span (int, default 40, range >= 1): shortest verbatim value or line, in "
        "characters, that is a span anchor",
        "    common_fraction (float, default 0.5, range [0, 1]): anchors in more than this "
        "share of a corpus's sessions are trivially present",
        "    check_contracts (bool, default True): also audit behavioural contracts: older "
        "user constraints the future acts on",
    ]
    assert "    tokenizer (str, default 'o200k_base')" in block(out.stdout, "llm")


@pytest.mark.parametrize(
    ("doc", "sentence"),
    [
        ("One. Two.", "One."),
        ("Uses ``x`` and :func:`~a.b.c`, see :mod:`._acf`.\n\n More.", "Uses x and c, see ._acf."),
        (
            "Hao et al. 2026 (e.g. this. not that) say\n    so. Then more.",
            "Hao et al. 2026 (e.g. this. not that) say so.",
        ),
        ("No full stop at all\n\nSecond paragraph.", "No full stop at all"),
        ("A **bold** *claim* about v1.2 and `x`. Next.", "A bold claim about v1.2 and x."),
    ],
)
def test_first_sentence_is_whole_and_plain(doc, sentence):
    assert first_sentence(doc) == sentence
    assert plain_text(":class:`Foo` ``bar``") == "Foo bar"


# --- manifests written before rebuild the same ----------------------------------------------

#: manifest entries as runs wrote them before the parameters were declared with ``param``
WRITTEN = [
    {
        "name": "tool-prune",
        "label": "tool-prune:target=0.3,keep=1,exclude_tools=a|b",
        "params": {
            "target": 0.3,
            "budget": 0,
            "keep": 1,
            "protect_tokens": None,
            "exclude_tools": ["a", "b"],
            "placeholder": "[Old tool result content cleared]",
            "clear_at_least": 0,
            "trigger_tokens": 0,
        },
    },
    {
        "name": "oldest-turn",
        "label": "oldest-turn:mode=fold,target_ratio=0.2",
        "params": {
            "target": 0.0,
            "budget": 0,
            "mode": "fold",
            "target_ratio": 0.2,
            "trigger_tokens": 0,
            "keep_last_steps": 3,
        },
    },
    {
        "name": "self-gc",
        "label": "self-gc:fold_min_tokens=200,commit_threshold=0.0",
        "params": {
            "target": 0.0,
            "budget": 0,
            "planner": "rules",
            "keep_recent": 2,
            "short_tokens": 500,
            "fold_min_tokens": 200,
            "log_min_lines": 20,
            "log_shape_ratio": 0.6,
            "mask_ratio": 0.1,
            "commit_rule": "threshold",
            "commit_threshold": 0.0,
            "expected_requests": 10,
            "agent_tariff": "claude-sonnet-4",
            "agent_tariffs_path": "",
            "max_prompt_tokens": 4000,
            "plan_format": "json",
            "summary_chars": 2000,
            "base_url": "http://127.0.0.1:8089/v1",
            "model": "SmolLM2-135M-Instruct",
            "api_key_env": "OPENAI_API_KEY",
            "timeout": 120.0,
            "max_retries": 3,
            "concurrency": 4,
            "cache_dir": "auto",
            "tariff": "",
            "tariffs_path": "",
            "temperature": 0.0,
            "seed": 0,
            "max_tokens": 800,
        },
    },
]


@pytest.mark.parametrize("entry", WRITTEN, ids=[e["name"] for e in WRITTEN])
def test_a_manifest_entry_written_before_rebuilds_to_the_same_label(entry):
    policy = rebuild_policy(json.loads(json.dumps(entry)))
    assert policy.label == entry["label"]
    again = json.loads(json.dumps(policy.describe()))
    assert {k: v for k, v in again["params"].items() if k in entry["params"]} == entry["params"]
    # same order too (new endpoint fields may come in between: they are not the policy's)
    assert [k for k in again["params"] if k in entry["params"]] == list(entry["params"])
    assert rebuild_policy(again).label == entry["label"]


def test_a_run_manifest_rebuilds_every_policy_to_its_label(
    synth_corpus: Path, synth_cases: Path, tmp_path: Path
):
    from ctxreplay.engines.replay import run_replay

    specs = ["noop", "tool-prune:keep=1,target=0.25", "oldest-turn:mode=fold", "hybrid:window=2"]
    run_replay(synth_corpus, synth_cases, specs, tmp_path / "run", workers=1, progress=False)
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    labels = {make_policy(s).label for s in specs}
    assert set(manifest["policies"]) == labels
    for label, described in manifest["policies"].items():
        assert rebuild_policy(described).label == label == described["label"]
