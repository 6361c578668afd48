"""The seal: what ties a local audit log to its place on this computer, so that editing
the log file alone — however consistently — is found.

The hash chain (:mod:`.audit_chain`) has no secret: whoever can write ``audit.sqlite3``
can recompute it, or drop it and lower the schema version so that an open "adopts" the
edited rows as a pre-chain log. Every chain event therefore gets a **seal**,
HMAC-SHA256 of the log id, the event's seq and its hash under a random 256-bit key that
the log's outside record keeps (:mod:`.audit_anchor`: the OS keyring, else an owner-only
file) — never the log. A recomputed chain carries seals that do not match, and an event
without a seal is reported. The same record names the log's id, the schema version it
reached and its last event, so a log whose chain was dropped, whose schema was lowered
or whose newest records were cut off is found too.

What the seal cannot do (:func:`limits` words it for ``audit verify``): someone who can
also write this user's keyring entry (or the anchor file) can forge seals and move the
recorded head — and so can put back an older copy of the log together with the matching
copy of that record.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from preflight.core.send.audit_anchor import NO_HEAD, Loss
from preflight.core.send.audit_chain import ChainEvent, Problem

SEAL_VERSION = 1


@dataclass(frozen=True)
class SealState:
    """What an open found out about a log's chain, its seal and its outside record."""

    log_id: str
    key: bytes | None = field(default=None, repr=False)   # None: events are not sealed
    where: str = ""            # where the record is: "keyring", "file" or "" (none)
    problem: str | None = None  # a fact about the record `audit verify` must report
    losses: tuple[Loss, ...] = ()    # what the record says was lost at this place
    head: tuple[int, str] = NO_HEAD  # the log's last event, as the record holds it
    pending: tuple[Loss, ...] = ()   # losses the company has not accepted yet
    upgraded: bool = False     # an older file was brought up to date

    @property
    def replaced(self) -> tuple[str, ...]:
        """Ids of earlier logs at this place that are gone (oldest first)."""
        return tuple(x.log_id for x in self.losses if x.whole)

    @property
    def sealed_from(self) -> int:
        """Events up to this seq were sealed with a key this computer no longer has."""
        return max((x.seq for x in self.losses if x.kind == "key"
                    and x.log_id == self.log_id), default=0)


def new_key() -> bytes:
    return secrets.token_bytes(32)


def key_id(key: bytes) -> str:
    """A name for a key that reveals nothing of it (kept in the log's ``meta``)."""
    return hashlib.sha256(b"preflight-audit-key-id\0" + key).hexdigest()[:16]


def seal(key: bytes, log_id: str, seq: int, digest: str) -> str:
    message = f"preflight-audit-seal:v{SEAL_VERSION}:{log_id}:{seq}:{digest}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def seal_ok(key: bytes, log_id: str, seq: int, digest: str, mac: str | None) -> bool:
    return mac is not None and hmac.compare_digest(seal(key, log_id, seq, digest), mac)


def check_seals(events: Sequence[ChainEvent], seals: Mapping[int, str], key: bytes,
                log_id: str, after: int = 0) -> list[Problem]:
    """One problem per run of events after ``after`` whose seal is missing or wrong
    (events up to ``after`` were sealed with a key that is lost: reported once, as a
    loss)."""
    bad = [ev for ev in events if ev.seq > after
           and not seal_ok(key, log_id, ev.seq, ev.hash, seals.get(ev.seq))]
    runs: list[list[ChainEvent]] = []
    for ev in bad:
        if runs and runs[-1][-1].seq == ev.seq - 1:
            runs[-1].append(ev)
        else:
            runs.append([ev])
    out = []
    for run in runs:
        first, last = run[0], run[-1]
        which = (f"event {first.seq} (record {first.record_id}) carries"
                 if first is last else f"events {first.seq}-{last.seq} (from record "
                 f"{first.record_id}) carry")
        out.append(Problem(f"{which} no valid seal: rewritten outside Preflight, or "
                           "written while this log's seal key could not be read",
                           first.record_id, first.seq))
    return out


# --- what a verification can and cannot see (said by `audit verify`) --------------------

TAIL = ("It cannot see the newest records removed together with their events (the end of "
        "the log cut off): compare its head with the central store (`preflight audit "
        "verify --central`) or with a head you noted.")
TAIL_SEALED = ("It cannot see the log and that record changed together — both removed, or "
               "both put back from the same older backup —, nor the newest write cut off "
               "if Preflight had not yet recorded it there (it was stopped at that moment, "
               "or another Preflight wrote at the same moment): compare with the central "
               "store (`preflight audit verify --central`).")
SEALED = ("Sealed with a key this computer keeps outside the log ({where}), with the log's "
          "id, schema version and last event: an edit of the log file alone is found, even "
          "one that recomputes the chain, drops it, lowers the schema version or cuts off "
          "the newest records; someone who can also write that record could forge seals.")
UNSEALED = ("Not sealed (no OS keyring and no settings folder when it was written): someone "
            "who rewrites the log file and recomputes every later event is not detected by "
            "this copy alone.")
NOT_CHECKED = ("Its seals were not checked: their key is kept by the computer that wrote the "
               "log, at the log's place. Without them, a consistent rewrite of this copy (its "
               "chain recomputed) is not detected.")
EXPORT = ("An export carries the chain but no seal: a consistent rewrite of the whole export "
          "is found only against the log it came from or the central store.")
CENTRAL = ("The central store keeps what it received: the laptops' login may add rows but not "
           "change or delete them (docs/DEPLOYMENT.md), so a rewritten laptop log no longer "
           "matches it; a database administrator could still change it.")


def limits(kind: str, where: str = "") -> tuple[str, ...]:
    """The plain statements for a check of ``kind``: "sealed" (``where``: keyring or
    file), "unsealed", "not checked", "export" or "central"."""
    first = {"sealed": SEALED.format(where="the OS keyring" if where == "keyring"
                                     else "an owner-only file in the settings folder"),
             "unsealed": UNSEALED, "not checked": NOT_CHECKED, "export": EXPORT,
             "central": CENTRAL}[kind]
    return first, TAIL_SEALED if kind == "sealed" else TAIL
