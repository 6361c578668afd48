"""What an answer means once it is back: where it ends, what was restored, what may be noise.

Shared by the faces (the window's answer pane, the CLI) so they say the same thing:

- an answer the model stopped because it reached the length limit, or that the local model
  was stopped in because it began to repeat itself (:class:`RepeatWatch`), is cut back to
  its last complete sentence and says so (:func:`finish_answer`);
- the result line tells what happened to the protected values (:func:`restoration_line`):
  placeholders are restored only when placeholders were sent, pseudonyms are mapped back,
  and d_X noise cannot be undone;
- after d_X (whole text or hybrid) the answer may repeat noised words: :data:`NOISE_NOTE`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from preflight.core.types import SanitizedText

LENGTH_NOTE = "(answer cut at the length limit — raise it in Settings)"
REPEAT_NOTE = ("(the local model began to repeat itself, so it was stopped; the answer ends "
               "at its last complete sentence)")
#: finish reason of a local answer stopped because it repeated a sentence
REPEAT_REASON = "repeat"
#: a repeated sentence counts as a loop from this many words on ("Thank you." may recur)
REPEAT_MIN_WORDS = 6
NOISE_NOTE = ("Names and numbers in this answer may be noise: d_X replaced words of the "
              "document with nearby words before it was sent, and noise cannot be undone. "
              "Check every name, number and date against the original.")
# finish reasons that mean "stopped at max_tokens" (OpenAI style, Anthropic style)
_LENGTH_REASONS = frozenset({"length", "max_tokens"})
# a sentence ends at . ! ? … (maybe followed by closing quotes/brackets) before a space
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*(?=\s|$)")
_SENTENCE_OR_LINE_END = re.compile(r"[.!?…][\"'”’)\]]*(?=\s)|\n")
_ENDS_WITH_MARK = re.compile(r"[.!?…][\"'”’)\]]*$")
# longer than this without an end, the text is no sentence a loop repeats (code, a table)
_LONGEST_SENTENCE = 2000


def stopped_on_length(finish_reason: str | None) -> bool:
    """Whether the answer was stopped before its end (the length limit or a loop): its last,
    unfinished sentence is dropped."""
    return finish_reason in _LENGTH_REASONS or finish_reason == REPEAT_REASON


class RepeatWatch:
    """Reads an answer as it streams and tells where the first complete sentence of
    :data:`REPEAT_MIN_WORDS` words or more that repeats an earlier one (case and spacing
    aside) starts. A sentence is complete at its end mark and the space after it, or at a
    line break. Each piece costs the unfinished sentence it extends, not the whole answer."""

    def __init__(self) -> None:
        self._tail = ""            # the unfinished sentence so far
        self._offset = 0           # where it starts in the answer
        self._seen: set[str] = set()

    def feed(self, piece: str, *, streaming: bool = True) -> int | None:
        """Where the first repeat starts in the answer so far with ``piece``, or None (and
        ``piece`` is read). ``streaming``: an end mark that ends the text so far completes
        its sentence too, so a loop is caught before that mark is shown (what was shown
        then ends in an unfinished sentence, which :func:`finish_answer` drops)."""
        tail, start = self._tail + piece, 0
        for m in _SENTENCE_OR_LINE_END.finditer(tail):
            at = self._repeat_at(tail[start:m.end()], self._offset + start, keep=True)
            if at is not None:
                return at
            start = m.end()
        if streaming and _ENDS_WITH_MARK.search(tail, start):
            at = self._repeat_at(tail[start:], self._offset + start, keep=False)
            if at is not None:
                return at
        if len(tail) - start > _LONGEST_SENTENCE:      # no sentence: nothing to repeat
            start = len(tail)
        self._tail, self._offset = tail[start:], self._offset + start
        return None

    def _repeat_at(self, sentence: str, offset: int, keep: bool) -> int | None:
        key = " ".join(sentence.lower().split())
        if len(key.split()) < REPEAT_MIN_WORDS:
            return None
        if key in self._seen:
            return offset + len(sentence) - len(sentence.lstrip())
        if keep:
            self._seen.add(key)
        return None


def first_repeat(text: str) -> int | None:
    """Where the first complete sentence that repeats an earlier one starts in ``text``
    (see :class:`RepeatWatch`), or None."""
    return RepeatWatch().feed(text, streaming=False)


def trim_to_sentence(text: str) -> str:
    """``text`` up to its last complete sentence (or line: a list item ends at its line
    break); the text itself when nothing in it ends."""
    body = text.rstrip()
    cut = last_cut(body)
    return body[:cut].rstrip() if cut else body


def last_cut(text: str, start: int = 0) -> int:
    """Where :func:`trim_to_sentence` cuts ``text`` (0: nothing in it ends), looking only
    at ends from ``start`` on (a streaming reader rescans just the new part)."""
    body = text.rstrip()
    ends = [m.end() for m in _SENTENCE_END.finditer(body, start)]
    line = body.rfind("\n", start)
    return max(ends[-1] if ends else 0, line if line > 0 else 0)


def finish_answer(text: str, finish_reason: str | None) -> tuple[str, str | None]:
    """(the answer as shown, a note or None): an answer stopped on length ends cleanly."""
    if not stopped_on_length(finish_reason):
        return text, None
    return trim_to_sentence(text), REPEAT_NOTE if finish_reason == REPEAT_REASON else LENGTH_NOTE


@dataclass(frozen=True)
class Restoration:
    """Which reversible and irreversible changes a payload carried."""

    placeholders: bool      # <PERSON_1>-style tokens: restored from the vault
    pseudonyms: bool        # stand-in names: mapped back from the vault
    noise: bool             # d_X changed words (whole text, hybrid or spans): not undone

    @classmethod
    def of(cls, sanitized: SanitizedText) -> "Restoration":
        actions = sanitized.report.actions or {}
        used = {name for name, count in actions.items() if count} | {sanitized.method}
        return cls("placeholder" in used, "pseudonym" in used,
                   sanitized.method == "dx" or sanitized.epsilon is not None)


def restoration_line(r: Restoration) -> str:
    """One sentence for the result line: what was put back locally, and what could not."""
    if r.placeholders and r.pseudonyms:
        said = "Placeholders and pseudonyms were mapped back to the original values locally"
    elif r.placeholders:
        said = "Placeholders were restored locally"
    elif r.pseudonyms:
        said = "Pseudonyms were mapped back to the original names locally"
    else:
        said = ""
    if r.noise:
        noise = "words changed by d_X noise cannot be restored"
        said = f"{said}; {noise}" if said else f"Nothing was restored: {noise}"
    return (said or "Nothing needed restoring (the policy removed or generalized the "
                     "values)") + "."
