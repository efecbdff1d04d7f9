"""What the counterfactual judge sends per judged case, against the llm judge's prompt.

A small synthetic run (``synth --sessions N``, cut at user turns, replayed with three policies)
is judged on paper: for each (case, policy) the counterfactual judge's two requests are built
exactly as they would be sent (``CounterfactualJudge.requests``: the view, the full prefix as
the baseline, the tools) and counted with o200k, without calling a model. The baseline is paid
once per case (identical requests hit the response cache), a view identical to the prefix costs
nothing, and every other view costs its request. The llm judge's prompt for the same pair
(``judges/prompt.py``) is counted the same way, at its default budget and unbounded.

    python benchmarks/bench_counterfactual_cost.py [--sessions 6] [--example]

Completion tokens are not counted: a next action is bounded by the judge's ``max_tokens`` (512),
an llm verdict by its own (800).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

POLICIES = ("tool-prune:keep=1", "observation-masking:keep=1", "self-gc")
#: per-message framing tokens of a chat request (OpenAI's published rule of thumb)
PER_MESSAGE = 3


def body_tokens(body: dict[str, Any], count: Any) -> int:
    """Prompt tokens of a chat-completions body: each message's text and calls, and the tools."""
    n = 0
    for m in body["messages"]:
        content = m.get("content")
        if isinstance(content, list):
            content = "\n".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
        n += PER_MESSAGE + count(content or "")
        for c in m.get("tool_calls") or ():
            n += count(c["function"]["name"]) + count(c["function"]["arguments"] or "")
    if body.get("tools"):
        n += count(json.dumps(body["tools"], ensure_ascii=False))
    return n


def trimmed(body: dict[str, Any], width: int = 90) -> str:
    """A request body with long strings cut, for printing."""

    def cut(v: Any) -> Any:
        if isinstance(v, str):
            return v if len(v) <= width else v[:width] + f"… [{len(v) - width} more chars]"
        if isinstance(v, list):
            return [cut(x) for x in v]
        if isinstance(v, dict):
            return {k: cut(x) for k, x in v.items()}
        return v

    return json.dumps(cut(body), indent=1, ensure_ascii=False)


def build_run(work: Path, sessions: int, seed: int) -> Path:
    from ctxreplay.datasets.cases import cut_corpus
    from ctxreplay.datasets.store import Corpus
    from ctxreplay.datasets.synth import generate
    from ctxreplay.engines.replay import run_replay

    generate(work / "corpus", sessions=sessions, seed=seed, progress=False)
    _, cases = cut_corpus(Corpus(work / "corpus"), work / "cases.parquet", triggers=["user-turns"])
    run_replay(work / "corpus", cases, list(POLICIES), work / "run", workers=1, progress=False)
    return work / "run"


def measure(run_path: Path, example: bool) -> None:
    from ctxreplay.datasets.tokenizer import get_tokenizer
    from ctxreplay.engines.judge import chunk_inputs, plan_work
    from ctxreplay.judges.counterfactual import CounterfactualJudge
    from ctxreplay.judges.llm import LLMJudgeParams
    from ctxreplay.judges.prompt import render_prompt
    from ctxreplay.runs import Run, SidecarStore

    count = get_tokenizer().count
    run = Run(run_path)
    judge = CounterfactualJudge(CounterfactualJudge.Params(cache_dir="off"))
    budget = LLMJudgeParams().max_prompt_tokens
    chunks, _, _ = plan_work(run, judge.label)
    sidecar = SidecarStore(run.path / "sidecar")
    baseline: dict[str, int] = {}
    view: dict[tuple[str, str], int] = {}
    llm: dict[tuple[str, str], tuple[int, int]] = {}
    shown = False
    for chunk in chunks:
        for items in chunk_inputs(run.path, run.corpus, sidecar, chunk, True, True):
            for item, _ in items:
                sent = judge.requests(item)
                baseline[item.case_id] = body_tokens(sent["baseline"], count)
                same = sent["view"]["messages"] == sent["baseline"]["messages"]
                view[(item.case_id, item.policy)] = 0 if same else body_tokens(sent["view"], count)
                llm[(item.case_id, item.policy)] = (
                    render_prompt(item, max_prompt_tokens=budget, count=count).tokens,
                    render_prompt(item, max_prompt_tokens=10**9, count=count).tokens,
                )
                if example and not shown and not same and len(item.prefix) <= 12:
                    shown = True
                    print(f"example: case {item.case_id}, policy {item.policy}, "
                          f"tools {sent['tools_from']}")  # fmt: skip
                    print("--- view request ---\n" + trimmed(sent["view"]))
                    print("--- baseline request (messages only; same tools) ---")
                    print(trimmed({"messages": sent["baseline"]["messages"]}))
    cases = sorted(baseline)
    policies = sorted({p for _, p in view})
    print(f"\n{len(cases)} cases × {len(policies)} policies, tokens (o200k) per judged case")
    print(f"{'':<34} {'mean':>8} {'median':>8}")
    cost_row("baseline (full prefix, once)", [baseline[c] for c in cases])
    for p in policies:
        cost_row(f"  view {p}", [view[(c, p)] for c in cases])
    cf = [baseline[c] + sum(view[(c, p)] for p in policies) for c in cases]
    cost_row("counterfactual: baseline + views", cf)
    judged, full = llm_judge_rows(llm, cases, policies, budget)
    print(
        f"ratio counterfactual / llm judge: {sum(cf) / judged:.2f} (budget {budget}), "
        f"{sum(cf) / full:.2f} (unbounded)"
    )
    free = sum(1 for v in view.values() if v == 0)
    print(f"views identical to their prefix (no request): {free} of {len(view)}")


def cost_row(name: str, values: list[int], width: int = 34) -> None:
    """One row of a per-case token table: its mean and median."""
    print(f"{name:<{width}} {statistics.mean(values):>8,.0f} {statistics.median(values):>8,.0f}")


def llm_judge_rows(
    llm: dict[tuple[str, str], tuple[int, int]],
    cases: list[str],
    policies: list[str],
    budget: int,
    width: int = 34,
) -> tuple[int, int]:
    """The llm judge's prompt rows, per case over its policies (``llm``: (case, policy) →
    tokens at ``budget`` and unbounded); its totals at the budget and unbounded."""
    judged = [sum(llm[(c, p)][0] for p in policies) for c in cases]
    full = [sum(llm[(c, p)][1] for p in policies) for c in cases]
    cost_row(f"llm judge: {len(policies)} prompts, budget {budget}", judged, width)
    cost_row(f"llm judge: {len(policies)} prompts, unbounded", full, width)
    return sum(judged), sum(full)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sessions", type=int, default=6, help="synthetic sessions")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--example", action="store_true", help="print one view and baseline request")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="cf-cost-") as tmp:
        measure(build_run(Path(tmp), args.sessions, args.seed), args.example)


if __name__ == "__main__":
    main()
