"""The chain's storage in the SQLite audit log: the ``events`` table, their ``seals``
and the log's head.

Each function takes the log's open connection; the caller holds its lock and, for
:func:`append_event`, has begun the transaction that also writes the record (so a record,
its event and the event's seal are committed together or not at all). See
:mod:`preflight.core.send.audit_chain` for what an event is and
:mod:`preflight.core.send.audit_seal` for its seal.
"""

from __future__ import annotations

import sqlite3
import uuid
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from preflight.core.errors import ConfigError
from preflight.core.send import audit_anchor, audit_seal
from preflight.core.send.audit_chain import (
    GENESIS, ChainEvent, Problem, VerifyReport, canonical_json, row_digests, verify_chain,
)

EVENTS_DDL = """
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY, record_id INTEGER NOT NULL, at TEXT NOT NULL,
    kind TEXT NOT NULL, fields TEXT NOT NULL, prev TEXT NOT NULL, hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_record ON events (record_id);
CREATE TABLE IF NOT EXISTS seals (seq INTEGER PRIMARY KEY, mac TEXT NOT NULL);
"""


def meta(db: sqlite3.Connection, key: str) -> str | None:
    row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def set_meta(db: sqlite3.Connection, key: str, value: str) -> None:
    db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))


def log_id(db: sqlite3.Connection) -> str:
    """This log's identity in the central store (made once, on first use)."""
    found = meta(db, "log_id")
    if found is None:
        found = str(uuid.uuid4())
        db.execute("INSERT OR IGNORE INTO meta VALUES ('log_id', ?)", (found,))
        found = meta(db, "log_id") or found
    return found


def head(db: sqlite3.Connection) -> tuple[int, str]:
    """The (seq, hash) the log recorded as its last event ((0, GENESIS): none)."""
    value = meta(db, "chain_head")
    if not value:
        return 0, GENESIS
    seq, digest = value.split(" ", 1)
    return int(seq), digest


def last_event(db: sqlite3.Connection) -> tuple[int, str]:
    """The (seq, hash) of the last event the ``events`` table holds ((0, ""): none)."""
    row = db.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
    return (int(row[0]), str(row[1])) if row else (0, "")


def hash_at(db: sqlite3.Connection, seq: int) -> str | None:
    row = db.execute("SELECT hash FROM events WHERE seq = ?", (seq,)).fetchone()
    return row[0] if row else None


def append_event(db: sqlite3.Connection, record_id: int, kind: str,
                 columns: Iterable[str], all_columns: Sequence[str],
                 key: bytes | None = None) -> ChainEvent:
    """Chain the current values of ``columns`` of record ``record_id`` (read back from the
    table, so the digest is of what SQLite stored, after its type conversions), sealed
    with ``key`` (None: not sealed)."""
    cols = list(dict.fromkeys(columns))
    row = db.execute(f"SELECT {', '.join(all_columns)} FROM sends WHERE id = ?",
                     (record_id,)).fetchone()
    values = dict(zip(all_columns, row))
    last = db.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
    seq, prev = (last[0] + 1, last[1]) if last else (1, GENESIS)
    at = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
    event = ChainEvent.make(seq, record_id, at, kind, row_digests(values, cols), prev)
    db.execute("INSERT INTO events VALUES (?,?,?,?,?,?,?)", _event_row(event))
    if key is not None:
        db.execute("INSERT OR REPLACE INTO seals VALUES (?, ?)",
                   (event.seq, audit_seal.seal(key, log_id(db), event.seq, event.hash)))
    set_meta(db, "chain_head", f"{event.seq} {event.hash}")
    return event


def _event_row(event: ChainEvent) -> tuple[Any, ...]:
    return (event.seq, event.record_id, event.at, event.kind, canonical_json(event.fields),
            event.prev, event.hash)


def seal_all(db: sqlite3.Connection, key: bytes, log: str) -> int:
    """Seal every event that has no seal, as found (an upgrade); returns how many."""
    rows = db.execute("SELECT seq, hash FROM events WHERE seq NOT IN (SELECT seq FROM seals)"
                      " ORDER BY seq").fetchall()
    db.executemany("INSERT INTO seals VALUES (?, ?)",
                   [(seq, audit_seal.seal(key, log, seq, digest)) for seq, digest in rows])
    return len(rows)


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
    return int(meta(db, "central_seq") or 0)


def set_synced_seq(db: sqlite3.Connection, seq: int) -> None:
    set_meta(db, "central_seq", str(seq))


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


def _seals(db: sqlite3.Connection) -> dict[int, str]:
    if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'seals'").fetchone() is None:
        return {}
    return dict(db.execute("SELECT seq, mac FROM seals").fetchall())


def verify_db(db: sqlite3.Connection, columns: Sequence[str],
              seal: audit_seal.SealState | None = None) -> VerifyReport:
    """Check the chain, the records and — with ``seal`` (the key, the outside record's
    head and losses: :mod:`.audit_anchor`) — every event's seal and the log's end; says
    what the check could not see. ``seal`` must be read before this snapshot is taken
    (the log then holds every head the record names, unless it was cut)."""
    with _snapshot(db):
        events, last, rows = read_events(db), head(db), _rows(db, columns)
        seals, found = _seals(db), {k: meta(db, k) for k in (
            "chain_removed", "sealed_as_found", "seal_key_id", "log_id")}
    report = verify_chain(events, rows, columns=columns, expected_head=last)
    extra: list[Problem] = []
    if found["chain_removed"]:
        extra.append(Problem(found["chain_removed"].split(": ", 1)[-1]))
    if seal is not None:
        extra += _record_problems(events, seal)
    if seal is not None and seal.key is not None:
        extra += audit_seal.check_seals(events, seals, seal.key, seal.log_id,
                                        seal.sealed_from)
        kind = "sealed"
    else:
        kind = "not checked" if found["seal_key_id"] else "unsealed"
    notes = []
    if found["sealed_as_found"]:
        count, _, when = found["sealed_as_found"].partition(" ")
        notes.append(f"{count} event(s) written before the seal existed were sealed as "
                     f"found on {when[:10]}.")
    notes += [x.note() for x in (seal.losses if seal is not None else ()) if x.whole]
    return replace(report, problems=tuple(extra) + report.problems, notes=tuple(notes),
                   seal=kind, cannot_detect=audit_seal.limits(
                       kind, seal.where if seal is not None else ""))


def _record_problems(events: Sequence[ChainEvent], seal: audit_seal.SealState
                     ) -> list[Problem]:
    """What the log's outside record says is wrong with it: the losses it kept, and a
    log that departs from the head it holds now."""
    out = [Problem(seal.problem)] if seal.problem else []
    out += [Problem(x.problem()) for x in seal.losses
            if not x.whole and x.log_id == seal.log_id]
    last = events[-1].seq if events else 0
    at_head = next((ev.hash for ev in events if ev.seq == seal.head[0]), None)
    kind = audit_anchor.departure(seal.head, last, at_head)
    if kind is not None:
        now = audit_anchor.Loss(seal.log_id, kind, seal.head[0], audit_anchor.today(),
                                last=last)
        out.append(Problem(now.problem(), None, seal.head[0]))
    return out


def verify_file(path: Path, columns: Sequence[str],
                anchors: audit_anchor.Anchors | None = None) -> VerifyReport:
    """Verify the log file at ``path`` opened read-only; its seals are checked when
    ``anchors`` hold the key of the log at that place."""
    from preflight.core.fsutil import NotARegularFile

    if not path.exists() and not path.is_symlink():
        raise ConfigError(f"There is no audit log at {path}.",
                          "Give the path of an audit.sqlite3 file.")
    anchor, where = anchors.read(path) if anchors is not None else (None, "")
    try:
        if path.is_symlink() or not path.is_file():
            raise NotARegularFile(path, "a symbolic link" if path.is_symlink() else
                                  "a special file", writing=False)
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True,
                             isolation_level=None)
        try:
            if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'events'"
                          ).fetchone() is None:
                if anchor is not None:
                    return VerifyReport(0, 0, 0, (0, GENESIS), (Problem(
                        "the log's chain was removed outside Preflight (this computer "
                        f"anchors log {anchor.log_id} at this place)"),),
                        seal="sealed", cannot_detect=audit_seal.limits("sealed", where))
                raise ConfigError(f"The audit log {path} predates the hash chain.",
                                  "Open it once with this Preflight (its records are then "
                                  "chained as they are) and verify again.")
            log = meta(db, "log_id")
            state = None
            if anchor is not None and anchor.log_id == log:
                state = audit_seal.SealState(log, anchor.key, where, None, anchor.losses,
                                             anchor.head)
            return verify_db(db, columns, state)
        finally:
            db.close()
    except NotARegularFile as exc:
        raise ConfigError(f"{path} is {exc.kind}; give the audit log file itself.",
                          "Give the path of an audit.sqlite3 file.") from None
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
