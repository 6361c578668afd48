"""The assessment panel says what the utility prediction was measured on, and, in the
warning colour, where the pasted document or the chosen task lies outside it (the shipped
scope: the training documents' length range, summaries only)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from ports import SAMPLE

from preflight.core.utility.scope import MeasuredScope, ScopeVerdict

ON = "summaries of papers, e-mails and business documents"


def test_the_line_says_what_was_measured_and_marks_only_what_is_outside(qtbot, window):
    window.original.setPlainText(SAMPLE)
    qtbot.waitUntil(lambda: window.utility.prediction is not None, timeout=5000)
    pred, panel = window.utility.prediction, window.assessment
    line = panel.utility_scope
    panel.set_prediction(replace(pred, scope=ScopeVerdict(900, 95, 424, ON)), 0.5)
    assert line.text().startswith("Outside what it was trained on") and "900 words" in line.text()
    assert ON in line.toolTip()
    outside_style = line.styleSheet()
    panel.set_prediction(replace(pred, scope=ScopeVerdict(200, 95, 424, ON)), 0.5)
    assert line.text().startswith("Trained and measured on") and ON in line.text()
    assert line.styleSheet() != outside_style          # not in the warning colour
    panel.set_prediction(replace(pred, scope=None), 0.5)
    assert line.text() == ""
    panel.set_unavailable("no model")
    assert line.text() == ""


@pytest.mark.parametrize("times, inside", [(1, False), (None, True)])
def test_a_pasted_document_is_marked_by_its_length(qtbot, window, times, inside):
    scope = MeasuredScope.load()
    assert scope is not None
    words = len(SAMPLE.split())
    times = times or (scope.shortest + scope.longest) // 2 // words
    window.original.setPlainText(" ".join([SAMPLE] * times))
    qtbot.waitUntil(lambda: getattr(window.utility.prediction, "scope", None) is not None,
                    timeout=15000)
    assert window.utility.prediction.scope.inside is inside
    text = window.assessment.utility_scope.text()
    assert text.startswith("Outside what it was trained on" if not inside
                           else "Trained and measured on")
    assert f"{scope.shortest:,}–{scope.longest:,}" in text + window.assessment.utility_scope.toolTip()


def test_asking_a_question_is_marked_outside_what_was_measured(qtbot, window):
    scope = MeasuredScope.load()
    words = len(SAMPLE.split())
    window.original.setPlainText(" ".join([SAMPLE] * ((scope.shortest + scope.longest) // 2
                                                      // words)))
    qtbot.waitUntil(lambda: getattr(window.utility.prediction, "scope", None) is not None,
                    timeout=15000)
    assert window.utility.prediction.scope.inside
    task = window.controls.task
    task.setCurrentIndex(task.findData("question"))
    qtbot.waitUntil(lambda: getattr(window.utility.prediction, "scope", None) is not None
                    and not window.utility.prediction.scope.task_measured, timeout=15000)
    said = window.assessment.utility_scope.text()
    assert "summaries only" in said
    unseen = window.utility.prediction.scope.unseen      # the shipped reading's questions
    assert unseen is not None and f"{unseen.missed_questions:.0%}" in said
