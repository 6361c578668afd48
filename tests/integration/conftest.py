"""Loopback servers for the send path: llama-cpp-python's OpenAI-compatible server with
the default SLM (one per session, started only when a slow test asks for it) and the
capture server from tests/core/send."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "core" / "send"))

from _loopback import CaptureServer  # noqa: E402
from _models import require_model  # noqa: E402

from preflight_eval.utility_common import local_cloud_server  # noqa: E402

@pytest.fixture(scope="session")
def slm_path() -> Path:
    return require_model("slm")


@pytest.fixture(scope="session")
def llama_server(slm_path, tmp_path_factory):
    """``python -m llama_cpp.server`` on a free loopback port; yields its /v1 base URL."""
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    try:
        with local_cloud_server(slm_path, n_ctx=2048, n_threads=2, log_path=log,
                                start_timeout=90) as base:
            yield base + "/v1"
    except RuntimeError as exc:  # did not start: show why
        pytest.fail(f"{exc}: {log.read_text(errors='replace')[-2000:]}")


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
