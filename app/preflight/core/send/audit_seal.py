"""The seal: what ties a local audit log to its place on this computer, so that editing
the log file alone — however consistently — is found.

The hash chain (:mod:`.audit_chain`) has no secret: whoever can write ``audit.sqlite3``
can recompute it, or drop it and lower the schema version so that an open "adopts" the
edited rows as a pre-chain log. The seal closes both with something the file does not
hold:

- the **anchor**: made with the log, kept in the OS keyring (service ``preflight``, entry
  ``audit-log:<digest of the log file's place>``) — or, on a computer without a keyring,
  in an owner-only file in the settings folder —, holding the log's id, the schema
  version it reached and a random 256-bit key;
- every chain event gets a **seal**, HMAC-SHA256 under that key of the log id, the
  event's seq and its hash (the ``seals`` table). A recomputed chain carries seals that
  do not match, and an event without a seal is reported;
- an anchor says a chain existed at this place: a log whose events are gone or whose
  schema version is lower than the anchor's is never adopted or sealed again, so its
  rows stay unchained and ``audit verify`` names them.

What the seal cannot do (:func:`limits` words it for ``audit verify``): someone who can
also read this user's keyring (or the anchor file) can forge seals; removing the newest
records together with their events and seals (the tail) leaves a shorter log whose every
seal is valid — only an outside copy of the head (the central store, or a head an
auditor noted) shows that.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence

from preflight.core.send.audit_chain import ChainEvent, Problem

log = logging.getLogger(__name__)

ANCHOR_PREFIX = "audit-log:"
SEAL_VERSION = 1
MAX_REPLACED = 10        # ids of earlier logs at the same place an anchor remembers


@dataclass(frozen=True)
class SealState:
    """What an open found out about a log's chain and seal."""

    log_id: str
    key: bytes | None = field(default=None, repr=False)   # None: events are not sealed
    where: str = ""            # where the anchor is: "keyring", "file" or "" (none)
    problem: str | None = None  # a fact about the anchor `audit verify` must report
    replaced: tuple[str, ...] = ()   # earlier logs at this place (deleted or emptied)
    upgraded: bool = False     # an older file was brought up to date


class SecretStore(Protocol):
    """Where anchors live: the OS keyring (:class:`~preflight.core.send.keys.KeyStore`)."""

    def status(self) -> Any: ...

    def get(self, name: str) -> str | None: ...

    def set(self, name: str, value: str, remember: bool = True) -> None: ...


@dataclass(frozen=True)
class Anchor:
    """What this computer remembers of the log at one place (module doc)."""

    log_id: str
    key: bytes = field(repr=False)
    schema: int
    replaced: tuple[str, ...] = ()    # earlier logs at this place (deleted or emptied)

    def to_text(self) -> str:
        return json.dumps({"v": SEAL_VERSION, "log_id": self.log_id, "schema": self.schema,
                           "key": base64.b64encode(self.key).decode("ascii"),
                           "replaced": list(self.replaced)}, separators=(",", ":"))

    @classmethod
    def from_text(cls, text: str | None) -> "Anchor | None":
        if not text:
            return None
        try:
            data = json.loads(text)
            key = base64.b64decode(data["key"], validate=True)
            anchor = cls(str(data["log_id"]), key, int(data["schema"]),
                         tuple(str(x) for x in data.get("replaced", ())))
        except (ValueError, KeyError, TypeError):
            log.warning("an audit log anchor could not be read; it is ignored")
            return None
        return anchor if len(anchor.key) >= 32 else None

    @property
    def key_id(self) -> str:
        return key_id(self.key)


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
                log_id: str) -> list[Problem]:
    """One problem per run of events whose seal is missing or wrong."""
    bad = [ev for ev in events if not seal_ok(key, log_id, ev.seq, ev.hash, seals.get(ev.seq))]
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


def anchor_name(path: Path) -> str:
    """The anchor's entry name for the log file at ``path`` (its real folder + name)."""
    place = os.path.normcase(os.path.join(os.path.realpath(path.parent), path.name))
    return ANCHOR_PREFIX + hashlib.sha256(place.encode("utf-8")).hexdigest()[:32]


class Anchors:
    """Reads and writes anchors: in ``store`` (the OS keyring) when it works, else as
    owner-only files under ``fallback_dir`` (None: no fallback, the log is unsealed)."""

    def __init__(self, store: SecretStore | None, fallback_dir: Path | None) -> None:
        self._store, self._dir = store, fallback_dir

    @property
    def where(self) -> str:
        """Where new anchors go ("keyring", "file" or "nowhere")."""
        if self._keyring_ok():
            return "keyring"
        return "file" if self._dir is not None else "nowhere"

    def _keyring_ok(self) -> bool:
        if self._store is None:
            return False
        try:
            return bool(self._store.status().available)
        except Exception:  # noqa: BLE001 - a broken backend is no keyring
            return False

    def _file(self, name: str) -> Path | None:
        return None if self._dir is None else self._dir / f"{name.replace(':', '-')}.json"

    def read(self, path: Path) -> tuple[Anchor | None, str]:
        """The anchor of the log at ``path`` and where it was found ("keyring", "file";
        "" when there is none)."""
        name = anchor_name(path)
        if self._keyring_ok():
            found = Anchor.from_text(self._store.get(name))  # type: ignore[union-attr]
            if found is not None:
                return found, "keyring"
        file = self._file(name)
        if file is None:
            return None, ""
        try:
            from preflight.core.fsutil import read_private_text

            return Anchor.from_text(read_private_text(file, 1 << 16)), "file"
        except FileNotFoundError:
            return None, ""
        except OSError as exc:
            log.warning("the audit log anchor %s cannot be read (%s)", file,
                        exc.strerror or exc)
            return None, ""

    def write(self, path: Path, anchor: Anchor) -> str:
        """Keep ``anchor``; returns where ("keyring", "file") or "nowhere" (not kept)."""
        name = anchor_name(path)
        if self._keyring_ok():
            try:
                self._store.set(name, anchor.to_text())  # type: ignore[union-attr]
                return "keyring"
            except Exception as exc:  # noqa: BLE001 - a locked keyring: try the file
                log.warning("the OS keyring refused the audit log anchor (%s)",
                            type(exc).__name__)
        file = self._file(name)
        if file is None:
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
    """The anchors of ``secrets``: "keyring" — the OS keyring, and an owner-only file under
    ``config_dir()/audit-anchors`` where there is none —, None (no seal), or a key store."""
    if secrets is None:
        return Anchors(None, None)
    if secrets == "keyring":
        from preflight.core.send.keys import KeyStore

        secrets = KeyStore()
    return Anchors(secrets, config_dir() / "audit-anchors")


# --- what a verification can and cannot see (said by `audit verify`) --------------------

TAIL = ("It cannot see the newest records removed together with their events (the end of "
        "the log cut off): compare its head with the central store (`preflight audit "
        "verify --central`) or with a head you noted.")
SEALED = ("Sealed with a key this computer keeps outside the log ({where}): an edit of the "
          "log file alone is found, even one that recomputes the chain, drops it or lowers "
          "the schema version; someone who can also read that key could forge seals.")
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
    return first, TAIL
