"""The number beside the chart stands on the chart's non-decreasing curve.

The real window and application layer (fake ports); the document's utility curve — the
core's :func:`~preflight.core.utility.curve.utility_curve`, as the application calls it —
is replaced by a flat one, so the raw instant prediction and the curve disagree."""

from __future__ import annotations

import pytest
from conftest import SAMPLE

from preflight.app import refinement, window_doorway
from preflight.core.utility.recommend import Recommendation


def _flat_curve(value: float):
    def curve(assessor, original, prepared, epsilons, spans, cancel=None):
        return [(e, value) for e in epsilons]
    return curve


def test_the_instant_number_is_placed_on_the_monotone_curve(qtbot, window, rig,
                                                           monkeypatch):
    # The curve says 0.95 at every ε; the raw instant prediction at the slider's ε is
    # lower. Shown raw, the number would sit below the chart at both of its neighbours.
    monkeypatch.setattr(window_doorway, "utility_curve", _flat_curve(0.95))
    rig.slm.run_delay = 60            # the local model never finishes: no refined number
    window.original.setPlainText(SAMPLE)
    u = window.utility
    qtbot.waitUntil(lambda: bool(u.prediction is not None and u.curve
                                 and u.prediction.placed is not None), timeout=8000)
    pred = u.prediction
    raw = pred.assessment.best
    assert raw < 0.95
    assert pred.value == pytest.approx(0.95)          # read from the chart's curve
    assert window.assessment.utility.text() == "0.95"
    # and the explanation beside it says the same number, not the raw one
    if pred.explained is not None:
        assert pred.explained.value == pytest.approx(0.95)


def test_a_number_just_below_the_minimum_never_reads_like_it(qtbot, window, door, rig,
                                                            monkeypatch):
    # 0.6191 against a minimum of 0.62: a red "0.62 is below your minimum 0.62" (and "no ε
    # meets 0.62 (best 0.62)") reads like a bug; the extra digit says why it falls short.
    door.settings.policy.min_utility = 0.62
    monkeypatch.setattr(window_doorway, "utility_curve", _flat_curve(0.6191))

    def search(original, prepared, assessor, min_utility, **_kw):   # what the core's
        return Recommendation("keep_local", None, 0.6191, 0.6191, min_utility, None)

    monkeypatch.setattr(refinement, "search", search)
    rig.slm.run_delay = 60            # the local model never finishes: no refined number
    window.original.setPlainText(SAMPLE)
    u = window.utility
    qtbot.waitUntil(lambda: bool(u.prediction is not None
                                 and u.prediction.value == pytest.approx(0.6191)),
                    timeout=8000)
    assert window.assessment.utility.text() == "0.619"
    assert "0.619 is below your minimum 0.62" in window.decision.text()
    window.assessment.find_best.click()
    qtbot.waitUntil(lambda: u.recommendation is not None, timeout=8000)
    assert u.recommendation.decision == "keep_local"
    assert u.recommendation.min_utility == 0.62          # the application's rule
    assert "(best predicted utility 0.619)" in window.assessment.recommendation.text()
