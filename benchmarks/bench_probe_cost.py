"""What the probe judge sends per judged case, against the llm judge's prompt for the same case.

A small synthetic run (``synth --sessions N``, cut at user turns, replayed with three policies)
is judged on paper: for each case the probe judge's requests are built exactly as they would be
sent and counted with o200k, without calling a model —

- the generation request (prefix and future → continuation and decision probes), once per case
  whatever the number of policies (``ProbeJudge.generation_prompt``);
- per (case, policy), the answer request (the view and every probe, ``answer_prompt``) and the
  grading request of the rubric probes (``grade_prompt``).

The recall and artifact probes are the judge's own (derived from the flow judge's dependencies,
with the corpus weights the engine would give it); the model-written probes, which only a model
can write, are stood in for by one continuation and one decision probe of typical length, and
their answers by the reference. Completion tokens are estimated as the JSON a model would
return for these probes. The llm judge's prompt for the same pairs (``judges/prompt.py``) is
counted the same way, at its default budget and unbounded.

    python benchmarks/bench_probe_cost.py [--sessions 6] [--example]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
#: the same run as the counterfactual judge's cost is measured on
from bench_counterfactual_cost import build_run, cost_row, llm_judge_rows

#: stand-ins for what the model writes per case (typical length of a written probe)
WRITTEN = (
    ("continuation", "What is still pending for the user's request, and what is the next step?",
     "Confirm the change with the user, then apply it to the order they named."),
    ("decision", "Why did the agent choose this approach over the alternative it considered?",
     "Because the first attempt failed with a permission error on the target file."),
)  # fmt: skip


def measure(run_path: Path, example: bool) -> None:
    from ctxreplay.datasets.tokenizer import get_tokenizer
    from ctxreplay.engines.judge import chunk_inputs, plan_work
    from ctxreplay.judges.probe import Probe, ProbeJudge
    from ctxreplay.judges.prompt import render_prompt
    from ctxreplay.runs import Run, SidecarStore

    count = get_tokenizer().count
    run = Run(run_path)
    judge = ProbeJudge(ProbeJudge.Params(cache_dir="off"))
    judge.use_state(judge.corpus_state(run.corpus))
    budget = judge.params.max_prompt_tokens
    written = [
        Probe(f"{k[0]}1", k, q, a, "rubric") for k, q, a in WRITTEN[: 2 * judge.params.written]
    ]
    chunks, _, _ = plan_work(run, judge.label)
    sidecar = SidecarStore(run.path / "sidecar")
    gen: dict[str, tuple[int, int]] = {}  # case → (prompt, completion)
    per_pair: dict[tuple[str, str], tuple[int, int]] = {}
    llm: dict[tuple[str, str], tuple[int, int]] = {}
    kinds: defaultdict[str, int] = defaultdict(int)
    shown = False
    for chunk in chunks:
        for items in chunk_inputs(run.path, run.corpus, sidecar, chunk, True):
            for item, _ in items:
                key = (item.case_id, item.policy)
                llm[key] = (
                    render_prompt(item, max_prompt_tokens=budget, count=count).tokens,
                    render_prompt(item, max_prompt_tokens=10**9, count=count).tokens,
                )
                derived = judge.derived(item)
                if not derived:  # no probes: no request
                    gen.setdefault(item.case_id, (0, 0))
                    per_pair[key] = (0, 0)
                    continue
                probes = [*derived, *written]
                if item.case_id not in gen:
                    reply = {"probes": [{"kind": p.kind, "question": p.question,
                                         "answer": p.expected} for p in written]}  # fmt: skip
                    gen[item.case_id] = (
                        judge.generation_prompt(item).tokens if written else 0,
                        count(json.dumps(reply)) if written else 0,
                    )
                    for p in probes:
                        kinds[p.kind] += 1
                ask = judge.answer_prompt(item, probes)
                answers = {p.id: p.expected for p in probes}
                said = {"answers": [{"id": i, "answer": a} for i, a in answers.items()]}
                prompt, completion = ask.tokens, count(json.dumps(said))
                if written:
                    prompt += judge.grade_prompt(written, answers).tokens
                    grades = [{"id": p.id, "correct": True, "reason": "same task"} for p in written]
                    completion += count(json.dumps({"grades": grades}))
                per_pair[key] = (prompt, completion)
                if example and not shown and len(item.prefix) <= 14:
                    shown = True
                    print(f"example: case {item.case_id}, policy {item.policy}")
                    print("--- answer request, user message ---")
                    print(ask.messages[1]["content"][-1500:])
    cases = sorted(gen)
    policies = sorted({p for _, p in per_pair})
    probed = [c for c in cases if any(per_pair[(c, p)][0] for p in policies)]
    print(f"\n{len(cases)} cases × {len(policies)} policies; {len(probed)} cases with probes")
    print("probes per case with probes: " + ", ".join(
        f"{k} {kinds[k] / max(1, len(probed)):.1f}" for k in ("recall", "artifact",
                                                              "continuation", "decision")))  # fmt: skip
    print("tokens (o200k) per judged case (all its policies), prompt + completion")
    print(f"{'':<40} {'mean':>8} {'median':>8}")
    cost_row("probe generation (once per case)", [sum(gen[c]) for c in cases], 40)
    for p in policies:
        cost_row(f"  answers + grading {p}", [sum(per_pair[(c, p)]) for c in cases], 40)
    probe = [sum(gen[c]) + sum(sum(per_pair[(c, p)]) for p in policies) for c in cases]
    cost_row("probe judge: generation + answers", probe, 40)
    judged, full = llm_judge_rows(llm, cases, policies, budget, 40)
    print(
        f"ratio probe / llm judge prompts: {sum(probe) / judged:.2f} (budget {budget}), "
        f"{sum(probe) / full:.2f} (unbounded); llm judge completions not counted "
        "(bounded by its max_tokens, 800)"
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sessions", type=int, default=6, help="synthetic sessions")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--example", action="store_true", help="print one answer request")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="probe-cost-") as tmp:
        measure(build_run(Path(tmp), args.sessions, args.seed), args.example)


if __name__ == "__main__":
    main()
