"""Person names the small NER model misses: names in ALL CAPS, names after a title or
a salutation/field label, a given name signing off on a line of its own, and capitalized
words that spell an email's local part.

Size (~600 lines): the recognizers share one grammar of a name word (letters of many
scripts, particles, titles, suffixes, initials) and one per-document lexicon; apart, each
would declare them again."""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from presidio_analyzer import EntityRecognizer

from preflight.core.pii.cleaning import GENERIC_ORG_WORDS, generic_addressee
from preflight.core.pii.countries import whole_country
from preflight.core.pii.name_shapes import (
    CASED_NAME_WORD, ROLE_AFTER_TITLE, UP, dictionary_word, name_evidence,
    words_read_as_name,
)
from preflight.core.pii.person_evidence import (
    births_given_names, common_words, dictionary_words_only, given_names, known_names,
    lexicon_of,
)
from preflight.core.pii.recognizers.base import Rule, RuleRecognizer, cue, make_result
from preflight.core.types import Evidence

_CAPS_RUN = re.compile(r"(?<![\w'’-])[A-Z][A-Z'’-]+(?:[ \t]+[A-Z]\.?)?(?:[ \t]+[A-Z][A-Z'’-]+){1,3}"
                       r"(?![\w'’-])")
_CAPS_WORD = re.compile(r"(?<![\w'’-])[A-Z][A-Z'’-]+(?![\w'’-])")
CONTEXT_CHARS = 160  # text kept on each side of a run (within its line) for the NER pass


class PersonRecognizer(EntityRecognizer):
    """A Presidio recognizer of PERSON spans alone, with no model to load."""

    def __init__(self, name: str | None = None) -> None:
        super().__init__(supported_entities=["PERSON"], name=name, supported_language="en")

    def load(self) -> None:
        pass


class AllCapsNameRecognizer(PersonRecognizer):
    """Re-runs the NER model on lines with ALL-CAPS word runs that hold a known given name
    or surname (:func:`~preflight.core.pii.person_evidence.known_names`), re-cased as a person would
    write them ("JOHN SMITH" → "John Smith"; stop words lower-cased). Offsets are kept
    because re-casing never changes a word's length (words where it would are skipped)."""

    evidence = Evidence.STATISTICAL | Evidence.GUESS

    WHY = "Written in capitals; the NER model tags it as a person's name once re-cased"

    def analyze(self, text, entities, nlp_artifacts=None):  # noqa: D102 (Presidio API)
        if (entities and "PERSON" not in entities) or nlp_artifacts is None:
            return []
        # only runs holding a known given name or surname are re-read by the model (a
        # second NER pass over every line with an acronym cost about a fifth of detection)
        names = known_names()
        runs = [m.span() for m in _CAPS_RUN.finditer(text)
                if any(w.strip("'’-").casefold() in names for w in m.group().split())]
        if not runs:
            return []
        nlp = nlp_artifacts.nlp_engine.get_nlp("en")
        if not nlp.has_pipe("ner"):
            return []
        windows = _windows_around(text, runs)
        out = []
        for ws, we in windows:
            chunk = _recase(text[ws:we], nlp.vocab)
            doc = nlp(chunk)
            for ent in doc.ents:
                if ent.label_ != "PERSON":
                    continue
                s, e = ws + ent.start_char, ws + ent.end_char
                if any(rs < e and s < re_ for rs, re_ in runs) and text[s:e].isupper():
                    out.append(make_result(self, "PERSON", s, e, 0.75, self.WHY))
        return out


def _windows_around(text: str, runs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Windows around the runs: their line, at most CONTEXT_CHARS each side (merged)."""
    spans: list[tuple[int, int]] = []
    for s, e in runs:
        ls = text.rfind("\n", 0, s) + 1
        le = text.find("\n", e)
        le = len(text) if le < 0 else le
        if s - ls > CONTEXT_CHARS:  # cut at a space so no word is split
            cut = text.find(" ", s - CONTEXT_CHARS, s)
            ls = cut + 1 if cut >= 0 else s
        if le - e > CONTEXT_CHARS:
            cut = text.rfind(" ", e, e + CONTEXT_CHARS)
            le = cut if cut >= 0 else e
        if spans and ls <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], le))
        else:
            spans.append((ls, le))
    return spans


def _recase(chunk: str, vocab) -> str:
    def fix(m: re.Match[str]) -> str:
        word = m.group()
        new = word.lower() if vocab[word.lower()].is_stop else word.capitalize()
        return new if len(new) == len(word) else word
    return _CAPS_WORD.sub(fix, chunk)


# a name word in any cased script (:mod:`~preflight.core.pii.name_shapes`), so "Dear Иван
# Петров," and "Mr McDonald" are names too
_NAME = CASED_NAME_WORD
_FULL = rf"{_NAME}(?:[ \t]+[{UP}]\.)?(?:[ \t]+{_NAME}){{0,2}}"
_CJK_NAME = r"[\u4e00-\u9fff\u3040-\u30ff\uac00-\ud7af]{2,4}"
# a field value: "Jane Roe", "Roe, Jane" or a Chinese/Japanese/Korean name
_FIELD_NAME = rf"(?:{_NAME},[ \t]+{_FULL}|{_FULL}|{_CJK_NAME})"
# (offices and ranks, and titles in other languages, are read with the census and the
# dictionary: :mod:`~preflight.core.pii.recognizers.person_cues`)
_TITLES = r"(?:Mr|Mrs|Ms|Miss|Mx|Dr|Prof|Professor|Sir|Dame|Rev|Capt|Sgt)"
_TITLE = rf"(?:{_TITLES}\.?[ \t]+)"
# A qualification or generation written after a name ("Jane Roe MD", "John Roe, Jr.");
# a one-letter numeral (I, V) only where the name ends.
_SUFFIX = (r"(?:,?[ \t]+(?:(?:Jr|Sr|Esq|MD|M\.D|PhD|Ph\.D|DDS|D\.D\.S|DMD|DVM|RN|CPA|MBA|JD|"
           r"II|III|IV)\.?(?![\w])|[IV](?=[ \t]*(?:[,:!\n]|$))))")
# A name as written in a greeting or a signature, with its qualification if any.
_SIGNED = rf"{_FULL}{_SUFFIX}?"


def _not_generic(value: str) -> bool:
    return not generic_addressee(value)


def _not_role(value: str) -> bool:
    """Not an office addressed by its title ("Mr President", "Madam Speaker")."""
    return value.split()[0].casefold() not in ROLE_AFTER_TITLE


# Who is not named where a quoted message is attributed ("He wrote:", "Someone writes:")
_NOT_WRITERS = frozenset({
    "i", "you", "he", "she", "it", "we", "they", "one", "who", "this", "that", "someone",
    "somebody", "anyone", "anybody", "everyone", "everybody", "nobody", "noone", "another",
    "other", "others", "poster", "author", "user", "reader", "sender", "original",
})


def _writer(value: str) -> bool:
    """The name of whoever wrote a quoted message: capitalized words that are no pronoun
    or role ("He wrote:", "The author"), or a lower-case word that is a listed name
    ("tom wrote:")."""
    words = value.split()
    if words[0].casefold() in _NOT_WRITERS or generic_addressee(value):
        return False
    return not value[0].islower() or value.casefold() in known_names()


#: Month and weekday names, whole and short: given names too ("June", "August"), but a
#: line of its own that is one of them is a date or a heading more often than a person.
_CALENDAR_WORDS = frozenset(w.casefold() for w in (*calendar.month_name, *calendar.month_abbr,
                                                   *calendar.day_name, *calendar.day_abbr) if w)


def _given_name_alone(value: str) -> bool:
    """One word on a line of its own that is a given name: in US birth records (less the
    English words) or the census's given names when no dictionary has it ("Ok",
    "Ruby" and "Sierra" are on the census list), and no common word, country, month or
    weekday. Who signs a message this way ("Greg", "- Joe" after a blank line) is
    named nowhere else in it."""
    low = value.casefold()
    if _no_name_alone(value):
        return False
    if low in births_given_names():
        return True
    return low in given_names() and not dictionary_word(low, _LEXICON.get())


def _no_name_alone(value: str) -> bool:
    """A word that is something else before it is a lone given name: a common word, a
    month or weekday, a country, a generic addressee or a word of a sender's name."""
    low = value.casefold()
    return (low in common_words() or low in _CALENDAR_WORDS or whole_country(value)
            or generic_addressee(value) or low in SENDER_WORDS)


def given_name_in_prose(value: str, lexicon: Any) -> bool:
    """A capitalized word that, in running text, only a given name is: in US birth
    records and on no dictionary (``lexicon``: the model's), and nothing
    :func:`_no_name_alone` keeps ("Priya", "Kenny"; not "Will", "Grant", "Paris")."""
    low = value.casefold()
    return (low in births_given_names() and not dictionary_word(low, lexicon)
            and not _no_name_alone(value))


def _known_given_name(value: str) -> bool:
    """The first word is a census given name or surname; or, with the model's dictionary
    at hand, two or more words that read as a name ("Sven Joachim")."""
    words = value.split()
    if generic_addressee(value):
        return False
    if words[0].casefold() in known_names():
        return True
    lexicon = _LEXICON.get()
    return lexicon is not None and words_read_as_name(words, lexicon)


def _credited_name(value: str) -> bool:
    """A credited name: Chinese/Japanese/Korean characters, or Latin words whose first is
    a listed name ("Thanks to Microsoft" is no person) and that end in no company suffix
    ("Sponsored by Jane Street Group")."""
    return bool(re.fullmatch(_CJK_NAME, value)) or (_known_given_name(value)
                                                    and not _FIRM_END.search(value))


# The display name of an address in a pasted e-mail header: `From: "R. A. Hettinga"
# <rah@…>`, `To: Jane Roe <…>`, `From: rah@… (R. A. Hettinga)`.
_HEADER = r"(?im:^[ \t]*(?:From|To|Cc|Bcc|Reply-To|Sender)[ \t]*:[ \t]*)"
_INITIALS = rf"(?:[{UP}]\.[ \t]*){{1,3}}"
# a display name's middle initial may go without its dot ("Kurt D Schwehr")
_DISPLAY_FULL = rf"{_NAME}(?:[ \t]+[{UP}]\.?)?(?:[ \t]+{_NAME}){{0,3}}"
_DISPLAY = rf"(?:{_INITIALS}{_NAME}|{_NAME},[ \t]+{_FULL}|{_DISPLAY_FULL})"
_ADDRESS = r"[^\s<>()@\"]+@[^\s<>()\"]+"
# a display name outside a header does not start with a label or a greeting ("Contact",
# "Cheers", "Email" before "Jane Roe <…>")
# "Cheers", "Email" before "Jane Roe <…>"; none of them a given name, unlike some labels
# ("Jan", "Per", "Al")
_NO_LABEL = (r"(?!(?i:contact|cheers|thanks|regards|sincerely|best|e-?mail|mail|write|ask|"
             r"call|dear|hi|hello|hey|from|to|cc|bcc|by|signed|attn|attention|please|"
             r"reply|send|sender|recipient|author|reviewer|maintainer|owner|manager|"
             r"customer|client|patient|employee|name|fwd|fw|re|copyright|quoting)\b)")
# what may open a line that lists a person with an address: a bullet, a changelog's
# "--", a commit trailer, a copyright statement and its years
_YEARS = r"\d{4}(?:[ \t]*[-–,][ \t]*\d{4})*,?"          # "2014-2020," "1999, 2005"
_LIST_PREFIX = (r"(?:(?:--|[-*•]|(?i:(?:signed-off|co-authored|reviewed|acked|tested|"
                r"reported|suggested)-by|authors?|maintainers?|uploaders?|copyright)[ \t]*:?)"
                rf"[ \t]*)?(?:(?:\([cC]\)|©)[ \t]*)?(?:{_YEARS}[ \t]+)?")
# "Copyright (c) 2014-2020, " before a credited name
_COPYRIGHT = rf"(?:(?i:copyright)(?:[ \t]+(?:\([cC]\)|©))?(?:[ \t]+{_YEARS})?[ \t]+)"
#: Words that make a display name a list, a service or a company rather than a person.
SENDER_WORDS = GENERIC_ORG_WORDS | {
    "news", "newsletter", "list", "lists", "users", "digest", "daily", "weekly", "mailer",
    "daemon", "notification", "notifications", "alerts", "service", "services", "info",
    "help", "desk", "billing", "office", "store", "shop", "group", "inc", "ltd", "llc",
    "the", "of", "and", "for"}


#: Words that make a display name a role, a product or an organization (beyond
#: :data:`SENDER_WORDS`), for names on no list ("Dmitry Shachnev" is a person, "Python
#: Software" is not).
ROLE_WORDS = frozenset({
    "software", "systems", "labs", "lab", "foundation", "community", "bugs", "bug",
    "tracker", "noreply", "no-reply", "automated", "automatic", "robot", "bot", "build",
    "builds", "daemon", "server", "webmaster", "postmaster", "hostmaster", "root",
    "administrator", "devel", "developers", "translators", "translation", "corp", "gmbh",
    "online", "premium", "web", "net", "tech", "technologies", "solutions", "media",
    "press", "magazine", "times", "post", "journal", "club", "society", "association",
    "university", "college", "school", "institute", "department", "dept", "committee",
    "council", "bank", "insurance", "airlines", "hotel", "hotels", "travel", "deals",
    "offers", "rewards", "members", "membership", "subscription", "subscriptions",
    "careers", "jobs", "recruiting", "operations", "engineering", "product", "products",
    "design", "studio", "studios", "games", "app", "apps", "cloud", "email", "webmail",
    "forum", "forums", "network", "networks", "radio", "tv", "channel",
    "announce", "announcements", "updates", "alert", "discussion", "talk", "user",
    "admins", "sysadmin", "maintainers", "packagers", "packaging", "debian", "ubuntu",
    "gnome", "kde", "gnu", "linux", "python", "perl", "mozilla", "apache", "spam"})


def _unlisted_person_name(value: str) -> bool:
    """Two to four name-shaped words ("Dmitry Shachnev", "Kurt D Schwehr", "Jean-loup
    Gailly"), none a common English word or a word of a role, service or company: a
    display name on no list of names that still reads as a person's."""
    words = value.split()
    shaped = [w for w in words if re.fullmatch(_NAME, w)]
    if not 2 <= len(words) <= 4 or len(shaped) < 2 or generic_addressee(value):
        return False
    if any(not re.fullmatch(_NAME, w) and not re.fullmatch(rf"[{UP}]\.?", w)
           for w in words):
        return False
    folded = [w.strip(".,").casefold() for w in words]
    common = common_words()
    return not any(w in SENDER_WORDS or w in ROLE_WORDS or w in common
                   or (w.endswith("s") and (w[:-1] in common or w[:-2] in common))
                   for w in folded)


#: The dictionary of the pipeline whose text the name rules are reading (set around each
#: analysis: Presidio's rule validators see the value alone).
_LEXICON: ContextVar[Any] = ContextVar("preflight_name_lexicon", default=None)


def _person_display_name(value: str) -> bool:
    """A display name that reads as a person's: initials and a surname, or a listed
    given name or surname, and no word of a mailing list, service or company. With the
    model's dictionary at hand, several words that read as a name count too
    (:func:`~preflight.core.pii.name_shapes.words_read_as_name`: "Mathias Bynens")."""
    words = [w.strip(".,").casefold() for w in value.split()]
    if generic_addressee(value) or any(w in SENDER_WORDS for w in words):
        return False
    if re.match(_INITIALS, value):
        return True
    if len(words) == 1:
        return words[0] in given_names()
    if any(w in known_names() for w in words):
        return True
    lexicon = _LEXICON.get()
    return lexicon is not None and words_read_as_name(value.split(), lexicon)


class _ReadsDictionary:
    """Mixin: the rules' validators see the analyzed pipeline's dictionary."""

    def analyze(self, text, entities, nlp_artifacts=None):  # noqa: D102 (Presidio API)
        token = _LEXICON.set(lexicon_of(nlp_artifacts))
        try:
            return super().analyze(text, entities, nlp_artifacts)
        finally:
            _LEXICON.reset(token)


def _listed_person(value: str) -> bool:
    """:func:`_person_display_name`, or a name on no list (:func:`_unlisted_person_name`):
    for layouts that list people (AUTHORS, THANKS, changelog sign-offs), not for a mail
    header, where shops and newsletters write their names the same way."""
    return _person_display_name(value) or _unlisted_person_name(value)


def _only_unlisted(value: str) -> bool:
    """A person's name on no list (the listed ones are the strict rule's)."""
    return not _person_display_name(value) and _unlisted_person_name(value)


def _credited_person(value: str) -> bool:
    """Two or more words with a listed name ("Per https://…" is a preposition; a link
    list's "Alta Vista http://…" is a site, so a name on no list does not count here)."""
    return len(value.split()) > 1 and _person_display_name(value)


class NameCueRecognizer(_ReadsDictionary, RuleRecognizer):
    """Capitalized words after a title (Mr., Dr.) or a salutation / name field, a name
    signing off (after "Regards," or alone on its line), and whoever wrote a quoted
    message; a qualification after the name (MD, PhD, Jr., III) is included."""

    evidence = Evidence.RULE

    RULES = (
        Rule("PERSON", re.compile(rf"\b{_TITLE}({_SIGNED})"), 0.8,
             "Capitalized words after a personal title (Mr., Ms., Dr.…)", group=1,
             validate=_not_role),
        Rule("PERSON", re.compile(
            rf"\b(?:Dear|Hi|Hello|Attn\.?|Attention:?)[ \t]+{_TITLE}?({_SIGNED})(?=[ \t]*[,:\n!])"),
            0.7, "Capitalized words after a salutation", group=1, validate=_not_generic,
            needs=cue("Dear", "Hi", "Hello", "Att")),
        Rule("PERSON", re.compile(
            rf"(?im:^[ \t]*(?:(?:full[ \t]+)?name|patient|employee|customer|client|"
            rf"account[ \t]+holder|cardholder|signed|contact)[ \t]*:[ \t]*)({_FIELD_NAME})[ \t]*(?=\r?\n|$)"),
            0.75, "A value in a name field", group=1, needs=cue(":")),
        Rule("PERSON", re.compile(
            rf"(?m:^[ \t]*({_NAME}(?:[ \t]+[A-Z]\.)?(?:[ \t]+{_NAME}){{1,2}})[ \t]*\r?\n"
            rf"[ \t]*(?=\d|(?:Flat|Apt|Apartment|Unit|Studio|Suite|PSC|USNS|USNV|USS|USCGC|"
            rf"Tel|Phone|Mobile|Email|E-mail)\b))"),
            0.7, "A line of capitalized words starting with a known given name, above an "
                 "address or phone line (a signature block)", group=1,
            validate=_known_given_name, needs=cue("\n")),
        Rule("PERSON", re.compile(
            rf"\b(?i:thanks[ \t]+to|thx(?:[ \t]+to)?|credits?[ \t]+to|(?:reported|suggested|"
            rf"contributed|(?:re)?written|authored|reviewed|tested|fixed|patch(?:es|ed)?|"
            rf"maintained|created|developed|updated|added|modified|ported|translated|"
            rf"designed|implemented|edited|documented|packaged|sponsored)[ \t]+by|"
            rf"courtesy[ \t]+of)(?:[ \t]+|[ \t]*\r?\n[ \t]*)({_FULL}|{_CJK_NAME})(?![\w'’-])"),
            0.7, "A name credited for work (thanks to…, reported by…, patch by…)", group=1,
            validate=_credited_name),
        Rule("PERSON", re.compile(
            rf"(?i:(?:best[ \t]+regards|kind[ \t]+regards|regards|sincerely|cheers|thanks|"
            rf"thank[ \t]+you|best)),?[ \t]*\r?\n[ \t]*{_TITLE}?"
            rf"({_NAME}(?:[ \t]+{_NAME}){{0,2}}{_SUFFIX}?)[ \t]*(?=\r?\n|$)"),
            0.7, "A name signing off a message", group=1, validate=_not_generic,
            needs=cue("\n")),
        # a given name on a line of its own, maybe after a dash: "Greg", "- Joe", and
        # "Michel" under "Regards," and a blank line (another paragraph)
        Rule("PERSON", re.compile(
            rf"(?m:^[ \t]*(?:(?:--?|[~–—])[ \t]*)?({_NAME})[ \t]*[.!]?[ \t]*\r?$)"),
            0.7, "A given name alone on its line (a message's sign-off)", group=1,
            validate=_given_name_alone),
        # the attribution of a quoted message: "Ralf wrote :", "On Tue, Kent Borg
        # <kb@…> wrote:", "--- Rohit wrote:", "Harig, wrote :", "Theo wrote in message …"
        Rule("PERSON", re.compile(
            rf"(?<![\w'’.@-])({_FULL}|[a-z][\w'’-]+)(?:[ \t]+<[^<>\s]+@[^<>\s]+>|"
            rf"[ \t]+\([^()\s]+@[^()\s]+\))?,?[ \t]+(?:wrote|writes)(?:[ \t]*:|[ \t]+in[ \t]+"
            rf"(?:message|article|news|<))"),
            0.75, "The name of whoever wrote a quoted message (… wrote:)", group=1,
            validate=_writer, needs=cue("wrote", "writes")),
    )


#: A line that lists people after its label: a memo's "To:", minutes' "Attendees:".
PEOPLE_LINE = re.compile(r"(?im)^[ \t]*(?:to|cc|bcc|attendees|present|participants|"
                         r"invitees|recipients|distribution|apologies|absent|attendance)"
                         r"[ \t]*:[ \t]*(?P<items>[^\n]*)")
_LIST_SEPARATOR = re.compile(r"[ \t]*(?:[,;]|\band\b|&)[ \t]*")
_LISTED_ITEM = re.compile(rf"[ \t]*{_TITLE}?(?P<name>{_FULL})[ \t\r]*")


def _listed_name(value: str, lexicon: Any = None) -> bool:
    """A list item that names a person: a lone census surname or given name
    ("Fernandez"), or a word on no dictionary ("Priya"), or words that read as a person's
    name (:func:`_person_display_name`)."""
    if " " not in value.strip():
        return ((value.casefold() in known_names() or name_evidence(value, lexicon))
                and not generic_addressee(value) and value.casefold() not in SENDER_WORDS)
    return _person_display_name(value)


class PeopleLineRecognizer(PersonRecognizer):
    """Each name in the list of a line that lists people ("To: All staff, Fernandez,
    Harris and Webb"; "Attendees: Dr. Jane Roe; Tom Baker"): an item of one to three
    capitalized words with a listed given name or surname, and no word of a group or a
    service ("All staff", "Finance team"). The model reads such a line as one firm, or
    tags some of the names only."""

    evidence = Evidence.RULE

    WHY = "A name in a list of people (To:, Cc:, Attendees:…)"
    ITEM = _LISTED_ITEM
    SEPARATOR = _LIST_SEPARATOR

    def lines(self, text: str) -> Iterator[tuple[int, int]]:
        """(start, end) of each list of items."""
        for line in PEOPLE_LINE.finditer(text):
            yield line.span("items")

    def valid(self, text: str, start: int, end: int, nlp_artifacts: Any) -> bool:
        """Whether the item ``text[start:end]`` names a person."""
        return _listed_name(text[start:end], lexicon_of(nlp_artifacts))

    def analyze(self, text, entities, nlp_artifacts=None):  # noqa: D102 (Presidio API)
        if entities and "PERSON" not in entities:
            return []
        token = _LEXICON.set(lexicon_of(nlp_artifacts))
        try:
            return self._items(text, nlp_artifacts)
        finally:
            _LEXICON.reset(token)

    def _items(self, text: str, nlp_artifacts: Any) -> list:
        out = []
        for start, line_end in self.lines(text):     # start: of the current item
            for sep in [*self.SEPARATOR.finditer(text, start, line_end), None]:
                end = sep.start() if sep else line_end
                m = self.ITEM.fullmatch(text, start, end)
                if m is not None and self.valid(text, *m.span("name"), nlp_artifacts):
                    out.append(make_result(self, "PERSON", *m.span("name"), 0.75, self.WHY))
                start = sep.end() if sep else end
        return out


# A copyright statement and the holders it names, up to an address or the line's end:
# "Copyright: © 1995-2003, 2016 Jean-loup Gailly, Mark Adler", "(c) 2009 Davide Libenzi";
# a Debian copyright file's continuation lines ("           2010, Jane Roe") follow it.
_MARK = r"(?:\([cC]\)|©)"
COPYRIGHT_LINE = re.compile(
    rf"(?im)^[ \t]*(?:[-*#;/!]+[ \t]*)?(?:copyright\b[ \t]*:?[ \t]*|{_MARK}[ \t]*)+"
    rf"(?:{_YEARS}[ \t]*)?(?:by[ \t]+)?(?P<items>[^\n<(]*)[^\n]*")
_HOLDERS_MORE = re.compile(
    rf"\n[ \t]+(?:{_MARK}[ \t]*)?{_YEARS}[ \t]*(?P<items>[^\n<(]*)[^\n]*")
# between two holders: a comma, "and", a slash, a sentence's end ("Julian Seward. All
# rights reserved"; not an initial's dot) or the next holder's years ("Ian Murdock
# 1996-2001 Kevin Dalley")
_HOLDER_SEPARATOR = re.compile(
    rf"[ \t]*(?:[,;]|(?<!\*)/(?!\*)|\band\b|&|(?<=[^\W\d_]{{2}})\.(?=[ \t])|"
    rf"(?<![\w-]){_YEARS}(?![\w-]))[ \t]*")
_HOLDER_ITEM = re.compile(rf"[ \t]*(?P<name>{_DISPLAY})(?:[ \t.]|\*/)*")   # "… */" ends a comment
#: A company's legal suffix or a word that closes a firm's name ("Intel Corporation").
COMPANY_SUFFIX = (r"(?:(?:Inc|Ltd|Corp|Co|Bros|L\.L\.C|S\.A|N\.V|B\.V)\.?|Incorporated|LLC|"
                  r"Limited|PLC|plc|Corporation|Company|Group|GmbH|AG|SA|SE|NV|BV|LLP|LP|"
                  r"Holdings|Partners|Associates|Foundation|Bank|Brothers|"
                  r"(?:and|&)[ \t]+(?:Sons|Co\.?))")
_FIRM_END = re.compile(rf"(?<![\w-]){COMPANY_SUFFIX}$")
_FIRM_AFTER = re.compile(rf",?[ \t]*{COMPANY_SUFFIX}(?![\w-])")


class CopyrightHolderRecognizer(PeopleLineRecognizer):
    """Each person a copyright statement names ("Copyright: © 2005-2022, Linus Torvalds
    and others"; "(c) 2003-2009, Davide Libenzi, Johannes E. Schindelin"), on the line
    and on a copyright file's indented continuation lines: a name that reads as a
    person's, listed or not (:func:`_listed_person`), and not made only of dictionary
    words. The model tags such holders as firms or places, or skips the hyphenated ones
    ("Jean-loup Gailly"); firms ("Google LLC", "Free Software Foundation") stay out."""

    evidence = Evidence.PERSON_PROOF

    WHY = "A person named as a copyright holder"
    ITEM = _HOLDER_ITEM
    SEPARATOR = _HOLDER_SEPARATOR

    def lines(self, text: str) -> Iterator[tuple[int, int]]:
        seen: set[tuple[int, int]] = set()    # a "© 2004 …" line is both kinds
        for line in COPYRIGHT_LINE.finditer(text):
            match: re.Match[str] | None = line
            while match is not None:
                if match.span("items") not in seen:
                    seen.add(match.span("items"))
                    yield match.span("items")
                match = _HOLDERS_MORE.match(text, match.end())

    def valid(self, text: str, start: int, end: int, nlp_artifacts: Any) -> bool:
        value = text[start:end]
        return (_listed_person(value) and not _FIRM_END.search(value)
                and not _FIRM_AFTER.match(text, end)          # "Oracle America, Inc."
                and not _phrase(value, nlp_artifacts))


class MailHeaderNameRecognizer(_ReadsDictionary, RuleRecognizer):
    """The display name of an address that reads as a person's
    (:func:`_person_display_name`): in a pasted e-mail header (From, To, Cc…), or written
    ``Name <address>`` anywhere else (changelogs, AUTHORS and copyright files, commit
    trailers), and a name that opens a line beside its web page (a credit line). Where a
    line lists people (not in a mail header), a name on no list counts too
    (:func:`_listed_person`)."""

    evidence = Evidence.PERSON_PROOF

    RULES = (
        # "Name <address>" in a header, and anywhere else: a Debian changelog's
        # " -- Lee Garrett <…>", an AUTHORS or copyright line, "Signed-off-by: Jane Roe <…>"
        Rule("PERSON", re.compile(
            rf"(?<![\w.@])\"?{_NO_LABEL}({_DISPLAY})\"?[ \t]*<{_ADDRESS}>"),
            0.75, "The display name of an e-mail address (Name <address>)", group=1,
            validate=_person_display_name, needs=cue("@")),
        # the same, a name on no list, where a line lists a person: an AUTHORS line, a
        # changelog's sign-off, a copyright holder, a commit trailer — never a header
        Rule("PERSON", re.compile(
            rf"(?m:^[ \t]*{_LIST_PREFIX}\"?{_NO_LABEL}({_DISPLAY})\"?[ \t]*<{_ADDRESS}>)"),
            0.75, "A name listed with its e-mail address (Name <address>)", group=1,
            validate=_only_unlisted, needs=cue("@")),
        # a table of people and addresses (THANKS, AUTHORS, a contact list):
        # "Andrew Burgess                      aab@cichlid.com"
        Rule("PERSON", re.compile(
            rf"(?m:^[ \t]*{_NO_LABEL}({_DISPLAY})(?:[ \t]{{2,}}|\t)<?{_ADDRESS}>?[ \t]*$)"),
            0.75, "A name in a column beside its e-mail address", group=1,
            validate=_listed_person, needs=cue("@")),
        # a credit line that names a person and links their page (AUTHORS, README
        # credits): "Geraldo Cockerhan - http://www.blendswap.com/…"
        Rule("PERSON", re.compile(
            rf"(?m:^[ \t]*(?:[-*•][ \t]+)?{_COPYRIGHT}?{_NO_LABEL}({_DISPLAY})"
            rf"(?:[ \t]+[-–—:][ \t]*|[ \t]*\([ \t]*|[ \t]+)<?(?:https?://|www\.))"),
            0.7, "A name at the start of a line beside a web address (a credit line)",
            group=1, validate=_credited_person, needs=cue("http://", "https://", "www.")),
        Rule("PERSON", re.compile(
            rf"{_HEADER}<?{_ADDRESS}>?[ \t]+\(\"?({_DISPLAY})\"?\)"),
            0.75, "The display name of an address in an e-mail header", group=1,
            validate=_person_display_name, needs=cue("@")),
    )

    def analyze(self, text, entities, nlp_artifacts=None):  # noqa: D102 (Presidio API)
        results = super().analyze(text, entities, nlp_artifacts)
        return [r for r in results if not _phrase(text[r.start:r.end], nlp_artifacts)]


def _phrase(value: str, nlp_artifacts: Any) -> bool:
    """A name on no list made only of dictionary words: a phrase ("Wild Cats"), not a
    person (False when the pipeline has no dictionary)."""
    lexicon = lexicon_of(nlp_artifacts)
    return (lexicon is not None and not _person_display_name(value)
            and dictionary_words_only(value, lexicon))


_EMAIL = re.compile(r"\b([A-Za-z][A-Za-z0-9._%+-]*)@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_DISPLAY_NAME_GAP = re.compile(r"[\"']?[ \t]*<")  # between a display name and its <address>
# one space or tab between the words: a wider gap is a table's column, not a name
_CAP_SEQ = re.compile(rf"\b{_NAME}(?:[ \t]{_NAME}){{0,2}}\b")


class EmailNameRecognizer(PersonRecognizer):
    """Capitalized words near an email address whose local part spells them
    ("Jane Roe <jane.roe@…>")."""

    evidence = Evidence.PERSON_PROOF

    WHY = "Capitalized words that match the user name of a nearby email address"

    def analyze(self, text, entities, nlp_artifacts=None):  # noqa: D102 (Presidio API)
        if entities and "PERSON" not in entities:
            return []
        out = []
        lexicon = lexicon_of(nlp_artifacts)
        for m in _EMAIL.finditer(text):
            local = m.group(1).lower()
            parts = {p for p in re.split(r"[._%+\-\d]+", local) if len(p) >= 3}
            if not parts:
                continue
            lo, hi = max(0, m.start() - 80), min(len(text), m.end() + 80)
            for c in _CAP_SEQ.finditer(text, lo, hi):
                if c.start() < m.end() and m.start() < c.end():
                    continue                 # "James.Lemley@…" itself is no display name
                start, end = _strip_salutation(text, c.start(), c.end())
                words = [w.lower() for w in text[start:end].split()]
                hits = [w for w in words if w in parts or (len(w) >= 4 and w in local)]
                display = _DISPLAY_NAME_GAP.fullmatch(text, end, m.start())
                if not hits and len(words) == 1 and display:
                    # "Tom <tomwhore@…>": a short given name written as the address's
                    # display name and spelling its start
                    w = words[0]
                    if local.startswith(w) and w in given_names():
                        hits = [w]
                # three words need two hits, or to be the address's display name and
                # begin or end with the hit ("Linus Nielsen Feltzing <linus@…>")
                if hits and (len(hits) >= 2 or len(words) <= 2
                             or (display and hits[0] in (words[0], words[-1]))) \
                        and not _department(words, lexicon):
                    out.append(make_result(self, "PERSON", start, end, 0.7, self.WHY))
        return out


def _department(words: list[str], lexicon: Any) -> bool:
    """Words (lower case) of a team or a service, not a person: every one an English word
    and none a census name ("Service Desk <servicedesk@…>", "Payroll Team <payroll@…>";
    "Mark Rose <mark.rose@…>" is a person)."""
    return lexicon is not None and all(
        dictionary_word(w, lexicon) and not name_evidence(w, lexicon) for w in words)


_SALUTATIONS = {"dear", "hi", "hello", "hey", "to", "from", "cc", "attn", "thanks", "regards",
                "best", "cheers", "sincerely", "yours"}


def _strip_salutation(text: str, start: int, end: int) -> tuple[int, int]:
    """Drop greeting words that a run of capitalized words picks up ("Dear Jane Roe")."""
    while True:
        m = re.match(r"(\w+)[,:]?\s+", text[start:end])
        if not m or m.group(1).lower() not in _SALUTATIONS:
            return start, end
        start += m.end()
