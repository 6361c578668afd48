"""Issue 48, item 1, in the window: under every answer, what it states that the document
does not hold; the realized score is never green while a fact is flagged (the real window
over the fake ports, a loopback provider)."""

from __future__ import annotations

from conftest import SAMPLE
from windows import confirm_plans

from preflight.qt import qt_theme

INVENTED = "<PERSON_1> approved $400 on 3 January 2025 with Mark Evans."


def _send(qtbot, win, provider, words: list[str]) -> None:
    provider.answer_words = words
    box = win.controls.policy
    qtbot.waitUntil(lambda: bool(box.findData("placeholder") >= 0), timeout=3000)
    box.setCurrentIndex(box.findData("placeholder"))
    if win.original.toPlainText() != SAMPLE:
        win.original.setPlainText(SAMPLE)
    qtbot.waitUntil(lambda: bool(win.payload.fresh_result is not None
                                 and win.policies.policy.name == "placeholder"), timeout=5000)
    confirm_plans(win, allow_all=True)          # a second send acknowledges the resend
    sent = len(provider.bodies)
    qtbot.waitUntil(lambda: bool(win.send_button.isEnabled()), timeout=3000)
    win.send_button.click()
    qtbot.waitUntil(lambda: bool(len(provider.bodies) > sent and not win.answers.busy
                                 and win.answer.status.text().startswith("Done")),
                    timeout=20000)


def test_a_date_an_amount_and_a_name_not_in_the_document_are_flagged(qtbot, window, door,
                                                                     provider):
    door.settings.policy.min_utility = 0.0     # every answer here clears the minimum
    pane = window.answer
    good = qt_theme.colors().good.name()

    # a faithful answer first: nothing flagged, and its score is green
    _send(qtbot, window, provider, "Summary about <PERSON_1> and the plan.".split(" "))
    assert not pane.check.isVisibleTo(pane)
    assert pane.score.isVisibleTo(pane) and pane.score.text().startswith("realized utility")
    assert pane.score_tone == "good" and good in pane.score.styleSheet()

    # the same document again, answered with a date, an amount and a name it does not hold
    _send(qtbot, window, provider, INVENTED.split(" "))
    assert pane.restored.toPlainText() == INVENTED.replace("<PERSON_1>", "Jane Doe")
    assert pane.check.isVisibleTo(pane)
    assert pane.check.text() == ("Check: not in your document: $400, 3 January 2025, "
                                 "Mark Evans")
    # the score says it was lowered, and is not green
    assert "lowered for 3 statements your document does not support" in pane.score.text()
    assert pane.score_tone != "good" and good not in pane.score.styleSheet()
    assert good not in pane.check.styleSheet()


def test_the_check_is_saved_with_the_answer_and_cleared_with_the_document(qtbot, window,
                                                                          provider, tmp_path):
    _send(qtbot, window, provider, INVENTED.split(" "))
    pane = window.answer
    target = pane.save_answer(str(tmp_path / "answer.txt"))
    assert target is not None
    assert "Check: not in your document: $400, 3 January 2025, Mark Evans" in \
        target.read_text()
    window.original.setPlainText("")            # a new (empty) document: no answer stays
    qtbot.waitUntil(lambda: bool(not pane.check.isVisibleTo(pane)), timeout=3000)
    assert pane.check.text() == "" and not pane.score.isVisibleTo(pane)


def test_a_local_answer_is_checked_too(qtbot, window, rig):
    rig.slm.local_text = "Jane Doe met Max Power in Paris on 3 May 2024."
    window.original.setPlainText(SAMPLE)
    qtbot.waitUntil(lambda: bool(window.local_button.isEnabled()), timeout=5000)
    window.local_button.click()
    qtbot.waitUntil(lambda: bool(window.answer.restored.toPlainText()
                                 and not window.answers.busy), timeout=5000)
    pane = window.answer
    assert pane.check.isVisibleTo(pane)
    assert "3 May 2024" in pane.check.text()
    assert "Jane Doe" not in pane.check.text() and "Max Power" not in pane.check.text()
    assert not pane.score.isVisibleTo(pane)      # nothing to score a local answer against


def test_the_score_is_green_only_for_a_clean_answer_at_the_minimum():
    from preflight.core.utility.answer_check import check_answer
    from preflight.qt.answers import score_tone

    doc = "The raise of 4% starts on 1 April 2025."
    clean = check_answer(doc, "A 4% raise from 1 April 2025.")
    flagged = check_answer(doc, "A 5% raise from 1 April 2025.")
    assert score_tone(0.8, clean, 0.6) == "good"
    assert score_tone(0.8, flagged, 0.6) == "warn"        # high, but a fact is flagged
    assert score_tone(0.4, clean, 0.6) == "bad"
    assert score_tone(0.8, clean, None) == ""             # no minimum to judge by
    assert score_tone(0.8, flagged, None) == "warn"
