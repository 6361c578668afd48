"""End to end over the REAL core: paste → highlights → ε slider → preview changes → send to
a loopback OpenAI-compatible server → restored answer shown → history row.

Real detector (Presidio + spaCy), real d_X (SmolLM2's token embedding), real operators
and vault, real send session (exact payload, re-scan, audit log in a tmp PREFLIGHT_HOME).
"""

from __future__ import annotations

import json

import pytest
from loopback import LoopbackLLM

from preflight.core.config import ProviderSettings, Settings
from preflight.qt.qt_workers import wait_all

pytestmark = pytest.mark.slow

DOC = ("Jane Doe met Max Power in Berlin on 3 March 2024. Please write to "
       "jane.doe@example.com or call +1 415 555 0134 about the merger plan; the board "
       "wants a short summary of the risks before Friday.")


@pytest.fixture
def real_window(qtbot, monkeypatch):
    import keyring
    from keyring.backends import null

    monkeypatch.setattr(keyring, "get_keyring", lambda: null.Keyring())   # never the user's
    from preflight.app.window_doorway import WindowDoorway
    from preflight.qt.qt_app import build_window

    with LoopbackLLM(["Summary:", "<PERSON_1>", "met", "<PERSON_2>", "about", "a",
                      "merger."]) as server:
        s = Settings()
        s.providers.append(ProviderSettings(name="loopback", base_url=server.base_url,
                                            model="tiny"))
        backend = WindowDoorway(s)
        win = build_window(backend, theme="light")
        win.utility._refine_timer.setInterval(10**7)   # the SLM's refinement is tested elsewhere
        qtbot.addWidget(win)
        win.show()
        win.start()
        yield win, server, backend
        win.controllers.cancel_all()
        wait_all(30000)
        backend.shutdown()


def test_paste_slider_send_restore_history(qtbot, real_window):
    win, server, backend = real_window
    win.original.setPlainText(DOC)
    qtbot.waitUntil(lambda: bool(win.doc.detections_done), timeout=120_000)
    found = {(s.type, DOC[s.start:s.end]) for s in win.doc.spans}
    assert ("PERSON", "Jane Doe") in found and ("EMAIL_ADDRESS", "jane.doe@example.com") in found
    assert len(win.original.highlighter.ranges) == len(win.doc.spans) >= 3

    # d_X: wait for the calibrated range and the prepared document, then move the slider.
    box = win.controls.policy
    qtbot.waitUntil(lambda: bool(box.findData("identifiers-dx") >= 0), timeout=30_000)
    box.setCurrentIndex(box.findData("identifiers-dx"))
    qtbot.waitUntil(lambda: bool(win.policies.epsilon_range or not win.policies.dx_ok),
                    timeout=300_000)
    assert win.policies.dx_ok, "d_X did not load (see the error dialog's text)"
    if win.policies.dx_ok:
        qtbot.waitUntil(lambda: bool(win.policies.epsilon_range and win.payload.prepared is not None
                                     and win.payload.result is not None), timeout=300_000)
        win.controls.slider.setValue(0)
        qtbot.waitUntil(lambda: bool(win.payload.result.epsilon == pytest.approx(
            win.policies.epsilon_range[0])), timeout=30_000)
        low = win.preview.toPlainText()
        win.controls.slider.setValue(1000)
        qtbot.waitUntil(lambda: bool(win.payload.result.epsilon == pytest.approx(
            win.policies.epsilon_range[1])), timeout=30_000)
        high = win.preview.toPlainText()
        assert low != high
        assert low != DOC
        assert len(win.preview.highlighter.ranges) == len(
            [c for c in win.payload.result.sanitized.changes if c.end > c.start])

    # Placeholders for the send, so the restored answer is checkable.
    box.setCurrentIndex(box.findData("placeholder"))
    qtbot.waitUntil(lambda: bool(win.payload.result and win.payload.result.sanitized.method
                                 == "placeholder"), timeout=30_000)
    payload_text = win.payload.result.sanitized.text
    assert "Jane Doe" not in payload_text and "<PERSON_1>" in payload_text

    confirmed = []

    def confirm(dlg):
        confirmed.append(dlg.payload.toPlainText())
        for box in dlg.overrides.values():       # phone/email left? (should not be)
            box.setChecked(True)
        return True

    win.auto_confirm = confirm
    qtbot.waitUntil(lambda: bool(win.send_button.isEnabled()), timeout=30_000)
    win.send_button.click()
    qtbot.waitUntil(lambda: bool(server.bodies), timeout=120_000)
    qtbot.waitUntil(lambda: bool(not win.answers.busy and "Done" in win.answer.status.text()
                                 or "Failed" in win.answer.status.text()), timeout=180_000)
    assert "Failed" not in win.answer.status.text(), win.answer.status.text()
    restored = win.answer.restored.toPlainText()
    assert "Jane Doe" in restored and "Max Power" in restored
    assert "<PERSON_1>" in win.answer.raw.toPlainText()

    sent = server.bodies[0]
    body = json.loads(sent)
    assert body["model"] == "tiny"
    for value in ("Jane Doe", "Max Power", "jane.doe@example.com"):
        assert value.encode() not in sent
    assert "<PERSON_1>" in confirmed[0]

    rows = backend.history()
    assert rows and rows[0]["status"] == "done" and rows[0]["provider"] == "loopback"
    got = []
    win.sig_history_shown.connect(got.append)
    win.open_history()
    qtbot.waitUntil(lambda: bool(got), timeout=10_000)
    assert got[0].table.rowCount() >= 1
    assert got[0].table.item(0, 2).text() == "done"
    got[0].close()
