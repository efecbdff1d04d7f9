"""The probe judge: probes derived from the flow judge's dependencies, answered from the view by
a model over real HTTP (a scripted OpenAI-compatible server, and once the local model), graded.

The scripted server plays a faithful reader: it answers a question right exactly when the view
it is sent holds what the answer needs, and ``unknown`` otherwise; the grader marks an answer
correct when it is the reference. So which probes a view passes is known in advance.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner

from ctxreplay.datasets.messages import Message, Part
from ctxreplay.judges.base import LABELS, JudgeInput, make_judge
from ctxreplay.judges.probe import Probe, ProbeJudge, same_value
from ctxreplay.replay.objects import build_index
from ctxreplay.text.facts import squash

from builders import count, numbered
from fake_openai import FakeOpenAI, ManualClock, Reply, chat_body, error_body

pytestmark = pytest.mark.usefixtures("fresh_endpoints")


PROFILE = json.dumps({"user_id": "jane_42", "payment": "credit_card_7755", "city": "Springfield"})
ORDER = json.dumps({"order_id": "#W1001", "status": "pending", "total": 54.1})
PREFIX = numbered(
    [
        Message("system", (Part.text("You are a support agent."),)),
        Message("user", (Part.text("Hi, I am jane_42 and I want to cancel an order."),)),
        Message("assistant", (Part.call("c1", "get_user", {"user_id": "jane_42"}),)),
        Message("tool", (Part.response("c1", PROFILE),)),  # 3
        Message("assistant", (Part.call("c2", "list_files", {"dir": "receipts"}),)),
        Message("tool", (Part.response("c2", "receipts/2024-05.pdf\nreceipts/r-88812.pdf"),)),
        Message("assistant", (Part.text("I see one open order. Shall I look it up?"),)),
        Message("user", (Part.text("Yes please, look it up and cancel it."),)),  # 7: latest
        Message("assistant", (Part.call("c3", "get_order", {"order_id": "#W1001"}),)),
        Message("tool", (Part.response("c3", ORDER),)),  # 9
    ]
)
FUTURE = numbered(
    [
        Message(
            "assistant",
            (
                Part.call(
                    "c4", "cancel_order", {"order_id": "#W1001", "refund_to": "credit_card_7755"}
                ),
            ),
        ),
        Message("tool", (Part.response("c4", "cancelled"),)),
        Message("assistant", (Part.call("c5", "attach", {"path": "receipts/r-88812.pdf"}),)),
        Message("tool", (Part.response("c5", "attached"),)),
        Message("assistant", (Part.text("Order #W1001 was pending and is now cancelled."),)),
    ],
    start=len(PREFIX),
)
INDEX = build_index(PREFIX, count)
#: the view of a pruning policy: the profile and the file listing are gone
PRUNED = tuple(m for i, m in enumerate(PREFIX) if i not in (2, 3, 4, 5))


def item(view: tuple[Message, ...] = PREFIX, policy: str = "noop", case: str = "s1@10"):
    return JudgeInput(case, "s1", policy, PREFIX, view, FUTURE, INDEX, {})


#: the probes the judge must derive from the case, exactly
DERIVED = [
    Probe(
        "r1",
        "recall",
        "What is the `payment` in the result of the `get_user` call for user_id jane_42? "
        "Give the exact value.",
        "credit_card_7755",
        "exact",
        "function:get_user:1",
        10,
        "locator_handle",
    ),
    Probe(
        "r2",
        "recall",
        "What is the `order_id` in the result of the `get_order` call? Give the exact value.",
        "#W1001",
        "exact",
        "function:get_order:3",
        10,
        "locator_handle",
    ),
    Probe(
        "r3",
        "recall",
        "What is the `status` in the result of the `get_order` call for order_id #W1001? "
        "Give the exact value.",
        "pending",
        "exact",
        "function:get_order:3",
        14,
        "evidence_detail",
    ),
    Probe(
        "a1",
        "artifact",
        "Which path does the agent's upcoming `attach` call need? "
        "Give the exact value from the conversation.",
        "receipts/r-88812.pdf",
        "exact",
        "function:list_files:2",
        12,
        "locator_handle",
    ),
]
#: what the scripted model writes for the case (continuation and decision), and the text of the
#: conversation each answer rests on
WRITTEN = [
    {"kind": "continuation", "question": "What is left to do?", "answer": "Cancel it."},
    {"kind": "decision", "question": "Why look the order up?", "answer": "To cancel it."},
]
NEEDLES = {"What is left to do?": "cancel it", "Why look the order up?": "cancel it"}


# --- the scripted reader --------------------------------------------------------------------


def kind_of(body: dict[str, Any]) -> str:
    """Which of the judge's requests a body is, by its instructions."""
    system = body["messages"][0]["content"]
    return next(k for w, k in SYSTEMS.items() if system.startswith(w))


SYSTEMS = {"You write probe": "probes", "You answer": "answers", "You grade": "grades"}


def block(body: dict[str, Any], name: str) -> str:
    user = body["messages"][-1]["content"]
    m = re.search(rf"<<<TRACE_DATA {name} nonce=(\w+)>>>\n(.*?)\n<<<END_TRACE_DATA", user, re.S)
    assert m, f"no {name} block"
    return m.group(2)


class Reader:
    """A scripted model: writes ``WRITTEN``; answers each question right iff the conversation
    block holds its needle (recall and artifact: the value; written ones: ``NEEDLES``); grades
    an answer correct iff it is the reference."""

    def __init__(self, probes: list[Probe] | None = None) -> None:
        self.truth = {p.question: (p.expected, p.expected) for p in probes or DERIVED}
        self.truth.update({w["question"]: (w["answer"], NEEDLES[w["question"]]) for w in WRITTEN})

    def __call__(self, body: dict[str, Any]) -> Reply:
        kind = kind_of(body)
        if kind == "probes":
            return Reply(body=chat_body(json.dumps({"probes": WRITTEN})))
        if kind == "answers":
            view = squash(block(body, "CONVERSATION").lower())
            user = body["messages"][-1]["content"]
            answers = []
            for qid, question in re.findall(r"^- (\w+): (.+)$", user, re.M):
                answer, needle = self.truth[question]
                known = squash(needle.lower()) in view
                answers.append({"id": qid, "answer": answer if known else "unknown"})
            return Reply(body=chat_body(json.dumps({"answers": answers})))
        rows = json.loads(block(body, "ANSWERS"))
        grades = [
            {"id": r["id"], "correct": r["answer"] == r["reference"], "reason": "compared"}
            for r in rows
        ]
        return Reply(body=chat_body(json.dumps({"grades": grades})))


def judge_for(server: FakeOpenAI, **kw: Any) -> ProbeJudge:
    params = ProbeJudge.Params(
        base_url=server.base_url,
        model="fake-model",
        cache_dir=str(kw.pop("cache_dir", "off")),
        max_retries=kw.pop("max_retries", 1),
        timeout=5.0,
        **kw,
    )
    judge = ProbeJudge(params)
    clock = ManualClock()  # retries wait on this clock
    judge.client.sleep, judge.client.clock = clock.sleep, clock.now
    return judge


def kinds(server: FakeOpenAI) -> list[str]:
    return [kind_of(b) for b in server.requests]


# --- probes from dependencies -----------------------------------------------------------------


def test_probes_are_derived_from_the_flow_dependencies_exactly() -> None:
    judge = ProbeJudge(ProbeJudge.Params(written=0))
    assert judge.derived(item()) == DERIVED
    # the same for every view: probes depend on the case, not the policy
    assert judge.derived(item(PRUNED, "tool-prune")) == DERIVED
    limited = ProbeJudge(ProbeJudge.Params(max_recall=1, max_artifact=0))
    assert limited.derived(item()) == DERIVED[:1]


def test_exact_grading_uses_the_flow_normalisation() -> None:
    assert same_value("The total is $1,339.00.", "1339")
    assert same_value("CREDIT_CARD_7755", "credit_card_7755")
    assert same_value("It was paid on May 20, 2024", "2024-05-20")
    assert not same_value("credit_card_7756", "credit_card_7755")
    assert not same_value("unknown", "pending")
    assert not same_value("", "#")


# --- verdicts against a scripted server --------------------------------------------------------


def test_a_reader_that_knows_everything_on_the_full_view_gives_no_impact_with_wilson() -> None:
    with FakeOpenAI(default=Reader()) as server:
        v = judge_for(server).judge(item())
    assert v.label == "no_impact" and v.losses == () and v.dependencies == 6
    raw = json.loads(v.raw)
    assert raw["score"] == 1.0 and raw["high"] == 1.0
    # Wilson at k = n: the lower bound is n / (n + z²), z = 1.959964
    assert raw["low"] == pytest.approx(6 / (6 + 1.959964**2), abs=1e-6)
    assert "6/6 probes answered right (score 1.00, Wilson 95% [0.61, 1.00]" in v.reason
    assert [p["id"] for p in raw["probes"]] == ["r1", "r2", "r3", "a1", "c1", "d1"]
    assert kinds(server) == ["probes", "answers", "grades"]
    assert v.usage.calls == 3 and v.usage.prompt_tokens == 300 and not v.cache_hit


def test_a_pruned_view_misses_recall_and_artifact_probes_as_losses() -> None:
    with FakeOpenAI(default=Reader()) as server:
        v = judge_for(server).judge(item(PRUNED, "tool-prune"))
    assert v.label == "impact"
    lost = {(loss.anchor, loss.source_object, loss.need_seq, loss.category) for loss in v.losses}
    assert lost == {
        ("credit_card_7755", "function:get_user:1", 10, "locator_handle"),
        ("receipts/r-88812.pdf", "function:list_files:2", 12, "locator_handle"),
    }
    assert "4/6 probes answered right" in v.reason and "missed: r1 recall, a1 artifact" in v.reason
    raw = json.loads(v.raw)
    assert raw["score"] == pytest.approx(4 / 6)
    assert {p["id"]: p["answer"] for p in raw["probes"]}["r1"] == "unknown"
    # the view sent is the pruned one: the profile is not in it
    answers = next(b for b in server.requests if kind_of(b) == "answers")
    assert "credit_card_7755" not in block(answers, "CONVERSATION")


def test_threshold_is_a_parameter() -> None:
    with FakeOpenAI(default=Reader()) as server:
        v = judge_for(server, threshold=0.6).judge(item(PRUNED, "tool-prune"))
    assert v.label == "no_impact" and "threshold 0.6" in v.reason
    assert make_judge("probe:threshold=0.6").label == "probe:threshold=0.6"


def test_probes_are_written_once_per_case_whatever_the_policies() -> None:
    with FakeOpenAI(default=Reader()) as server:
        judge = judge_for(server)
        verdicts = [judge.judge(item(view, p)) for p, view in [("a", PREFIX), ("b", PRUNED)]]
        verdicts.append(judge.judge(item(PRUNED, "c")))
    assert [v.label for v in verdicts] == ["no_impact", "impact", "impact"]
    assert kinds(server).count("probes") == 1
    assert kinds(server).count("answers") == 3
    # the engine judges the pairs of a session in threads: still one generation per case
    slow = Reader()

    def slowly(body: dict[str, Any]) -> Reply:
        return replace(slow(body), delay=0.2 if kind_of(body) == "probes" else 0.0)

    with FakeOpenAI(default=slowly) as server:
        judge = judge_for(server)
        with ThreadPoolExecutor(max_workers=4) as pool:
            labels = list(pool.map(lambda p: judge.judge(item(PRUNED, p)).label, "abcd"))
    assert labels == ["impact"] * 4 and kinds(server).count("probes") == 1


def test_a_failed_call_is_unscored_with_its_reason_and_a_bad_answer_too() -> None:
    with FakeOpenAI(default=Reply(400, error_body("model not found"))) as server:
        v = judge_for(server, max_retries=0).judge(item())
    assert v.label == "unscored" and v.reason.startswith("model call failed: http 400")
    with FakeOpenAI(default=Reply(503, error_body("overloaded"))) as server:
        v = judge_for(server, max_retries=1).judge(item())
    assert v.reason == "model call failed: http 503 after 2 attempts"

    def no_json(body: dict[str, Any]) -> Reply:
        return (
            Reply(body=chat_body("I cannot answer that."))
            if kind_of(body) == "answers"
            else (Reader()(body))
        )

    with FakeOpenAI(default=no_json) as server:
        v = judge_for(server, response_format="text").judge(item())
    assert v.label == "unscored" and v.reason == "unparseable answers: no JSON object in the answer"


def test_a_rerun_is_served_from_the_cache_at_zero_calls(tmp_path: Path) -> None:
    with FakeOpenAI(default=Reader()) as server:
        first = judge_for(server, cache_dir=tmp_path).judge(item(PRUNED, "tool-prune"))
        asked = len(server.requests)
        again = judge_for(server, cache_dir=tmp_path).judge(item(PRUNED, "tool-prune"))
    assert asked == 3 and len(server.requests) == asked
    assert again.cache_hit and again.usage.calls == 0 and again.usage.usd == 0.0
    assert (again.label, again.losses, again.reason) == (first.label, first.losses, first.reason)


def test_a_case_without_dependencies_asks_nothing_and_is_unscored() -> None:
    """No probe, no question, no answer: never a pass (a dead endpoint once scored 100%)."""
    quiet = numbered([Message("assistant", (Part.text("Done."),))], start=len(PREFIX))
    with FakeOpenAI(default=Reader()) as server:
        v = judge_for(server).judge(replace(item(), future=quiet))
    assert v.label == "unscored" and v.dependencies == 0
    assert v.reason is not None and v.reason.startswith("no probes: ")
    assert "nothing was asked of the model" in v.reason
    assert server.requests == []


# --- in a run: the engine, and calibration against dependency labels ---------------------------


def test_probe_in_a_run_and_calibrated_against_dependency_labels(tmp_path: Path) -> None:
    """``calibrate --against deps:`` works for probe as for the other judges: the labelled
    fixture of ``test_labels.py``, judged by probe through the engine (the scripted reader,
    derived probes only), then compared with the labels in every variant."""
    from test_labels import POLICIES, TRACES, write_labels

    from ctxreplay.cli import main
    from ctxreplay.datasets.store import Corpus
    from ctxreplay.engines.calibrate import calibrate_against_deps
    from ctxreplay.engines.judge import run_judge
    from ctxreplay.engines.replay import run_replay
    from ctxreplay.runs import read_calibration, read_verdicts

    traces = tmp_path / "traces.jsonl"
    traces.write_text(
        "".join(json.dumps({"session_id": k, "messages": v}) + "\n" for k, v in TRACES.items())
    )
    runner = CliRunner()
    out = runner.invoke(main, ["import", str(traces), "-o", str(tmp_path / "corpus"), "--quiet"])
    assert out.exit_code == 0, out.output
    sessions = Corpus(tmp_path / "corpus").sessions()
    sid = dict(zip(sessions["source_session_id"], sessions["session_id"], strict=True))
    labels = write_labels(tmp_path / "labels", sid)
    args = ["cases", str(tmp_path / "corpus"), "--cuts", str(labels / "cases.jsonl")]
    cut = runner.invoke(main, [*args, "-o", str(tmp_path / "cases.parquet")])
    assert cut.exit_code == 0, cut.output
    run = tmp_path / "run"
    run_replay(
        tmp_path / "corpus", tmp_path / "cases.parquet", POLICIES, run, workers=1, progress=False
    )

    def reader(body: dict[str, Any]) -> Reply:
        """Answers each value question with the whole view: right exactly when the view holds
        the value."""
        view = block(body, "CONVERSATION")
        user = body["messages"][-1]["content"]
        answers = [
            {"id": qid, "answer": view if qid.startswith(("r", "a")) else "unknown"}
            for qid, _ in re.findall(r"^- (\w+): (.+)$", user, re.M)
        ]
        return Reply(body=chat_body(json.dumps({"answers": answers})))

    with FakeOpenAI(default=reader) as server:
        spec = f"probe:written=0,base_url={server.base_url},model=fake-model,max_retries=0"
        summary = run_judge(run, spec, workers=1, progress=False)
    label = "probe:model=fake-model,written=0"
    assert summary.judge == label
    verdicts = read_verdicts(run, label)
    assert verdicts.height == 9 and set(verdicts["label"]) <= set(LABELS)
    # one case's future uses nothing of the editable prefix: no probe asked, so unscored
    unscored = verdicts.filter(pl.col("label") == "unscored")
    assert unscored.height == 3 and all(
        r.startswith("no probes") for r in unscored["unscored_reason"]
    )
    assert (run / "calls").is_dir()  # every call recorded in the run
    result = calibrate_against_deps(run, "probe", labels, workers=1)
    strict = result.variants[0].calibration
    assert strict.judge == label and strict.n == 6 and strict.unscored == 3
    assert read_calibration(run, label)["against"] == result.variant("recovery").reference
    cli = runner.invoke(
        main, ["calibrate", str(run), "--judge", "probe", "--against", f"deps:{labels}"]
    )
    assert cli.exit_code == 0, cli.output
    assert f"{label} against deps:" in cli.output


# --- the real local model ----------------------------------------------------------------------


@pytest.mark.local_model
def test_local_model_answers_probes_from_the_view(local_model, tmp_path: Path) -> None:
    """Plumbing only: a 135M model's answers mean nothing, but the requests are valid, the
    verdict is a label (or unscored with a reason), and a second judge is served by the cache."""
    params = ProbeJudge.Params(
        base_url=local_model.base_url,
        model=local_model.model,
        cache_dir=str(tmp_path),
        max_tokens=160,
        timeout=60,
        written=0,
    )
    v = ProbeJudge(params).judge(item(PRUNED, "tool-prune"))
    assert v.label in LABELS
    assert v.label != "unscored" or v.reason
    again = ProbeJudge(params).judge(item(PRUNED, "tool-prune"))
    assert again.cache_hit and again.usage.calls == 0 and again.label == v.label
