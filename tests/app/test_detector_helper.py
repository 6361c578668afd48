"""The services' detector reads long texts' NER in a helper process on a machine with two
cores or more, and starts none on a single core (where it would only cost memory)."""

from __future__ import annotations

import pytest

from _models import require_model

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("cores, helper", [(2, True), (1, False)])
def test_the_services_detector_has_a_helper_only_with_a_second_core(
        monkeypatch, cores, helper):
    from preflight.app import services as services_module
    from preflight.core.config import Settings

    require_model("ner")
    monkeypatch.setattr(services_module.os, "cpu_count", lambda: cores)
    detector = services_module.build_services(Settings()).make_detector()
    detector.load()
    assert (detector.ner_helper is not None) is helper
    if helper:
        assert detector.ner_helper.wait_ready(180)
