"""The audit log's SQLite file: opened only when it is what it claims, and written under
contention without failing.

**The file.** ``audit.sqlite3`` and the files SQLite opens beside it by name (``-wal``,
``-shm``, ``-journal``) must be absent or regular files: a symbolic link, FIFO or device
is refused before SQLite opens anything, and no mode is ever changed through a path
(:func:`preflight.core.fsutil.private_file`: created 0600 with ``O_EXCL | O_NOFOLLOW``,
an existing file narrowed with ``fchmod`` on its own descriptor). SQLite creates its
``-wal`` and ``-shm`` with the database file's mode. After the open, the path must still
be the file that was checked.

**Writes.** Several Preflight processes (the window and CLI runs, or many sends at once)
share one log. SQLite allows one writer at a time: each write is one ``BEGIN IMMEDIATE``
transaction that waits up to :data:`BUSY_TIMEOUT_S` for the lock, and is tried again with
a growing, jittered pause until :data:`WRITE_BUDGET_S` has passed. A write that must not
hold anything up (a streaming checkpoint) tries once for :data:`QUICK_WAIT_S`. What
still fails is an :class:`AuditWriteError` whose message says why in the user's words
(the disk is full, the log is read-only, it stayed busy).
"""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from pathlib import Path
from typing import Callable, TypeVar

from preflight.core import fsutil
from preflight.core.errors import ConfigError, PreflightError

T = TypeVar("T")

BUSY_TIMEOUT_S = 5.0     # SQLite's own wait for the write lock, per try
WRITE_BUDGET_S = 90.0    # how long a write keeps trying while other processes hold the log
QUICK_WAIT_S = 0.05      # a best-effort write waits this long, once
COMPANIONS = ("-wal", "-shm", "-journal")


class AuditWriteError(PreflightError):
    """The audit log could not be written (disk full, read-only, busy for too long)."""

    exit_code = 74           # EX_IOERR: the machine, not Preflight
    damaged = False          # the file is not (or no longer) a readable database
    reason = ""              # why, in a few words ("the disk is full")

    @classmethod
    def of(cls, exc: BaseException, path: Path) -> "AuditWriteError":
        if isinstance(exc, sqlite3.DatabaseError) and not isinstance(
                exc, sqlite3.OperationalError):
            err = cls(f"The audit log {path} is damaged ({exc}).",
                      "Move the damaged file away; Preflight creates a new one.")
            err.damaged, err.reason = True, f"it is damaged: {exc}"
            return err
        text = str(exc).lower()
        errno_ = getattr(exc, "errno", None)
        if "full" in text or errno_ in (28, 122):          # ENOSPC, EDQUOT
            why, hint = "the disk is full", "Free some space on that disk."
        elif is_busy(exc):
            why = (f"another Preflight window or command kept it busy for over "
                   f"{WRITE_BUDGET_S:.0f} s")
            hint = "Close the other one (or wait for it) and try again."
        elif "readonly" in text or "read-only" in text or errno_ in (13, 1, 30):
            why, hint = "it is read-only", "Make the file and its folder writable."
        elif "i/o" in text or errno_ == 5:
            why, hint = "a disk error", "Check the disk; move the log away if it is damaged."
        else:
            why, hint = str(exc) or type(exc).__name__, "Check the disk and try again."
        err = cls(f"The audit log {path} could not be written ({why}).", hint)
        err.reason = why
        return err


def is_busy(exc: BaseException) -> bool:
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc).lower()
    return (name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED"))
            or "database is locked" in text or "database is busy" in text)


def open_db(path: Path) -> sqlite3.Connection:
    """Check ``path`` (module doc) and open it in WAL mode; ConfigError when it is not a
    file Preflight may use."""
    try:
        identity = fsutil.private_file(path, companions=COMPANIONS)
    except fsutil.NotARegularFile as exc:
        raise ConfigError(f"The audit log {exc.filename} is {exc.kind}; Preflight only "
                          "opens a plain file of its own.",
                          "Move it away (Preflight then starts a new log), or ask your IT "
                          "administrator.") from None
    except OSError as exc:
        raise ConfigError(f"The audit log {path} cannot be created or opened "
                          f"({exc.strerror or exc}).",
                          "Check the permissions of its folder, or set PREFLIGHT_HOME to a "
                          "writable folder.") from None
    db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None,
                         timeout=BUSY_TIMEOUT_S)
    if not fsutil.same_file(path, identity):
        db.close()
        raise ConfigError(f"The audit log {path} was replaced while it was being opened.",
                          "Try again; if it happens again, ask your IT administrator.")
    try:
        retry(lambda: db.execute("PRAGMA journal_mode=WAL"), path)
        db.execute("PRAGMA synchronous=FULL")
        # Deleted or overwritten values (a scrubbed seed) are zeroed on disk, not left in
        # free pages.
        db.execute("PRAGMA secure_delete=ON")
    except sqlite3.Error as exc:
        db.close()
        raise open_error(AuditWriteError.of(exc, path), path) from None
    return db


def open_error(err: AuditWriteError, path: Path) -> PreflightError:
    """What an open that failed says: a damaged file is named as such."""
    if err.damaged:
        return ConfigError(f"The audit log {path} cannot be opened (it is damaged).",
                           err.hint)
    return err


def retry(work: Callable[[], T], path: Path, budget: float = WRITE_BUDGET_S) -> T:
    """``work()``, tried again while the log is busy (module doc)."""
    deadline = time.monotonic() + budget
    pause = 0.02
    while True:
        try:
            return work()
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause * (0.5 + random.random()))   # jitter: waiters do not collide
        pause = min(pause * 2, 1.0)


class Writer:
    """Runs write transactions on one connection: one at a time in this process (a
    lock), one at a time across processes (SQLite's write lock), tried again while busy."""

    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self.db, self.path = db, path
        self.lock = threading.Lock()

    def run(self, work: Callable[[], T], *, quick: bool = False) -> T:
        """``work()`` inside ``BEGIN IMMEDIATE`` … ``COMMIT``; :class:`AuditWriteError`
        when it cannot be written (``quick``: one short try)."""
        def once() -> T:
            with self.lock:
                if quick:
                    self.db.execute(f"PRAGMA busy_timeout = {int(QUICK_WAIT_S * 1000)}")
                try:
                    self.db.execute("BEGIN IMMEDIATE")
                    try:
                        out = work()
                        self.db.execute("COMMIT")
                    except BaseException:
                        _rollback(self.db)
                        raise
                    return out
                finally:
                    if quick:
                        self.db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")

        try:
            return once() if quick else retry(once, self.path)
        except (sqlite3.Error, OSError) as exc:
            raise AuditWriteError.of(exc, self.path) from None


def _rollback(db: sqlite3.Connection) -> None:
    try:
        db.execute("ROLLBACK")
    except sqlite3.Error:
        pass            # SQLite already rolled back (a full disk does that)
