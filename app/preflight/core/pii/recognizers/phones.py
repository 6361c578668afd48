"""Phone numbers by shape, as a back-up to Presidio's ``PhoneRecognizer``.

Presidio keeps only numbers that ``phonenumbers`` considers valid for a few regions; real
documents also hold numbers with unassigned area codes, extensions or odd grouping.
Shapes here need separators (a bare 10-digit run counts only next to a phone word).
"""

from __future__ import annotations

import re

from preflight.core.pii.recognizers.base import Rule, RuleRecognizer, context_regex
from preflight.core.pii.recognizers.validators import digits

_EXT = r"(?:[ \t]*(?:x|ext\.?|extension)[ \t]*\d{1,6})?"
_PHONE_CONTEXT = context_regex(["phone", "phoned", "phones", "tel", "telephone", "mobile",
                                "cell", "call", "called", "calling", "calls", "rang", "ring",
                                "fax", "contact", "reach", "number", "text", "texted",
                                "whatsapp", "ph", "dial", "dialled", "dialed"])


def _digit_count_ok(value: str) -> bool:
    return 8 <= len(digits(value.split("x")[0].split("ext")[0])) <= 15


class PhonePatternRecognizer(RuleRecognizer):
    """North American and international phone number shapes."""

    RULES = (
        Rule("PHONE_NUMBER", re.compile(
            r"(?<![\w+.-])(?:(?:\+?1|001)[ \t.-]?)?(?:\(\d{3}\)[ \t]?|\d{3}[ \t.-])\d{3}[.-]\d{4}"
            + _EXT + r"(?![\w-])"), 0.6,
            "Has the shape of a North American phone number",
            context=_PHONE_CONTEXT, context_score=0.85, window=40),
        Rule("PHONE_NUMBER", re.compile(
            r"(?<![\w+])\+\d{1,3}[ \t.-]?(?:\(0\)[ \t]?)?(?:\(\d{1,5}\)[ \t.-]?)?\d{1,5}"
            r"(?:[ \t.-]?\d{2,5}){1,4}" + _EXT + r"(?![\w-])"), 0.6,
            "Has the shape of an international phone number (+country code)",
            validate=_digit_count_ok, context=_PHONE_CONTEXT, context_score=0.85, window=40),
        Rule("PHONE_NUMBER", re.compile(
            r"(?<![\w+.-])\(0\d{2,4}\)[ \t]?\d{3,4}[ \t]?\d{3,4}" + _EXT + r"(?![\w-])"), 0.55,
            "Has the shape of a phone number with a trunk prefix in brackets",
            context=_PHONE_CONTEXT, context_score=0.85, window=40),
        Rule("PHONE_NUMBER", re.compile(
            r"(?i:\b(?:tel|phone|mobile|cell|fax|ph)\.?[ \t]*:[ \t]*"
            r"|\b(?:call|ring|reach|text)[ \t]+(?:me|us|him|her|them)[ \t]+(?:on|at)[ \t]+)"
            r"(\(?\+?\d[\d \t().-]{5,20}\d)" + _EXT + r"(?![\w-])"), 0.8,
            "A number in a phone field (Tel:, Mobile:) or after “call me on”", group=1,
            validate=lambda v: 7 <= len(digits(v)) <= 15),
        Rule("PHONE_NUMBER", re.compile(r"(?<![\w+.-])(?:\d{10}|0\d{2,4}[ \t]?\d{3,4}[ \t]?\d{3,4})"
                                        r"(?![\w-])"), 0.6,
             "A number written next to a phone word", context=_PHONE_CONTEXT,
             require_context=True, window=30, context_why=""),
    )


def phone_regions(environ: dict[str, str] | None = None) -> tuple[str, ...]:
    """Regions whose national number formats Presidio's ``PhoneRecognizer`` parses: the
    user's (from the OS locale, ``en_GB.UTF-8`` → GB) and the US.

    Each region is one more pass of ``phonenumbers`` over the text (about 3 ms per 1,000
    words each); numbers written with a +country code are found whatever the region, and
    national formats elsewhere are left to :class:`PhonePatternRecognizer`."""
    import locale
    import os

    import phonenumbers

    env = os.environ if environ is None else environ
    candidates = [env.get(k, "") for k in ("LC_ALL", "LC_TELEPHONE", "LC_CTYPE", "LANG")]
    if environ is None:
        candidates.append(locale.getlocale()[0] or "")
    regions = ["US"]
    for value in candidates:
        m = re.match(r"[a-z]{2,3}[_-]([A-Z]{2})\b", value)
        if m and m.group(1) in phonenumbers.SUPPORTED_REGIONS:
            if m.group(1) not in regions:
                regions.insert(0, m.group(1))
            break
    return tuple(regions)
