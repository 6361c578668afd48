"""DePrompt confidential attributes: HEALTH, MEDICAL, PAYMENT, ASSET."""

from __future__ import annotations

import pytest

from preflight.core.pii.recognizers.confidential import (
    AssetRecognizer, HealthRecognizer, MedicalRecognizer, MoneyRecognizer,
)


def found(recognizer, text):
    return [(r.entity_type, text[r.start:r.end], r.score) for r in
            sorted(recognizer.analyze(text, None, None), key=lambda r: r.start)]


@pytest.mark.parametrize("text,value,min_score", [
    ("She was diagnosed with type 2 diabetes last year.", "type 2 diabetes", 0.75),
    ("history of hypertension and asthma", "hypertension", 0.75),
    ("He is allergic to penicillin.", "penicillin", 0.75),
    ("tested positive for COVID-19 in May", "COVID-19", 0.75),
    ("blood pressure of 150/95 at intake", "150/95", 0.75),
    ("We study depression detection on Reddit.", "depression", 0.4),   # term alone: modest
])
def test_health(text, value, min_score):
    hits = [(v, s) for _, v, s in found(HealthRecognizer(), text)]
    assert any(v == value and s >= min_score for v, s in hits), hits


def test_health_term_alone_scores_lower_than_with_cue():
    alone = found(HealthRecognizer(), "Asthma research grows.")[0][2]
    cued = found(HealthRecognizer(), "She suffers from asthma.")[0][2]
    assert alone < cued


@pytest.mark.parametrize("text,value", [
    ("takes metformin 500 mg daily", "metformin 500 mg daily"),
    ("She was prescribed Zoloftix 50 mg.", "Zoloftix 50 mg"),
    ("underwent an appendectomy in June", "appendectomy"),
])
def test_medical(text, value):
    assert value in [v for _, v, _ in found(MedicalRecognizer(), text)]


@pytest.mark.parametrize("text", [
    # a court judgment's sentence (TAB): "to" is no drug — found as one, it was copied to
    # every "to" of the judgment
    "Evidence was adduced that no suppositories had been prescribed to the applicant.",
    "Painkillers were prescribed for him by the prison doctor.",
    "He was prescribed medication after the hearing.",
])
def test_what_follows_prescribed_is_a_drug_only_when_it_is_no_function_word(text):
    assert [v for _, v, _ in found(MedicalRecognizer(), text)
            if v.split()[0].lower() in {"to", "for", "medication"}] == []


@pytest.mark.parametrize("text,typ,value", [
    ("His salary is $120,000 a year.", "PAYMENT", "$120,000"),
    ("The invoice of EUR 1.250,00 was paid", "PAYMENT", "EUR 1.250,00"),
    ("It costs 30 dollars.", "PAYMENT", "30 dollars"),
    ("The portfolio is worth €2.5 million.", "ASSET", "€2.5 million"),
    ("net worth of £3,400,000", "ASSET", "£3,400,000"),
])
def test_money(text, typ, value):
    assert (typ, value) in [(t, v) for t, v, _ in found(MoneyRecognizer(), text)]


@pytest.mark.parametrize("text,value", [
    ("He owns 1,200 shares of Apple Inc.", "1,200 shares of Apple Inc."),
    ("ISIN US0378331005 is listed", "US0378331005"),
])
def test_asset(text, value):
    assert value in [v for _, v, _ in found(AssetRecognizer(), text)]


def test_invalid_isin_is_not_an_asset():
    assert found(AssetRecognizer(), "code US0378331006 here") == []


@pytest.mark.parametrize("text,values", [
    ("The claimant asked for 48,000,000 Italian lire (ITL) and ITL 2,500,000 in costs.",
     ["48,000,000 Italian lire (ITL)", "ITL 2,500,000"]),
    ("Fines ranged from NOK 2,300 (about 200 euros (EUR)) to NOK 18,000.",
     ["NOK 2,300", "200 euros (EUR)", "NOK 18,000"]),
    ("She was awarded 12,500 Swiss francs and a lump sum of NZ$4,200.",
     ["12,500 Swiss francs", "NZ$4,200"]),
    ("The flat was valued at 310,000 pounds sterling (GBP), or GBP 395,000 with the garage.",
     ["310,000 pounds sterling (GBP)", "GBP 395,000"]),
    ("A fee of 7.25 Turkish liras (TRY was charged, then TRY 14,3120.",
     ["7.25 Turkish liras (TRY", "TRY 14,3120"]),
    ("The supplier billed 1,480.00 DKK and USD 60 for shipping.",
     ["1,480.00 DKK", "USD 60"]),
])
def test_money_in_codes_and_currency_names(text, values):
    assert [v for _, v, _ in found(MoneyRecognizer(), text)] == values


@pytest.mark.parametrize("text", [
    "Upgrade to PHP 8.1 before the ISO 27001 audit; see RFC 2616.",
    "TOP 10 reasons we won 3 games, and ALL 5 marks on the wall.",
    "Build 2,300 of the app shipped with GCC 4.8.",
])
def test_codes_and_numbers_that_are_no_money(text):
    assert found(MoneyRecognizer(), text) == []


@pytest.mark.parametrize("text", [
    "The parliament debated the new abortion law last spring.",
    "The surgery hours of the practice changed in May.",
])
def test_procedure_named_as_a_topic_is_no_medical_fact(text):
    assert found(MedicalRecognizer(), text) == []
