"""Organizations the small NER model misses: names ending in a legal/company suffix
("Reid LLC", "Tucker and Sons"), partnership-style names ("Parks, Miller and Rosales"),
and named places of an institution — a prison, hospital, school, police station or court
named after its town or street ("Strangeways Prison", "Bilston Street police station",
"the Harlow court", "HM Prison Brixton"): where a person was held, treated, taught or tried."""

from __future__ import annotations

import re

from preflight.core.pii.name_shapes import CASED_NAME_WORD, name_evidence
from preflight.core.pii.person_evidence import lexicon_of
from preflight.core.pii.recognizers.base import Rule, RuleRecognizer, make_result
from preflight.core.pii.recognizers.names import COMPANY_SUFFIX as _SUFFIX, PEOPLE_LINE
from preflight.core.types import Evidence

_FIRST_NOT = r"(?!(?:The|This|That|These|Those|Our|We|A|An|In|For|By|With|At|On|Of|And)\b)"
_WORD = r"[A-Z][\w&'’.-]*"
_SURNAME = CASED_NAME_WORD


#: Kinds of institution whose premises carry a name ("Brixton Prison").
FACILITY_NOUNS = (
    "prison", "jail", "gaol", "penitentiary", "detention centre", "detention center",
    "hospital", "infirmary", "clinic", "hospice", "care home", "nursing home", "school",
    "primary school", "high school", "college", "university", "academy", "museum",
    "library", "police station", "police force", "police", "fire station", "court",
    "magistrates' court", "magistrates’ court", "barracks", "airport", "station",
)
_FACILITY = "|".join(re.escape(n).replace(r"\ ", r"[ \t]+")
                     for n in sorted(FACILITY_NOUNS, key=len, reverse=True))
# a word of a facility's name: no sentence end inside ("Instance. The Kahta court")
_FACILITY_WORD = rf"{_FIRST_NOT}(?:St\.|[A-Z](?:[\w&'’-]|\.(?=\w))*)"
_FACILITY_RULE = Rule("ORGANIZATION", re.compile(
    rf"(?<![\w-])(?:{_FACILITY_WORD}[ \t]+){{0,2}}{_FACILITY_WORD}[ \t]+(?i:{_FACILITY})"
    r"(?![\w-])"),
    0.6, "Capitalized words naming a prison, hospital, school, police station or court")

# a facility written before its name ("HM Prison Brixton", "Hospital Clínic"): the head
# capitalized, after it one or two words that read as a name
HEAD_FIRST = ("Prison", "Jail", "Gaol", "Penitentiary", "Hospital", "Infirmary", "Clinic",
              "Hospice", "School", "College", "University", "Academy", "Museum", "Barracks",
              "HMP", "HMYOI")
# heads never written without a name after them (His Majesty's Prison, Young Offender
# Institution: "HMP Verne"): the word after one is a name whatever it is
NAMED_ONLY_HEADS = ("HMP", "HMYOI")
_NAME = r"[A-Z][\w'’-]*"
_HEAD_FIRST_RE = re.compile(
    rf"(?<![\w-])(?:[A-Z]{{2,4}}[ \t]+)?(?:{'|'.join(HEAD_FIRST)})"
    rf"(?P<name>[ \t]+{_NAME}(?:[ \t]+{_NAME})?)(?![\w-])")
_WHY_HEAD_FIRST = "A prison, hospital or school written before its name"

_PARTNERSHIP = Rule("ORGANIZATION", re.compile(
    rf"(?<![\w-]){_FIRST_NOT}{_SURNAME},[ \t]+{_SURNAME},?[ \t]+(?:and|&)[ \t]+{_SURNAME}"
    r"(?![\w-])"), 0.55, "A partnership-style firm name (Name, Name and Name)")


class OrganizationCueRecognizer(RuleRecognizer):
    """Capitalized names closed by a company suffix, and "A, B and C" firm names (not on
    a line that lists people: a memo's "To:", minutes' "Attendees:")."""

    evidence = Evidence.RULE

    RULES = (
        Rule("ORGANIZATION", re.compile(
            rf"(?<![\w-]){_FIRST_NOT}(?:{_WORD}[ \t]+){{0,3}}?{_WORD},?[ \t]+{_SUFFIX}(?![\w-])"),
            0.75, "Capitalized words ending in a company suffix (Inc, LLC, Ltd, Group…)"),
        _PARTNERSHIP,
    )

    def apply_rule(self, rule: Rule, text: str) -> list:  # noqa: D102
        results = super().apply_rule(rule, text)
        if rule is not _PARTNERSHIP:
            return results
        # on a line that lists people, "To: All staff, Fernandez, Harris and Webb" names
        # three people, not the firm "Fernandez, Harris and Webb"
        return [r for r in results
                if not PEOPLE_LINE.match(text, text.rfind("\n", 0, r.start) + 1)]


class FacilityRecognizer(RuleRecognizer):
    """A prison, hospital, school, police station or court named after its town, street
    or patron ("Strangeways Prison", "Bilston Street police station"). The name's words
    are a guess from their capitals: the detector checks them as it checks the NER
    model's (:mod:`~preflight.core.pii.generic_refs`), so "the Supreme Court" or
    "Yesterday hospital …" is no facility."""

    evidence = Evidence.GUESS | Evidence.KIND_WORD

    RULES = (_FACILITY_RULE,)

    def analyze(self, text, entities, nlp_artifacts=None):  # noqa: D102 (Presidio API)
        results = super().analyze(text, entities, nlp_artifacts)
        if entities and "ORGANIZATION" not in entities:
            return results
        lexicon = lexicon_of(nlp_artifacts)
        for m in _HEAD_FIRST_RE.finditer(text):
            words = m.group("name").split()
            # "Hospital Trust", "School Board": the words after the head are no name
            if m.group().startswith(NAMED_ONLY_HEADS) or all(
                    name_evidence(w, lexicon, surname=True) for w in words):
                results.append(make_result(self, "ORGANIZATION", m.start(), m.end(), 0.6,
                                           _WHY_HEAD_FIRST))
        return results
