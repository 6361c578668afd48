"""How people's names are written, as regex pieces and word tests shared by the name
recognizers and the second look at the NER model's spans.

Titles and honorifics (English, German, French, Spanish, Italian, Polish, Dutch and the
ranks and offices written before a surname), surname particles ("van der", "de la",
"bin", "Ó"), initials ("C.A.", "L.-E."), and name words in any cased script with their
hyphens and apostrophes ("Kierkegaard-Hansen", "O’Reilly", "Yılmaz", "Петров"). The
evidence that a capitalized word is a name rather than an English word comes from the
census lists of :mod:`~preflight.core.pii.person_evidence` and the model's dictionary.
"""

from __future__ import annotations

import re
from collections.abc import Container

#: Capitals and small letters of Cyrillic and Greek (Russian, Ukrainian, Belarusian,
#: Serbian, Greek), for character classes.
CYRILLIC_GREEK_UP = "А-ЯЁЄІЇЎΑ-ΩΆΈΉΊΌΎΏ"
CYRILLIC_GREEK_LO = "а-яёєіїўα-ωάέήίόύώςϊϋΐΰ"
#: Capitals and small letters of the cased scripts names are written in (Latin with
#: accents, pinyin tones, Vietnamese, Cyrillic, Greek), for character classes.
UP = "A-ZÀ-ÖØ-ÞĀĂĄĆĈĊČĎĐĒĖĘĚĜĞĠĢĤĪĮİĶĹĻĽŁŃŅŇŌŐŒŔŘŚŜŞŠŢŤŪŮŰŲŹŻŽ" + CYRILLIC_GREEK_UP
LO = "a-zß-öø-ÿā-žǎǐǒǔ\u1e00-\u1effı" + CYRILLIC_GREEK_LO

#: Honorifics written before a name: any capitalized word after one is a name unless it
#: is a common word or an office ("Mr Bean", not "Mr President"). A dot after an
#: abbreviation is optional; "M." (Monsieur) needs its dot, or every middle initial
#: would be a title.
HONORIFICS = (
    "Mr", "Mrs", "Ms", "Miss", "Mx", "Mister", "Madam", "Madame", "Dr", "Doctor", "Prof",
    "Professor", "Sir", "Dame", "Herr", "Frau", "Fräulein", "Mme", "Mlle", "Monsieur",
    "Mademoiselle", "Sr", "Sra", "Srta", "Señor", "Señora", "Señorita", "Sig", "Sig.ra",
    "Sig.na", "Signor", "Signora", "Dott", "Dott.ssa", "Avv", "Ing", "Pan", "Pani", "Heer",
    "Mevrouw",
)
#: Offices, ranks and callings written before a surname: the word after one must read as
#: a name ("Judge Zupančič", not "Judge Business School").
OFFICES = (
    "Lord", "Lady", "Rev", "Reverend", "Fr", "Father", "Master", "Dom", "Dona",
    "Judge", "Justice", "Inspector", "Officer", "Detective", "Constable", "Sergeant", "Sgt",
    "Capt", "Captain", "Lieutenant", "Lt", "Col", "Colonel", "Maj", "Major", "Gen",
    "General", "Adm", "Admiral", "Cmdr", "Commander", "Sen", "Senator", "Rep",
    "Representative", "Gov", "Governor", "Mayor", "Councillor", "Councilor", "President",
    "Minister", "Ambassador", "Chancellor", "Rabbi", "Imam", "Pastor", "Bishop",
    "Cardinal", "Sister", "Brother", "Nurse", "Coach", "Attorney", "Counsel", "Agent",
)
TITLE_WORDS = HONORIFICS + OFFICES
_TITLE_ALTS = "|".join(sorted((re.escape(t) for t in TITLE_WORDS), key=len, reverse=True))
#: One or more titles ("Mr Justice", "Prof. Dr.") and the space after them; "M."
#: (Monsieur) only alone: after another title it is an initial ("Mr M. Russell").
TITLE = rf"(?:(?:(?<![\w.])(?:{_TITLE_ALTS})\.?[ \t]+)+|(?<![\w.])M\.[ \t]+)"
TITLE_BEFORE = re.compile(rf"{TITLE}$")
#: Lower-case forms of the titles, to leave them out of a name's words.
TITLE_SET = frozenset(t.casefold() for t in TITLE_WORDS) | {"m"}
HONORIFIC_SET = frozenset(t.casefold() for t in HONORIFICS) | {"m"}

#: Surname particles written in lower case between the given name and the surname (or
#: capitalized at a surname's start: "Van Dyke", "De Luca", "Ó Briain", "Al Saud").
PARTICLES = ("van", "von", "der", "den", "de", "del", "della", "delle", "dei", "degli",
             "di", "da", "das", "do", "dos", "du", "des", "le", "la", "lo", "ter", "ten",
             "te", "op", "zu", "zum", "zur", "af", "av", "bin", "bint", "ibn", "ben", "bat",
             "al", "el", "abu", "ap", "ó", "ní", "nic", "mac", "mc", "ua", "y", "e", "i")
PARTICLE = rf"(?:(?i:{'|'.join(sorted(PARTICLES, key=len, reverse=True))}))"
#: Initials: "E.", "C.A.", "H.W.", "L.-E.".
INITIALS = rf"(?:[{UP}]\.(?:-?[{UP}]\.)*)"
# The one grammar of a name word, for every rule that reads names: "Kowalski",
# "O’Reilly", "McDonald", "LaMont", "Williams-Johnston", "Jean-loup", "al-Saud",
# "d’Estaing", "Петров", or in capitals ("DUPONT", "O’NEILL").
_CASED = rf"(?:Mc|Mac|La|Le|De|Di|Da|Du|Van|Von)?[{UP}][{LO}]+(?:['’][{UP}]?[{LO}]+)*"
_CAPS = rf"[{UP}]{{2,}}(?:['’][{UP}]+)*"
_PREFIX = r"(?:(?i:al|el|ad|ar|as|at|az|an|ash|bin|ben|ibn|abu|d|l|o|mc|mac)['’-])?"
#: A name word written with a capital and small letters, as running text writes a name
#: (what the rules that read capitals take: an all-capitals word there is an acronym).
CASED_NAME_WORD = rf"(?:{_PREFIX}{_CASED}(?:-(?:{_CASED}|[{LO}]+))*)"
#: A name word in either case, capitals too (a name the cue or title before it vouches
#: for: "Mr DUPONT").
NAME_WORD = rf"(?:{_PREFIX}(?:{_CASED}|{_CAPS})(?:-(?:{_CASED}|{_CAPS}|[{LO}]+))*)"
#: A name after its title or cue: initials or a name word, then up to three more name
#: words, initials, or particles before a name word ("E. Kanar", "W. Ganshof van der
#: Meersch", "Jan Kowalski", "Ó Briain").
NAME_BODY = (rf"(?:{INITIALS}[ \t]*)?(?:{PARTICLE}[ \t]+)*{NAME_WORD}"
             rf"(?:[ \t]+(?:{INITIALS}[ \t]*)?(?:{PARTICLE}[ \t]+){{0,3}}{NAME_WORD}){{0,3}}")
NAME_WORD_RE = re.compile(NAME_WORD)

# Words that follow a title as a role, not a name ("Mr President", "Madam Chair").
ROLE_AFTER_TITLE = frozenset({
    "president", "speaker", "chairman", "chair", "chairwoman", "chairperson", "secretary",
    "deputy", "vice", "acting", "minister", "prime", "general", "attorney", "justice",
    "mayor", "governor", "ambassador", "commissioner", "registrar", "clerk", "editor",
    "producer", "director", "manager", "right", "honourable", "honorable", "hon",
    "chancellor", "chief", "inspector", "officer", "judge", "councillor", "mr", "mrs",
})


def name_evidence(word: str, lexicon: Container[str] | None, *, surname: bool = False) -> bool:
    """``word`` reads as a name: a census given name (not with ``surname``) or a census
    surname (the list keeps words such as "Brown" or "Law" only among the frequent
    surnames: ``resources/names/``), a double-barrelled name of listed names, or a word
    of no English dictionary that is no common word either."""
    from preflight.core.pii.person_evidence import (
        common_words, given_names, known_names, surname_rank,
    )

    low = word.strip(".,").casefold()
    if low in ROLE_AFTER_TITLE:
        return False
    parts = [p for p in low.split("-") if p]
    if len(parts) > 1 and all(p in known_names() for p in parts):
        return True       # a double-barrelled name of listed names ("Williams-Johnston")
    if not dictionary_word(low, lexicon):
        if low in known_names():
            return True
        return lexicon is not None and low not in common_words()
    if not surname and low in given_names():
        return True
    return surname_rank(low) is not None


def words_read_as_name(words: list[str], lexicon: Container[str] | None) -> bool:
    """Two or more words that read as a person's name: one of them with name evidence
    and none a common word ("Sven Joachim", "Mathias Bynens"; not "Wild Cats",
    "Investor Relations"). The dictionary knows many famous names ("Joachim",
    "Beethoven"), so a dictionary word alone does not count against a name."""
    from preflight.core.pii.person_evidence import common_words

    parts = [w for w in words if not re.fullmatch(rf"[{UP}]\.?", w)]
    common = common_words()
    return (len(parts) > 1 and not any(w.casefold() in common for w in parts)
            and any(name_evidence(w, lexicon) for w in parts))


def honorific_name(word: str) -> bool:
    """After an honorific, any capitalized word is a name but a common word or an
    office ("Mr Bean", "Ms Green"; not "Mr President", "Dear Sir, Thanks")."""
    from preflight.core.pii.person_evidence import common_words

    low = word.strip(".,").casefold()
    return low not in ROLE_AFTER_TITLE and low not in common_words()


def dictionary_word(low: str, lexicon: Container[str] | None) -> bool:
    """An English word (or the plural of one); a hyphenated word only when every part is
    one ("Kierkegaard-Hansen", "Al-Saud" are not)."""
    if lexicon is None:
        return False
    return all(part in lexicon or (part.endswith("s") and part[:-1] in lexicon)
               for part in low.split("-") if part)


def name_words(value: str) -> list[str]:
    """The words of a name without titles, particles and initials."""
    words = []
    for w in re.split(r"[ \t\n]+", value.strip()):
        low = w.rstrip(".").casefold()
        if not w or low in TITLE_SET or low in PARTICLES or re.fullmatch(INITIALS, w):
            continue
        words.append(w)
    return words
