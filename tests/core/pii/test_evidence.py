"""Recognizer behaviour is declared on the recognizer (``evidence = Evidence.…``) and
travels on each span: the detector's passes ask the span, never a list of names."""

from __future__ import annotations

import pickle
import re

import pytest

from preflight.core.config import DetectionSettings
from preflight.core.pii.detector import PiiDetector, build_analyzer
from preflight.core.pii.recognizers.base import evidence_of, make_result
from preflight.core.pii.recognizers.names import PersonRecognizer
from preflight.core.types import Category, Evidence, Span


@pytest.fixture(scope="module")
def blank_nlp():
    import spacy

    return spacy.blank("en")


class _Finds(PersonRecognizer):
    """Reports fixed values found by a regex, as a model would (no evidence declared)."""

    FOUND = (("PERSON", r"Ann Lee's"), ("ORGANIZATION", r"\bSSN\b"),
             ("PERSON", r"Dana Fielding"))

    def __init__(self) -> None:
        super().__init__(name=type(self).__name__)
        self.supported_entities = ["PERSON", "ORGANIZATION"]

    def analyze(self, text, entities, nlp_artifacts=None):  # noqa: D102
        return [make_result(self, typ, m.start(), m.end(), 1.0, "test")
                for typ, pattern in self.FOUND for m in re.finditer(pattern, text)]


class BrandNewGuesser(_Finds):
    """A recognizer no list names, declared a statistical guess."""

    evidence = Evidence.STATISTICAL | Evidence.GUESS


class BrandNewRule(_Finds):
    """The same findings, declared a rule."""

    evidence = Evidence.RULE


def _detector(nlp, recognizer, deny=()) -> PiiDetector:
    settings = DetectionSettings(deny_list=list(deny))
    return PiiDetector(settings, analyzer=build_analyzer(nlp, extra_recognizers=[recognizer]))


def _values(text, spans):
    return sorted((s.type, text[s.start:s.end]) for s in spans)


def test_every_recognizer_the_detector_registers_declares_its_evidence(blank_nlp):
    from preflight.core.pii.recognizers.lists import DenyListRecognizer

    registered = [*build_analyzer(blank_nlp).registry.recognizers, DenyListRecognizer(["x"])]
    ours = [type(r) for r in registered if type(r).__module__.startswith("preflight.")]
    assert len(ours) > 20
    undeclared = [c.__name__ for c in ours
                  if not isinstance(vars(c).get("evidence"), Evidence)]
    assert undeclared == []
    # Presidio's own: its NER recognizer guesses, the others are patterns
    by_name = {r.name: evidence_of(r) for r in registered}
    assert by_name["SpacyRecognizer"] == Evidence.STATISTICAL | Evidence.GUESS
    assert by_name["CreditCardRecognizer"] == Evidence.RULE
    assert Evidence.PERSON_PROOF in by_name["MailHeaderNameRecognizer"]
    assert Evidence.KIND_WORD in by_name["FacilityRecognizer"]


def test_a_recognizer_that_declares_nothing_is_refused_when_the_analyzer_is_built(blank_nlp):
    class Inherits(BrandNewRule):   # inherits a declaration: not one of its own
        pass

    for undeclared in (_Finds(), Inherits()):
        with pytest.raises(TypeError, match="declares no evidence"):
            build_analyzer(blank_nlp, extra_recognizers=[undeclared])


def test_a_new_statistical_recognizer_is_cleaned_as_the_models_guesses(blank_nlp):
    text = "Ann Lee's id: 12345 SSN"
    guessed = _detector(blank_nlp, BrandNewGuesser()).detect(text)
    # the possessive trimmed, the acronym of a field label dropped: the model's cleaning
    assert _values(text, guessed) == [("PERSON", "Ann Lee")]
    assert {s.evidence for s in guessed} == {Evidence.STATISTICAL | Evidence.GUESS}
    ruled = _detector(blank_nlp, BrandNewRule()).detect(text)
    assert _values(text, ruled) == [("ORGANIZATION", "SSN"), ("PERSON", "Ann Lee's")]


def test_a_new_statistical_recognizer_loses_an_overlap_to_a_rule(blank_nlp):
    # a deny-list term inside the guess: same category and score, the guess longer; only
    # the evidence makes the rule win
    text = "Minutes taken by Dana Fielding today."
    guessed = _detector(blank_nlp, BrandNewGuesser(), deny=["Fielding"]).detect(text)
    assert _values(text, guessed) == [("DENY_LIST", "Fielding")]
    ruled = _detector(blank_nlp, BrandNewRule(), deny=["Fielding"]).detect(text)
    assert _values(text, ruled) == [("PERSON", "Dana Fielding")]


def test_evidence_survives_the_paragraph_cache_and_pickling(blank_nlp):
    detector = _detector(blank_nlp, BrandNewGuesser())
    text = "Ann Lee's id.\n\nMinutes taken by Dana Fielding today."
    first = detector.detect_incremental(text)
    again = detector.detect_incremental(text + "\n\nA new paragraph.")   # cached paragraphs
    assert [s.evidence for s in again] == [s.evidence for s in first] == [
        Evidence.STATISTICAL | Evidence.GUESS] * 2
    # the window's detector answers from a child process: spans cross it pickled
    assert pickle.loads(pickle.dumps(again)) == again


def test_a_span_without_a_declaration_counts_as_a_rule():
    span = Span(0, 4, "PERSON", Category.DIRECT_IDENTIFIER, 0.85, "Hand", "made")
    assert span.evidence == Evidence.RULE
    assert Evidence.STATISTICAL not in span.evidence
