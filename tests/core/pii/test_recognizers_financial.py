"""Cards and IBANs in any grouping (checksums), bank accounts, validators."""

from __future__ import annotations

import pytest

from preflight.core.pii.recognizers.financial import (
    BankAccountRecognizer, CardNumberRecognizer, IbanChecksumRecognizer,
)
from preflight.core.pii.recognizers.confidential import AssetRecognizer
from preflight.core.pii.recognizers.validators import (
    card_ok, iban_length, luhn_ok, shannon_entropy,
)

from pii_testutil import run

CARDS = [
    ("4111111111111111", "4111111111111111"),
    ("4111 1111 1111 1111", "4111 1111 1111 1111"),
    ("4111-1111-1111-1111", "4111-1111-1111-1111"),
    ("3782 822463 10005", "3782 822463 10005"),            # Amex 4-6-5
    ("4192 5412 2482 1", "4192 5412 2482 1"),              # 13-digit Visa
    ("5555555555554444 exp 12/29", "5555555555554444"),
    ("4000 0566 5566 5556 2024", "4000 0566 5566 5556"),   # trailing group is not part of it
]


@pytest.mark.parametrize("text,value", CARDS)
def test_card_found(text, value):
    assert run(CardNumberRecognizer(), f"Paid with {text} yesterday.") == [("CREDIT_CARD", value)]


@pytest.mark.parametrize("text", [
    "4111 1111 1111 1112",          # Luhn fails
    "1234567812345670",             # Luhn ok but no issuer starts with 1
    "Order 0000 0000 0000",
    "version 4.1111111111111111",
])
def test_card_not_found(text):
    assert run(CardNumberRecognizer(), text) == []


IBANS = [
    "GB82WEST12345698765432",
    "GB82 WEST 1234 5698 7654 32",
    "GB82-WEST-1234-5698-7654-32",
    "DE89 3704 0044 0532 0130 00",
    "FR1420041010050500013M02606",
    "NL91 ABNA 0417 1643 00",
    # countries of the IBAN registry that a hand-kept length table had missed
    "RU03 0445 2522 5408 1781 0538 0913 1041 9",
    "OM27 0180 0012 3456 7891 234",
]


@pytest.mark.parametrize("iban", IBANS)
def test_iban_found(iban):
    assert run(IbanChecksumRecognizer(), f"Pay to {iban}, thanks.") == [("IBAN_CODE", iban)]


@pytest.mark.parametrize("text", [
    "GB82 WEST 1234 5698 7654 33",       # checksum fails
    "GB82 WEST 1234 5698 7654",          # too short for GB
    "XX82WEST12345698765432",            # unknown country
])
def test_iban_not_found(text):
    assert run(IbanChecksumRecognizer(), text) == []


@pytest.mark.parametrize("text,value", [
    ("Account number: 12345678", "12345678"),
    ("acct # 0012-3456-789", "0012-3456-789"),
    ("routing number 021000021", "021000021"),
    ("Sort code: 12-34-56", "12-34-56"),
])
def test_bank_account(text, value):
    assert ("BANK_ACCOUNT", value) in run(BankAccountRecognizer(), text)


def test_iban_followed_by_a_number_keeps_the_valid_iban():
    # privacy first: a number after the IBAN does not hide the IBAN itself
    text = "GB82 WEST 1234 5698 7654 32 1 time"
    assert run(IbanChecksumRecognizer(), text) == [("IBAN_CODE", "GB82 WEST 1234 5698 7654 32")]


def test_iban_glued_to_more_characters_is_rejected():
    assert run(IbanChecksumRecognizer(), "GB82WEST12345698765432X") == []


def test_routing_needs_checksum():
    assert run(BankAccountRecognizer(), "routing number 123456789") == []


@pytest.mark.parametrize("fn,value,ok", [
    (luhn_ok, "79927398713", True), (luhn_ok, "79927398710", False),
    (card_ok, "378282246310005", True), (card_ok, "378282246310006", False),
])
def test_validators(fn, value, ok):
    assert fn(value) is ok


@pytest.mark.parametrize("country,length", [("DE", 22), ("GB", 22), ("NO", 15), ("MT", 31),
                                            ("XX", None), ("de", None)])
def test_iban_length_from_the_registry(country, length):
    assert iban_length(country) == length


@pytest.mark.parametrize("text,found", [
    ("Wire it with routing number 011000015 today.", True),
    ("Wire it with routing number 011000016 today.", False),      # ABA check fails
    ("routing number: 000000000", False),                          # a blank form
])
def test_routing_number_checksum(text, found):
    assert (("BANK_ACCOUNT", "011000015") in run(BankAccountRecognizer(), text)) is found \
        or (not found and run(BankAccountRecognizer(), text) == [])


@pytest.mark.parametrize("text,found", [
    ("The fund holds US0378331005 and a bond.", True),
    ("The fund holds US0378331006 and a bond.", False),            # ISIN check digit fails
])
def test_isin_check_digit(text, found):
    assert bool(run(AssetRecognizer(), text)) is found


def test_entropy():
    assert shannon_entropy("aaaa") == 0.0
    assert shannon_entropy("abcd") == pytest.approx(2.0)
