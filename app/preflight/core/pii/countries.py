"""Whole countries and their adjectives: names of nobody below a country's level.

The names are those phonenumbers' geocoder gives ISO 3166's regions (a source
independent of any generator the evaluations use); an adjective is recognized by its
spelling against them (:func:`country_adjective`).
"""

from __future__ import annotations

import functools
import os
import re

from preflight.core.pii.person_evidence import given_names

# a compass point or a part of a country before its name ("South Korea", "Northern Cyprus")
_COMPASS = re.compile(r"(?:(?:North|South|East|West|Central)(?:ern)?|Mainland)\s+")


def whole_country(value: str) -> bool:
    """``value`` is a country's name, maybe after a compass point ("South Korea")."""
    value = value.strip()
    return value in country_names() or _COMPASS.sub("", value, count=1) in country_names()


# how an English adjective of nationality ends ("Turkish", "Belgian", "Sierra Leonean",
# "Japanese", "Somali", "Slovak"); "Liberal", "Roma", "Muslim" end otherwise
_ADJECTIVE_ENDS = ("ish", "ian", "ean", "an", "ese", "i", "ic", "ine", "ite", "ot", "k")
#: How far an adjective and its country's name may part after their common beginning
#: ("Norw|egian" / "Norw|ay", "Portug|uese" / "Portug|al").
_ADJECTIVE_REST, _COUNTRY_REST = 5, 4


def country_adjective(value: str) -> bool:
    """``value`` is the adjective of a whole country ("Turkish", "Polish", "Sierra
    Leonean"): it begins as a country's name does (three letters at least) and ends as an
    English adjective of nationality, both with a short rest. A religious, political or
    ethnic group ("Christian", "Liberal", "Kurdish", "Roma") is none, nor is a given name
    of the census lists ("Norman", "Morgan": a person, so protected); an adjective the
    spelling does not tie to its country ("Irish", "French") is not recognized and stays
    detected."""
    low = " ".join(value.split()).casefold()
    if not low.endswith(_ADJECTIVE_ENDS) or not all(w.isalpha() for w in low.split()):
        return False
    if all(w in given_names() for w in low.split()):
        return False
    for name in _folded_country_names():
        common = len(os.path.commonprefix([low, name]))
        rest, country_rest = len(low) - common, len(name) - common
        if not (0 < rest <= _ADJECTIVE_REST and country_rest <= _COUNTRY_REST):
            continue
        # three letters in common leave a short rest ("Spa|nish"; not "Ang|lican" for
        # Angola); an adjective in "-i" holds its country's whole name ("Pakistan|i",
        # not "Baha|i" for the Bahamas)
        if (common >= 4 or rest <= 4) and common >= 3 and (
                not low.endswith("i") or country_rest == 0):
            return True
    return False


@functools.lru_cache(maxsize=1)
def _folded_country_names() -> tuple[str, ...]:
    names = {n.casefold() for n in country_names()}
    return tuple(sorted(names | {_COMPASS.sub("", n, count=1).casefold()
                                 for n in country_names()}))


@functools.lru_cache(maxsize=1)
def country_names() -> frozenset[str]:
    """The English names of the world's countries and territories, as phonenumbers' geocoder
    writes them (ISO 3166 regions; a source independent of any generator the evaluations
    use), without bracketed remarks."""
    import phonenumbers
    from phonenumbers import geocoder

    names = set()
    for region in phonenumbers.SUPPORTED_REGIONS:
        example = phonenumbers.example_number(region)
        name = geocoder.country_name_for_number(example, "en") if example else ""
        if name and "(" not in name:
            names.add(name)
    return frozenset(names)
