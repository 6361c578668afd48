"""Turn overlapping detections into one non-overlapping set before anything is replaced.

Recognizers overlap all the time (a card number is also a "date" to the NER model, an
email contains a URL, two recognizers return the same span). Replacing overlapping spans
corrupts the text, so the detector resolves them first with this rule:

1. Spans of the same type that overlap are merged into their union, keeping the
   recognizer, score and "why" of the best member (pattern evidence, then score).
2. The remaining spans are taken greedily, best first, skipping any that overlaps one
   already taken. "Best" is, in order:
   a. confident (score >= ``CONFIDENT``) before weak: a weak guess of a sensitive type
      (Presidio's phone parser at 0.4 on "07.08.1952") never overrides a confident
      detection of a milder one (a date after "DOB:");
   b. pattern evidence before the statistical NER model: a checksum, a format or a cue
      word ("LLC", "DOB:") is more specific than the small model's constant-score guess
      (it calls IP addresses dates and "Reid LLC" a person);
   c. higher category priority (secret > direct identifier > confidential attribute >
      quasi identifier); d. higher score; e. longer span; f. earlier start, then type
      name (so the result never depends on input order).

A lower-ranked span that only partly overlaps a winner is dropped whole (trimming it would
leave fragments such as half a name); its overlap with the winner is covered anyway. A web
address is the exception (:data:`SPLITTABLE_TYPES`): its host, path and query stand on
their own, so a URL around an order number or a name keeps its parts outside them —
dropping it whole would send its host under a policy that protects URLs.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Iterable

from preflight.core.pii.entities import CATEGORY_PRIORITY
from preflight.core.types import Evidence, Span


def _better(a: Span, b: Span) -> bool:
    """True when ``a`` should represent a merged group rather than ``b`` (pattern evidence,
    then score, then length)."""
    def key(s: Span) -> tuple:
        return (Evidence.STATISTICAL not in s.evidence, s.score, s.end - s.start)
    return key(a) > key(b)


def merge_same_type(spans: Iterable[Span]) -> list[Span]:
    """Merge overlapping spans of the same type into their union."""
    by_type: dict[str, list[Span]] = {}
    for span in spans:
        by_type.setdefault(span.type, []).append(span)
    merged: list[Span] = []
    for group in by_type.values():
        group.sort(key=lambda s: (s.start, -s.end, s.recognizer, s.why))
        start, end, best = group[0].start, group[0].end, group[0]
        for span in group[1:]:
            if span.start < end:  # overlaps the running union (touching spans stay apart)
                end = max(end, span.end)
                best = span if _better(span, best) else best
                continue
            merged.append(_rebuild(best, start, end))
            start, end, best = span.start, span.end, span
        merged.append(_rebuild(best, start, end))
    return merged


def _rebuild(best: Span, start: int, end: int) -> Span:
    if (best.start, best.end) == (start, end):
        return best
    return dataclasses.replace(best, start=start, end=end)


#: Detections at or above this score outrank weaker ones whatever their category.
CONFIDENT = 0.5
#: Types whose parts outside a better detection are still detections of that type.
SPLITTABLE_TYPES = frozenset({"URL"})


def _rank(span: Span) -> tuple:
    return (
        span.score < CONFIDENT,
        Evidence.STATISTICAL in span.evidence,
        -CATEGORY_PRIORITY.get(span.category, 0),
        -span.score,
        -(span.end - span.start),
        span.start,
        span.type,
    )


def resolve_overlaps(spans: Iterable[Span]) -> list[Span]:
    """One non-overlapping set of spans, sorted by start (rule in the module docstring)."""
    candidates = sorted(merge_same_type(spans), key=_rank)
    starts: list[int] = []   # starts of taken spans, sorted
    ends: list[int] = []     # matching ends (taken spans never overlap, so also sorted)
    taken: list[Span] = []

    def free(span: Span) -> bool:
        i = bisect.bisect_right(starts, span.start)
        # neighbour on the left must end before we start; on the right start after we end
        return not (i > 0 and ends[i - 1] > span.start) \
            and not (i < len(starts) and starts[i] < span.end)

    def take(span: Span) -> None:
        i = bisect.bisect_right(starts, span.start)
        starts.insert(i, span.start)
        ends.insert(i, span.end)
        taken.insert(i, span)

    for span in candidates:
        if free(span):
            take(span)
        elif span.type in SPLITTABLE_TYPES:
            for piece in _outside_taken(span, starts, ends):
                take(piece)
    return taken


def _outside_taken(span: Span, starts: list[int], ends: list[int]) -> list[Span]:
    """The parts of ``span`` no taken span covers, sorted; a one-character rest (the "/"
    after a name in a path) is no address of its own."""
    return [_rebuild(span, a, b) for a, b in _outside(span.start, span.end, starts, ends)
            if b - a > 1]


def _outside(start: int, end: int, starts: list[int], ends: list[int]) -> list[tuple[int, int]]:
    """The parts of ``[start, end)`` that no range of the sorted, disjoint ``starts`` /
    ``ends`` covers, sorted."""
    pieces, pos = [], start
    i = max(bisect.bisect_right(starts, start) - 1, 0)
    while i < len(starts) and starts[i] < end:
        if ends[i] > pos:
            if starts[i] > pos:
                pieces.append((pos, starts[i]))
            pos = max(pos, ends[i])
        i += 1
    if pos < end:
        pieces.append((pos, end))
    return pieces


def uncovered(before: Iterable[Span], after: list[Span]) -> list[tuple[int, int]]:
    """The ranges some span of ``before`` covered that no span of ``after`` (the
    non-overlapping spans :func:`resolve_overlaps` returned for them, sorted) covers:
    what resolving left bare. Sorted and disjoint."""
    starts, ends = [s.start for s in after], [s.end for s in after]
    bare: list[tuple[int, int]] = []
    for a, b in sorted(p for s in before for p in _outside(s.start, s.end, starts, ends)):
        if bare and a <= bare[-1][1]:
            bare[-1] = (bare[-1][0], max(b, bare[-1][1]))
        else:
            bare.append((a, b))
    return bare


class CoveringRanges:
    """Does one of these ranges contain [start, end)? In logarithmic time, ranges that
    overlap included (the furthest end reached so far decides). Asked once per match in
    documents of tens of thousands of detections, where a scan of all ranges per question
    would make the whole pass quadratic."""

    def __init__(self, ranges: Iterable[tuple[int, int]]) -> None:
        ordered = sorted(ranges)
        self._starts = [s for s, _ in ordered]
        self._reach: list[int] = []
        for _, e in ordered:
            self._reach.append(max(e, self._reach[-1]) if self._reach else e)

    def contains(self, start: int, end: int) -> bool:
        i = bisect.bisect_right(self._starts, start)
        return i > 0 and self._reach[i - 1] >= end
