"""Import throughput: MB/s, messages/s, and import time over a bare tokenisation pass.

The bare pass tokenises exactly the strings the import counts (each message's text fields), with
the same encoding and the same batch API: it is the physical floor of this step. Everything else
(parsing, validation, Parquet writing) is overhead measured against it.

    python benchmarks/bench_import.py [--corpora ../shared/corpora] [--repeat 3]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.store import Corpus
from ctxreplay.datasets.tokenizer import get_tokenizer

ROOT = Path(__file__).resolve().parents[1]


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


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if not args.corpora.exists():
        raise SystemExit(f"no corpora at {args.corpora}")
    get_tokenizer()  # load the encoding outside the timed region
    folders = sorted(p for p in args.corpora.iterdir() if p.is_dir())
    print(
        f"{'corpus':<12} {'MB':>6} {'sessions':>8} {'messages':>9} {'tokens':>10} "
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
        floor, tokens = bare_tokenisation(Corpus(out))
        assert tokens == summary.tokens, (tokens, summary.tokens)
        mb = summary.bytes / 1e6
        print(
            f"{folder.name:<12} {mb:>6.1f} {summary.sessions:>8} {summary.messages:>9} {summary.tokens:>10,} "
            f"{elapsed:>6.2f} {mb / elapsed:>6.1f} {summary.messages / elapsed:>8,.0f} {floor:>10.3f} {elapsed / floor:>6.1f}"
        )
        totals[0] += mb
        totals[1] += summary.messages
        totals[2] += elapsed
        totals[3] += floor
        shutil.rmtree(out.parent)
    mb, msgs, secs, floor = totals
    print(
        f"{'all':<12} {mb:>6.1f} {'':>8} {msgs:>9} {'':>10} {secs:>6.2f} {mb / secs:>6.1f} {msgs / secs:>8,.0f} "
        f"{floor:>10.3f} {secs / floor:>6.1f}"
    )


if __name__ == "__main__":
    main()
