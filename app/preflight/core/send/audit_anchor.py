"""The audit log's outside record (the *anchor*): what this computer remembers of the log
at one place, kept where the log file is not.

One record per log place (the log file's real folder and name): in the OS keyring
(service ``preflight``, entry ``audit-log:<digest of the place>``) or, on a computer
without a keyring, in an owner-only file under ``config_dir()/audit-anchors/``. It holds

- the log's **id** and the **schema version** it reached: a log whose chain is gone or
  whose schema version is lower is never adopted again (:mod:`.audit_schema`);
- the **seal key**, 256 random bits: every chain event is sealed with it
  (:mod:`.audit_seal`);
- the **head**, the log's last event (seq, hash), moved after every committed write —
  only forward, and only along the chain it names (:func:`advance`). A log that ends
  before it, or holds another event at its seq, was cut off, put back from an older copy
  or rewritten (:func:`departure`);
- the **losses** found so far: earlier logs at this place that were deleted, emptied or
  replaced, ends of this log that were cut off, a seal key that was lost. Each stays
  *pending* until the company accepts it (:mod:`.audit_presence`) and is kept afterwards
  for ``audit verify``.

Both checks read this one record: ``audit verify`` (seals, losses, the head) and the
presence check that holds company rules reading the log (:mod:`.audit_presence`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Protocol

log = logging.getLogger(__name__)

ANCHOR_PREFIX = "audit-log:"
KEYRING_SERVICE = "preflight"
ANCHOR_VERSION = 2
MAX_LOSSES = 10            # the losses a record remembers (the newest)
_MAX_ANCHOR_BYTES = 1 << 16
NO_HEAD = (0, "")


def today() -> str:
    return datetime.now(timezone.utc).date().isoformat()


@dataclass(frozen=True)
class Loss:
    """Records this computer wrote that are no longer in the log at this place.

    ``kind``: ``gone`` (log ``log_id`` was deleted or emptied), ``replaced`` (another
    log, ``by``, took its place), ``cut`` (this log ends at event ``last``, before the
    event ``seq`` this computer had recorded), ``fork`` (its event ``seq`` is not the one
    recorded) or ``key`` (its seal key was lost after event ``seq``)."""

    log_id: str
    kind: str
    seq: int                  # the last event this computer had recorded for that log
    found: str                # the day it was found (UTC)
    last: int = 0
    by: str = ""
    accepted: bool = False    # by the company's lost_logs, or without a rule reading it

    @property
    def whole(self) -> bool:
        """The whole log is gone (``audit verify`` notes it); else records of this one."""
        return self.kind in ("gone", "replaced")

    @property
    def blocks(self) -> bool:
        """Whether company rules reading the log must wait for IT (records were lost)."""
        return not self.accepted and self.kind != "key" and self.seq > 0

    @property
    def what(self) -> str:
        """What happened to the log, after "The audit log PATH"."""
        return {"gone": "was deleted or emptied",
                "replaced": f"was replaced (it is log {self.by})",
                "cut": f"is an older copy or was cut off (it ends at event {self.last}; "
                       f"Preflight had written {self.seq})",
                "fork": f"forks from the log Preflight wrote at event {self.seq}",
                "key": "lost its seal key"}[self.kind]

    def problem(self) -> str:
        """What ``audit verify`` reports about the log that lost these records."""
        if self.kind == "cut":
            gone = (f"event {self.seq}" if self.seq == self.last + 1
                    else f"events {self.last + 1}-{self.seq}")
            return (f"{gone} missing: the end of the log was cut off, or an older copy put "
                    f"back, outside Preflight (this computer had recorded event {self.seq} "
                    f"as its last; found {self.found})")
        if self.kind == "fork":
            return (f"event {self.seq} is not the one this computer recorded as the log's "
                    "last: the log was rewritten from there, or an older copy put back and "
                    f"written to (found {self.found})")
        return (f"the log was sealed, but this computer no longer keeps the seal key of its "
                f"events 1-{self.seq} (the keyring entry or anchor file was removed): "
                f"their seals cannot be checked (found {self.found})")

    def note(self) -> str:
        how = ("that file was deleted or emptied" if self.kind == "gone"
               else f"log {self.by} was put in its place")
        return (f"This log replaced an earlier one at the same place (log {self.log_id}): "
                f"{how}, and its records are no longer on this computer.")

    def to_json(self) -> dict[str, Any]:
        return {"log": self.log_id, "kind": self.kind, "seq": self.seq, "found": self.found,
                "last": self.last, "by": self.by, "accepted": self.accepted}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Loss":
        return cls(str(data["log"]), str(data["kind"]), int(data["seq"]),
                   str(data["found"]), int(data.get("last", 0)), str(data.get("by", "")),
                   bool(data.get("accepted", False)))


@dataclass(frozen=True)
class Anchor:
    """The outside record of the log at one place (module doc)."""

    log_id: str
    key: bytes = field(repr=False)
    schema: int
    head: tuple[int, str] = NO_HEAD
    losses: tuple[Loss, ...] = ()

    @property
    def pending(self) -> tuple[Loss, ...]:
        return tuple(loss for loss in self.losses if not loss.accepted)

    def with_loss(self, loss: Loss) -> "Anchor":
        return replace(self, losses=(*self.losses, loss)[-MAX_LOSSES:])

    def accepted(self) -> "Anchor":
        return replace(self, losses=tuple(replace(x, accepted=True) for x in self.losses))

    def to_text(self) -> str:
        return json.dumps({"v": ANCHOR_VERSION, "log_id": self.log_id, "schema": self.schema,
                           "key": base64.b64encode(self.key).decode("ascii"),
                           "head": list(self.head),
                           "losses": [x.to_json() for x in self.losses]},
                          separators=(",", ":"))

    @classmethod
    def from_text(cls, text: str | None) -> "Anchor | None":
        """The record in ``text``; None when there is none or it is damaged (logged)."""
        if not text:
            return None
        try:
            data = json.loads(text)
            key = base64.b64decode(data["key"], validate=True)
            seq, digest = data.get("head") or NO_HEAD
            anchor = cls(str(data["log_id"]), key, int(data["schema"]),
                         (int(seq), str(digest)),
                         tuple(Loss.from_json(x) for x in data.get("losses", ())))
        except (ValueError, KeyError, TypeError, AttributeError):
            log.warning("an audit log anchor could not be read; it is ignored")
            return None
        if len(anchor.key) < 32:
            return None
        from preflight.core.send import logfilter

        logfilter.register_secret(data["key"])      # never in a log line
        return anchor


def departure(head: tuple[int, str], last: int, at_head: str | None) -> str | None:
    """How a chain ending at event ``last``, whose event at the recorded ``head``'s seq
    has hash ``at_head``, departs from that head: "cut", "fork" or None (it continues
    it)."""
    seq, digest = head
    if seq <= 0:
        return None
    if last < seq:
        return "cut"
    return None if at_head == digest else "fork"


def anchor_name(path: Path) -> str:
    """The record's entry name for the log file at ``path`` (its real folder + name)."""
    place = os.path.normcase(os.path.join(os.path.realpath(path.parent), path.name))
    return ANCHOR_PREFIX + hashlib.sha256(place.encode("utf-8")).hexdigest()[:32]


class SecretStore(Protocol):
    """Where records live when there is a keyring (:class:`OsKeyring`, or a test's)."""

    def available(self) -> bool: ...

    def get(self, name: str) -> str | None: ...

    def set(self, name: str, value: str) -> None: ...


class OsKeyring:
    """The OS keyring, used directly: a record is not an API key (it changes at every
    write, and only its seal key is a secret for the log filter)."""

    def available(self) -> bool:
        from preflight.core.send.keys import keyring_status

        return keyring_status().available

    def get(self, name: str) -> str | None:
        import keyring

        return keyring.get_password(KEYRING_SERVICE, name)

    def set(self, name: str, value: str) -> None:
        import keyring

        keyring.set_password(KEYRING_SERVICE, name, value)


UNREADABLE = "unreadable"    # where a record is, when its keyring or file did not answer


class Anchors:
    """Reads and writes records: in ``store`` (the OS keyring) when it works, else as
    owner-only files under ``fallback_dir`` (None: no fallback, the log is unsealed)."""

    def __init__(self, store: SecretStore | None, fallback_dir: Path | None) -> None:
        self._store, self._dir = store, fallback_dir

    @property
    def where(self) -> str:
        """Where new records go ("keyring", "file" or "nowhere")."""
        if self._keyring_ok():
            return "keyring"
        return "file" if self._dir is not None else "nowhere"

    def _keyring_ok(self) -> bool:
        if self._store is None:
            return False
        try:
            return bool(self._store.available())
        except Exception:  # noqa: BLE001 - a broken backend is no keyring
            return False

    def _file(self, name: str) -> Path | None:
        return None if self._dir is None else self._dir / f"{name.replace(':', '-')}.json"

    def read(self, path: Path) -> tuple[Anchor | None, str]:
        """The record of the log at ``path`` and where it was found ("keyring", "file";
        "" when there is none; :data:`UNREADABLE` when the keyring or the file did not
        answer — nothing may then be written over it)."""
        name = anchor_name(path)
        if self._keyring_ok():
            try:
                text = self._store.get(name)  # type: ignore[union-attr]
            except Exception as exc:  # noqa: BLE001 - backend errors vary by OS
                log.warning("the OS keyring could not be read (%s)", type(exc).__name__)
                return None, UNREADABLE
            found = Anchor.from_text(text)
            if found is not None:
                return found, "keyring"
        file = self._file(name)
        if file is None:
            return None, ""
        try:
            from preflight.core.fsutil import read_private_text

            found = Anchor.from_text(read_private_text(file, _MAX_ANCHOR_BYTES))
        except (FileNotFoundError, NotADirectoryError):
            return None, ""
        except OSError as exc:
            log.warning("the audit log anchor %s cannot be read (%s)", file,
                        exc.strerror or exc)
            return None, UNREADABLE
        return (found, "file") if found is not None else (None, "")

    def write(self, path: Path, anchor: Anchor, to: str = "") -> str:
        """Keep ``anchor`` — where it was found (``to``: "keyring" or "file"), else in the
        keyring when it works, else in the file; returns where, or "nowhere" (not
        kept). A record is never split between the two."""
        name = anchor_name(path)
        if to != "file" and self._keyring_ok():
            try:
                self._store.set(name, anchor.to_text())  # type: ignore[union-attr]
                return "keyring"
            except Exception as exc:  # noqa: BLE001 - a locked keyring: try the file
                log.warning("the OS keyring refused the audit log anchor (%s)",
                            type(exc).__name__)
        file = self._file(name)
        if file is None or to == "keyring":
            return "nowhere"
        try:
            from preflight.core.fsutil import atomic_write_text

            file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            atomic_write_text(file, anchor.to_text(), mode=0o600, fsync=True)
            return "file"
        except OSError as exc:
            log.warning("the audit log anchor could not be written to %s (%s)", file,
                        exc.strerror or type(exc).__name__)
            return "nowhere"


def anchors_for(secrets: Any, config_dir: Callable[[], Path]) -> Anchors:
    """The records of ``secrets``: "keyring" — the OS keyring, and an owner-only file
    under ``config_dir()/audit-anchors`` where there is none —, None (no record: the log
    is unsealed), or a :class:`SecretStore`."""
    if secrets is None:
        return Anchors(None, None)
    return Anchors(OsKeyring() if secrets == "keyring" else secrets,
                   config_dir() / "audit-anchors")


def advance(anchors: Anchors, path: Path, log_id: str,
            chain: Callable[[int], tuple[tuple[int, str], str | None]]) -> None:
    """After a committed write: move the record's head to the log's last event.

    ``chain(seq)`` gives the log's last event (seq, hash) and the hash of its event at
    ``seq``. Read in that order — the record first, then the log — the log always holds
    the recorded head unless it was cut or rewritten; the head then stays where it is
    (the next open records the loss) and never moves to another log. Two processes
    writing at once may leave it at the older of their two heads until the next write:
    it lags, it never runs ahead of the log."""
    anchor, where = anchors.read(path)
    if anchor is None or anchor.log_id != log_id:
        return
    (last, digest), at_head = chain(anchor.head[0])
    if last <= anchor.head[0] or departure(anchor.head, last, at_head) is not None:
        return
    anchors.write(path, replace(anchor, head=(last, digest)), where)
