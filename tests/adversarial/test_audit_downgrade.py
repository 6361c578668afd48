"""The audit chain has no downgrade path: whoever edits the log file — a few SQL statements,
or a script that recomputes every hash with the documented format — is found by `audit
verify`, whether the computer keeps the seal key in its keyring or (no keyring) in an
owner-only file; and `audit verify` says what it cannot see."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import sqlite3
import sys
from pathlib import Path

import keyring
import pytest
from keyring.backends import fail

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "send"))

from _fakes import MemoryKeyring  # noqa: E402

from preflight.cli import main as cli  # noqa: E402
from preflight.core import paths  # noqa: E402
from preflight.core.send.audit import AuditLog, Fingerprint  # noqa: E402

LETTERS = [
    "Dear Ms Okafor, the revised supplier contract for the Lagos warehouse is attached.",
    "Hi team, Thursday's stand-up moves to 10:30 because of the fire drill.",
    "Mr Lindqvist asked for the Q2 churn figures before the board call on Monday.",
    "Reminder: the travel policy now caps hotel nights at 180 EUR in Munich.",
]


@pytest.fixture(params=["keyring", "file"])
def seal_home(request):
    """Where the seal key lives: an OS keyring, or (none) the owner-only anchor file."""
    previous = keyring.get_keyring()
    backend = MemoryKeyring() if request.param == "keyring" else fail.Keyring()
    keyring.set_keyring(backend)
    yield request.param, backend
    keyring.set_keyring(previous)


def write_log(n: int = 4) -> Path:
    """The default log of this profile with ``n`` finished sends."""
    log = AuditLog()
    for i, text in enumerate(LETTERS[:n]):
        rid = log.begin(kind="send", status="sending", fingerprint=Fingerprint.of(text),
                        provider="acme", model="acme-large", method="placeholder",
                        payload=json.dumps({"messages": [text]}).encode())
        log.update(rid, status="streaming", delivered=1)
        log.update(rid, status="done", answer_raw=f"Summary {i}: noted.", cost=0.002)
    log.close()
    return log.path


def sql(path: Path, *statements: str) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    for statement in statements:
        db.execute(statement)
    db.close()


def cli_verify(*extra: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["audit", "verify", *extra])
    return code, out.getvalue() + err.getvalue()


# --- an attacker's script: the chain format of docs/DEPLOYMENT.md, nothing of Preflight's --

def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _canon(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def rewrite_and_rehash(path: Path, record: int, column: str, value: str) -> None:
    """Change one text value and recompute every event from the first one that chains
    it, so that the whole chain and the head are consistent again."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute(f"UPDATE sends SET {column} = ? WHERE id = ?", (value, record))
    events = db.execute("SELECT seq, record_id, at, kind, fields, prev, hash FROM events "
                        "ORDER BY seq").fetchall()
    prev = "0" * 64
    for seq, rid, at, kind, fields, _old_prev, _old_hash in events:
        fields = json.loads(fields)
        if rid == record and column in fields:
            fields[column] = _sha(_canon(value))
        body = _canon({"v": 1, "seq": seq, "record": rid, "at": at, "kind": kind,
                       "fields": fields, "prev": prev})
        digest = _sha(body)
        db.execute("UPDATE events SET fields = ?, prev = ?, hash = ? WHERE seq = ?",
                   (_canon(fields), prev, digest, seq))
        prev = digest
    db.execute("UPDATE meta SET value = ? WHERE key = 'chain_head'",
               (f"{events[-1][0]} {prev}",))
    db.close()


# --- the downgrade of the issue, and its thorough variants ---------------------------------

DOWNGRADES = {
    # the four statements of the report: edit, drop the chain, forget it, claim schema 3
    "four statements": ("UPDATE sends SET provider = 'elsewhere' WHERE id = 2",
                        "DROP TABLE events",
                        "DELETE FROM meta WHERE key != 'schema_version'",
                        "UPDATE meta SET value = '3' WHERE key = 'schema_version'"),
    # every trace of a chain and seal gone, as a genuine pre-chain file would look
    "every trace removed": ("UPDATE sends SET provider = 'elsewhere' WHERE id = 2",
                            "DROP TABLE events", "DROP TABLE seals", "DELETE FROM meta",
                            "INSERT INTO meta VALUES ('schema_version', '3')"),
}


@pytest.mark.parametrize("attack", list(DOWNGRADES))
def test_a_downgraded_log_is_not_adopted_and_verify_fails(seal_home, attack):
    path = write_log()
    sql(path, *DOWNGRADES[attack])
    report = AuditLog().verify()
    assert not report.ok and report.adopted == 0
    said = [str(p) for p in report.problems]
    assert any("chain was removed" in p for p in said)
    assert any(p.startswith("record 2 ") for p in said)
    code, out = cli_verify()
    assert code == 1 and "BROKEN" in out


def test_a_consistently_rehashed_edit_is_found_by_the_seal(seal_home):
    path = write_log()
    rewrite_and_rehash(path, 2, "provider", "elsewhere")
    report = AuditLog().verify()
    assert not report.ok
    assert report.first.record_id == 2 and "seal" in str(report.first)


def test_a_rehashed_edit_behind_a_lowered_schema_is_not_sealed_again(seal_home):
    path = write_log()
    rewrite_and_rehash(path, 3, "model", "cheap-model")
    sql(path, "DROP TABLE seals", "DELETE FROM meta WHERE key = 'seal_key_id'",
        "UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    report = AuditLog().verify()
    assert not report.ok
    said = [str(p) for p in report.problems]
    assert any("schema version lowered" in p for p in said)
    assert any(p.startswith("events 1-12 ") and "no valid seal" in p for p in said)


def test_later_sends_do_not_launder_a_forged_chain(seal_home):
    path = write_log()
    rewrite_and_rehash(path, 1, "provider", "elsewhere")
    log = AuditLog()
    rid = log.begin(kind="send", status="sending", fingerprint=Fingerprint.of("new memo"),
                    provider="acme", payload=b"{}")
    log.update(rid, status="done", answer_raw="ok")
    report = log.verify()
    assert not report.ok and report.first.record_id == 1
    assert all(p.record_id != rid for p in report.problems)


def test_the_seal_key_is_kept_outside_the_log_file(seal_home):
    where, backend = seal_home
    path = write_log()
    data = b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))
    if where == "keyring":
        (entry,) = [v for (s, _u), v in backend.store.items() if s == "preflight"]
        assert not (paths.config_dir() / "audit-anchors").exists()
    else:
        (file,) = (paths.config_dir() / "audit-anchors").iterdir()
        assert file.stat().st_mode & 0o077 == 0
        entry = file.read_text(encoding="utf-8")
    key = json.loads(entry)["key"]
    assert key.encode() not in data and __import__("base64").b64decode(key) not in data
    assert AuditLog().verify().seal == "sealed"


def test_a_removed_seal_key_is_reported(seal_home):
    where, backend = seal_home
    write_log()
    if where == "keyring":
        backend.store.clear()
    else:
        for file in (paths.config_dir() / "audit-anchors").iterdir():
            file.unlink()
    report = AuditLog().verify()
    assert not report.ok and "seal key" in str(report.problems[0])


def test_a_deleted_log_is_named_by_the_new_one(seal_home):
    path = write_log()
    old_id = AuditLog().log_id
    for p in path.parent.glob(path.name + "*"):
        p.unlink()
    log = AuditLog()
    assert log.replaced == (old_id,) and log.log_id != old_id
    report = log.verify()
    assert any(old_id in note and "deleted or emptied" in note for note in report.notes)


def cut_tail(path: Path, record: int) -> None:
    """Remove the newest record, its events and seals, and move every head inside the
    file back: the rest of the log stays consistent, every remaining seal valid."""
    db = sqlite3.connect(path, isolation_level=None)
    last = db.execute("SELECT min(seq) - 1 FROM events WHERE record_id = ?",
                      (record,)).fetchone()[0]
    digest = db.execute("SELECT hash FROM events WHERE seq = ?", (last,)).fetchone()[0]
    db.execute("DELETE FROM sends WHERE id >= ?", (record,))
    db.execute("DELETE FROM events WHERE seq > ?", (last,))
    db.execute("DELETE FROM seals WHERE seq > ?", (last,))
    db.execute("UPDATE meta SET value = ? WHERE key = 'chain_head'", (f"{last} {digest}",))
    db.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'sends'", (record - 1,))
    db.close()


def test_a_cut_off_tail_is_found_and_stays_found(seal_home):
    path = write_log(3)
    cut_tail(path, 3)
    # a copy-style check (read-only, nothing recorded yet) finds it against the record
    code, out = cli_verify("--db", str(path))
    assert code == 1 and "BROKEN" in out and "events 7-9 missing" in out
    code, out = cli_verify()
    assert code == 1 and "the end of the log was cut off" in out
    # later sends neither hide it nor trip over it
    log = AuditLog()
    rid = log.begin(kind="send", status="sending", fingerprint=Fingerprint.of("new memo"),
                    provider="acme", payload=b"{}")
    log.update(rid, status="done", answer_raw="ok")
    report = log.verify()
    said = [str(p) for p in report.problems]
    assert not report.ok and len(said) == 1 and "events 7-9 missing" in said[0]
    log.close()
    assert [str(p) for p in AuditLog().verify().problems] == said


def test_an_older_copy_put_back_is_found(seal_home, tmp_path):
    path = write_log(2)
    old = tmp_path / "backup.sqlite3"
    src, dst = sqlite3.connect(path), sqlite3.connect(old)
    src.backup(dst)
    src.close()
    dst.close()
    write_log(2)                               # two more sends after the backup
    for p in path.parent.glob(path.name + "*"):
        p.unlink()
    old.replace(path)
    report = AuditLog().verify()
    assert not report.ok and "events 7-12 missing" in str(report.problems[0])


def test_verify_says_what_it_still_cannot_detect(seal_home):
    write_log(2)
    code, out = cli_verify()
    assert code == 0 and "cuts off the newest records" in out
    assert "both put back from the same older backup" in out and "verify --central" in out
    code, out = cli_verify("--json")
    said = json.loads(out)
    assert said["seal"] == "sealed" and any("older backup" in s
                                            for s in said["cannot_detect"])


def test_a_copy_verified_elsewhere_says_its_seals_were_not_checked(seal_home, tmp_path):
    path = write_log(2)
    copy = tmp_path / "copy-from-laptop.sqlite3"
    src = sqlite3.connect(path)
    src.backup(sqlite3.connect(copy))
    code, out = cli_verify("--db", str(copy))
    assert code == 0 and "seals were not checked" in out
