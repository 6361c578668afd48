"""Copying the audit log to the company's central store, exactly once and in order.

The local SQLite log stays the source of truth and the queue: nothing is written to the
central store that is not first committed locally, and what the central store holds is
named by *its* head — the (seq, hash) of the last event it received from this log —, not
by a flag on the laptop. :func:`sync_log` asks for that head, checks that the local chain
has the same event there (else the copies diverge: :class:`CentralDivergedError`), and
sends the next events with the records they touch; the sink appends them in one
transaction that fails if the head moved meanwhile (another process of this laptop sent
them first: then it starts again from the new head). A server that dies mid-transaction
keeps nothing of it; a laptop killed after the server's commit resends nothing, because
the next head it reads already covers those events.

The sink (:class:`CentralAuditSink`) is a protocol the runtime implements on PostgreSQL
(:mod:`preflight.runtime.audit_pg`). :class:`AuditSyncJob` is the one background job that
runs :func:`sync_log` when the log changes, retries with a growing pause while the server
is unreachable, and flushes once more at exit (bounded in time).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Protocol, Sequence

from preflight.core.errors import ConfigError, PreflightError
from preflight.core.org_policy_audit import CentralAuditSettings
from preflight.core.send import logfilter
from preflight.core.send.audit import AuditLog
from preflight.core.send.audit_chain import ChainEvent

log = logging.getLogger(__name__)

RETRY_PAUSES_S = (2.0, 10.0, 30.0, 120.0, 300.0)


class CentralUnavailableError(PreflightError):
    """The central store cannot be reached now; records stay queued in the local log."""


class CentralDivergedError(PreflightError):
    """The central copy of this log does not continue the local chain."""


class HeadMovedError(Exception):
    """The central head changed between reading it and appending (another sender)."""


@dataclass(frozen=True)
class LogIdentity:
    log_id: str
    host: str
    user: str


class CentralAuditSink(Protocol):
    """Where records are also written. Every method may raise
    :class:`CentralUnavailableError`."""

    def head(self, log_id: str) -> tuple[int, str]:
        """The (seq, hash) of the last event stored for ``log_id`` ((0, GENESIS): none)."""
        ...

    def append(self, who: LogIdentity, expected_head: tuple[int, str],
               events: Sequence[ChainEvent], records: Sequence[Mapping[str, Any]]) -> None:
        """Store ``events`` (the next ones after ``expected_head``) and the records'
        current values, all or nothing; :class:`HeadMovedError` if the head moved."""
        ...

    def read(self, log_id: str) -> tuple[list[ChainEvent], list[dict[str, Any]],
                                          tuple[int, str]]:
        """Everything stored for ``log_id``: events by seq, each record's latest values by
        id, the head."""
        ...

    def history(self, log_id: str) -> list[tuple[int, dict[str, Any]]]:
        """Every version of every record stored for ``log_id``: (the seq of the event it
        reflects, its values) — the store never changes one, it adds the next."""
        ...

    def close(self) -> None:
        ...


@dataclass(frozen=True)
class LearningPair:
    """One learning pair as it leaves the laptop: the feature vector, the realized
    utility and the provider's names — numbers and names, never document text."""

    pair_id: int
    provider: str
    model: str
    variant: str
    feature_names: tuple[str, ...]
    features: tuple[float | None, ...]
    realized: float
    bundle_format: int


class CentralLearningSink(Protocol):
    """Where the learning pairs go when the company policy shares them."""

    def pairs_head(self, laptop: str) -> int:
        """The highest pair id stored for ``laptop`` (0: none)."""
        ...

    def append_pairs(self, laptop: str, pairs: Sequence[LearningPair]) -> None:
        """Store ``pairs``, all or nothing; a pair stored before is left as it is."""
        ...


@dataclass(frozen=True)
class SyncResult:
    sent_events: int
    sent_records: int
    head: tuple[int, str]       # the central head afterwards
    local_head: tuple[int, str]
    sent_pairs: int = 0         # learning pairs shared (company policy)

    @property
    def pending(self) -> int:
        return self.local_head[0] - self.head[0]


def identity(audit: AuditLog) -> LogIdentity:
    import getpass
    import socket

    try:
        user = getpass.getuser()
    except Exception:  # noqa: BLE001 - no login name (a container): still sync
        user = "unknown"
    return LogIdentity(audit.log_id, socket.gethostname(), user)


def sync_log(audit: AuditLog, sink: CentralAuditSink, *, batch: int = 200,
             deadline: float | None = None, learning: Any = None) -> SyncResult:
    """Send what the central store lacks (see the module doc). ``deadline``
    (``time.monotonic()``) stops between transactions. ``learning``: the flow store
    whose pairs are shared too (only when the company policy says so; the sink is then
    also a :class:`CentralLearningSink`)."""
    who = identity(audit)
    sent_events = sent_records = 0
    central = sink.head(who.log_id)
    while True:
        _check_continues(audit, central)
        events, records = audit.pending(central[0], batch)
        if not events:
            break
        try:
            sink.append(who, central, events, records)
        except HeadMovedError:
            central = sink.head(who.log_id)
            continue
        sent_events += len(events)
        sent_records += len(records)
        central = (events[-1].seq, events[-1].hash)
        audit.set_synced_seq(central[0])
        if deadline is not None and time.monotonic() > deadline:
            break
    audit.set_synced_seq(central[0])
    if sent_events:
        log.info("central audit store: sent %d event(s) of %d record(s)", sent_events,
                 sent_records)
    pairs = sync_pairs(learning, sink, batch=batch) if learning is not None else 0
    return SyncResult(sent_events, sent_records, central, audit.head(), pairs)


def shared_pairs(learning: Any, after_id: int = 0) -> list[LearningPair]:
    """The flow store's pairs after ``after_id`` as they are shared: only the features
    (names and numbers), the realized utility, the variant and the provider's names —
    the pair's meta (method, task, record id…) stays on the laptop."""
    from preflight.core.utility.fitting import BUNDLE_FORMAT

    out = []
    for p in learning.pairs():
        meta = p.get("meta") or {}
        provider, model = str(meta.get("provider") or ""), str(meta.get("model") or "")
        if p["id"] <= after_id or not provider:
            continue                    # an unnamed provider's pair trains nothing
        names = tuple(sorted(p["features"]))
        out.append(LearningPair(
            int(p["id"]), provider, model, str(p.get("variant") or "plain"), names,
            tuple(None if p["features"][n] is None else float(p["features"][n])
                  for n in names), float(p["realized"]), BUNDLE_FORMAT))
    return out


def sync_pairs(learning: Any, sink: CentralLearningSink, *, batch: int = 500) -> int:
    """Share the pairs the central store lacks (named by its highest pair id for this
    laptop's pseudonym, like the audit head); returns how many were sent."""
    laptop = learning.laptop_pseudonym()
    pending = shared_pairs(learning, sink.pairs_head(laptop))
    for start in range(0, len(pending), batch):
        sink.append_pairs(laptop, pending[start:start + batch])
    if pending:
        log.info("central store: shared %d learning pair(s)", len(pending))
    return len(pending)


def _check_continues(audit: AuditLog, central: tuple[int, str]) -> None:
    seq, digest = central
    if seq == 0:
        return
    local = audit.events(seq - 1)[:1]
    if not local or local[0].seq != seq or local[0].hash != digest:
        raise CentralDivergedError(
            f"The central audit store holds this log up to event {seq}, but the local log "
            + ("ends before it" if not local or local[0].seq != seq else
               "has a different event there") + ": one of the copies was changed.",
            "Run `preflight audit verify` and `preflight audit verify --central`, and tell "
            "your IT administrator; nothing more is sent until it is resolved.",
            fix="audit-verify")


def central_password(settings: CentralAuditSettings, keystore: Any,
                     environ: Mapping[str, str] | None = None) -> str | None:
    """The password the policy names: its environment variable, else its keyring entry
    (None when it names neither: certificate or trust authentication)."""
    env = os.environ if environ is None else environ
    if settings.password_env:
        value = env.get(settings.password_env, "")
        if value:
            logfilter.register_secret(value)
            return value
    if settings.password_keyring:
        value = keystore.get(settings.password_keyring)
        if value:
            return value
    if settings.password_env or settings.password_keyring:
        names = " or ".join(
            ([f"the environment variable {settings.password_env}"]
             if settings.password_env else [])
            + ([f"the keyring entry '{settings.password_keyring}'"]
               if settings.password_keyring else []))
        raise ConfigError(f"No password for the central audit store: {names} is empty.",
                          "Set it, or run `preflight audit set-password` (keyring).")
    return None


class AuditSyncJob:
    """The one background job that keeps the central copy up to date (module doc)."""

    def __init__(self, run: Callable[[float | None], SyncResult], *,
                 pauses: Sequence[float] = RETRY_PAUSES_S) -> None:
        self._run, self._pauses = run, tuple(pauses)
        self._wake, self._stop = threading.Event(), threading.Event()
        self._lock = threading.Lock()       # one sync at a time (the loop or a flush)
        self.last: SyncResult | None = None
        self.last_error: str | None = None
        self.failing_since: float | None = None   # epoch seconds of the first failure in a row
        self._thread = threading.Thread(target=self._loop, name="preflight-audit-sync",
                                        daemon=True)
        self._wake.set()                    # what earlier sessions left queued goes first
        self._thread.start()

    def wake(self) -> None:
        """The log changed: sync soon (cheap; called after every write)."""
        self._wake.set()

    def _loop(self) -> None:
        failures = 0
        while not self._stop.is_set():
            pause = self._pauses[min(failures, len(self._pauses) - 1)] if failures else None
            self._wake.wait(pause)
            self._wake.clear()
            if self._stop.is_set():
                break
            failures = 0 if self.run_once() else failures + 1

    def run_once(self, deadline: float | None = None) -> bool:
        """One sync now; False when it failed (the reason is in :attr:`last_error`)."""
        with self._lock:
            try:
                self.last = self._run(deadline)
            except PreflightError as err:
                if str(err) != self.last_error:
                    log.warning("central audit store: %s", logfilter.redact(str(err)))
                self.last_error = str(err)
                self._failed()
                return False
            except Exception as exc:  # noqa: BLE001 - a bug must not kill the sending app
                log.error("central audit sync failed (%s)", type(exc).__name__)
                self.last_error = type(exc).__name__
                self._failed()
                return False
            self.last_error, self.failing_since = None, None
            return True

    def _failed(self) -> None:
        if self.failing_since is None:
            self.failing_since = time.time()

    def close(self, flush_s: float = 5.0) -> None:
        """Stop the loop and send what is left, for at most about ``flush_s`` seconds
        (what does not make it stays queued for the next start)."""
        if self._stop.is_set():
            return                          # closed already (services.close, then atexit)
        self._stop.set()
        self._wake.set()
        self._thread.join(flush_s)
        if flush_s > 0:
            self.run_once(time.monotonic() + flush_s)
