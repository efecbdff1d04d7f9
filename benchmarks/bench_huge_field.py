"""What one huge message costs to import: peak memory over a baseline, against its size.

A JSONL file holds one OpenAI-chat session whose tool result is one text field of ``--mb`` MiB
(varied words, so neither tokenising nor compressing it is trivial), beside a small ordinary
session. The same file with a field of 1 KiB is the baseline: what the import costs anyway
(interpreter, libraries, tokenizer). Each import runs in a child process of its own; its peak
RSS comes from ``wait4``. The aim (issue 15) is at most about 3× the field.

    python benchmarks/bench_huge_field.py [--mb 50]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = [
    "alpha", "beta", "gamma", "delta", "error:", "line", "42", "ok", "/usr/lib/x.py", "def",
    "return", "None", "{", "}", "0x1f", "warning", "timeout", "retry", "user_id=17", "\n",
]  # fmt: skip


def trace(path: Path, field_bytes: int) -> None:
    """One session with a tool result of ``field_bytes`` characters, and a small session."""
    rng = random.Random(0)
    words: list[str] = []
    size = 0
    while size < field_bytes:
        w = rng.choice(WORDS)
        words.append(w)
        size += len(w) + 1
    body = " ".join(words)[:field_bytes]
    call = {"id": "c1", "type": "function", "function": {"name": "cat", "arguments": "{}"}}
    huge = {
        "messages": [
            {"role": "user", "content": "show me the log"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": body},
            {"role": "assistant", "content": "done"},
        ]
    }
    small = {
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    }
    with path.open("w") as f:
        f.write(json.dumps(small) + "\n" + json.dumps(huge) + "\n")


def import_in_child(path: Path, out: Path) -> tuple[float, float, str]:
    """Seconds, peak RSS (MiB) and the summary of ``ctxreplay import`` in a fresh process."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ctxreplay", "import", str(path), "-o", str(out), "--quiet",
         "--max-message-mb", "1000"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    assert proc.stdout is not None
    output = proc.stdout.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"import of {path} failed:\n{output}")
    return time.perf_counter() - started, usage.ru_maxrss / 1024, output


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--mb", type=float, default=50.0, help="size of the huge field, MiB")
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-huge-"))
    field = int(args.mb * 1024 * 1024)
    rows = []
    for name, size in (("baseline (1 KiB field)", 1024), (f"{args.mb:g} MiB field", field)):
        path = folder / f"{size}.jsonl"
        trace(path, size)
        seconds, peak, output = import_in_child(path, folder / f"corpus-{size}")
        rows.append((name, size, seconds, peak, output))
    base_peak = rows[0][3]
    print(
        f"{'import':<24} {'file MiB':>9} {'seconds':>8} {'peak MiB':>9} {'over base':>10} {'× field':>8}"
    )
    for name, size, seconds, peak, _ in rows:
        over = peak - base_peak
        ratio = over / (size / 1024 / 1024) if size > 1024 else float("nan")
        file_mib = (folder / f"{size}.jsonl").stat().st_size / 1024 / 1024
        print(f"{name:<24} {file_mib:9.1f} {seconds:8.1f} {peak:9.0f} {over:10.0f} {ratio:8.2f}")
    print()
    print(rows[-1][4].strip().splitlines()[0])


if __name__ == "__main__":
    main()
