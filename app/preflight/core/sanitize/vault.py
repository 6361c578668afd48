"""The local vault of one document, and putting originals back into text.

The placeholder and pseudonym operators record here which token (``<PERSON_1>`` or a
surrogate such as ``Maria Lopez``) stands for which original value. The vault never
leaves the machine: it is a JSON file readable only by its owner, written atomically.

Restoring is tolerant, because it mostly runs on an LLM's answer rather than on the
sanitized text itself: a model may write ``PERSON_1``, ``<person_1>``, ``[PERSON_1]``,
``Person 1`` or ``<PERSON_1>'s``. Surrogates are matched exactly (case-sensitive); a
surrogate that never touched a letter in the document must also stand alone in the
answer, so ``Rome`` is not restored inside ``Romeo``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

import regex

from preflight.core.errors import ConfigError

SCHEMA_VERSION = 1
PLACEHOLDER = "placeholder"
SURROGATE = "surrogate"

_WORD = regex.compile(r"\w")
# A placeholder's number has at most this many digits (a document never holds a billion
# distinct values): a forged ``<PERSON_999…9>`` of thousands of digits is plain text, not
# a token, so restoring never converts it (Python refuses ints of 4,300+ digits).
MAX_NUMBER_DIGITS = 9
_NUMBER = rf"[1-9][0-9]{{0,{MAX_NUMBER_DIGITS - 1}}}"


def is_word_char(ch: str) -> bool:
    return bool(_WORD.match(ch))


def placeholder_token(label: str, number: int) -> str:
    return f"<{label}_{number}>"


@dataclass(frozen=True)
class VaultEntry:
    """One token and the value it hides.

    ``forms`` lists the exact spellings the token replaced, in document order, when they
    differ (``John Smith`` and ``JOHN SMITH`` share one placeholder); restoring the
    sanitized document itself puts each spelling back where it was.
    """

    token: str
    type: str
    original: str
    kind: str                      # PLACEHOLDER | SURROGATE
    forms: tuple[str, ...] = ()
    glued: bool = False            # surrogate touched a letter/digit in the document

    @property
    def label_number(self) -> tuple[str, int]:
        label, _, number = self.token[1:-1].rpartition("_")
        return label, int(number)

    def to_json(self) -> dict[str, Any]:
        return {
            "token": self.token,
            "type": self.type,
            "original": self.original,
            "kind": self.kind,
            "forms": list(self.forms),
            "glued": self.glued,
        }

    @classmethod
    def from_json(cls, data: Any) -> VaultEntry:
        if not isinstance(data, dict):
            raise TypeError("entry is not an object")
        kind = data["kind"]
        if kind not in (PLACEHOLDER, SURROGATE):
            raise ValueError(f"unknown entry kind {kind!r}")
        entry = cls(
            token=_str(data["token"]),
            type=_str(data["type"]),
            original=_str(data["original"]),
            kind=kind,
            forms=tuple(_str(f) for f in data.get("forms", [])),
            glued=bool(data.get("glued", False)),
        )
        if not entry.token:
            raise ValueError("empty token")
        if kind == PLACEHOLDER and not regex.fullmatch(rf"<[A-Z0-9_]+_{_NUMBER}>", entry.token):
            raise ValueError(f"malformed placeholder {entry.token!r}")
        return entry


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected text, got {type(value).__name__}")
    return value


@dataclass
class Vault:
    """Token ↔ original for one document. Mutable: an operator fills it while sanitizing."""

    method: str = ""
    document_sha256: str = ""
    created: str = field(
        default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds")
    )
    document_name: str = ""        # the file name the user gave (messages only)
    sanitized_sha256: str = ""     # sha256 of the sanitized text this vault was issued for
    fingerprint: frozenset[str] = frozenset()   # its word hashes (vault_file.word_fingerprint)
    _entries: dict[str, VaultEntry] = field(default_factory=dict, repr=False)
    _pattern: Any = field(default=None, repr=False, compare=False)

    # -- contents ---------------------------------------------------------------------
    @property
    def entries(self) -> tuple[VaultEntry, ...]:
        return tuple(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, token: str) -> VaultEntry | None:
        return self._entries.get(token)

    def add(self, entry: VaultEntry) -> None:
        self._entries[entry.token] = entry
        self._pattern = None

    def reset(self, method: str, document_sha256: str, entries: Iterable[VaultEntry]) -> None:
        """Replace the whole contents (one vault holds one sanitization of one document)."""
        self.method = method
        self.document_sha256 = document_sha256
        self._entries = {e.token: e for e in entries}
        self._pattern = None
        self.sanitized_sha256, self.fingerprint = "", frozenset()   # bind() sets them again

    @property
    def pattern(self) -> _TokenPattern:
        if self._pattern is None:
            self._pattern = _TokenPattern(self._entries.values())
        return self._pattern

    # -- file -------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "method": self.method,
            "document_sha256": self.document_sha256,
            "created": self.created,
            "document_name": self.document_name,
            "sanitized_sha256": self.sanitized_sha256,
            "fingerprint": sorted(self.fingerprint),
            "entries": [e.to_json() for e in self._entries.values()],
        }

    def bind(self, sanitized_text: str, document_name: str = "") -> None:
        """Record what this vault was issued for, so `restore` can check it belongs.

        Call after the mechanism filled the vault: stores the sanitized text's sha256 and
        its word fingerprint (see :mod:`preflight.core.sanitize.vault_file`).
        """
        from preflight.core.sanitize.vault_file import text_sha256, word_fingerprint

        self.document_name = document_name
        self.sanitized_sha256 = text_sha256(sanitized_text)
        self.fingerprint = frozenset(word_fingerprint(sanitized_text, self._entries))

    def save(self, path: Path | str) -> Path:
        """Write atomically with owner-only permissions (0600); return the path.

        Refuses to replace anything but an older vault of the same document (see
        :func:`preflight.core.sanitize.vault_file.save_vault`).
        """
        from preflight.core.sanitize.vault_file import save_vault

        return save_vault(self, path)

    @classmethod
    def load(cls, path: Path | str) -> Vault:
        from preflight.core.sanitize.vault_file import load_vault

        return load_vault(path)

    @classmethod
    def from_json(cls, data: dict[str, Any], path: Path | str = "the vault") -> Vault:
        damaged_hint = ("The originals it held cannot be recovered from this file; restore "
                        "it from a backup or sanitize the document again.")
        version = data.get("schema_version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise ConfigError(f"The vault file {path} is damaged (bad schema_version).",
                              damaged_hint)
        if version > SCHEMA_VERSION:
            raise ConfigError(f"The vault file {path} was written by a newer Preflight.",
                              "Update Preflight to restore with it.")
        try:
            entries = [VaultEntry.from_json(e) for e in data["entries"]]
            fingerprint = data.get("fingerprint", [])
            if not isinstance(fingerprint, list):
                raise TypeError("fingerprint is not a list")
            vault = cls(created=_str(data.get("created", "")),
                        document_name=_str(data.get("document_name", "")))
            vault.reset(_str(data.get("method", "")), _str(data.get("document_sha256", "")),
                        entries)
            vault.sanitized_sha256 = _str(data.get("sanitized_sha256", ""))
            vault.fingerprint = frozenset(_str(w) for w in fingerprint)
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"The vault file {path} is damaged ({exc}).",
                              damaged_hint) from None
        return vault


# -- matching -------------------------------------------------------------------------

def _label_regex(label: str) -> str:
    # ASCII-only, case-insensitive by explicit classes (a Unicode IGNORECASE would let
    # "ſ" or the Kelvin sign match, which the collision check could not foresee).
    out = []
    for ch in label:
        if ch == "_":
            out.append("[_ ]")
        elif ch.isascii() and ch.isalpha():
            out.append(f"[{ch.upper()}{ch.lower()}]")
        else:
            out.append(regex.escape(ch))
    return "".join(out)


def normalize_label(text: str) -> str:
    return text.upper().replace(" ", "_")


class _TokenPattern:
    """One compiled regex that finds every token of a vault, tolerant to model spellings."""

    def __init__(self, entries: Iterable[VaultEntry]) -> None:
        self.placeholders: dict[tuple[str, int], VaultEntry] = {}
        self.surrogates: dict[str, VaultEntry] = {}
        for e in entries:
            if e.kind == PLACEHOLDER:
                self.placeholders[e.label_number] = e
            else:
                self.surrogates[e.token] = e
        alts: list[str] = []
        for tok in sorted(self.surrogates, key=lambda t: (-len(t), t)):
            e = self.surrogates[tok]
            pre = post = ""
            if not e.glued:
                if is_word_char(tok[0]):
                    pre = r"(?<!\w)"
                if is_word_char(tok[-1]):
                    post = r"(?!\w)"
            alts.append(pre + regex.escape(tok) + post)
        if alts:
            surrogate_part = "(?P<sur>" + "|".join(alts) + ")"
        else:
            surrogate_part = ""
        labels = sorted({lab for lab, _ in self.placeholders}, key=lambda s: (-len(s), s))
        parts = [surrogate_part] if surrogate_part else []
        if labels:
            lab = "|".join(_label_regex(x) for x in labels)
            num = _NUMBER
            parts.append(
                rf"(?:<|\[|\{{|&lt;)\s?(?P<lab>{lab})[_ \-]?(?P<num>{num})(?![0-9])\s?"
                rf"(?:>|\]|\}}|&gt;)"
            )
            parts.append(
                rf"(?<![A-Za-z0-9_])(?P<lab2>{lab})[_ \-]?(?P<num2>{num})(?![0-9])"
            )
        self.max_len = max([len(t) for t in self.surrogates] + [0])
        if labels:
            self.max_len = max(self.max_len, max(len(x) for x in labels) + 30)
        self.regex = regex.compile("|".join(parts)) if parts else None

    def entry_for(self, m: regex.Match[str]) -> VaultEntry | None:
        if self.surrogates and m.group("sur") is not None:
            return self.surrogates.get(m.group("sur"))
        if not self.placeholders:
            return None
        lab = m.group("lab") or m.group("lab2")
        num = m.group("num") or m.group("num2")
        return self.placeholders.get((normalize_label(lab), int(num)))

    def finditer(self, text: str, pos: int = 0, endpos: int | None = None):
        if self.regex is None:
            return iter(())
        if endpos is None:
            return self.regex.finditer(text, pos)
        return self.regex.finditer(text, pos, endpos)

    def could_start(self, text: str, pos: int) -> bool:
        """Whether ``text[pos:]`` is a match, or the beginning of one, if more text came."""
        return self.regex is not None and self.regex.fullmatch(text, pos, partial=True) is not None


def find_tokens(text: str, vault: Vault) -> list[tuple[int, int, VaultEntry]]:
    """Every vault token in ``text`` as ``(start, end, entry)``, left to right."""
    pat = vault.pattern
    found = []
    for m in pat.finditer(text):
        entry = pat.entry_for(m)
        if entry is not None:
            found.append((m.start(), m.end(), entry))
    return found


# Restoring lives in :mod:`.restoring` (secrets are withheld from answers there); the
# names stay importable from here.
from preflight.core.sanitize.restoring import (  # noqa: E402
    StreamRestorer, is_secret_type, restore, withheld_note, withheld_secrets,
)

__all__ = [
    "PLACEHOLDER", "SURROGATE", "StreamRestorer", "Vault", "VaultEntry", "find_tokens",
    "is_secret_type", "is_word_char", "normalize_label", "placeholder_token", "restore",
    "withheld_note", "withheld_secrets",
]
