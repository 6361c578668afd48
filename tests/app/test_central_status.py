"""The central audit store's background sync starts when the window asks for its state
(at window start), sends what an earlier session left queued, and says how it stands:
"in sync", or how many records wait and since when the store is unreachable. The sink is
a fake that keeps the :class:`CentralAuditSink` protocol (head / append / read / close)."""

from __future__ import annotations

import inspect
import os
import time
from pathlib import Path

from preflight.app.ops_status import central_audit_status
from preflight.app.services import Services
from preflight.app.window_doorway import WindowDoorway
from preflight.core.config import Settings
from preflight.core.send.audit import AuditLog, Fingerprint
from preflight.core.send.audit_chain import GENESIS
from preflight.core.send.audit_sync import CentralAuditSink, CentralUnavailableError


class MemorySink:
    """A central store in memory; ``down`` makes every call fail as an unreachable one."""

    def __init__(self) -> None:
        self.events: dict[str, list] = {}
        self.down = True

    def _check(self) -> None:
        if self.down:
            raise CentralUnavailableError("The central audit store db.test cannot be "
                                          "reached (connection refused).", "It retries.")

    def head(self, log_id: str) -> tuple[int, str]:
        self._check()
        got = self.events.get(log_id)
        return (got[-1].seq, got[-1].hash) if got else (0, GENESIS)

    def append(self, who, expected_head, events, records) -> None:
        self._check()
        self.events.setdefault(who.log_id, []).extend(events)

    def read(self, log_id: str):
        self._check()
        got = self.events.get(log_id, [])
        return list(got), [], self.head(log_id)

    def close(self) -> None:
        pass


def test_the_fake_sink_keeps_the_protocol():
    for name in ("head", "append", "read", "close"):
        want = list(inspect.signature(getattr(CentralAuditSink, name)).parameters)
        assert list(inspect.signature(getattr(MemorySink, name)).parameters) == want


def _wait(cond, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.02)


def test_queued_records_are_sent_at_start_and_the_state_is_told():
    Path(os.environ["PREFLIGHT_ORG_POLICY"]).write_text(
        'version = 1\n[audit.central]\nurl = "postgresql://u@db.test:5432/preflight"\n',
        encoding="utf-8")
    earlier = AuditLog()                    # a previous session: the store was down then
    for n in range(3):
        earlier.begin(kind="send", status="done", fingerprint=Fingerprint.of(f"doc {n}"),
                      provider="p", model="m", method="placeholder")
    earlier.close()
    sink = MemorySink()

    class Built(Services):
        def audit_sink(self):
            return sink

    services = Built(Settings())
    door = WindowDoorway(services=services)
    try:
        assert "audit_sync" not in services._built          # nothing runs before asked
        status = door.central_audit_status()                # the window's start asks
        assert status.where == "db.test:5432/preflight" and status.waiting == 3
        _wait(lambda: services.audit_sync().last_error is not None)
        status = door.central_audit_status()
        assert status.error and "cannot be reached" in status.error and status.waiting == 3
        assert status.failing_since is not None and not status.ok
        since = time.strftime("%H:%M", time.localtime(status.failing_since))
        assert f"3 record(s) waiting — store unreachable since {since}" in status.line

        sink.down = False                    # the store is back: the retry sends them
        services.audit_sync().wake()
        _wait(lambda: door.central_audit_status().ok)
        status = door.central_audit_status()
        assert status.waiting == 0 and status.failing_since is None
        assert status.line == "Central audit store (db.test:5432/preflight): in sync."
        log_id = services.audit().log_id
        assert [e.seq for e in sink.events[log_id]] == [1, 2, 3]
    finally:
        services.close()


def test_no_central_store_starts_nothing():
    services = Services(Settings())
    assert central_audit_status(services) is None
    assert "audit_sync" not in services._built and "audit" not in services._built
