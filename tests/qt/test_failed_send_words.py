"""A send to a provider that is down ends in the user's words, and the answer pane keeps
what to do after the message box is closed (no OS error numbers, no CLI commands)."""

from __future__ import annotations

import socket

from conftest import SAMPLE
from PySide6.QtWidgets import QMessageBox
from ports import window_settings
from windows import confirm_plans, open_window


def test_a_provider_that_is_down_says_so_and_what_to_do(qtbot, rig):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]                  # closed again: nothing listens there
    win = open_window(qtbot, rig.doorway(window_settings(f"http://127.0.0.1:{port}/v1",
                                                         policy="placeholder")))
    win.original.setPlainText(SAMPLE)
    qtbot.waitUntil(lambda: bool(win.payload.fresh_result is not None
                                 and win.send_button.isEnabled()), timeout=8000)
    confirm_plans(win)
    win.send_button.click()
    qtbot.waitUntil(lambda: bool(win.answer.status.text().startswith("Failed:")),
                    timeout=15000)
    pane = win.answer.status.text()
    assert "could not reach 127.0.0.1" in pane
    assert "Check that the server is running" in pane       # the hint stays in the pane
    for jargon in ("Errno", "ConnectionError", "preflight providers", "--"):
        assert jargon not in pane, pane
    box = next(b for b in win.findChildren(QMessageBox) if b.objectName() == "errorBox")
    assert box.text() in pane
