"""Every fault keeps the answer: sends that share one profile take turns at the audit log
instead of crashing with "database is locked", and a log that cannot be written once the
provider has the text (held by another process, a full disk) never costs the user the
answer — it is shown, and the record (or a plain sentence) says what was not stored."""

from __future__ import annotations

import contextlib
import errno
import io
import sqlite3
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "send"))

from _fakes import FakeDetector, fake_mechanisms  # noqa: E402
from _loopback import CaptureServer, Reply  # noqa: E402
from _sessions import placeholder_plan, session_for  # noqa: E402

from preflight.core.config import ProviderSettings  # noqa: E402
from preflight.core.send import audit_events  # noqa: E402
from preflight.core.send.audit import AuditLog, AuditWriteError  # noqa: E402
from preflight.core.send.session import Confirmation  # noqa: E402

YES = Confirmation(confirmed=True, resend_acknowledged=True)
WORDS = ("The board approved the budget for the new plant in Porto; hiring starts in "
         "March and the first line should run by October.").split()


@pytest.fixture(autouse=True)
def _fake_mechanisms():
    with fake_mechanisms():
        yield


def _answer(n: int = 40) -> list[str]:
    return [WORDS[i % len(WORDS)] + " " for i in range(n)]


def _send(url: str, home: Path, memo: int, on_chunk=lambda text: None,
          **kw) -> tuple[object, str]:
    """One send from its own session and its own connection to the shared log (as a
    separate process would); returns (result, what the user was shown)."""
    session = session_for(ProviderSettings("loop", url, "m"), home)
    plan = placeholder_plan(session, text=f"Alice Martin sent memo {memo} about the plant.")
    shown: list[str] = []

    def show(text: str) -> None:
        shown.append(text)
        on_chunk(text)

    result = session.execute(plan, YES, learn=False, on_chunk=show, **kw)
    return result, "".join(shown)


def _hold_the_log(path: Path, start: threading.Event, seconds: float) -> threading.Event:
    """Another process's write transaction on the log, from ``start`` on, for longer than
    SQLite's own wait for the write lock (5 s here; 10 s before this was fixed). The event
    returned is set once it has held the log and let go."""
    released = threading.Event()

    def hold() -> None:
        start.wait(60)
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        time.sleep(seconds)
        other.execute("COMMIT")
        other.close()
        released.set()

    threading.Thread(target=hold, daemon=True).start()
    return released


def test_a_log_held_longer_than_any_busy_timeout_still_gets_the_answer(tmp_path):
    """Another process holds the log's write lock for 11 s (longer than SQLite's wait)
    from the first streamed word on: the answer streams and is shown whole, then
    recorded once the log is free."""
    first_word = threading.Event()
    released = _hold_the_log(tmp_path / "audit.sqlite3", first_word, 11)
    with CaptureServer() as srv:
        srv.default = Reply(deltas=_answer(30), delay=0.03)
        session = session_for(ProviderSettings("loop", srv.url, "m"), tmp_path)
        plan = placeholder_plan(session)
        shown: list[str] = []

        def on_chunk(text: str) -> None:
            shown.append(text)
            first_word.set()

        result = session.execute(plan, YES, learn=False, on_chunk=on_chunk)
    assert released.wait(60) and "".join(shown) == "".join(_answer(30))
    assert result.audit_error is None
    row = session.audit.get(result.record_id)
    assert row["status"] == "done" and row["answer_raw"] == "".join(_answer(30))
    assert session.audit.verify().ok


def test_fifty_parallel_sends_in_one_profile_all_show_and_record_their_answer(tmp_path):
    """Fifty sends share the log, and once the first answer streams another process keeps
    it busy past SQLite's own wait (without that, fifty threads never wait long enough to
    fail, even with no retry at all): every send still shows and records its answer."""
    first_word = threading.Event()
    released = _hold_the_log(tmp_path / "audit.sqlite3", first_word, 11)
    with CaptureServer() as srv:
        srv.default = Reply(deltas=_answer(25), delay=0.01)
        results: dict[int, tuple[object, str]] = {}
        errors: dict[int, BaseException] = {}

        def run(i: int) -> None:
            try:
                results[i] = _send(srv.url, tmp_path, i, on_chunk=lambda _: first_word.set())
            except BaseException as exc:  # noqa: BLE001 - the test reports it
                errors[i] = exc

        threads = [threading.Thread(target=run, args=(i,)) for i in range(50)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(240)
    assert released.wait(60) and not errors, {i: repr(e) for i, e in list(errors.items())[:3]}
    whole = "".join(_answer(25))
    assert all(shown == whole and getattr(r, "audit_error", None) is None
               for r, shown in results.values())
    log = AuditLog(tmp_path / "audit.sqlite3")
    rows = log.records()
    assert len(rows) == 50 and {r["status"] for r in rows} == {"done"}
    assert all(r["answer_raw"] == whole for r in rows)
    assert log.verify().ok


def _disk_fills_after_begin(monkeypatch, room: int = 0) -> None:
    """The disk fills up once the record is written: from then on the log grows by
    ``room`` pages at most (SQLite's own "database or disk is full", as on a full disk)."""
    real = AuditLog.begin

    def begin(self, **kw):
        rid = real(self, **kw)
        with self._lock:
            pages = self._db.execute("PRAGMA page_count").fetchone()[0]
            self._db.execute(f"PRAGMA max_page_count = {pages + room}")
        return rid

    monkeypatch.setattr(AuditLog, "begin", begin)


@pytest.mark.parametrize("room, record_says", [(0, False), (2, True)])
def test_a_full_disk_while_the_answer_streams_shows_the_answer(tmp_path, monkeypatch, room,
                                                               record_says):
    """No room at all: the user is told the record stays incomplete; room for a short
    write but not the answer: the record itself says its answer could not be stored."""
    _disk_fills_after_begin(monkeypatch, room)
    long_answer = _answer(1500)                    # far more than the pages left
    with CaptureServer() as srv:
        srv.default = Reply(deltas=long_answer)
        result, shown = _send(srv.url, tmp_path, 1)
    assert shown == "".join(long_answer)
    assert result.answer == shown and "disk is full" in result.audit_error
    assert f"record {result.record_id}" in result.audit_error
    log = AuditLog(tmp_path / "audit.sqlite3")
    row = log.get(result.record_id)
    if record_says:
        assert "says so" in result.audit_error
        assert row["delivered"] == 1 and row["status"] == "done"
        assert "could not store it: the disk is full" in row["error"]
    else:
        assert "stays incomplete" in result.audit_error
    assert log.verify().ok                         # what was written is consistent


def test_an_io_error_after_delivery_keeps_the_answer(tmp_path, monkeypatch):
    """The write itself fails with ENOSPC (an OSError below SQLite) once streaming."""
    real = audit_events.append_event

    def append(db, record_id, kind, columns, *args, **kw):
        if "answer_raw" in columns and kind == "update":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(db, record_id, kind, columns, *args, **kw)

    monkeypatch.setattr(audit_events, "append_event", append)
    with CaptureServer() as srv:
        srv.default = Reply(deltas=_answer(20))
        result, shown = _send(srv.url, tmp_path, 2)
    assert shown == "".join(_answer(20)) and "disk is full" in result.audit_error


def test_a_log_that_cannot_be_written_before_sending_sends_nothing(tmp_path, monkeypatch):
    def full(self, **kw):
        raise AuditWriteError.of(sqlite3.OperationalError("database or disk is full"),
                                 self.path)

    with CaptureServer() as srv:
        session = session_for(ProviderSettings("loop", srv.url, "m"), tmp_path)
        plan = placeholder_plan(session)
        monkeypatch.setattr(AuditLog, "begin", full)
        with pytest.raises(AuditWriteError, match="disk is full.*Nothing was sent"):
            session.execute(plan, YES, learn=False)
        assert srv.requests == []


class _LocalModel:
    """A local model that answers with many distinct sentences (no loop to stop)."""

    ANSWER = " ".join(f"Step {i} of the Porto plant plan is on schedule." for i in range(80))

    def run(self, task, text, on_token=None, cancel=None) -> str:
        for word in self.ANSWER.split(" "):
            if on_token:
                on_token(word + " ")
        return self.ANSWER

    def perplexity(self, text: str) -> float:
        return 10.0


def test_keep_local_with_a_full_disk_keeps_the_local_answer(tmp_path, monkeypatch):
    _disk_fills_after_begin(monkeypatch)
    from preflight.core.config import Settings
    from preflight.core.send.session import SendSession

    session = SendSession(Settings(store_original_in_audit=True), detector=FakeDetector(),
                          audit=AuditLog(tmp_path / "audit.sqlite3"), slm=_LocalModel())
    got = session.keep_local("Alice Martin's memo about the plant in Porto.")
    assert got.answer == _LocalModel.ANSWER
    assert got.audit_error and "disk is full" in got.audit_error


def test_the_cli_shows_the_whole_answer_and_says_the_log_is_full(tmp_path, monkeypatch,
                                                                  capsys):
    import keyring

    from _fakes import MemoryKeyring

    from preflight.app.services import Services
    from preflight.cli import main as cli

    monkeypatch.setattr(Services, "make_detector", lambda self, detection=None: FakeDetector())
    previous = keyring.get_keyring()
    keyring.set_keyring(MemoryKeyring())
    doc = tmp_path / "memo.txt"
    doc.write_text("Alice Martin asked Bob Stone to check the plant budget.", encoding="utf-8")
    long_answer = _answer(600)
    try:
        with CaptureServer() as srv:
            srv.default = Reply(deltas=long_answer)
            with contextlib.redirect_stdout(io.StringIO()):
                assert cli.main(["providers", "add", "loop", "--base-url", srv.url,
                                 "--model", "m-1"]) == 0
            _disk_fills_after_begin(monkeypatch)
            capsys.readouterr()
            code = cli.main(["send", str(doc), "--yes", "--no-learn"])
    finally:
        keyring.set_keyring(previous)
    out, err = capsys.readouterr()
    assert " ".join("".join(long_answer).split()) in " ".join(out.split())
    assert "internal error" not in err and "disk is full" in err
    assert code == AuditWriteError.exit_code
