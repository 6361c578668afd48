"""The audit chain: a changed, deleted, added or reordered record (or event) is found and
named; records in flight, concurrent writers and old logs verify; exports carry the chain."""

from __future__ import annotations

import csv
import json
import sqlite3

import pytest

from preflight.core.errors import InputError
from preflight.core.send.audit import AuditLog, Fingerprint
from preflight.core.send.audit_export import verify_export

DOC = "Alice Martin met the board in Lyon on Monday to discuss the merger with Northwind."


def begin(log: AuditLog, n: int = 0, **kw) -> int:
    args = {"kind": "send", "status": "sending", "fingerprint": Fingerprint.of(f"{DOC} {n}"),
            "provider": "p", "model": "m", "method": "placeholder", "epsilon": 1,
            "payload": b'{"x": "caf\xc3\xa9"}', "overrides": ["PERSON_1"]}
    args.update(kw)
    return log.begin(**args)


def filled(path, n: int = 4) -> AuditLog:
    log = AuditLog(path)
    for i in range(n):
        rid = begin(log, i)
        log.update(rid, status="streaming", delivered=1, answer_raw="<PERSON_1> met")
        log.update(rid, status="done", cost=0.01, output_tokens=3,
                   requests=json.dumps([{"url": "https://x", "status": 200}]))
    return log


def raw(path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def test_a_fresh_log_verifies_with_one_event_per_write(tmp_path):
    log = filled(tmp_path / "a.sqlite3")
    report = log.verify()
    assert report.ok, report.problems
    assert (report.events, report.records) == (12, 4)
    assert report.head == log.head() and report.head[0] == 12
    log.update(1, realized_utility=0.7, flow_pending=0)      # a late change is chained too
    assert log.verify().ok and log.head()[0] == 13


def test_a_record_in_flight_verifies(tmp_path):
    log = filled(tmp_path / "a.sqlite3", 2)
    rid = begin(log, 9)                                       # begun, nothing else yet
    assert log.verify().ok
    log.update(rid, answer_raw="partial")                     # a streaming checkpoint
    assert log.verify().ok


def test_a_changed_value_names_the_record_and_column(tmp_path):
    path = tmp_path / "a.sqlite3"
    log = filled(path)
    raw(path).execute("UPDATE sends SET provider = 'elsewhere' WHERE id = 3")
    report = log.verify()
    assert not report.ok
    assert report.first.record_id == 3 and "provider" in str(report.first)


def test_a_changed_payload_and_a_null_for_a_value_are_found(tmp_path):
    path = tmp_path / "a.sqlite3"
    log = filled(path)
    db = raw(path)
    db.execute("UPDATE sends SET payload = ? WHERE id = 2", (b'{"x": "other"}',))
    db.execute("UPDATE sends SET cost = NULL WHERE id = 4")
    found = {p.record_id for p in log.verify().problems}
    assert found == {2, 4}


def test_a_deleted_row_is_missing(tmp_path):
    path = tmp_path / "a.sqlite3"
    log = filled(path)
    raw(path).execute("DELETE FROM sends WHERE id = 2")
    report = log.verify()
    assert report.first.record_id == 2 and "missing" in str(report.first)


def test_a_row_deleted_with_its_events_breaks_the_chain(tmp_path):
    path = tmp_path / "a.sqlite3"
    log = filled(path)
    db = raw(path)
    db.execute("DELETE FROM sends WHERE id = 2")
    db.execute("DELETE FROM events WHERE record_id = 2")
    problems = [str(p) for p in log.verify().problems]
    assert any("events 4-6" in p and "missing" in p for p in problems)
    assert any(p.startswith("record 2 missing") for p in problems)


def test_the_last_record_deleted_with_its_events_is_found_by_the_head(tmp_path):
    path = tmp_path / "a.sqlite3"
    log = filled(path)
    db = raw(path)
    db.execute("DELETE FROM sends WHERE id = 4")
    db.execute("DELETE FROM events WHERE record_id = 4")
    report = log.verify()
    assert not report.ok and "cut off" in str(report.first)


def test_reordered_events_are_found(tmp_path):
    path = tmp_path / "a.sqlite3"
    log = filled(path)
    db = raw(path)
    # swap the first events of records 2 and 3 (seq 4 and 7)
    db.execute("UPDATE events SET seq = -1 WHERE seq = 4")
    db.execute("UPDATE events SET seq = 4 WHERE seq = 7")
    db.execute("UPDATE events SET seq = 7 WHERE seq = -1")
    report = log.verify()
    assert not report.ok and report.first.seq == 4


def test_reordered_records_are_found(tmp_path):
    path = tmp_path / "a.sqlite3"
    log = filled(path)
    log.update(2, provider="second")
    db = raw(path)
    db.execute("UPDATE sends SET id = -1 WHERE id = 2")
    db.execute("UPDATE sends SET id = 2 WHERE id = 3")
    db.execute("UPDATE sends SET id = 3 WHERE id = -1")
    found = {p.record_id for p in log.verify().problems}
    assert {2, 3} <= found


def test_an_altered_event_and_an_added_row_are_found(tmp_path):
    path = tmp_path / "a.sqlite3"
    log = filled(path)
    db = raw(path)
    db.execute("UPDATE events SET at = '2000-01-01' WHERE seq = 5")
    assert "altered" in str(log.verify().first)
    db.execute("UPDATE events SET at = (SELECT at FROM events WHERE seq = 6) WHERE seq = 5")
    db.execute("INSERT INTO sends (created_at, updated_at, status, kind, doc_sha256, "
                "doc_norm_sha256) VALUES ('t', 't', 'done', 'send', 'a', 'b')")
    problems = [str(p) for p in log.verify().problems]
    assert any("record 5 has no chain events" in p for p in problems)


def test_two_writers_on_one_file_keep_one_chain(tmp_path):
    path = tmp_path / "a.sqlite3"
    a, b = AuditLog(path), AuditLog(path)      # the window and a CLI run
    for i in range(5):
        begin(a, i)
        rid = begin(b, 10 + i)
        a.update(rid, status="done")
    report = a.verify()
    assert report.ok and report.events == 15 and b.verify().head == report.head


def test_interrupted_records_are_chained(tmp_path, monkeypatch):
    from preflight.core.send import audit

    log = filled(tmp_path / "a.sqlite3", 1)
    rid = begin(log, 5)
    monkeypatch.setattr(audit, "_process_alive", lambda pid: False)   # its process died
    assert log.close_interrupted() == 1
    assert log.get(rid)["status"] == "interrupted"
    assert log.verify().ok and log.head()[0] == 5


# A log as Preflight wrote it before the chain existed (schema 3), never opened since.
_SCHEMA_3 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
INSERT INTO meta VALUES ('schema_version', '3');
CREATE TABLE sends (
    id INTEGER PRIMARY KEY AUTOINCREMENT, created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL, status TEXT NOT NULL, kind TEXT NOT NULL, provider TEXT,
    model TEXT, url TEXT, method TEXT, epsilon REAL, task TEXT, doc_sha256 TEXT NOT NULL,
    doc_norm_sha256 TEXT NOT NULL, doc_minhash TEXT, original_text TEXT, payload BLOB,
    input_tokens INTEGER, output_tokens INTEGER, token_method TEXT, cost_estimate REAL,
    cost REAL, predicted_utility REAL, realized_utility REAL, answer_raw TEXT,
    answer_restored TEXT, overrides TEXT, attempts INTEGER DEFAULT 0, delivered INTEGER,
    error TEXT, flow_pending INTEGER DEFAULT 0, requests TEXT, pid INTEGER,
    privacy_epsilon REAL);
"""


def old_log(path, n: int = 3) -> None:
    db = raw(path)
    db.executescript(_SCHEMA_3)
    for i in range(n):
        db.execute("INSERT INTO sends (created_at, updated_at, status, kind, provider, "
                   "doc_sha256, doc_norm_sha256, payload) VALUES ('2024-05-0%d', "
                   "'2024-05-0%d', 'done', 'send', 'acme', 'a%d', 'b%d', ?)" % (i + 1, i + 1,
                                                                                 i, i),
                   (b'{"n": %d}' % i,))
    db.close()


def test_an_old_log_is_adopted_once_and_sealed(tmp_path):
    path = tmp_path / "old.sqlite3"
    old_log(path)
    log = AuditLog(path)
    report = log.verify()
    assert report.ok and report.adopted == 3 and report.events == 3
    assert report.seal == "sealed"
    assert any("sealed as found" in note for note in report.notes)
    log.close()
    raw(path).execute("DELETE FROM events WHERE record_id = 2")
    again = AuditLog(path).verify()            # a later open does not launder it
    assert not again.ok and again.adopted == 2


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".json"])
def test_an_export_carries_the_chain_and_verifies(tmp_path, suffix):
    log = filled(tmp_path / "a.sqlite3")
    log.update(2, answer_restored="", error=None)
    out = tmp_path / f"audit{suffix}"
    assert log.export(out) == 4
    report = verify_export(out)
    assert report.ok, report.problems
    assert report.events == 13 and report.records == 4
    assert report.seal == "export" and "no seal" in report.cannot_detect[0]


def _edit_export(path, suffix: str, record_id: int, column: str, value) -> None:
    if suffix == ".csv":
        rows = list(csv.DictReader(path.open(encoding="utf-8", newline="")))
        for r in rows:
            if r["id"] == str(record_id):
                r[column] = value
        with path.open("w", encoding="utf-8", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        return
    lines = path.read_text(encoding="utf-8").splitlines()
    if suffix == ".json":
        rows = json.loads(lines and "\n".join(lines))
        next(r for r in rows if r["id"] == record_id)[column] = value
        path.write_text(json.dumps(rows), encoding="utf-8")
        return
    out = []
    for line in lines:
        obj = json.loads(line)
        if obj.get("id") == record_id:
            obj[column] = value
        out.append(json.dumps(obj))
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".json"])
def test_a_changed_export_is_found(tmp_path, suffix):
    log = filled(tmp_path / "a.sqlite3")
    out = tmp_path / f"audit{suffix}"
    log.export(out)
    _edit_export(out, suffix, 3, "model", "another-model")
    report = verify_export(out)
    assert not report.ok and report.first.record_id == 3


def test_a_record_removed_from_an_export_is_found(tmp_path):
    log = filled(tmp_path / "a.sqlite3")
    out = tmp_path / "audit.jsonl"
    log.export(out)
    lines = out.read_text(encoding="utf-8").splitlines()
    out.write_text("\n".join(lines[:2] + lines[3:]) + "\n", encoding="utf-8")
    report = verify_export(out)
    assert not report.ok and report.first.record_id == 2
    out.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")   # the last one
    assert "cut off" in str(verify_export(out).first)


@pytest.mark.parametrize("suffix,body", [
    (".json", "[" * 5000 + "]" * 5000),
    (".jsonl", "{}\n" + "[" * 5000 + "]" * 5000 + "\n"),
    (".json", "{not json"),
])
def test_an_unreadable_export_is_a_clear_input_error(tmp_path, suffix, body):
    # Nested too deeply for the parser, or not JSON at all: the user is told what to do.
    path = tmp_path / f"export{suffix}"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(InputError, match="not a readable Preflight audit export"):
        verify_export(path)


def test_a_schema_5_log_gains_the_conversation_columns_and_still_verifies(tmp_path,
                                                                          monkeypatch):
    """Records chained before ``conversation``/``turn`` existed verify after the upgrade;
    a value put into those columns of an old record afterwards is found."""
    from preflight.core.send import audit, audit_schema

    path = tmp_path / "a.sqlite3"
    old = tuple(c for c in audit._COLUMNS if c not in ("conversation", "turn"))
    with monkeypatch.context() as m:
        m.setattr(audit, "_COLUMNS", old)                # what schema 5 chained
        m.setattr(audit_schema, "SCHEMA_VERSION", 5)
        filled(path, 2).close()
    db = raw(path)
    for col in ("conversation", "turn"):
        db.execute(f"ALTER TABLE sends DROP COLUMN {col}")
    db.close()
    log = AuditLog(path)
    rid = begin(log, 9, conversation="c0ffee", turn=2)
    assert log.get(rid)["turn"] == 2 and log.get(1)["conversation"] is None
    report = log.verify()
    assert report.ok, report.problems
    out = tmp_path / "audit.csv"
    log.export(out)
    assert verify_export(out).ok
    log.close()
    raw(path).execute("UPDATE sends SET conversation = 'forged' WHERE id = 1")
    problems = AuditLog(path).verify().problems
    assert any("record 1 was changed (its conversation" in p.what for p in problems)
