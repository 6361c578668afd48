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

Tamper evidence: every write to a record also appends a hash-chained, sealed event in the
same transaction (:mod:`.audit_chain`, :mod:`.audit_seal`), and then moves the log's head
in its outside record (:mod:`.audit_anchor`); :meth:`AuditLog.verify` checks all three.
The file itself and writes under contention: :mod:`.audit_db`; its tables and what an
open decides about an older, cut or edited file: :mod:`.audit_schema`. ``on_change``
(the central store's sync job) is called after each committed write.

Size (~460 lines): the log's one class and its same-document ledger.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, TypeVar

from preflight.core import paths
from preflight.core.send import audit_anchor, audit_db, audit_events, audit_schema
from preflight.core.send.audit_chain import ChainEvent, VerifyReport
from preflight.core.send.audit_db import AuditWriteError  # noqa: F401 - re-exported
from preflight.core.send.audit_schema import (  # noqa: F401 - re-exported
    COLUMNS as _COLUMNS, SCHEMA_VERSION,
)
from preflight.core.send.fingerprint import (  # noqa: F401 - re-exported
    NEAR_DUPLICATE_THRESHOLD, Fingerprint, minhash, normalize,
)

log = logging.getLogger(__name__)

# Statuses that mean "the text may have left the machine" (the ledger counts these).
SENT_STATUSES = ("sending", "streaming", "done", "truncated", "rejected", "redirected",
                 "failed", "cancelled", "interrupted")
# Statuses of a send still in progress (a killed process leaves them behind).
OPEN_STATUSES = ("sending", "streaming")

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
    conversation: str | None = None   # the conversation it was a turn of (None: none)

    def to_json(self) -> dict[str, Any]:
        return {
            "record_id": self.record_id, "created_at": self.created_at,
            "provider": self.provider, "method": self.method, "epsilon": self.epsilon,
            "match": self.match, "similarity": round(self.similarity, 3),
            "epsilon_spent": self.spent, "conversation": self.conversation,
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


T = TypeVar("T")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class AuditLog:
    """SQLite audit log (WAL) at ``data_dir()/audit.sqlite3`` unless told otherwise.

    Thread-safe: one connection guarded by a lock (the window streams on a worker thread);
    processes sharing the file take turns (:mod:`.audit_db`). ``on_change`` is called
    (outside the lock) after every committed write. ``secrets``: where the log's outside
    record — id, schema version, seal key, head, losses — lives (:mod:`.audit_anchor`;
    default the OS keyring, else an owner-only file in the settings folder; None: none,
    the log is not sealed).
    """

    def __init__(self, path: Path | str | None = None, *,
                 on_change: Callable[[], None] | None = None,
                 secrets: Any = "keyring") -> None:
        self._on_change = on_change
        self.path = Path(path) if path else paths.audit_log_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._anchors = audit_anchor.anchors_for(secrets, paths.config_dir)
        self._advancing = threading.Lock()
        self._db = audit_db.open_db(self.path)
        self._writer = audit_db.Writer(self._db, self.path)
        self._lock = self._writer.lock
        try:
            known = self._anchors.read(self.path)
            self.seal = self._writer.run(
                lambda: audit_schema.prepare(self._db, self.path, self._anchors, known))
            if self.seal.upgraded:   # scrubbed values leave the WAL file too
                audit_db.retry(lambda: self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)"),
                               self.path)
            self.close_interrupted()
        except AuditWriteError as err:
            self._db.close()
            raise audit_db.open_error(err, self.path) from None
        except BaseException:
            self._db.close()
            raise

    @property
    def replaced(self) -> tuple[str, ...]:
        """Ids of earlier logs at this place that were deleted or emptied (oldest first)."""
        return self.seal.replaced

    @property
    def pending_losses(self) -> tuple[audit_anchor.Loss, ...]:
        """What the outside record says was lost at this place and the company has not
        accepted (:mod:`.audit_presence`)."""
        return self.seal.pending

    def accept_losses(self) -> None:
        """Accept every pending loss (:func:`.audit_schema.accept`)."""
        self.seal = self._write(
            lambda: audit_schema.accept(self._db, self.path, self._anchors, self.seal))

    def _write(self, work: Callable[[], T], *, quick: bool = False) -> T:
        """One durable transaction (a record, its chain event and its seal commit
        together); :class:`AuditWriteError` when it cannot be written."""
        return self._writer.run(work, quick=quick)

    def _event(self, record_id: int, kind: str, columns: Iterable[str]) -> None:
        audit_events.append_event(self._db, record_id, kind, columns, _COLUMNS,
                                  self.seal.key)

    def _changed(self) -> None:
        """After a committed write: the outside record's head follows, then ``on_change``."""
        if self.seal.key is not None:
            try:
                with self._advancing:
                    audit_anchor.advance(self._anchors, self.path, self.seal.log_id,
                                         self._chain_at)
            except (sqlite3.Error, OSError) as exc:   # the write itself is committed
                log.warning("the audit log's head was not recorded outside it (%s)", exc)
        if self._on_change is not None:
            self._on_change()

    def _chain_at(self, seq: int) -> tuple[tuple[int, str], str | None]:
        with self._lock:
            return audit_events.last_event(self._db), audit_events.hash_at(self._db, seq)

    def close_interrupted(self) -> int:
        """Mark ``interrupted`` every open record whose process is gone (killed, crashed,
        power cut); returns how many. Records of live processes (another window, a CLI
        run at the same time, this process) are left alone."""
        marks = ",".join("?" * len(OPEN_STATUSES))

        def work() -> int:
            rows = self._db.execute(
                f"SELECT id, pid FROM sends WHERE status IN ({marks})", OPEN_STATUSES
            ).fetchall()
            dead = [rid for rid, pid in rows if not _process_alive(pid)]
            for rid in dead:
                self._db.execute(
                    "UPDATE sends SET status = 'interrupted', updated_at = ?, error = "
                    "COALESCE(error, 'the sending process ended before the answer was "
                    "complete') WHERE id = ?", (_now(), rid))
                self._event(rid, "update", ("status", "updated_at", "error"))
            return len(dead)

        with self._lock:                     # a cheap look first: most opens find none
            if not self._db.execute(f"SELECT count(*) FROM sends WHERE status IN ({marks})",
                                    OPEN_STATUSES).fetchone()[0]:
                return 0
        count = self._write(work)
        if count:
            self._changed()
        return count

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
        conversation: str | None = None,
        turn: int | None = None,
    ) -> int:
        """Insert a record and commit it (durably) before anything is sent.

        There is deliberately no ``seed`` parameter: the seed never reaches the log.
        ``privacy_epsilon`` is the ε the send spends on its document (the ε ledger);
        ``conversation``/``turn`` which conversation of the document it belongs to.
        """
        now = _now()

        def work() -> int:
            cur = self._db.execute(
                """INSERT INTO sends (created_at, updated_at, status, kind, provider, model, url,
                   method, epsilon, task, doc_sha256, doc_norm_sha256, doc_minhash,
                   original_text, payload, input_tokens, token_method, cost_estimate,
                   predicted_utility, overrides, pid, privacy_epsilon, conversation, turn)
                   VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)""",
                (now, now, status, kind, provider, model, url, method, epsilon, task,
                 fingerprint.sha256, fingerprint.norm_sha256,
                 json.dumps(list(fingerprint.minhash)) if fingerprint.minhash else None,
                 original_text, payload, input_tokens, token_method, cost_estimate,
                 predicted_utility, json.dumps(sorted(overrides)), os.getpid(),
                 privacy_epsilon, conversation, turn),
            )
            record_id = int(cur.lastrowid)
            self._event(record_id, "begin", _COLUMNS)
            return record_id

        record_id = self._write(work)
        self._changed()
        return record_id

    _UPDATABLE = frozenset(_COLUMNS) - {"id", "created_at", "doc_sha256", "doc_norm_sha256",
                                        "doc_minhash", "payload", "kind", "pid",
                                        "privacy_epsilon", "conversation", "turn"}

    def update(self, record_id: int, **fields: Any) -> None:
        """Update some fields of a record (each call is one durable commit, waiting its
        turn behind other writers); :class:`AuditWriteError` when it cannot be written."""
        self._update(record_id, fields, quick=False)
        self._changed()

    def try_update(self, record_id: int, **fields: Any) -> bool:
        """:meth:`update` if the log can be written at once (a checkpoint that must not
        hold up a streaming answer); False when it could not, nothing raised."""
        try:
            self._update(record_id, fields, quick=True)
        except AuditWriteError:
            return False
        self._changed()
        return True

    def _update(self, record_id: int, fields: dict[str, Any], *, quick: bool) -> None:
        bad = set(fields) - self._UPDATABLE
        if bad:
            raise ValueError(f"cannot update {sorted(bad)}")
        fields["updated_at"] = _now()
        cols = ", ".join(f"{k} = ?" for k in fields)

        def work() -> None:
            cur = self._db.execute(f"UPDATE sends SET {cols} WHERE id = ?",
                                   (*fields.values(), record_id))
            if cur.rowcount:
                self._event(record_id, "update", fields)

        self._write(work, quick=quick)

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
        for rid, created, provider, method, eps, sha, norm, mh, spent, conv in \
                self._sent_rows():
            if rid == exclude_id:
                continue
            found = match_kind(fingerprint, sha, norm, mh)
            if found is not None:
                out.append(PriorSend(rid, created, provider, method, eps, *found,
                                     spent=ledger_epsilon(spent, eps), conversation=conv))
        return out

    def _sent_rows(self) -> list[tuple]:
        """The send records the ledger counts (the text may have left the machine)."""
        marks = ",".join("?" * len(SENT_STATUSES))
        with self._lock:
            return self._db.execute(
                f"""SELECT id, created_at, provider, method, epsilon, doc_sha256,
                    doc_norm_sha256, doc_minhash, privacy_epsilon, conversation FROM sends
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
        for i, (rid, _c, _p, _m, eps, sha, norm, mh, spent, _conv) in enumerate(rows):
            if rid not in wanted:
                continue
            fp = Fingerprint(sha, norm, tuple(json.loads(mh)) if mh else ())
            total = ledger_epsilon(spent, eps)
            for prior in rows[:i]:
                if match_kind(fp, prior[5], prior[6], prior[7]) is not None:
                    total += ledger_epsilon(prior[8], prior[4])
            out[rid] = total
        return out

    # -- the chain --

    @property
    def log_id(self) -> str:
        with self._lock:
            return audit_events.log_id(self._db)

    def head(self) -> tuple[int, str]:
        """The (seq, hash) of the last chained event."""
        with self._lock:
            return audit_events.head(self._db)

    def events(self, after: int = 0) -> list[ChainEvent]:
        with self._lock:
            return audit_events.read_events(self._db, after)

    def verify(self) -> VerifyReport:
        """Check the chain, every record against it, every event's seal and the log's
        end against its outside record as it is now (one consistent snapshot), and say
        what the check cannot see."""
        state = self.seal
        anchor, _where = self._anchors.read(self.path)   # before the snapshot
        if anchor is not None and anchor.log_id == state.log_id and state.key is not None:
            state = replace(state, losses=anchor.losses, head=anchor.head)
        with self._lock:
            return audit_events.verify_db(self._db, _COLUMNS, state)

    @staticmethod
    def verify_file(path: Path | str, *, secrets: Any = "keyring") -> VerifyReport:
        """Verify the log at ``path`` read-only (an auditor's copy is not changed); its
        seals are checked when this computer keeps the key of the log at that place."""
        return audit_events.verify_file(Path(path), _COLUMNS,
                                        audit_anchor.anchors_for(secrets, paths.config_dir))

    def pending(self, after: int, size: int = 200
                ) -> tuple[list[ChainEvent], list[dict[str, Any]]]:
        """The next events after ``after`` for the central store and the records they
        touch, from one snapshot (see :func:`audit_events.pending`)."""
        with self._lock:
            return audit_events.pending(self._db, after, size, _COLUMNS)

    def synced_seq(self) -> int:
        with self._lock:
            return audit_events.synced_seq(self._db)

    def set_synced_seq(self, seq: int) -> None:
        self._write(lambda: audit_events.set_synced_seq(self._db, seq))

    # -- export --

    def export(self, path: Path | str, *, overwrite: bool = False) -> int:
        """Write all records with their chain to ``path`` (.csv, .jsonl or .json); see
        :mod:`preflight.core.send.audit_export`. Returns the number of records."""
        from preflight.core.send.audit_export import export_log

        return export_log(self, path, overwrite=overwrite)


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
