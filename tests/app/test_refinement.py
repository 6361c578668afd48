"""Refined or instant (preflight.app.refinement): a d_X setting always shows the instant
value on the curve (its number never falls as ε grows); elsewhere, where the bundle's
out-of-fold verdict says the refinement did not measurably help, both faces show the
instant value, say why and do not run the local model; a bundle without verdicts shows
the refined one."""

from __future__ import annotations

import threading

import pytest
from cli_out import cli_json

from preflight.app.refinement import ALONG_EPSILON_WHY, measure, setting_kind, verdict
from preflight.core.types import PolicySummary, SanitizedText, SanitizeReport
from preflight.core.utility.assess import Assessment

METRICS = {"refinement": {
    "placeholder": {"show": "instant", "rows": 150, "failed_instant_pct": 12.0,
                    "failed_refined_pct": 21.0},
    "dx": {"show": "refined", "rows": 900, "failed_instant_pct": 30.0,
           "failed_refined_pct": 25.0},
    "pseudonym": {"show": "refined", "rows": 90, "failed_instant_pct": 30.0,
                  "failed_refined_pct": 20.0}}}


class CountingAssessor:
    """An assessor that records which stage ran."""

    def __init__(self, metrics=METRICS) -> None:
        self.predictor = type("P", (), {"metrics": metrics})()
        self.refined = self.fast_calls = 0

    def fast(self, original, sanitized, spans, correct=False):
        self.fast_calls += 1
        return Assessment({"epsilon": 1.0}, 0.8, None, sanitized.text)

    def refine(self, original, sanitized, spans, **kwargs):
        self.refined += 1
        return Assessment({"epsilon": 1.0}, 0.8, 0.7, sanitized.text)


def _dx(eps: float = 10.0) -> SanitizedText:
    from preflight.core.types import DxReport

    report = SanitizeReport(policy=PolicySummary("identifiers-dx", "Hybrid", dx="rest"),
                            dx=DxReport(epsilon=eps))
    return SanitizedText("t", "policy", (), report)


def test_a_kind_judged_instant_shows_the_instant_value_without_the_local_model():
    a = CountingAssessor()
    shown, why = measure(a, "orig", SanitizedText("t", "placeholder"), [])
    assert a.refined == 0 and a.fast_calls == 1
    assert shown.predicted is None and shown.best == 0.8
    assert "placeholders" in why and "21 %" in why and "12 %" in why
    assert shown.meta["refined_withheld"] == why
    assert "--" not in why and "Error" not in why           # the user's words


def test_a_kind_judged_refined_or_unknown_runs_the_local_model():
    for kind, metrics in (("pseudonym", METRICS), ("placeholder", {})):
        a = CountingAssessor(metrics)                        # {}: an older bundle
        shown, why = measure(a, "orig", SanitizedText("t", kind), [])
        assert a.refined == 1 and shown.predicted == 0.7 and why == ""


def test_a_dx_setting_shows_the_instant_value_whatever_the_bundle_says():
    assert verdict(METRICS, "dx") == (False, ALONG_EPSILON_WHY)
    a = CountingAssessor()
    shown, why = measure(a, "orig", _dx(), [])
    assert a.refined == 0 and shown.predicted is None and why == ALONG_EPSILON_WHY


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


def test_assess_at_increasing_epsilon_never_predicts_less(rig, tmp_path):
    """One document, policy and seed: `assess` at each ε of a rising grid (separate runs,
    as a user types them) reports a non-decreasing number, the curve's, never a refined
    measurement of one noise sample."""
    text = ("Jane Doe met Max Power in Berlin on Friday to review the quarterly budget. "
            "The team agreed to move the launch to March and to hire two engineers. "
            "Write to jane.doe@example.com with the revised plan before the board meets.")
    doc = tmp_path / "memo.txt"
    doc.write_text(text, encoding="utf-8")
    got = [cli_json("assess", str(doc), "-m", "dx", "--epsilon", str(eps), "--seed", "7",
                    "--json") for eps in (8, 12, 18, 27, 40, 60, 90)]
    values = [g["predicted"] for g in got]
    assert all(g["predicted_utility"] is None for g in got)        # no refined value shown
    assert all(g["notes"]["refined_withheld"] == ALONG_EPSILON_WHY for g in got)
    assert values == sorted(values), values
