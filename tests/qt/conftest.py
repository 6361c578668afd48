"""Window tests run offscreen with a fake backend unless a test asks for the real core."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).parent))

from fakes import SAMPLE, FakeBackend  # noqa: E402,F401  (SAMPLE: re-exported)

from preflight.core.config import ProviderSettings, Settings  # noqa: E402


@pytest.fixture
def fake_backend() -> FakeBackend:
    s = Settings()
    s.policy.active = "dx-all"        # most window tests drive the ε slider
    s.providers.append(ProviderSettings(name="loopback", base_url="http://127.0.0.1:9/v1",
                                        model="test-model"))
    return FakeBackend(s)


@pytest.fixture
def window(qtbot, fake_backend):
    from fakes import open_window, stop_window_work

    win = open_window(qtbot, fake_backend)
    yield win
    stop_window_work(win)
