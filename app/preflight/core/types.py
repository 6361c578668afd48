"""Immutable value objects that flow through the pipeline.

All offsets are Python string indices (code points) into the exact input string.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class Category(str, Enum):
    """How sensitive a detected span is (drives default policy and highlight colour)."""

    DIRECT_IDENTIFIER = "direct_identifier"      # names, emails, phones, SSN, IBAN, cards
    QUASI_IDENTIFIER = "quasi_identifier"        # dates, places, organizations, ages
    CONFIDENTIAL_ATTRIBUTE = "confidential_attribute"  # health, medical, payment, asset
    SECRET = "secret"                            # API keys, passwords, tokens


@dataclass(frozen=True, slots=True)
class Span:
    """One detected piece of PII. ``text[start:end]`` is the value."""

    start: int
    end: int
    type: str            # entity type, e.g. "PERSON", "EMAIL_ADDRESS", "API_KEY"
    category: Category
    score: float
    recognizer: str
    why: str             # one line a user can read: what matched and why it counts

    def __post_init__(self) -> None:
        if not 0 <= self.start < self.end:
            raise ValueError(f"invalid span [{self.start}, {self.end})")

    def to_json(self) -> dict[str, Any]:
        return {
            "start": self.start,
            "end": self.end,
            "type": self.type,
            "category": self.category.value,
            "score": round(self.score, 4),
            "recognizer": self.recognizer,
            "why": self.why,
        }


@dataclass(frozen=True, slots=True)
class Change:
    """Output range ``[start, end)`` of the sanitized text replaces source range
    ``[source_start, source_end)`` of the original."""

    start: int
    end: int
    source_start: int
    source_end: int
    type: str            # entity type for operators, "TOKEN" for d_X
    original: str = ""
    replacement: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "start": self.start,
            "end": self.end,
            "source_start": self.source_start,
            "source_end": self.source_end,
            "type": self.type,
        }


@dataclass(frozen=True, slots=True)
class SanitizedText:
    """What a mechanism returns: the output text and how it maps back to the source.

    ``changes`` are sorted by ``start`` and do not overlap; text outside them is copied
    verbatim from the source. ``info`` holds mechanism-specific facts (ε, scope,
    tokens changed, the guarantee that holds...).
    """

    text: str
    method: str
    changes: tuple[Change, ...] = ()
    info: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "text": self.text,
            "method": self.method,
            "changes": [c.to_json() for c in self.changes],
        }
        out.update(self.info)
        return out


def apply_replacements(
    source: str, replacements: list[tuple[int, int, str, str]]
) -> tuple[str, tuple[Change, ...]]:
    """Build output text and change list from non-overlapping source replacements.

    ``replacements`` holds ``(source_start, source_end, new_text, type)``; they must be
    sorted and disjoint (resolve overlaps before calling).
    """
    parts: list[str] = []
    changes: list[Change] = []
    cursor = 0
    out_len = 0
    for s, e, new, typ in replacements:
        if s < cursor or e < s:
            raise ValueError("replacements must be sorted and non-overlapping")
        keep = source[cursor:s]
        parts.append(keep)
        out_len += len(keep)
        parts.append(new)
        changes.append(Change(out_len, out_len + len(new), s, e, typ, source[s:e], new))
        out_len += len(new)
        cursor = e
    parts.append(source[cursor:])
    return "".join(parts), tuple(changes)
