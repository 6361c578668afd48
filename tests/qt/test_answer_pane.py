"""The answer pane on the real window (fake backend): Copy, Save, the notes after a d_X
send, the result line per method, an answer cut on length, a local answer stopped in a
loop, Stop and Send while streaming."""

from __future__ import annotations

from fakes import SAMPLE
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication

from preflight.core.send.answer_text import LENGTH_NOTE, NOISE_NOTE, REPEAT_NOTE
from preflight.qt import qt_answer_pane


def _send(qtbot, win, policy: str) -> None:
    box = win.controls.policy
    qtbot.waitUntil(lambda: bool(box.findData(policy) >= 0), timeout=3000)
    box.setCurrentIndex(box.findData(policy))
    win.original.setPlainText(SAMPLE)
    qtbot.waitUntil(lambda: bool(win.doc.fresh_result is not None
                                 and win.doc.policy.name == policy), timeout=5000)
    win.auto_confirm = lambda dlg: True
    qtbot.waitUntil(lambda: bool(win.send_button.isEnabled()), timeout=3000)
    win.send_button.click()


def _sent(qtbot, win, backend, policy: str) -> None:
    _send(qtbot, win, policy)
    qtbot.waitUntil(lambda: bool(backend.sent and not win.answers.busy), timeout=5000)


def test_copy_puts_exactly_the_answer_on_the_clipboard(qtbot, window, fake_backend):
    _sent(qtbot, window, fake_backend, "placeholder")
    pane = window.answer
    QGuiApplication.clipboard().setText("something else")
    assert pane.copy_button.isEnabled()
    pane.copy_button.click()
    assert QGuiApplication.clipboard().text() == "Summary about Jane Doe and the plan."
    pane.tabs.setCurrentWidget(pane.raw)          # what the user sees: the raw answer
    pane.copy_button.click()
    assert QGuiApplication.clipboard().text() == fake_backend.answer_text


def test_save_writes_the_answer_as_markdown_and_text(qtbot, window, fake_backend, tmp_path,
                                                     monkeypatch):
    fake_backend.answer_text = "Words about <PERSON_1>."
    _sent(qtbot, window, fake_backend, "dx-all")       # a d_X send: the note is saved too
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


def test_dx_note_after_a_dx_send_and_not_after_placeholders(qtbot, window, fake_backend):
    pane = window.answer
    _sent(qtbot, window, fake_backend, "placeholder")
    assert not pane.notes.isVisibleTo(pane)
    assert "Placeholders were restored locally" in pane.status.text()
    assert "d_X" not in pane.status.text()

    fake_backend.sent.clear()
    _sent(qtbot, window, fake_backend, "dx-all")
    assert pane.notes.isVisibleTo(pane) and NOISE_NOTE in pane.notes.text()
    assert "Placeholders were restored" not in pane.status.text()
    assert "Nothing was restored" in pane.status.text()


def test_the_cores_notes_stand_beside_the_answer_not_in_it(qtbot, window, fake_backend):
    withheld = ("1 secret was not restored: <API_KEY_1> — credentials are never put back "
                "into a model's answer.")
    fake_backend.result_notes = (withheld,)
    _sent(qtbot, window, fake_backend, "placeholder")
    assert withheld in window.answer.notes.text() and window.answer.notes.isVisibleTo(
        window.answer)
    assert withheld not in window.answer.restored.toPlainText()


def test_answer_cut_on_length_ends_at_a_sentence_and_says_so(qtbot, window, fake_backend):
    fake_backend.answer_text = "One full sentence about <PERSON_1>. And a second one that"
    fake_backend.finish_reason = "length"
    _sent(qtbot, window, fake_backend, "placeholder")
    assert window.answer.restored.toPlainText() == "One full sentence about Jane Doe."
    assert LENGTH_NOTE in window.answer.notes.text()
    assert window.answer.raw.toPlainText() == fake_backend.answer_text   # as received


def test_an_answer_the_audit_log_could_not_store_is_shown_with_a_note(qtbot, window,
                                                                       fake_backend):
    said = ("The answer is shown, but the audit log could not store its text (the disk is "
            "full); record 1 says so.")
    fake_backend.audit_error = said
    _sent(qtbot, window, fake_backend, "placeholder")
    pane = window.answer
    assert pane.restored.toPlainText() == "Summary about Jane Doe and the plan."
    assert pane.notes.isVisibleTo(pane) and said in pane.notes.text()


def test_a_looping_local_answer_is_stopped_and_ends_before_the_repeat(qtbot, window,
                                                                     fake_backend):
    fake_backend.local_text = ("The memo moves the office to the new floor. "
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
    assert fake_backend.rows[-1]["kind"] == "local"


def test_stop_says_stopping_keeps_the_partial_and_send_stays_disabled(qtbot, window,
                                                                     fake_backend):
    fake_backend.delay = 0.3
    fake_backend.answer_text = " ".join(f"w{i}" for i in range(60))
    _send(qtbot, window, "placeholder")
    pane = window.answer
    qtbot.waitUntil(lambda: bool(pane.restored.toPlainText()), timeout=5000)
    assert window.answers.busy and not window.send_button.isEnabled()
    assert not window.local_button.isEnabled()
    qtbot.keyClick(window, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert len(fake_backend.plans) == 1           # Ctrl+Enter does nothing while streaming
    pane.stop.click()
    assert pane.stop.text() == "Stopping…" and not pane.stop.isEnabled()
    partial = pane.restored.toPlainText()
    qtbot.waitUntil(lambda: bool(not window.answers.busy), timeout=3000)
    assert pane.status.text().startswith("Stopped by you")
    assert pane.restored.toPlainText() == partial and partial
    assert window.send_button.isEnabled()


def test_answer_pane_grows_when_an_answer_starts(qtbot, window, fake_backend):
    split = window.findChild(qt_answer_pane.QSplitter, "vsplit")
    before = split.sizes()[1]
    _sent(qtbot, window, fake_backend, "placeholder")
    after = split.sizes()
    assert after[1] > before and after[1] >= 0.5 * sum(after)
