"""The Privacy group of the assessment panel, the attack curve on the chart and the privacy
line of the send confirmation: the real window and application layer, offscreen (fake
ports: the optimal attack runs on the fake token space with its own prior)."""

from __future__ import annotations

import time

from conftest import SAMPLE
from ports import ORG_SAMPLE, window_settings
from windows import confirm_plans, open_window

from preflight.core.errors import Cancelled
from preflight.qt.privacy_ops import ATTACK_SETTLE_MS, same_epsilon
from preflight.qt.qt_privacy_panel import ATTACK_TIP, LEDGER_TIP, QUASI_TIP, RECON_TIP


def _open(qtbot, rig, provider, policy: str = "dx-all", text=SAMPLE, door=None):
    door = door or rig.doorway(window_settings(provider.base_url, policy))
    win = open_window(qtbot, door)
    qtbot.waitUntil(lambda: bool(win.policies.policy is not None), timeout=3000)
    win.original.setPlainText(text)
    qtbot.waitUntil(lambda: bool(win.doc.detections_done and win.payload.result is not None),
                    timeout=5000)
    return win


def _settled(win) -> bool:
    """Detection, preview and the attack are done for the payload on screen."""
    d, pay, p = win.doc, win.payload, win.privacy
    return bool(d.detections_done and not d.detecting and not pay._preview.busy
                and pay.result is not None and p.attack is not None and p.facts is not None
                and p._curve_of is pay.prepared
                and same_epsilon(p.attack["epsilon"], pay.result.epsilon))


def test_privacy_group_shows_the_attack_and_the_ledger(qtbot, rig, provider):
    win = _open(qtbot, rig, provider)
    p, group = win.privacy, win.assessment.privacy
    # an earlier send of this document, at ε 20
    win.controls.eps_spin.setValue(20.0)
    qtbot.waitUntil(lambda: bool(win.payload.fresh_result is not None
                                 and win.payload.fresh_result.epsilon == 20.0), timeout=15000)
    confirm_plans(win, allow_all=True)
    win.send_button.click()
    qtbot.waitUntil(lambda: bool(provider.bodies and not win.answers.busy), timeout=20000)
    win.controls.eps_spin.setValue(30.0)               # this payload: ε 30
    qtbot.waitUntil(lambda: _settled(win) and win.payload.result.epsilon == 30.0,
                    timeout=8000)
    qtbot.waitUntil(lambda: "earlier send" in group.ledger.text(), timeout=5000)
    dx = p.attack
    eps = win.payload.result.epsilon
    assert same_epsilon(dx["epsilon"], eps)               # measured at the slider's ε
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


def test_quasi_identifiers_left_and_no_dx_wording(qtbot, rig, provider):
    win = _open(qtbot, rig, provider, "identifiers", ORG_SAMPLE)   # keeps the organization
    p, group = win.privacy, win.assessment.privacy
    qtbot.waitUntil(lambda: bool(p.facts and p.facts["quasi_identifiers"]), timeout=5000)
    assert [q["value"] for q in p.facts["quasi_identifiers"]] == ["Acme Corp"]
    assert "1 quasi-identifier(s) left as written: Acme Corp" in group.quasi.text()
    assert group.attack.text().startswith("No d_X noise: protected values are replaced")
    assert p.attack is None and win.privacy.uses_dx is False


def test_chart_draws_the_attack_curve_beside_the_utility_curve(qtbot, rig, provider):
    win = _open(qtbot, rig, provider)
    chart = win.assessment.chart
    qtbot.waitUntil(lambda: bool(chart.attack.count() >= 9 and chart.series.count() > 0),
                    timeout=8000)
    names = [m.label() for m in chart.chart().legend().markers() if m.isVisible()]
    assert "utility" in names and "attack" in names
    assert chart.attack.pen().color() != chart.series.pen().color()
    # the attack's own curve, shared axes: its points are the application's
    curve = [(pt.x(), pt.y()) for pt in chart.attack.points()]
    assert curve == sorted(curve) and all(0 <= s <= 1 for _e, s in curve)
    assert chart.attack.attachedAxes() == chart.series.attachedAxes()
    assert chart.attack_current.count() == 1
    assert chart.recommended in chart.chart().series()   # the recommended ε stays
    # a policy without d_X clears it
    box = win.controls.policy
    box.setCurrentIndex(box.findData("placeholder"))
    qtbot.waitUntil(lambda: bool(chart.attack.count() == 0), timeout=5000)


class AttackSpy:
    """Records the real attack's runs ((ε, with the curve)), and can make each one take
    ``delay`` seconds first, stopping at once when cancelled."""

    def __init__(self, attack, monkeypatch) -> None:
        self.real, self.calls, self.cancelled, self.delay = attack.run, [], 0, 0.0
        monkeypatch.setattr(attack, "run", self.run)

    def run(self, prepared, epsilon=None, grid=None, spans=None, cancel=None):
        self.calls.append((float(epsilon), grid is None))
        end = time.monotonic() + self.delay
        while time.monotonic() < end:
            if cancel is not None and cancel.is_set():
                self.cancelled += 1
                raise Cancelled()
            time.sleep(0.01)
        return self.real(prepared, epsilon=epsilon, grid=grid, spans=spans, cancel=cancel)


def test_slider_cancels_the_running_attack_and_measures_where_it_settles(qtbot, rig,
                                                                         provider,
                                                                         monkeypatch):
    door = rig.doorway(window_settings(provider.base_url))
    spy = AttackSpy(door.services.dx_attack(), monkeypatch)
    win = _open(qtbot, rig, provider, door=door)
    qtbot.waitUntil(lambda: _settled(win), timeout=8000)
    curve_runs = sum(1 for _e, c in spy.calls if c)
    spy.delay = 1.0                                   # each point now takes a second
    slider = win.controls.slider
    slider.setValue(300)
    qtbot.waitUntil(lambda: bool(spy.calls[-1][1] is False), timeout=3000)
    started = time.monotonic()
    for v in (500, 650, 800):                          # the user keeps dragging
        slider.setValue(v)
        qtbot.wait(30)
    assert time.monotonic() - started < 0.5          # the GUI thread never waited
    final = win.payload.epsilon
    qtbot.waitUntil(lambda: bool(win.privacy.attack is not None
                                 and same_epsilon(win.privacy.attack["epsilon"],
                                                  win.payload.result.epsilon)), timeout=8000)
    assert spy.cancelled >= 1                        # the stale run stopped
    assert same_epsilon(win.privacy.attack["epsilon"], final)
    # the curve was not recomputed for slider steps: same preparation
    assert sum(1 for _e, c in spy.calls if c) == curve_runs
    # steps while dragging did not each start an attack: they settle first
    assert len([e for e, c in spy.calls if not c]) <= 3
    assert f"{win.privacy.attack['success']:.0%}" in win.assessment.privacy.attack.text()
    assert ATTACK_SETTLE_MS >= 200


def test_try_to_reidentify_runs_on_demand_and_a_new_payload_clears_it(qtbot, rig,
                                                                       provider):
    rig.slm.restores = {"<PERSON_1>": "Jane Doe"}     # the model guesses the first name
    win = _open(qtbot, rig, provider, "placeholder")
    group = win.assessment.privacy
    qtbot.waitUntil(lambda: bool(win.payload.result and "<PERSON_1>"
                                 in win.payload.result.sanitized.text), timeout=5000)
    assert win.privacy.reconstruction is None         # never on its own
    assert group.reidentify.toolTip() == RECON_TIP
    group.reidentify.click()
    qtbot.waitUntil(lambda: bool(win.privacy.reconstruction is not None), timeout=5000)
    # the local model restored one replaced value: the core scores it
    assert "The local model re-identified 1 of 3 protected value(s): Jane Doe (PERSON)" \
        in group.reidentified.text()
    assert group.reidentify.isEnabled()
    win.original.setPlainText(SAMPLE + " Also Ann Lee.")
    qtbot.waitUntil(lambda: bool(win.privacy.reconstruction is None), timeout=5000)
    assert "Not tried yet" in group.reidentified.text()


def test_send_confirmation_repeats_the_privacy_summary(qtbot, rig, provider):
    win = _open(qtbot, rig, provider)
    qtbot.waitUntil(lambda: _settled(win), timeout=8000)
    shown = confirm_plans(win, accept=False)
    win.send_button.click()
    qtbot.waitUntil(lambda: bool(shown), timeout=5000)
    text = shown[0].privacy.text()
    dx = win.privacy.attack
    assert shown[0].privacy.isVisibleTo(shown[0])
    assert f"recovers about {dx['success']:.0%} of the noised words" in text
    assert "quasi-identifier(s) left as written" in text
    assert "ε spent on this document: nothing yet (first send)" in text


def test_a_new_payload_at_the_same_epsilon_does_not_run_the_attack_again(qtbot, rig,
                                                                         provider,
                                                                         monkeypatch):
    """The attack reports the ε it measured rounded (its memo key); a slider position is
    rarely round, and the same payload computed again must not look like a move."""
    door = rig.doorway(window_settings(provider.base_url))
    spy = AttackSpy(door.services.dx_attack(), monkeypatch)
    win = _open(qtbot, rig, provider, door=door)
    qtbot.waitUntil(lambda: _settled(win), timeout=8000)
    eps = win.payload.result.epsilon
    assert eps != round(eps, 6)                      # the middle of a log range
    runs, done = len(spy.calls), win.payload.previews_done
    win.payload.request(immediate=True)              # the same payload, computed again
    qtbot.waitUntil(lambda: win.payload.previews_done > done, timeout=3000)
    qtbot.wait(ATTACK_SETTLE_MS + 400)
    assert len(spy.calls) == runs and win.privacy.attack is not None
