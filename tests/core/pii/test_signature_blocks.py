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


# A man page's AUTHOR section (the X server's), wrapped at a fixed width: the model's span
# for "Raymond\nDrewry" was cut at the line end and "Drewry" went out.
_WRAPPED = ("The sample server was originally written by Susan Angebranndt, Raymond\n"
            "Drewry, Philip Karlton, and Todd Newman, from Digital Equipment\n"
            "Corporation, with support from a large cast.\n")


def test_a_name_broken_by_the_wrap_of_prose_stays_whole(real_detector):
    persons = {v for v, t in found(real_detector, _WRAPPED) if t == "PERSON"}
    assert "Raymond\nDrewry" in persons


# An Outlook reply header from a real mailing-list message (SpamAssassin's easy ham): the
# sender's name wrapped over two lines under "On Behalf Of". The model read
# "Robert\nHarley\nSent" as one name; cut to its first line, "Harley" went out.
_OUTLOOK = ("-----Original Message-----\n"
            "From: fork-admin@xent.com [mailto:fork-admin@xent.com] On Behalf Of\n"
            "Robert\nHarley\nSent: Tuesday, August 20, 2002 12:28 PM\n"
            "To: fork@example.com\nSubject: Re: The GOv gets tough\n")


def test_a_name_wrapped_over_header_lines_is_protected_line_by_line(real_detector):
    persons = {v for v, t in found(real_detector, _OUTLOOK) if t == "PERSON"}
    assert {"Robert", "Harley"} <= persons
    assert not any("Sent" in v for v in persons)


@pytest.mark.parametrize("line,names", [
    ("Harley", True), ("Andrew Burgess", True), ("Sent: Tuesday", False), ("Sent", False),
    ("Network Administrator", False), ("Ahhh", False), ("4724 Elm Street", False),
    ("harley", False), ("", False),
])
def test_a_line_of_names_only(line, names):
    from preflight.core.pii.detector import _names_only

    assert _names_only(line) is names


_LEXICON = {"sent", "mandrake", "bush", "corporation"}


@pytest.mark.parametrize("text,start,end,wrapped", [
    (_WRAPPED, "Raymond", "Drewry", True),
    # the next line's first word: a dictionary word that is no listed name
    (_WRAPPED.replace("Raymond\nDrewry", "Raymond\nSent"), "Raymond", "Sent", False),
    ("One more thing about the installer that ships with Linux\nMandrake 8.1 today",
     "Linux", "Mandrake", False),
    ("and it was even quoted in a speech by the president George\nBush last year", "George",
     "Bush", True),                                   # a dictionary word, and a surname
    # a short line is a signature or a list, not wrapped prose
    ("Thanks.\n\nPaul Casey\nFlat 24\n", "Paul", "Flat", False),
    ("Andres Soolo\nAndrew Burgess\n", "Andres", "Burgess", False),
    # digits, an address, or two breaks are no wrapped name
    (_WRAPPED.replace("Raymond\nDrewry", "Raymond\n4724"), "Raymond", "4724", False),
    ("A long line of prose that was written by our colleague Andres Soolo  andres@x.ee\n"
     "Andrew Burgess", "Andres", "Burgess", False),
    ("A long line of prose that was written by our colleague and friend Raymond\n\n"
     "Drewry", "Raymond", "Drewry", False),
])
def test_wrapped_names(text, start, end, wrapped):
    from preflight.core.pii.detector import _wrapped_name

    a = text.index(start)
    b = text.index(end) + len(end)
    assert _wrapped_name(text, a, b, _LEXICON) is wrapped
