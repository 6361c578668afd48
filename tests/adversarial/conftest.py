"""The real detector (spaCy model from PREFLIGHT_MODELS_DIR through the model manager)
for the evasion tests; skipped when the model is not installed."""

from __future__ import annotations

import pytest

from preflight.core.errors import ModelUnavailableError


@pytest.fixture(scope="session")
def real_detector(tmp_path_factory):
    from preflight.core.pii.detector import PiiDetector
    from preflight.runtime.models import ModelManager

    with pytest.MonkeyPatch.context() as mp:
        # the manager's hash cache goes to a tmp dir, never the user's
        mp.setenv("PREFLIGHT_HOME", str(tmp_path_factory.mktemp("adv-home")))
        try:
            detector = PiiDetector(models=ModelManager())
            detector.load()
        except ModelUnavailableError:
            pytest.skip("the ner model is not installed (run `preflight models install`)")
    if detector.ner_available is False:
        pytest.skip("the ner model is not installed (run `preflight models install`)")
    assert detector.warnings == []
    return detector
