"""Dates of birth: a date after a birth cue."""

from __future__ import annotations

import pytest

from preflight.core.pii.recognizers.dates import DateOfBirthRecognizer

from pii_testutil import run


@pytest.mark.parametrize("text,value", [
    ("She was born on March 14, 1985 in Ohio.", "March 14, 1985"),
    ("DOB: 03/14/1985", "03/14/1985"),
    ("D.O.B. 14.03.1985", "14.03.1985"),
    ("date of birth 1985-03-14.", "1985-03-14"),
    ("Born 14 March 1985", "14 March 1985"),
    ("birthday: Jan 2nd, 1990", "Jan 2nd, 1990"),
    ("Birth date: Mar 05, 2004", "Mar 05, 2004"),
])
def test_dob_found(text, value):
    assert run(DateOfBirthRecognizer(), text) == [("DATE_OF_BIRTH", value)]


@pytest.mark.parametrize("text", [
    "The meeting on 03/14/1985 was fine.",     # no birth cue
    "He was born in 1985.",                    # a year alone is not a date of birth
    "Born to run. The release is on 03/14/2025.",  # cue in another sentence
])
def test_dob_not_found(text):
    assert run(DateOfBirthRecognizer(), text) == []
