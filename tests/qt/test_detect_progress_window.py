"""A long detection (a pasted book) shows how far it is and stops on Cancel: the window
stays usable, says nothing was detected, shows no sanitized text and cannot send; F5
looks again (issue 48, item 5)."""

from __future__ import annotations

from PySide6.QtWidgets import QPushButton

from ports import SAMPLE


def test_a_long_detection_shows_progress_and_cancel_leaves_nothing_to_send(qtbot, window,
                                                                          rig):
    win = window
    rig.detector.steps, rig.detector.step_delay = 200, 0.05     # ten seconds of work
    dialogs = []
    win.detect_progress.sig_dialog.connect(dialogs.append)
    win.original.setPlainText(SAMPLE)
    qtbot.waitUntil(lambda: bool(dialogs) and dialogs[-1].isVisible(), timeout=8000)
    bar = dialogs[-1]
    qtbot.waitUntil(lambda: bar.value() > 0, timeout=5000)
    assert "passages read" in bar.labelText() and bar.labelText().startswith("Looking")

    bar.findChild(QPushButton).click()                         # the user's Cancel
    qtbot.waitUntil(lambda: win.doc.stopped, timeout=2000)
    assert not bar.isVisible() and win.detect_progress.dialog is None
    assert win.doc.spans == [] and win.payload.fresh_result is None
    assert "nothing detected" in win.detect_state.text()
    assert "nothing was detected" in (win.payload.blocked or "")
    assert not win.send_button.isEnabled()
    assert win.original.isEnabled() and not win.original.isReadOnly()
    assert win.assessment.pii_left.text() == "—"          # never a count on undetected text

    rig.detector.steps = 0                                     # F5: look again, quickly
    win.detect_progress.again.activated.emit()
    qtbot.waitUntil(lambda: bool(win.doc.spans) and win.payload.fresh_result is not None,
                    timeout=8000)
    assert not win.doc.stopped and win.detect_progress.dialog is None
    assert "item(s) detected" in win.detect_state.text()
