"""Person names whose parts the NER model splits: "Surname, Given" (reference lists,
forms, sign-up sheets, a register's "Smith, John filed…") and surnames with particles
("Ludwig van Beethoven" tagged as "Ludwig").

The NER model tags one half of "Doe, Jane" (or neither). When a person span is one half
of such a pair and the pair stands on its own (a line, a field value after a label, an
item of a ";"-separated list, after "by"), the span is widened to the whole name so the
other half does not leak; a pair of a census surname and a census given name that opens a
sentence or a line is a name on its own evidence, tagged or not.
"""

from __future__ import annotations

import dataclasses
import re

from preflight.core.pii.cleaning import LABEL_WORDS, DocTerms
from preflight.core.pii.name_shapes import NAME_WORD, PARTICLE, name_evidence
from preflight.core.types import Category, Evidence, Span

# A capitalized word in any cased script (Latin, Cyrillic, Greek...).
_CAP = r"[^\W\d_a-z](?:[^\W\d_]|['’-](?=[^\W\d_]))+"
_INITIAL = r"(?:[ \t]+[^\W\d_]\.)?"
_PAIR = re.compile(
    rf"(?m)(?:^|[;:(]|\bby\b|\band\b)[ \t]*(?P<surname>{_CAP}),[ \t]+(?P<given>{_CAP}{_INITIAL})"
    r"[ \t]*(?=$|[;)\n]|\.[ \t]*$|,[ \t]*(?:\d|$)|[ \t]+and[ \t])")
# the same pair opening a sentence or a line, followed by anything ("Smith, John filed");
# a line after one that ends in a word is the wrap of a sentence, not a new line
_OPENING_PAIR = re.compile(
    rf"(?:\A|(?<=[.!?;:(])[ \t]+|(?<![\w,])\n[ \t]*)(?P<surname>{_CAP}),[ \t]+"
    rf"(?P<given>{_CAP}{_INITIAL})(?![\w'’-])")
_PARTICLES_AFTER = re.compile(rf"(?:[ \t]+{PARTICLE})+[ \t]+{NAME_WORD}")
_PARTICLES_BEFORE = re.compile(rf"{NAME_WORD}(?:[ \t]+{PARTICLE})+[ \t]+$")
WHY_PAIR = "A census surname and given name written surname first"
PAIR_RULE = "SurnameGivenRule"


def covering_surname_given(text: str, spans: list[Span], terms: DocTerms | None = None
                           ) -> list[Span]:
    """``spans`` with person spans widened to a whole "Surname, Given" pair, and a
    person span for a census "Surname, Given" pair that opens a sentence or a line."""
    if "," not in text:
        return spans
    persons = [s for s in spans if s.type == "PERSON"]
    others = [(s.start, s.end) for s in spans if s.type != "PERSON"]
    places = [(s.start, s.end) for s in spans if s.type == "LOCATION"]
    widened: dict[int, Span] = {}
    added: list[Span] = []
    for m in _PAIR.finditer(text) if persons else ():
        s, e = m.start("surname"), m.end("given")
        if not _plain_pair(m, terms) or any(a < e and s < b for a, b in others):
            continue  # "Paris, Jane": one half is a place
        for i, span in enumerate(spans):
            if span.type == "PERSON" and s <= span.start and span.end <= e \
                    and (span.start, span.end) != (s, e):
                widened[i] = dataclasses.replace(
                    span, start=s, end=e,
                    why=span.why + "; widened to the whole name written surname first")
    lexicon = terms.lexicon if terms is not None else None
    spans = [widened.get(i, span) for i, span in enumerate(spans)]
    persons = [s for s in spans if s.type == "PERSON"]
    for m in _OPENING_PAIR.finditer(text):
        s, e = m.start("surname"), m.end("given")
        if not _plain_pair(m, terms) or any(a < e and s < b for a, b in places):
            continue
        given = m.group("given").split()[0]
        if not (name_evidence(m.group("surname"), lexicon, surname=True)
                and name_evidence(given, lexicon) and _listed(m.group("surname"), given)):
            continue
        if not any(p.start <= s and e <= p.end for p in persons):
            added.append(Span(s, e, "PERSON", Category.DIRECT_IDENTIFIER, 0.75, PAIR_RULE,
                              WHY_PAIR))
    return spans + added


def _plain_pair(m: re.Match[str], terms: DocTerms | None) -> bool:
    words = [m.group("surname"), *m.group("given").split()]
    if any(w.rstrip(".").lower() in LABEL_WORDS for w in words):
        return False
    # "However, Jane": a word the document writes in lower case
    return terms is None or not any(terms.used_in_lower_case(w) for w in words if len(w) > 2)


def _listed(surname: str, given: str) -> bool:
    from preflight.core.pii.person_evidence import given_names, surname_rank

    return surname_rank(surname) is not None and given.casefold() in given_names()


def complete_names(text: str, spans: list[Span], terms: DocTerms | None = None
                   ) -> list[Span]:
    """Person spans widened over a surname the model left out after particles ("Ludwig"
    → "Ludwig van Beethoven"), a given name before them ("Beethoven" → "Ludwig van
    Beethoven"), a given name the model tagged as a place right before the span, or a
    name in brackets right after it ("Anna Kowalska (née Nowak)"); and a name coordinated with a person's ("Priya and Rahul", "Rahul, Priya
    and Tom") that no detection covers, when its words read as a name."""
    from preflight.core.pii.person_evidence import common_words

    lexicon = terms.lexicon if terms is not None else None
    out = []
    for span in spans:
        if span.type == "PERSON":
            after = _PARTICLES_AFTER.match(text, span.end)
            before = _PARTICLES_BEFORE.search(text, max(0, span.start - 60), span.start)
            start, end = span.start, span.end
            # after particles a capitalized word is a surname, even one the dictionary
            # knows ("van Beethoven", "de Gaulle"): only a common word is not
            if after and after.group().split()[-1].casefold() not in common_words():
                end = after.end()
            if before and name_evidence(before.group().split()[0], lexicon):
                start = before.start()
            start = _tagged_given_name_before(text, spans, start, lexicon)
            bracket = _BRACKETED_NAME.match(text, end)
            if bracket and name_evidence(bracket.group("name").split()[-1], lexicon,
                                         surname=True):
                end = bracket.end()
            if (start, end) != (span.start, span.end):
                span = dataclasses.replace(span, start=start, end=end,
                                           why=span.why + "; widened over a surname particle")
        out.append(span)
    return out + _coordinated(text, out, lexicon)


# a maiden name, a former or a second name in brackets right after a name ("Anna Kowalska
# (née Nowak)", "Leyla Demir (Aksoy)")
_BRACKETED_NAME = re.compile(rf"[ \t]*\((?:(?:née|nee|born|geb\.|z[ \t]+domu)[ \t]+)?"
                             rf"(?P<name>{NAME_WORD}(?:[ \t]+{NAME_WORD})?)\)")
_WORD_BEFORE = re.compile(rf"(?<![\w'’.-])(?P<name>{NAME_WORD})[ \t]+$")
#: Types the model gives a given name it does not know ("Tamsin" before "Doreen Mason").
_MISTYPED = frozenset({"LOCATION", "ORGANIZATION", "NRP"})


def _tagged_given_name_before(text: str, spans: list[Span], start: int, lexicon) -> int:
    """Where a person's name starts once a word right before it that the model tagged as
    a place, an organization or a group, and that reads as a name, is taken in: the
    model splits "Tamsin Doreen Mason" into a place and a person, and a policy that
    keeps places would send the given name."""
    m = _WORD_BEFORE.search(text, max(0, start - 40), start)
    if m is None:
        return start
    a, b = m.span("name")
    tagged = any(s.start == a and s.end == b and s.type in _MISTYPED
                 and Evidence.STATISTICAL in s.evidence for s in spans)
    return a if tagged and name_evidence(m.group("name"), lexicon, surname=True) else start


_COORDINATED_BEFORE = re.compile(rf"(?<![\w'’-])(?P<name>{NAME_WORD})[ \t]*(?:,|,?[ \t]+(?:and|&|or))[ \t]+$")
_COORDINATED_AFTER = re.compile(rf"(?:[ \t]*,|,?[ \t]+(?:and|&|or))[ \t]+(?P<name>{NAME_WORD})(?![\w'’-])")
WHY_COORDINATED = "A name written beside a person's (\"… and …\") that reads as a name"
COORDINATED_RULE = "CoordinatedNameRule"


def _coordinated(text: str, spans: list[Span], lexicon) -> list[Span]:
    """One-word names joined to a detected person by "and", "&", "or" or a comma."""
    taken = [(s.start, s.end) for s in spans]
    found: list[Span] = []
    for span in spans:
        if span.type != "PERSON":
            continue
        for m in (_COORDINATED_BEFORE.search(text, max(0, span.start - 40), span.start),
                  _COORDINATED_AFTER.match(text, span.end)):
            if m is None:
                continue
            s, e = m.span("name")
            if any(a < e and s < b for a, b in taken) or not name_evidence(
                    m.group("name"), lexicon):
                continue
            taken.append((s, e))
            found.append(Span(s, e, "PERSON", Category.DIRECT_IDENTIFIER,
                              round(span.score * 0.9, 4), COORDINATED_RULE, WHY_COORDINATED))
    return found
