"""A small rule engine on top of Presidio's ``EntityRecognizer``.

Each :class:`Rule` is a regex (optionally a capture group), an optional validator
(checksum, entropy...), and optional context words that raise the score or are required.
Results carry their own one-line "why" in ``recognition_metadata["preflight_why"]``.

Every recognizer class declares what its findings rest on in its own body
(``evidence = Evidence.…``, :class:`~preflight.core.types.Evidence`), not inherited:
:func:`evidence_of` refuses a class of ours that does not, so a new recognizer cannot
silently borrow another's treatment.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from presidio_analyzer import EntityRecognizer, RecognizerResult

from preflight.core.pii.entities import WHY_KEY
from preflight.core.types import Evidence

__all__ = ["DIGIT_PATTERN_RECOGNIZERS", "WHY_KEY", "Evidence", "Rule", "RuleRecognizer",
           "context_regex", "cue", "evidence_of", "has_context", "make_result",
           "skip_without_digits"]

#: What the NER model's recognizer (Presidio's ``SpacyRecognizer``) finds: guesses.
NER_EVIDENCE = Evidence.STATISTICAL | Evidence.GUESS


def evidence_of(recognizer: EntityRecognizer) -> Evidence:
    """The evidence ``recognizer``'s class declares in its own body. Presidio's own
    classes are not ours to declare on: its NER recognizer guesses (:data:`NER_EVIDENCE`),
    the others match patterns with checksums or context. Raises ``TypeError`` for any
    other class that declares nothing (a programming error, found when the analyzer is
    built)."""
    cls = type(recognizer)
    declared = vars(cls).get("evidence")
    if isinstance(declared, Evidence):
        return declared
    if cls.__module__.startswith("presidio_analyzer."):
        from presidio_analyzer.predefined_recognizers import SpacyRecognizer

        return NER_EVIDENCE if isinstance(recognizer, SpacyRecognizer) else Evidence.RULE
    raise TypeError(f"{cls.__name__} declares no evidence: set `evidence = Evidence.…` "
                    "in its class body (see preflight.core.types.Evidence)")


#: Presidio's own recognizers each of whose patterns holds a digit (card, bank, licence,
#: ITIN, passport and social security numbers, dates, IBANs, DEA numbers, bitcoin
#: addresses) and its phone number parser: a text without a digit gives them nothing to
#: find. Checked on real text with its digits taken out by
#: ``tests/core/pii/test_rule_prefilters.py``.
DIGIT_PATTERN_RECOGNIZERS = frozenset({
    "CreditCardRecognizer", "UsBankRecognizer", "UsLicenseRecognizer", "UsItinRecognizer",
    "UsPassportRecognizer", "UsSsnRecognizer", "DateRecognizer", "IbanRecognizer",
    "MedicalLicenseRecognizer", "CryptoRecognizer", "PhoneRecognizer"})
_DIGIT = re.compile(r"\d")


def skip_without_digits(recognizer: EntityRecognizer) -> None:
    """Have ``recognizer`` (one of :data:`DIGIT_PATTERN_RECOGNIZERS`) answer a text that
    holds no digit at once, without trying its patterns one by one (most windows of
    prose and mail hold none; each pattern costs a scan and Presidio's bookkeeping)."""
    own = recognizer.analyze

    def analyze(text, entities, nlp_artifacts=None, **kwargs):
        if _DIGIT.search(text) is None:
            return []
        return own(text=text, entities=entities, nlp_artifacts=nlp_artifacts, **kwargs)

    recognizer.analyze = analyze


def context_regex(words: Iterable[str]) -> re.Pattern[str]:
    """Case-insensitive whole-word alternation of context words/phrases."""
    alts = sorted({re.escape(w).replace(r"\ ", r"[\s_-]*") for w in words}, key=len, reverse=True)
    return re.compile(r"(?<![A-Za-z])(?:" + "|".join(alts) + r")(?![A-Za-z])", re.IGNORECASE)


def cue(*literals: str, ignore_case: bool = False) -> re.Pattern[str]:
    """A :attr:`Rule.needs` pattern: any of ``literals`` (case-insensitive with
    ``ignore_case``, for a rule whose own pattern ignores case)."""
    return re.compile("|".join(map(re.escape, literals)), re.IGNORECASE if ignore_case else 0)


@dataclass(frozen=True)
class Rule:
    """One pattern with its score and explanation.

    ``context`` words are searched ``window`` characters before (and ``after`` characters
    after) the match: when found the score becomes ``context_score`` and the why gets
    ``context_why`` appended; with ``require_context`` a match without context is dropped.

    ``needs`` is a cheap pattern that every match of ``pattern`` contains (a literal the
    pattern cannot match without: "@" in a display name's address, "wrote" in a quote's
    attribution): a text without it is not scanned at all. Most texts hold none of a
    rule's rare literals, and scanning for a literal costs a small part of trying the
    full pattern at every word (``tests/core/pii/test_rule_prefilters.py`` checks each
    ``needs`` on real text).
    """

    entity: str
    pattern: re.Pattern[str]
    score: float
    why: str
    group: int | str = 0
    validate: Callable[[str], bool] | None = None
    context: re.Pattern[str] | None = None
    context_score: float | None = None
    require_context: bool = False
    window: int = 50
    after: int = 0
    context_why: str = "; a related word nearby raised the confidence"
    needs: re.Pattern[str] | None = None


def make_result(recognizer: EntityRecognizer, entity: str, start: int, end: int,
                score: float, why: str) -> RecognizerResult:
    return RecognizerResult(
        entity_type=entity,
        start=start,
        end=end,
        score=score,
        recognition_metadata={
            RecognizerResult.RECOGNIZER_NAME_KEY: recognizer.name,
            RecognizerResult.RECOGNIZER_IDENTIFIER_KEY: recognizer.id,
            WHY_KEY: why,
        },
    )


def has_context(text: str, start: int, end: int, pattern: re.Pattern[str],
                window: int, after: int = 0) -> bool:
    if pattern.search(text, max(0, start - window), start):
        return True
    return bool(after) and bool(pattern.search(text, end, min(len(text), end + after)))


class RuleRecognizer(EntityRecognizer):
    """Runs a list of :class:`Rule` objects; subclasses set ``RULES``."""

    RULES: Sequence[Rule] = ()

    def __init__(self, rules: Sequence[Rule] | None = None, name: str | None = None) -> None:
        self.rules = tuple(rules if rules is not None else self.RULES)
        self._types = frozenset(r.entity for r in self.rules)
        super().__init__(
            supported_entities=sorted({r.entity for r in self.rules}) or ["NONE"],
            name=name,
            supported_language="en",
        )

    def load(self) -> None:  # patterns are compiled at import time
        pass

    def analyze(self, text, entities, nlp_artifacts=None):  # noqa: D102 (Presidio API)
        results: list[RecognizerResult] = []
        # the few types of these rules that were not asked for (Presidio asks for all)
        skip = {e for e in self._types if e not in entities} if entities else ()
        for rule in self.rules:
            if rule.entity not in skip:
                results.extend(self.apply_rule(rule, text))
        return results

    def apply_rule(self, rule: Rule, text: str) -> list[RecognizerResult]:
        if rule.needs is not None and rule.needs.search(text) is None:
            return []
        out = []
        for m in rule.pattern.finditer(text):
            start, end = m.span(rule.group)
            if start < 0 or start == end:
                continue
            if rule.validate is not None and not rule.validate(text[start:end]):
                continue
            score, why = rule.score, rule.why
            if rule.context is not None:
                if has_context(text, start, end, rule.context, rule.window, rule.after):
                    score = rule.context_score if rule.context_score is not None else score
                    why += rule.context_why
                elif rule.require_context:
                    continue
            out.append(make_result(self, rule.entity, start, end, score, why))
        return out
