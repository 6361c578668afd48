"""Checksums and statistics that turn "looks like" into "is" (no values are logged).

Check digits come from python-stdnum (Luhn, IBAN mod-97 and its country registry, ABA
routing numbers, ISINs, national identifiers in :mod:`.national_ids`); what stdnum does
not know is here: the issuer ranges of payment cards and the character statistics of
random-looking secrets.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter

from stdnum import luhn, numdb

_NON_DIGIT = re.compile(r"\D")


def digits(value: str) -> str:
    return _NON_DIGIT.sub("", value)


def luhn_ok(value: str) -> bool:
    """Luhn (mod-10) checksum over the digits of ``value``."""
    nums = digits(value)
    return len(nums) >= 2 and luhn.is_valid(nums)


# Issuer prefixes (IIN ranges) and the lengths they issue; a Luhn-valid number outside
# these is more likely an order or reference number than a card. (stdnum checks the
# Luhn digit but knows no card issuers.)
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


_BBAN_PART = re.compile(r"(\d+)!")


@functools.lru_cache(maxsize=None)
def iban_length(country: str) -> int | None:
    """The length of an IBAN of ``country`` in stdnum's copy of the ISO 13616 registry
    (None: no IBAN there)."""
    if len(country) != 2 or not country.isalpha() or not country.isupper():
        return None
    found = numdb.get("iban").info(country)[0][1]
    if not found or "bban" not in found:
        return None
    return 4 + sum(int(n) for n in _BBAN_PART.findall(found["bban"]))


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
