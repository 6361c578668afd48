"""Second look at the NER model's spans: stock tickers and companies the small model
calls people, and people it calls firms or places.

A wrong type costs: a policy that keeps organizations and places sends a person's name
typed as one, and one that keeps codes would replace a ticker typed as a person. Each
span from the statistical recognizers is checked against evidence in the text and the
1990 US Census lists of given names and surnames and US birth records (``resources/names/``;
no benchmark generates names from them):

- a stock ticker or exchange code ("<VOLV ST>", "ASTS ST", "IBM.N") → ORGANIZATION;
- a company cue: a legal suffix after it ("Esselte AB"), "shares of X", "X shares",
  "X said in a statement" for a span with no known name in it, or the same text
  tagged ORGANIZATION elsewhere in the document → ORGANIZATION;
- the reverse, in :func:`recheck_organizations`: an ORGANIZATION or LOCATION after a
  personal title, or that is a given name (census; a European one in US birth records;
  a word that begins a person's name elsewhere in the document) and surname-shaped words
  with no company cue ("Hope Daniels said…", "report to Søren Kierkegaard-Hansen") →
  PERSON;
- a shape no name has: capitals holding an English word and no listed name ("BEGIN
  PGP"), lower-case words with no listed name ("keymap vi", "chmod g-w": commands in a
  README), one word shaped like no name ("XviD") → dropped.

Nothing is dropped because a word is missing from a list or written in lower case
elsewhere: where the evidence is unsure, the span stays a person, so it is protected.
Spans that a rule found with its own cue (a title, a salutation, a name field, an e-mail
local part) are left alone.

Size (~430 lines): the name lists, the evidence read from them and the two passes that
apply it are one decision (what makes a span a person); split, each pass would reach into
the other's helpers.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import unicodedata
from pathlib import Path
from typing import Any

from preflight.core import paths
from preflight.core.pii.cleaning import NAME_AFFIXES, DocTerms, dictionary_words_only
from preflight.core.types import Category, Evidence, Span

# Exchange suffixes of Reuters/Bloomberg codes: "VOLV ST", "IBM.N", "7203.T", "BP.L".
_EXCHANGES = (r"(?:N|O|OQ|A|L|T|PA|DE|F|AS|BR|MI|MC|SW|S|ST|CO|HE|OL|TO|V|AX|HK|SS|SZ|KS|"
              r"TW|SI|BO|NS|SA|MX|J|IR|LS|VI|WA|PR|BU|IS|TA|NZ|US|LN|GR|FP|NA|IM|SM|SJ|SS|"
              r"SE|GY|JP|HK|CN|AU|CT|UN|UW)")
_TICKER = re.compile(rf"[A-Z0-9]{{1,6}}(?:[ .]{_EXCHANGES})")
_BRACKETED = re.compile(r"<[A-Z0-9][A-Z0-9. &-]{0,14}>")
_COMPANY_AFTER = re.compile(
    r"[ \t]*,?[ \t]+(?:Inc|Corp|Co|Ltd|LLC|plc|PLC|AG|AB|ASA|SA|SE|NV|BV|GmbH|SpA|Oyj|A/S|KK|"
    r"Group|Holdings|Corporation|Company|Limited|Bank|Airlines|Motors|Industries|"
    r"Technologies|Systems|Partners)\b\.?")
_SHARES_BEFORE = re.compile(
    r"(?i:\b(?:shares|stock|stake|units?|subsidiary|division|acquisition|takeover|"
    r"merger|bid)[ \t]+(?:of|in|for|with)[ \t]+)$")
_SHARES_AFTER = re.compile(r"(?:['’]s)?[ \t]+(?:shares|stock|shareholders|stake)\b|"
                           r"[ \t]+said[ \t]+in[ \t]+a[ \t]+statement")
_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_NAME_SHAPE = re.compile(r"(?:Mc|Mac|De|Di|Da|La|Le|Van|Von|O['’])?[^\W\d_][^\W\d_A-Z]+"
                         r"(?:['’-][^\W\d_][^\W\d_A-Z]*)*")
_WHY_TICKER = "Shaped like a stock ticker or exchange code, so a company, not a person"
_WHY_STREET = "Tagged as a person by the NER model, but it ends in a street type"
_WHY_COMPANY = "Tagged as a person by the NER model, but the text marks it as a company"


#: A given name counts as one sex's when its share among that sex is this many times its
#: share among the other ("john": male; "jan", "jordan": either).
GENDER_RATIO = 10.0


class NameSet(frozenset):
    """Case-folded names; a word matches with or without its accents ("josé", "müller"
    find "jose", "muller": the census lists are written in ASCII)."""

    def __contains__(self, word: object) -> bool:
        if frozenset.__contains__(self, word):
            return True
        return (isinstance(word, str) and not word.isascii()
                and frozenset.__contains__(self, _unaccented(word)))


# letters that Unicode does not decompose into a base letter and an accent
_OWN_LETTERS = str.maketrans({"ø": "o", "æ": "ae", "œ": "oe", "ß": "ss", "ł": "l", "đ": "d",
                              "ð": "d", "þ": "th", "ı": "i"})


def _unaccented(name: str) -> str:
    """``name`` (case-folded) in ASCII letters where it has accents ("søren" → "soren",
    "łukasz" → "lukasz")."""
    return "".join(c for c in unicodedata.normalize("NFKD", name.translate(_OWN_LETTERS))
                   if not unicodedata.combining(c))


def accented_given_name(word: str) -> bool:
    """``word`` carries letters outside ASCII and, written without them, is a given name
    of US birth records ("Søren", "Jörg", "Łukasz"): a European name, which the census's
    short list misses, and few English words or places are written so."""
    return not word.isascii() and word.casefold() in births_given_names()


def _resource_lines(name: str) -> list[str]:
    return [line for line in paths.resource_path("names", name).read_text("utf-8")
            .splitlines() if line and not line.startswith("#")]


@functools.lru_cache(maxsize=1)
def _given_shares() -> dict[str, tuple[float, float]]:
    """Given name → (share among women, share among men), per 100 (1990 US Census)."""
    out = {}
    for line in _resource_lines("given_names.tsv")[1:]:
        name, female, male = line.split("\t")
        out[name] = (float(female), float(male))
    return out


@functools.lru_cache(maxsize=1)
def _surname_ranks() -> dict[str, int]:
    return {name: rank for rank, name in enumerate(_resource_lines("surnames.txt"), 1)}


def surname_rank(word: str) -> int | None:
    """The frequency rank of ``word`` among US surnames (1 = "smith"), None if unlisted."""
    ranks = _surname_ranks()
    low = word.casefold()
    return ranks.get(low) or (ranks.get(_unaccented(low)) if not low.isascii() else None)


@functools.lru_cache(maxsize=1)
def known_names() -> frozenset[str]:
    """Given names and surnames (case-folded): the 1990 US Census lists
    (``resources/names/``), independent of any generator a benchmark draws names from."""
    return NameSet(set(_given_shares()) | set(_surname_ranks()))


@functools.lru_cache(maxsize=1)
def given_names() -> frozenset[str]:
    """Given names only (case-folded)."""
    return NameSet(_given_shares())


@functools.lru_cache(maxsize=1)
def births_given_names() -> frozenset[str]:
    """Given names of US births 1880–2024 (SSA; ``ssa_given_names.txt``): "rohit", "ralf"."""
    return NameSet(_resource_lines("ssa_given_names.txt"))


def given_name_gender(name: str) -> str | None:
    """"female" or "male" when the census finds ``name`` given (almost) only to one sex
    (:data:`GENDER_RATIO`), else None (unknown or given to both)."""
    low = name.casefold()
    shares = _given_shares().get(low) or _given_shares().get(_unaccented(low))
    if shares is None:
        return None
    female, male = shares
    if female > GENDER_RATIO * male:
        return "female"
    if male > GENDER_RATIO * female:
        return "male"
    return None


def recheck_organizations(text: str, spans: list[Span], lexicon: Any = None) -> list[Span]:
    """The other wrong types: a NER ORGANIZATION or LOCATION that carries person evidence
    becomes PERSON — a title right before it ("Mr Hope Daniels"), or a given name (census,
    or a word that begins a person's name elsewhere in the document: "Solly Hemus" beside
    "Solly plans…") then surname-shaped words (:func:`_reads_as_name`) with no company cue
    around it; so
    does a one-word ORGANIZATION or NRP that is a given name (census or birth records) and
    neither a common word nor shaped like a nationality ("Rohit"; "Christian" stays) — or
    one word of a name the document itself vouches for (:func:`vouched_names`: "Jorgen"
    when a mail header's display name is "Jorgen Thomsen")."""
    vouched = vouched_names(text, spans)
    # words that begin a person's name somewhere in this document ("Solly" of "Solly
    # plans to open…", read there as a person): a given name here too
    first_words = {words[0].casefold() for s in spans if s.type == "PERSON"
                   if (words := _WORD.findall(text[s.start:s.end]))}
    out = []
    for span in spans:
        if Evidence.STATISTICAL in span.evidence:
            why = None
            kind = {"ORGANIZATION": "an organization", "LOCATION": "a place",
                    "NRP": "a group"}.get(span.type)
            if (span.type in ("ORGANIZATION", "NRP", "LOCATION")
                    and text[span.start:span.end].casefold() in vouched):
                why = (f"Tagged as {kind} by the NER model, but the document names this "
                       "person elsewhere")
            elif span.type in ("ORGANIZATION", "LOCATION") and _titled(text, span):
                why = f"Tagged as {kind} by the NER model, but a personal title precedes it"
            elif span.type in ("ORGANIZATION", "LOCATION") and _reads_as_name(
                    text, span, lexicon, first_words):
                why = (f"Tagged as {kind} by the NER model, but it is a given name and a "
                       "surname with no company cue")
            elif span.type in ("ORGANIZATION", "NRP") and _lone_given_name(text, span):
                why = (f"Tagged as {kind} by the NER model, but it is a given name with no "
                       "company cue")
            if why is not None:
                span = dataclasses.replace(span, type="PERSON",
                                           category=Category.DIRECT_IDENTIFIER, why=why)
        out.append(span)
    return out


def _company_cue(text: str, span: Span) -> bool:
    return company_cue(text, span.start, span.end)


def company_cue(text: str, start: int, end: int) -> bool:
    """A legal suffix after ``text[start:end]`` ("Esselte AB"), or shares around it
    ("shares of Johnson Matthey", "Volvo's shares", "X said in a statement")."""
    return bool(_COMPANY_AFTER.match(text, end) or _SHARES_AFTER.match(text, end)
                or _SHARES_BEFORE.search(text, max(0, start - 40), start))


def _titled(text: str, span: Span) -> bool:
    """A personal title stands right before the span, which is one to four name-shaped
    words ("Mr Hope Daniels", "Frau Weber")."""
    from preflight.core.pii.name_shapes import NAME_BODY, TITLE_BEFORE

    return (bool(TITLE_BEFORE.search(text, max(0, span.start - 40), span.start))
            and re.fullmatch(NAME_BODY, text[span.start:span.end]) is not None
            and not _company_cue(text, span))


def _reads_as_name(text: str, span: Span, lexicon: Any = None,
                   given: frozenset[str] | set[str] = frozenset()) -> bool:
    """A census given name (or one of ``given``: words that begin a person's name
    elsewhere in the document), then one or two words that read as surnames (listed, or
    on no dictionary: :func:`~preflight.core.pii.name_shapes.name_evidence`)."""
    from preflight.core.pii.name_shapes import name_evidence

    words = [w for w in _WORD.findall(text[span.start:span.end])
             if w.rstrip(".").casefold() not in NAME_AFFIXES]
    if not 2 <= len(words) <= 3 or not all(_NAME_SHAPE.fullmatch(w) for w in words):
        return False
    from preflight.core.pii.recognizers.street_suffixes import STRONG as STREET_TYPES

    first = words[0].casefold()
    if (first not in given_names() and first not in given and not accented_given_name(first)) \
            or words[-1] in STREET_TYPES or \
            not all(name_evidence(w, lexicon, surname=True) for w in words[1:]):
        return False                            # "Charlotte Street" is a street
    return not _company_cue(text, span)


# nationality, religion and party words: "Kenyan", "Chinese", "Spanish", "Baptist"...
_GROUP_SHAPE = re.compile(r"(?i).*(?:an|ese|ish|ic|i|ist|ite|ch|ss|ek|ai|ox|ew)")


def group_shaped(word: str) -> bool:
    """Shaped like a nationality, religion or party word ("Kenyan", "Chinese", "Baptist")."""
    return bool(_GROUP_SHAPE.fullmatch(word))


def _lone_given_name(text: str, span: Span) -> bool:
    value = text[span.start:span.end]
    if not _NAME_SHAPE.fullmatch(value):
        return False
    if span.type == "NRP" and group_shaped(value):
        return False
    low = value.casefold()
    if (low not in given_names() and low not in births_given_names()) or low in common_words():
        return False
    return not (_COMPANY_AFTER.match(text, span.end) or _SHARES_AFTER.match(text, span.end)
                or _SHARES_BEFORE.search(text, max(0, span.start - 40), span.start))


@functools.lru_cache(maxsize=1)
def common_words() -> frozenset[str]:
    """Words people write most often in lower case (``resources/names/common_words.txt``,
    counted in human-written papers): "will", "may" and "hope" are such words too."""
    return frozenset(_resource_lines("common_words.txt"))


#: The vocab lookup table holding English dictionary words (:func:`add_lexicon`).
LEXICON_TABLE = "preflight_lexicon"
_LEXICON_POS = ("noun", "verb", "adj", "adv")


def add_lexicon(nlp: Any, model_dir: Path) -> None:
    """Put the English words of the model's lemmatizer index (WordNet's nouns, verbs,
    adjectives and adverbs, about 83,000; the lemmatizer itself is not loaded) into
    ``nlp.vocab.lookups`` for :func:`dictionary_words_only`. A model without the tables
    leaves the lookups as they are (the check is then skipped)."""
    from spacy.lookups import Lookups

    folder = model_dir / "lemmatizer" / "lookups"
    if LEXICON_TABLE in nlp.vocab.lookups.tables or not folder.is_dir():
        return
    try:
        index = Lookups().from_disk(folder).get_table("lemma_index")
    except (OSError, KeyError, ValueError):
        return
    words = {w for pos in _LEXICON_POS for w in index.get(pos, ())}
    nlp.vocab.lookups.add_table(LEXICON_TABLE, dict.fromkeys(words, True))


def lexicon_of(nlp_artifacts: Any) -> Any | None:
    """The dictionary table of the pipeline behind a Presidio analysis, if it has one."""
    try:
        return pipeline_lexicon(nlp_artifacts.nlp_engine.get_nlp("en"))
    except (AttributeError, KeyError, ValueError):
        return None


def pipeline_lexicon(nlp: Any) -> Any | None:
    """The dictionary table :func:`add_lexicon` put into a spaCy pipeline, if any."""
    lookups = nlp.vocab.lookups
    return lookups.get_table(LEXICON_TABLE) if LEXICON_TABLE in lookups.tables else None


def vouched_names(text: str, spans: list[Span]) -> frozenset[str]:
    """The words (case-folded) of the person names a strong rule found in this document
    (evidence :attr:`~preflight.core.types.Evidence.PERSON_PROOF`: a mail header's
    display name, a name spelling its e-mail address): names as sure as a listed one,
    whatever the lists hold ("Jorgen", "Thomsen")."""
    return frozenset(w.casefold() for s in spans
                     if s.type == "PERSON" and Evidence.PERSON_PROOF in s.evidence
                     for w in _WORD.findall(text[s.start:s.end])
                     if len(w) > 1 and w.rstrip(".").casefold() not in NAME_AFFIXES)


def recheck_persons(text: str, spans: list[Span], terms: DocTerms) -> list[Span]:
    """``spans`` with statistical PERSON spans retyped or dropped on the evidence above."""
    if not any(s.type == "PERSON" for s in spans):
        return spans
    vouched = vouched_names(text, spans)
    org_values = {text[s.start:s.end].casefold() for s in spans if s.type == "ORGANIZATION"}
    out = []
    for span in spans:
        if span.type != "PERSON" or Evidence.STATISTICAL not in span.evidence:
            out.append(span)
            continue
        verdict = _verdict(text, span, terms, org_values, vouched)
        if verdict == "person":
            out.append(span)
        elif verdict == "place":
            out.append(dataclasses.replace(
                span, type="LOCATION", category=Category.QUASI_IDENTIFIER, why=_WHY_STREET))
        elif verdict is not None:
            out.append(dataclasses.replace(
                span, type="ORGANIZATION", category=Category.QUASI_IDENTIFIER,
                why=_WHY_TICKER if verdict == "ticker" else _WHY_COMPANY))
    return out


def _verdict(text: str, span: Span, terms: DocTerms, org_values: set[str],
             vouched: frozenset[str] = frozenset()) -> str | None:
    """"person", "ticker", "company", "place", or None (not a name: drop). Only evidence retypes
    or drops a span — a company's cue, a ticker's shape, a shape no name has — never the
    absence of a word from a list: where unsure, the span stays a person (protected).
    ``vouched``: the words of names a strong rule found (they count as listed names)."""
    value = text[span.start:span.end]
    if _is_ticker(text, span.start, span.end):
        return "ticker"
    words = [w for w in _WORD.findall(value) if w.rstrip(".").casefold() not in NAME_AFFIXES]
    names = known_names()
    known = [w for w in words if w.casefold().removesuffix("'s") in names
             or w.casefold().removesuffix("'s") in vouched]
    if value.islower():
        known = [w for w in known if len(w) > 2]    # "keymap vi": "Vi" is a name too
    if _COMPANY_AFTER.match(text, span.end) or _SHARES_BEFORE.search(
            text, max(0, span.start - 40), span.start):
        return "company"
    if not known and (value.casefold() in org_values or _SHARES_AFTER.match(text, span.end)):
        return "company"
    if _REFERENCE_AFTER.match(text, span.end) and _reference_word(words, terms):
        return None                             # "Law no. 5190", "Articles 8 and 13"
    if known or not words:
        return "person"
    if value.isupper():
        # "BEGIN PGP", "API KEY": capitals with no listed name and an English word
        lexicon = terms.lexicon if terms.lexicon is not None else common_words()
        if any(w.casefold() in lexicon for w in words):
            return None
        return "person"
    if value.islower():
        return None                             # "keymap vi", "chmod g-w": commands
    if len(words) == 1 and not _NAME_SHAPE.fullmatch(words[0]):
        return None                             # "XviD", "iPhone"
    if _dictionary_phrase(words, terms) and any(terms.used_in_lower_case(w) for w in words):
        return None                             # "Legal Adviser", "Leave to Remain"
    from preflight.core.pii.recognizers.street_suffixes import STRONG as STREET_TYPES

    if len(words) > 1 and words[-1] in STREET_TYPES:
        return "place"                          # "Charlotte Street"
    return "person"


# a number or a number label right after a word makes it a reference ("Law no. 5190",
# "Articles 8 and 13", "Rule 59 § 1")
_REFERENCE_AFTER = re.compile(r"[ \t]+(?:(?i:no|nos|nr|number)\.?[ \t]*)?\d")


def _dictionary_phrase(words: list[str], terms: DocTerms) -> bool:
    """Every word is an English dictionary word (or its plural) and none is a listed
    name: with one more piece of evidence (the document writes a word in lower case, a
    number follows) such a span is a phrase, not a name. Never true for a name on the
    census lists ("Will", "Hope", "Law") or on no dictionary ("Kowalski")."""
    lexicon = terms.lexicon
    if lexicon is None:
        return False
    names = known_names()
    return all(w.casefold() not in names and dictionary_words_only(w, lexicon)
               for w in words)


def _reference_word(words: list[str], terms: DocTerms) -> bool:
    """One dictionary word that is no given name ("Law", "Rule", "Articles")."""
    return (len(words) == 1 and terms.lexicon is not None
            and dictionary_words_only(words[0], terms.lexicon)
            and words[0].casefold() not in given_names())


def _is_ticker(text: str, start: int, end: int) -> bool:
    lo = text.rfind("<", max(0, start - 8), start + 1)
    if lo >= 0:
        m = _BRACKETED.match(text, lo)
        if m and m.end() >= end:
            return True
    value = text[start:end]
    if _TICKER.fullmatch(value):
        return True
    # the model's span may stop before the exchange code ("ASTS" of "ASTS ST")
    m = _TICKER.match(text, start)
    return bool(value.isupper() and m and m.end() >= end and
                (m.end() == len(text) or not text[m.end()].isalnum()))
