"""Fixtures for the utility-assessor tests (fakes live in _utility_fakes.py)."""

from __future__ import annotations

import pytest

from _utility_fakes import FakeEmbedder, FakeSLM


@pytest.fixture
def fake_slm():
    return FakeSLM()


@pytest.fixture
def fake_embedder():
    return FakeEmbedder()
