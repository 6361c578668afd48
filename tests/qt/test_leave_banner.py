"""The banner above Send, on the real window and application layer (fake ports): under
d_X at the top of the ε range the names and the e-mail address stay in the payload and
the banner says so in words;
"Protect these" makes them placeholders for this document, and the banner and the payload
follow at once. Per-item "Allow this time" uses the per-span exclusion. Without a fresh
result the banner is hidden."""

from __future__ import annotations

from conftest import SAMPLE
from pytest import approx
from windows import confirm_plans

VALUES = ("Jane Doe", "Max Power", "jane.doe@example.com")


def _ready_at_top_epsilon(qtbot, win):
    win.original.setPlainText(SAMPLE)
    qtbot.waitUntil(lambda: bool(win.doc.detections_done and win.payload.prepared is not None
                                 and win.payload.fresh_result is not None), timeout=5000)
    top = win.policies.epsilon_range[1]
    win.controls.slider.setValue(1000)                     # the top of ε: words are kept
    qtbot.waitUntil(lambda: bool(win.payload.fresh_result is not None
                                 and win.payload.fresh_result.epsilon == approx(top)),
                    timeout=5000)


def _payload(qtbot, win) -> str:
    """The request body Send would carry (the plan is built, nothing is sent)."""
    shown = confirm_plans(win, accept=False)
    win.answers.prepare_send()
    qtbot.waitUntil(lambda: bool(shown), timeout=5000)
    return shown[-1].plan.payload.decode()


def test_banner_says_what_leaves_and_protect_these_fixes_it(qtbot, window):
    win, banner = window, window.leave_banner
    _ready_at_top_epsilon(qtbot, win)
    assert banner.isVisible()
    assert banner.text.text() == ("2 names and 1 e-mail address will leave your "
                                  "computer.")
    assert banner.summary.severity == "high" and banner.protect.isVisible()
    body = _payload(qtbot, win)
    assert all(v in body for v in VALUES)                  # the banner told the truth

    banner.protect.click()
    qtbot.waitUntil(lambda: bool(win.payload.fresh_result is not None and win.policies.modified),
                    timeout=5000)
    assert banner.text.text() == "Nothing identifying will leave your computer."
    assert not banner.protect.isVisible() and banner.summary.severity == "none"
    assert win.payload.epsilon == approx(win.policies.epsilon_range[1])
    assert win.policies.uses_dx                            # d_X stays on the rest
    shown = win.preview.toPlainText()
    body = _payload(qtbot, win)
    for v in VALUES:
        assert v not in shown and v not in body
    assert "<PERSON_1>" in body and "<EMAIL_ADDRESS_1>" in body
    assert "Berlin" in body                                # the rest is noised, not replaced


def test_allow_this_time_and_protect_again(qtbot, window):
    win, banner = window, window.leave_banner
    _ready_at_top_epsilon(qtbot, win)
    banner.protect.click()
    qtbot.waitUntil(lambda: bool(win.payload.fresh_result is not None and win.policies.modified
                                 and banner.summary.severity == "none"), timeout=5000)
    # Jane Doe only, for this send: the existing per-span exclusion
    jane = next(s for s in win.doc.spans if SAMPLE[s.start:s.end] == "Jane Doe")
    from preflight.app.leave_summary import LeavingItem

    item = LeavingItem("PERSON", jane.category, "Jane Doe", (jane,))
    menu_titles = [a.text() for a in banner.menu.actions()]
    assert menu_titles == []                               # nothing leaves: nothing to choose
    banner.toggle(item)
    qtbot.waitUntil(lambda: bool(win.payload.fresh_result is not None), timeout=5000)
    assert banner.text.text() == "You let 1 name through this time."
    assert banner.summary.severity == "low"
    assert "Jane Doe" in win.preview.toPlainText()
    (entry,) = banner.menu.actions()
    assert entry.text().startswith("Jane Doe  (name, allowed by you)")
    entry.menu().actions()[0].trigger()                    # "Protect again"
    qtbot.waitUntil(lambda: bool(win.payload.fresh_result is not None
                                 and banner.summary.severity == "none"), timeout=5000)
    assert "Jane Doe" not in win.preview.toPlainText()


def test_per_item_protect_switches_only_that_type(qtbot, window):
    win, banner = window, window.leave_banner
    _ready_at_top_epsilon(qtbot, win)
    titles = [a.text() for a in banner.menu.actions()]
    assert titles[0].startswith("jane.doe@example.com") or titles[0].startswith("Jane Doe")
    email = next(a for a in banner.menu.actions() if a.text().startswith("jane.doe@"))
    email.menu().actions()[0].trigger()                    # "Protect (every e-mail address…)"
    qtbot.waitUntil(lambda: bool(win.payload.fresh_result is not None and win.policies.modified),
                    timeout=5000)
    assert banner.text.text() == "2 names will leave your computer."
    assert "jane.doe@example.com" not in win.preview.toPlainText()


def test_banner_hidden_without_a_fresh_result(qtbot, window):
    win, banner = window, window.leave_banner
    assert not banner.isVisible()                          # nothing yet
    _ready_at_top_epsilon(qtbot, win)
    assert banner.isVisible()
    win.original.setPlainText(SAMPLE + " More text.")      # detection pending: not fresh
    assert win.payload.fresh_result is None and not banner.isVisible()
    qtbot.waitUntil(lambda: bool(win.payload.fresh_result is not None), timeout=5000)
    assert banner.isVisible()
