"""Street addresses (US and UK style), PO boxes and US military mail addresses.

Presidio has no street-address recognizer (a known miss). Street suffixes come from the
USPS street suffix list (Publication 28, appendix C1). "Strong" suffixes (Street,
Avenue, Road...) count on their own; "weak" ones (Park, Point, View...) are ordinary
words too, so they need a locality (city + state + ZIP, or a UK postcode) or an address
word nearby.
"""

from __future__ import annotations

import re

from preflight.core.pii.recognizers.base import Rule, RuleRecognizer, context_regex

STRONG_SUFFIXES = (
    "Street St Str Avenue Ave Av Road Rd Boulevard Blvd Lane Ln Drive Dr Drv Court Ct "
    "Terrace Ter Terr Parkway Pkwy Highway Hwy Crescent Cres Close Mews Alley Aly "
    "Expressway Expy Freeway Fwy Turnpike Tpke Stravenue Stra Place Pl Square Sq Circle "
    "Cir Way Wy Plaza Plz Causeway Cswy Bypass Byp Motorway Throughway Trafficway "
    "Skyway Boulevard Row Gardens Gdns Grove Walk Wynd"
).split()

WEAK_SUFFIXES = (
    "Alley Annex Arcade Bayou Beach Bend Bluff Bluffs Bottom Branch Bridge Brook Brooks "
    "Burg Burgs Camp Canyon Cape Center Centers Circles Cliff Cliffs Club Common Commons "
    "Corner Corners Course Courts Cove Coves Creek Crest Crossing Crossroad Crossroads "
    "Curve Dale Dam Divide Drives Estate Estates Extension Extensions Fall Falls Ferry "
    "Field Fields Flat Flats Ford Fords Forest Forge Forges Fork Forks Fort Garden "
    "Gateway Glen Glens Green Greens Groves Harbor Harbors Haven Heights Hill Hills "
    "Hollow Inlet Island Islands Isle Junction Junctions Key Keys Knoll Knolls Lake "
    "Lakes Land Landing Light Lights Loaf Lock Locks Lodge Loop Mall Manor Manors Meadow "
    "Meadows Mill Mills Mission Mount Mountain Mountains Neck Orchard Oval Overpass Park "
    "Parks Parkways Pass Passage Path Pike Pine Pines Plain Plains Point Points Port "
    "Ports Prairie Radial Ramp Ranch Rapid Rapids Rest Ridge Ridges River Roads Route "
    "Rue Run Shoal Shoals Shore Shores Spring Springs Spur Spurs Squares Station Streets "
    "Stream Summit Trace Track Trail Trails Trak Tunnel Underpass Union Unions Valley "
    "Valleys Via Viaduct View Views Village Villages Ville Vista Walks Wall Ways Well Wells"
).split()

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
_FIRST_NAME_WORD = r"(?:[A-Z][A-Za-z'’.-]*|\d{1,3}(?:st|nd|rd|th))"
_NAME_WORD = r"(?:[A-Z][A-Za-z'’.-]*|\d{1,3}(?:st|nd|rd|th)|(?:de|la|del|van|von|of|the))"
_STRONG = rf"(?:{_alt(STRONG_SUFFIXES)})"
_WEAK = rf"(?:{_alt(WEAK_SUFFIXES)})"
_UNIT = (r"(?:,?[ \t]*(?:Apt|Apartment|Suite|Ste|Unit|Fl|Floor|Room|Rm|Bldg|Building|Flat|#)"
         r"\.?[ \t]*#?[ \t]*[A-Za-z0-9-]{1,6}\b)")
_CITY = r"[A-Z][A-Za-z'’.-]+(?:[ \t]+[A-Z][A-Za-z'’.-]+){0,3}"
_STATE = rf"(?:{_alt(US_STATES)}|{US_STATE_NAMES})"
_ZIP = r"\d{5}(?:-\d{4})?"
_UK_POSTCODE = r"[A-Z]{1,2}\d[A-Z\d]?[ \t]*\d[A-Z]{2}"
_US_LOCALITY = rf"(?:{_SEP}{_CITY},?{_SP}{_STATE}\.?(?:{_SP}|[ \t]*,[ \t]*){_ZIP})"
_UK_LOCALITY = rf"(?:(?:{_SEP}{_CITY}){{0,2}}{_SEP}{_UK_POSTCODE})"


ABBREVIATIONS = ("St Str Ave Av Rd Blvd Ln Dr Drv Ct Ter Terr Pkwy Hwy Cres Aly Expy Fwy Tpke "
                 "Stra Pl Sq Cir Wy Plz Cswy Byp Gdns").split()
_ABBREV = rf"(?:{_alt(ABBREVIATIONS)})"


def _street(suffix: str, number_required: bool = True) -> str:
    number = rf"{_NUMBER}{_SP}" if number_required else rf"(?:{_NUMBER}{_SP})?"
    # only abbreviations take a period ("St." but not the full stop after "Street.")
    end = rf"(?:(?i:{_ABBREV})\b\.?|(?i:{suffix})\b)"
    return (rf"{number}(?:{_DIRECTION}{_SP})?{_FIRST_NAME_WORD}{_SP}(?:{_NAME_WORD}{_SP}){{0,3}}?"
            rf"{end}(?:{_SP}{_DIRECTION}(?![A-Za-z]))?{_UNIT}?")


_B = r"(?<![\w-])"
_UK_FLAT = r"(?:(?:Flat|Studio|Apartment|Unit)[ \t]+[A-Za-z0-9]{1,5}" + _SEP + ")"

_ADDRESS_CONTEXT = context_regex([
    "address", "addr", "lives", "live", "living", "located", "location", "resides",
    "residing", "residence", "home", "ship to", "shipping", "mail to", "deliver", "delivery",
    "visit", "office", "moved", "send to", "headquarters", "hq",
])

_WHY_FULL = "A street number, street name and suffix followed by a city, state/postcode"
_WHY_STREET = "A street number followed by a name and a street suffix (Street, Avenue, Road…)"


class StreetAddressRecognizer(RuleRecognizer):
    """US/UK street addresses with optional unit, city, state and ZIP/postcode."""

    RULES = (
        Rule("STREET_ADDRESS", re.compile(
            _B + rf"(?:{_street(_STRONG)}|{_street(_WEAK)}){_US_LOCALITY}(?!\d)"), 0.95, _WHY_FULL),
        Rule("STREET_ADDRESS", re.compile(
            _B + rf"{_UK_FLAT}?(?:{_street(_STRONG, False)}|{_street(_WEAK, False)})"
            rf"{_UK_LOCALITY}\b"), 0.95, _WHY_FULL),
        Rule("STREET_ADDRESS", re.compile(_B + rf"{_UK_FLAT}?{_street(_STRONG)}"), 0.75,
             _WHY_STREET, context=_ADDRESS_CONTEXT, context_score=0.9, window=40),
        Rule("STREET_ADDRESS", re.compile(_B + rf"{_UK_FLAT}?{_street(_WEAK)}"), 0.3,
             "A street number followed by a name and a street-type word",
             context=_ADDRESS_CONTEXT, context_score=0.8, window=40),
        Rule("STREET_ADDRESS", re.compile(
            r"\b(?:P\.?[ \t]?O\.?[ \t]*Box|Post[ \t]+Office[ \t]+Box)[ \t]+\d{1,7}\b"
            rf"(?:{_US_LOCALITY}|{_UK_LOCALITY})?", re.I), 0.9, "A post office box"),
        Rule("STREET_ADDRESS", re.compile(
            r"\b(?:(?:PSC|CMR|Unit)[ \t]+\d{1,5},?[ \t]+Box[ \t]+\d{1,5}|US[NS]S?[ \t]+[A-Z][a-z]+)"
            rf"{_SEP}[AFD]PO[ \t]+A[AEP][ \t]+{_ZIP}\b"), 0.95, "A US military mail address"),
    )
