"""Person names by their shape and their cues, whatever the NER model makes of them:

- a title or honorific before capitalized words ("Mr Jan Kowalski", "Frau Weber",
  "Judge Zupančič", "Mr C.A. Whomersley", "Mr. W. Ganshof van der Meersch");
- a census given name followed by a surname-shaped word, even when both are English
  words or months ("April Lee", "Jan Novak", "Hope Daniels", "Mark Evans");
- a name in any case after a salutation, a sign-off, a name field or in an e-mail
  header's display name ("Dear john smith", "Regards,\\nMARIA GONZALEZ",
  "From: wang wei <…>", "Name: 王小明"), after thanks, a farewell or wishes ("Thanks
  Vinkare!", "Bye Capwin !", "Congrats Ana on…"), or where the sentence introduces it ("my
  name is krithika", "did you call him hubert", "we named her Leonie").

The span never includes the title (as every name rule here writes spans). A capitalized
word counts as a name when the census lists it or the model's dictionary does not know
it (:func:`~preflight.core.pii.name_shapes.name_evidence`): "Mr President", "Judge
Business School" and "Grant Application" stay unmasked.
"""

from __future__ import annotations

import re

from preflight.core.pii.cleaning import ADDRESSEE_WORDS, NAME_AFFIXES, generic_addressee
from preflight.core.pii.countries import country_adjective
from preflight.core.pii.name_shapes import (
    HONORIFIC_SET, INITIALS, NAME_BODY, NAME_WORD, PARTICLE, TITLE, TITLE_SET, honorific_name, name_evidence,
)
from preflight.core.pii.person_evidence import (
    accented_given_name, common_words, company_cue, given_names, lexicon_of,
)
from preflight.core.pii.recognizers.base import make_result
from preflight.core.pii.recognizers.names import (
    COMPANY_SUFFIX, PersonRecognizer, given_name_in_prose,
)
from preflight.core.pii.recognizers.orgs import FACILITY_NOUNS
from preflight.core.pii.recognizers.street_suffixes import STRONG as STREET_TYPES
from preflight.core.types import Evidence

_TITLED = re.compile(rf"(?P<title>{TITLE})(?P<name>{NAME_BODY})")
# a run of capitalized words on one line (middle initials and particles between them)
_RUN = re.compile(rf"(?<![\w'’.-]){NAME_WORD}(?:[ \t]+(?:{INITIALS}[ \t]*)?"
                  rf"(?:{PARTICLE}[ \t]+){{0,3}}{NAME_WORD})+")
_WORD_IN_RUN = re.compile(rf"{NAME_WORD}|{INITIALS}|{PARTICLE}(?=[ \t])")
_FIRM_AFTER = re.compile(rf",?[ \t]+{COMPANY_SUFFIX}(?![\w-])")
_CASED_WORD = r"[^\W\d_a-z][^\W\d_A-Z]+(?:['’-][^\W\d_][^\W\d_A-Z]*)*"

# A name in any case or script after a cue: words of letters (not digits), one line.
_UNCASED = r"[\u0590-\u05ff\u0600-\u06ff\u0900-\u097f\u0e00-\u0e7f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]"
_ANY_WORD = rf"(?:{_UNCASED}+|[^\W\d_][\w'’.-]*)"
_ANY_NAME = rf"{_ANY_WORD}(?:[ \t]+{_ANY_WORD}){{0,3}}"
_FIELD_LABELS = (r"(?:full[ \t]+)?name|first[ \t]+name|last[ \t]+name|surname|given[ \t]+name|"
                 r"contact|contact[ \t]+person|applicant|claimant|respondent|defendant|"
                 r"plaintiff|witness|patient|employee|customer|client|tenant|guest|"
                 r"passenger|student|candidate|account[ \t]+holder|cardholder|"
                 r"beneficiary|signed|signature|sender|recipient|attendee|requester|"
                 r"reported[ \t]+by|assigned[ \t]+to|owner")
_SIGN_OFF = (r"(?:best[ \t]+regards|kind[ \t]+regards|warm[ \t]+regards|regards|sincerely|"
             r"yours[ \t]+(?:truly|sincerely|faithfully)|cheers|thanks|thank[ \t]+you|"
             r"many[ \t]+thanks|best|cordially|respectfully)")
_CUES = (
    (re.compile(rf"(?i:\b(?:dear|hi|hello|hey|attn\.?|attention:?|good[ \t]+(?:morning|"
                rf"afternoon|evening)))[ \t]+(?:{TITLE})?(?P<name>{_ANY_NAME})"
                r"[ \t]*(?=[,:!\n]|$)"),
     "A name after a salutation"),
    # the name may carry its team or role: "Priya (HR Ops)", "Maria Lopez, Finance"
    (re.compile(rf"(?i:\b{_SIGN_OFF}),?[ \t]*\r?\n[ \t]*(?:[-–—]+[ \t]*)?(?:{TITLE})?"
                rf"(?P<name>{_ANY_NAME})[ \t]*(?=(?:\([^()\n]{{1,40}}\)|[,|–—][^\n]{{0,60}}"
                rf"|-[ \t][^\n]{{0,60}})?[ \t]*(?:\r?\n|$))"),
     "A name signing off a message"),
    # the sign-off and the name on one line of their own: "Thanks, Carol", "Best, Ana Lima."
    (re.compile(rf"(?im:^[ \t]*{_SIGN_OFF},[ \t]*(?:[-–—]+[ \t]*)?(?:{TITLE})?"
                rf"(?P<name>{_ANY_NAME})[ \t]*[.!]?[ \t]*(?=\r?\n|$))"),
     "A name signing off a message"),
    # thanks, farewells and wishes addressed to someone: "Thanks Vinkare!", "Bye Capwin !",
    # "Congrats Ana on the launch"
    (re.compile(rf"(?i:\b(?:thanks|thank[ \t]+you|thx|many[ \t]+thanks|cheers|bye|goodbye|"
                rf"congrats|congratulations|welcome|happy[ \t]+birthday))[ \t]+(?:{TITLE})?"
                rf"(?P<name>{_ANY_WORD}(?:[ \t]+{_ANY_WORD}){{0,3}}?)"   # the fewest words
                rf"(?=[ \t]*(?:[,:;!.?\n]|$)|[ \t]+(?i:on|for)\b)"),
     "A name thanked, greeted or congratulated"),
    (re.compile(rf"(?im:^[ \t]*(?:{_FIELD_LABELS})[ \t]*:[ \t]*(?:{TITLE})?"
                rf"(?P<name>{_ANY_NAME})[ \t]*(?=\r?\n|$))"),
     "A value in a name field"),
    # (capitalized display names are the mail-header rule's)
    (re.compile(rf"(?im:^[ \t]*(?:from|to|cc|bcc|reply-to|sender)[ \t]*:[ \t]*\"?"
                rf"(?P<name>{_ANY_NAME})\"?[ \t]*<[^\s<>@]+@[^\s<>]+>)"),
     "The display name of an address in an e-mail header, in lower case or capitals"),
)
_TITLE_CASE = re.compile(rf"(?:{INITIALS}[ \t]*|{_CASED_WORD}[ \t]*)+")
# salutations and sign-offs that are not names ("Hi there", "Thanks again")
_NOT_NAME_WORDS = ADDRESSEE_WORDS | {"again", "in", "advance", "for", "you", "so", "much",
                                      "very", "a", "lot", "there", "n/a", "none", "unknown"}


class NameShapeRecognizer(PersonRecognizer):
    """Titles, given name + surname, and names in any case after a cue (module docstring)."""

    evidence = Evidence.PERSON_PROOF

    def analyze(self, text, entities, nlp_artifacts=None):  # noqa: D102 (Presidio API)
        if entities and "PERSON" not in entities:
            return []
        lexicon = lexicon_of(nlp_artifacts)
        out = []
        for m in _TITLED.finditer(text):
            last_title = m.group("title").split()[-1].rstrip(".").casefold()
            end = _evidenced_end(text, m.start("name"), m.end("name"), lexicon, titled=True,
                                 honorific=last_title in HONORIFIC_SET)
            if end is not None:
                out.append(make_result(self, "PERSON", m.start("name"), end, 0.8,
                                       "Capitalized words after a personal title or rank"))
        for start, end in given_and_surname(text, lexicon):
            out.append(make_result(self, "PERSON", start, end, 0.75,
                                   "A given name followed by a surname"))
        for pattern, why in _CUES:
            for m in pattern.finditer(text):
                start, end = m.span("name")
                if pattern is _CUES[-1][0] and _TITLE_CASE.fullmatch(text, start, end):
                    continue
                if _cued_name(text[start:end], lexicon):
                    out.append(make_result(self, "PERSON", start, end, 0.75, why))
        return out


def _evidenced_end(text: str, start: int, end: int, lexicon, titled: bool,
                   honorific: bool = False) -> int | None:
    """Where the name in ``text[start:end]`` ends once trailing words with no name
    evidence are cut ("Dr Müller Hospital" → "Müller"); None when its first name word
    has none ("Mr President") or a company suffix follows. After an honorific the first
    word needs only to be no common word ("Mr Bean"), after initials nothing ("Mr I.
    Thrilling"); a title and initials alone are a name too ("Mr G.D. She said…")."""
    words = list(_WORD_IN_RUN.finditer(text, start, end))
    initials = bool(words) and re.fullmatch(INITIALS, words[0].group()) is not None
    last = None
    first_caps = False
    for w in words:
        value = w.group()
        if re.fullmatch(INITIALS, value) or value.casefold() in TITLE_SET:
            continue
        if re.fullmatch(PARTICLE, value):
            continue
        first = last is None
        if not first and len(value) <= 3 and value.isupper() and not first_caps \
                and value.casefold() not in NAME_AFFIXES:
            break           # an acronym after a name in mixed case ("İsmail Karapınar TRL")
        if first:
            first_caps = value.isupper()
        if first and titled and (honorific or initials) and honorific_name(value):
            pass
        elif not name_evidence(value, lexicon, surname=not first or initials):
            break
        last = w.end()
    if last is None and titled and initials:
        last = words[0].end()
    if last is None or _FIRM_AFTER.match(text, last) or company_cue(text, start, last):
        return None
    return last


def given_and_surname(text: str, lexicon) -> list[tuple[int, int]]:
    """Spans of a census given name followed by surname-shaped words with name evidence
    inside each run of capitalized words; a street ("Charlotte Street") or a firm
    ("Grant Thornton LLP") is no person."""
    given = given_names()
    out = []
    for run in _RUN.finditer(text):
        words = list(_WORD_IN_RUN.finditer(text, *run.span()))
        for i, w in enumerate(words[:-1]):
            low = w.group().casefold()
            if (low not in given and not accented_given_name(low)) or low in TITLE_SET:
                continue
            end = _evidenced_end(text, words[i + 1].start(), run.end(), lexicon,
                                 titled=False) if _next_is_surname(words[i + 1:], lexicon) else None
            if end is None:
                continue
            last_word = text[w.start():end].split()[-1]
            if last_word in STREET_TYPES or company_cue(text, w.start(), end) or \
                    _part_of_date(text, w.start(), end) or \
                    country_adjective(text[w.start():end]):      # "a Sierra Leonean"
                continue
            out.append((w.start(), end))
            break
    return out


_MONTH = re.compile(r"(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec|january|"
                    r"february|march|april|june|july|august|september|october|november|"
                    r"december)")
_NUMBER_AFTER = re.compile(r",?[ \t]+\d{1,4}(?!\w)")
_DAY_BEFORE = re.compile(r"(?<![\w.,])\d{1,2}(?:st|nd|rd|th)?[ \t]+$")


def _part_of_date(text: str, start: int, end: int) -> bool:
    """A month in ``text[start:end]`` is one of a date: the last word with a number after
    it ("In May 2001", "April 12"), or the first with a day number before it ("19 May")."""
    words = text[start:end].split()
    return bool((_MONTH.fullmatch(words[-1].rstrip(".")) and _NUMBER_AFTER.match(text, end))
                or (_MONTH.fullmatch(words[0].rstrip("."))
                    and _DAY_BEFORE.search(text, max(0, start - 6), start)))


def _next_is_surname(rest: list[re.Match[str]], lexicon) -> bool:
    """The first name word after the given name reads as a surname (initials and
    particles before it are fine: "John F. Kennedy", "Ludwig van Beethoven")."""
    for w in rest:
        value = w.group()
        if re.fullmatch(INITIALS, value) or re.fullmatch(PARTICLE, value):
            continue
        return name_evidence(value, lexicon, surname=True)
    return False


def _cued_name(value: str, lexicon) -> bool:
    """A cue's value reads as a name: every word a census name, a word in a script
    without capitals, or a word of no dictionary and no common word; not a role or a
    group ("Dear Customer", "Hi all", "Thanks again")."""
    if generic_addressee(value):
        return False
    words = [w.strip(".,") for w in value.split()]
    words = [w for w in words if w and w.casefold() not in TITLE_SET
             and not re.fullmatch(PARTICLE, w) and not re.fullmatch(r"[^\W\d_]\.?", w)]
    if not words:
        return False
    common = common_words()
    # after a census given name, a capitalized word is its surname whatever else it
    # names ("Best, Ana Lima"; "Lima" alone is a city)
    given_first = words[0].casefold() in given_names() and words[0][:1].isupper()
    for i, w in enumerate(words):
        low = w.casefold()
        if low in _NOT_NAME_WORDS:
            return False
        if re.fullmatch(rf"{_UNCASED}+", w):
            continue
        if i and given_first and w[:1].isupper():
            continue
        if low in given_names() or name_evidence(w, lexicon, surname=True):
            if low in common and not w[:1].isupper():
                return False          # "thanks,\nwill do": a lower-case common word
            continue
        return False
    return True


# one capitalized word, not part of an address, a path, a file name or a hyphenated word
_LONE_WORD = re.compile(rf"(?<![\w'’.@/#-]){_CASED_WORD}(?![\w'’@/-]|\.\w)")
# after it: a capitalized word (one longer name), a label's colon ("Tel:"), a version
# ("Solaris 7"), or the kind of place or institution it names ("Marin county", "Kelso
# police station")
_PLACE_KINDS = ("county", "city", "valley", "river", "lake", "island", "bay", "mountains",
                "mountain", "beach", "park", "district", "province", "region", "state",
                *FACILITY_NOUNS)
_NOT_ALONE_AFTER = re.compile(
    r"[ \t]+[^\W\d_a-z]|[ \t]*:|[ \t]+v?\d|[ \t]+(?i:"
    + "|".join(re.escape(k).replace(r"\ ", r"[ \t]+")
               for k in sorted(_PLACE_KINDS, key=len, reverse=True)) + r")(?![\w-])")
_WORD_BEFORE = re.compile(r"(?:^|(?<=[^\w'’.-]))([^\W\d_][\w'’-]*|[A-Z]\.)[ \t]+"
                          r"(?:of[ \t]+)?$")
_SENTENCE_START = re.compile(r"(?:^|[.!?…:;\"“(•*-])[ \t]*$")


class GivenNameInProseRecognizer(PersonRecognizer):
    """A given name alone in running text ("Ask Priya about it", "Kenny said"): one
    capitalized word that only a given name is (:func:`~preflight.core.pii.recognizers.
    names.given_name_in_prose`) and that is no word of a longer capitalized name ("San
    Jose", "Ivana Hospital", "J. Kenny": the other rules' and the model's). The NER
    model knows few names that are not English ones, and none without a surname."""

    evidence = Evidence.GUESS

    WHY = "A given name in running text (US birth records; on no dictionary)"

    def analyze(self, text, entities, nlp_artifacts=None):  # noqa: D102 (Presidio API)
        if entities and "PERSON" not in entities:
            return []
        lexicon = lexicon_of(nlp_artifacts)
        out = []
        for m in _LONE_WORD.finditer(text):
            if (_NOT_ALONE_AFTER.match(text, m.end())
                    or not given_name_in_prose(m.group(), lexicon)
                    or _after_a_capitalized_word(text, m.start())
                    or company_cue(text, m.start(), m.end())):
                continue
            out.append(make_result(self, "PERSON", m.start(), m.end(), 0.6, self.WHY))
        return out


def _after_a_capitalized_word(text: str, start: int) -> bool:
    """The word before ``start`` on its line (maybe before "of") is capitalized (or an
    initial) and does not open its sentence: the two are one name ("San Jose", "College
    of Marin"), not "Ask Priya"."""
    before = _WORD_BEFORE.search(text, max(0, start - 60), start)
    if before is None or not before.group(1)[0].isupper():
        return False
    if before.group(1).endswith("."):
        return True
    return not _SENTENCE_START.search(text, max(0, before.start(1) - 8), before.start(1))


# A sentence that introduces a name: what follows is one whatever its case.
# ("named", "is called" and "known as" alone are left: "named entities", "a botnet known as
# Mirai", "this phenomenon is called homophily" in papers)
_INTRODUCED = re.compile(
    r"(?i:(?<![\w'’])(?:(?:my|his|her|their|your|whose)[ \t]+(?:(?:first|last|full|real|"
    r"given|middle|nick)[ \t]*)?name(?:[ \t]+(?:is|was)|['’]s)|(?:am|i['’]?m)[ \t]+"
    r"called|(?:nick)?named[ \t]+(?:him|her)|call(?:ed)?[ \t]+(?:me|him|her)))[ \t]+"
    r"(?P<name>[^\W\d_]+(?:['’-][^\W\d_]+)*(?:[ \t]+[^\W\d_]+(?:['’-][^\W\d_]+)*){0,2})")
_INTRODUCED_NEEDS = re.compile(r"(?i:nam|call)")     # a literal of every cue
_INTRODUCED_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
_NOT_A_WORD_END = re.compile(r"[\w@/]|\.\w")


class IntroducedNameRecognizer(PersonRecognizer):
    """A name the sentence introduces ("my name is krithika", "call me Ishmael", "his
    name was tom", "we named her Leonie"), in any case: the first word after the cue
    if it is no common word (a capitalized census given name may be one: "named
    Rose"), and up to two more that read as names ("maria lopez")."""

    evidence = Evidence.PERSON_PROOF

    WHY = "A name the sentence introduces (my name is…, call me…, named him…)"

    def analyze(self, text, entities, nlp_artifacts=None):  # noqa: D102 (Presidio API)
        if (entities and "PERSON" not in entities) or not _INTRODUCED_NEEDS.search(text):
            return []
        lexicon = lexicon_of(nlp_artifacts)
        out = []
        for m in _INTRODUCED.finditer(text):
            end = None
            for i, w in enumerate(_INTRODUCED_WORD.finditer(text, m.start("name"),
                                                             m.end("name"))):
                if not _introduced_word(w.group(), lexicon, first=i == 0):
                    break
                end = w.end()
            if (end is not None and not _NOT_A_WORD_END.match(text, end)
                    and not company_cue(text, m.start("name"), end)):
                out.append(make_result(self, "PERSON", m.start("name"), end, 0.75,
                                       self.WHY))
        return out


def _introduced_word(word: str, lexicon, first: bool) -> bool:
    """A word after an introducing cue reads as (part of) the name: the first one when
    it is no common word, no addressee and no title (or a capitalized census given
    name) and, in lower case, reads as a name ("call me tomorrow" is no name); the next
    ones when they read as names."""
    low = word.casefold()
    if low in _NOT_NAME_WORDS or low in TITLE_SET or generic_addressee(word):
        return False
    if low in common_words():
        return first and word[:1].isupper() and low in given_names()
    if first and word[:1].isupper():
        return True
    return name_evidence(word, lexicon, surname=not first)

