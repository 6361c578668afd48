"""Organization and place spans of the NER model that name nobody in particular.

The small model tags every capitalized phrase of formal prose as an organization or a
place: a determiner it swallowed ("the Court of Appeal"), a generic reference written
with a capital ("the Board", "the Company"), a heading in capitals ("THE FACTS"), a Latin
phrase ("inter alia"), a public body ("the Supreme Court", "the Ministry of Finance"), a
whole country ("the Republic of Ireland"), the title of a law ("the Data Protection Act
2018"). None of them narrows down a person or a company — a country or a state's court
holds millions of people —, and masking them costs the reader the sense of the text. What
"Everything detected" protects is what points to someone below that level: people,
companies, towns, streets, buildings, local offices. So:

- a leading "the" is cut from every statistical organization, place, group and date
  span (a determiner is no part of a name), and a name is cut before a bracket it opens
  and does not close ("the Board (Rule 4");
- a **generic reference** is dropped: every word common — written in lower case
  elsewhere in the same document, a numeral or an ordinal ("the Board" in minutes that
  speak of "the board"; "Fourth Section") —, or one dictionary word right after "the"
  ("the Company", "the Registrar": a defined term of the document);
- a **public body** is dropped: a kind of public institution (court, ministry,
  government, commission, council…) or of state (republic, kingdom…) qualified only by
  dictionary words and numerals ("the Supreme Court", "the Court of Appeal", "the German
  Government", "the Ministry of Foreign Affairs", "the United Kingdom"). The dictionary
  (WordNet's, from the NER model's lemmatizer tables) knows countries, regions and large
  cities, not small towns or surnames: "the Bexhill Town Council" stays;
- a **whole country** is dropped ("Poland", "South Korea"; the names phonenumbers'
  geocoder gives ISO 3166's regions), and so is a country's adjective ("Polish", "a
  Sierra Leonean national": :func:`country_adjective`). HIPAA's Safe Harbor method keeps
  state-level geography for the same reason; towns and regions stay detected, and so do
  religious, political and ethnic groups ("Anglican", "Kurdish");
- the **title of a law**, a treaty or a rule book is dropped: its head word is Act,
  Regulation, Directive, Convention, Code, Rules… followed by nothing but a year, a
  number or a bracketed abbreviation ("Regulation (EU) 2016/679"); so is the year the
  model tags in one ("the Police Act 1997", "the 1983 Act").

Unsure errs toward protecting: a word the dictionary does not know keeps the span. Only
the NER model's spans are touched: a rule that found a company by its suffix, a
deny-listed value, a labelled identifier keep their own evidence.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import unicodedata
from collections.abc import Iterable

from preflight.core.pii.cleaning import DocTerms
from preflight.core.pii.countries import country_adjective, whole_country
from preflight.core.types import Evidence, Span

#: Span types the NER model gives to capitalized phrases of formal prose.
NAMED_TYPES = frozenset({"ORGANIZATION", "LOCATION"})
#: Types whose spans lose a leading "the" (dates too: "the same day" → "same day").
TRIMMED_TYPES = NAMED_TYPES | {"NRP", "DATE_TIME"}

_LEADING_THE = re.compile(r"(?:the|The|THE)\s+(?=\S)")
_THE_BEFORE = re.compile(r"(?:^|\s)(?:the|The|THE)\s+$")
_WORD = re.compile(r"[^\W_][\w'’-]*")
# words that join the parts of a name and carry nothing of it
_JOINERS = frozenset({"of", "and", "for", "the", "in", "on", "at", "to", "&"})
_NUMERAL = re.compile(
    r"\d+(?i:st|nd|rd|th)?|(?=[IVXLCDM])M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})"
    r"(?:IX|IV|V?I{0,3})|(?i:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|"
    r"tenth|eleventh|twelfth)")
#: Kinds of public institution and their parts: the head of a public body's name.
INSTITUTIONS = frozenset({
    "court", "courts", "tribunal", "chamber", "section", "division", "government",
    "ministry", "department", "office", "bureau", "agency", "authority", "commission",
    "committee", "council", "board", "parliament", "assembly", "senate", "congress",
    "cabinet", "administration", "directorate", "inspectorate", "registry", "ombudsman",
    "prosecutor", "prosecution", "judiciary", "legislature",
    # kinds of state
    "state", "states", "republic", "kingdom", "federation", "commonwealth", "union",
    "emirates", "principality", "confederation",
})
# the head word of the title of a law, a treaty or a rule book
_LAW_HEADS = frozenset({
    "act", "acts", "regulation", "regulations", "directive", "convention", "conventions",
    "treaty", "code", "rules", "statute", "constitution", "protocol", "charter",
    "ordinance",
})
# after the head: a year, a number or a bracketed abbreviation only
_LAW_TAIL = re.compile(r"(?:\s+(?:\(\w{1,10}\)|(?i:no|nr)\.?|[\d/.-]+))+\s*$")


def refine_named_spans(text: str, spans: Iterable[Span], terms: DocTerms) -> list[Span]:
    """``spans`` with determiners and open brackets cut from the NER model's named spans,
    and its generic references, public bodies and titles of laws dropped (see the module
    docstring)."""
    spans = _facilities_over_guessed_persons(text, list(spans))
    persons = [(s.start, s.end) for s in spans if s.type == "PERSON"]
    # what a policy may treat otherwise than a firm: never swallowed into one
    others = [(s.start, s.end) for s in spans if s.type not in NAMED_TYPES]
    out = []
    for span in spans:
        if Evidence.KIND_WORD in span.evidence and any(
                a < span.end and span.start < b for a, b in persons):
            continue      # "… Bartosz Wiśniewski police officers": a person, no facility
        if Evidence.STATISTICAL in span.evidence and (
                (span.type == "PERSON" and country_adjective(text[span.start:span.end]))
                or (span.type == "DATE_TIME" and _year_of_law(text, span))):
            continue      # "a Sierra Leonean national"; "the Police Act 1997"
        if Evidence.GUESS not in span.evidence or span.type not in TRIMMED_TYPES:
            out.append(span)
            continue
        span = _without_determiner(text, span)
        if span.type == "NRP" and country_adjective(text[span.start:span.end]):
            continue
        if span.type in NAMED_TYPES:
            span = _whole_name(text, _before_open_bracket(text, span))
            if names_nobody(text, span.start, span.end, terms) or (
                    Evidence.KIND_WORD in span.evidence
                    and _common_lead(text, span, terms)):
                continue
            span = _with_alias(text, span, others)
        out.append(span)
    return out


def _facilities_over_guessed_persons(text: str, spans: list[Span]) -> list[Span]:
    """``spans`` without the model's person guesses inside a facility written as one: after
    "the" ("the Hilvan prison", "The Kahta court") or with its kind capitalized ("HM
    Prison Brixton"). A person a rule found keeps its span and the facility goes."""
    facilities = [s for s in spans if Evidence.KIND_WORD in s.evidence
                  and (_THE_BEFORE.search(text, max(0, s.start - 5), s.start)
                       or any(w[0].isupper() and w.casefold() in _facility_heads()
                              for w in _WORD.findall(text, s.start, s.end)))]
    if not facilities:
        return spans
    return [s for s in spans if not (
        s.type == "PERSON" and Evidence.STATISTICAL in s.evidence
        and any(f.start <= s.start and s.end <= f.end for f in facilities))]


def names_nobody(text: str, start: int, end: int, terms: DocTerms) -> bool:
    """``text[start:end]`` is a generic reference, a whole country, a public body or the
    title of a law."""
    value = text[start:end]
    return (generic_reference(text, start, end, terms) or whole_country(value)
            or public_body(value, terms) or law_title(value))


# "of" and the capitalized words of an institution's name the model left out
# ("Kahta Civil Court" + " of First Instance")
_OF_NAME = re.compile(r"[ \t]+of[ \t]+(?:the[ \t]+)?[A-Z][\w'’-]*(?:[ \t]+[A-Z][\w'’-]*){0,3}")
# the kind of area written before a place's name ("Borough of" + "Southwark")
_AREA_BEFORE = re.compile(r"(?:Borough|City|County|District|Province|Municipality|Region|"
                          r"Canton|Town|Village|Parish|Commune|Prefecture)[ \t]+of[ \t]+$")
# a company's legal form written as a dotted abbreviation after its name ("S.p.A.",
# "A.Ş.", "s.r.o.", "N.V."), whatever the country; one initial ("J.") is a person's
_LEGAL_FORM = re.compile(r"[ \t]+(?:(?:[^\W\d_]{1,2}\.){2,3}[^\W\d_]{0,2}|"
                         r"[^\W\d_]{1,2}\.[^\W\d_]{1,2}\.?)(?![\w.])")
# an organization's acronym or its name in another language in brackets right after it
# ("Royal Air Force (RAF)", "Gdynia District Court (Sąd Rejonowy)"): capitalized, no
# number (not "(Rule 4)"), no lower-case remark ("(hereinafter …)", "(file no. …)")
_ALIAS = re.compile(r"[ \t]*\((?:the[ \t]+)?[“\"']?(?P<first>[^\W\d_])[^()\n\d§]{0,150}\)")
# the rest of a hyphenated place name ("Richmond" + "-upon-Thames")
_HYPHENATED = re.compile(r"(?:-[^\W\d_][\w'’]*)+")


@functools.lru_cache(maxsize=1)
def _facility_heads() -> frozenset[str]:
    """The kinds of facility the facility rule names, one word each (its module imports
    Presidio, which ``preflight.core.pii`` must not at import)."""
    from preflight.core.pii.recognizers.orgs import FACILITY_NOUNS, HEAD_FIRST

    return frozenset([n for n in FACILITY_NOUNS if " " not in n]
                     + [h.casefold() for h in HEAD_FIRST])

_INSTITUTION_END = re.compile(
    r"(?i)(?:court|courts|tribunal|chamber|ministry|department|office|agency|authority|"
    r"commission|committee|council|board|directorate|prison|hospital|school|college|"
    r"university|academy|museum|institute|police|station)$")


def _whole_name(text: str, span: Span) -> Span:
    """A name the model cut short widened to the words that belong to it: "of" and the
    capitalized words after an institution ("Court" + "of First Instance"), a firm's
    legal form ("Fratelli Rossi" + " S.p.A."), the kind of
    area before a place ("Borough of" + "Southwark"), the rest of a hyphenated place
    ("Richmond" + "-upon-Thames")."""
    start, end = span.start, span.end
    if span.type == "ORGANIZATION" and _INSTITUTION_END.search(text, start, end):
        m = _OF_NAME.match(text, end)
        if m:
            end = m.end()
    elif span.type == "ORGANIZATION":
        m = _LEGAL_FORM.match(text, end)
        if m:
            end = m.end()
    elif span.type == "LOCATION":
        m = _HYPHENATED.match(text, end)
        if m:
            end = m.end()
        m = _AREA_BEFORE.search(text, max(0, start - 20), start)
        if m:
            start = m.start()
    if (start, end) == (span.start, span.end):
        return span
    return dataclasses.replace(span, start=start, end=end)


def _with_alias(text: str, span: Span, others: list[tuple[int, int]]) -> Span:
    """An organization widened over its bracketed acronym or translation: both name it.
    Not over another kind of value ("Acme Ltd (Mr Jan Nowak)", an e-mail address): a
    policy that keeps firms must not carry it along."""
    m = _ALIAS.match(text, span.end) if span.type == "ORGANIZATION" else None
    if m is None or not m.group("first").isupper() or any(
            a < m.end() and m.start() < b for a, b in others):
        return span
    return dataclasses.replace(span, end=m.end())


def _common_lead(text: str, span: Span, terms: DocTerms) -> bool:
    """A facility written in lower case ("… prison") is a named place only after "the"
    ("the Hilvan prison", "the Kahta court") and when its name does not start with a
    dictionary word ("Yesterday hospital staff…"); without the article the capitals
    may well be a person's name ("asked Jan Nowak police officers")."""
    words = _WORD.findall(text, span.start, span.end)
    if not words[-1].islower():
        return False
    if _THE_BEFORE.search(text, max(0, span.start - 5), span.start) is None:
        return True
    return terms.lexicon is not None and any(f in terms.lexicon for f in _forms(words[0]))


def _without_determiner(text: str, span: Span) -> Span:
    m = _LEADING_THE.match(text, span.start, span.end)
    if m is None or m.end() >= span.end:
        return span
    return dataclasses.replace(span, start=m.end())


def _before_open_bracket(text: str, span: Span) -> Span:
    """A span cut before a bracket it opens but does not close: the model runs a name
    into the reference after it ("the Board (Rule 4" → "Board")."""
    cut = text.find("(", span.start, span.end)
    if cut <= span.start or text.find(")", cut, span.end) >= 0:
        return span
    end = cut
    while end > span.start and not text[end - 1].isalnum():
        end -= 1
    return dataclasses.replace(span, end=end) if end > span.start else span


def _content_words(value: str) -> list[str]:
    return [w for w in _WORD.findall(value) if w.casefold() not in _JOINERS]


def generic_reference(text: str, start: int, end: int, terms: DocTerms) -> bool:
    """Every word of ``text[start:end]`` is a numeral or a word the document also writes
    in lower case; or the span has no capital at all ("inter alia"); or it is one
    dictionary word right after "the" (a defined term: "the Company")."""
    words = _content_words(text[start:end])
    if not words:
        return True
    if not any(w[0].isupper() for w in words):
        return True
    if all(_NUMERAL.fullmatch(w) or _common_word(w, terms) for w in words):
        return True
    return (len(words) == 1 and terms.lexicon is not None
            and _THE_BEFORE.search(text, max(0, start - 5), start) is not None
            and any(f in terms.lexicon for f in _forms(words[0])))


def _forms(word: str) -> set[str]:
    """The dictionary forms ``word`` may stand for: lower case, without accents (the
    dictionary writes "izmir" for "İzmir"), without a possessive or a plural."""
    low = "".join(c for c in unicodedata.normalize("NFKD", word.casefold())
                  if not unicodedata.combining(c)).rstrip("'’")
    low = low.removesuffix("'s").removesuffix("’s")
    return {f for f in (low, low.removesuffix("s"), low.removesuffix("es")) if f}


def _common_word(word: str, terms: DocTerms) -> bool:
    return any(f.isascii() and terms.used_in_lower_case(f) for f in _forms(word))


def public_body(value: str, terms: DocTerms) -> bool:
    """A kind of public institution or of state qualified only by dictionary words and
    numerals ("Supreme Court", "Court of Appeal", "Turkish Government", "Ministry of
    Foreign Affairs", "United Kingdom"): a body of a state, a region or a city well known
    enough to be in the dictionary. A word the dictionary does not know (a small town,
    a surname) makes it specific."""
    words = [p for w in _content_words(value) for p in w.split("-") if p]
    if not any(_forms(w) & INSTITUTIONS for w in words):
        return False      # (a possessive or a plural too: "Commission’s", "Chambers")
    return all(_forms(w) & INSTITUTIONS or _NUMERAL.fullmatch(w)
               or _dictionary_word(w, terms) for w in words)


# an abstract noun by its English derivation ("Cassation", "Expropriation"): no town or
# surname is formed so, whether or not the dictionary lists the word
_ABSTRACT_NOUN = re.compile(r"[a-z]{3,}(?:tion|sion)s?")


def _dictionary_word(word: str, terms: DocTerms) -> bool:
    if _common_word(word, terms):
        return True
    forms = _forms(word)
    if any(_ABSTRACT_NOUN.fullmatch(f) for f in forms):
        return True
    return terms.lexicon is not None and any(f in terms.lexicon for f in forms)


_YEAR = re.compile(r"\d{4}")
_HEAD_BEFORE = re.compile(r"(?<![\w-])(?P<head>[A-Z][a-z]+)[ \t]+$")
_HEAD_AFTER = re.compile(r"[ \t]+(?P<head>[A-Z][a-z]+)(?![\w-])")


def _year_of_law(text: str, span: Span) -> bool:
    """The span is the year in the title of a law ("the Data Protection Act 2018", "the
    1983 Act"): it dates the law, not an event of anyone's life."""
    if _YEAR.fullmatch(text, span.start, span.end) is None:
        return False
    heads = (_HEAD_BEFORE.search(text, max(0, span.start - 20), span.start),
             _HEAD_AFTER.match(text, span.end))
    return any(m is not None and m.group("head").casefold() in _LAW_HEADS for m in heads)


def law_title(value: str) -> bool:
    """``value`` names a law, a treaty or a rule book: its first word is a law head
    alone or followed by "of"/"on"/"for" ("Rules of Court"), or its last word before a
    year or number is one ("the Data Protection Act 2018")."""
    words = _WORD.findall(value)
    if not words:
        return False
    if words[0].casefold() in _LAW_HEADS and (
            len(words) == 1 or words[1].casefold() in {"of", "on", "for"}):
        return True
    tail = _LAW_TAIL.search(value)
    last = _WORD.findall(value[:tail.start()] if tail else value)
    return bool(last) and last[-1].casefold() in _LAW_HEADS and (len(last) > 1 or bool(tail))
