"""National identity, social-insurance and tax numbers (issue 45, item 4): found after
their label (a failed check digit still counts there) and, when their written form is
specific, without one (only valid numbers). Sentences in the style of HR forms, tax
letters and onboarding mails in the languages the numbers come from."""

from __future__ import annotations

import pytest

from preflight.core.pii.recognizers.national_ids import NationalIdRecognizer

from pii_testutil import run

LABELLED_VALID = [
    ("Meine Steuer-IdNr. lautet 36 574 261 809, bitte eintragen.", "36 574 261 809"),
    ("Steuernummer: 181/815/08155 (Finanzamt Nord)", "181/815/08155"),
    ("Son numéro de sécurité sociale est le 2 95 10 99 126 111 93.", "2 95 10 99 126 111 93"),
    ("SIREN 404 833 048 — société cliente.", "404 833 048"),
    ("Please add her National Insurance number: JG 10 37 26 A to the payroll.",
     "JG 10 37 26 A"),
    ("Quote your UTR 1955839661 when calling HMRC.", "1955839661"),
    ("BSN: 111222333 (zie paspoort).", "111222333"),
    ("Il codice fiscale è RCCMNL83S18D969H.", "RCCMNL83S18D969H"),
    ("Adjunto mi DNI 54362315-K y el NIE del socio.", "54362315-K"),
    ("El NIE X-2482300W caduca en mayo.", "X-2482300W"),
    ("PESEL: 44051401359, data urodzenia 1944-05-14.", "44051401359"),
    ("NIP 8567346215 widnieje na fakturze.", "8567346215"),
    ("Mitt personnummer är 880320-0016.", "880320-0016"),
    ("CPR-nummer 211062-5629 skal oplyses.", "211062-5629"),
    ("Rijksregisternummer 85.07.30-033 28 staat op de kaart.", "85.07.30-033 28"),
    ("SVNR 1237 010180 bitte am Formular angeben.", "1237 010180"),
    ("AHV-Nr. 756.9217.0769.85 (Lohnausweis)", "756.9217.0769.85"),
    ("Our EIN is 91-1144442; the ITIN on file is 912-90-3456.", "91-1144442"),
]


@pytest.mark.parametrize("text,value", LABELLED_VALID)
def test_a_valid_number_after_its_label(text, value):
    found = run(NationalIdRecognizer(), text)
    assert value in [v for _, v in found], found


@pytest.mark.parametrize("text,value", [
    ("Steuer-ID: 36574261890 (from the letter)", "36574261890"),     # last digit wrong
    ("Codice fiscale: RCCMNL83S18D969A", "RCCMNL83S18D969A"),
    ("personnummer 880320-0018", "880320-0018"),
    ("PESEL 44051401358", "44051401358"),
])
def test_a_mistyped_number_after_its_label_is_still_protected(text, value):
    found = NationalIdRecognizer().analyze(text, None, None)
    assert [text[r.start:r.end] for r in found] == [value]
    assert "mistyped" in found[0].recognition_metadata["preflight_why"]


@pytest.mark.parametrize("text,value", [
    ("He wrote 2 95 10 99 126 111 93 on the form.", "2 95 10 99 126 111 93"),
    ("Send RCCMNL83S18D969H the contract.", "RCCMNL83S18D969H"),
    ("ID: 54362315K", "54362315K"),
    ("Her number AB123456C is on the P60.", "AB123456C"),
    ("Lohnausweis 756.9217.0769.85 liegt bei.", "756.9217.0769.85"),
    ("Kort 85.07.30-033.28 er udstedt.", "85.07.30-033.28"),
    ("Born 811228-9841 in Malmö.", "811228-9841"),
    ("Die Nummer 36 574 261 809 steht im Bescheid.", "36 574 261 809"),
])
def test_a_valid_number_in_its_own_written_form_needs_no_label(text, value):
    assert ("NATIONAL_ID", value) in run(NationalIdRecognizer(), text)


NOT_NATIONAL_IDS = [
    "Order 111222333 shipped on Monday.",             # passes the BSN check, no label
    "Invoice 1955839661 is attached.",                # passes the UTR check, no label
    "Call 44051401359 for the hotline.",              # passes PESEL, no label
    "He wrote 2 95 10 99 126 111 94 on the form.",    # NIR shape, wrong key
    "Ref RCCMNL83S18D969A (typo) without a label.",   # wrong check letter, no label
    "SSN: 000-00-0000",                               # a blank form
    "The national ID card scheme was dropped in 2010.",
    "Pay 12 345 678 901 euros.",                      # not a German IdNr (repeats)
]


@pytest.mark.parametrize("text", NOT_NATIONAL_IDS)
def test_numbers_that_are_no_national_identifier(text):
    assert run(NationalIdRecognizer(), text) == []


def test_an_unknown_format_after_a_generic_label_is_protected():
    found = run(NationalIdRecognizer(), "national ID: ABC-99812-Z, issued 2019")
    assert found == [("NATIONAL_ID", "ABC-99812-Z")]


def test_whys_name_the_kind_and_never_the_value():
    text = "Il codice fiscale è RCCMNL83S18D969H."
    [r] = NationalIdRecognizer().analyze(text, None, None)
    why = r.recognition_metadata["preflight_why"]
    assert "codice fiscale" in why and "RCCMNL83S18D969H" not in why


def test_national_ids_are_protected_by_the_default_policy(real_detector):
    from preflight.core.sanitize.policy import PRESETS

    text = ("New starter: Steuer-IdNr. 36 574 261 809, NINO JG 10 37 26 A, codice fiscale "
            "RCCMNL83S18D969H, BSN 111222333, DNI 54362315-K.")
    spans = real_detector.detect(text)
    protected = {text[s.start:s.end] for s, _ in PRESETS["identifiers"].protected(text, spans)}
    assert {"36 574 261 809", "JG 10 37 26 A", "RCCMNL83S18D969H", "111222333",
            "54362315-K"} <= protected
