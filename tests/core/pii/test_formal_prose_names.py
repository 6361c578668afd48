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


def _span(text: str, value: str, typ: str, recognizer: str = "SpacyRecognizer"):
    from preflight.core.pii.recognizers.base import NER_EVIDENCE
    from preflight.core.types import Category, Span

    start = text.index(value)
    return Span(start, start + len(value), typ, Category.QUASI_IDENTIFIER, 0.85, recognizer,
                "test", NER_EVIDENCE)


@pytest.mark.parametrize("text, tagged, whole", [
    ("The hearings were held on 12 and 13 May 2019 in Leeds.", "13 May 2019",
     "12 and 13 May 2019"),
    ("The office is closed from 3 to 5 June for the move.", "5 June", "3 to 5 June"),
    # a number before the day that is no day of a range stays out
    ("Invoice 40 of 13 May 2019 was paid.", "13 May 2019", "13 May 2019"),
])
def test_the_first_day_of_a_range_joins_the_date(text, tagged, whole):
    from preflight.core.pii.date_spans import complete_dates

    out = complete_dates(text, [_span(text, tagged, "DATE_TIME")])
    assert [text[s.start:s.end] for s in out] == [whole]


@pytest.mark.parametrize("text, tagged, whole", [
    ("In 2009 she joined Halk Bankası A.Ş., a state-owned bank.", "Halk Bankası",
     "Halk Bankası A.Ş."),
    ("The parts came from Novak Stavby s.r.o. in Brno.", "Novak Stavby",
     "Novak Stavby s.r.o."),
    # one initial after a firm is a person's, not a legal form
    ("Minutes: Orvik Logistics J. Berg and two others attended.", "Orvik Logistics",
     "Orvik Logistics"),
])
def test_a_legal_form_after_a_firm_joins_it(text, tagged, whole):
    from preflight.core.pii.cleaning import DocTerms
    from preflight.core.pii.generic_refs import refine_named_spans

    out = refine_named_spans(text, [_span(text, tagged, "ORGANIZATION")], DocTerms(text))
    assert [text[s.start:s.end] for s in out] == [whole]


@pytest.mark.parametrize("text, tagged, whole", [
    ("The claimants are Anna Kowalska (née Nowak) and her son.", "Anna Kowalska",
     "Anna Kowalska (née Nowak)"),
    ("Mrs Leyla Demir (Aksoy) signed the lease.", "Leyla Demir", "Leyla Demir (Aksoy)"),
    # a bracketed word that is no name stays out
    ("Anna Kowalska (Manager) signed the lease.", "Anna Kowalska", "Anna Kowalska"),
])
def test_a_name_in_brackets_after_a_name_joins_it(dictionary, text, tagged, whole):
    from preflight.core.pii.cleaning import DocTerms
    from preflight.core.pii.names import complete_names
    from preflight.core.pii.person_evidence import lexicon_of

    terms = DocTerms(text, lexicon_of(dictionary))
    out = complete_names(text, [_span(text, tagged, "PERSON")], terms)
    assert [text[s.start:s.end] for s in out] == [whole]


@pytest.mark.parametrize("text, tagged, whole", [
    ("He served in the Royal Air Force (RAF) until 2001.", "Royal Air Force",
     "Royal Air Force (RAF)"),
    ("She chairs the Society for Wetland Birds (“SWB”) in Kent.", "Society for Wetland Birds",
     "Society for Wetland Birds (“SWB”)"),
    ("Minutes of the Hanse Rowing Club (Hanseatischer Ruderverein) were filed.",
     "Hanse Rowing Club", "Hanse Rowing Club (Hanseatischer Ruderverein)"),
    # a remark, a reference or a number in brackets is no second name
    ("He was held at Wandsworth Prison (where he fell ill) for a year.",
     "Wandsworth Prison", "Wandsworth Prison"),
    ("The Harlow Tenants Board (Rule 4) met twice.", "Harlow Tenants Board",
     "Harlow Tenants Board"),
])
def test_a_bracketed_acronym_or_translation_joins_its_organization(text, tagged, whole):
    from preflight.core.pii.cleaning import DocTerms
    from preflight.core.pii.generic_refs import refine_named_spans

    out = refine_named_spans(text, [_span(text, tagged, "ORGANIZATION")], DocTerms(text))
    assert [text[s.start:s.end] for s in out] == [whole]


@pytest.mark.parametrize("text, other, typ", [
    ("Payment was made by Halvorsen Shipping (Mr Jan Nowak) on Monday.", "Jan Nowak",
     "PERSON"),
    ("Write to Halvorsen Shipping (Claims@Halvorsen-Shipping.example) for a refund.",
     "Claims@Halvorsen-Shipping.example", "EMAIL_ADDRESS"),
])
def test_another_value_in_brackets_after_a_firm_stays_apart(text, other, typ):
    from preflight.core.pii.cleaning import DocTerms
    from preflight.core.pii.generic_refs import refine_named_spans

    spans = [_span(text, "Halvorsen Shipping", "ORGANIZATION"), _span(text, other, typ)]
    out = refine_named_spans(text, spans, DocTerms(text))
    assert sorted(text[s.start:s.end] for s in out) == sorted(["Halvorsen Shipping", other])


@pytest.mark.parametrize("text, prison", [
    ("The applicant was born in 1961 and is serving his sentence in HMP Verne.",
     "HMP Verne"),
    ("He was later transferred to HMP Grendon for therapy.", "HMP Grendon"),
    ("Visits to HMYOI Cookham Wood are booked by phone.", "HMYOI Cookham Wood"),
])
def test_a_prison_written_hmp_is_protected_whole(real_detector, text, prison):
    start = text.index(prison)
    covering = [s for s in real_detector.detect(text)
                if s.start <= start and start + len(prison) <= s.end]
    assert [s.type for s in covering] == ["ORGANIZATION"]


@pytest.mark.parametrize("text, tagged, cut", [
    ("Hearings were held on 11 May, 20 May and 25 May 1998.", "20 May and", "20 May"),
    ("It was adjourned on 3 June, 9 June or later.", "9 June or", "9 June"),
])
def test_a_conjunction_at_the_end_of_a_date_is_cut(text, tagged, cut):
    from preflight.core.pii.date_spans import complete_dates

    out = complete_dates(text, [_span(text, tagged, "DATE_TIME")])
    assert [text[s.start:s.end] for s in out] == [cut]


@pytest.mark.parametrize("text, tagged, cut", [
    ("The board wants the risks before Friday.", "before Friday", "Friday"),
    ("Payment is due by 30 June 2025 at the latest.", "by 30 June 2025", "30 June 2025"),
    ("She has worked here since March 2019.", "since March 2019", "March 2019"),
    # a date that begins with a preposition-like word of its own stays whole
    ("The meeting on Monday was moved.", "Monday", "Monday"),
])
def test_a_preposition_at_the_start_of_a_date_is_cut(text, tagged, cut):
    from preflight.core.pii.date_spans import complete_dates

    out = complete_dates(text, [_span(text, tagged, "DATE_TIME")])
    assert [text[s.start:s.end] for s in out] == [cut]
