"""The audit log file's tables, their migrations, and what an open decides about the
chain and its seal (:mod:`.audit_seal`).

Schema history: 1 the ``sends`` table; 2 ``requests``, ``pid``; 3 ``privacy_epsilon``;
4 the hash-chained ``events``; 5 the ``seals`` (see :mod:`.audit_seal`).

Adoption — chaining the rows of a log written before the chain existed, as they are —
happens only for a genuine pre-chain log: one whose place has no anchor and whose file
holds no trace of a chain (a log id, a head, an events table, a seal key). Otherwise the
rows stay unchained and ``audit verify`` reports them, with the reason kept in ``meta``
(``chain_removed``). Events written before the seal existed (a schema-4 log, or a log of
a computer that had nowhere to keep an anchor) are sealed as found once, and the log
remembers how many (``sealed_as_found``).
"""

from __future__ import annotations

import logging
import sqlite3
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from preflight.core.send import audit_events
from preflight.core.send.audit_seal import MAX_REPLACED, Anchor, Anchors, SealState, new_key

log = logging.getLogger(__name__)

SCHEMA_VERSION = 5   # 4: the hash-chained events table; 5: their seals

COLUMNS = (
    "id", "created_at", "updated_at", "status", "kind", "provider", "model", "url",
    "method", "epsilon", "task", "doc_sha256", "doc_norm_sha256", "doc_minhash",
    "original_text", "payload", "input_tokens", "output_tokens", "token_method",
    "cost_estimate", "cost", "predicted_utility", "realized_utility", "answer_raw",
    "answer_restored", "overrides", "attempts", "delivered", "error", "flow_pending",
    "requests", "pid", "privacy_epsilon",
)
# Columns added after schema 1 (added to an older file when it is opened).
ADDED_COLUMNS = {"requests": "TEXT", "pid": "INTEGER", "privacy_epsilon": "REAL"}

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
    requests TEXT, pid INTEGER, privacy_epsilon REAL
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
    doc); the caller holds a write transaction. ``read_before``: the anchor as read before
    the transaction began (a keyring may be slow, or ask to be unlocked: not while every
    other Preflight waits for the log), read again only when it does not match the file."""
    found = _inspect(db)
    anchor, where = read_before if read_before is not None else (None, "")
    if anchor is None or anchor.log_id != found.log_id:
        anchor, where = anchors.read(path)
    for statement in (SENDS_DDL + audit_events.EVENTS_DDL).split(";"):
        if statement.strip():
            db.execute(statement)
    upgraded = found.version is not None and found.version < SCHEMA_VERSION
    if found.version is not None and found.version < 4:
        _add_columns(db)
    empty = found.records == 0 and found.events == 0
    if anchor is not None and anchor.log_id != found.log_id and empty:
        state = _replace(db, path, anchors, anchor, found)
    elif anchor is not None and found.log_id in (None, anchor.log_id):
        state = _anchored(db, path, anchors, anchor, where, found)
    elif anchor is not None:
        state = SealState(str(found.log_id), None, where,
                          f"this computer anchors another log ({anchor.log_id}) at this "
                          "place: the file was replaced by another log, or its id was "
                          "changed outside Preflight")
    else:
        state = _unanchored(db, path, anchors, found)
    audit_events.set_meta(db, "schema_version", str(SCHEMA_VERSION))
    return SealState(state.log_id, state.key, state.where, state.problem, state.replaced,
                     upgraded)


def _add_columns(db: sqlite3.Connection) -> None:
    """Schema 1–3 → 4: new columns, and the seeds schema 1 stored scrubbed (a seed is a
    secret: with it the noise of a d_X send could be replayed)."""
    cols = {row[1] for row in db.execute("PRAGMA table_info(sends)")}
    for name, kind in ADDED_COLUMNS.items():
        if name not in cols:
            db.execute(f"ALTER TABLE sends ADD COLUMN {name} {kind}")
    if "seed" in cols:
        db.execute("UPDATE sends SET seed = NULL WHERE seed IS NOT NULL")


def _new_seal(db: sqlite3.Connection, path: Path, anchors: Anchors, log_id: str,
              replaced: tuple[str, ...] = ()) -> tuple[bytes | None, str]:
    """Make a key for ``log_id``, keep its anchor and seal the events already there."""
    key = new_key()
    anchor = Anchor(log_id, key, SCHEMA_VERSION, replaced[-MAX_REPLACED:])
    where = anchors.write(path, anchor)
    if where == "nowhere":
        return None, ""
    sealed = audit_events.seal_all(db, key, log_id)
    audit_events.set_meta(db, "seal_key_id", anchor.key_id)
    if sealed:
        audit_events.set_meta(db, "sealed_as_found", f"{sealed} {_now()}")
    return key, where


def _replace(db: sqlite3.Connection, path: Path, anchors: Anchors, anchor: Anchor,
             found: _Found) -> SealState:
    """An empty log where another one was: start a new log (and say so)."""
    replaced = (*anchor.replaced, anchor.log_id)
    if found.log_id is not None:
        audit_events.set_meta(db, "log_id", str(uuid.uuid4()))  # never the old one's id
    log_id = audit_events.log_id(db)
    log.warning("the audit log at %s replaces log %s (deleted or emptied)", path,
                anchor.log_id)
    key, where = _new_seal(db, path, anchors, log_id, replaced)
    return SealState(log_id, key, where, None, replaced)


def _anchored(db: sqlite3.Connection, path: Path, anchors: Anchors, anchor: Anchor,
              where: str, found: _Found) -> SealState:
    """The log this computer anchors here: never adopted or sealed as found again."""
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
    if anchor.schema < SCHEMA_VERSION:
        anchors.write(path, Anchor(anchor.log_id, anchor.key, SCHEMA_VERSION,
                                   anchor.replaced))
    return SealState(anchor.log_id, anchor.key, where, None, anchor.replaced)


def _unanchored(db: sqlite3.Connection, path: Path, anchors: Anchors,
                found: _Found) -> SealState:
    if found.key_id is not None:
        log.warning("audit log %s is sealed, but its seal key cannot be read here: new "
                    "records are not sealed", path)
        return SealState(audit_events.log_id(db), None, "",
                         "the log was sealed, but this computer no longer keeps its seal "
                         "key (the keyring entry or anchor file was removed): its seals "
                         "cannot be checked")
    if found.version is not None and found.version < 4:
        if found.chain_traces:
            problem = ("the log's chain was removed and its schema version lowered "
                       "outside Preflight: its records are not covered")
            audit_events.set_meta(db, "chain_removed", f"{_now()}: {problem}")
            log.warning("audit log %s: %s", path, problem)
        else:
            audit_events.adopt_all(db, COLUMNS)
    log_id = audit_events.log_id(db)
    key, where = _new_seal(db, path, anchors, log_id)
    return SealState(log_id, key, where)
