"""Quasi-identifiers left in the payload: values that name no one alone but narrow a
person down when several are read together (a date of birth, a town, an age, an employer,
a job title — Sweeney's "ZIP code, birth date, sex" uniquely identified 87 % of the US).

A detected value counts as *left* when the payload still carries it as written: no change
of the sanitization touches it, or every change that does only alters letter case
(d_X may turn "Bank" into "bank"). Generalized values ("2023" for "12 March 2023") are
changed, so they are not listed: the policy chose to let that coarser value through.

Job titles are not a detector type (no policy protects them), so they are found here, in
the payload itself, from a list of common titles (:data:`JOB_TITLES`). The list is short
and English only; a title it does not hold is not reported. Titles are looked for in the
*original* and kept when the payload still carries them as written, never in the payload
itself: a word d_X noise put there ("driver" for "manager") says nothing about the person.

A date counts only when it names a day (a day and a month: "12 March", "03/04/1981"); a
month or a year alone ("February", "2023") is the coarse value the default policy itself
generalizes full dates to, so it is not listed.

When the warning is due (:func:`together`), by k-anonymity reasoning (Samarati 2001;
Sweeney 2002): an attacker narrows the people a text may be about by each attribute it
states, and singles one out when the group left is about one. Sweeney (2000) found a
5-digit ZIP code, the sex and a full date of birth together unique for 87 % of the US
population, Golle (2006) 63 %; with the birth date coarsened to month and year the share
drops to a few per cent. So one attribute, or two, rarely single a person out, and three
do only when one of them divides the population finely. The rule: at least
:data:`WARN_AT_KINDS` distinct kinds, one of them *fine* (:data:`FINE_KINDS`: a day, an
age, a street address), or a street address with any other kind (an address alone
narrows to a household). *Broad* kinds (a place, an organization, a job title, a
nationality or religious group) leave groups of thousands on their own. Job titles are
broad by measurement too: on the TAB dev judgments (``preflight_eval.tab_quasi_warning``)
one listed title in nine was a mention the annotators marked as identifying; the rest
were the officials every case names ("the lawyer", "the judge"). A plural title ("the
drivers") names a group, never one person, and is not listed.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Any, Sequence

from preflight.core.sanitize.policy import PARTIAL_DATE, effective_type
from preflight.core.types import Category, SanitizedText, Span

#: Entity type (after :func:`effective_type`) → the kind of quasi-identifier it is.
#: RELATIVE_DATE ("Friday", "this week") names no calendar day and is left out.
QUASI_KINDS: dict[str, str] = {
    "DATE_TIME": "date", PARTIAL_DATE: "date", "DATE_OF_BIRTH": "date", "AGE": "age",
    "LOCATION": "place", "STREET_ADDRESS": "address", "ORGANIZATION": "organization",
    "NRP": "group", "JOB_TITLE": "job title",
}

#: How many distinct kinds remaining together trigger the warning ("together they may
#: point to one person"), one of them fine (see the module doc).
WARN_AT_KINDS = 3
#: Kinds that divide a population finely (thousands of values; see the module doc).
FINE_KINDS = frozenset({"date", "age", "address"})

_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|"
          r"aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_DAY = r"(?:[0-2]?\d|3[01])(?:st|nd|rd|th)?"
#: A date that names a day: "12 March 2023", "March 12", "12/03/2023", "2023-03-12".
_DAY_DATE = re.compile(
    rf"\b(?:{_DAY}\s+(?:of\s+)?{_MONTH}|{_MONTH}\s+{_DAY}\b|"
    r"\d{1,4}[./-]\d{1,2}[./-]\d{1,4})", re.IGNORECASE)

_SENIORITY = (r"(?:(?:senior|junior|lead|head|chief|principal|staff|assistant|associate|"
              r"deputy|regional|general|executive|registered|licensed|certified|"
              r"clinical|senior staff)\s+)?")
JOB_TITLES: tuple[str, ...] = (
    "accountant", "actor", "administrator", "analyst", "architect", "attorney", "auditor",
    "baker", "bank teller", "barista", "bookkeeper", "branch manager", "carpenter",
    "cashier", "ceo", "cfo", "chef", "chemist", "chief executive officer",
    "chief financial officer", "chief operating officer", "chief technology officer",
    "civil engineer", "cleaner", "clerk", "coach", "consultant", "coo", "counsellor",
    "counselor", "cto", "data scientist", "dentist", "designer", "developer", "director",
    "doctor", "driver", "economist", "editor", "electrician", "engineer", "farmer",
    "financial advisor", "firefighter", "general practitioner", "graphic designer",
    "hr manager", "journalist", "judge", "lawyer", "lecturer", "librarian", "mechanic",
    "midwife", "nurse", "nurse practitioner", "office manager", "paralegal", "paramedic",
    "pharmacist", "photographer", "physician", "physiotherapist", "pilot", "plumber",
    "police officer", "product manager", "professor", "programmer", "project manager",
    "psychiatrist", "psychologist", "receptionist", "researcher", "sales manager",
    "salesperson", "scientist", "secretary", "social worker", "software developer",
    "software engineer", "solicitor", "surgeon", "teacher", "technician", "therapist",
    "translator", "veterinarian", "vice president", "waiter", "waitress", "writer",
)
_TITLE_RE = re.compile(
    r"(?<![\w<])" + _SENIORITY + "(?:" + "|".join(
        re.escape(t).replace(r"\ ", r"\s+") for t in sorted(JOB_TITLES, key=len, reverse=True))
    + r")(?![\w>])", re.IGNORECASE)


@dataclass(frozen=True)
class QuasiIdentifier:
    """One quasi-identifier as the payload carries it (offsets into the payload)."""

    kind: str          # "date", "age", "place", "address", "organization", "group", "job title"
    type: str          # the entity type a policy looks up (AGE, PARTIAL_DATE, ...)
    value: str
    start: int
    end: int

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "type": self.type, "value": self.value,
                "start": self.start, "end": self.end}


def output_offset(sanitized: SanitizedText, pos: int) -> int:
    """Where source offset ``pos`` lies in the payload (inside a change: the same place
    when the change keeps the length, as a change of letter case does; else its start)."""
    changes = sanitized.changes
    ends = [c.source_end for c in changes]
    i = bisect.bisect_right(ends, pos) - 1      # the last change ending at or before pos
    shift = changes[i].end - changes[i].source_end if i >= 0 else 0
    nxt = changes[i + 1] if i + 1 < len(changes) else None
    if nxt is not None and nxt.source_start < pos:
        inside = pos - nxt.source_start
        same_length = nxt.end - nxt.start == nxt.source_end - nxt.source_start
        return nxt.start + inside if same_length else nxt.start
    return pos + shift


def _left_as_written(sanitized: SanitizedText, span: Span) -> bool:
    for c in sanitized.changes:
        if c.source_start < span.end and c.source_end > span.start \
                and c.replacement.casefold() != c.original.casefold():
            return False
    return True


def quasi_identifiers_left(original: str, sanitized: SanitizedText,
                           spans: Sequence[Span]) -> list[QuasiIdentifier]:
    """The quasi-identifiers the payload still carries, in payload order, each value once
    (case-insensitive) per kind: the original's detected values and job titles that the
    sanitization left as written, at their place in the payload."""
    found: list[QuasiIdentifier] = []
    ranges: list[tuple[Span, str, str]] = []
    for s in spans:
        etype = effective_type(s, original[s.start:s.end])
        kind = QUASI_KINDS.get(etype)
        if kind == "date" and not _DAY_DATE.search(original[s.start:s.end]):
            continue                           # a month or a year alone: coarse
        if kind is not None:
            ranges.append((s, kind, etype))
    for m in _TITLE_RE.finditer(original):
        if not any(s.start < m.end() and s.end > m.start() for s in spans):
            ranges.append((Span(m.start(), m.end(), "JOB_TITLE", Category.QUASI_IDENTIFIER,
                                1.0, "job titles", "quasi"), "job title", "JOB_TITLE"))
    for s, kind, etype in ranges:
        if not _left_as_written(sanitized, s):
            continue
        start, end = output_offset(sanitized, s.start), output_offset(sanitized, s.end)
        raw = sanitized.text[start:end]
        value = raw.strip()
        if value:
            start += len(raw) - len(raw.lstrip())
            found.append(QuasiIdentifier(kind, etype, value, start, start + len(value)))
    found.sort(key=lambda q: q.start)
    seen: set[tuple[str, str]] = set()
    out = []
    for q in found:
        key = (q.kind, " ".join(q.value.split()).casefold())
        if key not in seen:
            seen.add(key)
            out.append(q)
    return out


def together(items: Sequence[QuasiIdentifier]) -> bool:
    """Whether the kinds left, read together, plausibly single a person out: at least
    :data:`WARN_AT_KINDS` distinct kinds with one fine, or a street address with any other
    kind (see the module doc)."""
    kinds = {q.kind for q in items}
    if "address" in kinds and len(kinds) >= 2:
        return True
    return len(kinds) >= WARN_AT_KINDS and bool(kinds & FINE_KINDS)
