"""The central audit store on PostgreSQL (psycopg 3): the runtime's
:class:`~preflight.core.send.audit_sync.CentralAuditSink`.

Four tables (docs/DEPLOYMENT.md describes them for IT; `preflight audit schema` prints
the SQL): ``preflight_audit_logs`` (one row per laptop log: its id, host, user and the
head it reached), ``preflight_audit_events`` (the chain, primary key (log_id, seq): an
event can be stored once only) and ``preflight_audit_records`` (each record's latest
values, the same columns as the local log); with ``share_learning_pairs`` in the company
policy, ``preflight_learning_pairs`` holds the laptops' learning pairs (numbers and
provider names only, keyed by a random laptop pseudonym; ``preflight_eval.train_company``
trains on them). ``preflight_audit_schema`` holds the schema
version; :func:`ensure_schema` applies the missing migrations under an advisory lock, or
says what IT must run when the login may not create tables.

One connection, kept open between syncs and opened again after a failure; a statement
timeout keeps a stalled server from holding the sync job. The password is passed to
psycopg as a parameter (never in the URL, a file or a log line).
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Mapping, Sequence

from preflight.core.errors import ConfigError
from preflight.core.org_policy_audit import CentralAuditSettings
from preflight.core.send import logfilter
from preflight.core.send.audit import _COLUMNS
from preflight.core.send.audit_chain import (
    GENESIS, INTEGER_COLUMNS, REAL_COLUMNS, ChainEvent, canonical_json,
)
from preflight.core.send.audit_sync import (
    CentralDivergedError, CentralUnavailableError, HeadMovedError, LearningPair, LogIdentity,
)

log = logging.getLogger(__name__)

SCHEMA_VERSION = 2
_LOCK_KEY = 0x70666C74  # "pflt": serializes schema migrations between laptops
_EVENT_COLS = ("seq", "record_id", "at", "kind", "fields", "prev", "hash")


def _pg_type(column: str) -> str:
    if column == "payload":
        return "bytea"
    if column in INTEGER_COLUMNS:
        return "bigint"
    return "double precision" if column in REAL_COLUMNS else "text"


_RECORD_DDL = ",\n    ".join(f"{c} {_pg_type(c)}" for c in _COLUMNS if c != "id")
MIGRATIONS: tuple[tuple[int, str], ...] = ((1, f"""
CREATE TABLE preflight_audit_logs (
    log_id text PRIMARY KEY, host text NOT NULL, os_user text NOT NULL,
    head_seq bigint NOT NULL DEFAULT 0, head_hash text NOT NULL,
    first_seen timestamptz NOT NULL DEFAULT now(),
    last_sync timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE preflight_audit_events (
    log_id text NOT NULL REFERENCES preflight_audit_logs, seq bigint NOT NULL,
    record_id bigint NOT NULL, at text NOT NULL, kind text NOT NULL, fields text NOT NULL,
    prev text NOT NULL, hash text NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (log_id, seq)
);
CREATE TABLE preflight_audit_records (
    log_id text NOT NULL REFERENCES preflight_audit_logs, id bigint NOT NULL,
    {_RECORD_DDL},
    PRIMARY KEY (log_id, id)
);
"""), (2, """
CREATE TABLE preflight_learning_pairs (
    laptop text NOT NULL, pair_id bigint NOT NULL,
    provider text NOT NULL, model text NOT NULL, variant text NOT NULL,
    bundle_format integer NOT NULL, feature_names text[] NOT NULL,
    features double precision[] NOT NULL, realized double precision NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (laptop, pair_id)
);
"""))
_PAIR_COLS = ("laptop", "pair_id", "provider", "model", "variant", "bundle_format",
              "feature_names", "features", "realized")


def schema_sql() -> str:
    """The SQL that creates the current schema in an empty database (for IT)."""
    parts = ["CREATE TABLE preflight_audit_schema (version integer NOT NULL);"]
    for version, sql in MIGRATIONS:
        parts += [sql.strip(), f"INSERT INTO preflight_audit_schema VALUES ({version});"]
    return "BEGIN;\n" + "\n".join(parts) + "\nCOMMIT;\n"


def ensure_schema(conn: Any) -> int:
    """Bring the database to :data:`SCHEMA_VERSION`; returns the version found before."""
    import psycopg

    with conn.transaction():
        found = conn.execute("SELECT to_regclass('preflight_audit_schema')").fetchone()[0]
        version = 0
        if found is not None:
            version = conn.execute(
                "SELECT coalesce(max(version), 0) FROM preflight_audit_schema").fetchone()[0]
        if version >= SCHEMA_VERSION:
            return version
        try:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
            if found is None:
                conn.execute("CREATE TABLE IF NOT EXISTS preflight_audit_schema "
                              "(version integer NOT NULL)")
            version = conn.execute(
                "SELECT coalesce(max(version), 0) FROM preflight_audit_schema").fetchone()[0]
            for number, sql in MIGRATIONS:
                if number > version:
                    conn.execute(sql)
                    conn.execute("INSERT INTO preflight_audit_schema VALUES (%s)", (number,))
        except psycopg.errors.InsufficientPrivilege:
            raise ConfigError(
                f"The central audit store's tables are missing or older than this Preflight "
                f"(schema {version}, needs {SCHEMA_VERSION}) and this login may not create "
                "them.", "Ask your IT administrator to apply `preflight audit schema` "
                "(docs/DEPLOYMENT.md).") from None
    return version


class PgAuditSink:
    """:class:`CentralAuditSink` on PostgreSQL (see the module doc)."""

    def __init__(self, settings: CentralAuditSettings,
                 password: Callable[[], str | None], *, connect_timeout: int = 5,
                 statement_timeout_ms: int = 30_000) -> None:
        self.settings = settings
        self._password = password
        self._timeouts = (connect_timeout, statement_timeout_ms)
        self._conn: Any = None

    # -- connection --------------------------------------------------------------------
    def _connect(self) -> Any:
        if self._conn is not None and not self._conn.closed:
            return self._conn
        import psycopg

        s = self.settings
        extra = {"sslrootcert": s.sslrootcert} if s.sslrootcert else {}
        password = self._password()
        if password:
            extra["password"] = password
        try:
            self._conn = psycopg.connect(
                s.url, sslmode=s.sslmode, connect_timeout=self._timeouts[0],
                application_name="preflight-audit", autocommit=True,
                options=f"-c statement_timeout={self._timeouts[1]}", **extra)
            ensure_schema(self._conn)
        except psycopg.Error as exc:
            self._drop()
            raise self._unavailable(exc) from None
        return self._conn

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - already broken
                log.debug("closing a broken connection failed", exc_info=True)

    def _unavailable(self, exc: Exception) -> CentralUnavailableError:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return CentralUnavailableError(
            f"The central audit store {self.settings.where} cannot be reached "
            f"({logfilter.redact(reason)[:200]}).",
            "Records stay queued in the local audit log and are sent when it is back.")

    def _run(self, work: Callable[[Any], Any]) -> Any:
        import psycopg

        conn = self._connect()
        try:
            return work(conn)
        except psycopg.errors.UniqueViolation:
            raise CentralDivergedError(
                f"The central audit store {self.settings.where} already holds events this "
                "log has not sent: its copy was changed.",
                "Run `preflight audit verify --central` and tell your IT administrator.",
            ) from None
        except psycopg.Error as exc:
            self._drop()
            raise self._unavailable(exc) from None

    def close(self) -> None:
        self._drop()

    # -- the protocol --------------------------------------------------------------------
    def head(self, log_id: str) -> tuple[int, str]:
        row = self._run(lambda c: c.execute(
            "SELECT head_seq, head_hash FROM preflight_audit_logs WHERE log_id = %s",
            (log_id,)).fetchone())
        return (int(row[0]), str(row[1])) if row else (0, GENESIS)

    def append(self, who: LogIdentity, expected_head: tuple[int, str],
               events: Sequence[ChainEvent], records: Sequence[Mapping[str, Any]]) -> None:
        cols = list(_COLUMNS)
        upsert = (f"INSERT INTO preflight_audit_records (log_id, {', '.join(cols)}) VALUES "
                  f"(%s, {', '.join(['%s'] * len(cols))}) ON CONFLICT (log_id, id) DO UPDATE "
                  f"SET {', '.join(f'{c} = EXCLUDED.{c}' for c in cols if c != 'id')}")

        def work(conn: Any) -> None:
            with conn.transaction(), conn.cursor() as cur:
                cur.execute("INSERT INTO preflight_audit_logs (log_id, host, os_user, "
                            "head_hash) VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                            (who.log_id, who.host, who.user, GENESIS))
                row = cur.execute("SELECT head_seq, head_hash FROM preflight_audit_logs "
                                  "WHERE log_id = %s FOR UPDATE", (who.log_id,)).fetchone()
                if (int(row[0]), row[1]) != tuple(expected_head):
                    raise HeadMovedError()
                cur.executemany(
                    f"INSERT INTO preflight_audit_events (log_id, {', '.join(_EVENT_COLS)}) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                    [(who.log_id, e.seq, e.record_id, e.at, e.kind, canonical_json(e.fields),
                      e.prev, e.hash) for e in events])
                cur.executemany(upsert, [(who.log_id, *(r.get(c) for c in cols))
                                         for r in records])
                cur.execute("UPDATE preflight_audit_logs SET head_seq = %s, head_hash = %s, "
                            "host = %s, os_user = %s, last_sync = now() WHERE log_id = %s",
                            (events[-1].seq, events[-1].hash, who.host, who.user,
                             who.log_id))
        self._run(work)

    def read(self, log_id: str) -> tuple[list[ChainEvent], list[dict[str, Any]],
                                          tuple[int, str]]:
        def work(conn: Any) -> Any:
            with conn.transaction():
                events = conn.execute(
                    f"SELECT {', '.join(_EVENT_COLS)} FROM preflight_audit_events "
                    "WHERE log_id = %s ORDER BY seq", (log_id,)).fetchall()
                rows = conn.execute(
                    f"SELECT {', '.join(_COLUMNS)} FROM preflight_audit_records "
                    "WHERE log_id = %s ORDER BY id", (log_id,)).fetchall()
                head = conn.execute("SELECT head_seq, head_hash FROM preflight_audit_logs "
                                    "WHERE log_id = %s", (log_id,)).fetchone()
            return events, rows, head
        events, rows, head = self._run(work)
        return ([ChainEvent.from_json(dict(zip(_EVENT_COLS, e))) for e in events],
                [dict(zip(_COLUMNS, r)) for r in rows],
                (int(head[0]), str(head[1])) if head else (0, GENESIS))

    def logs(self) -> list[dict[str, Any]]:
        """Every laptop log the store holds (for IT: `preflight audit status --central`)."""
        rows = self._run(lambda c: c.execute(
            "SELECT log_id, host, os_user, head_seq, last_sync FROM preflight_audit_logs "
            "ORDER BY host, log_id").fetchall())
        return [{"log_id": r[0], "host": r[1], "user": r[2], "events": int(r[3]),
                 "last_sync": r[4].isoformat()} for r in rows]

    # -- pooled learning pairs (CentralLearningSink) ---------------------------------------
    def pairs_head(self, laptop: str) -> int:
        """The highest pair id stored for ``laptop`` (0: none)."""
        row = self._run(lambda c: c.execute(
            "SELECT coalesce(max(pair_id), 0) FROM preflight_learning_pairs "
            "WHERE laptop = %s", (laptop,)).fetchone())
        return int(row[0])

    def append_pairs(self, laptop: str, pairs: Sequence[LearningPair]) -> None:
        """Store ``pairs`` in one transaction; a pair already stored is kept as it is."""
        def work(conn: Any) -> None:
            with conn.transaction(), conn.cursor() as cur:
                cur.executemany(
                    f"INSERT INTO preflight_learning_pairs ({', '.join(_PAIR_COLS)}) VALUES "
                    f"({', '.join(['%s'] * len(_PAIR_COLS))}) ON CONFLICT DO NOTHING",
                    [(laptop, p.pair_id, p.provider, p.model, p.variant, p.bundle_format,
                      list(p.feature_names), list(p.features), p.realized) for p in pairs])
        self._run(work)

    def read_pairs(self) -> list[dict[str, Any]]:
        """Every stored pair, with its laptop and the time it arrived (for training)."""
        rows = self._run(lambda c: c.execute(
            f"SELECT {', '.join(_PAIR_COLS)}, received_at FROM preflight_learning_pairs "
            "ORDER BY laptop, pair_id").fetchall())
        return [dict(zip(_PAIR_COLS + ("received_at",), r)) for r in rows]
