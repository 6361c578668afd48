"""The ε ledger per document: every send of the same (or a near-duplicate) document adds
its d_X ε (sequential composition); the company may cap the total; old audit files stay
readable."""

from __future__ import annotations

import sqlite3
from dataclasses import replace

import pytest

from _fakes import FakePlaceholder, FakeVault
from preflight.core.types import DxReport, SanitizeReport
from preflight.core.org_policy import load_org_policy
from preflight.core.privacy.ledger import ledger_for, send_epsilon
from preflight.core.send.audit import AuditLog, Fingerprint
from preflight.core.send.session import Confirmation, SendBlocked
from test_session import DOC, make

RESEND = Confirmation(True, resend_acknowledged=True)


def _plan(session, text, eps):
    """A placeholder payload that says it carries d_X noise at ``eps`` (None: no d_X)."""
    det = session.detector.detect(text)
    out = FakePlaceholder(FakeVault()).sanitize(text, det, None)
    report = SanitizeReport(dx=DxReport(eps) if eps is not None else None)
    return session.prepare_send(text, "loop", "fake-placeholder", spans=det,
                                sanitized=replace(out, report=report), vault=FakeVault())


def _org(tmp_path, cap):
    path = tmp_path / "org.toml"
    path.write_text(f"max_document_epsilon = {cap}\n", encoding="utf-8")
    return load_org_policy(path)


def test_sends_of_one_document_add_their_epsilon(server, tmp_path):
    session = make(server, tmp_path)
    first = _plan(session, DOC, 30.0)
    assert (first.ledger.spent, first.ledger.this_send) == (0.0, 30.0)
    session.execute(first, Confirmation(True))
    plain = _plan(session, DOC.replace("Friday", "Thursday"), None)   # near-duplicate
    assert plain.ledger.prior_sends == 1 and plain.ledger.spent == 30.0
    assert plain.ledger.this_send == 0.0          # no d_X: adds nothing, still counted
    session.execute(plain, RESEND)
    third = _plan(session, DOC, 25.0)
    assert third.ledger.prior_sends == 2 and third.ledger.total == 55.0
    assert third.to_json()["epsilon_ledger"]["composition"] == "sequential"
    rows = session.audit.records()
    assert [r["privacy_epsilon"] for r in rows] == [30.0, 0.0]
    assert session.audit.document_epsilon(r["id"] for r in rows) == {
        rows[0]["id"]: 30.0, rows[1]["id"]: 30.0}


def test_company_cap_blocks_the_send_that_would_exceed_it(server, tmp_path):
    session = make(server, tmp_path, org_policy=_org(tmp_path, 50))
    session.execute(_plan(session, DOC, 30.0), Confirmation(True))
    over = _plan(session, DOC, 30.0)
    assert over.ledger.exceeds and over.ledger.limit == 50.0
    with pytest.raises(SendBlocked, match=r"to 60, above the limit of 50") as err:
        session.execute(over, RESEND)
    assert "ε ≤ 20" in err.value.hint
    assert len(server.requests) == 1
    session.execute(_plan(session, DOC, 20.0), RESEND)       # exactly at the cap: allowed
    session.execute(_plan(session, DOC, None), RESEND)       # no d_X: never blocked
    assert len(server.requests) == 3


def test_another_document_has_its_own_ledger(server, tmp_path):
    session = make(server, tmp_path, org_policy=_org(tmp_path, 50))
    session.execute(_plan(session, DOC, 40.0), Confirmation(True))
    other = _plan(session, "Carol Diaz wrote the minutes of the harbour committee meeting "
                           "about the new ferry timetable for the winter season.", 40.0)
    assert other.ledger.spent == 0.0 and not other.ledger.exceeds


def test_schema_2_file_opens_and_counts_its_recorded_epsilon(tmp_path):
    path = tmp_path / "audit.sqlite3"
    log = AuditLog(path)
    fp = Fingerprint.of(DOC)
    log.begin(kind="send", fingerprint=fp, status="done", method="dx-all", epsilon=12.0)
    log.close()
    db = sqlite3.connect(path)                 # make it look like a file written by schema 2
    db.execute("ALTER TABLE sends DROP COLUMN privacy_epsilon")
    db.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    log = AuditLog(path)
    [prior] = log.prior_sends(fp)
    assert prior.spent == 12.0                 # no privacy_epsilon: its ε is counted
    assert log.get(prior.record_id)["privacy_epsilon"] is None
    log.close()


def test_send_epsilon_is_the_d_x_epsilon_only():
    from preflight.core.types import SanitizedText

    assert send_epsilon(SanitizedText("x", "dx-all", (), SanitizeReport(dx=DxReport(60.0)))) == 60.0
    assert send_epsilon(SanitizedText("x", "identifiers", (), SanitizeReport(kept_spans=()))) == 0.0
    ledger = ledger_for([], 10.0, limit=5.0)
    assert ledger.exceeds and "budget" not in ledger.block_reason()[1]
