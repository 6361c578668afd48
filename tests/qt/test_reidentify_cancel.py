"""“Try to re-identify” shows each step of the attempt and can be cancelled: the cancel
event reaches the local model (fake ports: a scripted model that takes its time)."""

from __future__ import annotations

from ports import SAMPLE, window_settings
from windows import open_window


def test_the_attempt_shows_its_steps_and_cancel_stops_the_model(qtbot, rig, provider):
    win = open_window(qtbot, rig.doorway(window_settings(provider.base_url, "placeholder")))
    win.utility._refine_timer.setInterval(10**7)   # no other work of the model in the way
    qtbot.waitUntil(lambda: bool(win.policies.policy is not None), timeout=3000)
    win.original.setPlainText(SAMPLE)
    qtbot.waitUntil(lambda: bool(win.payload.result and "<PERSON_1>"
                                 in win.payload.result.sanitized.text), timeout=5000)
    group = win.assessment.privacy
    assert "you can cancel it" in group.reidentified.text()
    rig.slm.stop_seen.clear()
    rig.slm.run_delay = 30.0                       # a slow, busy machine
    group.reidentify.click()
    # a step the user can read while it runs, and the button now cancels
    qtbot.waitUntil(lambda: "Waiting for the local model" in group.reidentified.text(),
                    timeout=5000)
    qtbot.waitUntil(lambda: "reconstruct" in rig.slm.calls, timeout=10000)   # it runs
    assert group.reidentify.isEnabled() and "Cancel" in group.reidentify.text()
    group.reidentify.click()
    # the model itself saw the cancel (not only the window forgetting its result)
    qtbot.waitUntil(rig.slm.stop_seen.is_set, timeout=5000)
    assert group.reidentified.text() == "Stopped; nothing was measured."
    assert group.reidentify.text() == "Try to re-identify"
    assert win.privacy.reconstruction is None
