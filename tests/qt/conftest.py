"""Window tests run offscreen over the REAL application layer, whose heavy ports are fakes
(``ports.py``) and whose provider is a loopback server, unless a test asks for the real
models."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).parent))

from loopback import LoopbackLLM  # noqa: E402
from ports import SAMPLE, Rig, window_settings  # noqa: E402,F401  (SAMPLE: re-exported)

#: What the loopback provider answers unless a test says otherwise.
ANSWER = "Summary about <PERSON_1> and the plan."


@pytest.fixture
def rig() -> Rig:
    """The fake ports of one test (detector, local model, embedder, token space …)."""
    return Rig()


@pytest.fixture
def provider():
    """The cloud provider: a loopback OpenAI-compatible server that streams ``ANSWER``."""
    with LoopbackLLM(ANSWER.split(" ")) as server:
        yield server


@pytest.fixture
def door(rig, provider):
    """The real application layer of a window, over the fakes, sending to ``provider``."""
    return rig.doorway(window_settings(provider.base_url))


@pytest.fixture
def window(qtbot, door):
    from windows import open_window, stop_window_work

    win = open_window(qtbot, door)
    yield win
    stop_window_work(win)
