"""The Privacy group of the assessment panel, the attack curve on the chart and the privacy
line of the send confirmation: the real window, offscreen, over the fake doorway."""

from __future__ import annotations

import time

from fakes import ORG_SAMPLE, SAMPLE, FakeBackend, open_window

from preflight.core.config import ProviderSettings, Settings
from preflight.core.send.audit import PriorSend
from preflight.qt.privacy_ops import ATTACK_SETTLE_MS
from preflight.qt.qt_privacy_panel import ATTACK_TIP, LEDGER_TIP, QUASI_TIP, RECON_TIP
from preflight.qt.qt_workers import wait_all


def _backend(policy: str = "dx-all", **kw) -> FakeBackend:
    s = Settings()
    s.policy.active = policy
    s.providers.append(ProviderSettings(name="loopback", base_url="http://127.0.0.1:9/v1",
                                        model="test-model"))
    return FakeBackend(s, **kw)


def _open(qtbot, backend, text=SAMPLE):
    win = open_window(qtbot, backend)
    qtbot.waitUntil(lambda: bool(win.doc.policy is not None), timeout=3000)
    win.original.setPlainText(text)
    qtbot.waitUntil(lambda: bool(win.doc.detections_done and win.doc.result is not None),
                    timeout=5000)
    return win


def _settled(win) -> bool:
    """Detection, preview and the attack are done for the payload on screen."""
    d, p = win.doc, win.privacy
    return bool(d.detections_done and not d._detect.busy and not d._preview.busy
                and d.result is not None and p.attack is not None and p.facts is not None
                and p._curve_of is d.prepared and p.attack["epsilon"] == d.result.epsilon)


def _close(win):
    win.doc.cancel_all()
    win.privacy.cancel_all()
    wait_all(3000)


def test_privacy_group_shows_the_doorways_attack_and_ledger(qtbot):
    backend = _backend()
    backend.prior_sends = (PriorSend(1, "2026-11-20T10:00:00", "loopback", "dx", 20.0,
                                     "exact", 1.0, spent=20.0),)
    win = _open(qtbot, backend)
    p, group = win.privacy, win.assessment.privacy
    qtbot.waitUntil(lambda: _settled(win), timeout=8000)
    dx = p.attack
    eps = win.doc.result.epsilon
    assert dx["epsilon"] == eps                           # measured at the slider's ε
    assert group.title() == "Privacy"
    text = group.attack.text()
    assert "An attacker who knows the method recovers about" in text
    assert f"{dx['success']:.0%}" in text and f"{dx['identity']:.0%}" in text
    assert group.attack.toolTip().startswith(ATTACK_TIP)
    assert f"ε {eps:.3g}" in group.attack.toolTip()       # this payload's own figures
    # the ledger adds this send's ε to the earlier send's 20
    assert f"20 over 1 earlier send(s) + {eps:.3g} now = {20 + eps:.3g}" in \
        group.ledger.text()
    assert group.ledger.toolTip() == LEDGER_TIP and group.quasi.toolTip() == QUASI_TIP
    _close(win)


def test_quasi_identifiers_left_and_no_dx_wording(qtbot):
    win = _open(qtbot, _backend("identifiers"), ORG_SAMPLE)    # keeps the organization
    p, group = win.privacy, win.assessment.privacy
    qtbot.waitUntil(lambda: bool(p.facts and p.facts["quasi_identifiers"]), timeout=5000)
    assert [q["value"] for q in p.facts["quasi_identifiers"]] == ["Acme Corp"]
    assert "1 quasi-identifier(s) left as written: Acme Corp" in group.quasi.text()
    assert group.attack.text().startswith("No d_X noise: protected values are replaced")
    assert p.attack is None and win.privacy.uses_dx is False
    _close(win)


def test_chart_draws_the_attack_curve_beside_the_utility_curve(qtbot):
    win = _open(qtbot, _backend())
    chart = win.assessment.chart
    qtbot.waitUntil(lambda: bool(chart.attack.count() >= 9 and chart.series.count() > 0),
                    timeout=5000)
    names = [m.label() for m in chart.chart().legend().markers() if m.isVisible()]
    assert "utility" in names and "attack" in names
    assert chart.attack.pen().color() != chart.series.pen().color()
    # the attack's own curve, shared axes: its points are the doorway's
    curve = [(pt.x(), pt.y()) for pt in chart.attack.points()]
    assert curve == sorted(curve) and all(0 <= s <= 1 for _e, s in curve)
    assert chart.attack.attachedAxes() == chart.series.attachedAxes()
    assert chart.attack_current.count() == 1
    assert chart.recommended in chart.chart().series()   # the recommended ε stays
    # a policy without d_X clears it
    box = win.controls.policy
    box.setCurrentIndex(box.findData("placeholder"))
    qtbot.waitUntil(lambda: bool(chart.attack.count() == 0), timeout=5000)
    _close(win)


def test_slider_cancels_the_running_attack_and_measures_where_it_settles(qtbot):
    backend = _backend()
    win = _open(qtbot, backend)
    qtbot.waitUntil(lambda: _settled(win), timeout=8000)
    curve_runs = sum(1 for _e, c in backend.attack_calls if c)
    backend.attack_delay = 1.0                        # each point now takes a second
    slider = win.controls.slider
    slider.setValue(300)
    qtbot.waitUntil(lambda: bool(backend.attack_calls[-1][1] is False), timeout=3000)
    started = time.monotonic()
    for v in (500, 650, 800):                          # the user keeps dragging
        slider.setValue(v)
        qtbot.wait(30)
    assert time.monotonic() - started < 0.5          # the GUI thread never waited
    final = win.doc.epsilon
    qtbot.waitUntil(lambda: bool(win.privacy.attack is not None
                                 and win.privacy.attack["epsilon"] == win.doc.result.epsilon),
                    timeout=8000)
    assert backend.attack_cancelled >= 1             # the stale run stopped
    assert abs(win.privacy.attack["epsilon"] - final) < 1e-9
    # the curve was not recomputed for slider steps: same preparation
    assert sum(1 for _e, c in backend.attack_calls if c) == curve_runs
    # steps while dragging did not each start an attack: they settle first
    assert len([e for e, c in backend.attack_calls if not c]) <= 3
    assert f"{win.privacy.attack['success']:.0%}" in win.assessment.privacy.attack.text()
    assert ATTACK_SETTLE_MS >= 200
    _close(win)


def test_try_to_reidentify_runs_on_demand_and_a_new_payload_clears_it(qtbot):
    win = _open(qtbot, _backend("placeholder"))
    group = win.assessment.privacy
    qtbot.waitUntil(lambda: bool(win.doc.result and "<PERSON_1>"
                                 in win.doc.result.sanitized.text), timeout=5000)
    assert win.privacy.reconstruction is None         # never on its own
    assert group.reidentify.toolTip() == RECON_TIP
    group.reidentify.click()
    qtbot.waitUntil(lambda: bool(win.privacy.reconstruction is not None), timeout=5000)
    # the fake model restores the first replaced value: the core scores it
    assert "The local model re-identified 1 of 3 protected value(s): Jane Doe (PERSON)" \
        in group.reidentified.text()
    assert group.reidentify.isEnabled()
    win.original.setPlainText(SAMPLE + " Also Ann Lee.")
    qtbot.waitUntil(lambda: bool(win.privacy.reconstruction is None), timeout=5000)
    assert "Not tried yet" in group.reidentified.text()
    _close(win)


def test_send_confirmation_repeats_the_privacy_summary(qtbot):
    backend = _backend()
    win = _open(qtbot, backend)
    qtbot.waitUntil(lambda: _settled(win), timeout=8000)
    shown = []
    win.auto_confirm = lambda dlg: (shown.append(dlg), False)[1]
    win.send_button.click()
    qtbot.waitUntil(lambda: bool(shown), timeout=3000)
    text = shown[0].privacy.text()
    dx = win.privacy.attack
    assert shown[0].privacy.isVisibleTo(shown[0])
    assert f"recovers about {dx['success']:.0%} of the noised words" in text
    assert "quasi-identifier(s) left as written" in text
    assert "ε spent on this document: nothing yet (first send)" in text
    _close(win)
