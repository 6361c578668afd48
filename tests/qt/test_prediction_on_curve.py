"""The number beside the chart stands on the chart's non-decreasing curve."""

from __future__ import annotations

import pytest
from fakes import SAMPLE

from preflight.core.errors import Cancelled


def test_the_instant_number_is_placed_on_the_monotone_curve(qtbot, window, fake_backend,
                                                           monkeypatch):
    # The curve says 0.95 at every ε; the raw instant prediction at the slider's ε is
    # lower. Shown raw, the number would sit below the chart at both of its neighbours.
    monkeypatch.setattr(fake_backend, "utility_curve",
                        lambda original, prepared, spans, epsilons, cancel:
                        [(e, 0.95) for e in epsilons])

    def never_refined(original, sanitized, spans, task, cancel):
        cancel.wait(20)
        raise Cancelled()

    monkeypatch.setattr(fake_backend, "predict_refined", never_refined)
    window.original.setPlainText(SAMPLE)
    qtbot.waitUntil(lambda: bool(window.doc.prediction is not None and window.doc.curve
                                 and window.doc.prediction.placed is not None),
                    timeout=8000)
    pred = window.doc.prediction
    raw = pred.assessment.best
    assert raw < 0.95
    assert pred.value == pytest.approx(0.95)          # read from the chart's curve
    assert window.assessment.utility.text() == "0.95"
    # and the explanation beside it says the same number, not the raw one
    if pred.explained is not None:
        assert pred.explained.value == pytest.approx(0.95)


def test_a_number_just_below_the_minimum_never_reads_like_it(qtbot, window, fake_backend,
                                                            monkeypatch):
    # 0.6191 against a minimum of 0.62: a red "0.62 is below your minimum 0.62" (and "no ε
    # meets 0.62 (best 0.62)") reads like a bug; the extra digit says why it falls short.
    fake_backend.settings.policy.min_utility = 0.62
    monkeypatch.setattr(fake_backend, "utility_curve",
                        lambda original, prepared, spans, epsilons, cancel:
                        [(e, 0.6191) for e in epsilons])
    window.original.setPlainText(SAMPLE)
    qtbot.waitUntil(lambda: bool(window.doc.prediction is not None
                                 and window.doc.prediction.value == pytest.approx(0.6191)),
                    timeout=8000)
    assert window.assessment.utility.text() == "0.619"
    assert "0.619 is below your minimum 0.62" in window.decision.text()
    window.assessment.find_best.click()
    qtbot.waitUntil(lambda: window.doc.recommendation is not None, timeout=8000)
    assert window.doc.recommendation.decision == "keep_local"
    assert "(best predicted utility 0.619)" in window.assessment.recommendation.text()
