"""Which allocator Arrow's buffers come from.

ctxreplay reads corpora and runs in many small pieces (a chunk of sessions, a row group, a
batch of 256 rows), often from worker threads. Arrow's default allocator, mimalloc, keeps the
memory of each thread that allocated, so the resident memory of a long stage follows the number
of reads rather than what is held: streaming the 6 parts of a bucket of the 16× corpus of
``benchmarks/bench_scale.py`` for a merge added 113 MB of resident memory with mimalloc and
26 MB with the system allocator (issue 15). Importing this
module makes the system allocator Arrow's default, unless ``ARROW_DEFAULT_MEMORY_POOL`` says
otherwise (then Arrow's own choice stands).
"""

from __future__ import annotations

import os

import pyarrow as pa


def choose_pool() -> str:
    """Make the system allocator Arrow's default pool unless the environment chose one; the
    backend in use."""
    if not os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        pa.set_memory_pool(pa.system_memory_pool())
    return pa.default_memory_pool().backend_name


POOL = choose_pool()
