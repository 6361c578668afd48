"""One outside record per audit log: its id, schema version, seal key and head, in the
keyring or (none) one owner-only file. The head follows every committed write forward
along the log's own chain, never onto another log; a record that cannot be written never
stops an audit write; the presence check and `audit verify` read the same record."""

from __future__ import annotations

import json
import sqlite3

import keyring
import pytest
from keyring.backends import fail

from _fakes import MemoryKeyring
from preflight.core import paths
from preflight.core.org_policy import OrgPolicy, load_org_policy
from preflight.core.send.audit import AuditLog, Fingerprint
from preflight.core.send.audit_anchor import Anchor, anchor_name, anchors_for
from preflight.core.send.audit_presence import check_presence
from preflight.core.send.audit_schema import SCHEMA_VERSION

MEMOS = ["Carol Diaz wrote to the Lyon office about the lease.",
         "Dev Patel asked for the March payroll export by Tuesday.",
         "The Oslo team moves its retrospective to Thursday at 14:00."]


@pytest.fixture(params=["keyring", "file"])
def home(request):
    """Where the record lives: an OS keyring, or (none) the owner-only file."""
    previous = keyring.get_keyring()
    backend = MemoryKeyring() if request.param == "keyring" else fail.Keyring()
    keyring.set_keyring(backend)
    yield request.param, backend
    keyring.set_keyring(previous)


def _write(log: AuditLog, n: int = 1) -> None:
    for i in range(n):
        rid = log.begin(kind="send", fingerprint=Fingerprint.of(MEMOS[i % len(MEMOS)]),
                        status="sending", provider="p", model="m", payload=b"{}")
        log.update(rid, status="done")


def _record(path) -> Anchor:
    anchor, _where = anchors_for("keyring", paths.config_dir).read(path)
    assert anchor is not None
    return anchor


def _org(text: str) -> OrgPolicy:
    file = paths.config_dir() / "company.toml"
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text, encoding="utf-8")
    return load_org_policy(file)


NO_RESEND = "allow_resend = false\n"


def test_one_record_per_log_holds_id_schema_key_and_head(home, tmp_path):
    where, backend = home
    path = tmp_path / "audit.sqlite3"
    log = AuditLog(path)
    _write(log, 2)
    if where == "keyring":
        (name,) = [u for s, u in backend.store if s == "preflight"]
        assert name == anchor_name(path) and len(backend.store) == 1
        text = backend.store[("preflight", name)]
    else:
        (file,) = (paths.config_dir() / "audit-anchors").iterdir()
        text = file.read_text(encoding="utf-8")
    data = json.loads(text)
    assert data["log_id"] == log.log_id and data["schema"] == SCHEMA_VERSION
    assert data["key"] and tuple(data["head"]) == log.head() and log.head()[0] == 4
    # nothing else outside the log: no second marker, no second keyring service
    assert sorted(p.name for p in paths.config_dir().iterdir()) == (
        [] if where == "keyring" else ["audit-anchors"])


def test_the_head_follows_two_writers_and_never_another_log(home, tmp_path):
    path = tmp_path / "audit.sqlite3"
    window, cli = AuditLog(path), AuditLog(path)          # two processes on one log
    _write(window)
    _write(cli, 2)
    _write(window)
    assert _record(path).head == window.head() and window.head()[0] == 8
    other = AuditLog(tmp_path / "other.sqlite3")
    _write(other, 3)
    assert _record(path).head == window.head()             # each place has its own record
    assert _record(tmp_path / "other.sqlite3").log_id == other.log_id


def test_the_head_never_moves_onto_a_cut_log(home, tmp_path):
    path = tmp_path / "audit.sqlite3"
    log = AuditLog(path)
    _write(log, 2)
    recorded = _record(path).head
    db = sqlite3.connect(path, isolation_level=None)        # cut while the log is open
    db.execute("DELETE FROM events WHERE seq > 2")
    db.close()
    _write(log)                                             # continues from event 2
    assert _record(path).head == recorded                  # the evidence stays
    problems = [str(p) for p in log.verify().problems]
    assert any(f"event {recorded[0]} is not the one" in p for p in problems)


def test_a_record_that_cannot_be_written_does_not_stop_the_log(tmp_path, monkeypatch):
    class RefusingKeyring(MemoryKeyring):
        """Keeps the first record, then refuses every change (a locked keyring)."""

        def set_password(self, service, username, password):
            if self.store:
                raise keyring.errors.KeyringLocked("locked")
            super().set_password(service, username, password)

    previous = keyring.get_keyring()
    keyring.set_keyring(RefusingKeyring())
    try:
        (paths.config_dir()).mkdir(parents=True, exist_ok=True)
        (paths.config_dir() / "audit-anchors").write_text("not a folder")
        log = AuditLog(tmp_path / "audit.sqlite3")
        _write(log, 2)                                     # logged, never raised
        assert len(log.records()) == 2 and log.verify().ok
    finally:
        keyring.set_keyring(previous)


def test_a_damaged_record_is_replaced_and_the_lost_key_reported(tmp_path):
    path = tmp_path / "audit.sqlite3"
    log = AuditLog(path)
    _write(log, 2)
    log.close()
    (file,) = (paths.config_dir() / "audit-anchors").iterdir()
    file.write_text("{not json")
    org = OrgPolicy(rules=None)
    assert check_presence(org, path) is org
    log = AuditLog(path)
    _write(log)                                            # sealed with a new key
    report = log.verify()
    said = [str(p) for p in report.problems]
    assert len(said) == 1 and "no longer keeps the seal key of its events 1-4" in said[0]
    assert _record(path).head == log.head()


def test_a_deleted_log_blocks_a_rule_until_it_is_accepted_then_stays_noted(home, tmp_path):
    path = tmp_path / "audit.sqlite3"
    log = AuditLog(path)
    _write(log, 2)
    lost = log.log_id
    log.close()
    for p in tmp_path.glob("audit.sqlite3*"):
        p.unlink()
    blocked = check_presence(_org(NO_RESEND), path)
    assert lost in blocked.send_block_reason() and "deleted or emptied" in (
        blocked.send_block_reason())
    assert check_presence(_org(NO_RESEND), path).audit_gap is not None     # still
    accepted = _org(NO_RESEND + f'[audit]\nlost_logs = ["{lost}"]\n')
    assert check_presence(accepted, path).audit_gap is None
    assert check_presence(_org(NO_RESEND), path).audit_gap is None         # kept accepted
    notes = AuditLog(path).verify().notes
    assert any(lost in n and "deleted or emptied" in n for n in notes)


def test_another_log_put_in_place_is_named_and_sealed_only_once_accepted(home, tmp_path):
    path = tmp_path / "audit.sqlite3"
    mine = AuditLog(path)
    _write(mine, 2)
    lost = mine.log_id
    mine.close()
    elsewhere = AuditLog(tmp_path / "elsewhere.sqlite3", secrets=None)   # not this place's
    _write(elsewhere, 1)
    stranger = elsewhere.log_id
    elsewhere.close()
    for p in tmp_path.glob("audit.sqlite3*"):
        p.unlink()
    (tmp_path / "elsewhere.sqlite3").replace(path)
    blocked = check_presence(_org(NO_RESEND), path)
    assert f"was replaced (it is log {stranger})" in blocked.send_block_reason()
    assert lost in blocked.send_block_reason()
    assert check_presence(OrgPolicy(rules=None), path).audit_gap is None   # no rule: taken
    assert check_presence(_org(NO_RESEND), path).audit_gap is None
    log = AuditLog(path)
    _write(log)
    assert _record(path).log_id == stranger and _record(path).head == log.head()
    (problem,) = log.verify().problems            # the stranger's events, not sealed here
    assert str(problem).startswith("events 1-2 (from record 1) carry no valid seal")


def test_an_unreadable_keyring_blocks_a_rule_and_keeps_the_record(tmp_path):
    class FlakyKeyring(MemoryKeyring):
        broken = False

        def get_password(self, service, username):
            if self.broken:
                raise keyring.errors.KeyringError("no answer")
            return super().get_password(service, username)

    backend = FlakyKeyring()
    previous = keyring.get_keyring()
    keyring.set_keyring(backend)
    try:
        path = tmp_path / "audit.sqlite3"
        _write(AuditLog(path), 2)
        kept = dict(backend.store)
        backend.broken = True
        blocked = check_presence(_org(NO_RESEND), path)
        assert "cannot be checked" in blocked.send_block_reason()
        assert check_presence(OrgPolicy(rules=None), path).audit_gap is None
        log = AuditLog(path)                               # opens, unsealed meanwhile
        _write(log)
        assert backend.store == kept
    finally:
        keyring.set_keyring(previous)
