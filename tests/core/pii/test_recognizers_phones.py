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


# -- national, trunk-prefixed and 00-prefixed forms, parsed by phonenumbers -----------------

@pytest.mark.parametrize("text,value", [
    ("For the Leeds office dial 0044 113 496 0000 from abroad.", "0044 113 496 0000"),
    ("Unser Büro in München: 0049 89 12345678.", "0049 89 12345678"),
    ("The Berlin desk is on 030 901820 11 during the week.", "030 901820 11"),
    ("Merci de rappeler le 01 42 68 53 00 avant midi.", "01 42 68 53 00"),
    ("Mon portable : 06 12 34 56 78", "06 12 34 56 78"),
    ("Amsterdam contact, mobiel 06-12345678", "06-12345678"),
    ("Our Moscow agent answers on 8 (495) 123-45-67.", "8 (495) 123-45-67"),
    ("The Tokyo branch mobile is 090-1234-5678.", "090-1234-5678"),
    ("Seoul support: 010-1234-5678", "010-1234-5678"),
    ("Shanghai landline 021-6123-4567, ask for Ms Li.", "021-6123-4567"),
    ("In Sydney she answers on 0412 345 678.", "0412 345 678"),
    ("please call me back on 0612345678 tonight", "0612345678"),
])
def test_national_and_prefixed_numbers_are_parsed(text, value):
    from preflight.core.pii.recognizers.phones import PhoneNumberParserRecognizer

    assert ("PHONE_NUMBER", value) in run(PhoneNumberParserRecognizer(("US",)), text)


@pytest.mark.parametrize("text", [
    "The hearing took place on 01.04.2023 in Strasbourg.",
    "Payment is due 05/06/2024.",
    "See invoice 0012-3456 for details.",
    "Transfer to IBAN DE89 3704 0044 0532 0130 00 by Friday.",
    "The claim was 1.234.567,89 EUR in total.",
    "The case originated in an application (no. 40593/04) against Turkey.",
    "The proxy at 192.168.100.200 refused the call.",
    "Upgrade to version 0.12.3.4567 first.",
    "A total of 08 500 000 units shipped.",
    "Order 00012345 left the warehouse.",
    "Logged at 2023-04-12 08:30 by the night shift.",
])
def test_dates_amounts_and_references_are_no_phones(text):
    from preflight.core.pii.recognizers.phones import PhoneNumberParserRecognizer

    assert run(PhoneNumberParserRecognizer(("US",)), text) == []


@pytest.mark.slow
@pytest.mark.parametrize("text,value", [
    ("If the line drops, use 0044 20 7946 0958 instead.", "0044 20 7946 0958"),
    ("Her direct line in Lyon is 04 78 12 34 56.", "04 78 12 34 56"),
    ("Reach the Warsaw team on 022 123 45 67 before noon.", "022 123 45 67"),
    ("Our Mumbai partner can be reached on 022 2345 6789.", "022 2345 6789"),
])
def test_the_detector_masks_national_and_00_forms(real_detector, text, value):
    assert ("PHONE_NUMBER", value) in {(s.type, text[s.start:s.end])
                                       for s in real_detector.detect(text)}
