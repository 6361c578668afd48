"""The deny-list kept without its values: keyed hashes, the key outside the settings.

A value the user protects for good (a missed password, a codename) is stored as a
:class:`DenyEntry`: a keyed BLAKE2b hash of the value's normalized form (words split on
whitespace, case-folded, joined by one space — how the deny-list has always matched;
BLAKE2b is a MAC by design and about twice as fast as HMAC-SHA256 here, which matters
because every candidate window of a document is hashed) under a per-profile random key,
the length of each of its words (so the recognizer hashes only text windows of that
shape), its kind (a secret or a term) and a masked hint for the Settings page
("S•••••••1"). The key lives in the OS keyring when one works, else in an owner-only file
(0600) beside the settings; each entry names its key by a short id, so a lost key is
noticed instead of silently matching nothing. docs/SECURITY.md says what someone who
reads the settings folder can and cannot learn.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from preflight.core import paths
from preflight.core.errors import ConfigError

log = logging.getLogger(__name__)

SECRET, TERM = "secret", "term"
KEY_FILE = "deny-list.key"
_KEYRING_SERVICE = "preflight"
_KEY_BYTES = 32
_DIGEST_HEX = 32          # 128 bits of the keyed hash: collisions are out of reach
_MAX_HINT_DOTS = 8


@dataclass(frozen=True)
class DenyEntry:
    """One protected value, without the value (see the module doc)."""

    digest: str
    lengths: list[int] = field(default_factory=list)   # characters of each word
    kind: str = TERM
    hint: str = ""
    key_id: str = ""

    @property
    def entity(self) -> str:
        """The entity type its matches get: a secret is a SECRET, a term DENY_LIST."""
        return "SECRET" if self.kind == SECRET else "DENY_LIST"

    def label(self) -> str:
        """What Settings shows: "S•••••••1 · 11 characters · secret"."""
        chars = sum(self.lengths) + max(0, len(self.lengths) - 1)
        words = f"{len(self.lengths)} words, " if len(self.lengths) > 1 else ""
        kind = "secret" if self.kind == SECRET else "name or term"
        return f"{self.hint} · {words}{chars} characters · {kind}"


def normalized(value: str) -> str:
    """The form a value is hashed in: words joined by one space, case-folded."""
    return " ".join(value.split()).casefold()


def is_secret_shaped(value: str) -> bool:
    """A password, key or token rather than a word: one word with a random look (the
    detector's own tests) or a password's (8+ characters, letters and digits, three
    character classes: "Summer2024!")."""
    # the recognizers import Presidio: only when a value is classified, never at load
    from preflight.core.pii.recognizers.prose_secrets import secret_shaped
    from preflight.core.pii.recognizers.secrets import looks_like_secret
    from preflight.core.pii.recognizers.validators import char_classes

    value = value.strip()
    if not value or any(c.isspace() for c in value):
        return False
    if secret_shaped(value) or looks_like_secret(value) is not None:
        return True
    return (len(value) >= 8 and char_classes(value) >= 3
            and any(c.isalpha() for c in value) and any(c.isdigit() for c in value))


def masked(value: str) -> str:
    """At most one character in five shown, never more than two (first, then last)."""
    value = " ".join(value.split())
    shown = min(2, len(value) // 5)
    head = value[:1] if shown else ""
    tail = value[-1:] if shown == 2 else ""
    return head + "•" * min(_MAX_HINT_DOTS, len(value) - shown) + tail


def key_id(key: bytes) -> str:
    return hashlib.blake2b(b"", key=key, digest_size=6, person=b"deny-list key").hexdigest()


def hasher(key: bytes) -> Any:
    """The keyed hash, ready for a value (``.copy()`` it: the key is set up once)."""
    return hashlib.blake2b(key=key, digest_size=_DIGEST_HEX // 2, person=b"deny-list value")


def encoded(value: str) -> bytes:
    return normalized(value).encode("utf-8", "surrogatepass")


def digest(key: bytes, value: str) -> str:
    """The keyed hash of ``value``'s normalized form."""
    h = hasher(key)
    h.update(encoded(value))
    return h.hexdigest()


def make_entry(value: str, key: bytes) -> DenyEntry:
    value = value.strip()
    return DenyEntry(digest=digest(key, value), lengths=[len(w) for w in value.split()],
                     kind=SECRET if is_secret_shaped(value) else TERM,
                     hint=masked(value), key_id=key_id(key))


# -- the key -------------------------------------------------------------------------------
_lock = threading.Lock()
_cache: dict[tuple[str, str], bytes] = {}      # (profile, key id) -> key


def _profile() -> str:
    return os.path.realpath(paths.config_dir())


def key_file() -> Path:
    return paths.config_dir() / KEY_FILE


def _account() -> str:
    return "deny-list key " + hashlib.sha256(_profile().encode()).hexdigest()[:16]


def _keyring_ok() -> bool:
    from preflight.core.send.keys import keyring_status

    try:
        return keyring_status().available
    except Exception:  # noqa: BLE001 - a broken backend is no keyring
        return False


def _decode(text: str | None) -> bytes | None:
    try:
        key = base64.b64decode((text or "").strip(), validate=True)
    except ValueError:
        return None
    return key if len(key) == _KEY_BYTES else None


def _stored_keys() -> list[tuple[bytes, str]]:
    """The keys of this profile: in the keyring, in the file ("keyring"/"file")."""
    found: list[tuple[bytes, str]] = []
    if _keyring_ok():
        try:
            import keyring

            key = _decode(keyring.get_password(_KEYRING_SERVICE, _account()))
            if key is not None:
                found.append((key, "keyring"))
        except Exception as exc:  # noqa: BLE001 - backend errors vary by OS
            log.warning("the OS keyring could not be read (%s)", type(exc).__name__)
    try:
        from preflight.core.fsutil import read_private_text

        key = _decode(read_private_text(key_file(), 256))
        if key is not None:
            found.append((key, "file"))
    except (FileNotFoundError, NotADirectoryError):
        pass
    except OSError as exc:
        log.warning("the deny-list key file cannot be read (%s)", exc.strerror or exc)
    with _lock:
        for key, _ in found:
            _cache[(_profile(), key_id(key))] = key
    return found


def key_for(wanted: str) -> bytes | None:
    """The key whose id is ``wanted`` (None: neither the keyring nor the file has it)."""
    with _lock:
        key = _cache.get((_profile(), wanted))
    if key is not None:
        return key
    return next((k for k, _ in _stored_keys() if key_id(k) == wanted), None)


def current_key() -> bytes:
    """The profile's key, made on first use: in the OS keyring when it works, else in an
    owner-only file beside the settings. Raises ConfigError when neither can hold it."""
    found = _stored_keys()
    if found:
        return found[0][0]
    key = secrets.token_bytes(_KEY_BYTES)
    text = base64.b64encode(key).decode("ascii")
    if _keyring_ok():
        try:
            import keyring

            keyring.set_password(_KEYRING_SERVICE, _account(), text)
            if _decode(keyring.get_password(_KEYRING_SERVICE, _account())) == key:
                return _remember(key)
        except Exception as exc:  # noqa: BLE001 - a locked keyring: use the file
            log.warning("the OS keyring refused the deny-list key (%s)", type(exc).__name__)
    try:
        from preflight.core.fsutil import atomic_write_text

        key_file().parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        atomic_write_text(key_file(), text + "\n", mode=0o600, fsync=True)
    except OSError as exc:
        raise ConfigError(
            f"Preflight cannot keep the key that protects your deny-list "
            f"({exc.strerror or type(exc).__name__}): there is no OS keyring and "
            f"{key_file()} cannot be written.",
            "Make the settings folder writable, or set PREFLIGHT_HOME to a writable folder.",
        ) from None
    return _remember(key)


def _remember(key: bytes) -> bytes:
    with _lock:
        _cache[(_profile(), key_id(key))] = key
    return key


def key_place() -> str:
    """Where the profile's key is (for messages): the keyring, the file, or nowhere yet."""
    found = _stored_keys()
    if not found:
        return "nowhere yet"
    return "the OS keyring" if found[0][1] == "keyring" else str(key_file())


# -- the list --------------------------------------------------------------------------------
def add(entries: list[DenyEntry], value: str) -> DenyEntry | None:
    """Append ``value``'s entry to ``entries`` (None: empty, or already there)."""
    if not value.strip():
        return None
    key = current_key()
    entry = make_entry(value, key)
    same = {(e.digest, e.key_id) for e in entries}
    if (entry.digest, entry.key_id) in same:
        return None
    entries.append(entry)
    return entry


def migrate(clear: list[str], entries: list[DenyEntry]) -> int:
    """Move the clear values of an older settings file into ``entries`` (emptying
    ``clear``); returns how many were added."""
    added = sum(add(entries, value) is not None for value in clear)
    clear.clear()
    return added
