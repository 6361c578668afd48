"""Second look at the NER model's PERSON spans: stock tickers, companies and common words
the small model calls people.

A PERSON span is the costly wrong type: a policy that keeps organizations, places and
codes would replace them. Each span from the statistical recognizers is checked against
evidence in the text and a list of given names and surnames (Faker's person providers
for 30 locales, shipped with a dependency the app already has):

- a stock ticker or exchange code ("<VOLV ST>", "ASTS ST", "IBM.N") → ORGANIZATION;
- a company cue: a legal suffix after it ("Esselte AB"), "shares of X", "X shares",
  "X said in a statement" for a span with no known name in it, or the same text
  tagged ORGANIZATION elsewhere in the document → ORGANIZATION;
- the reverse, in :func:`recheck_organizations`: an ORGANIZATION that is a listed given
  name and listed surname(s) with no company cue ("Briana Hall said…") → PERSON;
- ALL-CAPS words with no known name ("BEGIN PGP"), or lower-case ones ("keymap vi",
  "chmod g-w": commands in a README); one unlisted word that is shaped like
  no name ("XviD") or that the document never writes after a given name or a title
  ("Java", "Kommersant"; "Skorich" stays when "Nick Skorich" is there); several words
  with no known name that hold a common word or end in a plural ("Red Hat", "Sigma
  Designs", "Philadelphia Eagles") → dropped.

Spans that a rule found with its own cue (a title, a salutation, a name field, an e-mail
local part) are left alone, and a span with a known given name or surname — or with a
word of a name the document's own header or addresses vouch for, or written as an
address's display name ("Bastien Roucariès <rouca@…>") — is never dropped, so recall on
names is kept.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import re
import unicodedata
from pathlib import Path
from typing import Any

from preflight.core.pii.cleaning import NAME_AFFIXES, DocTerms, dictionary_words_only
from preflight.core.pii.entities import PERSON_EVIDENCE_RECOGNIZERS, STATISTICAL_RECOGNIZERS
from preflight.core.types import Category, Span

_LOCALES = ("en_US", "en_GB", "en_IE", "en_IN", "de_DE", "fr_FR", "es_ES", "it_IT", "pt_BR",
            "nl_NL", "pl_PL", "sv_SE", "da_DK", "no_NO", "fi_FI", "cs_CZ", "hu_HU", "ro_RO",
            "tr_TR", "el_GR", "ru_RU", "uk_UA", "he_IL", "vi_VN", "id_ID", "ko_KR", "ja_JP",
            "zh_CN", "ar_AA", "ga_IE")

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
_TITLE_BEFORE = re.compile(r"\b(?:Mr|Mrs|Ms|Dr|Prof|Sen|Rep|Gov|Gen|Sir)\.?[ \t]+$")
# right after a name: its e-mail address in angle brackets (the display-name form)
_DISPLAY_AFTER = re.compile(r"[\"']?[ \t]*<[^\s<>@]+@[^\s<>]+>")
_WHY_TICKER = "Shaped like a stock ticker or exchange code, so a company, not a person"
_WHY_COMPANY = "Tagged as a person by the NER model, but the text marks it as a company"


_GIVEN = ("first_names", "first_names_male", "first_names_female")


@functools.lru_cache(maxsize=8)
def _name_list(attrs: tuple[str, ...], unaccented: bool = True) -> frozenset[str]:
    names: set[str] = set()
    for loc in _LOCALES:
        try:
            provider = importlib.import_module(f"faker.providers.person.{loc}").Provider
        except (ImportError, AttributeError):
            continue
        for attr in attrs:
            values = getattr(provider, attr, None) or ()
            names.update(v.casefold() for v in values if isinstance(v, str))
    # and as written without accents ("Sebastien", "Jose"), as people do in addresses,
    # changelogs and ASCII-only systems
    if unaccented:
        names.update([_unaccented(n) for n in names])
    return frozenset(names)


def _unaccented(name: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", name)
                   if not unicodedata.combining(c))


def known_names() -> frozenset[str]:
    """Given names and surnames (case-folded) from Faker's person providers."""
    return _name_list((*_GIVEN, "last_names"))


def given_names() -> frozenset[str]:
    """Given names only (case-folded)."""
    return _name_list(_GIVEN)


def given_name_gender(name: str) -> str | None:
    """"female" or "male" when Faker's providers list ``name`` as a given name of one
    gender only (in any of their locales), else None (unknown or used for both)."""
    low = name.casefold()
    female = low in _name_list(("first_names_female",), unaccented=False)
    male = low in _name_list(("first_names_male",), unaccented=False)
    if female != male:
        return "female" if female else "male"
    return None


def recheck_organizations(text: str, spans: list[Span]) -> list[Span]:
    """The other wrong types: a NER ORGANIZATION that is a person's name — a listed given
    name, then one or two listed names (and maybe a qualification: "Amanda Brown DDS"),
    with no company cue around it — becomes PERSON; so does a one-word ORGANIZATION or
    NRP that is a listed given name and neither a common word nor shaped like a
    nationality ("Anjali", "Priya"; "Christian" stays a group) — or one word of a name the
    document itself vouches for (:func:`vouched_names`: "Jorgen" when a mail header's
    display name is "Jorgen Thomsen")."""
    vouched = vouched_names(text, spans)
    out = []
    for span in spans:
        if span.recognizer in STATISTICAL_RECOGNIZERS:
            why = None
            if (span.type in ("ORGANIZATION", "NRP")
                    and text[span.start:span.end].casefold() in vouched):
                why = ("Tagged as an organization by the NER model, but the document names "
                       "this person in an e-mail header or address")
            elif span.type == "ORGANIZATION" and _reads_as_name(text, span):
                why = ("Tagged as an organization by the NER model, but it is a given name "
                       "and a surname with no company cue")
            elif span.type in ("ORGANIZATION", "NRP") and _lone_given_name(text, span):
                why = (f"Tagged as {'an organization' if span.type == 'ORGANIZATION' else 'a group'}"
                       " by the NER model, but it is a given name with no company cue")
            if why is not None:
                span = dataclasses.replace(span, type="PERSON",
                                           category=Category.DIRECT_IDENTIFIER, why=why)
        out.append(span)
    return out


def _reads_as_name(text: str, span: Span) -> bool:
    words = [w for w in _WORD.findall(text[span.start:span.end])
             if w.rstrip(".").casefold() not in NAME_AFFIXES]
    if not 2 <= len(words) <= 3 or not all(_NAME_SHAPE.fullmatch(w) for w in words):
        return False
    if words[0].casefold() not in given_names() or \
            not all(w.casefold() in known_names() for w in words[1:]):
        return False
    return not (_COMPANY_AFTER.match(text, span.end) or _SHARES_AFTER.match(text, span.end)
                or _SHARES_BEFORE.search(text, max(0, span.start - 40), span.start))


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
    if low not in given_names() or low in common_words():
        return False
    return not (_COMPANY_AFTER.match(text, span.end) or _SHARES_AFTER.match(text, span.end)
                or _SHARES_BEFORE.search(text, max(0, span.start - 40), span.start))


@functools.lru_cache(maxsize=1)
def common_words() -> frozenset[str]:
    try:
        from faker.providers.lorem.en_US import Provider
    except ImportError:
        return frozenset()
    return frozenset(w.casefold() for w in Provider.word_list)


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
    (:data:`~preflight.core.pii.entities.PERSON_EVIDENCE_RECOGNIZERS`: a mail header's
    display name, a name spelling its e-mail address): names as sure as a listed one,
    whatever the lists hold ("Jorgen", "Thomsen")."""
    return frozenset(w.casefold() for s in spans
                     if s.type == "PERSON" and s.recognizer in PERSON_EVIDENCE_RECOGNIZERS
                     for w in _WORD.findall(text[s.start:s.end])
                     if len(w) > 1 and w.rstrip(".").casefold() not in NAME_AFFIXES)


def recheck_persons(text: str, spans: list[Span], terms: DocTerms) -> list[Span]:
    """``spans`` with statistical PERSON spans retyped or dropped on the evidence above."""
    if not any(s.type == "PERSON" for s in spans):
        return spans
    vouched = vouched_names(text, spans)
    org_values = {text[s.start:s.end].casefold() for s in spans if s.type == "ORGANIZATION"}
    full_names = {w.casefold() for s in spans if s.type == "PERSON"
                  for w in text[s.start:s.end].split()[1:]}
    out = []
    for span in spans:
        if span.type != "PERSON" or span.recognizer not in STATISTICAL_RECOGNIZERS:
            out.append(span)
            continue
        verdict = _verdict(text, span, terms, org_values, full_names, vouched)
        if verdict == "person":
            out.append(span)
        elif verdict is not None:
            out.append(dataclasses.replace(
                span, type="ORGANIZATION", category=Category.QUASI_IDENTIFIER,
                why=_WHY_TICKER if verdict == "ticker" else _WHY_COMPANY))
    return out


def _verdict(text: str, span: Span, terms: DocTerms, org_values: set[str],
             full_names: set[str], vouched: frozenset[str] = frozenset()) -> str | None:
    """"person", "ticker", "company", or None (not a name: drop). ``full_names``: the
    words after the first of the document's multi-word person spans; ``vouched``: the
    words of names a strong rule found (they count as listed names)."""
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
    if known or not words:
        return "person"
    if _DISPLAY_AFTER.match(text, span.end) and not value.isupper():
        from preflight.core.pii.recognizers.names import SENDER_WORDS

        if not any(w.casefold() in SENDER_WORDS for w in words):
            return "person"                     # "Bastien Roucariès <rouca@…>"
    if value.isupper():
        return None                             # "BEGIN PGP", "ASTS"
    if len(words) == 1:
        w = words[0]
        if not _NAME_SHAPE.fullmatch(w) or w.casefold() in common_words():
            return None                         # "XviD", "Wifi"
        if w.casefold() in full_names or _TITLE_BEFORE.search(
                text, max(0, span.start - 8), span.start):
            return "person"                     # "Skorich" after "Nick Skorich", "Mr Pes"
        return None                             # "Java", "Kommersant", "Tools"
    if not any(w[0].isupper() for w in words):
        return None                             # "keymap vi", "chmod g-w": commands
    if any(w.casefold() in common_words() or (w[0].isupper() and terms.used_in_lower_case(w))
           for w in words) or words[-1].endswith("s"):
        return None                             # "Red Hat", "Sigma Designs"
    return "person"


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
