"""Arrow's allocator: the system one once ctxreplay reads Parquet, unless the user chose one."""

from __future__ import annotations

import os
import subprocess
import sys

CODE = (
    "import ctxreplay.datasets.store, pyarrow as pa; print(pa.default_memory_pool().backend_name)"
)


def backend(env_pool: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if env_pool is not None:
        env["ARROW_DEFAULT_MEMORY_POOL"] = env_pool
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_the_system_allocator_unless_the_environment_chooses() -> None:
    assert backend(None) == "system"
    chosen = "jemalloc" if backend("jemalloc") == "jemalloc" else "mimalloc"
    assert backend(chosen) == chosen


READ = """
import ctxreplay.datasets.store, pyarrow as pa, pyarrow.parquet as pq, sys
pq.write_table(pa.table({"x": list(range(100_000))}), sys.argv[1], compression="zstd")
for _ in pq.ParquetFile(sys.argv[1]).iter_batches(batch_size=1000):
    pass
print(pa.mimalloc_memory_pool().max_memory(), pa.system_memory_pool().max_memory())
"""


def test_parquet_buffers_come_from_the_system_allocator(tmp_path) -> None:
    """Arrow's C++ code (here the Parquet reader and writer) allocates from the pool named when
    pyarrow was imported: switching only Python's default pool left it on mimalloc."""
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    out = subprocess.run(
        [sys.executable, "-c", READ, str(tmp_path / "x.parquet")],
        env=env,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    mimalloc, system = (int(x) for x in out.stdout.split())
    assert mimalloc == 0
    assert system > 0


FREE = """
import ctxreplay, polars as pl
def rss(): return int(open("/proc/self/statm").read().split()[1]) * 4096
before = rss()
frame = pl.DataFrame({"x": pl.arange(0, 50_000_000, eager=True)})  # 400 MB
held = rss() - before
del frame
print(held, rss() - before)
"""


def polars_after_free(conf: str | None) -> tuple[int, int]:
    env = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    if conf is not None:
        env["_RJEM_MALLOC_CONF"] = conf
    out = subprocess.run([sys.executable, "-c", FREE], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    held, left = (int(x) for x in out.stdout.split())
    return held, left


def test_polars_gives_freed_memory_back_at_once_unless_the_user_configured_it() -> None:
    """A frame polars frees leaves the process's resident memory at once (jemalloc's decay
    set to 0 by ctxreplay), not 10 s later; a configuration the user chose stands."""
    held, left = polars_after_free(None)
    assert held > 300e6
    assert left < 0.25 * held
    held, left = polars_after_free("dirty_decay_ms:60000,muzzy_decay_ms:60000")
    assert left > 0.75 * held  # the user's long decay: the pages stay for now
