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
