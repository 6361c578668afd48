"""The central-store sync against an in-memory sink that keeps the protocol's promises
(all-or-nothing appends, a head check): order, exactly-once after lost replies and
concurrent senders, consistent record copies, divergence, retries, passwords."""

from __future__ import annotations

import inspect
import time

import pytest

from preflight.core.errors import ConfigError
from preflight.core.org_policy_audit import CentralAuditSettings
from preflight.core.send.audit import AuditLog, Fingerprint
from preflight.core.send.audit_chain import GENESIS, verify_chain
from preflight.core.send.audit_sync import (
    AuditSyncJob, CentralAuditSink, CentralDivergedError, CentralUnavailableError,
    HeadMovedError, central_password, sync_log,
)


class MemorySink:
    """A CentralAuditSink in memory. ``down`` refuses every call; ``lose_reply`` stores
    an append and then fails (the server committed, the answer never arrived)."""

    def __init__(self) -> None:
        self.events: dict[str, list] = {}
        self.records: dict[str, dict[int, dict]] = {}
        self.versions: dict[str, list[tuple[int, dict]]] = {}
        self.down = False
        self.lose_reply = False
        self.appends = 0

    def _check(self) -> None:
        if self.down:
            raise CentralUnavailableError("The central audit store cannot be reached.")

    def head(self, log_id: str) -> tuple[int, str]:
        self._check()
        evs = self.events.get(log_id)
        return (evs[-1].seq, evs[-1].hash) if evs else (0, GENESIS)

    def append(self, who, expected_head, events, records) -> None:
        self._check()
        if self.head(who.log_id) != tuple(expected_head):
            raise HeadMovedError()
        self.events.setdefault(who.log_id, []).extend(events)
        self.records.setdefault(who.log_id, {}).update({r["id"]: dict(r) for r in records})
        last_of = {e.record_id: e.seq for e in events}
        self.versions.setdefault(who.log_id, []).extend((last_of[r["id"]], dict(r))
                                                        for r in records)
        self.appends += 1
        if self.lose_reply:
            self.lose_reply = False
            raise CentralUnavailableError("connection lost after commit")

    def read(self, log_id: str):
        self._check()
        return (list(self.events.get(log_id, [])),
                [self.records[log_id][k] for k in sorted(self.records.get(log_id, {}))],
                self.head(log_id))

    def history(self, log_id: str):
        self._check()
        return sorted(self.versions.get(log_id, []), key=lambda v: (v[1]["id"], v[0]))

    def close(self) -> None:
        pass


@pytest.mark.parametrize("name", ["head", "append", "read", "history", "close"])
def test_the_fake_and_the_postgres_sink_match_the_protocol(name):
    from preflight.runtime.audit_pg import PgAuditSink

    want = list(inspect.signature(getattr(CentralAuditSink, name)).parameters)
    assert list(inspect.signature(getattr(MemorySink, name)).parameters) == want
    assert list(inspect.signature(getattr(PgAuditSink, name)).parameters) == want


def _send(log: AuditLog, n: int) -> int:
    rid = log.begin(kind="send", status="sending", fingerprint=Fingerprint.of(f"d{n}"),
                    provider="p", payload=b"{}")
    log.update(rid, status="done", answer_raw=f"a{n}")
    return rid


def _central_ok(sink: MemorySink, log: AuditLog) -> bool:
    events, rows, head = sink.read(log.log_id)
    return verify_chain(events, rows, expected_head=head).ok


def test_events_arrive_in_order_once_and_the_copy_verifies(tmp_path):
    log, sink = AuditLog(tmp_path / "a.sqlite3"), MemorySink()
    for n in range(5):
        _send(log, n)
    result = sync_log(log, sink, batch=3)
    assert (result.sent_events, result.pending) == (10, 0)
    assert [e.seq for e in sink.events[log.log_id]] == list(range(1, 11))
    assert _central_ok(sink, log) and log.synced_seq() == 10
    assert sync_log(log, sink).sent_events == 0


@pytest.mark.parametrize("tamper, said", [
    (lambda versions: versions[0][1].update(provider="elsewhere"),
     "record 1's version stored at event 2 was changed (its provider"),
    (lambda versions: versions.append((4, dict(versions[0][1]))),
     "the version stored at record 2 (event 4) names record 1"),
    (lambda versions: versions.append((40, dict(versions[-1][1]))),
     "version stored at event 40 has no such event"),
])
def test_every_stored_version_of_a_record_is_checked_against_the_events(tmp_path, tamper,
                                                                        said):
    log, sink = AuditLog(tmp_path / "a.sqlite3"), MemorySink()
    _send(log, 1)
    _send(log, 2)
    sync_log(log, sink)
    log.update(1, realized_utility=0.4)                 # a later change: a second version
    sync_log(log, sink)
    events, rows, head = sink.read(log.log_id)
    versions = sink.history(log.log_id)
    assert [(seq, r["id"]) for seq, r in versions] == [(2, 1), (5, 1), (4, 2)]
    assert verify_chain(events, rows, expected_head=head, versions=versions).ok
    tamper(versions)
    report = verify_chain(events, rows, expected_head=head, versions=versions)
    assert not report.ok and any(said in str(p) for p in report.problems)


def test_a_batch_never_splits_a_record_from_its_later_events(tmp_path):
    log, sink = AuditLog(tmp_path / "a.sqlite3"), MemorySink()
    a = log.begin(kind="send", status="sending", fingerprint=Fingerprint.of("a"))
    log.begin(kind="send", status="sending", fingerprint=Fingerprint.of("b"))
    log.update(a, status="done")
    appended = []
    real = sink.append
    sink.append = lambda who, head, events, records: (appended.append(len(events)),
                                                      real(who, head, events, records))
    sync_log(log, sink, batch=1)
    assert appended == [3]                 # record a's last event is the third
    assert _central_ok(sink, log)


def test_a_lost_reply_is_not_sent_twice(tmp_path):
    log, sink = AuditLog(tmp_path / "a.sqlite3"), MemorySink()
    _send(log, 1)
    sink.lose_reply = True
    with pytest.raises(CentralUnavailableError):
        sync_log(log, sink)
    _send(log, 2)
    assert sync_log(log, sink).sent_events == 2
    assert [e.seq for e in sink.events[log.log_id]] == [1, 2, 3, 4]


def test_two_processes_syncing_one_log_do_not_duplicate(tmp_path):
    path = tmp_path / "a.sqlite3"
    a, b, sink = AuditLog(path), AuditLog(path), MemorySink()
    _send(a, 1)
    stale = sink.head(a.log_id)
    sync_log(b, sink)                      # the other process got there first
    real_head = sink.head
    heads = iter([stale])
    sink.head = lambda log_id: next(heads, None) or real_head(log_id)
    _send(a, 2)
    assert sync_log(a, sink).sent_events == 2          # HeadMovedError → from the new head
    assert [e.seq for e in sink.events[a.log_id]] == [1, 2, 3, 4]


def test_a_central_copy_ahead_of_the_local_log_stops_the_sync(tmp_path):
    log, sink = AuditLog(tmp_path / "a.sqlite3"), MemorySink()
    _send(log, 1)
    sync_log(log, sink)
    sink.events[log.log_id][-1] = sink.events[log.log_id][-1].__class__(
        **{**sink.events[log.log_id][-1].__dict__, "hash": "f" * 64})
    with pytest.raises(CentralDivergedError, match="different event"):
        sync_log(log, sink)
    other = AuditLog(tmp_path / "b.sqlite3")
    sink.events[other.log_id] = sink.events[log.log_id]
    with pytest.raises(CentralDivergedError, match="ends before it"):
        sync_log(other, sink)


def test_the_job_retries_until_the_store_is_back_and_flushes_at_close(tmp_path):
    log, sink = AuditLog(tmp_path / "a.sqlite3"), MemorySink()
    sink.down = True
    job = AuditSyncJob(lambda deadline: sync_log(log, sink, deadline=deadline),
                       pauses=(0.05,))
    log._on_change = job.wake
    _send(log, 1)
    deadline = time.monotonic() + 5
    while job.last_error is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert "cannot be reached" in job.last_error
    sink.down = False
    while job.last_error is not None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert job.last_error is None and sink.head(log.log_id) == log.head()
    job.close(flush_s=0.5)
    _send(log, 2)                          # after close: no thread, nothing sent...
    time.sleep(0.2)
    assert sink.head(log.log_id)[0] == 2
    job.close(flush_s=0.5)                 # ...and a second close is a no-op


def test_the_password_comes_from_the_named_env_then_the_keyring():
    class Keys:
        def get(self, name):
            return {"audit-entry": "from-keyring"}.get(name)

    both = CentralAuditSettings("postgresql://u@h/db", password_env="PW",
                                password_keyring="audit-entry")
    assert central_password(both, Keys(), {"PW": "from-env"}) == "from-env"
    assert central_password(both, Keys(), {}) == "from-keyring"
    missing = CentralAuditSettings("postgresql://u@h/db", password_env="PW",
                                   password_keyring="other")
    with pytest.raises(ConfigError, match="variable PW or the keyring entry 'other'"):
        central_password(missing, Keys(), {})
    assert central_password(CentralAuditSettings("postgresql://u@h/db"), Keys(), {}) is None
