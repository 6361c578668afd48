"""Bounded samples of a long document, aligned between the original and its sanitization.

The local models cost time and memory in proportion to what they read: the SLM's prompt
evaluation grows with the document (and llama.cpp cut it at the context end anyway,
so a long document's summary only ever covered its first pages), and the embedder reads
every 384-piece window. The refined features therefore look at an *excerpt*: up to
``segments`` evenly spaced runs of words from the original covering at most
``max_words`` words in total, and the sanitized text's matching runs (located through
the change list, so both excerpts cover the same source passages). A document within
the bound is its own excerpt, so short documents — the ones the regressor was trained
on — get exactly the features they had before.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from preflight.core.types import SanitizedText

# ~700 SLM tokens and two embedder windows instead of the whole document. Measured with
# bench_assess_limits: a 1,380-token prompt took SmolLM2-135M 76 s of CPU on this build of
# llama.cpp, so the prompt, not the answer, is what the bound must keep small.
EXCERPT_WORDS = 450
EXCERPT_SEGMENTS = 3
SEPARATOR = "\n\n[…]\n\n"

_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Excerpt:
    original: str
    sanitized: str
    sampled: bool              # False: the excerpts are the whole texts


def source_ranges(text: str, max_words: int = EXCERPT_WORDS,
                  segments: int = EXCERPT_SEGMENTS) -> list[tuple[int, int]]:
    """Character ranges of ``text`` to read: the whole text if it has ≤ ``max_words``
    words, else ``segments`` evenly spaced runs of ``max_words // segments`` words."""
    words = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    if len(words) <= max_words:
        return [(0, len(text))]
    per = max(1, max_words // segments)
    starts = [round(k * (len(words) - per) / (segments - 1)) for k in range(segments)] \
        if segments > 1 else [0]
    return [(words[s][0], words[min(s + per, len(words)) - 1][1]) for s in starts]


def _map_offset(pos: int, sanitized: SanitizedText, *, end: bool) -> int:
    """Where original offset ``pos`` lands in the sanitized text (a position inside a
    changed range snaps to the start, or for ``end`` to the end, of its replacement)."""
    changes = sorted(sanitized.changes, key=lambda c: c.source_start)
    starts = [c.source_start for c in changes]
    i = bisect.bisect_right(starts, pos) - 1
    if i < 0:
        return pos
    c = changes[i]
    if pos < c.source_end:
        return c.end if end else c.start
    return c.end + (pos - c.source_end)


def excerpts(original: str, sanitized: SanitizedText, max_words: int = EXCERPT_WORDS,
             segments: int = EXCERPT_SEGMENTS) -> Excerpt:
    """The aligned excerpts of ``original`` and ``sanitized.text``."""
    ranges = source_ranges(original, max_words, segments)
    if ranges == [(0, len(original))]:
        return Excerpt(original, sanitized.text, False)
    text = sanitized.text
    orig_parts, san_parts = [], []
    for a, b in ranges:
        orig_parts.append(original[a:b])
        sa = _map_offset(a, sanitized, end=False)
        sb = _map_offset(b, sanitized, end=True)
        san_parts.append(text[max(0, sa):max(sa, min(len(text), sb))])
    return Excerpt(SEPARATOR.join(orig_parts), SEPARATOR.join(san_parts), True)


def original_excerpt(original: str, max_words: int = EXCERPT_WORDS,
                     segments: int = EXCERPT_SEGMENTS) -> str:
    """The original's side alone (depends on the original only, so it can be cached)."""
    return SEPARATOR.join(original[a:b] for a, b in source_ranges(original, max_words, segments))
