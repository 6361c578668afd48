"""`preflight forget-keys`: deletes stored API keys, keeps every user file."""

from __future__ import annotations

import json

import keyring
import pytest
from keyring.backend import KeyringBackend
from keyring.backends import fail
from keyring.errors import PasswordDeleteError

from preflight.cli.main import main
from preflight.core import paths
from preflight.core.config import ProviderSettings, Settings, save_settings


class _MemoryKeyring(KeyringBackend):
    priority = 1

    def __init__(self) -> None:
        super().__init__()
        self.store: dict[tuple[str, str], str] = {}

    def get_password(self, service, username):
        return self.store.get((service, username))

    def set_password(self, service, username, password):
        self.store[(service, username)] = password

    def delete_password(self, service, username):
        if self.store.pop((service, username), None) is None:
            raise PasswordDeleteError(username)


@pytest.fixture
def memory_keyring():
    previous = keyring.get_keyring()
    backend = _MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)


def _configure(*names: str) -> None:
    save_settings(Settings(providers=[
        ProviderSettings(name=n, base_url="https://api.example.com/v1", model="m") for n in names
    ]))


def test_forgets_configured_and_named_keys_and_keeps_user_files(memory_keyring, capsys):
    _configure("openai", "mistral")
    memory_keyring.set_password("preflight", "openai", "sk-test-1")
    memory_keyring.set_password("preflight", "old-provider", "sk-test-2")
    memory_keyring.set_password("other-app", "openai", "keep-me")
    audit = paths.data_dir() / "audit.sqlite3"
    audit.write_bytes(b"audit records")

    assert main(["forget-keys", "--provider", "old-provider", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)

    assert sorted(report["forgotten"]) == ["old-provider", "openai"]
    assert report["not_stored"] == ["mistral"]
    assert memory_keyring.store == {("other-app", "openai"): "keep-me"}
    assert audit.read_bytes() == b"audit records"
    assert report["kept_folders"]["data (audit log, vaults)"] == str(paths.data_dir())


def test_dry_run_deletes_nothing(memory_keyring, capsys):
    _configure("openai")
    memory_keyring.set_password("preflight", "openai", "sk-test-1")
    assert main(["forget-keys", "--dry-run", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["would_forget"] == ["openai"]
    assert memory_keyring.store == {("preflight", "openai"): "sk-test-1"}


def test_no_keyring_backend_is_reported_not_an_error(capsys):
    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    try:
        _configure("openai")
        assert main(["forget-keys"]) == 0
    finally:
        keyring.set_keyring(previous)
    out = capsys.readouterr().out
    assert "nothing to forget" in out
    assert "sk-" not in out
