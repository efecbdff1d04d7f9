"""Duplicate requests on a scripted server with repeated prompts, with and without coalescing.

A scripted OpenAI-compatible server (``tests/fake_openai.py``, answering after ``--delay``
seconds) is asked ``--calls`` completions over ``--distinct`` prompts, each repeated, in random
order, from ``--threads`` threads through one :class:`ctxreplay.llm.ModelClient` with an on-disk
cache (as the LLM judge runs). It prints the requests the server received against the distinct
prompts: the extra requests are paid twice. The same is then done with single flight switched
off, as the client was before it.

    python benchmarks/single_flight.py [--calls 383] [--distinct 40] [--threads 16]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from ctxreplay.llm import ModelClient, forget_endpoints
from ctxreplay.llm import client as client_module

from fake_openai import FakeOpenAI, Reply, chat_body


def trial(prompts: list[str], threads: int, delay: float, coalesce: bool) -> tuple[int, float]:
    forget_endpoints()
    join = client_module._join_flight
    if not coalesce:  # every caller leads its own flight: the client before single flight
        client_module._join_flight = lambda key: (client_module._Flight(), True)  # type: ignore[assignment]
    try:
        with FakeOpenAI(default=Reply(body=chat_body("answer"), delay=delay)) as server:
            client = ModelClient(
                server.base_url,
                "fake",
                concurrency=threads,
                cache_dir=Path(tempfile.mkdtemp(prefix="ctxreplay-sf-")),
            )
            started = time.perf_counter()
            with ThreadPoolExecutor(max_workers=threads) as pool:
                list(
                    pool.map(
                        lambda p: client.complete([{"role": "user", "content": p}], max_tokens=8),
                        prompts,
                    )
                )
            return len(server.requests), time.perf_counter() - started
    finally:
        client_module._join_flight = join


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--calls", type=int, default=383)
    ap.add_argument("--distinct", type=int, default=40)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--delay", type=float, default=0.1, help="Seconds the server takes.")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    prompts = [f"prompt {i % args.distinct}" for i in range(args.calls)]
    random.Random(args.seed).shuffle(prompts)
    print(
        f"{args.calls} calls over {args.distinct} distinct prompts, {args.threads} threads, "
        f"server answers in {args.delay}s"
    )
    for coalesce in (True, False):
        sent, secs = trial(prompts, args.threads, args.delay, coalesce)
        name = "single flight" if coalesce else "without it   "
        print(
            f"  {name}: {sent} requests for {args.distinct} distinct prompts "
            f"({sent - args.distinct} extra) in {secs:.1f}s"
        )


if __name__ == "__main__":
    main()
