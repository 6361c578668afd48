"""The answer on the terminal as it streams, ending the way the window ends it.

The window trims an answer the model stopped at the length limit back to its last complete
sentence after the fact. A terminal cannot take back what it printed, so
:class:`SentenceStream` prints up to the last sentence end known so far and holds back the
rest (at most :data:`MAX_HOLD` characters: an answer without sentence ends still streams):
when the answer stops on length the held tail is dropped, otherwise it is printed. For
answers whose sentences are shorter than that, what reaches the terminal is exactly
:func:`finish_answer`'s text.
"""

from __future__ import annotations

from typing import TextIO

from preflight.core.send.answer_text import finish_answer, last_cut, stopped_on_length

_LOOKBACK = 8        # a sentence end may begin a few characters before the new text
#: The most it holds back waiting for a sentence end: an answer without one (a list, code,
#: words without punctuation) still streams, and only this much can be dropped after a
#: length stop.
MAX_HOLD = 240
_SPACE = (" ", "\n", "\t", "\r")


class SentenceStream:
    """Feed it the restored answer chunk by chunk; :meth:`finish` prints what remains."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._pending = ""        # received, not yet printed
        self._scanned = 0         # how far into _pending no sentence end was found
        self.shown: list[str] = []

    def feed(self, chunk: str) -> None:
        self._pending += chunk
        # A sentence end is certain only when the character after it is known: look up
        # to the last whitespace received.
        known = max(self._pending.rfind(c) for c in _SPACE)
        if known <= 0:
            return
        cut = last_cut(self._pending[:known], max(0, self._scanned - _LOOKBACK))
        self._scanned = known
        if cut:
            self._write(self._pending[:cut])
            self._pending = self._pending[cut:]
            self._scanned = known - cut
            known -= cut
        if len(self._pending) > MAX_HOLD and known > 0:
            self._write(self._pending[:known])      # up to the last whitespace received
            self._pending = self._pending[known:]
            self._scanned = 0

    def finish(self, finish_reason: str | None) -> str | None:
        """Print the held tail (or drop it after a length stop); returns the length note
        or None."""
        tail = self._pending.rstrip()
        note = finish_answer("", finish_reason)[1]
        if stopped_on_length(finish_reason):
            cut = last_cut(tail)
            # Nothing in the whole answer ends: it is shown whole, as trim_to_sentence does.
            tail = tail[:cut].rstrip() if cut else ("" if self.shown else tail)
        self._pending = ""
        self._write(tail)
        return note

    @property
    def text(self) -> str:
        """What was printed."""
        return "".join(self.shown)

    def _write(self, text: str) -> None:
        if text:
            self.shown.append(text)
            self._out.write(text)
            self._out.flush()
