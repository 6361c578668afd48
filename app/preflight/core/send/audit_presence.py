"""Whether the audit log is the one this computer wrote, for the company rules that read it.

Company rules read the audit log (a resend refused, the ε cap per document: both look
for earlier sends of the document) or ship it (the central store). Deleting the log,
swapping in another one, putting back an older copy or cutting off its newest records
would silently reset them. The log's outside record (:mod:`.audit_anchor`: the OS
keyring, else an owner-only file in the settings folder — never the log's own folder)
holds its id and its last event, moved after every committed write; each open compares
the log with it and keeps what is missing as a **loss** (:mod:`.audit_schema`).

At start, :func:`check_presence` opens the log and looks at the losses nobody accepted
yet. When the company policy has a rule that reads or ships the log
(:attr:`OrgPolicy.needs_audit_history`), a loss of records refuses every send with one
line naming the lost log, until IT lists its id in ``[audit] lost_logs``; the loss is
then accepted (and stays in the record for ``audit verify``). Without such a rule it is
logged and accepted.

What it cannot see: the log *and* its record removed, or both put back from the same
older backup (a user who controls their account can do that; the central store still
holds the old log's copy for IT to compare); edits inside the log are the chain's and
the seal's to find (``preflight audit verify``).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

from preflight.core import paths
from preflight.core.errors import ConfigError, PreflightError
from preflight.core.org_policy import OrgPolicy
from preflight.core.send.audit_anchor import UNREADABLE, anchors_for

log = logging.getLogger(__name__)


def check_presence(org: OrgPolicy, log_path: Path | None = None, *,
                   secrets: object = "keyring") -> OrgPolicy:
    """``org`` as it applies with the audit log at ``log_path`` (default: the user's):
    with a loss nobody accepted and a rule that reads the log, a policy that refuses
    every send."""
    log_path = log_path if log_path is not None else paths.audit_log_path()
    anchor, where = anchors_for(secrets, paths.config_dir).read(log_path)
    if anchor is None and where != UNREADABLE:
        return org              # no record yet: nothing to compare (the first open makes it)
    try:
        if where == UNREADABLE:
            raise ConfigError("its record outside the file could not be read", "")
        from preflight.core.send.audit import AuditLog

        audit = AuditLog(log_path, secrets=secrets)
        try:
            pending = audit.pending_losses
            blocking = [x for x in pending if x.blocks and x.log_id not in org.lost_logs]
            if org.needs_audit_history and blocking:
                lost = blocking[0]
                return replace(org, audit_gap=ConfigError(
                    f"The audit log {log_path} {lost.what}: the log {lost.log_id} that your "
                    "organization's rules read (earlier sends, the ε spent per document) is "
                    "missing.",
                    "Sending is disabled; ask your IT administrator (they can accept the "
                    f"loss by adding \"{lost.log_id}\" to [audit] lost_logs in the company "
                    "policy)."))
            for loss in pending:
                log.warning("the audit log %s %s (log %s); this log is used from now on",
                            log_path, loss.what, loss.log_id)
            if pending:
                audit.accept_losses()
        finally:
            audit.close()
    except PreflightError as exc:
        if not org.needs_audit_history:
            return org
        return replace(org, audit_gap=ConfigError(
            f"The audit log {log_path} cannot be checked ({exc.message}).",
            "Sending is disabled by your organization's policy until it is fixed; ask your "
            "IT administrator."))
    return org
