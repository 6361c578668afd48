"""Stable placeholders: the same value keeps its token across sends and edits of a document.

The placeholder operator numbers values in order of first appearance, so an edit that adds
a name near the top would renumber everyone (``<PERSON_1>`` becomes ``<PERSON_2>``) and
an answer about the last send would read wrong against the next. A
:class:`PlaceholderMemory` remembers, per document, which token each value got — the
placeholder and pseudonym operators take it as their ``memory`` collaborator, reuse known
tokens, number new values after the highest number ever used, and record the new ones.

A document is what :func:`document_identity` says: the resolved path of a file (edits keep
it), or the hash of the text for stdin; the window passes its open document's identity.
Memories live beside the vaults (``<data dir>/placeholders/<sha256 of the identity>.json``),
owner-only (0600), written atomically. They hold no value in clear: each entry's key is an
HMAC of (kind, type label, value key) under a random per-document salt, and its token is a
placeholder or surrogate — text that already left the machine in a payload. A second
index maps an HMAC of the value key alone to its type label, so a later request can ask
"was this string protected before?" (:meth:`PlaceholderMemory.label_of`) without the
memory holding the value. Nothing here
is ever sent anywhere. A damaged file is set aside (the memory starts empty): it only
steers numbering, so it must never stop a sanitization.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
import secrets
import threading
from pathlib import Path

from preflight.core.fsutil import NotARegularFile, atomic_write_text, read_regular

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
MAX_MEMORY_BYTES = 16_000_000
_PLACEHOLDER = re.compile(r"<([A-Z0-9_]+)_([1-9][0-9]*)>")


def document_identity(source: str | Path | None, text: str) -> str:
    """A file's resolved path, or ``sha256:<hash of text>`` for stdin / an unsaved text."""
    if source is not None and str(source) not in ("", "-"):
        return "file:" + str(Path(source).expanduser().resolve())
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return "sha256:" + digest


def memory_path(identity: str, folder: Path | None = None) -> Path:
    if folder is None:
        from preflight.core import paths

        folder = paths.data_dir() / "placeholders"
    name = hashlib.sha256(identity.encode("utf-8", "surrogatepass")).hexdigest()
    return Path(folder) / f"{name}.json"


class PlaceholderMemory:
    """(kind, type label, value key) → token for one document. ``path`` None: in memory
    only (the window's unsaved document)."""

    def __init__(self, path: Path | None = None, *, salt: bytes | None = None,
                 tokens: dict[str, str] | None = None,
                 values: dict[str, str] | None = None) -> None:
        self.path = path
        self._salt = salt if salt is not None else secrets.token_bytes(16)
        self._tokens: dict[str, str] = dict(tokens or {})
        self._values: dict[str, str] = dict(values or {})   # HMAC(value key) -> label
        self._legacy: set[str] | None = None    # labels of entries written before the index
        self._dirty = False
        self._lock = threading.Lock()

    @classmethod
    def open(cls, identity: str, folder: Path | None = None) -> PlaceholderMemory:
        """The memory of document ``identity`` (empty when there is none yet)."""
        path = memory_path(identity, folder)
        try:
            raw: bytes | None = read_regular(path, MAX_MEMORY_BYTES)
        except FileNotFoundError:
            raw = None
        except NotARegularFile as exc:
            # a link, FIFO or device where the memory belongs: neither read nor written
            log.warning("placeholder memory %s is %s; kept in memory only", path, exc.kind)
            return cls(None)
        except OSError as exc:
            log.info("placeholder memory not readable (%s); starting empty",
                     type(exc).__name__)
            raw = None
        if raw is None:
            return cls(path)
        try:
            if len(raw) > MAX_MEMORY_BYTES:
                raise ValueError("too large")
            data = json.loads(raw.decode("utf-8"))
            if data.get("schema_version") != SCHEMA_VERSION:
                raise ValueError("unknown schema")
            tokens = data["tokens"]
            values = data.get("values", {})      # absent in files written before the index
            for table in (tokens, values):
                if not isinstance(table, dict) or not all(
                        isinstance(k, str) and isinstance(v, str) for k, v in table.items()):
                    raise ValueError("bad tokens")
            return cls(path, salt=bytes.fromhex(data["salt"]), tokens=tokens, values=values)
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            log.info("placeholder memory damaged (%s); starting empty", exc)
            return cls(path)

    def _key(self, kind: str, label: str, value_key: str) -> str:
        msg = f"{kind}\0{label}\0{value_key}".encode("utf-8", "surrogatepass")
        return hmac.digest(self._salt, msg, "sha256").hex()[:32]

    def token_for(self, kind: str, label: str, value_key: str) -> str | None:
        return self._tokens.get(self._key(kind, label, value_key))

    def record(self, kind: str, label: str, value_key: str, token: str) -> None:
        key = self._key(kind, label, value_key)
        index = self._key("value", "", value_key)
        with self._lock:     # the window's lanes sanitize and send with one memory
            if self._tokens.get(key) != token:
                self._tokens[key] = token
                self._dirty = True
                self._legacy = None
            if self._values.get(index) != label:
                self._values[index] = label
                self._dirty = True

    def label_of(self, value_key: str) -> str | None:
        """The type label a value with this key was protected under in an earlier
        sanitization of the document, or None. Entries recorded before the value index
        existed are found through the placeholder labels their tokens carry."""
        label = self._values.get(self._key("value", "", value_key))
        if label is not None:
            return label
        for known in self._legacy_labels():
            if self.token_for("placeholder", known, value_key) is not None:
                return known
        return None

    def _legacy_labels(self) -> set[str]:
        if len(self._values) >= len(self._tokens):
            return set()          # every entry is indexed
        if self._legacy is None:
            self._legacy = {m.group(1) for t in self._tokens.values()
                            if (m := _PLACEHOLDER.fullmatch(t))}
        return self._legacy

    def highest(self, label: str) -> int:
        """The highest number any placeholder ``<label_N>`` of this document ever had."""
        top = 0
        for token in self._tokens.values():
            m = _PLACEHOLDER.fullmatch(token)
            if m and m.group(1) == label:
                top = max(top, int(m.group(2)))
        return top

    def __len__(self) -> int:
        return len(self._tokens)

    def save(self) -> Path | None:
        """Write the memory (owner-only, atomically) if it changed; returns its path."""
        with self._lock:
            if self.path is None or not self._dirty:
                return self.path
            data = {"schema_version": SCHEMA_VERSION, "salt": self._salt.hex(),
                    "tokens": self._tokens, "values": self._values}
            atomic_write_text(self.path, json.dumps(data, sort_keys=True), mode=0o600)
            self._dirty = False
            return self.path
