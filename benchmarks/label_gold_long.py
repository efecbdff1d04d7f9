"""A labelling session through the case browser, done by a script: 20 cases of
``../shared/gold-long`` labelled in headless Chromium with the annotators' dependencies, and the
labels it saved compared with the gold-long labels of the same cases.

The run: ``ctxreplay import`` of the Claude Code and Codex CLI corpora, cut at the gold-long cuts,
replayed under the standard policy set and judged by flow (reused with ``--keep``). Then
``ctxreplay view RUN --label DIR --sample 20`` is started as a user starts it, and for each
sampled case the script, in the page, selects each gold dependency's text in the prefix message
that holds it (a text selection, as a person drags over it), picks its category, necessity and
the future message that needs it, marks it, and marks the case done. Finally the flow judge is
calibrated (``calibrate --against deps:``) against the labels the browser saved and against the
gold-long labels of the same 20 cases: the script prints both, variant by variant, and exits 1
if any figure differs.

    python benchmarks/label_gold_long.py [--keep DIR] [--sample 20] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from _shared import CORPORA, ROOT, SHARED, require

from ctxreplay.engines.pipeline import DEMO_POLICIES

GOLD = SHARED / "gold-long"
#: the labels spell the category the US way; the page offers the project's spelling
SPELLING = {"behavioral_contract": "behavioural_contract"}


def ctxreplay(*args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "ctxreplay", *args], check=True, stdout=subprocess.DEVNULL
    )


def build(root: Path) -> Path:
    """Import, cut at the gold-long cuts, replay the standard set, judge by flow (reused)."""
    run = root / "run"
    if (run / "verdicts").is_dir():
        return run
    started = time.perf_counter()
    sources = [str(require(CORPORA / name)) for name in ("claude-code", "codex-cli")]
    ctxreplay("import", *sources, "--out", str(root / "corpus"), "--quiet")
    ctxreplay("cases", str(root / "corpus"), "--cuts", str(GOLD / "cases.jsonl"),
              "--out", str(root / "cases.parquet"))  # fmt: skip
    policies = [a for p in DEMO_POLICIES for a in ("--policy", p)]
    ctxreplay("replay", str(root / "corpus"), "--cases", str(root / "cases.parquet"), *policies,
              "--out", str(run), "--quiet")  # fmt: skip
    ctxreplay("judge", str(run), "--quiet")
    print(f"built the gold-long run in {time.perf_counter() - started:.0f} s")
    return run


def gold_of(sample_keys: set[tuple[str, int]], out: Path) -> dict[tuple[str, int], list[dict]]:
    """The gold-long labels of the sampled cases, written to ``out`` as a labels set of their
    own; returns each case's dependencies by (session id, cut)."""
    cases = [json.loads(line) for line in (GOLD / "cases.jsonl").read_text().splitlines() if line]
    deps = [
        json.loads(line) for line in (GOLD / "dependencies.jsonl").read_text().splitlines() if line
    ]
    chosen = [c for c in cases if (c["session_id"], c["cut"]) in sample_keys]
    names = {c["case"] for c in chosen}
    out.mkdir(parents=True, exist_ok=True)
    (out / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in chosen))
    (out / "dependencies.jsonl").write_text(
        "".join(json.dumps(d) + "\n" for d in deps if d["case"] in names)
    )
    key = {c["case"]: (c["session_id"], c["cut"]) for c in chosen}
    by_case: dict[tuple[str, int], list[dict]] = {k: [] for k in key.values()}
    for d in deps:
        if d["case"] in names:
            by_case[key[d["case"]]].append(d)
    return by_case


def label(driver: Any, url: str, case: str, deps: list[dict]) -> int:
    """Label one case in the page: each dependency selected and marked; then done."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    from browser import SELECT_TEXT

    def drawn(act: Any) -> None:
        before = driver.execute_script("return document.body.dataset.ready")
        act()
        WebDriverWait(driver, 120).until(
            lambda d: d.execute_script("return document.body.dataset.ready") != before
        )

    def click(element: Any) -> None:
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
        drawn(element.click)

    driver.get(url + "?" + urlencode({"page": "label", "case": case}))
    WebDriverWait(driver, 120).until(
        lambda d: d.execute_script("return document.body.dataset.ready")
    )
    marked = 0
    for d in deps:
        pre = driver.find_element(By.CSS_SELECTOR, f"#prefix pre[data-seq='{d['seq']}']")
        text = driver.execute_script("return arguments[0].textContent", pre)
        start = text.find(d["text"])
        if start < 0:
            raise SystemExit(f"{case}: message {d['seq']} does not hold {d['text'][:60]!r}")
        driver.execute_script(SELECT_TEXT, pre, start, start + len(d["text"]))
        WebDriverWait(driver, 30).until(
            lambda dr: not dr.execute_script("return document.getElementById('mark-form').hidden")
        )
        Select(driver.find_element(By.ID, "m-category")).select_by_value(
            SPELLING.get(d["category"], d["category"])
        )
        Select(driver.find_element(By.ID, "m-necessity")).select_by_value(d["necessity"])
        Select(driver.find_element(By.ID, "m-needed")).select_by_value(str(d["needed_by"]))
        click(driver.find_element(By.ID, "m-add"))
        marked += 1
    click(driver.find_element(By.ID, "done"))
    return marked


def figures(result: Any) -> dict[str, tuple[Any, ...]]:
    out = {}
    for v in result.variants:
        o, c = v.calibration.overall, v.calibration
        out[v.variant] = (c.n, o.tp, o.fn, o.fp, o.tn, v.sensitivity.show(), v.specificity.show(),
                          None if c.kappa is None else round(c.kappa, 3))  # fmt: skip
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--keep", type=Path, default=None, help="build or reuse the run here")
    ap.add_argument("--sample", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    require(GOLD)
    root = args.keep or Path(tempfile.mkdtemp(prefix="label-gold-long-"))
    run = build(root)
    labels = root / "browser-labels"
    if labels.exists():
        import shutil

        shutil.rmtree(labels)
    sys.path.insert(0, str(ROOT / "tests"))
    from browser import chromium, start_view

    server = start_view(run, "--label", str(labels), "--sample", str(args.sample),
                        "--seed", str(args.seed))  # fmt: skip
    print(server.line)
    state = json.loads((labels / "labelling.json").read_text())
    keys = {}
    for case in state["sample"]:
        session, cut = case.rsplit("@", 1)
        keys[(session, int(cut))] = case
    gold = gold_of(set(keys), root / "gold-sample")
    started = time.perf_counter()
    total = 0
    try:
        with chromium(Path(tempfile.mkdtemp(prefix="label-profile-"))) as driver:
            for n, (key, case) in enumerate(keys.items(), 1):
                total += label(driver, server.url, case, gold[key])
                print(f"  {n}/{len(keys)} {case}: {len(gold[key])} dependencies marked")
            driver.save_screenshot(str(root / "label-1400.png"))
    finally:
        server.stop()
    took = time.perf_counter() - started
    print(f"labelled {len(keys)} cases ({total} dependencies) through the browser in {took:.0f} s")

    from ctxreplay.engines.calibrate import calibrate_against_deps

    mine = figures(calibrate_against_deps(run, "flow", labels, store=False))
    theirs = figures(calibrate_against_deps(run, "flow", root / "gold-sample", store=False))
    print("variant      views  tp  fn  fp  tn  sensitivity          specificity          kappa")
    same = True
    for variant in mine:
        for who, f in (("browser", mine[variant]), ("gold-long", theirs[variant])):
            n, tp, fn, fp, tn, sens, spec, kappa = f
            print(
                f"{variant:<10} {who:<9} {n:>4} {tp:>3} {fn:>3} {fp:>3} {tn:>3}  {sens:<20} {spec:<20} {kappa}"
            )
        same &= mine[variant] == theirs[variant]
    print(
        "the browser's labels calibrate the judge to the same figures" if same else "FIGURES DIFFER"
    )
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
