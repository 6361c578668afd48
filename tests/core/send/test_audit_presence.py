"""The audit log's marker: it follows the log forward only, never switches logs by
itself, and a marker that cannot be written never stops an audit write."""

from __future__ import annotations

from preflight.core.org_policy import OrgPolicy
from preflight.core.send import audit_presence
from preflight.core.send.audit import AuditLog, Fingerprint
from preflight.core.send.audit_presence import Marker, MarkerStore, check_presence, record


def _write(log: AuditLog, n: int = 1) -> None:
    for _ in range(n):
        rid = log.begin(kind="send", fingerprint=Fingerprint.of("Carol Diaz wrote."),
                        status="sending", provider="p", model="m", payload=b"{}")
        log.update(rid, status="done")


def test_the_marker_moves_forward_only_and_stays_with_its_log(tmp_path, no_keyring):
    store = MarkerStore(tmp_path / "audit.sqlite3", tmp_path / "marker.json")
    log = AuditLog(tmp_path / "audit.sqlite3")
    _write(log, 2)
    record(log, store)
    marker, _ = store.read()
    assert marker == Marker(log.log_id, *log.head()) and marker.seq > 0
    store.write(Marker(log.log_id, marker.seq + 5, "f" * 64))    # another process, further
    record(log, store)
    assert store.read()[0].seq == marker.seq + 5                  # never moved back
    other = AuditLog(tmp_path / "other.sqlite3")
    record(other, store)
    assert store.read()[0].log_id == log.log_id                   # never switched silently


def test_a_marker_that_cannot_be_written_does_not_stop_the_log(tmp_path, no_keyring):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("x")
    store = MarkerStore(tmp_path / "audit.sqlite3", blocked / "marker.json")
    log = AuditLog(tmp_path / "audit.sqlite3")
    _write(log)
    record(log, store)                                   # logged, not raised
    assert store.read() == (None, None)


def test_a_damaged_marker_file_adopts_the_log_that_is_there(tmp_path, no_keyring):
    store = MarkerStore(tmp_path / "audit.sqlite3", tmp_path / "marker.json")
    log = AuditLog(tmp_path / "audit.sqlite3")
    _write(log)
    log.close()
    store.path.write_text("{not json")
    org = OrgPolicy(rules=None)
    assert check_presence(org, tmp_path / "audit.sqlite3", store) is org
    assert store.read()[0].log_id == AuditLog(tmp_path / "audit.sqlite3").log_id
    assert audit_presence.MARKER_FILE == "audit-marker.json"
