"""Whether the audit log is the one this computer wrote: a marker kept outside the log.

Company rules read the audit log (a resend refused, the ε cap per document: both look
for earlier sends of the document) or ship it (the central store). Deleting the log,
swapping in another one or putting back an older copy would silently reset them.
Preflight therefore keeps a **marker** of the log it writes — the log's id and the head of
its hash chain (event number and hash) — in two places outside the log's folder:

* ``config_dir()/audit-marker.json`` (the log lives in ``data_dir()``), rewritten after
  every committed write, never moved back to an earlier event;
* the OS keyring (service ``preflight-audit``, one entry per log path), which holds the
  log's id, when a keyring is in use — it survives deleting Preflight's folders.

At start, :func:`check_presence` compares the log with the marker. A log that is missing,
has another id, or ends before (or forks from) the event the marker names is a **gap**.
When the company policy has a rule that reads or ships the log
(:attr:`OrgPolicy.needs_audit_history`), a gap refuses every send with one line naming
both ids, until IT lists the lost log's id in ``[audit] lost_logs``; the current log is
then adopted. Without such a rule the gap is logged and the current log adopted.

What it cannot see: the log *and* both markers removed (a user who controls their account
can do that; the central store still holds the old log's copy for IT to compare), and
edits inside the log (that is the hash chain's job, ``preflight audit verify``).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from preflight.core import paths
from preflight.core.errors import ConfigError, PreflightError
from preflight.core.fsutil import atomic_write_text
from preflight.core.org_policy import OrgPolicy

log = logging.getLogger(__name__)

KEYRING_SERVICE = "preflight-audit"
MARKER_FILE = "audit-marker.json"
_MAX_MARKER_BYTES = 4096


@dataclass(frozen=True)
class Marker:
    """The log Preflight writes: its id and the last event it saw (seq, hash)."""

    log_id: str
    seq: int = 0
    hash: str = ""


class MarkerStore:
    """The marker's two copies for the log at ``log_path``: a file in the config folder
    and a keyring entry."""

    def __init__(self, log_path: Path | None = None, path: Path | None = None) -> None:
        self.log_path = log_path if log_path is not None else paths.audit_log_path()
        self.path = path if path is not None else paths.config_dir() / MARKER_FILE
        self.account = f"log-id {self.log_path}"

    def read(self) -> tuple[Marker | None, str | None]:
        """(the file's marker, the keyring's log id); None where there is none (a damaged
        file counts as none: the log it would name is still there to be adopted)."""
        return self._read_file(), _keyring(self.account)

    def _read_file(self) -> Marker | None:
        try:
            with open(self.path, "rb") as fh:
                raw = fh.read(_MAX_MARKER_BYTES)
            data = json.loads(raw.decode("utf-8"))
            return Marker(str(data["log_id"]), int(data["seq"]), str(data["hash"]))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("the audit marker %s is unreadable (%s)", self.path, exc)
            return None

    def write(self, marker: Marker) -> None:
        """Store ``marker`` in both places (best effort: a marker that cannot be written
        never stops an audit write)."""
        try:
            atomic_write_text(self.path, json.dumps(
                {"log_id": marker.log_id, "seq": marker.seq, "hash": marker.hash}),
                mode=0o600)
        except OSError as exc:
            log.warning("the audit marker %s cannot be written (%s)", self.path,
                        exc.strerror or exc)
        if _keyring(self.account) != marker.log_id:
            _keyring(self.account, marker.log_id)


def _keyring(account: str, value: str | None = None) -> str | None:
    """The log id in the OS keyring, after storing ``value`` if given (None: none
    stored, or no keyring in use)."""
    from preflight.core.send.keys import keyring_status

    if not keyring_status().available:
        return None
    import keyring

    try:
        if value is not None:
            keyring.set_password(KEYRING_SERVICE, account, value)
            return value
        return keyring.get_password(KEYRING_SERVICE, account)
    except Exception as exc:  # noqa: BLE001 - backend errors vary by OS
        log.warning("the OS keyring could not keep the audit marker (%s)",
                    type(exc).__name__)
        return None


def record(audit: Any, store: MarkerStore) -> None:
    """After a committed write: move the marker to ``audit``'s head — only forward, and
    only for the log the marker names (or when there is none yet): switching to another
    log is :func:`check_presence`'s decision."""
    try:
        ident = Marker(audit.log_id, *audit.head())
        current, _key = store.read()
    except PreflightError as exc:
        log.warning("the audit marker was not updated (%s)", exc.message)
        return
    if current is None or (current.log_id == ident.log_id and ident.seq >= current.seq):
        store.write(ident)


def find_gap(marker: Marker | None, key_id: str | None, log_path: Path) -> tuple[str, str] | None:
    """(what happened, the lost log's id) when the log at ``log_path`` is not the one the
    marker names, else None (no marker: nothing to compare)."""
    expected = (marker.log_id if marker is not None and marker.log_id else None) or key_id
    if expected is None:
        return None
    if not log_path.exists():
        return "was deleted", expected
    from preflight.core.send.audit import AuditLog

    audit = AuditLog(log_path)
    try:
        current = audit.log_id
        if key_id is not None and key_id != current:
            return f"was replaced (it is log {current})", key_id
        if marker is None:
            return None
        if marker.log_id != current:
            return f"was replaced (it is log {current})", marker.log_id
        seq, _ = audit.head()
        if seq < marker.seq:
            return (f"is an older copy (it ends at event {seq}, Preflight had written "
                    f"{marker.seq})"), marker.log_id
        at = audit.events(marker.seq - 1)[:1] if marker.seq else []
        if marker.seq and (not at or at[0].hash != marker.hash):
            return f"forks from the log Preflight wrote at event {marker.seq}", marker.log_id
        return None
    finally:
        audit.close()


def check_presence(org: OrgPolicy, log_path: Path | None = None,
                   store: MarkerStore | None = None) -> OrgPolicy:
    """``org`` as it applies with the audit log at ``log_path`` (default: the user's):
    with a gap and a rule that reads the log, a policy that refuses every send."""
    log_path = log_path if log_path is not None else paths.audit_log_path()
    try:
        store = store if store is not None else MarkerStore(log_path)
        marker, key_id = store.read()
        gap = find_gap(marker, key_id, log_path)
    except PreflightError as exc:
        if not org.needs_audit_history:
            return org
        return replace(org, audit_gap=ConfigError(
            f"The audit log {log_path} cannot be checked ({exc.message}).",
            "Sending is disabled by your organization's policy until it is fixed; ask your "
            "IT administrator."))
    if gap is None:
        if marker is None and log_path.exists():
            _adopt(log_path, store)             # first start with a marker: take this log
        return org
    what, lost = gap
    if org.needs_audit_history and lost not in org.lost_logs:
        return replace(org, audit_gap=ConfigError(
            f"The audit log {log_path} {what}: the log {lost} that your organization's "
            "rules read (earlier sends, the ε spent per document) is missing.",
            f"Sending is disabled; ask your IT administrator (they can accept the loss by "
            f"adding \"{lost}\" to [audit] lost_logs in the company policy)."))
    log.warning("the audit log %s %s (log %s); this log is used from now on", log_path,
                what, lost)
    if log_path.exists():
        _adopt(log_path, store)
    return org


def _adopt(log_path: Path, store: MarkerStore) -> None:
    from preflight.core.send.audit import AuditLog

    audit = AuditLog(log_path)
    try:
        store.write(Marker(audit.log_id, *audit.head()))
    finally:
        audit.close()
