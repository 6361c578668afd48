"""API keys: keyring only (test backend), session fallback, env var, never in files."""

from __future__ import annotations

import pytest

from preflight.core.config import ProviderSettings, Settings, save_settings, settings_path
from preflight.core.errors import ConfigError
from preflight.core.send.keys import (
    KeyringUnavailableError, KeyStore, SessionKeyStore, key_account, keyring_status,
    resolve_key,
)

KEY = "sk-test-KEY-0123456789abcdef"


def prov(**kw):
    return ProviderSettings(kw.pop("name", "acme"), kw.pop("base_url", "https://api.acme.test/v1"),
                            "m", **kw)


def test_keystore_roundtrip_in_test_backend(memory_keyring):
    store = KeyStore()
    assert store.status().available
    store.set("acme", KEY)
    assert memory_keyring.store[("preflight", "acme")] == KEY
    assert store.get("acme") == KEY
    assert store.delete("acme") and store.get("acme") is None
    assert not store.delete("acme")


def test_key_never_lands_in_settings_files(memory_keyring, tmp_path):
    KeyStore().set("acme", KEY)
    save_settings(Settings(providers=[prov()]))
    for path in settings_path().parent.rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(errors="replace")


def test_fail_backend_reports_unavailable_and_offers_session(no_keyring):
    status = keyring_status()
    assert not status.available and "fail" in status.backend
    with pytest.raises(KeyringUnavailableError) as info:
        KeyStore().set("acme", KEY)
    assert "memory for this session" in info.value.hint
    assert KeyStore().get("acme") is None
    session = SessionKeyStore()
    session.set(key_account(prov()), KEY)
    assert resolve_key(prov(), KeyStore(), session).source == "session"


def test_empty_key_refused(memory_keyring):
    with pytest.raises(ConfigError):
        KeyStore().set("acme", "   ")


def test_resolution_order_env_then_session_then_keyring(memory_keyring):
    p = prov(key_env="ACME_KEY")
    KeyStore().set(key_account(p), "sk-from-keyring-000000")
    session = SessionKeyStore()
    assert resolve_key(p, KeyStore(), session, environ={}).source == "keyring"
    session.set(key_account(p), "sk-from-session-000000")
    assert resolve_key(p, KeyStore(), session, environ={}).key == "sk-from-session-000000"
    got = resolve_key(p, KeyStore(), session, environ={"ACME_KEY": "sk-from-env-00000000"})
    assert got.key == "sk-from-env-00000000" and got.source == "env:ACME_KEY"
    assert "sk-from" not in repr(got)


def test_missing_key_is_a_clear_error_but_loopback_needs_none(memory_keyring):
    with pytest.raises(ConfigError, match="No API key") as info:
        resolve_key(prov(key_env="ACME_KEY"), KeyStore(), SessionKeyStore(), environ={})
    assert info.value.fix == "set-key" and "ACME_KEY" in info.value.hint
    local = resolve_key(prov(base_url="http://127.0.0.1:8080/v1"), KeyStore(),
                        SessionKeyStore(), environ={})
    assert local.key is None


# -- a key is bound to the provider's origin, not its name -------------------------------

@pytest.mark.parametrize("moved", [
    "https://evil.example/v1",                # another host
    "http://api.acme.test/v1",                # another scheme
    "https://api.acme.test:8443/v1",          # another port
    "https://api.acme.test.evil.example/v1",  # a look-alike host
])
def test_a_key_stored_for_one_origin_is_never_resolved_for_another(memory_keyring, moved):
    home = prov()
    KeyStore().set(key_account(home), KEY)
    session = SessionKeyStore()
    session.set(key_account(home), "sk-session-0123456789")
    assert resolve_key(home, KeyStore(), session, environ={}).key == "sk-session-0123456789"
    elsewhere = prov(base_url=moved)                        # same name, new address
    with pytest.raises(ConfigError, match="No API key for provider 'acme' at ") as info:
        resolve_key(elsewhere, KeyStore(), session, environ={})
    assert "none is stored for that address" in str(info.value)
    assert info.value.fix == "set-key" and info.value.subject == "acme"
    assert KEY not in str(info.value)


@pytest.mark.parametrize("same", [
    "https://API.acme.test/v1", "https://api.acme.test:443/v1/", "https://api.acme.test/v2",
])
def test_the_same_origin_finds_the_key_whatever_the_path_or_case(memory_keyring, same):
    KeyStore().set(key_account(prov()), KEY)
    assert resolve_key(prov(base_url=same), KeyStore(), environ={}).key == KEY


def test_a_key_stored_under_the_name_alone_is_not_sent_and_says_why(memory_keyring):
    memory_keyring.store[("preflight", "acme")] = KEY       # stored before keys were bound
    with pytest.raises(ConfigError, match="before keys were bound to an address"):
        resolve_key(prov(), KeyStore(), SessionKeyStore(), environ={})
