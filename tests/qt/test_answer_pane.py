"""The answer pane on the real window (real application layer, fake ports, a loopback
provider): Copy, Save, the notes after a d_X send, the result line per method, an answer
cut on length, a local answer stopped in a loop, Stop and Send while streaming."""

from __future__ import annotations

from conftest import ANSWER, SAMPLE
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from windows import confirm_plans

from preflight.core.send.answer_text import LENGTH_NOTE, NOISE_NOTE, REPEAT_NOTE
from preflight.qt import qt_answer_pane


def _send(qtbot, win, policy: str) -> list:
    box = win.controls.policy
    qtbot.waitUntil(lambda: bool(box.findData(policy) >= 0), timeout=3000)
    box.setCurrentIndex(box.findData(policy))
    win.original.setPlainText(SAMPLE)
    qtbot.waitUntil(lambda: bool(win.payload.fresh_result is not None
                                 and win.policies.policy.name == policy), timeout=5000)
    shown = confirm_plans(win, allow_all=True)     # this file is about the answers
    qtbot.waitUntil(lambda: bool(win.send_button.isEnabled()), timeout=3000)
    win.send_button.click()
    return shown


def _sent(qtbot, win, provider, policy: str) -> None:
    sent = len(provider.bodies)
    _send(qtbot, win, policy)
    # the first send of a session also loads the utility model its learning step uses
    qtbot.waitUntil(lambda: bool(len(provider.bodies) > sent and not win.answers.busy),
                    timeout=20000)


def test_copy_puts_exactly_the_answer_on_the_clipboard(qtbot, window, provider):
    _sent(qtbot, window, provider, "placeholder")
    pane = window.answer
    QGuiApplication.clipboard().setText("something else")
    assert pane.copy_button.isEnabled()
    pane.copy_button.click()
    assert QGuiApplication.clipboard().text() == "Summary about Jane Doe and the plan."
    pane.tabs.setCurrentWidget(pane.raw)          # what the user sees: the raw answer
    pane.copy_button.click()
    assert QGuiApplication.clipboard().text() == ANSWER


def test_save_writes_the_answer_as_markdown_and_text(qtbot, window, provider, tmp_path,
                                                     monkeypatch):
    provider.answer_words = "Words about <PERSON_1>.".split(" ")
    _sent(qtbot, window, provider, "dx-all")           # a d_X send: the note is saved too
    target = tmp_path / "answer"
    monkeypatch.setattr(qt_answer_pane.QFileDialog, "getSaveFileName",
                        lambda *a, **k: (str(target), "Markdown (*.md)"))
    window.answer.save_button.click()
    saved = (tmp_path / "answer.md").read_text()
    assert saved.startswith(window.answer.restored.toPlainText().rstrip() + "\n")
    assert f"> {NOISE_NOTE}" in saved
    window.answer.save_answer(str(tmp_path / "a.txt"))
    assert (tmp_path / "a.txt").read_text() == (window.answer.restored.toPlainText().rstrip()
                                                 + "\n\n" + NOISE_NOTE + "\n")
    assert "Saved to a.txt" in window.answer.feedback.text()


def test_dx_note_after_a_dx_send_and_not_after_placeholders(qtbot, window, provider):
    pane = window.answer
    _sent(qtbot, window, provider, "placeholder")
    assert not pane.notes.isVisibleTo(pane)
    assert "Placeholders were restored locally" in pane.status.text()
    assert "d_X" not in pane.status.text()

    _sent(qtbot, window, provider, "dx-all")
    assert pane.notes.isVisibleTo(pane) and NOISE_NOTE in pane.notes.text()
    assert "Placeholders were restored" not in pane.status.text()
    assert "Nothing was restored" in pane.status.text()


def test_the_cores_notes_stand_beside_the_answer_not_in_it(qtbot, window, provider):
    """A secret in the document is a placeholder in the payload; the answer repeats it,
    and the core withholds it: its note stands beside the answer, never in it."""
    key = "sk-" + "A1b2C3d4E5f6G7h8J9k0"
    provider.answer_words = "Use the key <API_KEY_1> for <PERSON_1>.".split(" ")
    box = window.controls.policy
    qtbot.waitUntil(lambda: bool(box.findData("placeholder") >= 0), timeout=3000)
    box.setCurrentIndex(box.findData("placeholder"))
    window.original.setPlainText(SAMPLE + f" The API key is {key}.")
    qtbot.waitUntil(lambda: bool(window.payload.fresh_result is not None
                                 and "<API_KEY_1>" in window.payload.result.sanitized.text),
                    timeout=5000)
    confirm_plans(window)
    window.send_button.click()
    qtbot.waitUntil(lambda: bool(provider.bodies and not window.answers.busy
                                 and window.answer.status.text().startswith("Done")),
                    timeout=20000)
    pane = window.answer
    notes = pane.notes.text()
    assert pane.notes.isVisibleTo(pane) and "<API_KEY_1>" in notes and "not restored" in notes
    assert key not in pane.restored.toPlainText() and key not in notes
    assert "Jane Doe" in pane.restored.toPlainText()          # the name is put back


def test_answer_cut_on_length_ends_at_a_sentence_and_says_so(qtbot, window, provider):
    said = "One full sentence about <PERSON_1>. And a second one that"
    provider.answer_words = said.split(" ")
    provider.finish_reason = "length"
    _sent(qtbot, window, provider, "placeholder")
    assert window.answer.restored.toPlainText() == "One full sentence about Jane Doe."
    assert LENGTH_NOTE in window.answer.notes.text()
    assert window.answer.raw.toPlainText() == said          # as received


def test_an_answer_the_audit_log_could_not_store_is_shown_with_a_note(qtbot, window,
                                                                       door, provider,
                                                                       monkeypatch):
    import sqlite3

    from preflight.core.send.audit import AuditLog

    update, try_update = AuditLog.update, AuditLog.try_update

    def full(write):                # the disk is too full for the answer's text
        def wrapped(self, record_id, **fields):
            if {"answer_raw", "answer_restored"} & set(fields):
                raise sqlite3.OperationalError("database or disk is full")
            return write(self, record_id, **fields)
        return wrapped

    monkeypatch.setattr(AuditLog, "update", full(update))
    monkeypatch.setattr(AuditLog, "try_update", full(try_update))
    _sent(qtbot, window, provider, "placeholder")
    pane = window.answer
    assert pane.restored.toPlainText() == "Summary about Jane Doe and the plan."
    notes = pane.notes.text()
    assert pane.notes.isVisibleTo(pane)
    assert "The answer is shown, but the audit log could not store its text" in notes
    assert "disk is full" in notes


def test_a_looping_local_answer_is_stopped_and_ends_before_the_repeat(qtbot, window, door,
                                                                     rig):
    rig.slm.local_text = ("The memo moves the office to the new floor. "
                          "Finance moves first, then the others follow. ") * 10
    win = window
    win.original.setPlainText(SAMPLE)
    qtbot.waitUntil(lambda: bool(win.local_button.isEnabled()), timeout=5000)
    win.local_button.click()
    qtbot.waitUntil(lambda: bool(win.answer.restored.toPlainText()
                                 and not win.answers.busy), timeout=5000)
    assert win.answer.restored.toPlainText() == ("The memo moves the office to the new "
                                                  "floor. Finance moves first, then the "
                                                  "others follow.")
    assert REPEAT_NOTE in win.answer.notes.text()
    assert door.history()[0]["kind"] == "local"          # recorded in History


def test_stop_says_stopping_keeps_the_partial_and_send_stays_disabled(qtbot, window,
                                                                     provider):
    provider.delay = 0.3
    provider.answer_words = [f"w{i}" for i in range(60)]
    shown = _send(qtbot, window, "placeholder")
    pane = window.answer
    qtbot.waitUntil(lambda: bool(pane.restored.toPlainText()), timeout=5000)
    assert window.answers.busy and not window.send_button.isEnabled()
    assert not window.local_button.isEnabled()
    qtbot.keyClick(window, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    qtbot.wait(100)
    assert len(shown) == 1                        # Ctrl+Enter does nothing while streaming
    pane.stop.click()
    assert pane.stop.text() == "Stopping…" and not pane.stop.isEnabled()
    partial = pane.restored.toPlainText()
    qtbot.waitUntil(lambda: bool(not window.answers.busy), timeout=3000)
    assert pane.status.text().startswith("Stopped by you")
    assert pane.restored.toPlainText() == partial and partial
    assert window.send_button.isEnabled()


def test_answer_pane_grows_when_an_answer_starts(qtbot, window, provider):
    split = window.findChild(qt_answer_pane.QSplitter, "vsplit")
    before = split.sizes()[1]
    _sent(qtbot, window, provider, "placeholder")
    after = split.sizes()
    assert after[1] > before and after[1] >= 0.5 * sum(after)
