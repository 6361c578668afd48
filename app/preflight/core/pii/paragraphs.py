"""Paragraph units of detection and the cache that lets an edit re-analyze only the
paragraphs it touched.

The detector runs Presidio (and so the NER model) on each paragraph — text between blank
lines — on its own; a paragraph longer than a detection window is analyzed in windows
(:func:`~preflight.core.pii.detector.text_windows`). What Presidio found in a paragraph
depends only on the paragraph's text and the deny-list, so it is kept, keyed by both,
with offsets relative to the paragraph; the paragraphs a call has not seen are analyzed
together (one batch for the NER model), each distinct text once. Everything that looks
at the whole document
(cleaning against the document's words, person checks, "Surname, Given" pairs, value
propagation, overlaps) runs after, over all paragraphs, on every call: an incremental
result is the full pass's result.
"""

from __future__ import annotations

import re
import threading
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


class ParagraphCache:
    """Presidio results per paragraph text (least recently used dropped past ``size``)."""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._items: OrderedDict[tuple, tuple[RawResult, ...]] = OrderedDict()
        self._lock = threading.Lock()

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
            with self._lock:
                for p in paragraphs:
                    hit = self._items.get((p, variant))
                    if hit is not None:
                        self._items.move_to_end((p, variant))
                        found[p] = hit
        missing = list(dict.fromkeys(p for p in paragraphs if p not in found))
        if missing:
            analyzed = [tuple(r) for r in analyze(missing)]
            found.update(zip(missing, analyzed))
            with self._lock:
                for p, results in zip(missing, analyzed):
                    self._items[(p, variant)] = results
                    self._items.move_to_end((p, variant))
                while len(self._items) > self.size:
                    self._items.popitem(last=False)
        return [found[p] for p in paragraphs]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
