"""One conversation per document in the window (fake ports, a loopback provider): a
follow-up typed in the question field goes with Ctrl+Enter from that field, one
confirmation and no resend tick, carrying the provider's raw answer; History shows the
turns."""

from __future__ import annotations

import json

from conftest import ANSWER, SAMPLE
from PySide6.QtCore import Qt
from windows import confirm_plans

QUESTIONS = ("Who wrote the plan?", "When is Jane Doe due to present it?")


def _ask(qtbot, win, question: str) -> None:
    """Type ``question`` and press Ctrl+Enter in the question field (it keeps the focus,
    so it never reported the question by losing it)."""
    win.activateWindow()                 # as the user's window is when they type
    qtbot.waitUntil(win.isActiveWindow, timeout=5000)
    field = win.controls.question
    field.setFocus()
    field.clear()
    qtbot.keyClicks(field, question)
    qtbot.keyClick(field, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)


def test_a_follow_up_continues_the_conversation(qtbot, window, provider):
    shown = confirm_plans(window)
    window.policies.set_policy("placeholder")
    window.original.setPlainText(SAMPLE)
    window.controls.task.setCurrentIndex(window.controls.task.findData("question"))
    qtbot.waitUntil(lambda: bool(window.send_button.isEnabled()), timeout=5000)
    _ask(qtbot, window, QUESTIONS[0])
    qtbot.waitUntil(lambda: len(provider.bodies) == 1 and not window.answers.busy,
                    timeout=5000)
    assert "Jane Doe" in window.answer.restored.toPlainText()
    _ask(qtbot, window, QUESTIONS[1])
    qtbot.waitUntil(lambda: len(provider.bodies) == 2 and not window.answers.busy,
                    timeout=5000)
    assert len(shown) == 2 and all(d.resend is None for d in shown)
    assert window.answer.status.text().endswith("Turn 2 of this document's conversation.")
    messages = json.loads(provider.bodies[1])["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    # the raw answer as it came; the name the user typed back (read in the restored
    # answer) leaves as its placeholder, as in the document
    assert messages[2]["content"] == ANSWER
    assert messages[3]["content"] == "Question: When is <PERSON_1> due to present it?"
    assert b"Jane Doe" not in provider.bodies[1]
    said = shown[1].conversation.text()
    assert "Follow-up in the same conversation (turn 2)" in said and "adds ε 0" in said
    assert "provider's answers" in said and not shown[0].conversation.text()

    got = []
    window.sig_history_shown.connect(got.append)
    window.open_history()
    qtbot.waitUntil(lambda: bool(got), timeout=5000)
    table = got[0].table
    col = [table.horizontalHeaderItem(c).text() for c in range(table.columnCount())].index(
        "Conversation")
    labels = [table.item(r, col).text() for r in range(2)]        # newest first
    conv = window.app.conversation.id[:6]
    assert labels == [f"{conv} · turn 2", f"{conv} · turn 1"]
    assert "Follow-up" in got[0].detail.toPlainText()              # row 0 selected
    got[0].close()

    # a new document: a new conversation, whose first send carries no earlier turn
    window.original.selectAll()
    window.original.insertPlainText("Max Power moved the board meeting to Lyon.")
    assert window.app.conversation.next_turn == 1
