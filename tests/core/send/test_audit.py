"""Audit log: durable records, exports, and the same-document ledger."""

from __future__ import annotations

import csv
import json
import sqlite3

import pytest

from preflight.core.errors import InputError
from preflight.core.send.audit import AuditLog, Fingerprint, minhash, normalize

DOC = ("Alice Martin met the board in Lyon on Monday to discuss the merger with "
       "Northwind; the vote is planned for March and the press release follows.")


def begin(log: AuditLog, text: str = DOC, **kw) -> int:
    args = dict(kind="send", status="sending", fingerprint=Fingerprint.of(text),
                provider="p", model="m", method="placeholder", payload=b'{"x": 1}')
    args.update(kw)
    return log.begin(**args)


def test_wal_mode_and_record_roundtrip(tmp_path):
    log = AuditLog(tmp_path / "a.sqlite3")
    rid = begin(log, epsilon=None, input_tokens=10, cost_estimate=0.1)
    log.update(rid, status="done", answer_raw="<PERSON_1> met", answer_restored="Alice met",
               output_tokens=3, cost=0.01, realized_utility=0.8)
    row = log.get(rid)
    assert row["status"] == "done" and row["payload"] == b'{"x": 1}'
    assert row["original_text"] is None            # not stored without opt-in
    assert row["doc_sha256"] == Fingerprint.of(DOC).sha256
    mode = sqlite3.connect(tmp_path / "a.sqlite3").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_record_is_visible_to_another_connection_immediately(tmp_path):
    log = AuditLog(tmp_path / "a.sqlite3")
    rid = begin(log)
    other = sqlite3.connect(tmp_path / "a.sqlite3")
    assert other.execute("SELECT status FROM sends WHERE id=?", (rid,)).fetchone() == ("sending",)


def test_update_refuses_immutable_fields(tmp_path):
    log = AuditLog(tmp_path / "a.sqlite3")
    rid = begin(log)
    with pytest.raises(ValueError):
        log.update(rid, payload=b"changed")


def test_default_location_is_data_dir(tmp_path, monkeypatch):
    from preflight.core import paths

    assert AuditLog().path == paths.data_dir() / "audit.sqlite3"


@pytest.mark.parametrize("suffix", [".csv", ".json"])
def test_export(tmp_path, suffix):
    log = AuditLog(tmp_path / "a.sqlite3")
    rid = begin(log, payload='{"t": "café"}'.encode())
    log.update(rid, status="done", answer_restored="ok")
    out = tmp_path / f"audit{suffix}"
    assert log.export(out) == 1
    if suffix == ".json":
        rows = json.loads(out.read_text(encoding="utf-8"))
    else:
        rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert rows[0]["payload"] == '{"t": "café"}' and rows[0]["status"] == "done"
    assert "doc_minhash" not in rows[0]


def test_export_refuses_unknown_format(tmp_path):
    with pytest.raises(InputError, match=".csv, .jsonl or .json"):
        AuditLog(tmp_path / "a.sqlite3").export(tmp_path / "x.xlsx")


def test_normalize_folds_case_and_whitespace():
    assert normalize("Hello\r\n  WORLD\t!") == "hello world !"


def test_ledger_exact_normalized_near_and_unrelated(tmp_path):
    log = AuditLog(tmp_path / "a.sqlite3")
    first = begin(log)
    assert [p.match for p in log.prior_sends(Fingerprint.of(DOC))] == ["exact"]
    rewrapped = DOC.replace(" the ", "\n the ").upper()
    assert [p.match for p in log.prior_sends(Fingerprint.of(rewrapped))] == ["normalized"]
    edited = DOC.replace("Monday", "Tuesday")
    near = log.prior_sends(Fingerprint.of(edited))
    assert [p.match for p in near] == ["near"] and 0.6 <= near[0].similarity < 1
    other = "The cafeteria menu changes next week: soup on Monday, fish on Friday, pasta daily."
    assert log.prior_sends(Fingerprint.of(other)) == []
    assert log.prior_sends(Fingerprint.of(DOC), exclude_id=first) == []


def test_ledger_ignores_local_answers_and_sends_that_never_left(tmp_path):
    log = AuditLog(tmp_path / "a.sqlite3")
    begin(log, kind="local", status="local")
    rid = begin(log)
    log.update(rid, status="failed", delivered=0)
    assert log.prior_sends(Fingerprint.of(DOC)) == []
    rid2 = begin(log)
    log.update(rid2, status="failed")            # unknown delivery counts as sent
    assert len(log.prior_sends(Fingerprint.of(DOC))) == 1


def test_short_documents_use_hashes_only():
    assert minhash(normalize("too short to shingle")) == ()


def test_damaged_database_is_a_clear_error(tmp_path):
    bad = tmp_path / "a.sqlite3"
    bad.write_bytes(b"this is not a database" * 100)
    from preflight.core.errors import ConfigError

    with pytest.raises(ConfigError, match="cannot be opened"):
        AuditLog(bad)
