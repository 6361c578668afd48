"""Stop and the answer length over the REAL core: the real window, send session and
stream reader against a loopback provider that streams slowly, and the real SmolLM2 for
a local answer. Esc must stop either without waiting for the rest of the stream, and nothing more may
appear. (How fast a stop is, is measured by a benchmark, not asserted here: timings on a
loaded machine are noisy.)"""

from __future__ import annotations

import json
import time

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
WORDS = 200                  # the loopback answer: 200 words, one every 0.2 s (40 s)
STOP_BEFORE_S = 10.0         # far below what waiting for the rest of the stream would take


@pytest.fixture
def real_window(qtbot, monkeypatch):
    require_model("slm")
    import keyring
    from keyring.backends import null

    monkeypatch.setattr(keyring, "get_keyring", lambda: null.Keyring())   # never the user's
    from preflight.app.window_doorway import WindowDoorway
    from preflight.qt.qt_app import build_window

    words = [f"word{i}." for i in range(WORDS)]
    with LoopbackLLM(words, delay=0.0) as server:
        s = Settings()
        s.policy.active = "placeholder"
        s.providers.append(ProviderSettings(name="loopback", base_url=server.base_url,
                                            model="tiny"))
        backend = WindowDoorway(s)              # saves under the tests' PREFLIGHT_HOME
        win = build_window(backend, theme="light")
        win.utility._refine_timer.setInterval(10**7)   # no SLM refinement competing for the CPU
        qtbot.addWidget(win)
        win.show()
        win.start()
        yield win, server, backend
        win.controllers.cancel_all()
        wait_all(60000)
        backend.shutdown()


def confirm_all(dlg) -> bool:
    """The confirmation dialog, answered yes to every question."""
    for box in dlg.overrides.values():
        box.setChecked(True)
    if dlg.resend is not None:
        dlg.resend.setChecked(True)
    return True


def _esc_and_time(qtbot, win) -> float:
    """Press Esc in the answer view (where the user's focus is) and time the stop."""
    win.answer.restored.setFocus()
    t0 = time.monotonic()
    qtbot.keyClick(win.answer.restored, Qt.Key.Key_Escape)
    assert win.answer.stop.text() == "Stopping…"
    qtbot.waitUntil(lambda: bool(not win.answers.busy), timeout=30_000)
    return time.monotonic() - t0


def test_answer_length_setting_and_esc_stop_cloud_and_local(qtbot, real_window):
    win, server, backend = real_window
    win.original.setPlainText(DOC)
    qtbot.waitUntil(lambda: bool(win.payload.fresh_result is not None), timeout=300_000)

    # The length set in Settings → Answers reaches the body the provider receives.
    dlg = win.open_settings("answers")
    dlg.answers.max_tokens.setValue(1234)
    dlg.accept()
    assert backend.settings.answer_max_tokens == 1234

    win.auto_confirm = confirm_all
    server.delay = 0.2                              # a slowly streaming model
    qtbot.waitUntil(lambda: bool(win.send_button.isEnabled()), timeout=60_000)
    win.send_button.click()
    qtbot.waitUntil(lambda: bool(win.answer.restored.toPlainText()), timeout=120_000)
    assert json.loads(server.bodies[-1])["max_tokens"] == 1234
    assert not win.send_button.isEnabled()          # no second send while it streams

    took = _esc_and_time(qtbot, win)
    shown = win.answer.restored.toPlainText()
    assert took < STOP_BEFORE_S, f"the cloud answer stopped {took:.2f} s after Esc"
    assert len(shown.split()) < WORDS // 2, "the stream ran on after Esc"
    assert win.answer.status.text().startswith("Stopped by you") and shown
    qtbot.wait(800)                                 # four more words would have come
    assert win.answer.restored.toPlainText() == shown
    rows = backend.history()
    assert rows[0]["status"] == "cancelled"

    # The real local model: Esc while it streams its answer.
    qtbot.waitUntil(lambda: bool(win.local_button.isEnabled()), timeout=30_000)
    win.local_button.click()
    qtbot.waitUntil(lambda: bool(win.answer.restored.toPlainText()) or not win.answers.busy,
                    timeout=300_000)
    assert win.answers.busy, "the local model finished before Esc could be pressed"
    took = _esc_and_time(qtbot, win)
    assert took < STOP_BEFORE_S, f"the local answer stopped {took:.2f} s after Esc"
    shown = win.answer.restored.toPlainText()
    assert win.answer.status.text().startswith("Stopped by you") and shown
    qtbot.wait(800)
    assert win.answer.restored.toPlainText() == shown
