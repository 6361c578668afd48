"""Organization and place spans that name nobody: generic references, public bodies,
whole countries and titles of laws are not detected; a leading "the" is no part of a
name; the towns, local bodies and companies beside them still are."""

from __future__ import annotations

import pytest

from preflight.core.pii.cleaning import DocTerms
from preflight.core.pii.generic_refs import (
    generic_reference, law_title, public_body, refine_named_spans, whole_country,
)
from preflight.core.pii.recognizers.base import NER_EVIDENCE
from preflight.core.types import Category, Evidence, Span

NAMED = ("ORGANIZATION", "LOCATION")


def named(detector, text: str) -> list[str]:
    return [text[s.start:s.end] for s in detector.detect(text) if s.type in NAMED]


@pytest.mark.parametrize("text,nobody", [
    ("The Claims Board rejected the request. The claims board consists of three members.",
     "Claims Board"),
    ("The Commission decided on the merits. Its decision was sent to the Registrar on "
     "Friday.", "Commission"),
    ("The Commission decided on the merits. Its decision was sent to the Registrar on "
     "Friday.", "Registrar"),
    ("Our appeal was dismissed by the Supreme Court, and the Ministry of Finance refused "
     "the refund.", "Supreme Court"),
    ("Our appeal was dismissed by the Supreme Court, and the Ministry of Finance refused "
     "the refund.", "Ministry of Finance"),
    ("The German Government did not comment on the tender.", "Government"),
    ("The appeal on points of law was dismissed by the Court of Cassation in May.",
     "Court of Cassation"),
    ("The lease is governed by the Landlord and Tenant Act 1954 and the Housing Rules of "
     "the council.", "Housing Rules"),
    ("The tenant moved from the United Kingdom to the Republic of Ireland and then to "
     "Poland.", "United Kingdom"),
    ("The tenant moved from the United Kingdom to the Republic of Ireland and then to "
     "Poland.", "Republic of Ireland"),
    ("The tenant moved from the United Kingdom to the Republic of Ireland and then to "
     "Poland.", "Poland"),
    ("THE FACTS\n\nThe complaint was filed by the claimant, inter alia, on grounds of "
     "delay.", "FACTS"),
    ("THE FACTS\n\nThe complaint was filed by the claimant, inter alia, on grounds of "
     "delay.", "inter alia"),
])
def test_names_nobody_is_not_detected(real_detector, text, nobody):
    assert not any(nobody in v for v in named(real_detector, text)), named(real_detector, text)


@pytest.mark.parametrize("text,values", [
    ("She now works for the Bexhill Town Council in East Sussex.",
     ["Bexhill Town Council", "East Sussex"]),
    ("The grant was paid by the Halvorsen Foundation last year.", ["Halvorsen Foundation"]),
    ("The Committee (Rule 12 of the Statute) heard the Anderssen Trust.", ["Anderssen Trust"]),
])
def test_specific_names_stay_without_their_article(real_detector, text, values):
    assert named(real_detector, text) == values


class _Lexicon(set):
    """Stands in for the NER model's dictionary table (a set of case-folded words)."""


def _terms(text: str, words: str = "") -> DocTerms:
    return DocTerms(text, _Lexicon(words.split()))


@pytest.mark.parametrize("value,expected", [
    ("Data Protection Act 2018", True),
    ("Regulation (EU) 2016/679", True),
    ("Rules of Procedure", True),
    ("Convention on the Rights of the Child", True),
    ("Act", True),
    ("Actuate Systems", False),
    ("Code Red Consulting", False),
    ("Charter Communications", False),
    ("Halvorsen Act Group", False),
])
def test_law_title(value, expected):
    assert law_title(value) is expected


@pytest.mark.parametrize("value,expected", [
    ("Poland", True), ("South Korea", True), ("Northern Ireland", True),
    ("United Kingdom", True), ("Polanski", False), ("East Sussex", False),
    ("Korea Telecom", False),
])
def test_whole_country(value, expected):
    assert whole_country(value) is expected


def test_public_body_needs_every_word_in_the_dictionary():
    terms = _terms("", "supreme lyon finance")
    assert public_body("Supreme Court", terms)
    assert public_body("Ministry of Finance", terms)
    assert public_body("Court of Cassation", terms)          # an abstract noun by its form
    assert public_body("Lyon City Council", _terms("", "lyon city"))
    assert not public_body("Bexhill Town Council", _terms("", "town"))   # a small town
    assert not public_body("Halvorsen Freight", terms)                   # no institution


def test_generic_reference_reads_the_document():
    text = "The Board met. The board will meet again. The Audit Board of Kessling met."
    terms = _terms(text, "board audit")
    start = text.index("Board")
    assert generic_reference(text, start, start + 5, terms)
    start = text.index("Audit Board of Kessling")
    assert not generic_reference(text, start, start + len("Audit Board of Kessling"), terms)


def _span(text: str, value: str, typ: str, recognizer: str = "SpacyRecognizer",
          evidence: Evidence = NER_EVIDENCE) -> Span:
    start = text.index(value)
    return Span(start, start + len(value), typ, Category.QUASI_IDENTIFIER, 0.85, recognizer,
                "test", evidence)


def test_refine_cuts_the_article_and_an_open_bracket_only_from_ner_spans():
    text = "Payment from the Kessling Trust (Rule 4 and the Orvik Group Ltd were late."
    spans = [_span(text, "the Kessling Trust (Rule 4", "ORGANIZATION"),
             _span(text, "the Orvik Group Ltd", "ORGANIZATION", "OrganizationCueRecognizer",
                   Evidence.RULE)]
    out = refine_named_spans(text, spans, _terms(text))
    assert [text[s.start:s.end] for s in out] == ["Kessling Trust", "the Orvik Group Ltd"]


@pytest.mark.parametrize("text,expected", [
    ("Proceedings before the Bodø Civil Court of First Instance began in 2019.",
     ["Bodø Civil Court of First Instance"]),
    ("She lives in the Borough of Camden and grew up in Stratford-upon-Avon.",
     ["Borough of Camden", "Stratford-upon-Avon"]),
])
def test_names_the_model_cut_short_are_whole(real_detector, text, expected):
    assert named(real_detector, text) == expected


def test_numerals_are_numbers_ordinals_and_roman_numerals_only():
    text = "Mill Council and the Civil Board met. The council of the board met."
    terms = _terms(text)
    start = text.index("Mill Council")
    assert not generic_reference(text, start, start + len("Mill Council"), terms)
    text = "The Fourth Section and Chamber IV sat. The section and the chamber met."
    terms = _terms(text)
    for value in ("Fourth Section", "Chamber IV"):
        start = text.index(value)
        assert generic_reference(text, start, start + len(value), terms)
