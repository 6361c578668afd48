"""`preflight audit verify|sync|status|schema` and `history --export` with the chain."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path

import pytest

from preflight.cli.main import main
from preflight.core import paths
from preflight.core.send.audit import AuditLog, Fingerprint

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))


def _log(n: int = 3) -> AuditLog:
    log = AuditLog()
    for i in range(n):
        rid = log.begin(kind="send", status="sending", fingerprint=Fingerprint.of(f"d{i}"),
                        provider="p", model="m", payload=b'{"a": 1}', epsilon=0.5)
        log.update(rid, status="done", answer_raw="ok", cost=0.25)
    return log


def test_verify_passes_then_names_the_changed_record(capsys):
    _log().close()
    assert main(["audit", "verify"]) == 0
    assert "intact (3 record(s), 6 event(s)" in capsys.readouterr().out
    db = sqlite3.connect(paths.data_dir() / "audit.sqlite3")
    db.execute("UPDATE sends SET cost = 0 WHERE id = 2")
    db.commit()
    assert main(["audit", "verify", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] is False and out["problems"][0]["record_id"] == 2
    assert main(["audit", "verify"]) == 1
    assert "BROKEN — record 2 was changed (its cost" in capsys.readouterr().err


def test_verify_a_copy_read_only_and_an_export(tmp_path, capsys):
    log = _log()
    log.close()
    copy = tmp_path / "copy.sqlite3"
    copy.write_bytes((paths.data_dir() / "audit.sqlite3").read_bytes())
    before = copy.read_bytes()
    assert main(["audit", "verify", "--db", str(copy)]) == 0
    assert copy.read_bytes() == before                 # an auditor's copy is not changed
    out = tmp_path / "audit.jsonl"
    assert main(["history", "--export", str(out)]) == 0
    assert main(["audit", "verify", "--export", str(out)]) == 0
    assert main(["audit", "verify", "--db", str(tmp_path / "none.sqlite3")]) == 2
    assert "There is no audit log" in capsys.readouterr().err


def test_sync_without_a_central_store_says_what_to_do(capsys):
    assert main(["audit", "sync"]) == 2
    err = capsys.readouterr().err
    assert "names no central audit store" in err and "Traceback" not in err
    assert main(["audit", "status"]) == 0
    assert "No central audit store" in capsys.readouterr().out


def test_schema_prints_the_central_tables(capsys):
    assert main(["audit", "schema"]) == 0
    sql = capsys.readouterr().out
    for table in ("preflight_audit_logs", "preflight_audit_events", "preflight_audit_records",
                  "preflight_audit_schema"):
        assert f"CREATE TABLE {table}" in sql


@pytest.fixture(scope="module")
def cluster():
    from _postgres import Cluster

    c = Cluster()
    yield c
    c.close()


@pytest.fixture
def central(cluster, monkeypatch):
    """A company policy naming the loopback server, its password in the named variable."""
    from _postgres import PASSWORD

    Path(os.environ["PREFLIGHT_ORG_POLICY"]).write_text(
        f'version = 1\n[audit.central]\nurl = "{cluster.url()}"\n'
        'password_env = "PF_TEST_AUDIT_PW"\nsslmode = "disable"\n', encoding="utf-8")
    monkeypatch.setenv("PF_TEST_AUDIT_PW", PASSWORD)
    return cluster


@pytest.mark.slow
def test_services_sync_in_the_background_and_flush_at_close(central):
    from preflight.app.services import build_services

    services = build_services()
    log = services.audit()
    rid = log.begin(kind="local", status="local", fingerprint=Fingerprint.of("x"))
    log.update(rid, answer_raw="a")
    log_id, head = log.log_id, log.head()
    services.close()                             # flushes what the job has not sent
    sink = services.audit_sink()
    assert sink.head(log_id) == head and head[0] == 2
    sink.close()


@pytest.mark.slow
def test_sync_status_and_central_verify_on_a_real_server(central, capsys):
    from _postgres import PASSWORD

    _log(4).close()
    assert main(["audit", "status"]) == 0
    assert "0 event(s); 8 waiting to be sent" in capsys.readouterr().out
    assert main(["audit", "sync"]) == 0
    assert "Sent 8 event(s) of 4 record(s)" in capsys.readouterr().out
    assert main(["audit", "verify", "--central"]) == 0
    assert "intact (4 record(s), 8 event(s)" in capsys.readouterr().out
    assert main(["audit", "sync", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["sent_events"] == 0
    central.kill()
    try:
        assert main(["audit", "sync"]) == 2
        err = capsys.readouterr().err
        assert "cannot be reached" in err and "stay queued" in err and PASSWORD not in err
    finally:
        central.start()




def _doc_script() -> str:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "DEPLOYMENT.md").read_text(
        encoding="utf-8")
    start = doc.index("```python", doc.index("standard-library script")) + len("```python")
    return doc[start:doc.index("```", start)]


def test_the_auditors_script_in_the_docs_verifies_an_export(tmp_path):
    import subprocess

    script = tmp_path / "verify.py"
    script.write_text(_doc_script(), encoding="utf-8")
    log = _log(3)
    log.update(2, overrides='["EMAIL_1"]', realized_utility=0.5)
    out = tmp_path / "audit.jsonl"
    log.export(out)

    def run() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-I", str(script), str(out)],
                              check=False, capture_output=True, text=True, timeout=60)
    ok = run()
    assert ok.returncode == 0 and ok.stdout.startswith("OK: 3 records, 7 events")
    lines = out.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[2])
    record["answer_raw"] = "edited"
    out.write_text("\n".join([lines[0], lines[1], json.dumps(record), lines[3]]) + "\n",
                   encoding="utf-8")
    bad = run()
    assert bad.returncode == 1 and "record 2 changed (answer_raw)" in bad.stdout
    out.write_text("\n".join(lines[:3]) + "\n", encoding="utf-8")   # record 3 left out
    assert "chain broken at event 7 (record 2)" in run().stdout      # its events 5-6 gone
    log.update(3, realized_utility=0.9)              # now record 3 holds the last event
    log.export(out, overwrite=True)
    lines = out.read_text(encoding="utf-8").splitlines()
    out.write_text("\n".join(lines[:3]) + "\n", encoding="utf-8")
    assert run().stdout.endswith("the export ends before the log's head: records are "
                                 "missing\n")
