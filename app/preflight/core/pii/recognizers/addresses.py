"""Street addresses (US and UK style), PO boxes and US military mail addresses.

Presidio has no street-address recognizer (a known miss). Street suffixes are the full
USPS street suffix list (Publication 28, appendix C1) with its abbreviations, plus UK/Irish
types (:mod:`.street_suffixes`). "Strong" suffixes (Street, Avenue, Road...) count on
their own after a house number and a capitalized name. "Weak" ones (Pines, Loop, Points,
Spring...) are ordinary words too ("12 Key Points"), so a weak suffix must be written
capitalized and needs one more piece of evidence: a locality (city + state + ZIP, or a UK
postcode), a unit (Apt. 720, Suite 858, #4) after it or a UK flat before it, a city after
a comma with the address alone on its line (a letter's address block), or an address word
nearby.
"""

from __future__ import annotations

import re

from preflight.core.pii.recognizers.base import Rule, RuleRecognizer, context_regex
from preflight.core.pii.recognizers.street_suffixes import (
    CAPITALS_ONLY, is_abbreviation, split_by_strength,
)
from preflight.core.types import Evidence

STRONG_SUFFIXES, WEAK_SUFFIXES = split_by_strength()

US_STATES = (
    "AL AK AZ AR CA CO CT DE DC FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV "
    "NH NJ NM NY NC ND OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY AS FM GU MH MP PW PR "
    "VI AA AE AP"
).split()
US_STATE_NAMES = (
    "Alabama|Alaska|Arizona|Arkansas|California|Colorado|Connecticut|Delaware|Florida|"
    "Georgia|Hawaii|Idaho|Illinois|Indiana|Iowa|Kansas|Kentucky|Louisiana|Maine|Maryland|"
    "Massachusetts|Michigan|Minnesota|Mississippi|Missouri|Montana|Nebraska|Nevada|"
    "New Hampshire|New Jersey|New Mexico|New York|North Carolina|North Dakota|Ohio|Oklahoma|"
    "Oregon|Pennsylvania|Rhode Island|South Carolina|South Dakota|Tennessee|Texas|Utah|"
    "Vermont|Virginia|Washington|West Virginia|Wisconsin|Wyoming"
)


def _alt(words) -> str:
    return "|".join(sorted(set(words), key=len, reverse=True))


_SP = r"[ \t]+"
_SEP = r"(?:[ \t]*,[ \t]*\n?[ \t]*|[ \t]*\n[ \t]*|[ \t]+)"     # ", " or newline or spaces
_NUMBER = r"\d{1,6}[A-Za-z]?(?:[-/]\d{1,5}[A-Za-z]?)?"
_DIRECTION = r"(?:[NSEW]|NE|NW|SE|SW|North|South|East|West|Northeast|Northwest|Southeast|Southwest)\.?"
# A word of a street's name: a capitalized word (an abbreviation's dot too: "St. Mary"),
# an ordinal ("5th") or a joining word ("Avenue of the Americas"). Not a person's name
# word (:mod:`~preflight.core.pii.name_shapes`): a street is named in the Latin letters of
# the US and UK forms this recognizer reads, numbers and all.
_FIRST_STREET_WORD = r"(?:[A-Z][A-Za-z'’.-]*|\d{1,3}(?:st|nd|rd|th))"
_STREET_WORD = r"(?:[A-Z][A-Za-z'’.-]*|\d{1,3}(?:st|nd|rd|th)|(?:de|la|del|van|von|of|the))"
_UNIT = (r"(?:,?[ \t]*(?:Apt|Apartment|Suite|Ste|Unit|Fl|Floor|Room|Rm|Bldg|Building|Flat|#)"
         r"\.?[ \t]*#?[ \t]*[A-Za-z0-9-]{1,6}\b)")
_CITY = r"[A-Z][A-Za-z'’.-]+(?:[ \t]+[A-Z][A-Za-z'’.-]+){0,3}"
_STATE = rf"(?:{_alt(US_STATES)}|{US_STATE_NAMES})"
_ZIP = r"\d{5}(?:-\d{4})?"
_UK_POSTCODE = r"[A-Z]{1,2}\d[A-Z\d]?[ \t]*\d[A-Z]{2}"
_US_LOCALITY = rf"(?:{_SEP}{_CITY},?{_SP}{_STATE}\.?(?:{_SP}|[ \t]*,[ \t]*){_ZIP})"
_UK_LOCALITY = rf"(?:(?:{_SEP}{_CITY}){{0,2}}{_SEP}{_UK_POSTCODE})"


def _suffix_end(forms: list[str], any_case: bool) -> str:
    """The suffix at the end of a street name; abbreviations may take a period."""
    abbrev = [f for f in forms if is_abbreviation(f)]
    words = [f for f in forms if not is_abbreviation(f)]
    if any_case:
        return rf"(?:(?i:{_alt(abbrev)})\b\.?|(?i:{_alt(words)})\b)"

    def cased(group: list[str]) -> str:
        return _alt([f.upper() for f in group]
                     + [f for f in group if f not in CAPITALS_ONLY])
    return rf"(?:(?:{cased(abbrev)})\b\.?|(?:{cased(words)})\b)"


#: strong suffixes in any case ("12 Oak street"), weak ones capitalized only
_STRONG_END = _suffix_end(STRONG_SUFFIXES, any_case=True)
_WEAK_END = _suffix_end(WEAK_SUFFIXES, any_case=False)


# a time of day is not a street: "10 PM PT", "12 PM CT" (PT = Point, CT = Court)
_NOT_A_NAME = r"(?!(?:AM|PM|A\.M\.|P\.M\.)(?![A-Za-z]))"


def _street(end: str, number_required: bool = True, max_words: int = 4) -> str:
    number = rf"{_NUMBER}{_SP}" if number_required else rf"(?:{_NUMBER}{_SP})?"
    return (rf"{number}(?:{_DIRECTION}{_SP})?{_NOT_A_NAME}{_FIRST_STREET_WORD}{_SP}"
            rf"(?:{_STREET_WORD}{_SP}){{0,{max_words - 1}}}?"
            rf"{end}(?:{_SP}{_DIRECTION}(?![A-Za-z]))?{_UNIT}?")


_B = r"(?<![\w-])"
_UK_FLAT = r"(?:(?:Flat|Studio|Apartment|Unit)[ \t]+[A-Za-z0-9]{1,5}" + _SEP + ")"

_ADDRESS_CONTEXT = context_regex([
    "address", "addr", "lives", "live", "living", "located", "location", "resides",
    "residing", "residence", "home", "ship to", "shipping", "mail to", "deliver", "delivery",
    "visit", "office", "moved", "send to", "headquarters", "hq",
])

# Evidence that a weak suffix ends a street name: a unit number after it ("Apt. 720",
# "Suite 858", "#4"); a number or single letter must follow the unit word.
_UNIT_EVIDENCE = (r"(?:,?[ \t]*(?i:Apt|Apartment|Suite|Ste|Unit|Floor|Fl|Room|Rm|Bldg|"
                  r"Building|#)\.?[ \t]*#?[ \t]*(?:\d[A-Za-z0-9-]{0,5}|[A-Z])(?![\w-]))")
# Headline words: "3 Main Points" or "10 Key Points" on a line of its own is a heading
_HEADLINE_WORDS = ("Key|Main|Top|Best|Great|Simple|Easy|Important|Major|Basic|Quick|Common|"
                   "Essential|Critical|Practical|Useful|Bonus|Other|More|Few|Different")
_WEAK_STREET = _street(_WEAK_END, max_words=2)
# the address alone on its line, then a comma and a city ending the line or followed by a
# comma ("320 Wise Pines, Lake Michelle"); not a heading ("3 Main Points, Explained").
# Strong suffixes too, so the city is part of the same address span.
_LINE_WITH_CITY = (rf"(?m:^)[ \t]*(?!{_NUMBER}{_SP}(?:{_HEADLINE_WORDS}){_SP})"
                   rf"((?:{_street(_STRONG_END)}|{_WEAK_STREET})[ \t]*,[ \t]*{_CITY})"
                   rf"(?=[ \t]*(?:,|\r?$))")

_WHY_FULL = "A street number, street name and suffix followed by a city, state/postcode"
_WHY_STREET = "A street number followed by a name and a street suffix (Street, Avenue, Road…)"
_WHY_UNIT = ("A street number, a name and a street-type word (Pines, Loop…) with an "
             "apartment, suite or flat number")
_WHY_LINE = "A line holding only a street number, a name, a street suffix and a city"


class StreetAddressRecognizer(RuleRecognizer):
    """US/UK street addresses with optional unit, city, state and ZIP/postcode."""

    evidence = Evidence.RULE

    RULES = (
        Rule("STREET_ADDRESS", re.compile(
            _B + rf"(?:{_street(_STRONG_END)}|{_street(_WEAK_END)}){_US_LOCALITY}(?!\d)"),
            0.95, _WHY_FULL),
        Rule("STREET_ADDRESS", re.compile(
            _B + rf"{_UK_FLAT}?(?:{_street(_STRONG_END, False)}|{_street(_WEAK_END, False)})"
            rf"{_UK_LOCALITY}\b"), 0.95, _WHY_FULL),
        Rule("STREET_ADDRESS", re.compile(_B + rf"{_UK_FLAT}?{_street(_STRONG_END)}"), 0.75,
             _WHY_STREET, context=_ADDRESS_CONTEXT, context_score=0.9, window=40),
        Rule("STREET_ADDRESS", re.compile(
            _B + rf"(?:{_WEAK_STREET}{_UNIT_EVIDENCE}|{_UK_FLAT}{_street(_WEAK_END, False, 2)})"),
            0.8, _WHY_UNIT),
        Rule("STREET_ADDRESS", re.compile(_LINE_WITH_CITY), 0.7, _WHY_LINE, group=1),
        Rule("STREET_ADDRESS", re.compile(_B + rf"{_UK_FLAT}?{_street(_WEAK_END)}"), 0.3,
             "A street number followed by a name and a street-type word",
             context=_ADDRESS_CONTEXT, context_score=0.8, window=40),
        Rule("STREET_ADDRESS", re.compile(
            r"\b(?:P\.?[ \t]?O\.?[ \t]*Box|Post[ \t]+Office[ \t]+Box)[ \t]+\d{1,7}\b"
            rf"(?:{_US_LOCALITY}|{_UK_LOCALITY})?", re.I), 0.9, "A post office box"),
        Rule("STREET_ADDRESS", re.compile(
            r"\b(?:(?:PSC|CMR|Unit)[ \t]+\d{1,5},?[ \t]+Box[ \t]+\d{1,5}|(?:USNS|USNV|USCGC|USS)[ \t]+[A-Z][a-z]+)"
            rf"{_SEP}[AFD]PO[ \t]+A[AEP][ \t]+{_ZIP}\b"), 0.95, "A US military mail address"),
    )
