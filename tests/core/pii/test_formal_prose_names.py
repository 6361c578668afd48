"""Names, dates and facilities as formal prose writes them (minutes, judgments, HR
letters), on the real model: every word of a name is protected, a month beside a day or a
year is a date and no name, and a facility written as one is a facility, not a person."""

from __future__ import annotations

import re

import pytest

from preflight.core.sanitize.policy import DEFAULT_POLICY, PRESETS, Action

pytestmark = pytest.mark.slow

_HONORIFICS = {"Mr", "Mrs", "Ms", "Dr", "Senator", "Councillor", "Professor"}


def _masked(detector, text: str, policy: str = DEFAULT_POLICY) -> set[int]:
    rules = PRESETS[policy]
    out: set[int] = set()
    for span in detector.detect(text):
        if rules.action_for(span, text[span.start:span.end]) != Action.KEEP:
            out.update(range(span.start, span.end))
    return out


def _exposed(detector, text: str, value: str, policy: str = DEFAULT_POLICY) -> list[str]:
    start = text.index(value)
    masked = _masked(detector, text, policy)
    return [w.group() for w in re.finditer(r"[^\W_]+", value)
            if w.group() not in _HONORIFICS
            and not all(i in masked for i in range(start + w.start(), start + w.end()))]


@pytest.mark.parametrize("text, name", [
    # an initial after a title is the person's, not a second title ("M." for Monsieur)
    ("The tenant was represented by Mr M. Okonkwo, a solicitor practising in Leeds.",
     "Mr M. Okonkwo"),
    ("Present: Councillor M. Haverkamp, Mrs. M. O’Dwyer and the clerk.", "Mrs. M. O’Dwyer"),
    ("Present: Councillor M. Haverkamp, Mrs. M. O’Dwyer and the clerk.",
     "Councillor M. Haverkamp"),
    # a double-barrelled surname of two listed surnames (both also dictionary words),
    # after a given name the model takes for a place
    ("Their youngest, Tamsin Doreen Carter-Mason, joined the firm in 2019.",
     "Tamsin Doreen Carter-Mason"),
])
def test_every_word_of_the_name_is_protected(real_detector, text, name):
    assert _exposed(real_detector, text, name) == []


_MAY = ("In May 2021, the works council approved the new rota. The hearings took place on "
        "12 and 13 May 2019 in the main building.")


@pytest.mark.parametrize("text, date", [(_MAY, "May 2021"), (_MAY, "12 and 13 May 2019")])
def test_a_month_beside_a_number_is_a_date_not_a_name(real_detector, text, date):
    start = text.index(date)
    spans = [s for s in real_detector.detect(text) if s.start < start + len(date)
             and start < s.end]
    assert spans and all(s.type == "DATE_TIME" for s in spans), spans


@pytest.mark.parametrize("text, facility", [
    # the model calls the town a person; "the … prison" is a prison
    ("He spent two years in the Keswick prison before the appeal.", "Keswick prison"),
    ("The Dalby court adjourned the hearing twice.", "Dalby court"),
    # the kind of facility written before its name
    ("She has been detained in HM Prison Dunmere since her conviction.",
     "HM Prison Dunmere"),
    # a sentence ends before the facility's name
    ("The claim went to the Court of First Instance. The Selby court dismissed it.",
     "Selby court"),
])
def test_a_facility_is_protected_as_one(real_detector, text, facility):
    assert _exposed(real_detector, text, facility, "everything") == []
    start = text.index(facility)
    assert not [s for s in real_detector.detect(text) if s.type == "PERSON"
                and s.start < start + len(facility) and start < s.end]
