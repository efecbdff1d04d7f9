"""Import throughput: MB/s, messages/s, and import time over a bare tokenisation pass; and what
each corpus holds (sub-agent sessions, tool calls and results, recorded compactions, rejects).

The bare pass tokenises exactly the strings the import counts (each message's text fields), with
the same encoding and the same batch API: it is the physical floor of this step. Everything else
(parsing, validation, Parquet writing) is overhead measured against it.

    python benchmarks/bench_import.py [--corpora ../shared/corpora] [--repeat 3] [FOLDER ...]

Named folders (e.g. ``tests/fixtures/gemini-cli``) are measured instead of the corpora's.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from _shared import CORPORA, require

from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.store import Corpus
from ctxreplay.datasets.tokenizer import get_tokenizer


def bare_tokenisation(corpus: Corpus) -> tuple[float, int]:
    from ctxreplay.datasets.rows import row_to_message

    texts = [
        s
        for row in corpus.table("messages").to_pylist()
        for p in row_to_message(row).parts
        for s in p.token_texts()
    ]
    tok = get_tokenizer(corpus.tokenizer_name)
    started = time.perf_counter()
    total = sum(tok.count_many(texts))
    return time.perf_counter() - started, total


def contents(corpus: Corpus) -> dict[str, int]:
    """Sub-agent sessions (a parent named in their metadata), tool calls, tool results and
    recorded compactions of an imported corpus, read back from its tables."""
    import polars as pl

    from ctxreplay.datasets.validate import FLAG_COMPACTION_SUMMARY

    sessions = corpus.sessions()
    sub = sessions.filter(
        pl.col("metadata").str.json_path_match("$.parent_session_id").is_not_null()
    ).height
    flags = corpus.messages(columns=["session_id", "seq", "flags"])["flags"]
    compactions = int(flags.list.contains(FLAG_COMPACTION_SUMMARY).sum())
    return {
        "sub": sub,
        "calls": int(sessions["n_tool_calls"].sum()),
        "results": int(sessions["n_tool_results"].sum()),
        "compactions": compactions,
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--corpora", type=Path, default=CORPORA)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("folders", nargs="*", type=Path, help="folders to measure instead")
    args = ap.parse_args()
    if not args.folders:
        require(args.corpora)
    get_tokenizer()  # load the encoding outside the timed region
    folders = args.folders or sorted(p for p in args.corpora.iterdir() if p.is_dir())
    print(
        f"{'corpus':<12} {'files':>5} {'MB':>6} {'sessions':>8} {'sub':>5} {'messages':>9} {'calls':>6} "
        f"{'results':>7} {'compact':>7} {'rejects':>7} {'tokens':>11} "
        f"{'s':>6} {'MB/s':>6} {'msg/s':>8} {'tok pass s':>10} {'ratio':>6}"
    )
    totals = [0.0, 0, 0.0, 0.0]
    for folder in folders:
        best = None
        for _ in range(args.repeat):
            out = Path(tempfile.mkdtemp()) / "c"
            started = time.perf_counter()
            summary = import_paths([folder], out, progress=False)
            elapsed = time.perf_counter() - started
            if best is None or elapsed < best[0]:
                best = (elapsed, summary, out)
            else:
                shutil.rmtree(out.parent)
        elapsed, summary, out = best
        corpus = Corpus(out)
        floor, tokens = bare_tokenisation(corpus)
        assert tokens == summary.tokens, (tokens, summary.tokens)
        held = contents(corpus)
        mb = summary.bytes / 1e6
        print(
            f"{folder.name:<12} {summary.files:>5} {mb:>6.1f} {summary.sessions:>8} {held['sub']:>5} {summary.messages:>9} "
            f"{held['calls']:>6} {held['results']:>7} {held['compactions']:>7} {summary.rejects:>7} "
            f"{summary.tokens:>11,} {elapsed:>6.2f} {mb / elapsed:>6.1f} {summary.messages / elapsed:>8,.0f} "
            f"{floor:>10.3f} {elapsed / floor:>6.1f}"
        )
        for reason, n in summary.rejected.most_common():
            print(f"{'':<12}   reject {reason}: {n}")
        for reason, n in summary.skipped.most_common():
            print(f"{'':<12}   skipped {reason}: {n}")
        for reason, n in sorted(summary.not_read.items()):
            print(f"{'':<12}   not read ({reason}): {n}")
        totals[0] += mb
        totals[1] += summary.messages
        totals[2] += elapsed
        totals[3] += floor
        shutil.rmtree(out.parent)
    mb, msgs, secs, floor = totals
    print(
        f"{'all':<12} {'':>5} {mb:>6.1f} {'':>8} {'':>5} {msgs:>9} {'':>6} {'':>7} {'':>7} {'':>7} {'':>11} "
        f"{secs:>6.2f} {mb / secs:>6.1f} {msgs / secs:>8,.0f} {floor:>10.3f} {secs / floor:>6.1f}"
    )


if __name__ == "__main__":
    main()
