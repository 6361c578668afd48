"""One conversation per document over the REAL core: the real window, detector and send
session against a loopback provider that records every body. A follow-up question typed
in the question field goes with Ctrl+Enter from that field, one confirmation and no
resend tick; its request holds the provider's first answer as it was sent (placeholders),
never the values the window restored; History numbers the turns."""

from __future__ import annotations

import json

import pytest
from _models import require_model
from loopback import LoopbackLLM
from PySide6.QtCore import Qt

from preflight.core.config import ProviderSettings, Settings
from preflight.qt.qt_workers import wait_all

pytestmark = pytest.mark.slow

DOC = ("Jane Doe met Max Power in Berlin on 3 March 2024 about the merger plan. The board "
       "wants a short summary of the risks, the costs and the time line before Friday. "
       "The plan merges two teams of forty people and closes the Hamburg office.")
ANSWER = ["<PERSON_1>", "leads", "the", "merger", "plan."]
QUESTIONS = ("Who leads the merger plan?", "Which office does the plan close?")


@pytest.fixture
def real_window(qtbot, monkeypatch):
    require_model("slm")
    import keyring
    from keyring.backends import null

    monkeypatch.setattr(keyring, "get_keyring", lambda: null.Keyring())   # never the user's
    from preflight.app.window_doorway import WindowDoorway
    from preflight.qt.qt_app import build_window

    with LoopbackLLM(ANSWER) as server:
        s = Settings()
        s.policy.active = "identifiers"
        s.providers.append(ProviderSettings(name="loopback", base_url=server.base_url,
                                            model="tiny"))
        backend = WindowDoorway(s)              # saves under the tests' PREFLIGHT_HOME
        win = build_window(backend, theme="light")
        win.utility._refine_timer.setInterval(10**7)   # no SLM refinement competing for the CPU
        qtbot.addWidget(win)
        win.show()
        win.activateWindow()
        win.start()
        yield win, server, backend
        win.controllers.cancel_all()
        wait_all(60000)
        backend.shutdown()


def _ask_with_ctrl_enter(qtbot, win, question: str) -> None:
    """Type ``question`` in the question field and press Ctrl+Enter there (the field keeps
    the focus: it never reported the question by losing it)."""
    win.activateWindow()                 # as the user's window is when they type
    qtbot.waitUntil(win.isActiveWindow, timeout=5000)
    field = win.controls.question
    field.setFocus()
    field.clear()
    qtbot.keyClicks(field, question)
    qtbot.keyClick(field, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)


def test_follow_up_question_is_one_conversation(qtbot, real_window):
    win, server, backend = real_window
    shown = []

    def confirm(dlg) -> bool:
        shown.append(dlg)
        return True                              # one click: nothing ticked

    win.auto_confirm = confirm
    win.original.setPlainText(DOC)
    qtbot.waitUntil(lambda: bool(win.payload.fresh_result is not None), timeout=300_000)
    win.controls.task.setCurrentIndex(win.controls.task.findData("question"))
    qtbot.waitUntil(lambda: bool(win.send_button.isEnabled()), timeout=60_000)

    _ask_with_ctrl_enter(qtbot, win, QUESTIONS[0])
    qtbot.waitUntil(lambda: len(server.bodies) == 1 and not win.answers.busy, timeout=120_000)
    assert "Jane Doe leads" in win.answer.restored.toPlainText()     # restored in the window
    assert QUESTIONS[0] in json.loads(server.bodies[0])["messages"][1]["content"]

    _ask_with_ctrl_enter(qtbot, win, QUESTIONS[1])
    qtbot.waitUntil(lambda: len(server.bodies) == 2 and not win.answers.busy, timeout=120_000)
    assert len(shown) == 2 and all(d.resend is None for d in shown)   # no resend tick
    said = shown[1].conversation.text()
    assert "Follow-up in the same conversation (turn 2)" in said and "adds ε 0" in said
    messages = json.loads(server.bodies[1])["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[2]["content"] == " ".join(ANSWER)         # the raw answer, placeholders
    assert messages[3]["content"].endswith(QUESTIONS[1])
    assert b"Jane Doe" not in server.bodies[1] and b"Max Power" not in server.bodies[1]

    rows = backend.history()                    # newest first
    assert [r["turn"] for r in rows[:2]] == [2, 1]
    assert rows[0]["conversation"] == rows[1]["conversation"] is not None

    # a new document starts a new conversation
    win.original.selectAll()
    win.original.insertPlainText("Carol Diaz moved the board meeting to Lyon on Monday.")
    assert backend.conversation.next_turn == 1
