"""Codes after an identifying label, whatever their format (issue 45, item 4).

Sentences in the style of invoices, service-desk mails, insurance letters, court
judgments and police reports; the negative ones carry numbers that identify nothing."""

from __future__ import annotations

import pytest

from preflight.core.pii.recognizers.reference_numbers import ReferenceNumberRecognizer

from pii_testutil import run

LABELLED = [
    # the labels that were already known
    ("Please update employee ID NW-204871 in the HR system.", ["NW-204871"]),
    ("Customer No. 4471-220 called about the invoice.", ["4471-220"]),
    ("See contract ref CT-2024-0193 for the renewal terms.", ["CT-2024-0193"]),
    ("The contract CT-2024-0193 ends in May.", ["CT-2024-0193"]),
    ("Employee #55821 was onboarded.", ["55821"]),
    ("Policy number: HX-99120-B", ["HX-99120-B"]),
    ("patient ID 00784512", ["00784512"]),
    # invoices, orders, tickets
    ("Invoice no. 2024/0388 is overdue by two weeks.", ["2024/0388"]),
    ("Please pay invoice 88213 by Friday.", ["88213"]),
    ("Your order #A7-55102 has shipped.", ["A7-55102"]),
    ("Ticket #48213 was reopened by the customer.", ["48213"]),
    ("I raised incident INC0012345 for the outage.", ["INC0012345"]),
    ("The ticket number is RITM0048812.", ["RITM0048812"]),
    # references, claims, files, matters
    ("Our ref 2024/117/AB, your ref: JS/4471.", ["2024/117/AB", "JS/4471"]),
    ("Claim reference CLM/2023/00981 was declined.", ["CLM/2023/00981"]),
    ("Matter no. 23-0117-LIT is assigned to the Munich office.", ["23-0117-LIT"]),
    ("The case file nos. 2011/552 and 2011/553 were joined.", ["2011/552", "2011/553"]),
    # court applications, one or several after one label
    ("The case originated in an application (no. 51234/09) against Poland.", ["51234/09"]),
    ("It originated in an application (29381/95) against Austria.", ["29381/95"]),
    ("They lodged two applications (nos. 6021/11 and 14592/12) with the Court.",
     ["6021/11", "14592/12"]),
    ("joined to the applications (nos. 12011/04, 907/05, 33310/05 and 40221/06).",
     ["12011/04", "907/05", "33310/05", "40221/06"]),
    ("His application no. 1987/07 was declared admissible.", ["1987/07"]),
    # health, identity documents, vehicles
    ("MRN: 00123456, medical record number 4455-221.", ["00123456", "4455-221"]),
    ("Her passport no. 533380006 expires next year.", ["533380006"]),
    ("A witness saw the licence plate AB12 CDE near the depot.", ["AB12 CDE"]),
    ("The vehicle registration KA-01-AB-1234 was not insured.", ["KA-01-AB-1234"]),
    ("VIN 1HGCM82633A004352, mileage unknown.", ["1HGCM82633A004352"]),
    # other languages
    ("Rechnungsnummer 2024-00117, Kundennr. K-99812.", ["2024-00117", "K-99812"]),
    ("Aktenzeichen: 3 O 123/19 (Landgericht).", ["3 O 123/19"]),
    ("Votre n° de dossier 2023-117 et facture n° FA-2024-0042.", ["2023-117", "FA-2024-0042"]),
]


@pytest.mark.parametrize("text,codes", LABELLED)
def test_code_after_a_label_is_an_identifier(text, codes):
    assert run(ReferenceNumberRecognizer(), text) == [("ID_NUMBER", c) for c in codes]


NOT_IDENTIFIERS = [
    "Customer satisfaction rose 12% in 2023.",
    "Our employee count is 1200 and growing.",
    "The contract was signed on 2024-03-01.",
    "Customer No. 2024 review",                             # a year
    "policy no. 2.5 replaces the old one",                  # a version
    "The case number will be sent later.",
    "employee 360 review starts now",
    "Client ID: required field",
    "There has been a violation of Article 6 § 1 of the Convention.",
    "See paragraph 12 and section 4.2 of the report.",
    "In case 2 of 3 the insurer paid.",
    "The applicant claimed EUR 10,000 in respect of damage.",
    "They claim 5000 euros for the repair.",
    "Reference is made to Hentrich v. France, no. 13616/88, § 42.",   # a citation
    "The company has customers 1200 and orders 3500 a month.",         # counts
    "It is released under the Apache License 2.0.",
    "The application was lodged on 12 March 2009.",
    "Order of 3 June 2004 and the invoice of 14.05.2004.",
]


@pytest.mark.parametrize("text", NOT_IDENTIFIERS)
def test_numbers_without_an_identifying_label_stay(text):
    assert run(ReferenceNumberRecognizer(), text) == []


def test_a_list_stops_where_the_codes_change_shape():
    text = "Invoices nos. 4471/22 and 4472/22 cover 12 items and 3 pallets."
    assert [v for _, v in run(ReferenceNumberRecognizer(), text)] == ["4471/22", "4472/22"]


def test_labelled_codes_are_protected_by_the_default_policy(real_detector):
    from preflight.core.sanitize.policy import PRESETS

    text = ("Dear Sir, regarding our ref 2024/117/AB and your claim CLM-88213, the court "
            "file no. 1942/08 (Aktenzeichen 3 O 123/19) was closed.")
    spans = real_detector.detect(text)
    protected = {text[s.start:s.end] for s, _ in PRESETS["identifiers"].protected(text, spans)}
    # "1942/08" is an application number, not the years 1942–08; the O of "3 O 123/19" is
    # a zero in the canonical view the detector reads
    assert {"2024/117/AB", "CLM-88213", "1942/08", "3 O 123/19"} <= protected
