"""The saved deny-list holds no value in clear and still finds every value: keyed hashes
(the key in the OS keyring, else an owner-only file), secrets typed SECRET, older files
migrated."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from preflight.core.config import (
    DetectionSettings, Settings, load_settings, save_settings, settings_path,
)
from preflight.core.errors import ConfigError
from preflight.core.pii import deny_store
from preflight.core.pii.recognizers.lists import DenyListRecognizer

from pii_testutil import run


def _files_holding(home: Path, value: str) -> list[str]:
    """Every file under ``home`` whose bytes hold ``value`` or its lower-case form."""
    needles = {value.encode(), value.lower().encode(), value.casefold().encode()}
    return [str(p) for p in home.rglob("*") if p.is_file()
            and any(n in p.read_bytes() for n in needles)]


def _saved(*values: str) -> DetectionSettings:
    det = DetectionSettings()
    for value in values:
        deny_store.add(det.deny_entries, value)
    return det


@pytest.mark.parametrize("values, text, found", [
    (["Bluebird"], "BLUEBIRD and bluebirds and Bluebird.",
     [("DENY_LIST", "BLUEBIRD"), ("DENY_LIST", "Bluebird")]),
    (["Project Falcon"], "the project\n  falcon review; Project Falconry is another",
     [("DENY_LIST", "project\n  falcon")]),
    (["C++ team", "a.b"], "the C++ team and axb and a.b",
     [("DENY_LIST", "C++ team"), ("DENY_LIST", "a.b")]),
    (["Kestrel"], "(Kestrel) kestrel-2 xKestrel Kestrel_1", [("DENY_LIST", "Kestrel"),
                                                             ("DENY_LIST", "kestrel")]),
    (["Summer2024!"], "Log in with Summer2024! today, not summer2024.",
     [("SECRET", "Summer2024!")]),
])
def test_saved_entries_match_like_the_list_always_did(values, text, found):
    assert run(DenyListRecognizer(entries=_saved(*values).deny_entries), text) == found


@pytest.mark.parametrize("value, kind", [
    ("Summer2024!", "secret"), ("xK9#mP2$vLq", "secret"), ("hunter2Q7z", "secret"),
    ("Bluebird", "term"), ("Project Falcon", "term"), ("Jean-Luc", "term"),
    ("ACME", "term"), ("Initech GmbH", "term"), ("Tr0ub4dor &3", "term"),
])
def test_secret_shaped_values_are_secrets(value, kind):
    entry = deny_store.make_entry(value, b"k" * 32)
    assert entry.kind == kind
    assert entry.entity == ("SECRET" if kind == "secret" else "DENY_LIST")


def test_the_settings_folder_never_holds_the_value(_isolated_home):
    settings = Settings()
    for value in ("Summer2024!", "Project Falcon"):
        deny_store.add(settings.detection.deny_entries, value)
    save_settings(settings)
    assert _files_holding(_isolated_home, "Summer2024!") == []
    assert _files_holding(_isolated_home, "Project Falcon") == []
    key = deny_store.key_file()
    assert key.exists() and stat.S_IMODE(key.stat().st_mode) == 0o600   # no keyring here
    labels = [e.label() for e in load_settings().detection.deny_entries]
    assert labels == ["S••••••••! · 11 characters · secret",
                      "P••••••••n · 2 words, 14 characters · name or term"]
    found = run(DenyListRecognizer(entries=load_settings().detection.deny_entries),
                "Ask about project falcon; the wifi is Summer2024!")
    assert found == [("DENY_LIST", "project falcon"), ("SECRET", "Summer2024!")]


def test_an_older_file_is_migrated_and_its_values_leave_the_disk(_isolated_home):
    """A settings file of an earlier version held the values in clear."""
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"schema_version": 2, "detection": {
        "deny_list": ["Osprey", "Qx7#Lm2pZ9"]}}), encoding="utf-8")
    settings = load_settings()                   # rewrites the file: no value stays
    assert settings.detection.deny_list == []
    assert [e.kind for e in settings.detection.deny_entries] == ["term", "secret"]
    assert _files_holding(_isolated_home, "Osprey") == []
    assert _files_holding(_isolated_home, "Qx7#Lm2pZ9") == []
    save_settings(settings)
    again = load_settings()
    assert again.schema_version == 3 and again.detection == settings.detection
    found = run(DenyListRecognizer(entries=again.detection.deny_entries),
                "OSPREY ships; code Qx7#Lm2pZ9.")
    assert found == [("DENY_LIST", "OSPREY"), ("SECRET", "Qx7#Lm2pZ9")]


def test_values_in_memory_are_never_written():
    settings = Settings()
    settings.detection.deny_list.append("Harrier")          # the CLI's --deny, say
    save_settings(settings)
    assert b"Harrier" not in settings_path().read_bytes()
    assert load_settings().detection.deny_list == []


def test_the_key_goes_to_the_os_keyring_when_there_is_one(_isolated_home):
    import keyring
    from keyring.backend import KeyringBackend

    class Memory(KeyringBackend):
        priority = 1
        store: dict = {}

        def get_password(self, service, username):
            return self.store.get((service, username))

        def set_password(self, service, username, password):
            self.store[(service, username)] = password

        def delete_password(self, service, username):
            self.store.pop((service, username), None)

    keyring.set_keyring(Memory())
    det = _saved("Merlin")
    assert not deny_store.key_file().exists()
    assert len(Memory.store) == 1 and _files_holding(_isolated_home, "Merlin") == []
    assert run(DenyListRecognizer(entries=det.deny_entries), "merlin") == [
        ("DENY_LIST", "merlin")]


def test_a_lost_key_fails_closed_with_a_fix():
    det = _saved("Goshawk")
    os.unlink(deny_store.key_file())
    deny_store._cache.clear()                    # a new process: nothing remembered
    with pytest.raises(ConfigError) as err:
        DenyListRecognizer(entries=det.deny_entries)
    assert "cannot be found in documents" in err.value.message
    assert "Settings → Policy" in err.value.hint


def test_a_migration_that_cannot_rewrite_the_file_still_hashes(_isolated_home, monkeypatch):
    from preflight.core import config

    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"detection": {"deny_list": ["Osprey"]}}), encoding="utf-8")

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(config, "atomic_write_text", full_disk)
        settings = load_settings()               # loads all the same, values hashed
    assert settings.detection.deny_list == [] and len(settings.detection.deny_entries) == 1
    save_settings(settings)                      # the next save that can write removes it
    assert _files_holding(_isolated_home, "Osprey") == []


def test_a_bad_entry_in_the_file_names_its_key():
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"detection": {"deny_entries": [
        {"digest": "xyz", "lengths": [3], "kind": "term"}]}}), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"detection.deny_entries\[0\].digest must be 32"):
        load_settings()


_ALPHABET = "aAbBéÉ1_-.+#( )\n\t"


@settings(max_examples=300, deadline=None)
@given(st.text(_ALPHABET, max_size=60), st.lists(st.text(_ALPHABET, min_size=1, max_size=8),
                                                 min_size=1, max_size=4))
def test_hashed_matching_finds_what_the_clear_pattern_finds(text, values):
    """Differential: the keyed-hash search against the clear-text pattern it replaced
    (whole words, case-insensitive, any whitespace inside) on arbitrary text."""
    from preflight.core.pii.recognizers.lists import term_pattern

    values = [v for v in values if v.strip()]
    assume(values)
    rec = DenyListRecognizer(values)
    found = {(r.start, r.end) for r in rec.analyze(text, None)}
    old = term_pattern(values)
    assert {m.span() for m in old.finditer(text)} <= found
    for start, end in found:     # each is a whole-word match of one value
        assert any((m := term_pattern([v]).match(text, start)) and m.end() == end
                   for v in values)
