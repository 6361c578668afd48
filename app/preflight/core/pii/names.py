"""Person names written "Surname, Given" (reference lists, forms, sign-up sheets).

The NER model tags one half of "Doe, Jane" (or neither). When a person span is one half
of such a pair and the pair stands on its own (a line, a field value after a label, an
item of a ";"-separated list, after "by"), the span is widened to the whole name so the
other half does not leak.
"""

from __future__ import annotations

import dataclasses
import re

from preflight.core.pii.cleaning import LABEL_WORDS, DocTerms
from preflight.core.types import Span

# A capitalized word in any cased script (Latin, Cyrillic, Greek...).
_CAP = r"[^\W\d_a-z](?:[^\W\d_]|['’-](?=[^\W\d_]))+"
_INITIAL = r"(?:[ \t]+[^\W\d_]\.)?"
_PAIR = re.compile(
    rf"(?m)(?:^|[;:(]|\bby\b|\band\b)[ \t]*(?P<surname>{_CAP}),[ \t]+(?P<given>{_CAP}{_INITIAL})"
    r"[ \t]*(?=$|[;)\n]|\.[ \t]*$|,[ \t]*(?:\d|$)|[ \t]+and[ \t])")


def covering_surname_given(text: str, spans: list[Span], terms: DocTerms | None = None
                           ) -> list[Span]:
    """``spans`` with person spans widened to a whole "Surname, Given" pair."""
    persons = [s for s in spans if s.type == "PERSON"]
    if not persons or "," not in text:
        return spans
    others = [(s.start, s.end) for s in spans if s.type != "PERSON"]
    widened: dict[int, Span] = {}
    for m in _PAIR.finditer(text):
        s, e = m.start("surname"), m.end("given")
        words = [m.group("surname"), *m.group("given").split()]
        if any(w.rstrip(".").lower() in LABEL_WORDS for w in words):
            continue
        if any(a < e and s < b for a, b in others):
            continue  # "Paris, Jane": one half is a place
        if terms is not None and any(terms.used_in_lower_case(w) for w in words if len(w) > 2):
            continue  # "However, Jane"
        for i, span in enumerate(spans):
            if span.type == "PERSON" and s <= span.start and span.end <= e \
                    and (span.start, span.end) != (s, e):
                widened[i] = dataclasses.replace(
                    span, start=s, end=e,
                    why=span.why + "; widened to the whole name written surname first")
    if not widened:
        return spans
    return [widened.get(i, span) for i, span in enumerate(spans)]
