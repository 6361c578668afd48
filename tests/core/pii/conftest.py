"""Shared fixtures: the installed spaCy model (tests/_models.py) and a
session-wide real detector for the slow end-to-end tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from _models import require_model


@pytest.fixture(scope="session")
def ner_path() -> Path:
    return require_model("ner")


@pytest.fixture(scope="session")
def real_detector(ner_path):
    from preflight.core.pii.detector import PiiDetector

    detector = PiiDetector(nlp_model_path=ner_path)
    detector.load()
    assert detector.warnings == []
    return detector


@pytest.fixture(scope="session")
def dictionary(ner_path):
    """Artifacts whose pipeline carries the installed model's English dictionary (and no
    model): what the name rules read to tell a name from a word."""
    import spacy

    from pii_testutil import Artifacts
    from preflight.core.pii.person_evidence import add_lexicon

    nlp = spacy.blank("en")
    add_lexicon(nlp, ner_path)
    return Artifacts(nlp)
