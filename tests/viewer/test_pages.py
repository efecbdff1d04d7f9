"""The case browser's answers without a browser: the grid's query, filters and order, the case
detail's alignment with the engine's view, the labelling sample and the labels it writes,
redaction, the server's routes and headers over HTTP, and the command's errors."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from viewing import NEEDED, POLICIES, XSS, start_server

from ctxreplay.judges.base import rendered
from ctxreplay.judges.labels import load_labels
from ctxreplay.runs import Run
from ctxreplay.viewer.grid import GridQuery, ViewerError, category_counts, grid_page, select
from ctxreplay.viewer.labelling import Labelling, sample_cases
from ctxreplay.viewer.pages import Pages


@pytest.fixture(scope="module")
def pages(viewer_run: Path) -> Pages:
    return Pages(viewer_run, judge="flow")


def q(**params: str | list[str]) -> GridQuery:
    return GridQuery.parse({k: v if isinstance(v, list) else [v] for k, v in params.items()})


def test_query_is_checked() -> None:
    with pytest.raises(ViewerError, match="label must be one of"):
        q(label="lost")
    with pytest.raises(ViewerError, match="category must be one of"):
        q(category="vibes")
    with pytest.raises(ViewerError, match="p must be a whole number"):
        q(p="two")
    assert q(size="100000").size == 500 and q(p="0").page == 1
    assert q(policy=["a", "b"], disagree="1").policy == ("a", "b")


def test_grid_rows_filters_and_order(pages: Pages, viewer_run: Path) -> None:
    grid = pages.grid
    figures = Run(viewer_run).table("figures")
    assert grid.frame.height == figures.height == 6
    assert grid.judges == ["flow", "other"] and grid.judge == "flow"
    # tool-prune:keep=1 loses NEEDED in each case: impact, a loss, not strict
    pruned = select(grid, q(policy=POLICIES[1]))
    assert set(pruned["label"]) == {"impact"} and set(pruned["strict"]) == {False}
    assert select(grid, q(policy=POLICIES[0]))["strict"].to_list() == [True] * 3
    assert select(grid, q(disagree="1")).height == 1
    ordered = select(grid, q(sort="editable", desc="1"))["editable"].to_list()
    assert ordered == sorted(ordered, reverse=True)
    assert select(grid, q(q=NEEDED.lower())).height == 3  # found in the lost text
    with pytest.raises(ViewerError, match="no column 'nope'"):
        select(grid, q(sort="nope"))
    page = grid_page(grid, q(size="4", p="2"))
    assert (page["page"], page["pages"], page["matched"], len(page["rows"])) == (2, 2, 6, 2)


def test_category_counts_follow_the_taxonomy() -> None:
    assert category_counts(["verbatim_source", "locator_handle", "verbatim_source"]) == {
        "locator_handle": 1,
        "verbatim_source": 2,
    }
    assert category_counts(None) == {}


def test_case_detail_is_the_engine_view(pages: Pages, viewer_run: Path) -> None:
    run = Run(viewer_run)
    row = select(pages.grid, q(policy=POLICIES[1])).row(0, named=True)
    detail = pages.case(row["case_id"], row["policy"])
    view: list[str] = []
    for m in detail["messages"]:
        view += [m["text"]] if m["view"] is None else [v["text"] for v in m["view"]]
    assert view == [rendered(m) for m in run.load_view(row["case_id"], row["policy"])]
    flow = next(v for v in detail["verdicts"] if v["judge"] == "flow")
    lost = next(loss for loss in flow["losses"] if NEEDED in loss["anchor"])
    held = detail["messages"][lost["source_index"]]["text"]
    assert NEEDED in held[lost["source_start"] : lost["source_end"]]
    assert {p["policy"] for p in detail["policies"]} == set(POLICIES)
    assert detail["commands"]["show"].startswith("ctxreplay show ")


def test_redacted_pages_hold_no_trace_text(viewer_run: Path) -> None:
    pages = Pages(viewer_run, judge="flow", redact=True)
    row = select(pages.grid, q(policy=POLICIES[1])).row(0, named=True)
    text = json.dumps(pages.case(row["case_id"], row["policy"]))
    assert NEEDED not in text and "ORD-777" not in text and "chars]" in text
    assert json.dumps(row["case_id"]) in text  # ids stay


def test_sample_is_stratified_and_seeded(pages: Pages) -> None:
    grid = pages.grid
    assert sample_cases(grid, 2, 7) == sample_cases(grid, 2, 7)
    everything = sample_cases(grid, 50, 7)
    assert sorted(everything) == sorted(set(grid.frame["case_id"]))  # capped, no repeats


def test_labels_are_the_deps_format(viewer_run: Path, tmp_path: Path) -> None:
    grid = Pages(viewer_run, judge="flow").grid
    labelling = Labelling(Run(viewer_run), grid, tmp_path, 3, 0)
    case = labelling.state["sample"][0]
    shown = labelling.case(case)
    holder = next(m for m in shown["prefix"] if NEEDED in m["text"])
    start = holder["text"].index(NEEDED)
    mark = {"op": "mark", "seq": holder["seq"], "start": start, "end": start + len(NEEDED),
            "category": "verbatim_source", "necessity": "required"}  # fmt: skip
    with pytest.raises(ViewerError, match="not inside message"):
        labelling.apply(case, {**mark, "end": 10**6})
    with pytest.raises(ViewerError, match="category must be one of"):
        labelling.apply(case, {**mark, "category": "vibes"})
    with pytest.raises(ViewerError, match="needed_by must be a future message"):
        labelling.apply(case, {**mark, "needed_by": 0})
    after = labelling.apply(case, mark)
    assert [m["text"] for m in after["marks"]] == [NEEDED]
    assert (tmp_path / "cases.jsonl").read_text() == ""  # not done: not labelled yet
    labelling.apply(case, {"op": "done"})
    saved = load_labels(tmp_path)
    assert [c.case for c in saved.cases] == [case]
    (dep,) = saved.dependencies[case]
    assert (dep.seq, dep.text, dep.needed_by) == (holder["seq"], NEEDED, shown["future"][0]["seq"])
    # a session started again in the folder resumes it
    again = Labelling(Run(viewer_run), grid, tmp_path, 1, 99)
    assert again.state["sample"] == labelling.state["sample"]
    assert again.case(case)["marks"] == after["marks"]
    labelling.apply(case, {"op": "remove", "mark": after["marks"][0]["id"]})
    assert load_labels(tmp_path).dependencies[case] == ()


def get(url: str) -> tuple[int, dict[str, str], object]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, dict(r.headers), json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), json.loads(e.read())


def test_server_routes_answer_json_with_a_strict_policy(viewer_run: Path) -> None:
    server = start_server(viewer_run)
    try:
        status, headers, body = get(server.url + "api/grid?size=2&sort=editable&desc=1")
        assert status == 200 and isinstance(body, dict) and len(body["rows"]) == 2
        assert body["total"] == 6 and body["rows"][0]["editable"] >= body["rows"][1]["editable"]
        assert "script-src 'self'" in headers["content-security-policy"]
        status, _, body = get(server.url + "api/grid?label=lost")
        assert status == 400 and "label must be one of" in body["error"]  # type: ignore[index]
        status, _, body = get(server.url + "api/label")
        assert status == 400 and "not labelling" in body["error"]  # type: ignore[index]
        with urllib.request.urlopen(server.url, timeout=30) as r:
            page = r.read().decode()
        assert XSS not in page and "static/app.js" in page
    finally:
        server.stop()


def test_command_errors_are_one_line(viewer_run: Path, tmp_path: Path) -> None:
    def view(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ctxreplay", "view", str(viewer_run), *args],
            capture_output=True, text=True,
        )  # fmt: skip

    redact = view("--redact")
    assert redact.returncode == 2 and redact.stderr.strip() == (
        "error: --redact applies to a bundle: add --bundle DIR"
    )
    both = view("--bundle", str(tmp_path / "b"), "--label", str(tmp_path / "l"))
    assert both.returncode == 2 and "a bundle cannot save labels" in both.stderr
    missing = view("--judge", "nobody", "--bundle", str(tmp_path / "c"))
    assert missing.returncode == 2 and "no verdicts from judge 'nobody'" in missing.stderr


def test_open_hands_the_address_to_the_browser(
    viewer_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--open``: the address goes to the user's browser (``$BROWSER``, as Python's webbrowser
    reads it; here a script that writes down what it was given)."""
    import time

    opened = tmp_path / "opened.txt"
    script = tmp_path / "browser.py"
    script.write_text(f"import sys\nopen({str(opened)!r}, 'w').write(sys.argv[1])\n")
    monkeypatch.setenv("BROWSER", f"{sys.executable} {script} %s")
    server = start_server(viewer_run, "--open")
    try:
        for _ in range(100):
            if opened.exists() and opened.read_text():
                break
            time.sleep(0.1)
        assert opened.read_text() == server.url
    finally:
        server.stop()


def test_model_judges_show_what_they_asked() -> None:
    """The counterfactual judge's two actions diffed field by field; the probe judge's questions
    with the view's answers."""
    from ctxreplay.viewer.detail import _extras

    doc = {"baseline": {"kind": "call", "tool": "refund", "arguments": {"amount": 512.4}},
           "view": {"kind": "call", "tool": "refund", "arguments": {"amount": 100}}}  # fmt: skip
    actions = _extras("counterfactual", json.dumps(doc))["actions"]
    assert [(a["field"], a["same"]) for a in actions] == [
        ("kind", True), ("tool", True), ("arguments", False)
    ]  # fmt: skip
    assert actions[2]["baseline"] == '{"amount": 512.4}' and actions[2]["view"] == '{"amount": 100}'
    probes = {"probes": [{"kind": "recall", "question": "Which order?", "answer": "ORD-1",
                          "expected": "ORD-77731", "correct": False}]}  # fmt: skip
    (probe,) = _extras("probe", json.dumps(probes))["probes"]
    assert probe == {"question": "Which order?", "kind": "recall", "answer": "ORD-1",
                     "expected": "ORD-77731", "correct": False}  # fmt: skip
    assert _extras("flow", None) == {} and _extras("llm", "not json") == {"raw": "not json"}


def test_bundle_of_chosen_policies_and_its_limit(viewer_run: Path, tmp_path: Path) -> None:
    def view(*args: str | Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ctxreplay", "view", str(viewer_run), "--quiet",
             *map(str, args)],
            capture_output=True, text=True,
        )  # fmt: skip

    refused = view("--bundle", tmp_path / "big", "--max-pages", "5")
    assert refused.returncode == 2 and "this run has 6, more than --max-pages 5" in refused.stderr
    assert not (tmp_path / "big").exists()  # refused before anything is written
    done = view("--bundle", tmp_path / "noop", "--policy", "noop", "--max-pages", "3")
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "noop" / "data" / "bundle.js").read_text()
    bundle = json.loads(text[len("window.CTXREPLAY_BUNDLE=") : -2])
    assert {r["policy"] for r in bundle["rows"]} == {"noop"} and len(bundle["rows"]) == 3
    assert len(list((tmp_path / "noop" / "data" / "case").glob("*.js"))) == 3
    assert Pages(viewer_run, policies=["tool-prune"]).grid.policies == [POLICIES[1]]
