"""Immutable value objects that flow through the pipeline.

All offsets are Python string indices (code points) into the exact input string.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum, Flag, auto
from typing import Any, Mapping


class Category(str, Enum):
    """How sensitive a detected span is (drives default policy and highlight colour)."""

    DIRECT_IDENTIFIER = "direct_identifier"      # names, emails, phones, SSN, IBAN, cards
    QUASI_IDENTIFIER = "quasi_identifier"        # dates, places, organizations, ages
    CONFIDENTIAL_ATTRIBUTE = "confidential_attribute"  # health, medical, payment, asset
    SECRET = "secret"                            # API keys, passwords, tokens


class Evidence(Flag):
    """What a detection rests on, as the recognizer that made it declares (its class
    attribute ``evidence``, read by :func:`~preflight.core.pii.recognizers.base.
    evidence_of`). The detector's later passes treat a span by these flags, never by the
    recognizer's name. No flag (``RULE``): a pattern, checksum, word list or layout."""

    RULE = 0
    #: A statistical model's guess: cleaned against the document's words, loses a tie
    #: to a rule, and is no independent evidence when a request is scanned again.
    STATISTICAL = auto()
    #: Named from capitalized words: an organization, place, group or date loses a
    #: leading "the", and a generic reference or public body is dropped.
    GUESS = auto()
    #: A place named by the kind of institution after or before it ("Brixton Prison"):
    #: yields to a person it overlaps, outranks the model's person guess inside it.
    KIND_WORD = auto()
    #: Evidence for a person that outweighs the model's doubts (a name spelling its
    #: e-mail address, a mail header's display name, a copyright holder, census names).
    PERSON_PROOF = auto()
    #: A copy of another detection of the same text elsewhere in the document.
    COPY = auto()


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
    evidence: Evidence = Evidence.RULE   # what the detection rests on (its recognizer's)

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
class PolicySummary:
    """The policy that produced an output, as every output states it (actions and
    categories by their string values, so the core's types need not know the policy
    module)."""

    name: str
    title: str
    source: str = "preset"
    by_type: Mapping[str, str] = field(default_factory=dict)      # entity type -> action
    by_category: Mapping[str, str] = field(default_factory=dict)  # category -> action
    fallback: str = "placeholder"
    dx: str = "none"                 # where d_X noise goes: none | rest | all | spans
    raised: Mapping[str, tuple[str, str]] = field(default_factory=dict)  # (was, now)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "source": self.source,
            "by_type": dict(self.by_type),
            "by_category": dict(self.by_category),
            "fallback": self.fallback,
            "dx": self.dx,
            **({"raised_by_organization": {k: list(v) for k, v in self.raised.items()}}
               if self.raised else {}),
        }


@dataclass(frozen=True, slots=True)
class DxReport:
    """What the d_X mechanism reports about one output."""

    epsilon: float
    scope: str = "all"                # "all", "pii" (the spans) or "rest" (the hybrid)
    # None on an output rebuilt from a stored text (no mechanism run, no token list)
    rank_constant: float | None = None
    embedding: str | None = None
    tokens_changed: int | None = None
    tokens_total: int | None = None   # tokens in scope (noised)
    tokens_in_text: int | None = None
    rank_step: bool = True
    word_boundaries: bool = True

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "epsilon": self.epsilon, "scope": self.scope,
            "tokens_changed": self.tokens_changed, "tokens_total": self.tokens_total,
            "tokens_in_text": self.tokens_in_text, "rank_constant": self.rank_constant,
            "rank_step": self.rank_step, "word_boundaries": self.word_boundaries,
            "nearest_neighbour": "exact", "embedding": self.embedding}
        return {k: v for k, v in out.items() if v is not None}


@dataclass(frozen=True, slots=True)
class SanitizeReport:
    """What a mechanism reports about its output. A field is None when the mechanism
    that produced the output does not speak of it (``dx`` without d_X noise, ``policy``
    for a classic operator alone)."""

    guarantee: str | None = None      # one sentence: what holds for this output
    reversible: bool | None = None    # whether the answer can be restored from the vault
    replaced: int | None = None       # spans replaced
    kept: int | None = None           # detected spans the policy kept as written
    distinct_values: int | None = None
    actions: Mapping[str, int] | None = None   # action -> spans it was applied to
    # source ranges of the detected spans the policy kept on purpose
    kept_spans: tuple[tuple[int, int], ...] | None = None
    policy: PolicySummary | None = None
    dx: DxReport | None = None

    @property
    def epsilon(self) -> float | None:
        """The ε of the d_X noise in the output, None without any."""
        return self.dx.epsilon if self.dx is not None else None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.dx is not None:
            out.update(self.dx.to_json())
            out["guarantee"] = self.guarantee
        if self.policy is not None:
            out["policy"] = self.policy.to_json()
        for key, value in (("reversible", self.reversible), ("replaced", self.replaced),
                           ("kept", self.kept), ("distinct_values", self.distinct_values),
                           ("actions", None if self.actions is None else dict(self.actions)),
                           ("kept_spans", None if self.kept_spans is None
                            else [list(r) for r in self.kept_spans]),
                           ("guarantee", self.guarantee)):
            if value is not None and key not in out:
                out[key] = value
        return out


@dataclass(frozen=True, slots=True)
class SanitizedText:
    """What a mechanism returns: the output text and how it maps back to the source.

    ``changes`` are sorted by ``start`` and do not overlap; text outside them is copied
    verbatim from the source. ``report`` says what the mechanism did (ε, scope, tokens
    changed, the policy, the guarantee that holds...). The vault that restores an answer
    is not part of it: it travels beside the output (the mechanism's ``vault``).
    """

    text: str
    method: str
    changes: tuple[Change, ...] = ()
    report: SanitizeReport = field(default_factory=SanitizeReport)

    @property
    def epsilon(self) -> float | None:
        """The ε of the d_X noise in the text, None without any."""
        return self.report.epsilon

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "text": self.text,
            "method": self.method,
            "changes": [c.to_json() for c in self.changes],
        }
        out.update(self.report.to_json())
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
