"""Quasi-identifiers left in the payload: values that name no one alone but narrow a
person down when several are read together (a date of birth, a town, an age, an employer,
a job title — Sweeney's "ZIP code, birth date, sex" uniquely identified 87 % of the US).

A detected value counts as *left* when the payload still carries it as written: no change
of the sanitization touches it, or every change that does only alters letter case
(d_X may turn "Bank" into "bank"). Generalized values ("2023" for "12 March 2023") are
changed, so they are not listed: the policy chose to let that coarser value through.

Job titles are not a detector type (no policy protects them), so they are found here, in
the payload itself, from a list of common titles (:data:`JOB_TITLES`). The list is short
and English only; a title it does not hold is not reported.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Any, Sequence

from preflight.core.sanitize.policy import PARTIAL_DATE, effective_type
from preflight.core.types import SanitizedText, Span

#: Entity type (after :func:`effective_type`) → the kind of quasi-identifier it is.
#: RELATIVE_DATE ("Friday", "this week") names no calendar day and is left out.
QUASI_KINDS: dict[str, str] = {
    "DATE_TIME": "date", PARTIAL_DATE: "date", "DATE_OF_BIRTH": "date", "AGE": "age",
    "LOCATION": "place", "STREET_ADDRESS": "address", "ORGANIZATION": "organization",
    "NRP": "group", "JOB_TITLE": "job title",
}

#: How many distinct kinds remaining together trigger the warning ("together they may
#: point to one person"): one kind alone (two dates) rarely does.
WARN_AT_KINDS = 2

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
    + r")s?(?![\w>])", re.IGNORECASE)


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
    (case-insensitive) per kind."""
    found: list[QuasiIdentifier] = []
    for s in spans:
        etype = effective_type(s, original[s.start:s.end])
        kind = QUASI_KINDS.get(etype)
        if kind is None or not _left_as_written(sanitized, s):
            continue
        start, end = output_offset(sanitized, s.start), output_offset(sanitized, s.end)
        raw = sanitized.text[start:end]
        value = raw.strip()
        if value:
            start += len(raw) - len(raw.lstrip())
            found.append(QuasiIdentifier(kind, etype, value, start, start + len(value)))
    taken = [(q.start, q.end) for q in found]
    for m in _TITLE_RE.finditer(sanitized.text):
        if not any(a < m.end() and b > m.start() for a, b in taken):
            found.append(QuasiIdentifier("job title", "JOB_TITLE", m.group(0),
                                         m.start(), m.end()))
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
    """Whether enough different kinds remain that, read together, they may single a person
    out (see :data:`WARN_AT_KINDS`)."""
    return len({q.kind for q in items}) >= WARN_AT_KINDS
