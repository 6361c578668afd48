"""Units of detection and the cache that lets an edit re-analyze only the units it
touched.

The NER model reads each paragraph — text between blank lines — on its own; the
recognizers read a unit of a few short paragraphs at once (:func:`detection_units`),
since each Presidio ``analyze`` call costs about half a millisecond whatever its length
(an e-mail's header, greeting and sign-off are three short paragraphs). A paragraph longer
than a detection window is analyzed in windows
(:func:`~preflight.core.pii.detector.text_windows`). What Presidio found in a unit
depends only on the unit's text and the deny-list, so it is kept, keyed by both,
with offsets relative to the unit; the units a call has not seen are analyzed
together (one batch for the NER model), each distinct text once. Everything that looks
at the whole document
(cleaning against the document's words, person checks, "Surname, Given" pairs, value
propagation, overlaps) runs after, over all units, on every call: an incremental
result is the full pass's result.
"""

from __future__ import annotations

import re
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

_BLANK_LINES = re.compile(r"\n[ \t\r\f\v]*\n\s*")


@dataclass(frozen=True)
class RawResult:
    """A Presidio result reduced to what cleaning reads (same attribute names)."""

    start: int
    end: int
    entity_type: str
    score: float
    recognition_metadata: dict[str, Any]

    def shifted(self, offset: int) -> RawResult:
        return RawResult(self.start + offset, self.end + offset, self.entity_type,
                         self.score, self.recognition_metadata)


def paragraph_units(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each paragraph: the text between runs of blank lines."""
    units, pos = [], 0
    for m in _BLANK_LINES.finditer(text):
        if m.start() > pos:
            units.append((pos, m.start()))
        pos = m.end()
    if pos < len(text):
        units.append((pos, len(text)))
    return [(a, b) for a, b in units if text[a:b].strip()]


#: A unit of short paragraphs ends once it reaches this many characters; a paragraph this
#: long is a unit of its own. With :data:`UNIT_ENDS`, chosen on the speed benchmark's
#: judgments and e-mails (:mod:`preflight_eval.bench_detect`).
UNIT_CHARS = 1_500
#: A unit also ends after a paragraph whose text hashes to 0 modulo this: boundaries set by
#: the paragraphs' own text, so an edit moves at most the boundaries next to it (a
#: boundary counted from the document's start would move every unit after the edit, and
#: the live preview would re-detect them all).
UNIT_ENDS = 5


def detection_units(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each unit the recognizers read at once: consecutive paragraphs
    of :func:`paragraph_units`, joined until one's text ends a unit (:data:`UNIT_ENDS`) or
    the unit reaches :data:`UNIT_CHARS`; a paragraph that long stands alone."""
    units: list[tuple[int, int]] = []
    joined: list[tuple[int, int]] = []      # the paragraphs of the unit being built
    for a, b in paragraph_units(text):
        if b - a >= UNIT_CHARS:
            units += [(joined[0][0], joined[-1][1])] if joined else []
            units.append((a, b))
            joined = []
            continue
        joined.append((a, b))
        if (zlib.crc32(text[a:b].encode("utf-8", "surrogatepass")) % UNIT_ENDS == 0
                or b - joined[0][0] >= UNIT_CHARS):
            units.append((joined[0][0], b))
            joined = []
    return units + ([(joined[0][0], joined[-1][1])] if joined else [])


class ParagraphCache:
    """Values per text, least recently used dropped past ``size``: Presidio's results per
    unit (with the analyzer and deny-list variant), or the NER model's entities per
    paragraph."""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._items: OrderedDict[tuple, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple) -> Any:
        """The value stored under ``key``, or None."""
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
            return hit

    def put(self, key: tuple, value: Any) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def results(self, paragraph: str, variant: tuple, reuse: bool,
                analyze: Callable[[str], list[RawResult]]) -> tuple[RawResult, ...]:
        """The results for ``paragraph`` (relative offsets): cached ones when ``reuse``,
        else ``analyze(paragraph)`` (stored for later)."""
        (found,) = self.results_many([paragraph], variant, reuse,
                                     lambda ps: [analyze(p) for p in ps])
        return found

    def results_many(self, paragraphs: Sequence[str], variant: tuple, reuse: bool,
                     analyze: Callable[[list[str]], Sequence[Sequence[RawResult]]]
                     ) -> list[tuple[RawResult, ...]]:
        """The results for each of ``paragraphs``: cached ones when ``reuse``; the others
        from one ``analyze(texts)`` call over the distinct texts not found (a paragraph
        repeated in the document — a signature, a disclaimer — is analyzed once)."""
        found: dict[str, tuple[RawResult, ...]] = {}
        if reuse:
            for p in paragraphs:
                if (hit := self.get((p, variant))) is not None:
                    found[p] = hit
        missing = list(dict.fromkeys(p for p in paragraphs if p not in found))
        if missing:
            analyzed = [tuple(r) for r in analyze(missing)]
            found.update(zip(missing, analyzed))
            for p, results in zip(missing, analyzed):
                self.put((p, variant), results)
        return [found[p] for p in paragraphs]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
