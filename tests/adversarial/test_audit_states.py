"""The audit log tells the truth about each send: a killed run's record is closed as
``interrupted`` (while a live run's is left alone), a body the provider refused is
``delivered``, and the sanitization seed is never written anywhere."""

from __future__ import annotations

import json
import os
import sqlite3
import struct
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "send"))

from _fakes import fake_mechanisms  # noqa: E402
from _loopback import CaptureServer, Reply  # noqa: E402
from _sessions import placeholder_plan, session_for  # noqa: E402

from preflight.core.config import ProviderSettings  # noqa: E402
from preflight.core.errors import ProviderError  # noqa: E402
from preflight.core.send.audit import AuditLog, Fingerprint  # noqa: E402
from preflight.core.send.session import Confirmation  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
@pytest.fixture(autouse=True)
def _fake_mechanisms():
    with fake_mechanisms():
        yield


YES = Confirmation(confirmed=True)
SEED = 918273645          # distinctive: its text and its integer bytes are searched for

# A process that opens a record as "streaming" and then dies (SIGKILL or os._exit),
# or waits on stdin (alive) until the test closes it.
_WRITER = """
import os, signal, sys
from preflight.core.send.audit import AuditLog, Fingerprint
log = AuditLog(sys.argv[1])
rid = log.begin(kind="send", status="sending", fingerprint=Fingerprint.of("doc text"),
                provider="p", payload=b"{}")
log.update(rid, status="streaming", delivered=1, answer_raw="partial")
print(rid, flush=True)
if sys.argv[2] == "die":
    os.kill(os.getpid(), signal.SIGKILL) if hasattr(signal, "SIGKILL") else os._exit(1)
sys.stdin.readline()
"""


def _writer(db: Path, mode: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "app"))
    return subprocess.Popen([sys.executable, "-c", _WRITER, str(db), mode], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def test_record_of_a_killed_run_is_interrupted_on_next_open(tmp_path):
    db = tmp_path / "audit.sqlite3"
    proc = _writer(db, "die")
    rid = int(proc.stdout.readline())
    proc.wait(timeout=30)
    raw = sqlite3.connect(db).execute("SELECT status FROM sends").fetchone()[0]
    assert raw == "streaming"                       # what the killed run left behind

    log = AuditLog(db)
    row = log.get(rid)
    assert row["status"] == "interrupted" and row["answer_raw"] == "partial"
    assert "ended before the answer was complete" in row["error"]
    # It may have reached the provider: the ledger still counts it.
    assert [p.record_id for p in log.prior_sends(Fingerprint.of("doc text"))] == [rid]


def test_record_of_a_live_run_is_left_open(tmp_path):
    db = tmp_path / "audit.sqlite3"
    proc = _writer(db, "wait")
    try:
        rid = int(proc.stdout.readline())
        assert AuditLog(db).get(rid)["status"] == "streaming"   # another process: alive
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    assert AuditLog(db).get(rid)["status"] == "interrupted"     # gone now


def test_record_of_this_process_is_left_open(tmp_path):
    first = AuditLog(tmp_path / "a.sqlite3")
    rid = first.begin(kind="send", status="streaming", fingerprint=Fingerprint.of("d"))
    assert AuditLog(tmp_path / "a.sqlite3").get(rid)["status"] == "streaming"


@pytest.mark.parametrize("status", [400, 404, 413])
def test_refused_body_is_audited_as_delivered_and_rejected(tmp_path, status):
    with CaptureServer() as srv:
        srv.script(Reply(status=status, body=b'{"error": {"message": "no"}}'))
        session = session_for(ProviderSettings("loop", srv.url, "m"), tmp_path)
        plan = placeholder_plan(session)
        with pytest.raises(ProviderError):
            session.execute(plan, YES)
        assert len(srv.requests) == 1
    (row,) = session.audit.records()
    assert row["status"] == "rejected" and row["delivered"] == 1
    assert f"delivered, rejected by the provider (HTTP {status})" in row["error"]
    assert [p.record_id for p in session.audit.prior_sends(plan.fingerprint)] == [row["id"]]


def _seed_forms() -> list[bytes]:
    return [str(SEED).encode(), struct.pack(">i", SEED), struct.pack(">q", SEED),
            struct.pack("<i", SEED), struct.pack("<q", SEED)]


def _db_bytes(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in (db, db.with_name(db.name + "-wal"))
                    if p.exists())


def test_seed_never_reaches_the_audit_log_or_exports(tmp_path):
    with CaptureServer() as srv:
        session = session_for(ProviderSettings("loop", srv.url, "m"), tmp_path)
        plan = placeholder_plan(session, seed=SEED)
        assert plan.seed == SEED                    # the plan has it, in memory only
        session.execute(plan, YES, learn=False)
    assert str(SEED) not in json.dumps(plan.to_json())
    db = tmp_path / "audit.sqlite3"
    data = _db_bytes(db)
    assert plan.payload in data                     # the record is there...
    for form in _seed_forms():
        assert form not in data                     # ...but not the seed, in any form
    for name in ("export.json", "export.csv"):
        session.audit.export(tmp_path / name)
        text = (tmp_path / name).read_text(encoding="utf-8")
        assert str(SEED) not in text
    header = (tmp_path / "export.csv").read_text(encoding="utf-8").splitlines()[0]
    assert "seed" not in header.split(",")
    exported = json.loads((tmp_path / "export.json").read_text(encoding="utf-8"))
    assert "seed" not in exported[0]


def test_seeds_of_an_old_log_are_scrubbed_on_open(tmp_path):
    db = tmp_path / "old.sqlite3"
    con = sqlite3.connect(db)
    con.executescript("""
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
        INSERT INTO meta VALUES ('schema_version', '1');
        CREATE TABLE sends (
            id INTEGER PRIMARY KEY AUTOINCREMENT, created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL, status TEXT NOT NULL, kind TEXT NOT NULL,
            provider TEXT, model TEXT, url TEXT, method TEXT, epsilon REAL, seed INTEGER,
            task TEXT, doc_sha256 TEXT NOT NULL, doc_norm_sha256 TEXT NOT NULL,
            doc_minhash TEXT, original_text TEXT, payload BLOB, input_tokens INTEGER,
            output_tokens INTEGER, token_method TEXT, cost_estimate REAL, cost REAL,
            predicted_utility REAL, realized_utility REAL, answer_raw TEXT,
            answer_restored TEXT, overrides TEXT, attempts INTEGER DEFAULT 0,
            delivered INTEGER, error TEXT, flow_pending INTEGER DEFAULT 0);
    """)
    con.execute("INSERT INTO sends (created_at, updated_at, status, kind, seed, doc_sha256, "
                "doc_norm_sha256) VALUES ('t', 't', 'done', 'send', ?, 'a', 'b')", (SEED,))
    con.commit()
    con.close()
    assert any(form in db.read_bytes() for form in _seed_forms())

    log = AuditLog(db)
    (row,) = log.records()
    assert "seed" not in row and row["status"] == "done"   # old rows still read
    log.close()
    data = _db_bytes(db)
    for form in _seed_forms():
        assert form not in data
