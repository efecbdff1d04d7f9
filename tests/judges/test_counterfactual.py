"""The counterfactual next-action judge and ``ctxreplay act``, against a scripted OpenAI server
(a real HTTP server speaking the chat-completions protocol) and the real local model.

The server answers by a function of the request body, so each test decides what the "model"
does on a full prefix and on a pruned view; what is asserted is the judge's contract: the bodies
sent, the parsing and comparison of actions, the verdicts, the losses located, the reasons
given for what cannot be scored, and that the response cache makes a re-run free.
"""

from __future__ import annotations

import json
import pickle
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner

from ctxreplay.cli import main
from ctxreplay.datasets.cases import cut_corpus, prefix_of, read_cases
from ctxreplay.datasets.messages import Message, Part, Session
from ctxreplay.datasets.openai_format import to_openai
from ctxreplay.datasets.store import Corpus, CorpusWriter
from ctxreplay.datasets.tokenizer import get_tokenizer
from ctxreplay.datasets.validate import validate_session
from ctxreplay.engines.judge import run_judge
from ctxreplay.engines.replay import run_replay
from ctxreplay.judges.base import LABELS, JudgeInput, make_judge
from ctxreplay.judges.counterfactual import (
    CounterfactualJudge,
    NextAction,
    action_from_message,
    action_of,
    arguments_equivalent,
    compare_actions,
    derived_tools,
    normalise_value,
    register_comparator,
    session_tools,
)
from ctxreplay.replay.objects import build_index
from ctxreplay.replay.view import Archive, archive_payload
from ctxreplay.runs import Run, read_verdicts

from builders import call, coding_session, counted, numbered, result, system, user
from fake_openai import FakeOpenAI, Reply, chat_body, error_body

count = get_tokenizer().count

pytestmark = pytest.mark.usefixtures("fresh_endpoints")

#: tool definitions as inspect-ai logs keep them (``name``/``description``/``parameters``)
TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file of the repository.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "the file", "default": None}},
            "required": ["path"],
        },
    },
    {"name": "run_tests", "description": "Run the tests.", "parameters": {"type": "object"}},
    {"name": "edit_file"},
]


def tool_call(name: str, args: dict[str, Any], cid: str = "call_1") -> dict[str, Any]:
    return {
        "id": cid,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def answer_call(name: str, args: dict[str, Any]) -> Reply:
    return Reply(
        body=chat_body(None, tool_calls=[tool_call(name, args)], finish_reason="tool_calls")
    )


POINTER = (
    '<ctxreplay:folded object="function:fetch:1" ref="sha256:0123456789abcdef" tokens="99">'
    "The tool result of fetch was folded out of context. Recover it exactly with "
    'context_recover("sha256:0123456789abcdef").</ctxreplay:folded>'
)


def make_item(tools: list[dict[str, Any]] | None = None, policy: str = "p") -> JudgeInput:
    """A prefix with two tool pairs; the view folds the first and prunes the second; the
    recorded next action mails ops@example.com the total."""
    body = "\n".join(f"row R-{1000 + i} total={i * 7}.50" for i in range(1, 12))
    prefix = numbered(
        [
            Message("system", (Part.text("You are a data agent."),)),
            Message("user", (Part.text("Mail the total of row R-1004 of https://x.io/r.csv"),)),
            Message("assistant", (Part.call("c1", "fetch", {"url": "https://x.io/r.csv"}),)),
            Message("tool", (Part.response("c1", body),)),
            Message("assistant", (Part.call("c2", "read_file", {"path": "notes/todo.md"}),)),
            Message("tool", (Part.response("c2", "- mail ops@example.com"),)),
        ]
    )
    view = (
        prefix[0],
        prefix[1],
        prefix[2],
        replace(prefix[3], parts=(Part.response("c1", POINTER),)),
    )
    index = build_index(prefix, count)
    future = numbered(
        [
            Message(
                "assistant",
                (Part.call("c9", "send_email", {"to": "ops@example.com", "body": "28.50"}),),
            ),
            Message("tool", (Part.response("c9", "sent"),)),
        ],
        start=len(prefix),
    )
    return JudgeInput(
        case_id="s1:6",
        session_id="s1",
        policy=policy,
        prefix=prefix,
        view=view,
        future=future,
        index=index,
        actions={"function:fetch:1": "fold", "function:read_file:2": "prune"},
        archives=(
            Archive(
                "sha256:" + "0123456789abcdef" * 4,
                "function:fetch:1",
                archive_payload(index["function:fetch:1"], prefix),
            ),
        ),
        tools=tuple(tools) if tools is not None else None,
    )


def fake_judge(server: FakeOpenAI, **kw: Any) -> CounterfactualJudge:
    params = CounterfactualJudge.Params(
        base_url=server.base_url, model="fake-model", cache_dir="off", **kw
    )
    return CounterfactualJudge(params)


#: what the policies leave where a result was: ctxreplay's pointers and elision markers,
#: tool-prune's and observation masking's placeholders
PRUNED = ("<ctxreplay:", "elided", "content cleared", "lines omitted")


def is_pruned(body: dict[str, Any]) -> bool:
    """What the scripted model notices: a marker where a result was, or a tool result gone."""
    text = json.dumps(body["messages"]).lower()
    calls = sum(len(m.get("tool_calls") or ()) for m in body["messages"])
    results = sum(m["role"] == "tool" for m in body["messages"])
    return any(marker in text for marker in PRUNED) or results < calls


def assert_valid_chat_body(body: dict[str, Any]) -> None:
    """What a chat-completions endpoint checks: a model, messages of known roles, every tool
    result answering a call of the assistant message before it, tools as function schemas."""
    assert isinstance(body["model"], str) and body["messages"]
    open_calls: set[str] = set()
    for m in body["messages"]:
        assert m["role"] in ("system", "developer", "user", "assistant", "tool"), m
        if m["role"] == "assistant":
            assert open_calls == set(), "a call left unanswered before the next assistant turn"
            for c in m.get("tool_calls") or ():
                assert c["type"] == "function" and isinstance(c["function"]["arguments"], str)
                open_calls.add(c["id"])
        elif m["role"] == "tool":
            assert m["tool_call_id"] in open_calls and isinstance(m["content"], str | list)
            open_calls.discard(m["tool_call_id"])
        else:
            assert m.get("content") is not None
    for t in body.get("tools") or ():
        assert t["type"] == "function" and t["function"]["name"]
        assert t["function"]["parameters"]["type"] == "object"
        assert "null" not in json.dumps(t)  # inspect-ai's null defaults are not sent
    if body.get("tools"):
        assert body["tool_choice"] == "auto"


# --- requests ---------------------------------------------------------------------------------


def test_requests_are_chat_bodies_with_the_sessions_tools_the_prefix_and_the_view():
    item = make_item(tools=TOOLS)
    with FakeOpenAI(default=answer_call("send_email", {"to": "ops@example.com"})) as server:
        judge = fake_judge(server)
        v = judge.judge(item)
        sent = judge.requests(item)
        judge.close()
    assert v.label in ("no_impact", "impact")
    assert len(server.requests) == 2
    baseline, view = server.requests
    assert baseline["messages"] == to_openai(item.prefix)  # the baseline: the full prefix
    assert view["messages"] == to_openai(item.view)  # the exact view, marker and all
    assert view["messages"][-1] == {"role": "tool", "tool_call_id": "c1", "content": POINTER}
    for body in server.requests:
        assert_valid_chat_body(body)
        assert body["model"] == "fake-model" and body["temperature"] == 0 and body["seed"] == 0
        assert [t["function"]["name"] for t in body["tools"]] == [
            "read_file",
            "run_tests",
            "edit_file",
        ]
    assert baseline["tools"] == view["tools"]  # the same tools: only the context differs
    read_file = baseline["tools"][0]["function"]
    assert read_file["description"] == "Read a file of the repository."
    assert read_file["parameters"]["required"] == ["path"]
    # what requests() shows is what was sent
    assert sent["tools_from"] == "session"
    assert sent["view"] == view and sent["baseline"] == baseline


def test_without_tool_definitions_minimal_schemas_are_derived_from_the_calls():
    item = make_item()
    tools = derived_tools([*item.prefix, *item.future])
    assert [t["function"]["name"] for t in tools] == ["fetch", "read_file", "send_email"]
    assert tools[2]["function"]["parameters"]["properties"] == {
        "to": {"type": "string"},
        "body": {"type": "string"},
    }
    with FakeOpenAI(default=Reply(body=chat_body("Done."))) as server:
        judge = fake_judge(server)
        judge.judge(item)
        assert judge.requests(item)["tools_from"] == "derived"
        none = fake_judge(server, tools="none")
        assert none.requests(item)["tools_from"] == "none"
        assert "tools" not in none.requests(item)["view"]
    for body in server.requests:
        assert_valid_chat_body(body)
        assert [t["function"]["name"] for t in body["tools"]] == [
            "fetch",
            "read_file",
            "send_email",
        ]


def test_tool_definitions_are_read_from_every_shape_traces_keep():
    openai = {"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}}
    anthropic = {"name": "b", "input_schema": {"type": "object", "properties": {"x": {}}}}
    bare = {"name": "c"}
    tools = session_tools([openai, anthropic, bare, {"description": "no name"}, openai])
    assert [t["function"]["name"] for t in tools] == ["a", "b", "c"]
    assert tools[1]["function"]["parameters"] == {"type": "object", "properties": {"x": {}}}
    assert tools[2]["function"]["parameters"] == {"type": "object", "properties": {}}


# --- actions ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ({"path": "./src//app.py"}, {"path": "src/app.py"}, True),
        ({"path": "src/app.py/"}, {"path": "src/app.py"}, True),
        ({"path": "src/app.py"}, {"path": "src/main.py"}, False),
        ({"b": 1.0, "a": "x"}, {"a": " x ", "b": 1}, True),  # key order, whole floats, spaces
        ({"a": "x", "opt": None}, {"a": "x"}, True),  # an explicit null is an absent option
        ({"q": "R-1004"}, {"q": "R-1005"}, False),
        (
            {"run_id": "job-2024-05-01T10:00:00Z-a1b2c3d4e5f6"},
            {"run_id": "job-2024-05-02T11:30:00Z-0f9e8d7c6b5a"},
            True,
        ),
        ({"session_id": "3f1c2a7e-9b0d-4c5e-8f21-6a7b8c9d0e1f"}, {"session_id": "abc"}, False),
        (
            {"ref": "550e8400-e29b-41d4-a716-446655440000"},
            {"ref": "6ba7b810-9dad-11d1-80b4-00c04fd430c8"},
            True,
        ),
        ({"user_id": "mia_li_3668"}, {"user_id": "mia_li_3669"}, False),  # ids that mean
        ({"filter": '{"b": 2, "a": 1}'}, {"filter": {"a": 1, "b": 2}}, True),  # JSON in a string
        ("not json", "not  json", True),
    ],
)
def test_arguments_are_compared_after_normalisation(a, b, same):
    assert arguments_equivalent(a, b) is same, (normalise_value(a), normalise_value(b))


def test_actions_are_parsed_from_answers_and_compared():
    both = [
        tool_call("read_file", {"path": "./app.py"}, "c1"),
        tool_call("run_tests", {"target": "tests/"}, "c2"),
    ]
    bodies = [
        chat_body(None, tool_calls=both),
        chat_body("Checking.", tool_calls=list(reversed(both))),
        chat_body(None, tool_calls=[tool_call("read_file", {"path": "main.py"})]),
        chat_body("The total is $1,339.00 for order W-2378156."),
        chat_body("Order W-2378156 comes to 1339."),
        chat_body("Order W-2378156 comes to 1212."),
    ]
    replies = iter(bodies)
    with FakeOpenAI(default=lambda body: Reply(body=next(replies))) as server:
        judge = fake_judge(server)
        actions = []
        for i in range(len(bodies)):
            c = judge.client.complete([{"role": "user", "content": f"q{i}"}], max_tokens=32)
            actions.append(action_of(c.text, [(t.name, t.arguments) for t in c.tool_calls]))
        judge.close()
    two, reordered, other_file, stated, restated, wrong = actions
    assert two.kind == "tool_call" and two.tools == ("read_file", "run_tests")
    assert two.calls[0].arguments == {"path": "./app.py"}
    assert reordered.text == "Checking."
    assert compare_actions(reordered, two).match  # the same calls, in another order
    diff = compare_actions(other_file, two)
    assert not diff.match and not diff.same_tools
    one = NextAction("tool_call", calls=(two.calls[0],))
    diff = compare_actions(other_file, one)
    assert (
        diff.same_tools and not diff.same_arguments and "read_file arguments" in diff.differences[0]
    )
    assert stated.kind == "message" and compare_actions(stated, restated).match  # facts agree
    diff = compare_actions(wrong, stated)
    assert not diff.same_facts and "1339" in diff.differences[0]
    diff = compare_actions(stated, two)
    assert not diff.same_kind and diff.differences[0] == "kind message ≠ tool_call"
    # the recorded next action is read from the future's first agent message
    recorded = action_from_message(make_item().future[0])
    assert (
        recorded.tools == ("send_email",) and recorded.calls[0].arguments["to"] == "ops@example.com"
    )


def test_a_per_tool_comparator_replaces_the_generic_one():
    a = NextAction("tool_call", calls=(action_of("", [("search", '{"q": "b a"}')]).calls))
    b = NextAction("tool_call", calls=(action_of("", [("search", '{"q": "a b"}')]).calls))
    assert not compare_actions(a, b).match
    register_comparator("search", lambda x, y: sorted(x["q"].split()) == sorted(y["q"].split()))
    try:
        assert compare_actions(a, b).match
    finally:
        from ctxreplay.judges import counterfactual

        counterfactual._COMPARATORS.pop("search")


# --- verdicts -----------------------------------------------------------------------------------


def test_a_model_that_acts_the_same_on_the_view_gives_no_impact():
    item = make_item(tools=TOOLS)
    same = answer_call("send_email", {"to": "ops@example.com", "body": "28.50"})
    with FakeOpenAI(default=same) as server:
        v = fake_judge(server).judge(item)
    assert v.label == "no_impact" and v.losses == ()
    doc = json.loads(v.raw)
    assert doc["view"] == doc["baseline"] and doc["view_vs_baseline"]["match"]
    assert doc["recorded"]["calls"][0]["name"] == "send_email"
    assert doc["view_vs_recorded"]["match"]
    assert v.reason.startswith("same action as the baseline · view: call send_email")
    assert "recorded: call send_email" in v.reason
    assert v.usage.calls == 2 and v.usage.prompt_tokens == 200  # two requests, paid


def test_a_model_that_acts_otherwise_on_the_pruned_view_gives_impact_with_located_losses():
    def model(body: dict[str, Any]) -> Reply:
        if is_pruned(body):
            return answer_call("read_file", {"path": "notes/todo.md"})
        return answer_call("send_email", {"to": "ops@example.com", "body": "total=28.50"})

    with FakeOpenAI(default=model) as server:
        v = fake_judge(server).judge(make_item(tools=TOOLS))
    assert v.label == "impact"
    assert "tools ['read_file'] ≠ ['send_email']" in v.reason
    assert "view: call read_file" in v.reason and "baseline: call send_email" in v.reason
    by_anchor = {loss.anchor: loss for loss in v.losses}
    assert set(by_anchor) == {"ops@example.com", "total=28.50"}
    mail = by_anchor["ops@example.com"]  # pruned with its read_file pair: nothing left of it
    assert mail.category == "locator_handle" and mail.source_object == "function:read_file:2"
    assert mail.need_seq == 6 and "send_email.to" in mail.detail
    total = by_anchor["total=28.50"]  # folded: behind a visible pointer the model did not use
    assert total.source_object == "function:fetch:1" and "recoverable" in total.detail
    assert v.recoverable == 1 and v.dependencies == 2
    doc = json.loads(v.raw)
    assert doc["view"]["calls"][0]["name"] == "read_file"
    assert not doc["view_vs_recorded"]["match"] and doc["baseline_vs_recorded"]["same_tools"]


def test_a_value_the_baseline_states_is_located_through_normalisation():
    """The baseline says ``1339`` where the prefix printed ``$1,339.00``; the view lost it."""
    item = make_item()
    quote = Part.response("c2", '{"order": "W-2378156", "total": "$1,339.00"}')
    prefix = (*item.prefix[:5], replace(item.prefix[5], parts=(quote,)))
    item = replace(item, prefix=prefix, index=build_index(prefix, count), archives=())

    def model(body: dict[str, Any]) -> Reply:
        if is_pruned(body):
            return Reply(body=chat_body("I cannot see the order any more."))
        return Reply(body=chat_body("Order W-2378156 comes to 1339."))

    with FakeOpenAI(default=model) as server:
        v = fake_judge(server, tools="none").judge(item)
    assert v.label == "impact" and "kind message" not in v.reason
    assert "stated values differ" in v.reason
    by_anchor = {loss.anchor: loss for loss in v.losses}
    assert set(by_anchor) == {"1339", "w-2378156"}
    assert by_anchor["1339"].source_object == "function:read_file:2"
    assert by_anchor["1339"].category == "evidence_detail"
    assert by_anchor["w-2378156"].category == "locator_handle"


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        (
            Reply(500, {"error": {"message": "boom"}}),
            "model call failed: http 500 after 2 attempts",
        ),
        (
            Reply(body="<html>garbage</html>"),
            "baseline unavailable: model call failed: bad response",
        ),
        (Reply(body=chat_body("")), "baseline unavailable: empty answer"),
        (Reply(body=chat_body(None, refusal="no.")), "baseline unavailable: model refused: no."),
        (
            Reply(
                body=chat_body(
                    None,
                    tool_calls=[
                        {
                            "id": "x",
                            "type": "function",
                            "function": {"name": "read_file", "arguments": '{"pa'},
                        }
                    ],
                    finish_reason="length",
                )
            ),
            "baseline unavailable: tool call read_file truncated",
        ),
    ],
    ids=["http-500", "garbage", "empty", "refusal", "truncated"],
)
def test_a_baseline_that_cannot_be_had_is_unscored_with_the_reason(fault, reason):
    item = make_item(tools=TOOLS)
    baseline = to_openai(item.prefix)

    def model(body: dict[str, Any]) -> Reply:
        if body["messages"] == baseline:
            return fault
        return answer_call("send_email", {"to": "ops@example.com"})

    with FakeOpenAI(default=model) as server:
        v = fake_judge(server, max_retries=1, timeout=5).judge(item)
    assert v.label == "unscored" and v.losses == ()
    assert v.reason.startswith(reason), v.reason
    doc = json.loads(v.raw)
    assert doc["baseline"] is None and doc["baseline_problem"]
    assert "view" not in doc  # the view is not asked without a baseline to compare with
    assert all(r["messages"] == baseline for r in server.requests)


def test_a_baseline_refused_for_good_is_asked_once_per_case_not_once_per_policy():
    item = make_item()
    with FakeOpenAI(default=Reply(400, error_body("context length exceeded"))) as server:
        judge = fake_judge(server)
        verdicts = [judge.judge(replace(item, policy=p)) for p in ("a", "b", "c")]
    assert len(server.requests) == 1
    for v in verdicts:
        assert v.label == "unscored"
        assert v.reason.startswith("baseline unavailable: model call failed: http 400: context")
    assert [v.usage.calls for v in verdicts] == [1, 0, 0]


def test_params_label_and_pickling():
    judge = make_judge("counterfactual:base_url=http://127.0.0.1:1/v1,cache_dir=off,tools=none")
    assert isinstance(judge, CounterfactualJudge) and judge.concurrent
    assert judge.label == "counterfactual:tools=none"  # the endpoint is how, not what
    clone = pickle.loads(pickle.dumps(judge))
    assert clone.params == judge.params
    with pytest.raises(Exception, match="tools"):
        make_judge("counterfactual:tools=some")


def test_an_oversized_prefix_is_unscored_without_a_call():
    with FakeOpenAI() as server:
        v = fake_judge(server, max_prompt_tokens=10).judge(make_item())
    assert v.label == "unscored" and "over max_prompt_tokens=10" in v.reason
    assert server.requests == []


# --- over a run: engine, cache and ``ctxreplay act`` -------------------------------------------


@pytest.fixture(scope="module")
def tool_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two coding sessions, one with tool definitions in its metadata (as inspect-ai keeps
    them); cut at every request point, replayed with noop, tool-prune and observation-masking."""
    root = tmp_path_factory.mktemp("counterfactual")
    w = CorpusWriter(root / "corpus", get_tokenizer())
    other = counted(
        [
            system(),
            user("Check the build of service api-7."),
            call("d1", "run_tests", {"target": "services/api-7"}),
            result(
                "d1", "\n".join(f"ok {i}" for i in range(60)) + "\nFAILED build api-7: exit code 2"
            ),
            call("d2", "read_file", {"path": "services/api-7/Makefile"}),
            result("d2", "all:\n\tgo build ./...\n"),
            call(
                "d3",
                "edit_file",
                {"path": "services/api-7/Makefile", "old_str": "go", "new_str": "go1.22"},
            ),
            result("d3", "ok"),
        ]
    )
    for name, messages, meta in (
        ("with-tools", coding_session(), {"tools": TOOLS}),
        ("without", other, {}),
    ):
        s = Session("inspect-ai", name, list(messages), key=name, session_id=f"s-{name}")
        s.metadata = meta
        w.add(validate_session(s))
    w.close([])
    _, cases = cut_corpus(Corpus(root / "corpus"), root / "cases.parquet", triggers=["every:1"])
    run = root / "run"
    policies = ["noop", "tool-prune:keep=1", "observation-masking:keep=1"]
    run_replay(root / "corpus", cases, policies, run, workers=1, progress=False)
    return run


def requests_by_case(run_path: Path) -> tuple[dict[str, list[list[dict]]], dict[str, list]]:
    """Per case, the distinct message lists its requests can have (the prefix and each view),
    and each case's prefix."""
    run = Run(run_path)
    cases, _ = read_cases(run.manifest["cases_path"])
    distinct: dict[str, list[list[dict]]] = {}
    prefixes: dict[str, list] = {}
    for case in cases.iter_rows(named=True):
        session = run.corpus.load_session(case["session_id"])
        prefix = to_openai(prefix_of([m for m in session if m.visible], case["cut"]))
        prefixes[case["case_id"]] = prefix
        seen = [prefix]
        for label in run.policies:
            view = to_openai(run.load_view(case["case_id"], label, session))
            if view not in seen:
                seen.append(view)
        distinct[case["case_id"]] = seen
    return distinct, prefixes


def copy_run(run: Path, tmp_path: Path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(run, out)
    return out


def test_over_a_run_a_model_repeating_itself_gives_all_no_impact_and_pays_each_baseline_once(
    tool_run, tmp_path
):
    run = copy_run(tool_run, tmp_path)
    same = answer_call("read_file", {"path": "app.py"})
    with FakeOpenAI(default=same) as server:
        summary = run_judge(
            run,
            "counterfactual",
            overrides={"base_url": server.base_url, "model": "fake-model"},
            progress=False,
        )
    verdicts = read_verdicts(run, "counterfactual")
    assert verdicts.height == summary.judged > 0
    assert set(verdicts["label"]) == {"no_impact"}
    distinct, prefixes = requests_by_case(run)
    sent = [r["messages"] for r in server.requests]
    # one request per distinct message list of a case: the baseline once per case whatever the
    # number of policies, and a view identical to the prefix (noop) costs nothing more
    assert len(sent) == sum(len(v) for v in distinct.values())
    assert all(sent.count(p) == 1 for p in prefixes.values())
    for body in server.requests:
        assert_valid_chat_body(body)
    by_session = {
        r["session_id"]: r for r in verdicts.select("session_id", "raw").iter_rows(named=True)
    }
    assert json.loads(by_session["s-with-tools"]["raw"])["tools_from"] == "session"
    assert json.loads(by_session["s-without"]["raw"])["tools_from"] == "derived"
    tooled = [b for b in server.requests if b["tools"][0]["function"]["name"] == "read_file"]
    assert tooled and all(
        b["tools"][0]["function"].get("description") == "Read a file of the repository."
        for b in tooled
        if len(b["tools"]) == 3
    )
    # each request is paid by one verdict; a noop view is its case's baseline, paid at most once
    assert verdicts["calls"].sum() == len(server.requests) == summary.calls
    assert verdicts.filter(pl.col("policy") == "noop")["calls"].max() <= 1


def test_act_diverging_on_pruned_views_gives_impact_and_a_rerun_costs_nothing(tool_run, tmp_path):
    run = copy_run(tool_run, tmp_path)

    def model(body: dict[str, Any]) -> Reply:
        if is_pruned(body):
            return Reply(body=chat_body("I no longer see the file; let me read it again."))
        return answer_call("edit_file", {"path": "app.py", "old_str": "line 7 of"})

    runner = CliRunner()
    with FakeOpenAI(default=model) as server:
        args = ["act", str(run), "--base-url", server.base_url, "--model", "fake-model", "--quiet"]
        first = runner.invoke(main, args)
        assert first.exit_code == 0, first.output
        asked = len(server.requests)
        verdicts = read_verdicts(run, "counterfactual")
        again = runner.invoke(main, args)  # everything judged: nothing to do
        assert again.exit_code == 0 and "0 verdicts" in again.output
        shutil.rmtree(run / "verdicts")  # judged again from scratch: the cache answers
        third = runner.invoke(main, args)
        assert third.exit_code == 0, third.output
        assert len(server.requests) == asked  # a re-run costs zero calls
    assert "model calls" in first.output and "counterfactual" in first.output
    labels = dict(verdicts.group_by("policy").agg(pl.col("label").unique().sort()).iter_rows())
    assert labels["noop"] == ["no_impact"]
    assert "impact" in labels["tool-prune:keep=1"]
    impact = verdicts.filter(pl.col("label") == "impact")
    assert impact.height and all("kind message ≠ tool_call" in r for r in impact["explanation"])
    rerun = read_verdicts(run, "counterfactual")
    assert rerun["cache_hit"].all() and (rerun["calls"] == 0).all()
    assert (
        rerun.sort("policy", "case_id")["label"].to_list()
        == verdicts.sort("policy", "case_id")["label"].to_list()
    )
    calls = pl.read_parquet(sorted((run / "calls").glob("*.parquet")))  # the run's calls table
    assert calls.filter(pl.col("status") == "ok").height == asked
    assert calls.filter(pl.col("status") == "cached").height >= 2 * rerun.height - asked
    assert set(calls["caller"]) == {"counterfactual:model=fake-model"}  # the judge label
    # impact exactly where the view shows the scripted model that a result was pruned
    r = Run(run)
    for row in verdicts.iter_rows(named=True):
        view = to_openai(r.load_view(row["case_id"], row["policy"]))
        assert (row["label"] == "impact") is is_pruned({"messages": view}), row


# --- the real local model -----------------------------------------------------------------------


@pytest.mark.local_model
def test_local_model_acts_on_views_and_prefix_then_serves_from_cache(local_model, tmp_path):
    """Plumbing with a real model (SmolLM2-135M): a real server takes the bodies, its answer is
    parsed into an action or unscored with a reason, and a second judge is served from the cache.
    The 135M model's choices mean nothing."""
    params = CounterfactualJudge.Params(
        base_url=local_model.base_url,
        model=local_model.model,
        tariff="local",
        cache_dir=str(tmp_path),
        max_tokens=32,
        timeout=60,
    )
    items = [
        make_item(policy="fold-and-prune"),
        replace(make_item(), policy="noop", view=make_item().prefix),
    ]
    judge = CounterfactualJudge(params)
    first = [judge.judge(it) for it in items]
    for v in first:
        assert v.label in LABELS
        if v.label == "unscored":
            assert v.reason
        else:
            doc = json.loads(v.raw)
            assert doc["view"]["kind"] in ("message", "tool_call")
            assert doc["baseline"]["kind"] in ("message", "tool_call")
    assert first[0].usage.prompt_tokens > 0 and first[0].usage.usd == 0.0
    assert judge.client.stats.http_requests == 2  # the noop view is the baseline: cached
    judge.close()
    again = CounterfactualJudge(params)
    second = [again.judge(it) for it in items]
    assert again.client.stats.http_requests == 0
    for a, b in zip(first, second, strict=True):
        assert b.cache_hit and (b.label, b.reason, b.raw) == (a.label, a.reason, a.raw)
    again.close()
