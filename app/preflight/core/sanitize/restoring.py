"""Putting originals back: into the sanitized document (exactly) or into an LLM's answer.

Secrets are never put back into an answer. An answer is text a model wrote; restoring an
API key, a password or a private key into it would place the credential wherever the
model chose — inside a link or an image address the answer pane renders, in a command the
user copies. So for every token whose type is a secret (category SECRET: ``API_KEY``,
``SECRET`` — passwords, private-key blocks, tokens — see
:func:`preflight.core.pii.entities.category_of`) the placeholder stays, and the restored
answer ends with a note: ``1 secret was not restored: <API_KEY_1>``.

Nor is any value put inside a link target the model wrote. ``[see](https://x.example/?q=
<PERSON_1>)``, an autolink, a bare URL or an HTML ``href`` would carry the real name to
whichever host the model chose once the user clicks or a viewer fetches it; the placeholder
stays there (a token is in a link target when the word it sits in — the text since the
last whitespace — holds ``://``, ``mailto:``, ``www.``, ``](``, ``href=`` or ``src=``),
and is restored in the visible text only.

Restoring the sanitized *document itself* (``preflight restore`` on the file it wrote,
recognized by the sha256 the vault was bound to) is the exact round trip of the user's own
file, and puts secrets back too: the text is the user's, not a model's.

A restore that fails for any reason never loses the answer: :class:`StreamRestorer` then
passes the rest through as the provider sent it and says so.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Iterable

from preflight.core.pii.entities import category_of
from preflight.core.types import Category

if TYPE_CHECKING:
    from preflight.core.sanitize.vault import Vault, VaultEntry

log = logging.getLogger(__name__)

# What makes the word a token sits in a link target (see the module).
_LINK_MARK = re.compile(r"(?i)://|mailto:|www\.|\]\(|href=|src=")
_MARK_LEN = 7          # the longest mark: a mark split across two pieces is still seen
_SPACE = re.compile(r"\s")


class LinkContext:
    """Follows the text written so far: does it end inside a link target?"""

    def __init__(self) -> None:
        self._tail = ""        # the last characters of the current word
        self.inside = False

    def push(self, text: str) -> None:
        if not text:
            return
        last = None
        for last in _SPACE.finditer(text):
            pass
        if last is not None:
            word = text[last.end():]
            self.inside = bool(_LINK_MARK.search(word))
        else:
            word = self._tail + text
            self.inside = self.inside or bool(_LINK_MARK.search(word))
        self._tail = word[-_MARK_LEN:]


def is_secret_type(entity_type: str) -> bool:
    return category_of(entity_type) is Category.SECRET


def withheld_note(tokens: Iterable[str]) -> str:
    """The note shown beside an answer when secrets stayed placeholders ("" when none)."""
    tokens = list(dict.fromkeys(tokens))
    if not tokens:
        return ""
    what = "1 secret was" if len(tokens) == 1 else f"{len(tokens)} secrets were"
    return (f"{what} not restored: {', '.join(tokens)} — credentials are never put back "
            "into a model's answer.")


def in_links_note(tokens: Iterable[str]) -> str:
    """The note shown when placeholders inside link targets were left ("" when none)."""
    tokens = list(dict.fromkeys(tokens))
    if not tokens:
        return ""
    return (f"Left as placeholder{'s' if len(tokens) > 1 else ''} inside a link the model "
            f"wrote: {', '.join(tokens)} — a link could carry the real value to another "
            "site; the visible text is restored.")


RESTORE_FAILED_NOTE = ("Placeholders could not be restored in part of this answer (an "
                       "unexpected error); that part is shown as the provider sent it.")


def _is_document(text: str, vault: Vault) -> bool:
    from preflight.core.sanitize.vault_file import text_sha256

    return bool(vault.sanitized_sha256) and text_sha256(text) == vault.sanitized_sha256


def withheld_secrets(text: str, vault: Vault) -> list[str]:
    """The secret tokens :func:`restore` leaves in ``text`` (none for the document itself)."""
    from preflight.core.sanitize.vault import find_tokens

    if _is_document(text, vault):
        return []
    return list(dict.fromkeys(e.token for _, _, e in find_tokens(text, vault)
                              if is_secret_type(e.type)))


def restore(text: str, vault: Vault, *, exact_forms: bool = True,
            secrets: bool | None = None, in_links: bool | None = None) -> str:
    """Put the originals back for every placeholder and surrogate found in ``text``.

    With ``exact_forms`` (default), a token that appears exactly as often as it replaced
    values gets each recorded spelling back in order — so restoring the sanitized text
    gives the document back character for character. Otherwise every occurrence gets the
    first spelling seen (an LLM answer rarely repeats tokens the same number of times).
    ``secrets``: put secrets back too; None (default) does so only when ``text`` is the
    sanitized document the vault was bound to (see the module). Withheld tokens stay as
    written; :func:`withheld_secrets` lists them. ``in_links``: restore inside link targets
    too; None (default) only in that document (see the module).
    """
    from preflight.core.sanitize.vault import find_tokens

    document = _is_document(text, vault)
    if secrets is None:
        secrets = document
    if in_links is None:
        in_links = document
    found = find_tokens(text, vault)
    link = LinkContext()
    counts: dict[str, int] = {}
    for _, _, e in found:
        counts[e.token] = counts.get(e.token, 0) + 1
    seen: dict[str, int] = {}
    parts: list[str] = []
    cursor = 0
    for s, e_, entry in found:
        parts.append(text[cursor:s])
        link.push(text[cursor:s])
        value = entry.original
        if (not secrets and is_secret_type(entry.type)) or (not in_links and link.inside):
            value = text[s:e_]
        elif exact_forms and entry.forms and counts[entry.token] == len(entry.forms):
            value = entry.forms[seen.get(entry.token, 0)]
        seen[entry.token] = seen.get(entry.token, 0) + 1
        parts.append(value)
        link.push(text[s:e_])
        cursor = e_
    parts.append(text[cursor:])
    return "".join(parts)


class StreamRestorer:
    """Restores a streamed answer chunk by chunk; secrets and tokens inside link targets
    stay placeholders.

    ``feed`` returns all text that can already be restored and holds back only a tail
    that might still become a token (``<PERS`` or ``Maria Lo`` at the end of a chunk);
    ``flush`` returns the rest at the end of the stream. The concatenated output equals
    ``restore(whole_text, vault, exact_forms=False, secrets=False)`` for every way of
    chunking; :meth:`notes` says what was left as it was (:attr:`withheld`: secrets,
    :attr:`in_links`: tokens in link targets) or that restoring failed (:attr:`failed`:
    the rest then passes through unchanged, so the delivered answer is never lost).
    """

    def __init__(self, vault: Vault) -> None:
        self._pattern = vault.pattern
        self._buf = ""      # one character of already-emitted context, then pending text
        self._pos = 0       # where pending text starts in _buf
        self._link = LinkContext()
        self.withheld: list[str] = []
        self.in_links: list[str] = []
        self.failed = False

    def feed(self, chunk: str) -> str:
        if self.failed:
            return chunk
        try:
            return self._feed(chunk)
        except Exception:  # noqa: BLE001 - whatever broke, the answer itself is kept
            return self._give_up()

    def flush(self) -> str:
        if self.failed:
            return ""
        try:
            buf, pos = self._buf, self._pos
            return self._emit(len(buf), list(self._pattern.finditer(buf, pos)))
        except Exception:  # noqa: BLE001
            return self._give_up()

    def notes(self) -> list[str]:
        """What the user should know beside the restored answer."""
        out = [withheld_note(self.withheld), in_links_note(self.in_links)]
        return [n for n in out if n] + ([RESTORE_FAILED_NOTE] if self.failed else [])

    def _give_up(self) -> str:
        log.warning("restoring an answer failed; the rest is shown as received",
                    exc_info=True)
        self.failed = True
        pending, self._buf, self._pos = self._buf[self._pos:], "", 0
        return pending

    def _feed(self, chunk: str) -> str:
        if not chunk:
            return ""
        self._buf += chunk
        buf, pos, n = self._buf, self._pos, len(self._buf)
        pat = self._pattern
        if pat.regex is None:
            return self._emit(n, [])
        # The earliest position whose tail could still grow into a token.
        hold = n
        for i in range(max(pos, n - pat.max_len - 1), n):
            if pat.could_start(buf, i):
                hold = i
                break
        matches = []
        cut = hold
        for m in pat.finditer(buf, pos):
            if m.start() >= cut:
                break
            if m.end() > cut:
                cut = m.start()  # a match straddling the hold point waits as a whole
                break
            matches.append(m)
        return self._emit(cut, matches)

    def _emit(self, cut: int, matches: list) -> str:
        buf = self._buf
        parts: list[str] = []
        cursor = self._pos
        for m in matches:
            entry: VaultEntry | None = self._pattern.entry_for(m)
            before = buf[cursor:m.start()]
            parts.append(before)
            self._link.push(before)
            if entry is not None and is_secret_type(entry.type):
                if entry.token not in self.withheld:
                    self.withheld.append(entry.token)
                parts.append(m.group())
            elif entry is not None and self._link.inside:
                if entry.token not in self.in_links:
                    self.in_links.append(entry.token)
                parts.append(m.group())
            else:
                parts.append(entry.original if entry is not None else m.group())
            self._link.push(m.group())
            cursor = m.end()
        parts.append(buf[cursor:cut])
        self._link.push(buf[cursor:cut])
        # Keep one emitted character: the look-behinds of the pattern need it.
        keep_from = max(cut - 1, 0)
        self._buf = buf[keep_from:]
        self._pos = cut - keep_from
        return "".join(parts)
