"""Span cleaning: label words glued to names, id numbers the model calls dates, and
"Surname, Given" pairs."""

from __future__ import annotations

import pytest

from preflight.core.pii.cleaning import DocTerms, labelled_number, strip_label_words
from preflight.core.pii.names import covering_surname_given
from preflight.core.pii.entities import EVIDENCE_KEY
from preflight.core.pii.recognizers.base import NER_EVIDENCE
from preflight.core.types import Category, Span


@pytest.mark.parametrize("text, expected", [
    ("Contact John Smith", "John Smith"),
    ("Email John Smith", "John Smith"),
    ("Contact: John Smith", "John Smith"),
    ("John Smith Tel", "John Smith"),
    ("Contact", "Contact"),            # a lone word is left to the plausibility check
    ("Jane Roe", "Jane Roe"),
    ("2019 Ryan Tandy", "Ryan Tandy"),  # a copyright line's year
    ("Ryan Tandy 2019", "Ryan Tandy"),
])
def test_strip_label_words(text, expected):
    s, e = strip_label_words(text, 0, len(text))
    assert text[s:e] == expected


@pytest.mark.parametrize("text, value, labelled", [
    ("Please pay invoice 4471 by Friday.", "4471", True),
    ("Order #1985 shipped.", "1985", True),
    ("see invoice no. 2019", "2019", True),
    ("invoice 4471", "invoice 4471", True),
    ("She was born in 1985.", "1985", False),
    ("Due 12 March 2024", "12 March 2024", False),
])
def test_labelled_number(text, value, labelled):
    start = text.index(value)
    assert labelled_number(text, start, start + len(value)) is labelled


def _person(text: str, value: str) -> Span:
    start = text.index(value)
    return Span(start, start + len(value), "PERSON", Category.DIRECT_IDENTIFIER, 0.85,
                "SpacyRecognizer", "x", NER_EVIDENCE)


@pytest.mark.parametrize("text, tagged, whole", [
    ("Signed: Doe, Jane\n", "Jane", ["Doe, Jane"]),
    # "Roe, Richard" opens the line: a census surname and given name, a name of its own
    ("Roe, Richard; Doe, Jane", "Doe", ["Doe, Jane", "Roe, Richard"]),
    ("Reviewed by Kowalski, Anna M.\n", "Anna", ["Kowalski, Anna M."]),
    ("Authors: Петров, Иван; Roe, R.", "Иван", ["Петров, Иван"]),
])
def test_surname_given_widens(text, tagged, whole):
    out = covering_surname_given(text, [_person(text, tagged)], DocTerms(text))
    assert [text[s.start:s.end] for s in out] == whole


@pytest.mark.parametrize("text, tagged", [
    ("However, Jane said no.", "Jane"),              # a sentence, not a pair
    ("In Paris, Jane met Tom.", "Jane"),
    ("the however word; However, Jane\n", "Jane"),  # "However" is used in lower case
])
def test_surname_given_leaves_prose_alone(text, tagged):
    spans = [_person(text, tagged)]
    assert covering_surname_given(text, spans, DocTerms(text)) == spans


def _ner_date(text: str, value: str):
    from presidio_analyzer import RecognizerResult

    start = text.index(value)
    return RecognizerResult("DATE_TIME", start, start + len(value), 0.85,
                            {RecognizerResult.RECOGNIZER_NAME_KEY: "SpacyRecognizer",
                             EVIDENCE_KEY: NER_EVIDENCE})


@pytest.mark.parametrize("text, value, typ", [
    # a number in North American phone shape is a phone, whatever the model says
    ("or on 4053979721. Your card", "4053979721", "PHONE_NUMBER"),
    ("or on (405) 397-9721 today", "(405) 397-9721", "PHONE_NUMBER"),
    ("ring +1 405.397.9721 today", "+1 405.397.9721", "PHONE_NUMBER"),
    # real dates and times stay dates
    ("The build of 20240131 shipped", "20240131", "DATE_TIME"),
    ("logged at 1706659200 (Unix time)", "1706659200", "DATE_TIME"),   # starts with 1
    ("due 2024-01-31 at noon", "2024-01-31", "DATE_TIME"),
    ("due 01/31/2024 at noon", "01/31/2024", "DATE_TIME"),
    ("area code 105 is not valid: 1053979721", "1053979721", "DATE_TIME"),
])
def test_phone_shaped_dates_become_phones(text, value, typ):
    from preflight.core.pii.cleaning import to_span

    span = to_span(text, _ner_date(text, value), Category.CONFIDENTIAL_ATTRIBUTE)
    assert (text[span.start:span.end], span.type) == (value, typ)
    expected = Category.DIRECT_IDENTIFIER if typ == "PHONE_NUMBER" else Category.QUASI_IDENTIFIER
    assert span.category is expected


def test_a_lower_case_sign_off_is_not_prose():
    # "-tom" under an e-mail is the sender's name, not the common word that would make a
    # one-word "Tom" doubtful; "will" in a sentence still is.
    from preflight.core.pii.cleaning import DocTerms, alone_on_line

    text = "From: Tom <t@x.net>\n\nWe will meet.\n\n-tom\n  -- jane  \n"
    terms = DocTerms(text)
    assert not terms.used_in_lower_case("Tom") and not terms.used_in_lower_case("Jane")
    assert terms.used_in_lower_case("Will")
    i = text.index("tom\n")
    assert alone_on_line(text, i, i + 3)
    j = text.index("will")
    assert not alone_on_line(text, j, j + 4)


def test_a_word_of_an_address_is_not_prose():
    # "akim" in akim.demaille@gmail.com made the model's "Akim Demaille" beside it look
    # like a common word, and the name was dropped
    from preflight.core.pii.cleaning import DocTerms

    text = ("Akim Demaille    akim.demaille@gmail.com\nsee https://example.org/mark or "
            "<jane.roe@x.org>; we will meet.")
    terms = DocTerms(text)
    assert not any(terms.used_in_lower_case(w) for w in ("Akim", "Demaille", "Mark", "Jane"))
    assert terms.used_in_lower_case("Will")
