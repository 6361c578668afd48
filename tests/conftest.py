"""Every test gets fresh, empty user directories: settings, audit log, vaults and caches
live under a temporary PREFLIGHT_HOME, never the user's real files. Model files are shared
(read-only) from the checkout's models/ folder."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("preflight-home")
    monkeypatch.setenv("PREFLIGHT_HOME", str(home))
    yield home
