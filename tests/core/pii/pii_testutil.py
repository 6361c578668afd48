"""Helpers shared by the recognizer tests."""

from __future__ import annotations


def run(recognizer, text: str) -> list[tuple[str, str]]:
    """(type, value) pairs a Presidio recognizer finds in ``text``, sorted by start."""
    results = sorted(recognizer.analyze(text, None, None), key=lambda r: (r.start, r.end))
    return [(r.entity_type, text[r.start:r.end]) for r in results]


class Artifacts:
    """Stands in for Presidio's ``NlpArtifacts`` where a recognizer reads only the
    pipeline's English dictionary (:func:`~preflight.core.pii.person_evidence.lexicon_of`)."""

    def __init__(self, nlp) -> None:
        self.nlp_engine = self
        self._nlp = nlp

    def get_nlp(self, _language: str):
        return self._nlp


def run_with(recognizer, text: str, artifacts) -> list[tuple[str, str]]:
    """:func:`run` with the pipeline artifacts a recognizer may read."""
    results = sorted(recognizer.analyze(text, None, artifacts), key=lambda r: (r.start, r.end))
    return [(r.entity_type, text[r.start:r.end]) for r in results]
