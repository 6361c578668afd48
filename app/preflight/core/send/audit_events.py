"""The chain's storage in the SQLite audit log: the ``events`` table and the log's head.

Each function takes the log's open connection; the caller holds its lock and, for
:func:`append_event`, has begun the transaction that also writes the record (so a record
and its event are committed together or not at all). See
:mod:`preflight.core.send.audit_chain` for what an event is.
"""

from __future__ import annotations

import sqlite3
import uuid
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from preflight.core.errors import ConfigError
from preflight.core.send.audit_chain import (
    GENESIS, ChainEvent, VerifyReport, canonical_json, row_digests, verify_chain,
)

EVENTS_DDL = """
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY, record_id INTEGER NOT NULL, at TEXT NOT NULL,
    kind TEXT NOT NULL, fields TEXT NOT NULL, prev TEXT NOT NULL, hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_record ON events (record_id);
"""


def _meta(db: sqlite3.Connection, key: str) -> str | None:
    row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def _set_meta(db: sqlite3.Connection, key: str, value: str) -> None:
    db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))


def log_id(db: sqlite3.Connection) -> str:
    """This log's identity in the central store (made once, on first use)."""
    found = _meta(db, "log_id")
    if found is None:
        found = str(uuid.uuid4())
        db.execute("INSERT OR IGNORE INTO meta VALUES ('log_id', ?)", (found,))
        found = _meta(db, "log_id") or found
    return found


def head(db: sqlite3.Connection) -> tuple[int, str]:
    """The (seq, hash) the log recorded as its last event ((0, GENESIS): none)."""
    value = _meta(db, "chain_head")
    if not value:
        return 0, GENESIS
    seq, digest = value.split(" ", 1)
    return int(seq), digest


def append_event(db: sqlite3.Connection, record_id: int, kind: str,
                 columns: Iterable[str], all_columns: Sequence[str]) -> ChainEvent:
    """Chain the current values of ``columns`` of record ``record_id`` (read back from the
    table, so the digest is of what SQLite stored, after its type conversions)."""
    cols = list(dict.fromkeys(columns))
    row = db.execute(f"SELECT {', '.join(all_columns)} FROM sends WHERE id = ?",
                     (record_id,)).fetchone()
    values = dict(zip(all_columns, row))
    last = db.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
    seq, prev = (last[0] + 1, last[1]) if last else (1, GENESIS)
    at = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
    event = ChainEvent.make(seq, record_id, at, kind, row_digests(values, cols), prev)
    db.execute("INSERT INTO events VALUES (?,?,?,?,?,?,?)", _event_row(event))
    _set_meta(db, "chain_head", f"{event.seq} {event.hash}")
    return event


def _event_row(event: ChainEvent) -> tuple[Any, ...]:
    return (event.seq, event.record_id, event.at, event.kind, canonical_json(event.fields),
            event.prev, event.hash)


def adopt_all(db: sqlite3.Connection, all_columns: Sequence[str]) -> int:
    """Chain every record of a log written before the chain existed, as found now."""
    ids = [r[0] for r in db.execute(
        "SELECT id FROM sends WHERE id NOT IN (SELECT record_id FROM events) ORDER BY id")]
    for rid in ids:
        append_event(db, rid, "adopt", all_columns, all_columns)
    return len(ids)


def read_events(db: sqlite3.Connection, after: int = 0, limit: int | None = None
                ) -> list[ChainEvent]:
    sql = "SELECT seq, record_id, at, kind, fields, prev, hash FROM events WHERE seq > ? " \
          "ORDER BY seq"
    params: tuple[Any, ...] = (after,)
    if limit is not None:
        sql += " LIMIT ?"
        params += (limit,)
    return [ChainEvent.from_json(dict(zip(("seq", "record_id", "at", "kind", "fields",
                                           "prev", "hash"), row)))
            for row in db.execute(sql, params)]


def clean_cut(events: Sequence[ChainEvent], last_of: dict[int, int], size: int) -> int:
    """How many of ``events`` to send together so that no record they touch has a later
    event outside them (``last_of``: record → its last seq in the snapshot): the central
    copy of a record then always matches the events it has. At least ``size`` events when
    there are that many, more when a record's events run past it."""
    reach = 0
    for i, ev in enumerate(events):
        reach = max(reach, last_of.get(ev.record_id, ev.seq))
        if i + 1 >= size and reach <= ev.seq:
            return i + 1
    return len(events)


def synced_seq(db: sqlite3.Connection) -> int:
    """The last seq the central store confirmed (a cache for `audit status`)."""
    return int(_meta(db, "central_seq") or 0)


def set_synced_seq(db: sqlite3.Connection, seq: int) -> None:
    _set_meta(db, "central_seq", str(seq))


@contextmanager
def _snapshot(db: sqlite3.Connection) -> Iterator[None]:
    """One read transaction: every read inside sees the same state of the file."""
    db.execute("BEGIN")
    try:
        yield
    finally:
        db.execute("COMMIT")


def _rows(db: sqlite3.Connection, columns: Sequence[str], ids: Sequence[int] | None = None
          ) -> list[dict[str, Any]]:
    where = "" if ids is None else f" WHERE id IN ({','.join('?' * len(ids))})"
    cur = db.execute(f"SELECT {', '.join(columns)} FROM sends{where} ORDER BY id",
                     tuple(ids or ()))
    return [dict(zip(columns, r)) for r in cur]


def verify_db(db: sqlite3.Connection, columns: Sequence[str]) -> VerifyReport:
    with _snapshot(db):
        events, last, rows = read_events(db), head(db), _rows(db, columns)
    return verify_chain(events, rows, columns=columns, expected_head=last)


def verify_file(path: Path, columns: Sequence[str]) -> VerifyReport:
    """Verify the log file at ``path`` opened read-only."""
    if not path.is_file():
        raise ConfigError(f"There is no audit log at {path}.",
                          "Give the path of an audit.sqlite3 file.")
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True,
                             isolation_level=None)
        try:
            if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'events'"
                          ).fetchone() is None:
                raise ConfigError(f"The audit log {path} predates the hash chain.",
                                  "Open it once with this Preflight (its records are then "
                                  "chained as they are) and verify again.")
            return verify_db(db, columns)
        finally:
            db.close()
    except sqlite3.DatabaseError as exc:
        raise ConfigError(f"The audit log {path} cannot be read ({exc}).",
                          "Check that the file is a Preflight audit log.") from None


def pending(db: sqlite3.Connection, after: int, size: int, columns: Sequence[str]
            ) -> tuple[list[ChainEvent], list[dict[str, Any]]]:
    """The events after ``after`` and the records they touch, from one snapshot, cut
    (:func:`clean_cut`) where no touched record has a later event."""
    with _snapshot(db):
        events = read_events(db, after)
        last_of = {ev.record_id: ev.seq for ev in events}
        events = events[:clean_cut(events, last_of, size)]
        ids = sorted({ev.record_id for ev in events})
        rows = _rows(db, columns, ids) if ids else []
    return events, rows
