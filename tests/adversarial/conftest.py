"""The real detector (spaCy model from PREFLIGHT_MODELS_DIR through the model manager)
for the evasion tests; skipped when the model is not installed."""

from __future__ import annotations

import os

import pytest

from preflight.core.errors import ModelUnavailableError


@pytest.fixture(scope="session")
def real_detector(tmp_path_factory):
    home = tmp_path_factory.mktemp("adv-home")
    old = os.environ.get("PREFLIGHT_HOME")
    os.environ["PREFLIGHT_HOME"] = str(home)   # the manager's hash cache goes to a tmp dir
    try:
        from preflight.runtime.models import ModelManager

        path = ModelManager().path("ner")
    except (ModelUnavailableError, ImportError):
        pytest.skip("the ner model is not installed (run `preflight models install`)")
    finally:
        if old is None:
            os.environ.pop("PREFLIGHT_HOME", None)
        else:
            os.environ["PREFLIGHT_HOME"] = old
    from preflight.core.pii.detector import PiiDetector

    detector = PiiDetector(nlp_model_path=path)
    detector.load()
    assert detector.warnings == []
    return detector
