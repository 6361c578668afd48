"""A provider's answer is hostile input: what it may not do to the screen it lands on.

Applied to every answer as it streams in (:mod:`.stream`), before any face, the audit log
or an export sees it, so the terminal, the window, History and exports all show the same
harmless text:

- **Terminal control is removed.** Escape sequences (CSI: colours, cursor moves, line
  erase; OSC: window titles, OSC 8 hyperlinks, OSC 52 clipboard writes; DCS, SOS, PM,
  APC; their 8-bit C1 forms), every other C0/C1 control character (BEL, backspace, …) and
  the bidirectional embeddings, overrides, isolates and marks that reorder what a line
  appears to say. Newlines and tabs stay; a carriage return becomes a newline, so it cannot
  rewrite the line it is on.
- **Stored secrets are redacted.** Every key value the process knows (the provider's key,
  keys read from the keyring or the environment, secrets of the document's vault:
  :func:`.logfilter.register_secret`) is replaced by ``[REDACTED]`` wherever the provider
  echoes it, even split across chunks or broken up by control sequences.

A sequence split across chunks is held back until it is complete (at most
:data:`MAX_SEQUENCE` characters: an unterminated one loses only its introducer, and the
rest of the answer is shown as text).
"""

from __future__ import annotations

from collections.abc import Iterable

import regex

from preflight.core.send import logfilter

#: The longest control sequence held back waiting for its end (an OSC 52 clipboard write
#: of a few KiB included); longer, it is not a sequence any terminal will complete.
MAX_SEQUENCE = 4096
ESC = "\x1b"
_STRING_INTRO = "\x90\x98\x9d\x9e\x9f"       # 8-bit DCS, SOS, OSC, PM, APC
# One complete sequence, from its introducer on.
_SEQUENCE = regex.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"                                 # CSI
    r"|\x9b[0-?]*[ -/]*[@-~]"                                  # 8-bit CSI
    rf"|(?:\x1b[\]PX^_]|[{_STRING_INTRO}])[^\x07\x1b\x9c]{{0,{MAX_SEQUENCE}}}"
    r"(?:\x07|\x1b\\|\x9c)"                                    # OSC, DCS, SOS, PM, APC
    r"|\x1b[ -/]*[0-OQ-WYZ\\`a-~]"       # any other escape (not the start of the above)
)
# Characters that start something to remove or rewrite.
_SPECIAL = regex.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e"
                         r"\u2066-\u2069]")
_INTRODUCERS = ESC + "\x9b" + _STRING_INTRO


def neutralize(text: str) -> str:
    """``text`` without terminal control or bidi characters (see the module)."""
    guard = AnswerGuard(secrets=())
    return guard.feed(text) + guard.flush()


class AnswerGuard:
    """Stream filter for one answer: ``feed`` each chunk, ``flush`` at the end.

    ``removed`` counts the sequences and characters taken out, ``redacted`` the secrets
    replaced. ``secrets`` None uses every secret the process registered
    (:func:`.logfilter.known_secrets`).
    """

    def __init__(self, secrets: Iterable[str] | None = None) -> None:
        known = logfilter.known_secrets() if secrets is None else secrets
        self._secrets = sorted({s for s in known if s}, key=len, reverse=True)
        self._raw = ""          # received, not yet through the control filter
        self._clean = ""        # filtered, held while it may be the start of a secret
        self.removed = 0
        self.redacted = 0

    def feed(self, chunk: str) -> str:
        self._raw += chunk
        done, self._raw = self._filter(self._raw, final=False)
        return self._release(done, final=False)

    def flush(self) -> str:
        done, self._raw = self._filter(self._raw, final=True)
        return self._release(done, final=True)

    # -- terminal control ---------------------------------------------------------------
    def _filter(self, buf: str, final: bool) -> tuple[str, str]:
        """(filtered text, the tail held back because a sequence may continue)."""
        out: list[str] = []
        i = 0
        while True:
            m = _SPECIAL.search(buf, i)
            if m is None:
                out.append(buf[i:])
                return "".join(out), ""
            j = m.start()
            out.append(buf[i:j])
            ch = buf[j]
            if ch in _INTRODUCERS:
                seq = _SEQUENCE.match(buf, j)
                if seq is not None:
                    self.removed += 1
                    i = seq.end()
                    continue
                if not final and self._may_continue(buf, j):
                    return "".join(out), buf[j:]
                self.removed += 1          # unterminated: the introducer goes, text stays
                i = j + (2 if ch == ESC and j + 1 < len(buf) else 1)
                continue
            if ch == "\r":
                if j + 1 == len(buf) and not final:
                    return "".join(out), buf[j:]          # a "\n" may follow
                out.append("\n")
                i = j + (2 if buf.startswith("\n", j + 1) else 1)
                continue
            if ch in "\n\t":
                out.append(ch)
            else:
                self.removed += 1
            i = j + 1

    @staticmethod
    def _may_continue(buf: str, start: int) -> bool:
        return (len(buf) - start <= MAX_SEQUENCE + 4
                and _SEQUENCE.fullmatch(buf, start, partial=True) is not None)

    # -- secrets ------------------------------------------------------------------------
    def _release(self, text: str, final: bool) -> str:
        """Redact whole secrets in what is filtered; hold a tail that may begin one."""
        self._clean += text
        buf = self._clean
        for secret in self._secrets:
            n = buf.count(secret)
            if n:
                self.redacted += n
                buf = buf.replace(secret, logfilter.REDACTED)
        hold = 0 if final else self._secret_prefix(buf)
        self._clean = buf[len(buf) - hold:] if hold else ""
        return buf[:len(buf) - hold] if hold else buf

    def _secret_prefix(self, text: str) -> int:
        """Length of the longest end of ``text`` that is a proper start of a secret."""
        best = 0
        for secret in self._secrets:
            # Only where the secret's first character occurs can a start of it begin.
            p = text.find(secret[0], max(0, len(text) - len(secret) + 1))
            while p != -1 and len(text) - p > best:
                if secret.startswith(text[p:]):
                    best = len(text) - p
                    break
                p = text.find(secret[0], p + 1)
        return best

    def notes(self) -> list[str]:
        """What the user should know about this answer (empty when nothing was done)."""
        out = []
        if self.removed:
            out.append(f"{self.removed} terminal control or text-direction sequence"
                       f"{'s were' if self.removed != 1 else ' was'} removed from the "
                       "answer (the provider's text cannot move the cursor, rewrite lines, "
                       "set the clipboard or reorder what you read).")
        if self.redacted:
            out.append(f"The answer repeated a stored key or secret {self.redacted} "
                       f"time{'s' if self.redacted != 1 else ''}; it is shown, stored and "
                       f"exported as {logfilter.REDACTED}.")
        return out
