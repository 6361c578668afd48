"""The central audit store on PostgreSQL (psycopg 3): the runtime's
:class:`~preflight.core.send.audit_sync.CentralAuditSink`.

Tables (docs/DEPLOYMENT.md describes them for IT; `preflight audit schema` prints the
SQL): ``preflight_audit_logs`` (one row per laptop log: its id, host and user),
``preflight_audit_events`` (the chain, primary key (log_id, seq): an event can be stored
once only; the head of a log is its last event) and ``preflight_audit_records`` (every
version of each record the laptop sent, keyed by the event it reflects, ``at_seq``); with
``share_learning_pairs`` in the company policy, ``preflight_learning_pairs`` holds the
laptops' learning pairs (numbers and provider names only, keyed by a random laptop
pseudonym; ``preflight_eval.train_company`` trains on them). ``preflight_audit_schema``
holds the schema version; :func:`ensure_schema` applies the missing migrations under an
advisory lock, or says what IT must run when the login may not change tables.

**Append-only** (schema 3): a sync only ever inserts — new events, and a new version of
each record they touch — so the laptops' login needs ``SELECT`` and ``INSERT`` and
nothing else (:data:`WRITER_ROLE`, created by `preflight audit schema`). Triggers refuse
``UPDATE``, ``DELETE`` and ``TRUNCATE`` on every table for every login, as pgAudit-style
deployments do; only the tables' owner or a superuser can set them aside (IT's retention
job). A laptop that rewrites its own log therefore cannot make the central copy agree.

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

SCHEMA_VERSION = 4
_LOCK_KEY = 0x70666C74  # "pflt": serializes schema migrations between laptops
_EVENT_COLS = ("seq", "record_id", "at", "kind", "fields", "prev", "hash")
TABLES = ("preflight_audit_schema", "preflight_audit_logs", "preflight_audit_events",
          "preflight_audit_records", "preflight_learning_pairs")
WRITER_ROLE = "preflight_audit_writer"   # what the laptops' login is granted


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
"""), (3, """
ALTER TABLE preflight_audit_records ADD COLUMN at_seq bigint;
UPDATE preflight_audit_records r SET at_seq = coalesce((SELECT max(e.seq)
    FROM preflight_audit_events e WHERE e.log_id = r.log_id AND e.record_id = r.id), 0);
ALTER TABLE preflight_audit_records ALTER COLUMN at_seq SET NOT NULL;
ALTER TABLE preflight_audit_records DROP CONSTRAINT preflight_audit_records_pkey;
ALTER TABLE preflight_audit_records ADD PRIMARY KEY (log_id, id, at_seq);
ALTER TABLE preflight_audit_logs DROP COLUMN head_seq, DROP COLUMN head_hash,
    DROP COLUMN last_sync;
CREATE OR REPLACE FUNCTION preflight_audit_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the Preflight audit store is append-only: % on % is refused',
        TG_OP, TG_TABLE_NAME USING ERRCODE = 'insufficient_privilege';
END $$;
""" + "".join(f"""
CREATE TRIGGER preflight_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON {table}
    FOR EACH STATEMENT EXECUTE FUNCTION preflight_audit_append_only();
REVOKE UPDATE, DELETE, TRUNCATE ON {table} FROM PUBLIC;""" for table in TABLES)), (4, """
ALTER TABLE preflight_audit_records ADD COLUMN IF NOT EXISTS conversation text,
    ADD COLUMN IF NOT EXISTS turn bigint;
"""))
_HEAD_SQL = ("SELECT seq, hash FROM preflight_audit_events WHERE log_id = %s "
             "ORDER BY seq DESC LIMIT 1")
_PAIR_COLS = ("laptop", "pair_id", "provider", "model", "variant", "bundle_format",
              "feature_names", "features", "realized")


def schema_sql(after: int = 0) -> str:
    """The SQL IT runs with an administrator's login: the migrations after version
    ``after`` (0: the whole schema, in an empty database), then the laptops' role —
    ``SELECT`` and ``INSERT`` on the tables, never ``UPDATE``, ``DELETE`` or ownership."""
    parts = [] if after else ["CREATE TABLE preflight_audit_schema (version integer NOT NULL);"]
    for version, sql in MIGRATIONS:
        if version > after:
            parts += [sql.strip(), f"INSERT INTO preflight_audit_schema VALUES ({version});"]
    tables = ", ".join(TABLES)
    parts += [
        "-- The laptops' login: may add rows and read them, never change or delete them.",
        f"DO $$ BEGIN\n    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = "
        f"'{WRITER_ROLE}') THEN\n        CREATE ROLE {WRITER_ROLE} NOLOGIN;\n    END IF;\n"
        "END $$;",
        f"REVOKE ALL ON {tables} FROM PUBLIC, {WRITER_ROLE};",
        f"GRANT SELECT ON {tables} TO {WRITER_ROLE};",
        f"GRANT INSERT ON {', '.join(TABLES[1:])} TO {WRITER_ROLE};",
        f"-- then: GRANT {WRITER_ROLE} TO <the laptops' login>;",
    ]
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
                fix="audit-verify",
            ) from None
        except psycopg.Error as exc:
            self._drop()
            raise self._unavailable(exc) from None

    def close(self) -> None:
        self._drop()

    # -- the protocol --------------------------------------------------------------------
    def head(self, log_id: str) -> tuple[int, str]:
        row = self._run(lambda c: c.execute(_HEAD_SQL, (log_id,)).fetchone())
        return (int(row[0]), str(row[1])) if row else (0, GENESIS)

    def append(self, who: LogIdentity, expected_head: tuple[int, str],
               events: Sequence[ChainEvent], records: Sequence[Mapping[str, Any]]) -> None:
        """Insert ``events`` and a new version of each record (never an update: the
        module doc); one laptop log's appends take turns under an advisory lock."""
        cols = list(_COLUMNS)
        insert = (f"INSERT INTO preflight_audit_records (log_id, at_seq, {', '.join(cols)}) "
                  f"VALUES (%s, %s, {', '.join(['%s'] * len(cols))})")
        last_of = {e.record_id: e.seq for e in events}

        def work(conn: Any) -> None:
            with conn.transaction(), conn.cursor() as cur:
                cur.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))",
                            (_LOCK_KEY, who.log_id))
                cur.execute("INSERT INTO preflight_audit_logs (log_id, host, os_user) "
                            "VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                            (who.log_id, who.host, who.user))
                row = cur.execute(_HEAD_SQL, (who.log_id,)).fetchone()
                if ((int(row[0]), row[1]) if row else (0, GENESIS)) != tuple(expected_head):
                    raise HeadMovedError()
                cur.executemany(
                    f"INSERT INTO preflight_audit_events (log_id, {', '.join(_EVENT_COLS)}) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                    [(who.log_id, e.seq, e.record_id, e.at, e.kind, canonical_json(e.fields),
                      e.prev, e.hash) for e in events])
                cur.executemany(insert, [(who.log_id, last_of[r["id"]],
                                          *(r.get(c) for c in cols)) for r in records])
        self._run(work)

    def read(self, log_id: str) -> tuple[list[ChainEvent], list[dict[str, Any]],
                                          tuple[int, str]]:
        """The events, each record's latest version and the head (:meth:`history` has
        every version)."""
        events, versions = self._read(log_id)
        latest: dict[int, dict[str, Any]] = {}
        for _seq, row in versions:
            latest[int(row["id"])] = row
        head = (events[-1].seq, events[-1].hash) if events else (0, GENESIS)
        return events, [latest[k] for k in sorted(latest)], head

    def history(self, log_id: str) -> list[tuple[int, dict[str, Any]]]:
        """Every stored version of every record of ``log_id``: (at_seq, values)."""
        return self._read(log_id)[1]

    def _read(self, log_id: str) -> tuple[list[ChainEvent], list[tuple[int, dict[str, Any]]]]:
        def work(conn: Any) -> Any:
            with conn.transaction():
                events = conn.execute(
                    f"SELECT {', '.join(_EVENT_COLS)} FROM preflight_audit_events "
                    "WHERE log_id = %s ORDER BY seq", (log_id,)).fetchall()
                rows = conn.execute(
                    f"SELECT at_seq, {', '.join(_COLUMNS)} FROM preflight_audit_records "
                    "WHERE log_id = %s ORDER BY id, at_seq", (log_id,)).fetchall()
            return events, rows
        events, rows = self._run(work)
        return ([ChainEvent.from_json(dict(zip(_EVENT_COLS, e))) for e in events],
                [(int(r[0]), dict(zip(_COLUMNS, r[1:]))) for r in rows])

    def may_rewrite(self) -> bool:
        """Whether this login could still change what the store holds (it owns the tables
        or is a superuser): the append-only rule then rests on trust, not on rights."""
        row = self._run(lambda c: c.execute(
            "SELECT r.rolsuper OR pg_has_role(current_user, c.relowner, 'MEMBER') "
            "FROM pg_roles r, pg_class c WHERE r.rolname = current_user "
            "AND c.oid = to_regclass('preflight_audit_events')").fetchone())
        return bool(row and row[0])

    def logs(self) -> list[dict[str, Any]]:
        """Every laptop log the store holds (for IT: `preflight audit status --central`)."""
        rows = self._run(lambda c: c.execute(
            "SELECT l.log_id, l.host, l.os_user, coalesce(max(e.seq), 0), "
            "coalesce(max(e.received_at), l.first_seen) FROM preflight_audit_logs l "
            "LEFT JOIN preflight_audit_events e ON e.log_id = l.log_id "
            "GROUP BY l.log_id, l.host, l.os_user, l.first_seen "
            "ORDER BY l.host, l.log_id").fetchall())
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
