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
