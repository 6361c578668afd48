"""Cleaning Presidio results into :class:`Span` values: the NER model's junk dropped,
its spans trimmed to the value (punctuation, "et al", a leading field label such as
"Contact"), id numbers the model calls dates removed, and phone numbers it calls dates
retyped as phone numbers."""

from __future__ import annotations

import re
from collections.abc import Container
from typing import Any

from preflight.core.pii.entities import EVIDENCE_KEY, WHY_KEY, category_of, why_for
from preflight.core.types import Category, Evidence, Span

# Acronyms the small model likes to call organizations next to the numbers they label.
NOT_ORGS = {"SSN", "IBAN", "DOB", "API", "ID", "PIN", "CVV", "URL", "IP", "PO", "ZIP",
            "SWIFT", "BIC", "VAT", "EIN", "NHS", "AWS", "IT", "HR", "FYI", "ASAP", "CC",
            "BCC", "RE", "FW", "FWD", "PDF", "OK", "TIN", "ITIN", "MRN", "PS"}
# Field labels and words the small model tags as a one-word person name.
NOT_NAMES = {"tel", "fax", "card", "email", "e-mail", "phone", "mobile", "host", "dob", "bank",
             "contact", "shipping", "al", "iban", "ssn", "re", "fwd", "subject", "dear",
             "hi", "hello", "hey", "thanks", "thx", "regards", "cheers", "congrats",
             "congratulations", "bye", "goodbye", "mr", "mrs", "ms", "dr",
             "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov",
             "dec", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
             "sunday", "sir", "madam"}
# Words that address a role or a group, not a person ("Dear Customer", "Hi Team").
ADDRESSEE_WORDS = {
    "sir", "madam", "madame", "or", "and", "customer", "customers", "client", "clients",
    "team", "teams", "all", "everyone", "everybody", "folks", "friends", "colleagues",
    "hiring", "manager", "managers", "recruiter", "recruiting", "committee", "board",
    "members", "member", "partner", "partners", "valued", "user", "users", "reader",
    "readers", "reviewer", "reviewers", "editor", "editors", "applicant", "candidate",
    "support", "admissions", "officer", "department", "staff", "there", "guys", "whom",
    "it", "may", "concern", "to", "parent", "parents", "guardian", "student", "students",
    "neighbor", "neighbour", "neighbors", "patient", "patients", "employee", "employees",
    "supplier", "vendor", "landlord", "tenant", "owner", "sales", "hr", "service", "desk",
    "director", "chair", "organizer", "organizers", "coordinator", "host",
}
# Honorifics written before a name and qualifications / generations written after it
# ("Dr.", "MD", "Jr.", "III"): part of how a name is written, never a name on their own.
NAME_AFFIXES = {
    "mr", "mrs", "ms", "miss", "mx", "dr", "prof", "rev", "jr", "sr", "esq", "md", "phd",
    "dds", "dmd", "dvm", "rn", "cpa", "mba", "jd", "ii", "iii", "iv", "qc", "kc", "obe",
    "mbe", "cbe",
}
# Month and weekday abbreviations: a date next to a number ("Jan 5"), a given name
# otherwise ("Jan Kowalski", "Jan said").
CALENDAR_WORDS = {"jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct",
                  "nov", "dec"}
# Words the model glues to the front or back of a name ("Contact John Smith").
LABEL_WORDS = NOT_NAMES | {
    "call", "ask", "ping", "from", "to", "cc", "bcc", "attn", "attention", "name",
    "customer", "patient", "employee", "client", "signed", "by", "per", "via", "with",
    "please", "cardholder", "holder", "account", "user", "author", "reviewer", "sender",
    "recipient", "applicant", "manager", "owner", "emergency", "mail", "message", "text",
    "telephone", "cell", "mobile", "sincerely", "best", "yours", "ref", "re:",
}
# Generic nouns of office and IT prose the small model calls a one-word organization
# ("Customer asked…", "Update: …", "Password reset is…").
GENERIC_ORG_WORDS = {
    "customer", "client", "update", "updates", "password", "passwords", "reset", "login",
    "admin", "account", "invoice", "order", "ticket", "meeting", "agenda", "notes",
    "action", "summary", "status", "review", "feedback", "support", "sales", "finance",
    "marketing", "legal", "security", "management", "team", "staff", "budget", "payroll",
    "contract", "policy", "release", "roadmap", "project", "report", "ref",
    "reference", "request", "approval", "onboarding", "offboarding", "helpdesk", "wifi",
}
# Words that label an identifier number ("invoice 4471", "order #12").
_ID_LABEL = re.compile(
    r"(?i)\b(?:invoice|inv|order|ticket|case|ref|reference|no|nr|number|num|id|account|"
    r"acct|po|item|room|page|p|pp|version|v|table|figure|fig|section|sec|claim|policy|"
    r"batch|lot|serial|part|model|build|issue|pr|bug|step|unit|suite|apt|box|route|"
    r"flight|seat|gate|ext|extension|code|pin)\.?[ \t]*(?:#|no\.?|number|nr\.?)?[ \t]*:?"
    r"[ \t]*$")
_BARE_NUMBER = re.compile(r"#?\d+")
# A whole value in North American (NANP) shape: optional +1, area code and exchange
# starting 2-9, four line digits; spaces, dots, dashes or brackets between the groups.
_NANP = re.compile(r"(?:\+?1[ \t.-]?)?(?:\([2-9]\d{2}\)[ \t]?|[2-9]\d{2}[ \t.-]?)"
                   r"[2-9]\d{2}[ \t.-]?\d{4}")


def nanp_shaped(value: str) -> bool:
    """Whether ``value`` is, as a whole, a North American phone number ("4053979721",
    "(405) 397-9721", "+1 405.397.9721"). No date or Unix time has this shape: an
    8-digit 20240131 is too short and a 10-digit 1706659200 starts with 1."""
    return _NANP.fullmatch(value.strip()) is not None


_WHY_PHONE_NOT_DATE = ("Tagged as a date, but it has the shape of a North American phone "
                       "number, so it is treated as one")


class DocTerms:
    """Facts about the document that tell NER junk from names (computed once per text)."""

    _DEFINED = re.compile(r"\(([A-Z][A-Z0-9]{1,7}s?)\)")

    def __init__(self, text: str, lexicon: Container[str] | None = None) -> None:
        self.text = text
        self.lexicon = lexicon          # English dictionary words (None: not known)
        self.defined_acronyms = set(self._DEFINED.findall(text))
        self._lower_words: set[str] | None = None

    def shouted_phrase(self, start: int, end: int) -> bool:
        """``text[start:end]`` is common words in capitals inside a passage written in
        capitals (a licence's "IN NO EVENT SHALL THE COPYRIGHT HOLDER BE LIABLE FOR ANY
        DATA"): the small model tags such words as firms and places at random. A short
        capitals line (a heading, "ACME LOGISTICS") is no such passage, and a word on no
        dictionary ("GOOGLE INC" aside, an acronym, a surname) is kept."""
        value = self.text[start:end]
        if self.lexicon is None or not value.isupper():
            return False
        line_start = self.text.rfind("\n", 0, start) + 1
        line_end = self.text.find("\n", end)
        line = self.text[line_start:len(self.text) if line_end < 0 else line_end]
        if sum(1 for w in _CAPS_WORD.findall(line)) < SHOUTED_LINE_WORDS:
            return False
        words = [w.casefold() for w in value.split() if w.casefold() not in _STOP_WORDS]
        return all(any(form in self.lexicon for form in _inflected(w)) for w in words)

    def used_in_lower_case(self, word: str) -> bool:
        """``word`` is written in lower case somewhere in the prose ("will", "mark"): as a
        one-word name it is more likely a common word. A word alone on its line ("-tom"
        under an e-mail) is a signature, not prose, and does not count; nor does a word
        of an address ("akim" in akim.demaille@gmail.com beside "Akim Demaille")."""
        if self._lower_words is None:
            prose = _ADDRESS_TOKEN.sub(lambda m: " " * len(m.group()), self.text)
            self._lower_words = set()
            for line in prose.split("\n"):
                words = list(_LOWER_WORD.finditer(line))
                if len(words) == 1 and alone_on_line(line, *words[0].span()):
                    continue
                self._lower_words.update(m.group() for m in words)
        return word.lower() in self._lower_words


_LOWER_WORD = re.compile(r"\b[a-z][a-z'-]+\b")
_CAPS_WORD = re.compile(r"\b[A-Z][A-Z'-]+\b")
#: Words in capitals a line needs to count as a passage in capitals, not a heading.
SHOUTED_LINE_WORDS = 8
_STOP_WORDS = {"the", "a", "an", "of", "and", "or", "for", "to", "in", "on", "by", "with",
               "any", "such", "no", "not", "be", "is", "are", "as", "at", "this", "that"}


def _inflected(word: str) -> set[str]:
    """``word`` and the dictionary forms it may inflect ("IMPLIED" → imply, "HOLDERS" →
    holder, "ARISING" → arise)."""
    forms = {word, word.removesuffix("s"), word.removesuffix("es")}
    if word.endswith("ied"):
        forms.add(word[:-3] + "y")
    for suffix in ("ed", "ing"):
        if word.endswith(suffix):
            stem = word[: -len(suffix)]
            forms |= {stem, stem + "e"}
    return forms


def dictionary_words_only(value: str, lexicon: Container[str]) -> bool:
    """Every word of ``value`` but its initials is an English dictionary word, or the
    plural of one ("Wild Cats", "Investor Relations"): a phrase, not a name on no list
    ("Dmitry Shachnev", "Geege Schuman", "Neale Pickett")."""
    words = [w.strip(".,").casefold() for w in value.split() if len(w.strip(".,")) > 1]
    return bool(words) and all(
        any(form in lexicon for form in {w, w.removesuffix("s"), w.removesuffix("es")})
        for w in words)
_ADDRESS_TOKEN = re.compile(r"[^\s<>()\[\]\"',;]*@[^\s<>()\[\]\"',;]*|\S*://\S*|\bwww\.\S*")
_NO_WORD = re.compile(r"[^\w\n]*")


def alone_on_line(text: str, start: int, end: int) -> bool:
    """Nothing but punctuation and spaces shares the line with ``text[start:end]`` (a
    sign-off such as "-tom" or "-- jane")."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    return bool(_NO_WORD.fullmatch(text, line_start, start)
                and _NO_WORD.fullmatch(text, end, line_end))


def to_span(text: str, result: Any, deny_category: Category,
            terms: DocTerms | None = None) -> Span | None:
    """A Presidio result → a cleaned :class:`Span` (None when cleaning leaves nothing).
    A result without declared evidence (an analyzer built elsewhere) counts as a rule's:
    never dropped as the model's junk."""
    meta = result.recognition_metadata or {}
    recognizer = meta.get("recognizer_name") or "unknown"
    evidence = meta.get(EVIDENCE_KEY, Evidence.RULE)
    start, end, typ = result.start, result.end, result.entity_type
    if Evidence.STATISTICAL in evidence:
        start, end = trim(text, start, end)
        if typ == "PERSON":
            start, end = strip_label_words(text, start, end)
        if start >= end or not plausible_ner(typ, text[start:end], terms, start):
            return None
        if typ in ("ORGANIZATION", "LOCATION") and terms is not None \
                and terms.shouted_phrase(start, end):
            return None
    elif start >= end:
        return None
    if typ == "DATE_TIME" and labelled_number(text, start, end):
        return None
    why = meta.get(WHY_KEY) or why_for(
        recognizer, typ, bool(meta.get("is_score_enhanced_by_context"))
    )
    if typ == "DATE_TIME" and nanp_shaped(text[start:end]):
        # the small model calls bare phone numbers dates; a policy that keeps dates
        # would then send the number
        typ, why = "PHONE_NUMBER", _WHY_PHONE_NOT_DATE
    category = deny_category if typ == "DENY_LIST" else category_of(typ)
    return Span(start, end, typ, category, float(min(1.0, result.score)), recognizer, why,
                evidence)


_ET_AL = re.compile(r"[ \t]+et[ \t]+al\.?$")


def trim(text: str, start: int, end: int) -> tuple[int, int]:
    """Strip punctuation, a possessive 's and a citation's "et al" from NER spans."""
    # names start and end with a letter or digit (drops quotes, brackets, emoji, dashes)
    while start < end and not text[start].isalnum():
        start += 1
    while end > start and not text[end - 1].isalnum():
        end -= 1
    m = _ET_AL.search(text, start, end)
    if m:
        end = m.start()
    for suffix in ("'s", "’s"):
        if text[start:end].endswith(suffix) and end - start > 2:
            end -= 2
    return start, end


_FIRST_WORD = re.compile(r"([\w'’-]+:?)[\s,:]+")
_LAST_WORD = re.compile(r"[\s,:]+([\w'’-]+)$")


def strip_label_words(text: str, start: int, end: int) -> tuple[int, int]:
    """Drop field labels and numbers the model glued to a name ("Contact John Smith",
    "2019 Ryan Tandy" in a copyright line → the name); a one-word span is left to
    :func:`plausible_ner`."""
    def glued(word: str) -> bool:
        low = word.rstrip(":").lower()
        return (low in LABEL_WORDS and low not in CALENDAR_WORDS) or low.isdigit()

    start = _after_titles(text, start, end)

    while True:
        m = _FIRST_WORD.match(text, start, end)
        if not m or not glued(m.group(1)) or m.end() >= end:
            break
        start = m.end()
    while True:
        m = _LAST_WORD.search(text, start, end)
        if not m or not glued(m.group(1)) or m.start() <= start:
            break
        end = m.start()
    return trim(text, start, end)


def _after_titles(text: str, start: int, end: int) -> int:
    """Where a NER person span starts once the titles the model took in are left out
    ("Herr Schmidt", "Pan Wiśniewski" → the name; a title is not part of a name span).
    A title that is also a given name stays ("Dom Joly")."""
    from preflight.core.pii.name_shapes import TITLE
    from preflight.core.pii.person_evidence import given_names

    m = re.match(TITLE, text[start:end])
    if m is None or m.end() >= end - start:
        return start
    if any(w.strip(".").casefold() in given_names() for w in m.group().split()):
        return start
    return start + m.end()


def labelled_number(text: str, start: int, end: int) -> bool:
    """A bare number the NER model calls a date, right after an id label
    ("invoice 4471"), or a span that is only such a label and number."""
    value = text[start:end]
    m = re.match(r"(?i)([a-z#.]+[ \t]*(?:#|no\.?)?[ \t]*:?[ \t]*)(#?\d+)$", value)
    if m and _ID_LABEL.search(m.group(1)):
        return True
    if not _BARE_NUMBER.fullmatch(value):
        return False
    return bool(_ID_LABEL.search(text, max(0, start - 24), start))


_DIGIT = re.compile(r"\d")


def generic_addressee(value: str) -> bool:
    """A role or group addressed like a person ("Customer", "Sir or Madam", "Hiring
    Manager")."""
    words = [w.strip(".,").lower() for w in value.split()]
    return bool(words) and all(w in ADDRESSEE_WORDS for w in words)


def plausible_ner(typ: str, value: str, terms: DocTerms | None = None,
                  start: int | None = None) -> bool:
    """Drop the small NER model's typical junk: numbers called names, field labels and
    words that read as a verb where they stand called persons, acronyms the text defines
    as terms called organizations. ``start``: where ``value`` stands in ``terms.text``
    (without it a month abbreviation counts as a date)."""
    if typ in ("PERSON", "LOCATION", "NRP"):
        if _DIGIT.search(value) or not any(c.isalpha() for c in value):
            return False
        if typ == "PERSON" and generic_addressee(value):
            return False
        if typ == "PERSON" and " " not in value:
            low = value.lower()
            located = terms is not None and start is not None
            if low in NOT_NAMES and (low not in CALENDAR_WORDS or not located
                                     or _by_number(terms.text, start, start + len(value))):
                return False
            if located and verb_in_place(terms.text, start, start + len(value), terms.lexicon):
                return False
        return True
    if typ == "ORGANIZATION":
        if value.upper() in NOT_ORGS:
            return False
        if terms is not None and value in terms.defined_acronyms:
            return False
        if _generic_word(value, terms):
            return False
        digits = sum(c.isdigit() for c in value)
        return any(c.isalpha() for c in value) and digits / len(value) < 0.3
    return True


def _by_number(text: str, start: int, end: int) -> bool:
    """A number stands right before or after ``text[start:end]`` ("Jan 5", "5 Jan")."""
    return bool(re.match(r"[ \t.,]*\d", text[end:end + 4])
                or re.search(r"\d[ \t.,]*$", text[max(0, start - 4):start]))


# Words that follow a verb or a modal, never a name opening a sentence ("Mark the box",
# "Will you…?", "Hope you are well", "Bill them monthly").
_OBJECT_WORDS = frozenset({
    "the", "a", "an", "this", "that", "these", "those", "your", "my", "our", "their", "his",
    "its", "every", "each", "all", "any", "some", "no", "you", "i", "we", "they", "it",
    "them", "us", "me", "him", "he", "she", "there", "not", "to",
})
_MODALS = frozenset({"will", "may", "can", "shall", "must", "might", "could", "should",
                     "would"})
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n\s*|[\"“‘(]\s*)$")
_NEXT_WORD = re.compile(r"[ \t]+([A-Za-z]+)")
_INFINITIVE = re.compile(r"\bto[ \t]+$")


def verb_in_place(text: str, start: int, end: int, lexicon: Container[str] | None) -> bool:
    """``text[start:end]`` is one capitalized word that opens a sentence as a verb or a
    modal, followed by an object or subject word ("Mark the box.", "Grant the request",
    "Will you?", "May I…"), or a dictionary word on no name list after "to" ("Leave to
    Remain"): not a person. Mid-sentence ("I told Mark the news") it stays a name."""
    word = text[start:end]
    low = word.casefold()
    if " " in word or not word[:1].isupper():
        return False
    if low not in _MODALS and (lexicon is None or low not in lexicon):
        return False
    if low not in _MODALS and _INFINITIVE.search(text, max(0, start - 4), start):
        from preflight.core.pii.person_evidence import known_names

        if low not in known_names():
            return True                      # "Leave to Remain"; "sent to Mark" stays
    following = _NEXT_WORD.match(text, end)
    if following is None or following.group(1).casefold() not in _OBJECT_WORDS:
        return False
    return bool(_SENTENCE_START.search(text, max(0, start - 3), start)) or start == 0


def _generic_word(value: str, terms: DocTerms | None) -> bool:
    """One ordinary word, not a name: all lower case ("ref"), or capitalized and a generic
    office noun, an addressee word, or written in lower case elsewhere in the document.
    Acronyms and brand spellings ("IBM", "eBay") are never generic."""
    if " " in value or not value.isalpha():
        return False
    if value.islower():
        return True
    if not (value[0].isupper() and value[1:].islower()):
        return False
    low = value.lower()
    return (low in GENERIC_ORG_WORDS or low in ADDRESSEE_WORDS
            or (terms is not None and terms.used_in_lower_case(value)))
