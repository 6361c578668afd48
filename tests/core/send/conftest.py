from __future__ import annotations

import keyring
import pytest
from keyring.backends import fail

from _fakes import MemoryKeyring, fake_mechanisms
from _loopback import CaptureServer


@pytest.fixture(autouse=True)
def _fake_mechanisms():
    with fake_mechanisms():
        yield


@pytest.fixture
def memory_keyring():
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)


@pytest.fixture
def no_keyring():
    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    yield
    keyring.set_keyring(previous)


@pytest.fixture
def server():
    with CaptureServer() as srv:
        yield srv
