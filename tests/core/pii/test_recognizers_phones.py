"""Phone shapes (back-up to Presidio's parser)."""

from __future__ import annotations

import pytest

from preflight.core.pii.recognizers.phones import PhonePatternRecognizer

from pii_testutil import run


@pytest.mark.parametrize("text,value", [
    ("Call (555) 123-4567 now", "(555) 123-4567"),
    ("call 759.983.8675x6508", "759.983.8675x6508"),
    ("+1-890-268-2883", "+1-890-268-2883"),
    ("001-555-555-5555x123", "001-555-555-5555x123"),
    ("+44(0)151 496 0903", "+44(0)151 496 0903"),
    ("+4428 9018 0289", "+4428 9018 0289"),
    ("Tel: (01632) 960 754", "(01632) 960 754"),
    ("mobile 4352338281", "4352338281"),
    # National formats after a verb of calling (an Australian mobile, UK landlines)
    ("a nurse in Sydney, called 0412 345 678 on Friday", "0412 345 678"),
    ("She phoned 020 7946 0958 yesterday", "020 7946 0958"),
    ("He rang 0161 496 0000 twice", "0161 496 0000"),
])
def test_phone_found(text, value):
    assert ("PHONE_NUMBER", value) in run(PhonePatternRecognizer(), text)


@pytest.mark.parametrize("text", [
    "The server 192.168.1.20 is up",
    "We used 4352338281 tokens",          # bare digits need a phone word
    "The batch total was 0412 345 678 units",
    "Between 2013-2014 and 2019-2020",
    "ISBN 978-3-16-148410-0",
])
def test_phone_not_found(text):
    assert run(PhonePatternRecognizer(), text) == []


@pytest.mark.parametrize("env,regions", [
    ({"LANG": "en_GB.UTF-8"}, ("GB", "US")),
    ({"LC_ALL": "de_DE.UTF-8", "LANG": "en_GB.UTF-8"}, ("DE", "US")),
    ({"LANG": "en_US.UTF-8"}, ("US",)),
    ({"LANG": "C.UTF-8"}, ("US",)),
    ({}, ("US",)),
])
def test_phone_regions_follow_the_locale(env, regions):
    from preflight.core.pii.recognizers.phones import phone_regions

    assert phone_regions(env) == regions


@pytest.mark.slow
@pytest.mark.parametrize("value", ["+44 20 7946 0958", "+49 30 901820", "+33 1 42 68 53 00",
                                   "+91 98765 43210", "+55 11 91234-5678", "(415) 555-0132"])
def test_international_numbers_found_with_two_regions(real_detector, value):
    text = f"Please call me on {value} tomorrow."
    assert ("PHONE_NUMBER", value) in {(s.type, text[s.start:s.end])
                                       for s in real_detector.detect(text)}
