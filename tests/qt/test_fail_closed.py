"""The window fails closed: whenever there is no fresh, complete sanitized result for the
current text and policy, nothing of the document can leave — not through "Copy
sanitized", not through Send — and the indicators do not vouch for anything.

Each test drives one failure over the real window and application layer (fake ports, a
loopback provider), checks the closed state (pane, clipboard, wire, buttons,
indicators), then that a fresh result opens it again.
"""

from __future__ import annotations

import time

import pytest
from conftest import SAMPLE
from ports import window_settings
from PySide6.QtCore import QMimeData
from PySide6.QtGui import QGuiApplication
from windows import confirm_plans, open_window

from preflight.core.textio import MAX_DOCUMENT_BYTES

SENTINEL = "clipboard sentinel: nothing copied"
SECRET = "jane.doe@example.com"


@pytest.fixture
def door(rig, provider):
    # detected values → <TYPE_n>: nothing detected leaves, so a plan needs no override
    return rig.doorway(window_settings(provider.base_url, policy="placeholder"))


@pytest.fixture
def win(qtbot, door):
    w = open_window(qtbot, door)
    w.plans = confirm_plans(w)               # were a plan ever built, it would be sent
    return w


def _fresh(qtbot, win, must_not_contain=SECRET):
    """Wait for a fresh result; the window is open again and shows sanitized text."""
    qtbot.waitUntil(lambda: bool(win.send_button.isEnabled() and win.copy_button.isEnabled()
                                 and win.local_button.isEnabled()), timeout=5000)
    assert win.payload.fresh_result is not None
    shown = win.preview.toPlainText()
    assert "<EMAIL_ADDRESS_1>" in shown and must_not_contain not in shown
    QGuiApplication.clipboard().setText(SENTINEL)
    win.copy_sanitized()
    assert QGuiApplication.clipboard().text() == shown


def _assert_closed(qtbot, win, provider, secrets=(SECRET,)):
    """Nothing can leave, whatever the user presses."""
    shown = win.preview.toPlainText()
    for s in secrets:
        assert s not in shown
    assert win.payload.fresh_result is None
    assert not win.copy_button.isEnabled()
    assert not win.send_button.isEnabled()
    assert not win.local_button.isEnabled()
    QGuiApplication.clipboard().setText(SENTINEL)
    win.copy_sanitized()                       # the action itself, not just the button
    win.answers.prepare_send()                 # and the Ctrl+Enter path
    qtbot.wait(150)
    assert QGuiApplication.clipboard().text() == SENTINEL
    assert not win.plans and not provider.bodies     # no plan built, nothing on the wire
    # the indicators vouch for nothing
    assert win.assessment.pii_left.text() == "—"
    assert win.assessment.utility.text() in ("—", "n/a")
    assert "meets your minimum" not in win.decision.text()


def test_detection_error_fails_closed(qtbot, win, rig, provider):
    rig.detector.fail = ValueError("[E088] Text of length 2000001 exceeds maximum")
    win.original.setPlainText(SAMPLE)
    qtbot.waitUntil(lambda: bool(rig.detector.calls), timeout=3000)
    qtbot.waitUntil(lambda: "detection failed" in win.preview.placeholderText().lower(),
                    timeout=3000)
    qtbot.wait(300)                            # the old typing-preview timer would fire here
    _assert_closed(qtbot, win, provider)
    rig.detector.fail = None
    win.original.appendPlainText("Thanks.")
    _fresh(qtbot, win)


def test_sanitization_error_fails_closed(qtbot, win, door, provider, monkeypatch):
    win.original.setPlainText(SAMPLE)
    _fresh(qtbot, win)

    def broken(*_a, **_k):
        raise ValueError("boom")

    monkeypatch.setattr(door, "sanitize", broken)       # the application layer fails
    win.original.appendPlainText("Call Bob Smith at bob@example.org.")
    qtbot.waitUntil(lambda: "sanitiz" in win.preview.placeholderText().lower()
                    and "failed" in win.preview.placeholderText().lower(), timeout=3000)
    _assert_closed(qtbot, win, provider, secrets=(SECRET, "bob@example.org"))
    monkeypatch.undo()
    win.original.appendPlainText("Thanks.")
    _fresh(qtbot, win, "bob@example.org")


def test_oversize_paste_is_refused_with_a_message(qtbot, win, rig, provider):
    big = (SAMPLE + "\n") * (2 * MAX_DOCUMENT_BYTES // len(SAMPLE))
    mime = QMimeData()
    mime.setText(big)
    win.original.insertFromMimeData(mime)      # what Ctrl+V does
    assert win.original.toPlainText() == ""    # refused whole, not truncated
    assert "MB" in win.status_text.text()
    qtbot.wait(600)
    assert big not in rig.detector.calls
    _assert_closed(qtbot, win, provider)
    mime.setText(SAMPLE)
    win.original.insertFromMimeData(mime)
    _fresh(qtbot, win)


def test_oversize_text_not_from_a_paste_blanks_the_pane(qtbot, win, rig, provider):
    win.original.setPlainText(SAMPLE)
    _fresh(qtbot, win)
    big = (SAMPLE + "\n") * (2 * MAX_DOCUMENT_BYTES // len(SAMPLE))
    win.original.setPlainText(big)             # e.g. a long .docx opened
    qtbot.waitUntil(lambda: "MB" in win.preview.placeholderText(), timeout=3000)
    qtbot.wait(600)
    assert big not in rig.detector.calls
    _assert_closed(qtbot, win, provider)
    win.original.setPlainText(SAMPLE)
    _fresh(qtbot, win)


def test_stale_detection_while_typing_fails_closed(qtbot, win, rig, provider):
    win.original.setPlainText(SAMPLE)
    _fresh(qtbot, win)
    rig.detector.delay = 1.0                   # the next detection is slow
    win.original.appendPlainText("Call Bob Smith at bob@example.org.")
    qtbot.wait(300)                            # typing preview would have run by now
    assert rig.detector.calls[-1] == SAMPLE    # the new text is not checked yet
    _assert_closed(qtbot, win, provider, secrets=(SECRET, "Bob Smith", "bob@example.org"))
    rig.detector.delay = 0.0
    _fresh(qtbot, win, "bob@example.org")
    assert "Bob Smith" not in win.preview.toPlainText()


def test_degraded_detector_needs_acceptance(qtbot, rig, door, provider):
    rig.detector.warnings = ["The NER model is missing: names may go undetected."]
    win = open_window(qtbot, door)
    win.plans = confirm_plans(win)
    win.original.setPlainText(SAMPLE)
    qtbot.waitUntil(lambda: bool(rig.detector.calls), timeout=3000)
    qtbot.wait(300)
    assert win.detector_banner.isVisible()
    assert "names may go undetected" in win.detector_banner_text.text()
    assert "degraded" in win.preview.placeholderText().lower()
    _assert_closed(qtbot, win, provider)
    win.detector_accept.click()
    _fresh(qtbot, win)
    assert win.detector_banner.isVisible()   # the warning stays in sight


def test_pending_policy_change_fails_closed(qtbot, win, door, provider, monkeypatch):
    win.original.setPlainText(SAMPLE)
    _fresh(qtbot, win)
    real = door.policy
    monkeypatch.setattr(door, "policy", lambda name=None: (time.sleep(1.0), real(name))[1])
    win.policies.set_policy("mask")                       # the policy takes a second
    qtbot.wait(100)
    _assert_closed(qtbot, win, provider, secrets=())
    assert "<EMAIL_ADDRESS_1>" not in win.preview.toPlainText()   # the old policy's text
    qtbot.waitUntil(lambda: bool(win.payload.fresh_result is not None), timeout=5000)
    assert win.policies.policy.name == "mask" and win.copy_button.isEnabled()
    assert SECRET not in win.preview.toPlainText()


def test_send_is_disabled_while_the_answer_streams(qtbot, win, provider):
    win.original.setPlainText(SAMPLE)
    _fresh(qtbot, win)
    provider.delay = 0.2                       # a slowly streaming provider
    win.send_button.click()
    qtbot.waitUntil(lambda: bool(win.answers.busy and "answering" in
                                 win.answer.status.text()), timeout=3000)
    assert not win.send_button.isEnabled() and not win.local_button.isEnabled()
    qtbot.waitUntil(lambda: bool(provider.bodies and not win.answers.busy), timeout=5000)
    assert win.send_button.isEnabled()


def test_emptied_document_resets_answer_question_and_indicators(qtbot, win):
    win.original.setPlainText(SAMPLE)
    _fresh(qtbot, win)
    qtbot.waitUntil(lambda: bool(win.utility.prediction is not None), timeout=5000)
    win.controls.question.setText("Who is affected?")
    win.local_button.click()
    qtbot.waitUntil(lambda: bool(win.answer.restored.toPlainText()
                                 and not win.answers.busy), timeout=5000)
    win.original.setPlainText("")
    assert win.answer.restored.toPlainText() == "" and win.answer.raw.toPlainText() == ""
    assert win.controls.question.text() == ""
    assert win.assessment.pii_left.text() == "—" and win.assessment.utility.text() == "—"
    assert win.decision.text() == ""
