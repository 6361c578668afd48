"""One record's writes while an answer arrives: the answer is never lost to the audit log.

A send writes its record many times: before each request leaves (that write must succeed,
or the request does not leave — fail closed), as the answer streams (checkpoints against a
crash), and once at the end. Only the first kind may stop a send. Once the provider has
the text, an audit write that fails — the log busy for too long, a full disk — must not
cost the user the answer they paid for:

- :meth:`RecordWriter.now` writes at once, waiting its turn, and raises
  :class:`~preflight.core.send.audit_db.AuditWriteError` (the caller stops the send);
- :meth:`RecordWriter.soon` tries at once and, when it cannot, keeps the fields for the
  next write (a skipped checkpoint loses nothing while a later one succeeds);
- :meth:`RecordWriter.finish` writes everything still pending, waiting its turn; when even
  that fails it records at least the outcome (a short write that may fit where the answer
  did not) and returns a sentence for the user saying plainly what the log lacks.
"""

from __future__ import annotations

import logging
import sqlite3
from typing import Any

from preflight.core.errors import PreflightError
from preflight.core.send.audit import AuditLog

log = logging.getLogger(__name__)

WRITE_ERRORS = (PreflightError, sqlite3.Error, OSError)
# What a record must say when its answer could not be stored (small: no answer text).
_OUTCOME = ("status", "delivered", "attempts", "requests", "input_tokens", "output_tokens",
            "cost")


class RecordWriter:
    """The writes of record ``record_id`` (module doc)."""

    def __init__(self, audit: AuditLog, record_id: int) -> None:
        self.audit, self.record_id = audit, record_id
        self._pending: dict[str, Any] = {}

    def now(self, **fields: Any) -> None:
        """Write ``fields`` (and anything pending) before going on; raises when it
        cannot — nothing that depends on this write may happen then."""
        self._pending.update(fields)
        self.audit.update(self.record_id, **self._pending)
        self._pending.clear()

    def soon(self, **fields: Any) -> None:
        """Write ``fields`` now if the log is free, else with the next write."""
        self._pending.update(fields)
        try:
            written = self.audit.try_update(self.record_id, **self._pending)
        except WRITE_ERRORS as exc:
            log.warning("audit checkpoint of record %s deferred (%s)", self.record_id,
                        type(exc).__name__)
            return
        if written:
            self._pending.clear()

    def finish(self, **fields: Any) -> str | None:
        """The last write (module doc): None when everything is recorded, else a sentence
        for the user."""
        self._pending.update(fields)
        try:
            self.audit.update(self.record_id, **self._pending)
            self._pending.clear()
            return None
        except WRITE_ERRORS as exc:
            why, hint = _why(exc), getattr(exc, "hint", "")
        log.error("audit record %s could not be completed: %s", self.record_id, why)
        outcome = {k: v for k, v in self._pending.items() if k in _OUTCOME}
        try:
            self.audit.update(self.record_id, **outcome, flow_pending=0, error=(
                f"the answer was delivered and shown, but the audit log could not store "
                f"it: {why}"))
        except WRITE_ERRORS:
            return (f"The answer is shown, but the audit log could not record it ({why}): "
                    f"record {self.record_id} stays incomplete. {hint}").strip()
        return (f"The answer is shown, but the audit log could not store its text ({why}); "
                f"record {self.record_id} says so. {hint}").strip()


def _why(exc: BaseException) -> str:
    """The reason of a failed write in a few words (no path, no value)."""
    reason = getattr(exc, "reason", "")
    if reason:
        return str(reason)
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc) or type(exc).__name__
