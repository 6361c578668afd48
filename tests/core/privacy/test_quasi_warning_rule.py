"""When the quasi-identifier warning turns red: only when the kinds left plausibly single
a person out, never on a month alone, and never on a word the d_X noise wrote."""

from __future__ import annotations

import pytest

from preflight.app.presentation import quasi_warning
from preflight.core.privacy.quasi import quasi_identifiers_left, together
from preflight.core.types import Category, Change, SanitizedText, Span

Q = Category.QUASI_IDENTIFIER


def _spans(text: str, marked: list[tuple[str, str]]) -> list[Span]:
    return sorted((Span(text.index(v), text.index(v) + len(v), t, Q, 0.9, "t", "t")
                   for v, t in marked), key=lambda s: s.start)


CASES = [
    # (sentence, detected values, red?)
    ("The budget meeting moved to February; the Leeds office at Northwind Traders hosts it.",
     [("February", "DATE_TIME"), ("Leeds", "LOCATION"), ("Northwind Traders", "ORGANIZATION")],
     False),      # a month, a city and an employer: thousands of people
    ("Staff of Contoso in Lyon met in 2023 to plan the move.",
     [("Contoso", "ORGANIZATION"), ("Lyon", "LOCATION"), ("2023", "DATE_TIME")], False),
    ("Born on 14 July 1981 in Ghent, she works as a midwife at the city hospital.",
     [("14 July 1981", "DATE_OF_BIRTH"), ("Ghent", "LOCATION")], True),   # day + place + job
    ("The parcel goes to 22 Baker Lane, Dorking, by Tuesday.",
     [("22 Baker Lane", "STREET_ADDRESS"), ("Dorking", "LOCATION")], True),  # a household
    ("A pharmacist from Porto wrote to us.", [("Porto", "LOCATION")], False),
    ("The drivers of Acme Freight in Ghent and the lawyer of the union met.",
     [("Acme Freight", "ORGANIZATION"), ("Ghent", "LOCATION")], False),  # broad kinds only
]


@pytest.mark.parametrize("text,marked,red", CASES)
def test_red_only_when_the_kinds_left_single_a_person_out(text, marked, red):
    spans = _spans(text, marked)
    left = quasi_identifiers_left(text, SanitizedText(text, "keep"), spans)
    assert together(left) is red
    assert (quasi_warning(left) is not None) is red


def test_a_month_or_a_year_alone_is_not_listed():
    text = "We met in February and again in 2024 in Leeds."
    spans = _spans(text, [("February", "DATE_TIME"), ("2024", "DATE_TIME"),
                          ("Leeds", "LOCATION")])
    left = quasi_identifiers_left(text, SanitizedText(text, "keep"), spans)
    assert [q.value for q in left] == ["Leeds"]


def test_a_word_the_noise_wrote_is_never_a_quasi_identifier():
    text = "The new manager of the Hull depot starts on Monday."
    at = text.index("manager")
    noised = text[:at] + "driver" + text[at + len("manager"):]
    change = Change(at, at + 6, at, at + 7, "TOKEN", "manager", "driver")
    out = SanitizedText(noised, "dx-all", (change,))
    left = quasi_identifiers_left(text, out, _spans(text, [("Hull", "LOCATION")]))
    assert [q.value for q in left] == ["Hull"]
    # a title the noise left as written is still found, at its place in the payload
    kept = "The driver of the Hull depot and the cleaners start on Monday."
    left = quasi_identifiers_left(kept, SanitizedText(kept, "keep"), [])
    assert [(q.kind, q.value, kept[q.start:q.end]) for q in left] == [
        ("job title", "driver", "driver")]
