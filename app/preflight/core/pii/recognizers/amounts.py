"""Amounts of money as people write them: a symbol ("$120,000", "IR£8,800"), an ISO 4217
code before or after the number ("SEK 19,000", "1,250.00 EUR"), or the currency's name
("28,000 US dollars", "50,000,000 Turkish liras (TRL)", "425,000 pounds sterling").

The codes are ISO 4217's (the list Faker ships, a dependency the app already has).
Most codes also spell words or acronyms ("ALL", "TOP", "PHP 8.1"), so a code counts
next to a number shaped like money — grouped in thousands, two decimals, or three digits
or more — and only the major trading currencies (USD, EUR, GBP…) next to any number
("USD 50"). A three-letter code outside the list counts only before a number grouped in
thousands ("TRL 1,500,000,000": a withdrawn currency the text defined), a shape no
version, standard or product number takes.
"""

from __future__ import annotations

import functools
import re

from preflight.core.pii.propagate import trie_regex

#: Currency nouns as English prose writes them, singular then the plural forms.
CURRENCY_NOUNS = (
    "dollar", "euro", "pound", "lira", "lire", "krona", "kronor", "krone", "kroner",
    "króna", "kronur", "franc", "yen", "yuan", "renminbi", "rupee", "ruble", "rouble",
    "zloty", "zlotys", "zlotych", "forint", "koruna", "koruny", "leu", "lei", "lev", "leva",
    "kuna", "kune", "dinar", "dirham", "riyal", "rial", "shekel", "shekalim", "baht",
    "ringgit", "rupiah", "peso", "naira", "shilling", "hryvnia", "hryvni", "manat",
    "tenge", "denar", "denari", "drachma", "drachmae", "drachmas", "mark", "guilder",
    "escudo", "peseta", "punt", "cedi", "kwacha", "birr", "taka", "dong", "won", "buck",
)
# currency nouns that are also everyday English words: only after a capitalized
# qualifier ("South Korean won", "German marks"), never alone after a number
_AMBIGUOUS = {"mark", "won", "dong", "punt"}
#: The major trading currencies: their code marks any number as money.
MAJOR_CODES = ("USD", "EUR", "GBP", "JPY", "CHF", "CNY", "CAD", "AUD")

NUMBER = (r"\d{1,3}(?:[,  ]\d{3})+(?:[.]\d+)?"      # 1,250.00
          r"|\d{1,3}(?:[.  ]\d{3})+(?:,\d+)?"       # 1.250,00 (European)
          r"|\d+(?:[.,]\d+)?")
_GROUPED = r"\d{1,3}(?:[,.  ]\d{3})+(?:[.,]\d+)?"
# a number shaped like money: grouped, two decimals, or at least three digits
_MONEY_NUMBER = rf"(?:{_GROUPED}|\d+[.,]\d\d|\d+[.,]\d{{4}}|\d{{3,}})(?![\d,.]*\d)"
SCALE = r"(?:[ \t]?(?:k|K|m|M|bn|mn|million|billion|thousand)\b)?"
_SYMBOL = r"(?:[A-Z]{1,3})?[$€£¥₹₺₽₩₪]"
_QUALIFIER = r"(?:[A-Z][\w.]*[ \t]+){1,2}"


@functools.lru_cache(maxsize=1)
def iso_codes() -> frozenset[str]:
    """ISO 4217 currency codes (Faker's currency provider)."""
    try:
        from faker.providers.currency import Provider
    except ImportError:
        return frozenset({"USD", "EUR", "GBP", "CHF", "JPY", "CAD", "AUD", "INR", "CNY"})
    return frozenset(code for code, _ in Provider.currencies)


def _alternation(words) -> str:
    """Any of ``words`` as written, longest first, as a trie: one test per letter read
    at each position instead of one per word (there are some 170 codes)."""
    return trie_regex(words, fold=False, literal=True) or "(?!)"


@functools.lru_cache(maxsize=1)
def amount_pattern() -> re.Pattern[str]:
    """One regex for every written form of an amount (see the module docstring)."""
    codes = _alternation(iso_codes())
    major = _alternation(MAJOR_CODES)
    plain = [n for n in CURRENCY_NOUNS if n not in _AMBIGUOUS]
    noun = rf"(?:{_alternation(plain)})(?:e?s)?"
    any_noun = rf"(?:{_alternation(CURRENCY_NOUNS)})(?:e?s)?"
    named = (rf"(?:{_QUALIFIER}(?i:{any_noun})|(?i:{noun}))(?:[ \t]+sterling)?"
             rf"(?:[ \t]*\([A-Z]{{3}}\)?)?")
    forms = [
        rf"{_SYMBOL}[ \t]?(?:{NUMBER}){SCALE}",                       # $120,000  IR£8,800
        rf"\b(?:{major})[ \t]?(?:{NUMBER}){SCALE}",                    # USD 50
        rf"\b(?:{codes})[ \t]?{_MONEY_NUMBER}{SCALE}",                  # SEK 1,800
        rf"\b[A-Z]{{3}}[ \t]?(?:{_GROUPED}){SCALE}(?![\d,.]*\d)",      # TRL 1,500,000,000
        rf"(?<![\w.,])(?:{NUMBER}){SCALE}[ \t]?(?:{major})\b",          # 50 EUR
        rf"(?<![\w.,]){_MONEY_NUMBER}{SCALE}[ \t]?(?:{codes})\b",       # 1,800 SEK
        rf"(?<![\w.,])(?:{NUMBER}){SCALE}[ \t]+{named}(?!\w)",          # 200 euros (EUR)
    ]
    # every form starts with a capital, a currency symbol or a digit: one test rules out
    # the other positions before the seven forms are tried there
    return re.compile(r"(?=[A-Z$€£¥₹₺₽₩₪\d])(?:" + "|".join(f"(?:{f})" for f in forms) + ")")
