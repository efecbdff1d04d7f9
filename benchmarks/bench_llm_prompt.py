"""What the llm judge sends per judged (case, policy), against a naive prompt.

The naive prompt is the instructions plus the full prefix, the full view and the future, every
message whole. The llm judge's prompt (``judges/prompt.py``) sends the view with long bodies
shortened around what the future uses, the plan, a patch per edited object and the future, within
``max_prompt_tokens``. Both are counted with the judge's tokenizer over the real public corpora:
each corpus is imported, cut at user turns (at most ``--cases`` cases, seeded), replayed with the
demo policies, and every (case, policy) rendered.

    python benchmarks/bench_llm_prompt.py [--corpora ../shared/corpora] [--cases 60]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from _shared import CORPORA, require


def measure(run_path: Path, budget: int) -> tuple[list[int], list[int], int]:
    """(llm judge prompt tokens, naive prompt tokens) per (case, policy), and how many prompts
    the judge shortened to fit its budget."""
    from ctxreplay.datasets.cases import future_of, prefix_of, read_cases
    from ctxreplay.datasets.tokenizer import get_tokenizer
    from ctxreplay.judges.base import JudgeInput, message_text
    from ctxreplay.judges.prompt import render_prompt, system_prompt
    from ctxreplay.replay.objects import build_index
    from ctxreplay.runs import Run, view_messages

    run = Run(run_path)
    count = get_tokenizer().count
    cases = {c["case_id"]: c for c in read_cases(run.manifest["cases_path"])[0].to_dicts()}
    judged, naive, shortened = [], [], 0
    instructions = count(system_prompt())
    sessions: dict[str, list] = {}
    for label in run.policies:
        views = run.table("views", label).to_dicts()
        actions: dict[str, dict[str, str]] = {}
        for d in run.table("decisions", label).to_dicts():
            if not d["dropped_reason"]:
                actions.setdefault(d["case_id"], {})[d["object_id"]] = d["action"]
        for row in views:
            case = cases[row["case_id"]]
            sid = row["session_id"]
            if sid not in sessions:
                sessions[sid] = [m for m in run.corpus.load_session(sid) if m.visible]
            visible = sessions[sid]
            prefix = prefix_of(visible, case["cut"])
            future = future_of(visible, case)
            item = JudgeInput(
                case_id=row["case_id"],
                session_id=sid,
                policy=label,
                prefix=prefix,
                view=tuple(view_messages(row["entries"], prefix)),
                future=future,
                index=build_index(prefix, count),
                actions=actions.get(row["case_id"], {}),
                cut=case["cut"],
            )
            rendered = render_prompt(item, max_prompt_tokens=budget, count=count)
            judged.append(rendered.tokens)
            shortened += bool(rendered.shortened)
            naive.append(
                instructions
                + sum(count(message_text(m)) for m in (*item.prefix, *item.view, *item.future))
            )
    return judged, naive, shortened


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--corpora", type=Path, default=CORPORA)
    ap.add_argument("--cases", type=int, default=60, help="cases per corpus (sampled, seed 0)")
    ap.add_argument(
        "--budget",
        type=int,
        default=None,
        help="the judge's max_prompt_tokens [default: its own default, and unbounded]",
    )
    args = ap.parse_args()
    require(args.corpora)
    from ctxreplay.datasets.cases import cut_corpus
    from ctxreplay.datasets.ingest import import_paths
    from ctxreplay.datasets.store import Corpus
    from ctxreplay.engines.pipeline import DEMO_POLICIES
    from ctxreplay.engines.replay import run_replay
    from ctxreplay.judges.llm import LLMJudgeParams

    budgets = [args.budget] if args.budget else [LLMJudgeParams().max_prompt_tokens, 10**9]

    runs: list[tuple[str, Path]] = []
    for folder in sorted(p for p in args.corpora.iterdir() if p.is_dir()):
        work = Path(tempfile.mkdtemp(prefix=f"prompt-{folder.name}-"))
        import_paths([folder], work / "corpus", progress=False)
        frame, cases = cut_corpus(
            Corpus(work / "corpus"), work / "cases.parquet", triggers=["user-turns"],
            sample=args.cases, seed=0,
        )  # fmt: skip
        if frame.height:
            run_replay(work / "corpus", cases, list(DEMO_POLICIES), work / "run", progress=False)
            runs.append((folder.name, work / "run"))
    for budget in budgets:
        print(f"\nmax_prompt_tokens {'unbounded' if budget >= 10**9 else f'{budget:,}'}")
        print(
            f"{'corpus':<12} {'views':>6} {'judge tok/view':>14} {'naive tok/view':>14} "
            f"{'ratio':>6} {'median ratio':>12} {'shortened':>9}"
        )
        all_j: list[int] = []
        all_n: list[int] = []
        for name, run in runs:
            judged, naive, shortened = measure(run, budget)
            ratios = [j / n for j, n in zip(judged, naive, strict=True) if n]
            print(
                f"{name:<12} {len(judged):>6} {statistics.mean(judged):>14,.0f} "
                f"{statistics.mean(naive):>14,.0f} {sum(judged) / sum(naive):>6.2f} "
                f"{statistics.median(ratios):>12.2f} {shortened:>9}"
            )
            all_j += judged
            all_n += naive
        print(
            f"{'all':<12} {len(all_j):>6} {statistics.mean(all_j):>14,.0f} "
            f"{statistics.mean(all_n):>14,.0f} {sum(all_j) / sum(all_n):>6.2f}"
        )


if __name__ == "__main__":
    main()
