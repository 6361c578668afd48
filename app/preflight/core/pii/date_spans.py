"""Dates the NER model cut short or made up.

Cut short: "3 March 2024" after a line break is tagged "March 2024" — the model sees the
day number at the start of a line as a list number and leaves it out, which would keep
the day readable next to a generalized or placeholder date. A DATE_TIME span that starts
with a month name takes in a day number (1–31, "3rd") right before it; one that starts
with a day takes in the first day of a range ("12 and 13 May 2019"); a conjunction the
model ran a date into is cut off ("20 May and").

Made up: "the same day", "several days", "a later date", or a bare "12" tagged as a
date name no moment at all; :func:`drop_vague_dates` removes them.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Sequence

from preflight.core.types import Evidence, Span

_MONTH = re.compile(r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\b",
                    re.IGNORECASE)
_DAY_FIRST = re.compile(r"(?:0?[1-9]|[12]\d|3[01])(?:st|nd|rd|th)?\s+" + _MONTH.pattern,
                        re.IGNORECASE)
_RANGE_BEFORE = re.compile(r"(?<![\w.,/-])(?:0?[1-9]|[12]\d|3[01])(?:st|nd|rd|th)?"
                           r"[ \t]*(?:and|to|&|–|-)[ \t]*$", re.IGNORECASE)
# a conjunction the model ran a date into ("20 May and" + " 25 May 1998")
_JOIN_AT_END = re.compile(r"[ \t,]+(?:and|or|to)$", re.IGNORECASE)
_DAY_BEFORE = re.compile(r"(?<![\w.,/-])(0?[1-9]|[12]\d|3[01])(?:st|nd|rd|th)?\s{1,2}$",
                         re.IGNORECASE)


# a preposition the model took into a date ("before Friday"): it names no moment, and
# a stand-in for the whole phrase reads twice once the answer writes "before <DATE_1>"
_LEADING_PREPOSITION = re.compile(r"(?i)(?:before|after|until|till|since|by|on|from|during)"
                                  r"[ \t]+(?=\S)")


def complete_dates(text: str, spans: Sequence[Span]) -> list[Span]:
    """``spans`` with every month-first DATE_TIME widened over the day number before it,
    every day-first one over the first day of a range before it ("12 and" + "13 May
    2019", "3 to" + "5 June"), a conjunction at the end cut off ("20 May and") and a
    preposition at the start ("before Friday")."""
    out = list(spans)
    taken = sorted((s.start, s.end) for s in spans)
    for i, s in enumerate(out):
        if s.type != "DATE_TIME":
            continue
        tail = _JOIN_AT_END.search(text, s.start, s.end)
        if tail is not None and tail.start() > s.start:
            s = out[i] = dataclasses.replace(s, end=tail.start())
        lead = _LEADING_PREPOSITION.match(text, s.start, s.end)
        if lead is not None and lead.end() < s.end:
            s = out[i] = dataclasses.replace(s, start=lead.end())
        if _MONTH.match(text, s.start):
            m = _DAY_BEFORE.search(text, max(0, s.start - 6), s.start)
        elif _DAY_FIRST.match(text, s.start):
            m = _RANGE_BEFORE.search(text, max(0, s.start - 12), s.start)
        else:
            continue
        if m is None or any(a < s.start and m.start() < b for a, b in taken):
            continue
        out[i] = dataclasses.replace(s, start=m.start())
    return out


# Words of a date phrase that point to no moment: anaphora ("the same day"), vague
# amounts ("several days", "a few decades"), bare units. A phrase of these words alone
# names no date and no measurable span of time.
_VAGUE_WORDS = frozenset({
    "same", "later", "earlier", "following", "previous", "preceding", "subsequent",
    "few", "several", "some", "many", "couple", "of", "the", "a", "an", "end",
    "beginning", "start", "middle", "little", "date", "time", "times", "period",
    "periods", "moment", "while", "that", "almost", "about", "around", "nearly",
    "approximately", "over", "more", "than", "less", "at", "least", "long", "short",
    "day", "days", "night", "nights", "week", "weeks", "month", "months", "year", "years",
    "decade", "decades", "hour", "hours", "minute", "minutes", "century", "centuries",
})
_VAGUE_WORD = re.compile(r"[^\W\d_]+|\d+")
# a bare number of one to three digits, or a sum or range of them ("12", "14+8", "62-63")
_BARE_NUMBER = re.compile(r"\d{1,3}(?:[ \t]*[-+–&][ \t]*\d{1,3})*")
# "a year", "an hour": one unit, a measured span
_ONE_UNIT = re.compile(r"(?i)\ban?[ \t]+(?:day|night|week|month|year|decade|hour|minute|"
                       r"century)\b")


def vague_date(value: str) -> bool:
    """``value`` names no date and no measurable time: every word a vague or anaphoric
    one ("the same day", "several days", "some years earlier", "a later date"), or a bare
    number the model read as a date ("12", "14+8")."""
    if _BARE_NUMBER.fullmatch(value.strip()):
        return True
    if _ONE_UNIT.search(value):
        return False
    words = [w.casefold() for w in _VAGUE_WORD.findall(value)]
    return bool(words) and all(w in _VAGUE_WORDS for w in words)


def drop_vague_dates(text: str, spans: Sequence[Span]) -> list[Span]:
    """``spans`` without the NER model's DATE_TIME spans that name no date
    (:func:`vague_date`): nothing in them narrows down a person or an event."""
    return [s for s in spans if not (s.type == "DATE_TIME"
                                     and Evidence.STATISTICAL in s.evidence
                                     and vague_date(text[s.start:s.end]))]
