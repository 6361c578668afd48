"""The vault on disk: safe writing, safe reading, and "does this vault belong here?".

Writing (:func:`save_vault`) never destroys anything but an older vault of the *same*
document: the target must be absent or a regular file (no device, FIFO, socket, folder or
symbolic link), in a folder the user owns, and if it already holds a vault, that vault's
document hash must equal this one's. The file is replaced atomically with mode 0600.

Reading (:func:`load_vault`) goes through :func:`~preflight.core.fsutil.read_regular`: a
link, FIFO or device is refused at once instead of followed or blocking; the size is
bounded and a pathological JSON nesting is reported as a damaged file.

Belonging (:func:`check_vault_fits`): the text given to ``restore`` is either the
sanitized document itself or an answer about it. The vault records the sha256 of the
sanitized text (exact check) and a fingerprint of its words (short hashes of the distinct
words of five letters or more, placeholders excluded). An answer about the document
reuses many of those words; another document's text shares few. Placeholders numbered
the same in every document (``<PERSON_1>``) cannot tell documents apart, which is why the
check looks at the words around them.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any, Iterable

import regex

from preflight.core.errors import ConfigError
from preflight.core.fsutil import NotARegularFile, atomic_write_text, read_regular
from preflight.core.textio import special_kind

MAX_VAULT_BYTES = 64_000_000
# Below this many distinct words an answer is too short to judge; above it, a text whose
# distinct words occur in the vault's document less often than MIN_SHARED is refused.
# An answer about the document reuses most of its distinctive words, an unrelated text few;
# the bar is low on purpose: a wrong refusal has an override (--any-vault).
MIN_JUDGED_WORDS = 8
MIN_SHARED = 0.3

_FP_WORD = regex.compile(r"\p{L}[\p{L}\p{M}\p{N}]{4,}")
_STRICT_PLACEHOLDER = regex.compile(r"<([A-Z][A-Z0-9_]*_[1-9][0-9]*)>")


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _word_hash(word: str) -> str:
    return hashlib.blake2b(word.lower().encode("utf-8", "surrogatepass"),
                           digest_size=4).hexdigest()


def word_fingerprint(text: str, tokens: Iterable[str] = ()) -> set[str]:
    """Short hashes of the distinct words (≥ 5 letters) of ``text``, tokens' words excluded."""
    skip = {w.lower() for t in tokens for w in _FP_WORD.findall(t)}
    return {_word_hash(w) for w in _FP_WORD.findall(text) if w.lower() not in skip}


def _describe(name: str, sha256: str) -> str:
    return f"{name or 'unnamed document'}, sha256 {(sha256 or '')[:12] or 'unknown'}…"


def short_name(vault: Any) -> str:
    """How messages name a vault's document: its file name if known, and a hash prefix."""
    return _describe(getattr(vault, "document_name", ""), vault.document_sha256)


# -- writing --------------------------------------------------------------------------

def _owned(st: os.stat_result) -> bool:
    geteuid = getattr(os, "geteuid", None)
    return geteuid is None or st.st_uid == geteuid()


def check_vault_target(path: Path, document_sha256: str, document_name: str = "") -> None:
    """Refuse a write that could destroy something other than this document's old vault.

    Cheap (a few ``stat`` calls and, if a vault is there, reading it): callers run it
    before long work too, so a bad ``--vault`` fails at once.
    """
    refuse = "Give a new file name with --vault (or leave --vault out: Preflight then " \
             "keeps the vault in its own data folder)."
    try:
        st: os.stat_result | None = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise ConfigError(f"The vault path {path} cannot be used ({exc.strerror}).",
                          refuse) from None
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            raise ConfigError(f"{path} is a symbolic link; Preflight does not write a vault "
                              "through a link.", refuse)
        if stat.S_ISDIR(st.st_mode):
            raise ConfigError(f"{path} is a folder, not a vault file.", refuse)
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(f"{path} is {special_kind(st.st_mode) or 'a special file'}; "
                              "Preflight writes vaults only to regular files.", refuse)
    parent = path.parent
    try:
        pst = os.stat(parent)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return                                 # created by us, 0700, in save_vault
        raise ConfigError(f"The vault folder {parent} cannot be used ({exc.strerror}).",
                          refuse) from None
    if not stat.S_ISDIR(pst.st_mode):
        raise ConfigError(f"{parent} is not a folder.", refuse)
    if not _owned(pst):
        raise ConfigError(f"The folder {parent} belongs to another user; a vault (it holds "
                          "the originals) is only written to a folder you own.", refuse)
    if st is None:
        return
    if not _owned(st):
        raise ConfigError(f"{path} belongs to another user; Preflight does not replace it.",
                          refuse)
    if st.st_size == 0:
        return
    try:
        old = load_vault(path)
    except ConfigError:
        raise ConfigError(f"{path} already exists and is not a vault Preflight can read; "
                          "Preflight does not overwrite it.", refuse) from None
    if old.document_sha256 and old.document_sha256 != document_sha256:
        this = _describe(document_name, document_sha256)
        raise ConfigError(
            f"{path} holds the originals of another document ({short_name(old)}), not of "
            f"this one ({this}); replacing it would lose them.", refuse)


def save_vault(vault: Any, path: Path | str) -> Path:
    """Write ``vault`` to ``path`` (checked by :func:`check_vault_target`), mode 0600."""
    path = Path(path)
    check_vault_target(path, vault.document_sha256, vault.document_name)
    payload = json.dumps(vault.to_json(), ensure_ascii=False, indent=2)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        atomic_write_text(path, payload, mode=0o600, fsync=True)
    except OSError as exc:
        raise ConfigError(
            f"The vault cannot be written to {path} ({exc.strerror or exc}).",
            "Choose a writable folder with --vault, or free some disk space.",
        ) from None
    return path


# -- reading --------------------------------------------------------------------------

def read_vault_json(path: Path | str) -> dict[str, Any]:
    """The parsed JSON object of a vault file, or a ConfigError that says what is wrong."""
    path = Path(path)
    try:
        raw = read_regular(path, MAX_VAULT_BYTES)
    except NotARegularFile as exc:
        raise ConfigError(f"The vault file {path} is {exc.kind}, not a regular file; "
                          "Preflight does not read a vault from it.", exc.hint) from None
    except FileNotFoundError:
        raise ConfigError(f"The vault file {path} does not exist.",
                          "Check the path given with --vault.") from None
    except OSError as exc:
        raise ConfigError(f"The vault file {path} cannot be read ({exc.strerror or exc}).",
                          "Check that you may read it.") from None
    damaged_hint = ("The originals it held cannot be recovered from this file; restore "
                    "it from a backup or sanitize the document again.")
    if len(raw) > MAX_VAULT_BYTES:
        raise ConfigError(f"{path} is larger than any Preflight vault.",
                          "Check that you gave the vault file, not the document.")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"The vault file {path} is damaged (not valid JSON: {exc}).",
                          damaged_hint) from None
    except RecursionError:
        raise ConfigError(f"The vault file {path} is damaged (nested too deeply).",
                          damaged_hint) from None
    if not isinstance(data, dict) or "schema_version" not in data:
        raise ConfigError(f"{path} is not a Preflight vault (no schema_version).",
                          "Check that you gave the vault file, not the document.")
    return data


def load_vault(path: Path | str) -> Any:
    from preflight.core.sanitize.vault import Vault

    return Vault.from_json(read_vault_json(path), Path(path))


# -- belonging ------------------------------------------------------------------------

def check_vault_fits(text: str, vault: Any) -> str | None:
    """Raise ConfigError if ``text`` is clearly not about the vault's document.

    Returns a note for the user when the check could not decide (old vault, short text),
    ``None`` when the vault fits.
    """
    override = "Give the vault written for this text, or pass --any-vault to restore anyway."
    if not vault.sanitized_sha256:
        return ("this vault was written by an older Preflight; it cannot be checked "
                "against the text.")
    if text_sha256(text) == vault.sanitized_sha256:
        return None                                   # the sanitized document itself
    unknown = sorted({f"<{m}>" for m in _STRICT_PLACEHOLDER.findall(text)
                      if vault.get(f"<{m}>") is None})
    if unknown and any(e.kind == "placeholder" for e in vault.entries):
        raise ConfigError(
            f"The text has placeholders this vault never issued ({', '.join(unknown[:3])}"
            f"{', …' if len(unknown) > 3 else ''}): the vault is of another document "
            f"({short_name(vault)}).", override)
    words = word_fingerprint(text, (e.token for e in vault.entries))
    if len(words) < MIN_JUDGED_WORDS:
        return "the text is too short to check that this vault belongs to it."
    shared = len(words & vault.fingerprint) / len(words)
    if shared < MIN_SHARED:
        raise ConfigError(
            f"This vault belongs to another document ({short_name(vault)}): only "
            f"{shared:.0%} of the text's words occur in that document.", override)
    return None
