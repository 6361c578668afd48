"""Per-type generalization: keep the coarse fact a reader needs, drop the identifying detail.

Each rule maps one detected value to a coarser one (a date to its year, an age to its
decade, a card number to its brand...). Types without a sensible generalization become a
type marker such as ``[PERSON]``. The rules are pure functions of the value, so the same
value always generalizes the same way; the choices are documented in
``docs/_parts/operators.md``.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from datetime import date
from typing import Callable

MONTHS = (
    "january", "february", "march", "april", "may", "june", "july", "august",
    "september", "october", "november", "december",
)
_MONTH_ALT = "|".join(m[:3] + (m[3:] and f"(?:{m[3:]})?") for m in MONTHS) + "|sept"

_YEAR = r"(?:1[5-9]\d\d|20\d\d|21\d\d)"
YEAR_RE = re.compile(rf"(?<!\d){_YEAR}(?!\d)")
# Numeric dates: Y-M-D, or D/M/Y and M/D/Y (the order is ambiguous; only the year is used).
ISO_DATE_RE = re.compile(r"^\s*(\d{4})([-/.])(\d{1,2})\2(\d{1,2})\s*$")
DMY_DATE_RE = re.compile(r"^\s*(\d{1,2})([-/.])(\d{1,2})\2(\d{2}|\d{4})\s*$")
MONTH_NAME_RE = re.compile(rf"\b({_MONTH_ALT})\b\.?", re.IGNORECASE)

FREE_MAIL_DOMAINS = frozenset({
    "gmail.com", "googlemail.com", "yahoo.com", "yahoo.co.uk", "hotmail.com", "outlook.com",
    "live.com", "msn.com", "aol.com", "icloud.com", "me.com", "mac.com", "gmx.de", "gmx.net",
    "gmx.com", "web.de", "mail.com", "protonmail.com", "proton.me", "yandex.com", "yandex.ru",
    "zoho.com", "fastmail.com", "t-online.de", "orange.fr", "free.fr", "libero.it", "qq.com",
    "163.com", "126.com",
})


def find_year(value: str) -> int | None:
    """The year a date string mentions (four digits, or a two-digit year of d/m/yy)."""
    m = YEAR_RE.search(value)
    if m:
        return int(m.group())
    m = DMY_DATE_RE.match(value)
    if m and len(m.group(4)) == 2:
        yy = int(m.group(4))
        # Two-digit years: pivot at the current year, as most date libraries do.
        pivot = date.today().year % 100
        return (2000 if yy <= pivot else 1900) + yy
    return None


def month_name_match(value: str) -> re.Match[str] | None:
    return MONTH_NAME_RE.search(value)


def generalize_date(value: str) -> str:
    year = find_year(value)
    return str(year) if year is not None else "[DATE]"


def generalize_birth_date(value: str) -> str:
    # A birth year plus a town often singles a person out; the decade rarely does.
    year = find_year(value)
    return f"{year // 10 * 10}s" if year is not None else "[DATE_OF_BIRTH]"


_NUMBER_RE = re.compile(r"\d+")


def generalize_age(value: str) -> str:
    m = _NUMBER_RE.search(value)
    if not m:
        return "[AGE]"
    age = int(m.group())
    # 90 and over are pooled: few people are that old, so exact old ages identify.
    bucket = "90+" if age >= 90 else f"{age // 10 * 10}\u2013{age // 10 * 10 + 9}"
    return value[: m.start()] + bucket + value[m.end():]


_POSTCODE_RE = re.compile(
    r"\b(?:\d{4,6}(?:-\d{4})?|[A-Z]{1,2}\d[A-Z\d]?\s*\d[A-Z]{2})\b", re.IGNORECASE
)
_STATE_RE = re.compile(r"^[A-Z]{2}$")


def generalize_address(value: str) -> str:
    """Street address → the town (and region) it names, else ``[ADDRESS]``.

    "221B Baker Street, London NW1 6XE" → "London"; "1 Main St, Springfield, IL 62701" →
    "Springfield, IL". The first comma- or line-separated part is taken as the street.
    """
    parts = [p.strip() for p in re.split(r"[,\n]", value) if p.strip()]
    if len(parts) < 2:
        return "[ADDRESS]"
    kept: list[str] = []
    for part in parts[1:]:
        cleaned = " ".join(_POSTCODE_RE.sub(" ", part).split())
        if not cleaned or any(ch.isdigit() for ch in cleaned):
            continue  # a flat/unit number or a bare postcode: identifying, not a place
        kept.append(cleaned)
    if not kept:
        return "[ADDRESS]"
    return ", ".join(kept)


def generalize_location(value: str) -> str:
    if any(ch.isdigit() for ch in value) and ("," in value or "\n" in value):
        return generalize_address(value)
    return "[LOCATION]"


# One- and two-digit calling codes in use (ITU E.164); anything else is a 3-digit code.
COUNTRY_CODE_RE = re.compile(
    r"^\s*(?:\+|00)(1|7|2[07]|3[0-469]|4[013-9]|5[1-8]|6[0-6]|8[1246]|9[0-58]|\d{3})"
)


def generalize_phone(value: str) -> str:
    m = COUNTRY_CODE_RE.match(value)
    return f"[PHONE +{m.group(1)}]" if m else "[PHONE]"


def generalize_email(value: str) -> str:
    _, at, domain = value.strip().rpartition("@")
    domain = domain.strip().strip(".").lower()
    if not at or not domain or "." not in domain:
        return "[EMAIL]"
    if domain in FREE_MAIL_DOMAINS:
        return "[EMAIL at a free-mail provider]"
    return f"[EMAIL at {domain}]"


def card_brand(digits: str) -> str | None:
    if digits.startswith("4"):
        return "Visa"
    if digits[:2] in {"34", "37"}:
        return "American Express"
    if digits[:2] in {"51", "52", "53", "54", "55"} or (
        len(digits) >= 4 and 2221 <= int(digits[:4]) <= 2720
    ):
        return "Mastercard"
    if digits.startswith(("6011", "65")):
        return "Discover"
    if len(digits) >= 4 and 3528 <= int(digits[:4]) <= 3589:
        return "JCB"
    return None


def generalize_card(value: str) -> str:
    brand = card_brand("".join(ch for ch in value if ch.isdigit()))
    return f"[{brand} card]" if brand else "[CARD]"


def generalize_iban(value: str) -> str:
    compact = "".join(value.split()).upper()
    if len(compact) >= 2 and compact[:2].isalpha() and compact[:2].isascii():
        return f"[IBAN {compact[:2]}]"
    return "[IBAN]"


def generalize_ip(value: str) -> str:
    try:
        addr = ipaddress.ip_address(value.strip())
    except ValueError:
        return "[IP_ADDRESS]"
    prefix = 24 if addr.version == 4 else 48
    return str(ipaddress.ip_network(f"{addr}/{prefix}", strict=False))


_URL_HOST_RE = re.compile(r"^\s*(?:[a-z][a-z0-9+.-]*://)?([^/\s:?#]+)", re.IGNORECASE)


def generalize_url(value: str) -> str:
    m = _URL_HOST_RE.match(value)
    host = m.group(1).lower() if m else ""
    return f"[URL at {host}]" if "." in host else "[URL]"


@dataclass(frozen=True)
class Rule:
    description: str
    apply: Callable[[str], str]


RULES: dict[str, Rule] = {
    "DATE_TIME": Rule("date → year", generalize_date),
    "DATE": Rule("date → year", generalize_date),
    "DATE_OF_BIRTH": Rule("birth date → decade", generalize_birth_date),
    "AGE": Rule("age → ten-year range (90+ pooled)", generalize_age),
    "STREET_ADDRESS": Rule("street address → town/region, else [ADDRESS]", generalize_address),
    "ADDRESS": Rule("street address → town/region, else [ADDRESS]", generalize_address),
    "LOCATION": Rule("address-like → town, place → [LOCATION]", generalize_location),
    "PHONE_NUMBER": Rule("phone → country calling code", generalize_phone),
    "EMAIL_ADDRESS": Rule("email → its domain (free-mail pooled)", generalize_email),
    "CREDIT_CARD": Rule("card number → brand", generalize_card),
    "IBAN_CODE": Rule("IBAN → country", generalize_iban),
    "IP_ADDRESS": Rule("IP → /24 (IPv4) or /48 (IPv6) network", generalize_ip),
    "URL": Rule("URL → host", generalize_url),
}


def type_marker(entity_type: str) -> str:
    return f"[{entity_type}]"


def generalize(value: str, entity_type: str) -> str:
    """The generalized form of ``value`` (a type marker when the type has no rule)."""
    rule = RULES.get(entity_type)
    return rule.apply(value) if rule else type_marker(entity_type)
