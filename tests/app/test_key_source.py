"""Where the key of a provider comes from, said for people — also for a provider the
settings dialog added but has not saved yet (it used to read "none (StopIteration)")."""

from __future__ import annotations

import keyring
import pytest
from keyring.backends import fail

from preflight.app.window_doorway import WindowDoorway
from preflight.core.config import ProviderSettings, Settings


@pytest.fixture(autouse=True)
def _no_keyring():
    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    yield
    keyring.set_keyring(previous)


def test_unsaved_provider_without_key_says_none_is_set():
    door = WindowDoorway(Settings())                    # no providers saved
    new = ProviderSettings("openai", "https://api.openai.com/v1", "gpt-4o-mini")
    assert door.key_source(new) == "none set — use “Set API key…”"


def test_sources_are_named(monkeypatch):
    door = WindowDoorway(Settings())
    monkeypatch.setenv("PF_TEST_KEY", "sk-env")
    env = ProviderSettings("a", "https://api.example.com/v1", "m", key_env="PF_TEST_KEY")
    assert door.key_source(env) == "read from the environment variable PF_TEST_KEY"
    local = ProviderSettings("l", "http://127.0.0.1:8080/v1", "m")
    assert door.key_source(local) == "none needed (a server on this computer)"
    session = ProviderSettings("b", "https://api.example.com/v1", "m")
    door.set_key(session, "sk-session", remember=False)
    assert door.key_source(session) == "kept in memory for this session (not saved)"
    moved = ProviderSettings("b", "https://other.example.com/v1", "m")
    assert door.key_source(moved) == "none set — use “Set API key…”"   # bound to its address
    monkeypatch.delenv("PF_TEST_KEY")
    assert door.key_source(env) == ("none set (the variable PF_TEST_KEY is empty) — use "
                                    "“Set API key…”")
