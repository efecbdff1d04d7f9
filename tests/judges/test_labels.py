"""Dependency labels as gold: the ``deps`` judge, calibration against it, the missed audit.

A hand-built labelled fixture (three OpenAI-chat sessions, a labels set written here) is imported,
cut with ``--cuts cases.jsonl``, replayed with ``noop``, ``tool-prune:keep=1`` and
``oldest-turn:mode=fold`` and judged with ``anchor``. What each view loses is designed:

- ``orders`` (3 user turns, cut before the cancel call): tool-prune:keep=1 prunes the profile
  (payment id) and the pending order → gold impact, and anchor sees the payment id go (TP);
  oldest-turn:mode=fold folds turn 2 (the order lookups) behind a visible pointer → strict gold
  impact (``"status": "pending"`` left the view), recovery gold no_impact, anchor no_impact (FN).
- ``build`` (the agent runs ``sudo`` because of an earlier ``Permission denied``): tool-prune
  prunes that output → gold impact; anchor finds no exact anchor reused (FN).
- ``docs`` (labelled corpus "other"): tool-prune prunes the search result whose URL the answer
  repeats; the URL is labelled only *helpful* → gold no_impact (required), but anchor says
  impact (FP); with ``necessity=all`` gold says impact.

So against strict gold: tp 1, fn 2, fp 1, tn 5; whitespace the same; recovery tp 1, fn 1, fp 1,
tn 6.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from ctxreplay.cli import main
from ctxreplay.datasets.cases import read_cases
from ctxreplay.datasets.messages import Message, Part
from ctxreplay.datasets.store import Corpus
from ctxreplay.engines.calibrate import calibrate_against_deps, missed_dependencies
from ctxreplay.engines.judge import run_judge
from ctxreplay.engines.replay import run_replay
from ctxreplay.judges.base import JudgeInput, make_judge
from ctxreplay.judges.base import rendered as annotator_text
from ctxreplay.judges.labels import DepsJudge, LabelsError, load_labels
from ctxreplay.replay.objects import build_index
from ctxreplay.replay.plan import Edit, Plan, rehearse
from ctxreplay.replay.view import Archive, commit
from ctxreplay.reports.stats import wilson
from ctxreplay.runs import calibration_path, read_calibration, read_verdicts, slug

from builders import corpus_path, count, shared_path

POLICIES = ["noop", "tool-prune:keep=1", "oldest-turn:mode=fold"]


# --- the fixture ----------------------------------------------------------------------------


def _call(cid: str, name: str, args: dict) -> dict:
    fn = {"name": name, "arguments": json.dumps(args)}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": cid, "type": "function", "function": fn}],
    }


def _tool(cid: str, content: str) -> dict:
    return {"role": "tool", "tool_call_id": cid, "content": content}


def _user(text: str) -> dict:
    return {"role": "user", "content": text}


def _say(text: str) -> dict:
    return {"role": "assistant", "content": text}


PROFILE = json.dumps(
    {
        "user_id": "jane_42",
        "orders": ["#W1001", "#W1002"],
        "payment": "credit_card_7755",
        "address": "12 Elm Street, Springfield",
    },
    indent=1,
)
TRACES = {
    "orders": [
        {
            "role": "system",
            "content": "You are a support agent. "
            "Always confirm with the user before cancelling an order.",
        },
        _user("Hi, I am jane_42 and I want to cancel an order."),
        _call("c1", "get_user", {"user_id": "jane_42"}),
        _tool("c1", PROFILE),  # 3
        _say("I see two orders, #W1001 and #W1002. Shall I look them up?"),
        _user("Yes, look them up."),  # 5: turn 2
        _call("c2", "get_order", {"order_id": "#W1001"}),
        _tool("c2", json.dumps({"order_id": "#W1001", "status": "pending", "total": 54.1})),  # 7
        _call("c3", "get_order", {"order_id": "#W1002"}),
        _tool("c3", json.dumps({"order_id": "#W1002", "status": "delivered", "total": 99.99})),
        _say("Order #W1001 is pending and #W1002 was delivered. Which one should I cancel?"),
        _user("The pending one, yes please cancel it."),  # 11: latest turn
        _call("c4", "cancel_order", {"order_id": "#W1001", "refund_to": "credit_card_7755"}),
        _tool("c4", "cancelled"),  # 13
        _say("Order #W1001 is cancelled; the refund goes to credit_card_7755."),  # 14
    ],
    "build": [
        {"role": "system", "content": "You are a coding agent working in a Linux shell."},
        _user("The build in /srv/app fails, please fix it."),
        _call("b1", "bash", {"cmd": "make all"}),
        _tool(
            "b1",
            "mkdir out\nmkdir: cannot create directory 'out': Permission denied\n"
            "make: *** [Makefile:2: all] Error 1",
        ),  # 3
        _call("b2", "bash", {"cmd": "ls -la"}),
        _tool("b2", "total 8\n-rw-r--r-- 1 root root 120 Makefile\n-rw-r--r-- 1 root root 30 a.c"),
        _call("b3", "bash", {"cmd": "cat Makefile"}),
        _tool("b3", "all:\n\tmkdir out && gcc main.c -o out/app"),
        _say("The Makefile itself looks fine."),
        _user("Go ahead and fix it."),  # 9
        _call("b4", "bash", {"cmd": "sudo make all"}),  # 10: cut
        _tool("b4", "gcc main.c -o out/app"),
        _say("Built it with elevated rights."),  # 12
    ],
    "docs": [
        {"role": "system", "content": "You are a research assistant."},
        _user("Find me the reference page of the API."),
        _call("d1", "search", {"q": "api reference"}),
        _tool("d1", "Result: https://docs.example.com/api/v2/reference (API reference, 2025)"),
        _call("d2", "search", {"q": "api changelog"}),
        _tool("d2", "Result: https://docs.example.com/changelog (release notes)"),
        _say("I found two pages."),
        _user("Send me the reference one."),  # 7
        _say("Here it is: https://docs.example.com/api/v2/reference"),  # 8: cut
        _user("thanks"),
        _say("You are welcome."),  # 10
    ],
}


def write_labels(folder: Path, sid: dict[str, str]) -> Path:
    """The labels set of the fixture (session ids as the importer numbered them)."""
    folder.mkdir(parents=True, exist_ok=True)
    cases = [
        ("t-orders", "fixture", sid["orders"], 12, [12, 13]),
        ("t-build", "fixture", sid["build"], 10, [10, 11, 12]),
        ("t-docs", "other", sid["docs"], 8, [8, 9, 10]),
        # a case of a corpus this fixture does not hold: skipped when cutting
        ("t-elsewhere", "tau-bench", "tau-bench-000000000000", 4, [4, 5]),
    ]
    rows = [
        {
            "case": name,
            "corpus": corpus,
            "session_id": session,
            "source_session_id": name,
            "cut": cut,
            "prefix_seqs": list(range(cut)),
            "future_seqs": future,
        }
        for name, corpus, session, cut, future in cases
    ]
    deps = [
        ("t-orders", 3, 12, "locator_handle", "required", '"payment": "credit_card_7755"'),
        ("t-orders", 7, 12, "evidence_detail", "required", '"status": "pending"'),
        (
            "t-orders",
            0,
            12,
            "behavioral_contract",
            "required",
            "Always confirm with the user before cancelling an order.",
        ),
        ("t-orders", 9, 12, "evidence_detail", "helpful", '"status": "delivered"'),
        ("t-build", 3, 10, "live_state", "required", "Permission denied"),
        ("t-docs", 3, 8, "locator_handle", "helpful", "https://docs.example.com/api/v2/reference"),
        ("t-docs", 7, 8, "behavioral_contract", "required", "Send me the reference one."),
    ]
    (folder / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "dependencies.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    "case": c,
                    "seq": s,
                    "needed_by": n,
                    "category": cat,
                    "necessity": nec,
                    "text": t,
                    "why": f"why {c} {s}",
                }
            )
            + "\n"
            for c, s, n, cat, nec, t in deps
        )
    )
    return folder


@dataclass
class Fixture:
    root: Path
    corpus: Path
    labels: Path
    cases: Path
    run: Path
    sid: dict[str, str]  # source name → session id
    cases_output: str

    def case(self, name: str) -> str:
        cut = {"orders": 12, "build": 10, "docs": 8}[name]
        return f"{self.sid[name]}@{cut}"


@pytest.fixture(scope="module")
def fx(tmp_path_factory: pytest.TempPathFactory) -> Fixture:
    root = tmp_path_factory.mktemp("labelled")
    traces = root / "traces.jsonl"
    traces.write_text(
        "".join(json.dumps({"session_id": k, "messages": v}) + "\n" for k, v in TRACES.items())
    )
    runner = CliRunner()
    out = runner.invoke(main, ["import", str(traces), "-o", str(root / "corpus"), "--quiet"])
    assert out.exit_code == 0, out.output
    sessions = Corpus(root / "corpus").sessions()
    sid = dict(zip(sessions["source_session_id"], sessions["session_id"], strict=True))
    labels = write_labels(root / "labels", sid)
    cut = runner.invoke(
        main,
        [
            "cases",
            str(root / "corpus"),
            "--cuts",
            str(labels / "cases.jsonl"),
            "-o",
            str(root / "cases.parquet"),
        ],
    )
    assert cut.exit_code == 0, cut.output
    run = root / "run"
    run_replay(root / "corpus", root / "cases.parquet", POLICIES, run, workers=1, progress=False)
    run_judge(run, "anchor", workers=1, progress=False)
    return Fixture(root, root / "corpus", labels, root / "cases.parquet", run, sid, cut.output)


def gold(fx: Fixture, variant: str = "strict", necessity: str = "required") -> dict:
    spec = f"deps:path={fx.labels},variant={variant},necessity={necessity}"
    label = run_judge(fx.run, spec, workers=1, progress=False).judge
    frame = read_verdicts(fx.run, label).filter(pl.col("judge") == label)
    return {(r["case_id"], r["policy"]): r for r in frame.iter_rows(named=True)}


def calibrate_args(fx: Fixture) -> list[str]:
    return ["calibrate", str(fx.run), "--judge", "anchor", "--against", f"deps:{fx.labels}"]


# --- cutting from a labels set ----------------------------------------------------------------


def test_cases_cut_from_labels_end_the_future_where_the_labels_do(fx: Fixture) -> None:
    assert "3 cases from 3 sessions" in fx.cases_output
    assert "skipped 1 cuts of 1 sessions not in this corpus" in fx.cases_output
    assert "tau-bench-000000000000@4" in fx.cases_output
    frame, meta = read_cases(fx.cases)
    rows = {r["case_id"]: r for r in frame.iter_rows(named=True)}
    assert set(rows) == {fx.case("orders"), fx.case("build"), fx.case("docs")}
    orders = rows[fx.case("orders")]
    # future_seqs [12, 13]: the future stops before the agent's reply at 14
    assert (orders["future_start"], orders["future_end"]) == (12, 14)
    assert orders["future_messages"] == 2 and orders["future_requests"] == 1
    assert (rows[fx.case("build")]["future_end"], rows[fx.case("docs")]["future_end"]) == (13, 11)
    assert meta["cuts_skipped"] == 1


# --- gold labels ----------------------------------------------------------------------------


def test_gold_labels_per_view_and_variant(fx: Fixture) -> None:
    strict, ws, rec = gold(fx), gold(fx, "whitespace"), gold(fx, "recovery")
    impact = {k for k, r in strict.items() if r["label"] == "impact"}
    assert impact == {
        (fx.case("orders"), "tool-prune:keep=1"),
        (fx.case("orders"), "oldest-turn:mode=fold"),
        (fx.case("build"), "tool-prune:keep=1"),
    }
    assert all(r["label"] != "unscored" for r in strict.values()) and len(strict) == 9
    assert {k for k, r in ws.items() if r["label"] == "impact"} == impact
    # the folded turn's pointer is visible: recoverable, so no loss under the recovery rule
    assert {k for k, r in rec.items() if r["label"] == "impact"} == impact - {
        (fx.case("orders"), "oldest-turn:mode=fold")
    }
    assert rec[(fx.case("orders"), "oldest-turn:mode=fold")]["recoverable"] == 1
    # the losses: labelled category (project spelling), text, owning object, need, reason
    pruned = strict[(fx.case("orders"), "tool-prune:keep=1")]
    assert {
        (x["category"], x["anchor"], x["source_object"], x["need_seq"]) for x in pruned["losses"]
    } == {
        ("locator_handle", '"payment": "credit_card_7755"', "function:get_user:1", 12),
        ("evidence_detail", '"status": "pending"', "function:get_order:2", 12),
    }
    assert {x["detail"] for x in pruned["losses"]} == {"why t-orders 3", "why t-orders 7"}
    assert pruned["dependencies"] == 3  # required only; the helpful one is not scored
    folded = strict[(fx.case("orders"), "oldest-turn:mode=fold")]
    assert [x["source_object"] for x in folded["losses"]] == ["function:get_order:2"]


def test_necessity_all_scores_helpful_dependencies_too(fx: Fixture) -> None:
    every = gold(fx, necessity="all")
    docs = every[(fx.case("docs"), "tool-prune:keep=1")]
    assert docs["label"] == "impact"
    assert [x["anchor"] for x in docs["losses"]] == ["https://docs.example.com/api/v2/reference"]
    assert gold(fx)[(fx.case("docs"), "tool-prune:keep=1")]["label"] == "no_impact"


# --- calibration ----------------------------------------------------------------------------


def test_calibrate_against_deps_confusion_per_variant_json(fx: Fixture) -> None:
    out = CliRunner().invoke(
        main,
        [*calibrate_args(fx), "--format", "json"],
    )
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert doc["judge"] == "anchor"
    variants = {v["variant"]: v for v in doc["variants"]}
    assert [v["variant"] for v in doc["variants"]] == ["strict", "whitespace", "recovery"]
    counts = {k: (v["tp"], v["fn"], v["fp"], v["tn"]) for k, v in variants.items()}
    assert counts == {
        "strict": (1, 2, 1, 5),
        "whitespace": (1, 2, 1, 5),
        "recovery": (1, 1, 1, 6),
    }
    strict = variants["strict"]
    w = wilson(1, 3)
    assert strict["sensitivity"] == pytest.approx(1 / 3)
    assert (strict["sensitivity_low"], strict["sensitivity_high"]) == pytest.approx((w.low, w.high))
    s = wilson(5, 6)
    assert (strict["specificity"], strict["specificity_low"]) == pytest.approx((5 / 6, s.low))
    # p_o = 6/9, p_e = (3/9)(2/9) + (6/9)(7/9) = 48/81 → kappa = (54 − 48)/(81 − 48) = 6/33
    assert strict["kappa"] == pytest.approx(6 / 33)
    assert strict["kappa_low"] < strict["kappa"] < strict["kappa_high"]
    assert strict["agreement"] == pytest.approx(6 / 9)
    per = {k: (c["tp"], c["fn"], c["fp"], c["tn"]) for k, c in strict["per_corpus"].items()}
    assert per == {"fixture": (1, 2, 0, 3), "other": (0, 0, 1, 2)}
    missed = {k: n for k, n in strict["missed_dependencies"].items() if n}
    assert missed == {"evidence_detail": 1, "live_state": 1} and strict["missed_views"] == 2
    assert {k: n for k, n in variants["recovery"]["missed_dependencies"].items() if n} == {
        "live_state": 1
    }
    assert strict["reference"] == f"deps:path={fx.labels.resolve()}"
    assert variants["recovery"]["reference"].endswith(",variant=recovery")


def test_calibrate_against_deps_table_and_csv(fx: Fixture) -> None:
    runner = CliRunner()
    args = calibrate_args(fx)
    table = runner.invoke(main, args)
    assert table.exit_code == 0, table.output
    text = table.output
    assert text.index("strict") < text.index("whitespace") < text.index(", recovery")
    assert "sensitivity 0.333 [" in text and "Cohen's kappa 0.182" in text
    assert "fixture" in text and "other" in text and "live_state 1" in text
    csv = runner.invoke(main, [*args, "--format", "csv"])
    assert csv.exit_code == 0, csv.output
    frame = pl.read_csv(csv.output.encode())
    overall = frame.filter(pl.col("scope") == "overall")
    assert overall["variant"].to_list() == ["strict", "whitespace", "recovery"]
    assert overall["fn"].to_list() == [2, 2, 1]
    corpus = frame.filter((pl.col("scope") == "corpus") & (pl.col("variant") == "strict"))
    assert dict(zip(corpus["name"], corpus["fp"], strict=True)) == {"fixture": 0, "other": 1}
    missed = frame.filter((pl.col("scope") == "missed") & (pl.col("variant") == "strict"))
    assert dict(zip(missed["name"], missed["missed"], strict=True))["live_state"] == 1


def test_one_gold_judge_however_its_path_is_spelled(
    fx: Fixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After ``calibrate --against deps:LABELS``, ``judge --judge deps:path=…`` with the same
    labels spelt another way (relative, trailing slash, the dependencies file) adds no judge."""
    run = tmp_path / "run"
    shutil.copytree(fx.run, run)
    runner = CliRunner()
    done = runner.invoke(main, ["calibrate", str(run), "--judge", "anchor", "--against", f"deps:{fx.labels}"])  # fmt: skip
    assert done.exit_code == 0, done.output
    before = set(read_verdicts(run)["judge"].unique())
    monkeypatch.chdir(fx.labels.parent)
    for spelling in (f"{fx.labels.name}/", f"./{fx.labels.name}", f"{fx.labels.name}/dependencies.jsonl"):  # fmt: skip
        again = runner.invoke(main, ["judge", str(run), "--judge", f"deps:path={spelling}"])
        assert again.exit_code == 0, again.output
        assert set(read_verdicts(run)["judge"].unique()) == before, spelling
    assert f"deps:path={fx.labels.resolve()}" in before


def test_gold_verdicts_are_judged_again_when_the_labels_change(fx: Fixture, tmp_path: Path) -> None:
    """Verdicts of ``deps:path=L`` made from other labels at ``L`` are never reused."""
    run, labels = tmp_path / "run", tmp_path / "labels"
    shutil.copytree(fx.run, run)
    shutil.copytree(fx.labels, labels)
    spec = f"deps:path={labels}"
    first = run_judge(run, spec, workers=1, progress=False)
    assert first.judged > 0 and first.renewed == 0
    assert run_judge(run, spec, workers=1, progress=False).judged == 0  # same labels: reused
    before = read_verdicts(run, first.judge)
    deps = labels / "dependencies.jsonl"
    kept = [x for x in deps.read_text().splitlines() if '"required"' not in x]
    deps.write_text("".join(f"{x}\n" for x in kept))  # every required dependency dropped
    again = run_judge(run, spec, workers=1, progress=False)
    assert again.renewed > 0 and again.judged == first.judged and again.skipped == 0
    assert "labels changed" in again.render()
    after = read_verdicts(run, first.judge)
    assert after.height == before.height
    assert set(after.filter(pl.col("label") != "unscored")["label"]) == {"no_impact"}
    assert set(before["label"]) >= {"impact"}


def test_calibration_is_stored_in_the_run(fx: Fixture) -> None:
    result = calibrate_against_deps(fx.run, "anchor", fx.labels, workers=1)
    path = fx.run / "calibration" / f"{slug('anchor')}.json"
    assert calibration_path(fx.run, "anchor") == path and path.is_file()
    doc = json.loads(path.read_text())
    assert list(doc) == [
        "judge",
        "against",
        "tp",
        "fn",
        "fp",
        "tn",
        "sensitivity",
        "specificity",
        "kappa",
        "created",
    ]
    assert doc["judge"] == "anchor" and doc["against"] == result.variant("recovery").reference
    assert (doc["tp"], doc["fn"], doc["fp"], doc["tn"]) == (1, 1, 1, 6)  # with recovery
    assert doc["sensitivity"] == pytest.approx(1 / 2)
    assert doc["specificity"] == pytest.approx(6 / 7)
    # p_o = 7/9, p_e = (2/9)(2/9) + (7/9)(7/9) = 53/81 → kappa = (63 − 53)/(81 − 53) = 5/14
    assert doc["kappa"] == pytest.approx(5 / 14)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", doc["created"])
    assert read_calibration(fx.run, "anchor") == doc
    assert read_calibration(fx.run, "llm") is None
    assert not list(path.parent.glob("*.tmp"))


# --- the missed audit ------------------------------------------------------------------------


def test_audit_missed_lists_the_dependencies_the_judge_missed(fx: Fixture) -> None:
    frame = missed_dependencies(fx.run, "anchor", fx.labels, workers=1)
    got = {
        (r["case_id"], r["policy"], r["judge_label"], r["category"], r["dependency"])
        for r in frame.iter_rows(named=True)
    }
    assert got == {
        # anchor said no_impact
        (fx.case("build"), "tool-prune:keep=1", "no_impact", "live_state", "Permission denied"),
        (
            fx.case("orders"),
            "oldest-turn:mode=fold",
            "no_impact",
            "evidence_detail",
            '"status": "pending"',
        ),
        # anchor said impact, for the payment id, but not for the pending status
        (
            fx.case("orders"),
            "tool-prune:keep=1",
            "impact",
            "evidence_detail",
            '"status": "pending"',
        ),
    }
    build = frame.filter(pl.col("case_id") == fx.case("build")).row(0, named=True)
    assert build["source_object"] == "function:bash:1" and build["need_seq"] == 10
    assert build["need_text"] == 'CALL bash {"cmd": "sudo make all"}'
    assert build["labels_case"] == "t-build"
    out = CliRunner().invoke(
        main,
        [
            *("audit", str(fx.run), "--missed", f"deps:{fx.labels}"),
            *("--judge", "anchor", "--policy", "tool-prune:keep=1"),
        ],
    )
    assert out.exit_code == 0, out.output
    assert out.output.startswith("2 gold-required dependencies missed by anchor")
    assert "removed: 'Permission denied'  from function:bash:1" in out.output
    assert 'needed by message 10: CALL bash {"cmd": "sudo make all"}' in out.output
    assert "oldest-turn" not in out.output
    bad = CliRunner().invoke(main, ["audit", str(fx.run), "--missed", "truth"])
    assert bad.exit_code == 2 and "deps:LABELS" in bad.output


# --- the judge on hand-built inputs -----------------------------------------------------------


def _session() -> tuple[tuple[Message, ...], tuple[Message, ...]]:
    body = '{"order_id": "#W7", "status": "pending",\n "total": 12.5}'
    msgs = [
        Message("system", (Part.text("Be brief."),), seq=0),
        Message("user", (Part.text("Cancel #W7."),), seq=1),
        Message(
            "assistant",
            (Part.text("Looking."), Part.call("c1", "get_order", '{"id":"#W7"}')),
            seq=2,
        ),
        Message("tool", (Part.response("c1", body),), seq=3),
        Message("assistant", (Part.text("It is pending."),), seq=4),
        Message("user", (Part.text("Go on."),), seq=5),
        Message("assistant", (Part.call("c2", "cancel", '{"id":"#W7"}'),), seq=6),
    ]
    return tuple(msgs[:6]), tuple(msgs[6:])


def _labels(tmp_path: Path, deps: list[dict]) -> Path:
    folder = tmp_path / "labels"
    folder.mkdir(exist_ok=True)
    case = {"case": "k", "corpus": "c", "session_id": "s", "cut": 6, "future_seqs": [6]}
    (folder / "cases.jsonl").write_text(json.dumps(case) + "\n")
    (folder / "dependencies.jsonl").write_text(
        "".join(
            json.dumps({"case": "k", "needed_by": 6, "necessity": "required", "why": "w", **d})
            + "\n"
            for d in deps
        )
    )
    return folder


def _item(view: tuple[Message, ...] | None = None, edit: Edit | None = None) -> JudgeInput:
    prefix, future = _session()
    index = build_index(prefix, count)
    archives: tuple[Archive, ...] = ()
    if edit is not None:
        v = commit(rehearse(Plan.of(edit), index), prefix, index, count)
        view = v.messages
        archives = v.archives
    return JudgeInput("s@6", "s", "p", prefix, view or prefix, future, index, {}, archives)


def test_annotator_rendering() -> None:
    prefix, _ = _session()
    assert annotator_text(prefix[2]) == 'Looking.\nCALL get_order {"id":"#W7"}'
    assert annotator_text(prefix[3]).startswith('{"order_id"')


def test_whitespace_variant_accepts_a_re_rendered_body(tmp_path: Path) -> None:
    labels = _labels(
        tmp_path,
        [{"seq": 3, "category": "evidence_detail", "text": '"status": "pending",\n "total": 12.5'}],
    )
    prefix, _ = _session()
    compact = Message(
        "tool", (Part.response("c1", '{"order_id":"#W7","status":"pending","total":12.5}'),), seq=3
    )
    item = _item((*prefix[:3], compact, *prefix[4:]))
    strict = DepsJudge(DepsJudge.Params(path=str(labels))).judge(item)
    assert strict.label == "impact" and strict.losses[0].source_object == "function:get_order:1"
    loose = DepsJudge(DepsJudge.Params(path=str(labels), variant="whitespace")).judge(item)
    assert loose.label == "no_impact"
    assert DepsJudge(DepsJudge.Params(path=str(labels))).judge(_item()).label == "no_impact"


def test_recovery_variant_needs_a_visible_pointer(tmp_path: Path) -> None:
    labels = _labels(
        tmp_path, [{"seq": 3, "category": "evidence_detail", "text": '"status": "pending"'}]
    )
    folded = _item(edit=Edit("function:get_order:1", "fold"))
    hidden = _item(edit=Edit("function:get_order:1", "fold", note="order looked up", route=False))
    strict = DepsJudge(DepsJudge.Params(path=str(labels)))
    recovery = DepsJudge(
        DepsJudge.Params(path=str(labels / "dependencies.jsonl"), variant="recovery")
    )
    assert strict.judge(folded).label == "impact"
    got = recovery.judge(folded)
    assert got.label == "no_impact" and got.recoverable == 1
    assert recovery.judge(hidden).label == "impact"  # archived, but the view shows no route


def test_unlabelled_or_mismatched_cases_are_unscored(tmp_path: Path) -> None:
    labels = _labels(tmp_path, [{"seq": 3, "category": "behavioral_contract", "text": "pending"}])
    judge = DepsJudge(DepsJudge.Params(path=str(labels)))
    prefix, future = _session()
    index = build_index(prefix, count)
    other = JudgeInput("t@6", "t", "p", prefix, prefix, future, index, {})
    assert judge.judge(other).label == "unscored"
    assert judge.judge(other).reason == "no dependency labels for this case"
    # no future: the cut comes from the engine
    no_future = JudgeInput("s@6", "s", "p", prefix, prefix[:3], (), index, {}, cut=6)
    lost = judge.judge(no_future)
    assert lost.label == "impact" and lost.losses[0].category == "behavioural_contract"
    wrong = _labels(tmp_path, [{"seq": 4, "category": "live_state", "text": "not there"}])
    verdict = DepsJudge(DepsJudge.Params(path=str(wrong))).judge(_item())
    assert verdict.label == "unscored" and "do not match" in (verdict.reason or "")


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("{not json", "not JSON"),
        (
            '{"case": "k", "seq": 3, "needed_by": 6, "category": "vibes", "necessity": "required", "text": "x"}',
            "unknown category 'vibes'",
        ),
        (
            '{"case": "k", "seq": 3, "needed_by": 6, "category": "live_state", "necessity": "required"}',
            "text must be a non-empty string (got missing)",
        ),
        (
            '{"case": "zz", "seq": 3, "needed_by": 6, "category": "live_state", "necessity": "required", "text": "x"}',
            "case 'zz' is not in cases.jsonl",
        ),
        (
            '{"case": "k", "seq": 3, "needed_by": 6, "category": "live_state", "necessity": "maybe", "text": "x"}',
            "necessity must be required or helpful",
        ),
        (
            '{"case": "k", "seq": 7, "needed_by": 6, "category": "live_state", "necessity": "required", "text": "x"}',
            "must be before the cut",
        ),
    ],
)
def test_malformed_labels_name_file_line_and_problem(
    tmp_path: Path, line: str, problem: str
) -> None:
    labels = _labels(tmp_path, [{"seq": 3, "category": "live_state", "text": "pending"}])
    deps = labels / "dependencies.jsonl"
    deps.write_text(deps.read_text() + "\n" + line + "\n")
    with pytest.raises(LabelsError) as err:
        load_labels(labels)
    assert isinstance(err.value, ValueError)
    assert f"{deps}, line 3: " in str(err.value) and problem in str(err.value)


def test_deps_judge_needs_a_path_and_a_valid_variant(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="path="):
        make_judge("deps")
    labels = _labels(tmp_path, [{"seq": 3, "category": "live_state", "text": "pending"}])
    with pytest.raises(ValueError, match="variant"):
        make_judge(f"deps:path={labels},variant=fuzzy")
    with pytest.raises(ValueError, match=r"no labels at .*nowhere: expected a folder"):
        make_judge(f"deps:path={tmp_path / 'nowhere'}")
    (tmp_path / "lonely").mkdir()
    with pytest.raises(LabelsError, match=r"lonely/cases.jsonl: no such labels file"):
        load_labels(tmp_path / "lonely")
    assert make_judge(f"deps:path={labels},variant=recovery").label == (
        f"deps:path={labels},variant=recovery"
    )


# --- the real dev labels ---------------------------------------------------------------------


@pytest.mark.corpora
def test_gold_dev_cases_and_noop_views(tmp_path: Path) -> None:
    gold_dev, corpora = shared_path("gold-dev"), corpus_path()
    names = ("tau-bench", "tau2-bench", "swe-agent", "openhands")
    for n in names:
        corpus_path(n)
    runner = CliRunner()
    corpus = tmp_path / "corpus"
    out = runner.invoke(
        main, ["import", *(str(corpora / n) for n in names), "-o", str(corpus), "--quiet"]
    )
    assert out.exit_code == 0, out.output
    cut = runner.invoke(
        main,
        [
            "cases",
            str(corpus),
            "--cuts",
            str(gold_dev / "cases.jsonl"),
            "-o",
            str(tmp_path / "c.parquet"),
        ],
    )
    assert cut.exit_code == 0, cut.output
    assert "48 cases from 48 sessions" in cut.output and "skipped" not in cut.output
    frame, _ = read_cases(tmp_path / "c.parquet")
    labelled = [json.loads(x) for x in (gold_dev / "cases.jsonl").read_text().splitlines() if x]
    assert frame.height == 48 and {c["corpus"] for c in labelled} == set(names)
    rows = {(r["session_id"], r["cut"]): r for r in frame.iter_rows(named=True)}
    visible = {
        sid: [m.seq for m in msgs if m.visible]
        for sid, msgs in Corpus(corpus).iter_sessions([c["session_id"] for c in labelled])
    }
    for c in labelled:
        row = rows[(c["session_id"], c["cut"])]
        assert row["future_end"] == max(c["future_seqs"]) + 1
        future = [
            s for s in visible[c["session_id"]] if row["future_start"] <= s < row["future_end"]
        ]
        assert future == c["future_seqs"], c["case"]
        assert [s for s in visible[c["session_id"]] if s < row["cut"]] == c["prefix_seqs"]
    run = tmp_path / "run"
    run_replay(corpus, tmp_path / "c.parquet", ["noop"], run, workers=1, progress=False)
    summary = run_judge(run, f"deps:path={gold_dev}", workers=1, progress=False)
    assert summary.labels == {"no_impact": 48}, summary.render()
    verdicts = read_verdicts(run, summary.judge)
    # 46 cases have required dependencies (two have none), every one found in the view
    assert (verdicts["dependencies"] > 0).sum() == 46
