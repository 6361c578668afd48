"""Where the company assessor is named: the company policy's ``[assessor]`` table (wins)
or the settings' ``assessor_endpoint``, both validated; and how Services wires it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from preflight.app.company_assessor import ORIGINAL_STAYS, assessor_endpoint
from preflight.app.services import Services
from preflight.core.config import AssessorEndpointSettings, Settings, load_settings
from preflight.core.errors import ConfigError
from preflight.core.org_policy import load_org_policy
from preflight.runtime.remote_fallback import FallbackSLM


def org_file(text: str) -> Path:
    path = Path(os.environ["PREFLIGHT_ORG_POLICY"])
    path.write_text(text, encoding="utf-8")
    return path


def test_policy_assessor_table_is_read_and_described():
    org = load_org_policy(org_file('version = 1\n[assessor]\nurl = "https://gpu:8000/v1"\n'
                                   'model = "smol"\ninternal = true\n'))
    ep = org.assessor_endpoint
    assert (ep.url, ep.model, ep.internal, ep.source) == ("https://gpu:8000/v1", "smol",
                                                          True, "company policy")
    assert ep.base_url == "https://gpu:8000"
    assert org.describe()["sets"]["assessor"]["internal"] is True


@pytest.mark.parametrize("body, line, words", [
    ('[assessor]\nurl = "ftp://gpu"\n', 3, "http(s) URL"),
    ('[assessor]\nurl = "http://gpu:8000"\ninternal = "yes"\n', 4, "true or false"),
    ('[assessor]\nurl = "http://gpu:8000"\nkey = "x"\n', 4, "not a company policy key"),
    ('[assessor]\nmodel = "smol"\n', 2, "http(s) URL"),
    # the original document never crosses the network in clear text
    ('[assessor]\nurl = "http://gpu:8000/v1"\ninternal = true\n', 4, "needs an https URL"),
])
def test_a_bad_assessor_table_breaks_the_policy_naming_the_line(body, line, words):
    org = load_org_policy(org_file("version = 1\n" + body))
    assert org.broken
    assert f"line {line}" in str(org.error) and words in str(org.error)


def test_settings_endpoint_is_validated(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"assessor_endpoint": {"url": "http://gpu:8000/v1"}}))
    s = load_settings(path)
    assert s.assessor_endpoint == AssessorEndpointSettings("http://gpu:8000/v1")
    assert assessor_endpoint(load_org_policy(), s).internal is False
    path.write_text(json.dumps({"assessor_endpoint": {"url": "gpu:8000"}}))
    with pytest.raises(ConfigError, match="assessor_endpoint.url must be an http"):
        load_settings(path)


def test_the_policy_wins_over_the_settings():
    settings = Settings(assessor_endpoint=AssessorEndpointSettings("http://mine:1/v1"))
    none = load_org_policy()
    assert assessor_endpoint(none, settings).url == "http://mine:1/v1"
    assert assessor_endpoint(none, settings).source == "settings"
    org = load_org_policy(org_file('[assessor]\nurl = "http://corp:8000/v1"\n'))
    ep = assessor_endpoint(org, settings)
    assert (ep.url, ep.internal, ep.source) == ("http://corp:8000/v1", False,
                                                "company policy")
    assert assessor_endpoint(none, Settings()) is None


def test_services_wire_the_company_assessor():
    plain = Services(Settings())
    models = plain.assessor_models()
    assert models.company is None and models.original is None
    assert plain.assessor_place().label == "Assessment ran on this computer."

    outside = Services(Settings(assessor_endpoint=AssessorEndpointSettings(
        "http://127.0.0.1:9/v1")))
    models = outside.assessor_models()
    assert isinstance(models.slm, FallbackSLM) and models.original is not None
    assert outside.assessor().slm is models.slm
    assert ORIGINAL_STAYS in outside.assessor_place().note

    # a changed endpoint rebuilds the assessors and their models
    outside.update_settings(Settings())
    assert outside.assessor_models().company is None
    assert outside.assessor().slm is outside.assessor_models().slm

    org_file('[assessor]\nurl = "http://127.0.0.1:9/v1"\ninternal = true\n')  # loopback
    inside = Services(Settings())
    assert inside.assessor_models().original is None
    assert inside.assessor_place().owner == "company assessor"


def test_the_assessment_panel_says_where_it_ran(qtbot):
    from preflight.app.prediction import Prediction
    from preflight.core.assessor_endpoint import AssessorPlace
    from preflight.core.utility.assess import Assessment
    from preflight.core.types import SanitizedText
    from preflight.core.utility.features import fast_features
    from preflight.qt.qt_panels import QtAssessmentPanel

    panel = QtAssessmentPanel()
    qtbot.addWidget(panel)
    place = AssessorPlace("local", "http://gpu:8000/v1", "unreachable")
    feats = fast_features("Ann wrote.", SanitizedText("<PERSON_1> wrote.", "placeholder"))
    panel.set_prediction(Prediction(Assessment(feats, 0.4, 0.5), where=place.label), 0.3)
    assert panel.where.text() == ("Assessment ran on this computer (company assessor at "
                                  "http://gpu:8000/v1 unreachable).")
