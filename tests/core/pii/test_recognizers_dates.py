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


# -- date phrases that name no date (date_spans.drop_vague_dates) ----------------------

@pytest.mark.parametrize("text,vague", [
    ("We met the same day and agreed to talk again at a later date.", "same day"),
    ("We met the same day and agreed to talk again at a later date.", "later date"),
    ("Some years earlier the warehouse had flooded twice.", "years earlier"),
    ("The parcel arrived several days after the invoice.", "several days"),
])
def test_vague_date_phrases_are_not_dates(real_detector, text, vague):
    dates = [text[s.start:s.end] for s in real_detector.detect(text) if s.type == "DATE_TIME"]
    assert not any(vague in d for d in dates), dates


@pytest.mark.parametrize("text,expected", [
    ("The contractor worked for three weeks, left the same day and was paid a week later.",
     ["three weeks", "a week later"]),
    ("Several years later, on 14 March 2023, the depot reopened.", ["14 March 2023"]),
])
def test_measured_and_calendar_dates_stay(real_detector, text, expected):
    dates = [text[s.start:s.end] for s in real_detector.detect(text) if s.type == "DATE_TIME"]
    assert dates == expected


@pytest.mark.parametrize("value,expected", [
    ("same day", True), ("a few decades", True), ("end of the month", True),
    ("Several years later", True), ("12", True), ("14+8", True), ("62-63", True),
    ("a year", False), ("an hour later", False), ("three weeks", False), ("Friday", False),
    ("yesterday", False), ("next day", False), ("1998", False), ("11 and", False),
    ("Christmas", False),
])
def test_vague_date(value, expected):
    from preflight.core.pii.date_spans import vague_date

    assert vague_date(value) is expected
