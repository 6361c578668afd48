"""The audit log file's tables, their migrations, and what an open decides about the
chain, its seal (:mod:`.audit_seal`) and the log's outside record (:mod:`.audit_anchor`).

Schema history: 1 the ``sends`` table; 2 ``requests``, ``pid``; 3 ``privacy_epsilon``;
4 the hash-chained ``events``; 5 the ``seals`` (see :mod:`.audit_seal`); 6 ``conversation``
and ``turn`` (a follow-up question is the next turn of its document's conversation). A
column added after a record was chained is absent from that record's events: it reads as
none (:mod:`.audit_chain`).

Adoption — chaining the rows of a log written before the chain existed, as they are —
happens only for a genuine pre-chain log: one whose place has no record and whose file
holds no trace of a chain (a log id, a head, an events table, a seal key). Otherwise the
rows stay unchained and ``audit verify`` reports them, with the reason kept in ``meta``
(``chain_removed``). Events written before the seal existed (a schema-4 log, or a log of
a computer that had nowhere to keep a record) are sealed as found once, and the log
remembers how many (``sealed_as_found``).

Each open also compares the log with its record, in the same transaction: an empty file
where a log with records was (deleted or emptied), a log that ends before the recorded
head or differs at it (cut off, an older copy put back, rewritten), a sealed log whose
record is gone (its key lost) — each is kept in the record as a loss; another log's file
in the log's place is reported at every open until the company accepts it
(:func:`accept`).
"""

from __future__ import annotations

import logging
import sqlite3
import uuid
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

from preflight.core.send import audit_events
from preflight.core.send.audit_anchor import (
    MAX_LOSSES, UNREADABLE, Anchor, Anchors, Loss, departure, today,
)
from preflight.core.send.audit_seal import SealState, key_id, new_key

log = logging.getLogger(__name__)

SCHEMA_VERSION = 6   # 4: the hash-chained events table; 5: their seals; 6: conversations

COLUMNS = (
    "id", "created_at", "updated_at", "status", "kind", "provider", "model", "url",
    "method", "epsilon", "task", "doc_sha256", "doc_norm_sha256", "doc_minhash",
    "original_text", "payload", "input_tokens", "output_tokens", "token_method",
    "cost_estimate", "cost", "predicted_utility", "realized_utility", "answer_raw",
    "answer_restored", "overrides", "attempts", "delivered", "error", "flow_pending",
    "requests", "pid", "privacy_epsilon", "conversation", "turn",
)
# Columns added after schema 1 (added to an older file when it is opened).
ADDED_COLUMNS = {"requests": "TEXT", "pid": "INTEGER", "privacy_epsilon": "REAL",
                 "conversation": "TEXT", "turn": "INTEGER"}

SENDS_DDL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS sends (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    status TEXT NOT NULL, kind TEXT NOT NULL,
    provider TEXT, model TEXT, url TEXT,
    method TEXT, epsilon REAL, task TEXT,
    doc_sha256 TEXT NOT NULL, doc_norm_sha256 TEXT NOT NULL, doc_minhash TEXT,
    original_text TEXT, payload BLOB,
    input_tokens INTEGER, output_tokens INTEGER, token_method TEXT,
    cost_estimate REAL, cost REAL,
    predicted_utility REAL, realized_utility REAL,
    answer_raw TEXT, answer_restored TEXT,
    overrides TEXT, attempts INTEGER DEFAULT 0, delivered INTEGER,
    error TEXT, flow_pending INTEGER DEFAULT 0,
    requests TEXT, pid INTEGER, privacy_epsilon REAL,
    conversation TEXT, turn INTEGER
);
CREATE INDEX IF NOT EXISTS sends_doc ON sends (doc_sha256);
CREATE INDEX IF NOT EXISTS sends_norm ON sends (doc_norm_sha256);
"""


@dataclass(frozen=True)
class _Found:
    tables: frozenset[str]
    version: int | None        # None: a new file
    log_id: str | None
    key_id: str | None
    records: int
    events: int

    @property
    def chain_traces(self) -> bool:
        return ("events" in self.tables or "seals" in self.tables
                or self.log_id is not None or self.key_id is not None)


def _inspect(db: sqlite3.Connection) -> _Found:
    tables = frozenset(r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table'"))
    meta = dict(db.execute("SELECT key, value FROM meta").fetchall()) if (
        "meta" in tables) else {}
    count = (lambda t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
             if t in tables else 0)
    version = meta.get("schema_version")
    return _Found(tables, int(version) if version is not None else None,
                  meta.get("log_id"), meta.get("seal_key_id"), count("sends"),
                  count("events"))


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def prepare(db: sqlite3.Connection, path: Path, anchors: Anchors,
            read_before: tuple[Anchor | None, str] | None = None) -> SealState:
    """Create or bring up to date the log's tables and decide its chain and seal (module
    doc); the caller holds a write transaction. ``read_before``: the outside record as
    read before the transaction began (a keyring may be slow, or ask to be unlocked: not
    while every other Preflight waits for the log), read again only when it does not
    match the file or must be written."""
    found = _inspect(db)
    anchor, where = read_before if read_before is not None else (None, "")
    if anchor is None or anchor.log_id != found.log_id:
        anchor, where = anchors.read(path)
    for statement in (SENDS_DDL + audit_events.EVENTS_DDL).split(";"):
        if statement.strip():
            db.execute(statement)
    upgraded = found.version is not None and found.version < SCHEMA_VERSION
    if found.version is not None and found.version < 6:
        _add_columns(db)
    empty = found.records == 0 and found.events == 0
    if where == UNREADABLE:
        state = SealState(audit_events.log_id(db), None, "",
                          "this log's record outside the file (its seal key) could not be "
                          "read: records written meanwhile are not sealed")
    elif anchor is not None and anchor.log_id != found.log_id and empty:
        state = _replace(db, path, anchors, anchor, found)
    elif anchor is not None and found.log_id in (None, anchor.log_id):
        state = _anchored(db, path, anchors, anchor, where, found)
    elif anchor is not None:
        lost = Loss(anchor.log_id, "replaced", anchor.head[0], today(), by=str(found.log_id))
        state = SealState(str(found.log_id), None, where,
                          f"this computer anchors another log ({anchor.log_id}) at this "
                          "place: the file was replaced by another log, or its id was "
                          "changed outside Preflight", pending=(*anchor.pending, lost))
    else:
        state = _unanchored(db, path, anchors, found)
    audit_events.set_meta(db, "schema_version", str(SCHEMA_VERSION))
    return replace(state, upgraded=upgraded)


def _add_columns(db: sqlite3.Connection) -> None:
    """Schema 1–5 → 6: new columns, and the seeds schema 1 stored scrubbed (a seed is a
    secret: with it the noise of a d_X send could be replayed)."""
    cols = {row[1] for row in db.execute("PRAGMA table_info(sends)")}
    for name, kind in ADDED_COLUMNS.items():
        if name not in cols:
            db.execute(f"ALTER TABLE sends ADD COLUMN {name} {kind}")
    if "seed" in cols:
        db.execute("UPDATE sends SET seed = NULL WHERE seed IS NOT NULL")


def _new_seal(db: sqlite3.Connection, path: Path, anchors: Anchors, log_id: str,
              losses: tuple[Loss, ...] = (), *, seal_found: bool = True) -> SealState:
    """Make a key and the outside record for ``log_id`` and (``seal_found``) seal the
    events already there, as found."""
    key = new_key()
    anchor = Anchor(log_id, key, SCHEMA_VERSION, audit_events.last_event(db),
                    losses[-MAX_LOSSES:])
    where = anchors.write(path, anchor)
    if where == "nowhere":
        return SealState(log_id, losses=anchor.losses)
    sealed = audit_events.seal_all(db, key, log_id) if seal_found else 0
    audit_events.set_meta(db, "seal_key_id", key_id(key))
    if sealed:
        audit_events.set_meta(db, "sealed_as_found", f"{sealed} {_now()}")
    return _state(anchor, where)


def _state(anchor: Anchor, where: str) -> SealState:
    return SealState(anchor.log_id, anchor.key, where, None, anchor.losses, anchor.head,
                     anchor.pending)


def _replace(db: sqlite3.Connection, path: Path, anchors: Anchors, anchor: Anchor,
             found: _Found) -> SealState:
    """An empty log where another one was: start a new log (and say so)."""
    if found.log_id is not None:
        audit_events.set_meta(db, "log_id", str(uuid.uuid4()))  # never the old one's id
    log_id = audit_events.log_id(db)
    log.warning("the audit log at %s replaces log %s (deleted or emptied)", path,
                anchor.log_id)
    if anchor.head[0] > 0:          # it held records: they are lost
        anchor = anchor.with_loss(Loss(anchor.log_id, "gone", anchor.head[0], today()))
    return _new_seal(db, path, anchors, log_id, anchor.losses)


def _anchored(db: sqlite3.Connection, path: Path, anchors: Anchors, anchor: Anchor,
              where: str, found: _Found) -> SealState:
    """The log this computer anchors here: never adopted or sealed as found again, and
    compared with the head the record holds (a cut-off end is kept as a loss)."""
    if found.log_id is None:
        audit_events.set_meta(db, "log_id", anchor.log_id)
    if ("events" not in found.tables or found.log_id is None
            or (found.version or 0) < anchor.schema):
        now = "none" if found.version is None else found.version
        problem = (f"the log's chain was removed or its schema version lowered (to {now}, "
                   f"after it had reached {anchor.schema}) outside Preflight: its earlier "
                   "records are no longer covered")
        audit_events.set_meta(db, "chain_removed", f"{_now()}: {problem}")
        log.warning("audit log %s: %s", path, problem)
    if (anchor.schema < SCHEMA_VERSION
            or departure(anchor.head, *_chain_at(db, anchor.head[0])) is not None):
        fresh, fresh_where = anchors.read(path)     # the newest record: written over
        if fresh_where == UNREADABLE:
            return _state(anchor, where)
        if fresh is not None and fresh.log_id == anchor.log_id:
            anchor, where = fresh, fresh_where
        last = audit_events.last_event(db)
        updated = replace(anchor, schema=SCHEMA_VERSION)
        kind = departure(anchor.head, *_chain_at(db, anchor.head[0]))
        if kind is not None:
            loss = Loss(anchor.log_id, kind, anchor.head[0], today(), last=last[0])
            updated = replace(updated.with_loss(loss), head=last)
            log.warning("the audit log %s %s", path, loss.what)
        if updated != anchor and anchors.write(path, updated, where) != "nowhere":
            anchor = updated
    return _state(anchor, where)


def _chain_at(db: sqlite3.Connection, seq: int) -> tuple[int, str | None]:
    """The log's last event seq and the hash of its event ``seq``."""
    return audit_events.last_event(db)[0], audit_events.hash_at(db, seq)


def _unanchored(db: sqlite3.Connection, path: Path, anchors: Anchors,
                found: _Found) -> SealState:
    log_id = audit_events.log_id(db)
    if found.key_id is not None:
        # Sealed before, its record is gone: a new key seals what comes; the events
        # sealed with the lost one stay unchecked, and `audit verify` says so.
        last = audit_events.last_event(db)[0]
        log.warning("audit log %s is sealed, but its seal key cannot be read here: a new "
                    "key seals its records from now on", path)
        return _new_seal(db, path, anchors, log_id,
                         (Loss(log_id, "key", last, today(), accepted=True),),
                         seal_found=False)
    if found.version is not None and found.version < 4:
        if found.chain_traces:
            problem = ("the log's chain was removed and its schema version lowered "
                       "outside Preflight: its records are not covered")
            audit_events.set_meta(db, "chain_removed", f"{_now()}: {problem}")
            log.warning("audit log %s: %s", path, problem)
        else:
            audit_events.adopt_all(db, COLUMNS)
    return _new_seal(db, path, anchors, log_id)


def accept(db: sqlite3.Connection, path: Path, anchors: Anchors,
           state: SealState) -> SealState:
    """The company accepts what was lost at this place (:mod:`.audit_presence`): the
    record's losses are marked accepted, and a log that took another's place gets a
    record (and key) of its own — its earlier events stay unsealed, and `audit verify`
    says so. The caller holds a write transaction."""
    anchor, where = anchors.read(path)
    if anchor is None or where == UNREADABLE:
        return state
    log_id = audit_events.log_id(db)
    if anchor.log_id == log_id:
        anchor = anchor.accepted()
        return _state(anchor, anchors.write(path, anchor, where))
    gone = anchor.accepted().with_loss(Loss(anchor.log_id, "replaced", anchor.head[0],
                                            today(), by=log_id, accepted=True))
    log.warning("the audit log at %s replaces log %s (accepted)", path, anchor.log_id)
    return _new_seal(db, path, anchors, log_id, gone.losses, seal_found=False)
