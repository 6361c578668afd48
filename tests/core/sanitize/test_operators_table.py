"""Table-driven tests of the classic operators, one table per operator."""

from __future__ import annotations

import re

import pytest
from stdnum import iban

from _change_checks import assert_change_invariants, span
from preflight.core.sanitize import generalize as gen
from preflight.core.sanitize.base import SanitizeParams, create_mechanism, mechanism_names
from preflight.core.pii.recognizers.validators import luhn_ok as luhn_valid
from preflight.core.sanitize.operators import placeholder_label, validate_spans, value_key
from preflight.core.sanitize.surrogates import surrogate_for
from preflight.core.sanitize.vault import restore

OPERATORS = ["redact", "delete", "mask", "placeholder", "pseudonym", "generalize"]
P = SanitizeParams(seed=11)


def run(method: str, text: str, spec: list[tuple[str, str]] | list[tuple[str, str, int]]):
    spans = [span(text, *s) for s in spec]
    mech = create_mechanism(method)
    result = mech.sanitize(text, spans, P)
    assert result.method == method
    assert_change_invariants(text, result)
    return result, mech


def test_all_operators_are_registered():
    assert set(OPERATORS) <= set(mechanism_names())


# -- redact / delete ----------------------------------------------------------------------

@pytest.mark.parametrize("text, spec, expected", [
    ("Call Bob now.", [("Bob", "PERSON")], "Call [REDACTED] now."),
    ("Bob", [("Bob", "PERSON")], "[REDACTED]"),
    ("BobAnn", [("Bob", "PERSON"), ("Ann", "PERSON")], "[REDACTED][REDACTED]"),
    ("no pii here", [], "no pii here"),
])
def test_redact(text, spec, expected):
    result, _ = run("redact", text, spec)
    assert result.text == expected
    assert result.report.reversible is False


@pytest.mark.parametrize("text, spec, expected", [
    ("Call Bob now.", [("Bob", "PERSON")], "Call now."),
    ("Hi Bob, how are you?", [("Bob", "PERSON")], "Hi, how are you?"),
    ("Bob called.", [("Bob", "PERSON")], "called."),
    ("Mail bob@x.org.", [("bob@x.org", "EMAIL_ADDRESS")], "Mail."),
    ("Ann Bob left", [("Ann", "PERSON"), ("Bob", "PERSON")], "left"),
    ("a BobAnn b", [("Bob", "PERSON"), ("Ann", "PERSON")], "a b"),
    ("x\nBob y", [("Bob", "PERSON")], "x\ny"),
])
def test_delete_removes_value_and_one_space(text, spec, expected):
    result, _ = run("delete", text, spec)
    assert result.text == expected


# -- mask ---------------------------------------------------------------------------------

@pytest.mark.parametrize("text, spec, expected", [
    ("Tel +1 415-555-0100.", [("+1 415-555-0100", "PHONE_NUMBER")], "Tel +* ***-***-****."),
    ("card 4111 1111 1111 1234 ok", [("4111 1111 1111 1234", "CREDIT_CARD")],
     "card **** **** **** 1234 ok"),
    ("mail jo.b@ex.com", [("jo.b@ex.com", "EMAIL_ADDRESS")], "mail **.*@**.***"),
    ("SSN 123-45-6789", [("123-45-6789", "US_SSN")], "SSN ***-**-****"),
    ("short card 1234", [("1234", "CREDIT_CARD")], "short card ****"),
    ("Ünal Öz", [("Ünal Öz", "PERSON")], "**** **"),
])
def test_mask_keeps_length_and_separators(text, spec, expected):
    result, _ = run("mask", text, spec)
    assert result.text == expected
    assert len(result.text) == len(text)


# -- placeholder --------------------------------------------------------------------------

def test_placeholder_one_token_per_distinct_value_and_type():
    text = "Ann met Bob. ann and BOB  met again; Ann mailed ann@x.org."
    result, mech = run("placeholder", text, [
        ("Ann", "PERSON"), ("Bob", "PERSON"), ("ann", "PERSON"), ("BOB  met", "PERSON"),
        ("Ann", "PERSON", 1), ("ann@x.org", "EMAIL_ADDRESS"),
    ])
    # "Bob" is a part of the one multi-word name "BOB  met", so both are one person.
    assert result.text == ("<PERSON_1> met <PERSON_2>. <PERSON_1> and <PERSON_2> again; "
                           "<PERSON_1> mailed <EMAIL_ADDRESS_1>.")
    assert result.report.distinct_values == 3
    assert restore(result.text, mech.vault) == text
    # An answer that repeats a token a different number of times gets the first spelling.
    assert restore("<PERSON_1> wrote.", mech.vault) == "Ann wrote."


def test_placeholder_skips_numbers_the_document_already_uses():
    text = "See PERSON_1 and person 2 in the form; Ann signed."
    result, mech = run("placeholder", text, [("Ann", "PERSON")])
    assert "<PERSON_3>" in result.text
    assert restore(result.text, mech.vault) == text


def test_placeholder_same_value_different_type_gets_different_tokens():
    text = "Washington visited Washington."
    result, _ = run("placeholder", text, [("Washington", "PERSON"),
                                          ("Washington", "LOCATION", 1)])
    assert result.text == "<PERSON_1> visited <LOCATION_1>."


@pytest.mark.parametrize("typ, label", [
    ("PERSON", "PERSON"), ("email address", "EMAIL_ADDRESS"), ("x-y", "X_Y"),
    ("123", "PII_123"), ("---", "PII"),
])
def test_placeholder_label(typ, label):
    assert placeholder_label(typ) == label


@pytest.mark.parametrize("a, b, typ, same", [
    ("John  Smith", "john smith", "PERSON", True),
    ("John Smith", "John Smyth", "PERSON", False),
    ("+1 (415) 555-0100", "+14155550100", "PHONE_NUMBER", True),
    ("4111 1111 1111 1111", "4111-1111-1111-1111", "CREDIT_CARD", True),
    ("a-b", "ab", "PERSON", False),
])
def test_value_key(a, b, typ, same):
    assert (value_key(a, typ) == value_key(b, typ)) is same


# -- pseudonym ----------------------------------------------------------------------------

PSEUDO_TEXT = (
    "Maria Keller (maria.keller@acme.de, +49 30 1234567) paid 4111 1111 1111 1111 on "
    "03/14/2021 from DE89 3704 0044 0532 0130 00. Maria Keller lives in Berlin and works "
    "at Acme GmbH. Her colleague Tom Berg (tom@acme.de) was born on 1980-02-29."
)
PSEUDO_SPANS = [
    ("Maria Keller", "PERSON"), ("maria.keller@acme.de", "EMAIL_ADDRESS"),
    ("+49 30 1234567", "PHONE_NUMBER"), ("4111 1111 1111 1111", "CREDIT_CARD"),
    ("03/14/2021", "DATE_TIME"), ("DE89 3704 0044 0532 0130 00", "IBAN_CODE"),
    ("Maria Keller", "PERSON", 1), ("Berlin", "LOCATION"), ("Acme GmbH", "ORGANIZATION"),
    ("Tom Berg", "PERSON"), ("tom@acme.de", "EMAIL_ADDRESS"), ("1980-02-29", "DATE_TIME"),
]


def _surrogates(result):
    return {c.original: c.replacement for c in result.changes}


def test_pseudonym_realistic_surrogates_of_the_same_type():
    result, mech = run("pseudonym", PSEUDO_TEXT, PSEUDO_SPANS)
    sur = _surrogates(result)
    person = sur["Maria Keller"]
    assert re.fullmatch(r"[A-Z][a-z]+ [A-Z][a-z'-]+", person), person
    assert re.fullmatch(r"[a-z0-9._]+@example\.(com|org|net)", sur["maria.keller@acme.de"])
    assert re.fullmatch(r"\+49 \d\d \d{7}", sur["+49 30 1234567"])
    card = sur["4111 1111 1111 1111"]
    assert re.fullmatch(r"4\d{3} \d{4} \d{4} \d{4}", card) and luhn_valid(card)
    assert card != "4111 1111 1111 1111"
    stand_in = sur["DE89 3704 0044 0532 0130 00"]
    assert stand_in.startswith("DE") and iban.is_valid(stand_in)
    assert len(stand_in) == len("DE89 3704 0044 0532 0130 00")
    month, day, year = map(int, sur["03/14/2021"].split("/"))
    assert 1 <= month <= 12 and 1 <= day <= 28 and 2016 <= year <= 2026
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", sur["1980-02-29"])
    assert sur["Berlin"] != "Berlin" and sur["Acme GmbH"] != "Acme GmbH"
    # same value → same surrogate, distinct values → distinct surrogates
    assert result.text.count(person) == 2
    assert len(set(sur.values())) == len(sur)
    assert restore(result.text, mech.vault) == PSEUDO_TEXT


def test_pseudonym_is_reproducible_with_a_seed_and_varies_without():
    spans = [span(PSEUDO_TEXT, *s) for s in PSEUDO_SPANS]
    a = create_mechanism("pseudonym").sanitize(PSEUDO_TEXT, spans, SanitizeParams(seed=5))
    b = create_mechanism("pseudonym").sanitize(PSEUDO_TEXT, spans, SanitizeParams(seed=5))
    c = create_mechanism("pseudonym").sanitize(PSEUDO_TEXT, spans, SanitizeParams(seed=6))
    d = create_mechanism("pseudonym").sanitize(PSEUDO_TEXT, spans, SanitizeParams())
    assert a.text == b.text
    assert a.text != c.text
    assert a.text != d.text
    assert "seed" not in a.to_json()  # the seed is a secret (it lets guesses be checked)


def test_pseudonym_avoids_surrogates_already_in_the_document():
    text = "Ann wrote to Bob."
    first, _ = run("pseudonym", text, [("Ann", "PERSON")])
    taken = _surrogates(first)["Ann"]
    # The same document, now also mentioning the surrogate Ann would have received.
    text2 = f"Ann wrote to Bob about {taken}."
    second, mech = run("pseudonym", text2, [("Ann", "PERSON")])
    new = _surrogates(second)["Ann"]
    assert new != taken and new.casefold() not in text2.casefold()
    assert restore(second.text, mech.vault) == text2


def test_pseudonym_keeps_all_caps_style():
    result, _ = run("pseudonym", "Dear JOHN SMITH,", [("JOHN SMITH", "PERSON")])
    assert _surrogates(result)["JOHN SMITH"].isupper()


@pytest.mark.parametrize("typ, value, pattern", [
    ("US_SSN", "123-45-6789", r"[1-5]\d\d-\d\d-\d{4}"),
    ("IP_ADDRESS", "8.8.8.8", r"\d+\.\d+\.\d+\.\d+"),
    ("URL", "https://acme.com/x", r"https://www\.[a-z-]+\.example/"),
    ("AGE", "42 years", r"\d\d years"),
    ("API_KEY", "sk-AbC123xyz", r"[a-z]{2}-[A-Z][a-z][A-Z]\d{3}[a-z]{3}"),
    ("DATE_TIME", "March 5, 2021", r"[A-Z][a-z]+ \d{1,2}, 20(1[6-9]|2\d)"),
    ("DATE_TIME", "5 Mar 2021", r"\d{1,2} [A-Z][a-z]{2} 20\d\d"),
    ("CREDIT_CARD", "12", r"4\d{3} \d{4} \d{4} \d{4}"),
    ("IBAN_CODE", "not an iban", r"DE\d\d( \d{4}){4} \d\d"),
])
def test_surrogate_shapes(typ, value, pattern):
    import random

    from faker import Faker

    for seed in range(20):
        fake = Faker("en_US")
        fake.seed_instance(seed)
        sur = surrogate_for(value, typ, fake, random.Random(seed))
        assert re.fullmatch(pattern, sur), (seed, sur)
        if typ == "CREDIT_CARD":
            assert luhn_valid(sur)
        if typ == "IBAN_CODE":
            assert iban.is_valid(sur, check_country=False)


@pytest.mark.parametrize("number, ok", [
    ("4111 1111 1111 1111", True), ("4111 1111 1111 1112", False), ("79927398713", True),
])
def test_luhn(number, ok):
    assert luhn_valid(number) is ok


# -- generalize ---------------------------------------------------------------------------

@pytest.mark.parametrize("value, typ, expected", [
    ("March 5, 2021", "DATE_TIME", "2021"),
    ("2021-03-05", "DATE_TIME", "2021"),
    ("05/03/99", "DATE_TIME", "1999"),
    ("next Tuesday", "DATE_TIME", "[DATE]"),
    ("1984-07-12", "DATE_OF_BIRTH", "1980s"),
    ("42 years old", "AGE", "40\u201349 years old"),
    ("aged 7", "AGE", "aged 0\u20139"),
    ("93", "AGE", "90+"),
    ("221B Baker Street, London NW1 6XE", "STREET_ADDRESS", "London"),
    ("1 Main St, Springfield, IL 62701", "STREET_ADDRESS", "Springfield, IL"),
    ("1 Main St", "STREET_ADDRESS", "[ADDRESS]"),
    ("Paris", "LOCATION", "[LOCATION]"),
    ("+44 20 7946 0958", "PHONE_NUMBER", "[PHONE +44]"),
    ("0049 30 1234567", "PHONE_NUMBER", "[PHONE +49]"),
    ("+7 495 123-45-67", "PHONE_NUMBER", "[PHONE +7]"),
    ("(415) 555-0100", "PHONE_NUMBER", "[PHONE]"),
    ("jo@Acme.com", "EMAIL_ADDRESS", "[EMAIL at acme.com]"),
    ("jo@gmail.com", "EMAIL_ADDRESS", "[EMAIL at a free-mail provider]"),
    ("not-an-email", "EMAIL_ADDRESS", "[EMAIL]"),
    ("4111 1111 1111 1111", "CREDIT_CARD", "[Visa card]"),
    ("5500 0000 0000 0004", "CREDIT_CARD", "[Mastercard card]"),
    ("3782 822463 10005", "CREDIT_CARD", "[American Express card]"),
    ("DE89 3704 0044 0532 0130 00", "IBAN_CODE", "[IBAN DE]"),
    ("192.168.17.4", "IP_ADDRESS", "192.168.17.0/24"),
    ("2001:db8::1", "IP_ADDRESS", "2001:db8::/48"),
    ("https://intranet.acme.com/x?y=1", "URL", "[URL at intranet.acme.com]"),
    ("John Smith", "PERSON", "[PERSON]"),
    ("sk-abc", "API_KEY", "[API_KEY]"),
])
def test_generalize_rules(value, typ, expected):
    assert gen.generalize(value, typ) == expected
    text = f"<<{value}>>"
    result, _ = run("generalize", text, [(value, typ)])
    assert result.text == f"<<{expected}>>"


# -- span validation ----------------------------------------------------------------------

@pytest.mark.parametrize("method", OPERATORS)
def test_overlapping_spans_are_refused(method):
    text = "John Smith"
    spans = [span(text, "John Smith", "PERSON"), span(text, "Smith", "PERSON")]
    with pytest.raises(ValueError, match="overlap"):
        create_mechanism(method).sanitize(text, spans, P)


@pytest.mark.parametrize("method", OPERATORS)
def test_span_beyond_text_is_refused(method):
    spans = [span("John Smith", "Smith", "PERSON")]
    with pytest.raises(ValueError, match="outside"):
        create_mechanism(method).sanitize("John", spans, P)


@pytest.mark.parametrize("method", OPERATORS)
def test_unsorted_spans_are_accepted(method):
    text = "Ann and Bob"
    spans = [span(text, "Bob", "PERSON"), span(text, "Ann", "PERSON")]
    result = create_mechanism(method).sanitize(text, spans, P)
    assert_change_invariants(text, result)
    # (delete also takes one neighbouring space, hence the strip)
    assert [c.original.strip() for c in result.changes] == ["Ann", "Bob"]


def test_validate_spans_sorts():
    text = "ab cd"
    out = validate_spans(text, [span(text, "cd", "X"), span(text, "ab", "X")])
    assert [s.start for s in out] == [0, 3]


def test_a_name_part_written_alone_is_the_same_person() -> None:
    from preflight.core.sanitize.base import SanitizeParams, create_mechanism
    from preflight.core.sanitize.vault import Vault, restore
    from preflight.core.types import Category, Span

    text = "Jane Doe met Max Power and Max Smith. Jane agreed; Max did not."

    def person(value: str, nth: int = 0) -> Span:
        start = -1
        for _ in range(nth + 1):
            start = text.index(value, start + 1)
        return Span(start, start + len(value), "PERSON", Category.DIRECT_IDENTIFIER, 0.9, "t", "w")

    spans = [person("Jane Doe"), person("Max Power"), person("Max Smith"), person("Jane", 1),
             person("Max", 2)]
    vault = Vault()
    out = create_mechanism("placeholder", vault=vault).sanitize(text, spans, SanitizeParams())
    # "Jane" belongs to one full name only; "Max" to two, so it stays a value of its own.
    assert out.text == ("<PERSON_1> met <PERSON_2> and <PERSON_3>. <PERSON_1> agreed; "
                        "<PERSON_4> did not.")
    assert restore(out.text, vault) == text
    assert restore("<PERSON_1> said hi", vault, exact_forms=False) == "Jane Doe said hi"
