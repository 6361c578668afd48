"""Checksums and statistics that turn "looks like" into "is" (no values are logged)."""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Sequence

_NON_DIGIT = re.compile(r"\D")
_NON_ALNUM = re.compile(r"[^0-9A-Za-z]")


def digits(value: str) -> str:
    return _NON_DIGIT.sub("", value)


def luhn_check_digit(payload: Sequence[int]) -> int:
    """The digit that makes ``payload + [check]`` pass the Luhn (mod-10) test."""
    total = 0
    for i, d in enumerate(reversed(payload)):
        if i % 2 == 0:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return (10 - total % 10) % 10


def luhn_ok(value: str) -> bool:
    """Luhn (mod-10) checksum over the digits of ``value``."""
    nums = [ord(ch) - 48 for ch in digits(value)]
    return len(nums) >= 2 and luhn_check_digit(nums[:-1]) == nums[-1]


# Issuer prefixes (IIN ranges) and the lengths they issue; a Luhn-valid number outside
# these is more likely an order or reference number than a card.
_CARD_RANGES: tuple[tuple[str, int, int, tuple[int, ...]], ...] = (
    ("4", 4, 4, (13, 16, 19)),                 # Visa
    ("51", 51, 55, (16,)),                     # Mastercard
    ("2221", 2221, 2720, (16,)),               # Mastercard 2-series
    ("34", 34, 34, (15,)),                     # American Express
    ("37", 37, 37, (15,)),
    ("6011", 6011, 6011, (16, 19)),            # Discover
    ("65", 65, 65, (16, 19)),
    ("644", 644, 649, (16, 19)),
    ("622126", 622126, 622925, (16, 19)),
    ("3528", 3528, 3589, (16, 17, 18, 19)),    # JCB
    ("2131", 2131, 2131, (15,)),
    ("1800", 1800, 1800, (15,)),
    ("300", 300, 305, (14, 16, 19)),           # Diners Club
    ("36", 36, 36, (14, 16, 19)),
    ("38", 38, 39, (14, 16, 19)),
    ("50", 50, 50, tuple(range(12, 20))),      # Maestro
    ("56", 56, 69, tuple(range(12, 20))),      # Maestro / UnionPay / others
    ("62", 62, 62, tuple(range(16, 20))),      # UnionPay
)


def card_issuer_ok(value: str) -> bool:
    nums = digits(value)
    for prefix, lo, hi, lengths in _CARD_RANGES:
        head = nums[: len(prefix)]
        if head.isdigit() and lo <= int(head) <= hi and len(nums) in lengths:
            return True
    return False


def card_ok(value: str) -> bool:
    return card_issuer_ok(value) and luhn_ok(value)


# IBAN lengths per country (ISO 13616 registry).
IBAN_LENGTHS: dict[str, int] = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22,
    "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28,
    "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23,
    "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26,
    "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20,
    "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30,
    "NL": 18, "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22,
    "SA": 24, "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "ST": 25, "SV": 28,
    "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}


def iban_ok(value: str) -> bool:
    """Country length and ISO 7064 mod-97 check of an IBAN (separators ignored)."""
    iban = _NON_ALNUM.sub("", value).upper()
    if IBAN_LENGTHS.get(iban[:2]) != len(iban) or not iban[2:4].isdigit():
        return False
    try:
        return iban_mod97(iban[4:] + iban[:4]) == 1
    except ValueError:
        return False


def iban_mod97(s: str) -> int:
    """ISO 7064 mod-97 of an alphanumeric string (letters count as 10..35)."""
    return int("".join(str(int(ch, 36)) for ch in s)) % 97


def aba_routing_ok(value: str) -> bool:
    """US ABA routing number checksum (3-7-1 weights)."""
    nums = digits(value)
    if len(nums) != 9 or nums == "000000000":
        return False
    w = (3, 7, 1) * 3
    return sum(int(c) * k for c, k in zip(nums, w)) % 10 == 0


def isin_ok(value: str) -> bool:
    """ISIN: two letters, nine alphanumerics, Luhn check digit over the letter-expanded code."""
    v = value.upper()
    if not re.fullmatch(r"[A-Z]{2}[A-Z0-9]{9}\d", v):
        return False
    expanded = "".join(str(int(ch, 36)) for ch in v)
    return luhn_ok(expanded)


def shannon_entropy(value: str) -> float:
    """Bits per character of the character distribution of ``value``."""
    if not value:
        return 0.0
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def char_classes(value: str) -> int:
    return (
        any(c.islower() for c in value)
        + any(c.isupper() for c in value)
        + any(c.isdigit() for c in value)
        + any(not c.isalnum() for c in value)
    )
