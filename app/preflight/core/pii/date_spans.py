"""Dates the NER model cut short: "3 March 2024" after a line break is tagged "March 2024".

The model sees the day number at the start of a line as a list number and leaves it out,
which would keep the day readable next to a generalized or placeholder date. A DATE_TIME
span that starts with a month name takes in a day number (1–31, "3rd") right before it.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Sequence

from preflight.core.types import Span

_MONTH = re.compile(r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\b",
                    re.IGNORECASE)
_DAY_BEFORE = re.compile(r"(?<![\w.,/-])(0?[1-9]|[12]\d|3[01])(?:st|nd|rd|th)?\s{1,2}$",
                         re.IGNORECASE)


def complete_dates(text: str, spans: Sequence[Span]) -> list[Span]:
    """``spans`` with every month-first DATE_TIME widened over the day number before it."""
    out = list(spans)
    taken = sorted((s.start, s.end) for s in spans)
    for i, s in enumerate(out):
        if s.type != "DATE_TIME" or not _MONTH.match(text, s.start):
            continue
        m = _DAY_BEFORE.search(text, max(0, s.start - 6), s.start)
        if m is None or any(a < s.start and m.start() < b for a, b in taken):
            continue
        out[i] = dataclasses.replace(s, start=m.start())
    return out
