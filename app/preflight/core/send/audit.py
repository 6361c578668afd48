"""The audit log: one SQLite row per send (or local answer), and the per-document ledger.

The row is written *before* the request leaves (status ``sending``) and committed again
as the answer streams (``streaming``) and when it ends: ``done``, ``truncated`` (the
answer hit the size limit), ``rejected``/``redirected`` (the body reached the provider,
which answered with an error status or a redirect that was not followed), ``failed``,
``cancelled``. SQLite runs in WAL mode with ``synchronous=FULL`` so a killed process
loses at most the last unsaved answer chunk — never the record that text was sent; the
next open marks such a record (its process is gone) ``interrupted``.

What is stored: time, provider, model, the confirmed URL and every URL a request really
went to (``requests``), method, ε, task, a SHA-256 of the original, the exact payload
bytes, the raw and restored answers, tokens, cost, predicted and realized utility,
per-item overrides, status. The original text only when the user opted in
(``Settings.store_original_in_audit``). Never the API key, and never the sanitization
seed: with the seed, the noise of a d_X send could be replayed and subtracted.

The per-document ledger ("same document": exact, normalized or near-duplicate
matches) is built on :mod:`preflight.core.send.fingerprint`. Each send also records the ε
it spends on its document (``privacy_epsilon``: its d_X ε, 0 without d_X), which the ε
ledger (:mod:`preflight.core.privacy.ledger`) adds up over the document's sends. Records
from before schema 3 have no such value: the ledger counts their ``epsilon`` instead (an
over-count at worst, never an under-count).

"""

from __future__ import annotations

import csv
import json
import os
import sqlite3
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from preflight.core import paths
from preflight.core.errors import ConfigError, InputError
from preflight.core.send.fingerprint import (  # noqa: F401 - re-exported
    NEAR_DUPLICATE_THRESHOLD, Fingerprint, minhash, normalize,
)

SCHEMA_VERSION = 3

# Statuses that mean "the text may have left the machine" (the ledger counts these).
SENT_STATUSES = ("sending", "streaming", "done", "truncated", "rejected", "redirected",
                 "failed", "cancelled", "interrupted")
# Statuses of a send still in progress (a killed process leaves them behind).
OPEN_STATUSES = ("sending", "streaming")

_COLUMNS = (
    "id", "created_at", "updated_at", "status", "kind", "provider", "model", "url",
    "method", "epsilon", "task", "doc_sha256", "doc_norm_sha256", "doc_minhash",
    "original_text", "payload", "input_tokens", "output_tokens", "token_method",
    "cost_estimate", "cost", "predicted_utility", "realized_utility", "answer_raw",
    "answer_restored", "overrides", "attempts", "delivered", "error", "flow_pending",
    "requests", "pid", "privacy_epsilon",
)
# Columns added after schema 1 (added to an older file when it is opened).
_ADDED_COLUMNS = {"requests": "TEXT", "pid": "INTEGER", "privacy_epsilon": "REAL"}


# --- records -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PriorSend:
    """An earlier send of the same (or nearly the same) document."""

    record_id: int
    created_at: str
    provider: str
    method: str
    epsilon: float | None
    match: str            # "exact" | "normalized" | "near"
    similarity: float     # 1.0 for exact/normalized
    spent: float = 0.0    # the ε this send counts in the document's ε ledger


    def to_json(self) -> dict[str, Any]:
        return {
            "record_id": self.record_id, "created_at": self.created_at,
            "provider": self.provider, "method": self.method, "epsilon": self.epsilon,
            "match": self.match, "similarity": round(self.similarity, 3),
            "epsilon_spent": self.spent,
        }


def ledger_epsilon(privacy_epsilon: float | None, epsilon: float | None) -> float:
    """The ε a record counts in its document's ledger: the recorded d_X ε, or (a record
    from before schema 3) its ``epsilon`` — possibly an over-count, never an under-count."""
    if privacy_epsilon is not None:
        return float(privacy_epsilon)
    return float(epsilon) if epsilon is not None else 0.0


def match_kind(fingerprint: Fingerprint, sha: str, norm: str, minhash_json: str | None
               ) -> tuple[str, float] | None:
    """How a stored document matches ``fingerprint`` ((match, similarity), None: it is
    another document)."""
    if sha == fingerprint.sha256:
        return "exact", 1.0
    if norm == fingerprint.norm_sha256:
        return "normalized", 1.0
    if minhash_json and fingerprint.minhash:
        sim = fingerprint.similarity(json.loads(minhash_json))
        if sim >= NEAR_DUPLICATE_THRESHOLD:
            return "near", sim
    return None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class AuditLog:
    """SQLite audit log (WAL) at ``data_dir()/audit.sqlite3`` unless told otherwise.

    Thread-safe: one connection guarded by a lock (the window streams on a worker thread).
    """

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path else paths.data_dir() / "audit.sqlite3"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.exists():
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(str(self.path), check_same_thread=False,
                                       isolation_level=None, timeout=10)
            # Payloads and answers are private: readable by the user only.
            for suffix in ("", "-wal", "-shm"):
                extra = self.path.with_name(self.path.name + suffix)
                if extra.exists():
                    os.chmod(extra, 0o600)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            # Deleted or overwritten values (a scrubbed seed) are zeroed on disk, not left
            # in free pages.
            self._db.execute("PRAGMA secure_delete=ON")
            self._create()
            self._migrate()
            self.close_interrupted()
        except sqlite3.DatabaseError as exc:
            raise ConfigError(
                f"The audit log {self.path} cannot be opened ({exc}).",
                "Move the damaged file away; Preflight creates a new one.",
            ) from None

    def _create(self) -> None:
        self._db.executescript(
            """
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
        )
        self._db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)",
                         (str(SCHEMA_VERSION),))

    def _migrate(self) -> None:
        """Bring an older file up to date: add new columns, and scrub the seeds schema 1
        stored (a seed is a secret; see the module doc)."""
        cols = {row[1] for row in self._db.execute("PRAGMA table_info(sends)")}
        for name, kind in _ADDED_COLUMNS.items():
            if name not in cols:
                self._db.execute(f"ALTER TABLE sends ADD COLUMN {name} {kind}")
        if "seed" in cols:
            self._db.execute("UPDATE sends SET seed = NULL WHERE seed IS NOT NULL")
        self._db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                         (str(SCHEMA_VERSION),))
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close_interrupted(self) -> int:
        """Mark ``interrupted`` every open record whose process is gone (killed, crashed,
        power cut); returns how many. Records of live processes (another window, a CLI
        run at the same time, this process) are left alone."""
        marks = ",".join("?" * len(OPEN_STATUSES))
        with self._lock:
            rows = self._db.execute(
                f"SELECT id, pid FROM sends WHERE status IN ({marks})", OPEN_STATUSES
            ).fetchall()
            dead = [rid for rid, pid in rows if not _process_alive(pid)]
            for rid in dead:
                self._db.execute(
                    "UPDATE sends SET status = 'interrupted', updated_at = ?, error = "
                    "COALESCE(error, 'the sending process ended before the answer was "
                    "complete') WHERE id = ?", (_now(), rid))
        return len(dead)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- writing --

    def begin(
        self,
        *,
        kind: str,
        fingerprint: Fingerprint,
        status: str,
        provider: str | None = None,
        model: str | None = None,
        url: str | None = None,
        method: str | None = None,
        epsilon: float | None = None,
        privacy_epsilon: float | None = None,
        task: str | None = None,
        payload: bytes | None = None,
        original_text: str | None = None,
        input_tokens: int | None = None,
        token_method: str | None = None,
        cost_estimate: float | None = None,
        predicted_utility: float | None = None,
        overrides: Iterable[str] = (),
    ) -> int:
        """Insert a record and commit it (durably) before anything is sent.

        There is deliberately no ``seed`` parameter: the seed never reaches the log.
        ``privacy_epsilon`` is the ε the send spends on its document (the ε ledger).
        """
        now = _now()
        with self._lock:
            cur = self._db.execute(
                """INSERT INTO sends (created_at, updated_at, status, kind, provider, model, url,
                   method, epsilon, task, doc_sha256, doc_norm_sha256, doc_minhash,
                   original_text, payload, input_tokens, token_method, cost_estimate,
                   predicted_utility, overrides, pid, privacy_epsilon)
                   VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)""",
                (now, now, status, kind, provider, model, url, method, epsilon, task,
                 fingerprint.sha256, fingerprint.norm_sha256,
                 json.dumps(list(fingerprint.minhash)) if fingerprint.minhash else None,
                 original_text, payload, input_tokens, token_method, cost_estimate,
                 predicted_utility, json.dumps(sorted(overrides)), os.getpid(),
                 privacy_epsilon),
            )
            return int(cur.lastrowid)

    _UPDATABLE = frozenset(_COLUMNS) - {"id", "created_at", "doc_sha256", "doc_norm_sha256",
                                        "doc_minhash", "payload", "kind", "pid",
                                        "privacy_epsilon"}

    def update(self, record_id: int, **fields: Any) -> None:
        """Update some fields of a record (each call is one durable commit)."""
        bad = set(fields) - self._UPDATABLE
        if bad:
            raise ValueError(f"cannot update {sorted(bad)}")
        fields["updated_at"] = _now()
        cols = ", ".join(f"{k} = ?" for k in fields)
        with self._lock:
            self._db.execute(f"UPDATE sends SET {cols} WHERE id = ?",
                             (*fields.values(), record_id))

    # -- reading --

    def get(self, record_id: int) -> dict[str, Any] | None:
        rows = self.records(where="id = ?", params=(record_id,))
        return rows[0] if rows else None

    def records(self, where: str = "1=1", params: tuple = ()) -> list[dict[str, Any]]:
        with self._lock:
            cur = self._db.execute(
                f"SELECT {', '.join(_COLUMNS)} FROM sends WHERE {where} ORDER BY id", params)
            return [dict(zip(_COLUMNS, row)) for row in cur.fetchall()]

    def pending_flow(self) -> list[dict[str, Any]]:
        """Finished sends whose realized utility still has to reach the flow learner."""
        return self.records(where="flow_pending = 1 AND status = 'done'")

    def prior_sends(self, fingerprint: Fingerprint, exclude_id: int | None = None
                    ) -> list[PriorSend]:
        """Earlier sends of the same document (see the module doc for 'same')."""
        out = []
        for rid, created, provider, method, eps, sha, norm, mh, spent in self._sent_rows():
            if rid == exclude_id:
                continue
            found = match_kind(fingerprint, sha, norm, mh)
            if found is not None:
                out.append(PriorSend(rid, created, provider, method, eps, *found,
                                     spent=ledger_epsilon(spent, eps)))
        return out

    def _sent_rows(self) -> list[tuple]:
        """The send records the ledger counts (the text may have left the machine)."""
        marks = ",".join("?" * len(SENT_STATUSES))
        with self._lock:
            return self._db.execute(
                f"""SELECT id, created_at, provider, method, epsilon, doc_sha256,
                    doc_norm_sha256, doc_minhash, privacy_epsilon FROM sends
                    WHERE kind = 'send' AND status IN ({marks})
                    AND (delivered IS NULL OR delivered = 1) ORDER BY id""",
                SENT_STATUSES,
            ).fetchall()

    def document_epsilon(self, record_ids: Iterable[int]) -> dict[int, float]:
        """For each send record of ``record_ids``: the ε its document had spent once it was
        sent (its own ε plus every earlier matching send's; sequential composition)."""
        rows = self._sent_rows()
        wanted = set(record_ids)
        out: dict[int, float] = {}
        for i, (rid, _c, _p, _m, eps, sha, norm, mh, spent) in enumerate(rows):
            if rid not in wanted:
                continue
            fp = Fingerprint(sha, norm, tuple(json.loads(mh)) if mh else ())
            total = ledger_epsilon(spent, eps)
            for prior in rows[:i]:
                if match_kind(fp, prior[5], prior[6], prior[7]) is not None:
                    total += ledger_epsilon(prior[8], prior[4])
            out[rid] = total
        return out

    # -- export --

    def export(self, path: Path | str) -> int:
        """Write all records to ``path`` (.csv or .json); returns the number of records.

        The payload is exported as UTF-8 text (it is JSON); nothing else is transformed.
        """
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in (".csv", ".json"):
            raise InputError(
                f"Cannot export the audit log as '{suffix or path.name}'.",
                "Give a file name ending in .csv or .json.",
            )
        rows = [_exportable(r) for r in self.records()]
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if suffix == ".json":
                path.write_text(json.dumps(rows, ensure_ascii=False, indent=2), encoding="utf-8")
            else:
                with path.open("w", encoding="utf-8", newline="") as fh:
                    writer = csv.DictWriter(fh, fieldnames=[c for c in _COLUMNS
                                                            if c not in ("doc_minhash", "pid")])
                    writer.writeheader()
                    writer.writerows(rows)
        except OSError as exc:
            raise InputError(
                f"Cannot write {path} ({exc.strerror or exc}).",
                "Choose a folder you may write to.",
            ) from None
        return len(rows)


def _exportable(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    out.pop("doc_minhash", None)
    payload = out.get("payload")
    if isinstance(payload, (bytes, bytearray)):
        out["payload"] = bytes(payload).decode("utf-8", "replace")
    out.pop("pid", None)
    for key in ("overrides", "requests"):
        if isinstance(out.get(key), str):
            try:
                out[key] = json.loads(out[key])
            except ValueError:
                pass
    return out


def _process_alive(pid: int | None) -> bool:
    """Whether process ``pid`` still runs (None: a record from before pids were kept)."""
    if pid is None:
        return False
    if pid == os.getpid():
        return True
    if os.name == "nt":  # os.kill(pid, 0) would terminate the process on Windows
        import ctypes

        kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
        handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
        if not handle:
            return False
        code = ctypes.c_ulong()
        try:
            ok = kernel32.GetExitCodeProcess(handle, ctypes.byref(code))
        finally:
            kernel32.CloseHandle(handle)
        return bool(ok) and code.value == 259  # STILL_ACTIVE
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True   # exists, owned by someone else
    except OSError:
        return False
    return True
