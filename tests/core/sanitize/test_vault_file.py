"""The vault file: owner-only, atomic, versioned, and clear about damage."""

from __future__ import annotations

import json
import os
import stat

import pytest

from preflight.core.errors import ConfigError
from preflight.core.sanitize.vault import PLACEHOLDER, SURROGATE, Vault, VaultEntry

ENTRIES = [
    VaultEntry("<PERSON_1>", "PERSON", "Ann Lee", PLACEHOLDER, ("Ann Lee", "ANN LEE")),
    VaultEntry("Maria Lopez", "PERSON", "Eva Ng 😀", SURROGATE, (), True),
]


def make_vault() -> Vault:
    v = Vault()
    v.reset("placeholder", "ab" * 32, ENTRIES)
    return v


def test_save_and_load_round_trip(tmp_path):
    path = make_vault().save(tmp_path / "sub" / "v.json")
    loaded = Vault.load(path)
    assert loaded.entries == tuple(ENTRIES)
    assert loaded.method == "placeholder" and loaded.document_sha256 == "ab" * 32
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["schema_version"] == 1
    assert "Eva Ng 😀" in path.read_text(encoding="utf-8")  # stored as text, not escapes


def test_file_is_owner_only_and_leaves_no_temp_files(tmp_path):
    path = make_vault().save(tmp_path / "v.json")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    make_vault().save(path)  # overwrite in place
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v.json"]


def test_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    path = make_vault().save(tmp_path / "v.json")
    before = path.read_bytes()

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(ConfigError, match="cannot be written"):
        make_vault().save(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v.json"]


@pytest.mark.parametrize("content, message", [
    (b"{not json", "damaged"),
    (b"\xff\xfe", "damaged"),
    (b"[]", "not a Preflight vault"),
    (b'{"entries": []}', "not a Preflight vault"),
    (b'{"schema_version": "1", "entries": []}', "damaged"),
    (b'{"schema_version": 99, "entries": []}', "newer Preflight"),
    (b'{"schema_version": 1}', "damaged"),
    (b'{"schema_version": 1, "entries": [{"token": "<P_1>"}]}', "damaged"),
    (b'{"schema_version": 1, "entries": [{"token": "<P_1>", "type": "P", "original": 3,'
     b' "kind": "placeholder"}]}', "damaged"),
    (b'{"schema_version": 1, "entries": [{"token": "P1", "type": "P", "original": "x",'
     b' "kind": "placeholder"}]}', "damaged"),
    (b'{"schema_version": 1, "entries": [{"token": "x", "type": "P", "original": "x",'
     b' "kind": "magic"}]}', "damaged"),
    (b'{"schema_version": 1, "entries": [7]}', "damaged"),
])
def test_damaged_files_give_a_clear_error(tmp_path, content, message):
    path = tmp_path / "v.json"
    path.write_bytes(content)
    with pytest.raises(ConfigError, match=message) as info:
        Vault.load(path)
    assert info.value.hint


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        Vault.load(tmp_path / "nope.json")
    with pytest.raises(ConfigError, match="folder"):
        Vault.load(tmp_path)
