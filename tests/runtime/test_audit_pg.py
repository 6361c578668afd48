"""The central audit store on a real PostgreSQL (a throwaway cluster on loopback): records
arrive exactly once and in order across a server crash and restart, the central copy
verifies, and tampering with it is found."""

from __future__ import annotations

import time

import pytest

from _postgres import PASSWORD, Cluster
from preflight.core.errors import ConfigError
from preflight.core.org_policy_audit import CentralAuditSettings
from preflight.core.send.audit import AuditLog, Fingerprint
from preflight.core.send.audit_chain import verify_chain
from preflight.core.send.audit_sync import (
    AuditSyncJob, CentralDivergedError, CentralUnavailableError, central_password, sync_log,
)
from preflight.runtime.audit_pg import PgAuditSink

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster():
    c = Cluster()
    yield c
    c.close()


def _sink(cluster, db: str = "postgres", password: str | None = PASSWORD) -> PgAuditSink:
    settings = CentralAuditSettings(cluster.url(db), password_env="PF_AUDIT_PW",
                                    sslmode="disable")
    return PgAuditSink(settings, lambda: central_password(
        settings, keystore=None, environ={"PF_AUDIT_PW": password or ""}),
        connect_timeout=2)


def _send(log: AuditLog, n: int) -> int:
    rid = log.begin(kind="send", status="sending", fingerprint=Fingerprint.of(f"doc {n}"),
                    provider="p", model="m", method="placeholder", epsilon=1.0,
                    payload=f'{{"n": {n}}}'.encode())
    log.update(rid, status="streaming", delivered=1)
    log.update(rid, status="done", answer_raw=f"answer {n}", output_tokens=n, cost=0.001 * n)
    return rid


def _central_events(cluster, log_id: str) -> list[tuple[int, int]]:
    import psycopg

    with psycopg.connect(cluster.url(), password=PASSWORD) as conn:
        return conn.execute("SELECT seq, record_id FROM preflight_audit_events WHERE "
                            "log_id = %s ORDER BY received_at, seq", (log_id,)).fetchall()


def _sql(cluster, sql: str, log_id: str) -> None:
    """Tamper as a database administrator would: a superuser who sets the append-only
    triggers aside (no laptop login can)."""
    import psycopg

    sql = sql.replace("%s", "%(l)s")
    with psycopg.connect(cluster.url(), password=PASSWORD) as conn:
        conn.execute("SET session_replication_role = replica")
        for statement in sql.split("; "):
            conn.execute(statement, {"l": log_id})


def test_a_crash_and_restart_mid_series_loses_and_duplicates_nothing(cluster, tmp_path):
    log = AuditLog(tmp_path / "audit.sqlite3")
    sink = _sink(cluster)
    job = AuditSyncJob(lambda deadline: sync_log(log, sink, batch=4, deadline=deadline),
                       pauses=(0.2,))
    log._on_change = job.wake
    try:
        for n in range(1, 31):
            _send(log, n)
            if n == 10:
                _wait(lambda: sink.head(log.log_id)[0] == log.head()[0])
                cluster.kill()                       # the server dies mid-series
            if n == 20:
                assert job.last_error and "cannot be reached" in job.last_error
                cluster.start()                      # ...and comes back
            time.sleep(0.05)
        _wait(lambda: job.last is not None and job.last.head == log.head())
    finally:
        job.close(flush_s=5)
    events = _central_events(cluster, log.log_id)
    local = [(e.seq, e.record_id) for e in log.events()]
    assert len(local) == 90
    assert events == local                           # all, once, received in order
    central_events, rows, head = sink.read(log.log_id)
    assert [r["id"] for r in rows] == list(range(1, 31))
    assert verify_chain(central_events, rows, expected_head=head).ok
    assert log.verify().ok and log.synced_seq() == 90
    sink.close()


def _wait(cond, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError("timed out waiting for the sync")
        time.sleep(0.1)


def test_a_lost_local_marker_sends_nothing_twice(cluster, tmp_path):
    log = AuditLog(tmp_path / "audit.sqlite3")
    sink = _sink(cluster)
    for n in range(5):
        _send(log, n)
    first = sync_log(log, sink)
    assert (first.sent_events, first.sent_records, first.pending) == (15, 5, 0)
    log.set_synced_seq(0)              # killed between the server's commit and ours
    _send(log, 9)
    again = sync_log(log, sink)
    assert (again.sent_events, again.sent_records) == (3, 1)
    assert len(_central_events(cluster, log.log_id)) == 18
    sink.close()


@pytest.mark.parametrize("tamper, record", [
    ("UPDATE preflight_audit_records SET model = 'other' WHERE log_id = %s AND id = 2", 2),
    ("DELETE FROM preflight_audit_records WHERE log_id = %s AND id = 3", 3),
    (("UPDATE preflight_audit_records SET id = 3 - id + (CASE WHEN id = 1 THEN 10 ELSE 0 "
      "END) WHERE log_id = %(l)s AND id IN (1, 2); UPDATE preflight_audit_records SET id = 2 "
      "WHERE log_id = %(l)s AND id = 12"), 1),
])
def test_the_central_copy_verifies_and_tampering_is_found(cluster, tmp_path, tamper, record):
    log = AuditLog(tmp_path / "audit.sqlite3")
    sink = _sink(cluster)
    for n in range(4):
        _send(log, n)
    sync_log(log, sink)
    assert verify_chain(*sink.read(log.log_id)[:2], expected_head=sink.head(log.log_id)).ok
    _sql(cluster, tamper, log.log_id)
    events, rows, head = sink.read(log.log_id)
    report = verify_chain(events, rows, expected_head=head)
    assert not report.ok and report.first.record_id == record
    sink.close()


def test_reordered_central_events_are_found_and_stop_the_sync(cluster, tmp_path):
    log = AuditLog(tmp_path / "audit.sqlite3")
    sink = _sink(cluster)
    for n in range(3):
        _send(log, n)
    sync_log(log, sink)
    _sql(cluster, "; ".join(f"UPDATE preflight_audit_events SET seq = {b} WHERE log_id = %s "
                            f"AND seq = {a}" for a, b in ((4, -1), (7, 4), (-1, 7))),
         log.log_id)
    report = verify_chain(*sink.read(log.log_id)[:2], expected_head=sink.head(log.log_id))
    assert not report.ok and report.first.seq == 4
    _sql(cluster, "UPDATE preflight_audit_events SET hash = 'x' WHERE log_id = %s AND seq = 9",
         log.log_id)
    _send(log, 7)
    with pytest.raises(CentralDivergedError, match="different event"):
        sync_log(log, sink)
    sink.close()


def test_a_wrong_password_says_so_without_the_password(cluster, tmp_path):
    log = AuditLog(tmp_path / "audit.sqlite3")
    _send(log, 1)
    with pytest.raises(CentralUnavailableError) as err:
        sync_log(log, _sink(cluster, password="wrong-pw-123"))
    assert "password authentication failed" in str(err.value)
    assert "wrong-pw-123" not in str(err.value)
    with pytest.raises(ConfigError, match="PF_AUDIT_PW is empty"):
        sync_log(log, _sink(cluster, password=""))


def test_a_crash_inside_the_sending_transaction_keeps_nothing_of_it(cluster, tmp_path):
    """The server dies after the events of a batch were inserted, before its commit."""
    import threading

    import psycopg

    log = AuditLog(tmp_path / "audit.sqlite3")
    sink = _sink(cluster)
    _send(log, 1)
    sync_log(log, sink)                                  # tables exist, 3 events there
    for n in range(2, 6):
        _send(log, n)
    locker = psycopg.connect(cluster.url(), password=PASSWORD)
    locker.execute("LOCK TABLE preflight_audit_records IN ACCESS EXCLUSIVE MODE")
    failure: list[BaseException] = []
    worker = threading.Thread(target=lambda: _catch(failure, sync_log, log, sink))
    worker.start()
    _wait(lambda: locker.execute(                       # the events are in, the records wait
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'preflight-audit' "
        "AND wait_event_type = 'Lock'").fetchone()[0] == 1)
    cluster.kill()
    worker.join(30)
    cluster.start()
    assert failure and isinstance(failure[0], CentralUnavailableError)
    assert sink.head(log.log_id)[0] == 3                 # nothing of the batch was kept
    assert sync_log(log, sink).sent_events == 12
    assert [s for s, _ in _central_events(cluster, log.log_id)] == list(range(1, 16))
    assert verify_chain(*sink.read(log.log_id)[:2], expected_head=log.head()).ok
    sink.close()


def _catch(into: list, fn, *args) -> None:
    try:
        fn(*args)
    except BaseException as exc:  # noqa: BLE001 - the test inspects it
        into.append(exc)


# --- the store as IT sets it up: append-only for the laptops' login ----------------------

LAPTOP_PW = "laptop-ann-pw-5521"


def _admin(cluster, db: str = "postgres"):
    import psycopg

    return psycopg.connect(cluster.url(db), password=PASSWORD, autocommit=True)


@pytest.fixture(scope="module")
def company_store(cluster):
    """A database where IT applied `preflight audit schema` with its own login and made a
    laptop login that is only a member of the writer role it creates."""
    from preflight.runtime.audit_pg import WRITER_ROLE, schema_sql

    with _admin(cluster) as admin:
        admin.execute("CREATE DATABASE company")
    with _admin(cluster, "company") as admin:
        admin.execute(schema_sql())
        admin.execute(f"CREATE ROLE laptop_ann LOGIN PASSWORD '{LAPTOP_PW}' "
                      f"IN ROLE {WRITER_ROLE}")
    return "company"


def _laptop_sink(cluster, db: str) -> PgAuditSink:
    settings = CentralAuditSettings(cluster.url(db).replace("preflight_audit@", "laptop_ann@"),
                                    password_env="PF_AUDIT_PW", sslmode="disable")
    return PgAuditSink(settings, lambda: LAPTOP_PW, connect_timeout=2)


def _as_laptop(cluster, db: str):
    import psycopg

    url = cluster.url(db).replace("preflight_audit@", "laptop_ann@")
    return psycopg.connect(url, password=LAPTOP_PW, autocommit=True)


def test_a_laptop_login_with_select_and_insert_only_syncs_and_verifies(cluster, company_store,
                                                                        tmp_path):
    log = AuditLog(tmp_path / "audit.sqlite3")
    sink = _laptop_sink(cluster, company_store)
    for n in range(3):
        _send(log, n)
    assert sync_log(log, sink).sent_events == 9
    log.update(2, realized_utility=0.8, flow_pending=0)     # a later change: a new version
    assert sync_log(log, sink).sent_events == 1
    events, rows, head = sink.read(log.log_id)
    assert head == log.head() and rows[1]["realized_utility"] == 0.8
    assert [seq for seq, row in sink.history(log.log_id) if row["id"] == 2] == [6, 10]
    assert verify_chain(events, rows, expected_head=head,
                        versions=sink.history(log.log_id)).ok
    assert sink.may_rewrite() is False
    sink.close()


REWRITES = [
    "UPDATE preflight_audit_records SET provider = 'elsewhere' WHERE log_id = %s",
    "DELETE FROM preflight_audit_records WHERE log_id = %s",
    "UPDATE preflight_audit_events SET hash = 'x' WHERE log_id = %s",
    "DELETE FROM preflight_audit_events WHERE log_id = %s",
    "UPDATE preflight_audit_logs SET host = 'other' WHERE log_id = %s",
    "DELETE FROM preflight_audit_logs WHERE log_id = %s",
    "TRUNCATE preflight_audit_events",
    "DELETE FROM preflight_learning_pairs",
]


@pytest.mark.parametrize("extra_grant", [False, True], ids=["as-documented", "mis-granted"])
@pytest.mark.parametrize("statement", REWRITES)
def test_the_laptop_login_cannot_rewrite_the_central_copy(cluster, company_store, tmp_path,
                                                          statement, extra_grant):
    """Refused by rights as IT grants them, and by the triggers even when a login was
    granted UPDATE and DELETE by mistake (the old instructions granted UPDATE)."""
    import psycopg

    log = AuditLog(tmp_path / "audit.sqlite3")
    _send(log, 1)
    sync_log(log, _laptop_sink(cluster, company_store))
    if extra_grant:
        with _admin(cluster, company_store) as admin:
            admin.execute("GRANT UPDATE, DELETE, TRUNCATE ON ALL TABLES IN SCHEMA public "
                          "TO laptop_ann")
    try:
        with _as_laptop(cluster, company_store) as conn:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement, (log.log_id,) if "%s" in statement else None)
    finally:
        if extra_grant:
            with _admin(cluster, company_store) as admin:
                admin.execute("REVOKE UPDATE, DELETE, TRUNCATE ON ALL TABLES IN SCHEMA "
                              "public FROM laptop_ann")
    events, rows, head = _laptop_sink(cluster, company_store).read(log.log_id)
    assert rows[0]["provider"] == "p" and verify_chain(events, rows, expected_head=head).ok


def test_a_laptop_that_rewrites_its_log_no_longer_matches_the_store(cluster, company_store,
                                                                    tmp_path):
    """The laptop rewrites its (unsealed) log consistently; the store keeps what it
    received, the next sync stops, and the store's copy still verifies with the truth."""
    import hashlib
    import json
    import sqlite3

    path = tmp_path / "audit.sqlite3"
    log = AuditLog(path, secrets=None)
    sink = _laptop_sink(cluster, company_store)
    for n in range(2):
        _send(log, n)
    sync_log(log, sink)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("UPDATE sends SET provider = 'elsewhere' WHERE id = 1")
    prev = "0" * 64
    for seq, rid, at, kind, fields in db.execute(
            "SELECT seq, record_id, at, kind, fields FROM events ORDER BY seq").fetchall():
        fields = json.loads(fields)
        if rid == 1 and "provider" in fields:
            fields["provider"] = hashlib.sha256(b'"elsewhere"').hexdigest()
        body = json.dumps({"v": 1, "seq": seq, "record": rid, "at": at, "kind": kind,
                           "fields": fields, "prev": prev}, sort_keys=True,
                          separators=(",", ":"))
        digest = hashlib.sha256(body.encode()).hexdigest()
        db.execute("UPDATE events SET fields = ?, prev = ?, hash = ? WHERE seq = ?",
                   (json.dumps(fields, sort_keys=True, separators=(",", ":")), prev,
                    digest, seq))
        prev = digest
    db.execute("UPDATE meta SET value = ? WHERE key = 'chain_head'", (f"6 {prev}",))
    db.close()
    assert AuditLog(path, secrets=None).verify().ok      # the unsealed copy alone agrees
    _send(log, 7)
    with pytest.raises(CentralDivergedError, match="one of the copies was changed"):
        sync_log(log, sink)
    events, rows, head = sink.read(log.log_id)
    assert rows[0]["provider"] == "p"
    assert verify_chain(events, rows, expected_head=head,
                        versions=sink.history(log.log_id)).ok
    sink.close()


@pytest.mark.parametrize("at_seq, found", [(2, "was changed"), (99, "no such event")])
def test_a_version_a_laptop_inserts_is_found(cluster, company_store, tmp_path, at_seq,
                                              found):
    """INSERT is all a laptop may do: a forged "newer version" of a record does not match
    the events and `audit verify --central` names it."""
    from preflight.core.send.audit import _COLUMNS

    log = AuditLog(tmp_path / "audit.sqlite3")
    _send(log, 1)
    sink = _laptop_sink(cluster, company_store)
    sync_log(log, sink)
    row = dict(log.get(1), provider="elsewhere")
    with _as_laptop(cluster, company_store) as conn:
        conn.execute(f"INSERT INTO preflight_audit_records (log_id, at_seq, "
                     f"{', '.join(_COLUMNS)}) VALUES (%s, %s, "
                     f"{', '.join(['%s'] * len(_COLUMNS))})",
                     (log.log_id, at_seq, *(row[c] for c in _COLUMNS)))
    events, rows, head = sink.read(log.log_id)
    report = verify_chain(events, rows, expected_head=head, versions=sink.history(log.log_id))
    assert not report.ok and any(found in str(p) for p in report.problems)
    sink.close()


def test_a_schema_2_store_is_migrated_to_append_only(cluster, tmp_path):
    """A store an earlier Preflight filled (one row per record, updated in place) keeps
    its records, verifies, and refuses rewrites once migrated."""
    import psycopg

    from preflight.core.send.audit import _COLUMNS
    from preflight.core.send.audit_chain import canonical_json
    from preflight.runtime.audit_pg import MIGRATIONS, ensure_schema

    with _admin(cluster) as admin:
        admin.execute("CREATE DATABASE legacy")
    log = AuditLog(tmp_path / "audit.sqlite3")
    for n in range(3):
        _send(log, n)
    events, rows = log.pending(0, 1000)
    with _admin(cluster, "legacy") as admin:
        admin.execute("CREATE TABLE preflight_audit_schema (version integer NOT NULL)")
        for version, sql in MIGRATIONS[:2]:
            admin.execute(sql)
            admin.execute("INSERT INTO preflight_audit_schema VALUES (%s)", (version,))
        admin.execute("INSERT INTO preflight_audit_logs (log_id, host, os_user, head_seq, "
                      "head_hash) VALUES (%s, 'ann-laptop', 'ann', %s, %s)",
                      (log.log_id, events[-1].seq, events[-1].hash))
        for e in events:
            admin.execute("INSERT INTO preflight_audit_events (log_id, seq, record_id, at, "
                          "kind, fields, prev, hash) VALUES (%s,%s,%s,%s,%s,%s,%s,%s)",
                          (log.log_id, e.seq, e.record_id, e.at, e.kind,
                           canonical_json(e.fields), e.prev, e.hash))
        for r in rows:
            admin.execute(f"INSERT INTO preflight_audit_records (log_id, {', '.join(_COLUMNS)}) "
                          f"VALUES (%s, {', '.join(['%s'] * len(_COLUMNS))})",
                          (log.log_id, *(r[c] for c in _COLUMNS)))
        assert ensure_schema(admin) == 2
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            admin.execute("DELETE FROM preflight_audit_records")   # even the owner's login
    sink = _sink(cluster, "legacy")
    events_c, rows_c, head = sink.read(log.log_id)
    assert head == log.head() and len(rows_c) == 3
    assert verify_chain(events_c, rows_c, expected_head=head,
                        versions=sink.history(log.log_id)).ok
    _send(log, 5)
    assert sync_log(log, sink).sent_events == 3               # the sync goes on from there
    sink.close()
