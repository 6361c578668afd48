"""Phone numbers by shape, as a back-up to Presidio's ``PhoneRecognizer``.

Presidio keeps only numbers that ``phonenumbers`` considers valid for a few regions; real
documents also hold numbers with unassigned area codes, extensions or odd grouping.
Shapes here need separators (a bare 10-digit run counts only next to a phone word).
"""

from __future__ import annotations

import re

from presidio_analyzer import EntityRecognizer

from preflight.core.pii.recognizers.base import (
    Rule, RuleRecognizer, context_regex, cue, has_context, make_result,
)
from preflight.core.pii.recognizers.validators import digits
from preflight.core.types import Evidence

_EXT = r"(?:[ \t]*(?:x|ext\.?|extension)[ \t]*\d{1,6})?"
_PHONE_CONTEXT = context_regex(["phone", "phoned", "phones", "tel", "telephone", "mobile",
                                "cell", "call", "called", "calling", "calls", "rang", "ring",
                                "fax", "contact", "reach", "number", "text", "texted",
                                "whatsapp", "ph", "dial", "dialled", "dialed"])


def _digit_count_ok(value: str) -> bool:
    return 8 <= len(digits(value.split("x")[0].split("ext")[0])) <= 15


class PhonePatternRecognizer(RuleRecognizer):
    """North American and international phone number shapes."""

    evidence = Evidence.RULE

    RULES = (
        Rule("PHONE_NUMBER", re.compile(
            r"(?=[+\d(])(?<![\w+.-])(?:(?:\+?1|001)[ \t.-]?)?(?:\(\d{3}\)[ \t]?|\d{3}[ \t.-])"
            r"\d{3}[.-]\d{4}"
            + _EXT + r"(?![\w-])"), 0.6,
            "Has the shape of a North American phone number",
            context=_PHONE_CONTEXT, context_score=0.85, window=40),
        Rule("PHONE_NUMBER", re.compile(
            r"(?<![\w+])\+\d{1,3}[ \t.-]?(?:\(0\)[ \t]?)?(?:\(\d{1,5}\)[ \t.-]?)?\d{1,5}"
            r"(?:[ \t.-]?\d{2,5}){1,4}" + _EXT + r"(?![\w-])"), 0.6,
            "Has the shape of an international phone number (+country code)",
            validate=_digit_count_ok, context=_PHONE_CONTEXT, context_score=0.85, window=40,
            needs=cue("+")),
        Rule("PHONE_NUMBER", re.compile(
            r"(?<![\w+.-])\(0\d{2,4}\)[ \t]?\d{3,4}[ \t]?\d{3,4}" + _EXT + r"(?![\w-])"), 0.55,
            "Has the shape of a phone number with a trunk prefix in brackets",
            context=_PHONE_CONTEXT, context_score=0.85, window=40, needs=cue("(0")),
        Rule("PHONE_NUMBER", re.compile(
            r"(?i:\b(?:tel|phone|mobile|cell|fax|ph)\.?[ \t]*:[ \t]*"
            r"|\b(?:call|ring|reach|text)[ \t]+(?:me|us|him|her|them)[ \t]+(?:on|at)[ \t]+)"
            r"(\(?\+?\d[\d \t().-]{5,20}\d)" + _EXT + r"(?![\w-])"), 0.8,
            "A number in a phone field (Tel:, Mobile:) or after “call me on”", group=1,
            validate=lambda v: 7 <= len(digits(v)) <= 15),
        Rule("PHONE_NUMBER", re.compile(r"(?=\d)(?<![\w+.-])(?:\d{10}|0\d{2,4}[ \t]?\d{3,4}"
                                        r"[ \t]?\d{3,4})"
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


#: Regions whose national and trunk-prefixed formats are parsed besides the user's own
#: (:func:`phone_regions`): the common European and Asian ones.
COMMON_REGIONS = ("GB", "IE", "DE", "AT", "CH", "FR", "BE", "NL", "LU", "IT", "ES", "PT",
                  "PL", "CZ", "SK", "HU", "RO", "BG", "GR", "SE", "NO", "DK", "FI", "EE",
                  "LV", "LT", "RU", "UA", "TR", "IL", "IN", "CN", "HK", "TW", "JP", "KR",
                  "SG", "MY", "TH", "VN", "PH", "ID", "AU", "NZ")
# A run of digit groups as phone numbers are written: "+44 20 7946 0958", "0044 …",
# "020 7946 0958", "8 (495) 123-45-67", "06-12345678"; not glued to a word, a slash (a
# case number), a comma or a decimal point (an amount)
_CANDIDATE = re.compile(
    r"(?<![\w+/.,:-])(?:\+|00)?\(?\d[\d \t().-]{5,20}\d(?![\w/-]|[.,:]\d)")
_DATE_SHAPE = re.compile(r"\d{1,4}[ ./-]\d{1,2}[ ./-]\d{2,4}")
_DOTTED_QUAD = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")
_IBAN_HEAD = re.compile(r"\b[A-Z]{2}\d{2}[ ]?$")
_GROUPED = re.compile(r"\d[ \t().-]+\d")
# an amount in thousands ("08 500 000") or a decimal ("0.12"): a number, not a phone
_AMOUNT = re.compile(r"\d{1,3}(?:([ .])\d{3})(?:\1\d{3})*|\d\.\d.*")


class PhoneNumberParserRecognizer(EntityRecognizer):
    """Phone numbers in international (``+44 …``), ``00``-prefixed (``0044 …``),
    national and trunk-prefixed forms (``020 7946 0958``, ``06 12 34 56 78``,
    ``8 (495) 123-45-67``), parsed and validated by ``phonenumbers`` for the user's
    regions and :data:`COMMON_REGIONS`. One pass finds candidates; each is parsed for
    the regions in turn. A national form needs its groups written apart (or a phone word
    before it) and a trunk prefix (0 or 8); dates, IP addresses and the digits after an
    IBAN's country code are not phone numbers."""

    evidence = Evidence.RULE

    WHY = "Parses as a valid phone number ({form}) for {region}"

    def __init__(self, regions: tuple[str, ...] | None = None) -> None:
        import phonenumbers

        self._pn = phonenumbers
        own = tuple(regions or phone_regions())
        self.regions = own + tuple(r for r in COMMON_REGIONS if r not in own)
        super().__init__(supported_entities=["PHONE_NUMBER"], supported_language="en",
                         name="PhoneNumberParserRecognizer")

    def load(self) -> None:
        pass

    def analyze(self, text, entities, nlp_artifacts=None):  # noqa: D102 (Presidio API)
        if entities and "PHONE_NUMBER" not in entities:
            return []
        out = []
        for m in _CANDIDATE.finditer(text):
            value = m.group().rstrip(" \t(")
            if (_DATE_SHAPE.fullmatch(value) or _DOTTED_QUAD.fullmatch(value)
                    or _IBAN_HEAD.search(text, max(0, m.start() - 6), m.start())):
                continue
            found = self._parse(value, has_context(text, m.start(), m.end(), _PHONE_CONTEXT,
                                                   window=40))
            if found is not None:
                form, region, score = found
                out.append(make_result(self, "PHONE_NUMBER", m.start(), m.start() + len(value),
                                       score, self.WHY.format(form=form, region=region)))
        return out

    def _parse(self, value: str, context: bool) -> tuple[str, str, float] | None:
        pn = self._pn
        digits_only = digits(value)
        if not 8 <= len(digits_only) <= 17:
            return None
        if value.startswith(("+", "00")):
            number = "+" + value[1:] if value.startswith("+") else "+" + value[2:]
            try:
                parsed = pn.parse(number, None)
            except pn.NumberParseException:
                return None
            if not pn.is_valid_number(parsed):
                return None
            form = "international" if value.startswith("+") else "00-prefixed"
            return form, pn.region_code_for_number(parsed), 0.85 if context else 0.7
        if not digits_only.startswith(("0", "8")) or not (_GROUPED.search(value) or context):
            return None
        if _AMOUNT.fullmatch(value) and not context:
            return None
        for region in self.regions:
            try:
                parsed = pn.parse(value, region)
            except pn.NumberParseException:
                continue
            if pn.is_valid_number(parsed) and pn.region_code_for_number(parsed) == region:
                return "national", region, 0.8 if context else 0.6
        return None
