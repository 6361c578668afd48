"""Refined or instant (preflight.app.refinement): where the bundle's out-of-fold verdict
says the refinement was less accurate for a setting kind, both faces show the instant
value and say why; elsewhere, and with a bundle without verdicts, the refined one."""

from __future__ import annotations

import threading

import pytest
from cli_out import cli_json

from preflight.app.refinement import choose, setting_kind, verdict
from preflight.core.types import PolicySummary, SanitizedText, SanitizeReport
from preflight.core.utility.assess import Assessment

METRICS = {"refinement": {
    "placeholder": {"show": "instant", "rows": 150, "failed_instant_pct": 12.0,
                    "failed_refined_pct": 21.0},
    "dx": {"show": "refined", "rows": 900, "failed_instant_pct": 30.0,
           "failed_refined_pct": 25.0}}}


def _assessment() -> Assessment:
    return Assessment({"epsilon": 1.0}, 0.8, 0.7, "text")


def test_a_kind_judged_instant_shows_the_instant_value_and_says_why():
    shown, why = choose(_assessment(), SanitizedText("t", "placeholder"), METRICS)
    assert shown.predicted is None and shown.best == 0.8
    assert "placeholders" in why and "21 %" in why and "12 %" in why
    assert shown.meta["refined_not_shown"] == 0.7 and shown.meta["refined_withheld"] == why
    assert "--" not in why and "Error" not in why           # the user's words


def test_a_kind_judged_refined_or_unknown_keeps_the_refined_value():
    for kind in ("dx", "pseudonym"):
        shown, why = choose(_assessment(), SanitizedText("t", kind), METRICS)
        assert shown.predicted == 0.7 and why == ""
    assert verdict({}, "placeholder") == (True, "")            # an older bundle, a refit


def test_an_instant_assessment_is_left_alone():
    fast = Assessment({"epsilon": 1.0}, 0.8)
    assert choose(fast, SanitizedText("t", "placeholder"), METRICS) == (fast, "")


@pytest.mark.parametrize("method,policy,eps,want", [
    ("placeholder", None, None, "placeholder"),
    ("dx", None, 10.0, "dx"),
    ("policy", PolicySummary("identifiers", "Protect identifiers"), None, "identifiers"),
    ("policy", PolicySummary("identifiers-dx", "Hybrid", dx="rest"), 10.0, "identifiers-dx"),
    ("policy", PolicySummary("mine", "Mine", dx="all"), 10.0, "dx"),
])
def test_setting_kind_names_the_training_rows_kind(method, policy, eps, want):
    from preflight.core.types import DxReport

    report = SanitizeReport(policy=policy, dx=DxReport(epsilon=eps) if eps else None)
    assert setting_kind(SanitizedText("t", method, (), report)) == want


@pytest.fixture
def rig(rig, monkeypatch):
    """The faces' shared fakes (conftest), with a bundle whose verdicts are METRICS."""
    from preflight.core.utility.predictor import UtilityPredictor

    monkeypatch.setattr(UtilityPredictor, "metrics", property(lambda self: METRICS))
    return rig


def test_both_faces_show_the_instant_value_where_the_refinement_is_worse(rig, tmp_path):
    from preflight.core.tasks import SUMMARIZE

    text = "Jane Doe met Max Power in Berlin. Write to jane.doe@example.com before Friday."
    doc = tmp_path / "memo.txt"
    doc.write_text(text, encoding="utf-8")
    door = rig.doorway()
    spans = door.detect(text)
    sanitized, vault = door.sanitize(door.policy("placeholder"), text, spans, seed=7)
    assert setting_kind(sanitized) == "placeholder"
    pred = door.predict_refined(text, sanitized, spans, SUMMARIZE, threading.Event(), vault)
    assert not pred.refined and "placeholders" in pred.note
    got = cli_json("assess", str(doc), "-m", "placeholder", "--seed", "7", "--json")
    assert got["predicted_utility"] is None
    assert got["notes"]["refined_withheld"] == pred.note
    assert got["predicted"] == pytest.approx(pred.value, abs=1e-4)
