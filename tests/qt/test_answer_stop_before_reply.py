"""Esc in the real window while the provider has the request but has not answered yet (no
status line, no headers: a queued request or a slow first token) stops without waiting for
the provider, over the real core send path, and the pane and the audit say so."""

from __future__ import annotations

import time

import pytest
import test_answer_stop_real as stop_real

pytestmark = pytest.mark.slow

DOC, STOP_BEFORE_S, _esc_and_time = stop_real.DOC, stop_real.STOP_BEFORE_S, stop_real._esc_and_time
real_window = stop_real.real_window      # the real window over a loopback provider
HANG_S = 30.0    # the provider answers only after this long


def test_esc_before_the_provider_answered_stops_without_waiting_for_it(qtbot, real_window):
    win, server, backend = real_window
    win.original.setPlainText(DOC)
    qtbot.waitUntil(lambda: bool(win.payload.fresh_result is not None), timeout=300_000)

    win.auto_confirm = stop_real.confirm_all
    server.hang = HANG_S
    qtbot.waitUntil(lambda: bool(win.send_button.isEnabled()), timeout=60_000)
    sent_before = len(server.bodies)
    win.send_button.click()
    qtbot.waitUntil(lambda: len(server.bodies) > sent_before, timeout=60_000)
    qtbot.wait(300)                                  # the provider sits on the request
    assert win.answers.busy and not win.answer.restored.toPlainText()

    # The user's window has the focus when they press Esc (offscreen, nothing is active
    # until a window is activated).
    win.activateWindow()
    qtbot.waitUntil(win.isActiveWindow, timeout=5_000)
    t0 = time.monotonic()
    took = _esc_and_time(qtbot, win)
    assert took < STOP_BEFORE_S, f"stopped {took:.2f} s after Esc"
    assert time.monotonic() - t0 < HANG_S             # not the provider's answer ending it
    assert win.answer.status.text() == "Stopped by you before any answer arrived."
    assert win.answer.restored.toPlainText() == ""
    row = backend.history()[0]
    assert row["status"] == "cancelled"
    assert "after the request was sent" in (row.get("error") or "")
