"""The company policy in the window: the red banner and disabled Send while the file is
broken, settings the company fixes cannot be loosened, the ε range is confined, and the
window's application layer reads the policy through the composition root (the real
window and application layer over the fake ports of ``tests/qt/ports.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "qt"))

from ports import SAMPLE, Rig, window_settings  # noqa: E402
from windows import open_window  # noqa: E402

from preflight.core.config import (  # noqa: E402
    ProviderSettings,
    Settings,
    load_settings,
    settings_path,
)
from preflight.core.org_policy import LOCKED_TEXT  # noqa: E402


def org_from(tmp_path: Path, monkeypatch, text: str) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setenv("PREFLIGHT_ORG_POLICY", str(path))


def door_with_org():
    """The window's application layer over fake ports, reading the company policy file
    (the ε range's top left to the calibration, as the window's is by default)."""
    settings = window_settings("http://127.0.0.1:9/v1", policy="identifiers")
    settings.policy.epsilon_max = None
    return Rig().doorway(settings)


def test_a_broken_policy_shows_a_red_banner_and_disables_send(qtbot, tmp_path, monkeypatch):
    org_from(tmp_path, monkeypatch, '[minimum.types]\nPERSON = "hide"\n')
    win = open_window(qtbot, door_with_org())
    win.original.setPlainText(SAMPLE)
    qtbot.waitUntil(lambda: bool(win.payload.result is not None and win.local_button.isEnabled()
                                 and win.doc.detections_done
                                 and win.payload.result.sanitized.text != SAMPLE), timeout=5000)
    assert win.org_banner.isVisible()
    text = win.org_banner.text.text()
    assert "Sending is disabled" in text and "policy.toml is invalid (line 2:" in text
    assert not win.send_button.isEnabled()          # local work goes on, sending does not


def test_a_valid_policy_shows_no_banner_and_send_works(qtbot, tmp_path, monkeypatch):
    org_from(tmp_path, monkeypatch, 'allowed_providers = ["http://127.0.0.1:9"]\n')
    win = open_window(qtbot, door_with_org())
    win.original.setPlainText(SAMPLE)
    qtbot.waitUntil(lambda: bool(win.send_button.isEnabled()), timeout=5000)
    assert not win.org_banner.isVisible()


def test_settings_lock_min_utility_and_epsilon(qtbot, tmp_path, monkeypatch):
    from preflight.qt.qt_settings import QtSettingsDialog

    org_from(tmp_path, monkeypatch, "min_utility = 0.6\n[epsilon]\nmin = 5\nmax = 50\n")
    door = door_with_org()
    dlg = QtSettingsDialog(door, tab="policy")
    qtbot.addWidget(dlg)
    pol = dlg.policy
    pol.min_util.setValue(0.2)
    assert pol.min_util.value() == pytest.approx(0.6)      # cannot go below the floor
    assert pol.eps_max.text() == "calibrated"       # then clamped to [5, 50] where used
    pol.eps_min.setValue(1)
    assert pol.eps_min.value() == 5
    pol.eps_max.setValue(500)
    assert pol.eps_max.value() == 50
    assert LOCKED_TEXT in pol.min_util.toolTip() and LOCKED_TEXT in pol.eps_min.toolTip()
    from PySide6.QtWidgets import QLabel

    notes = [w.text() for w in pol.findChildren(QLabel) if w.objectName() == "orgLocked"]
    assert notes == [f"ε stays within [5, 50] — {LOCKED_TEXT}", f"at least 0.6 — {LOCKED_TEXT}"]
    dlg.accept()
    assert load_settings().policy.min_utility == pytest.approx(0.6)
    assert door.min_utility() == pytest.approx(0.6)
    # what the window's application layer refuses when asked directly
    low = Settings()
    low.policy.min_utility = 0.1
    with pytest.raises(Exception, match="requires at least 0.6"):
        door.save_settings(low)
    assert door.epsilon_range() == (5, 50)


def test_adding_a_disallowed_provider_in_settings_is_refused(qtbot, tmp_path, monkeypatch):
    from preflight.qt import qt_providers_tab, qt_settings

    org_from(tmp_path, monkeypatch, 'allowed_providers = ["https://ok.test/v1"]\n')
    door = door_with_org()
    shown: list[tuple] = []
    for module in (qt_settings, qt_providers_tab):     # the dialog's OK, the tab's edits
        monkeypatch.setattr(module, "show_error", lambda parent, *msg: shown.append(msg))
    dlg = qt_settings.QtSettingsDialog(door, tab="providers")
    qtbot.addWidget(dlg)
    tab = dlg.providers
    tab._add()
    assert tab.base_url.text() == "https://ok.test/v1"      # the allowed address is offered
    tab.base_url.setText("https://evil.test/v1")
    tab._store_row()
    assert shown and "https://evil.test/v1 is not allowed" in shown[-1][0]
    assert tab.base_url.text() == "https://ok.test/v1"      # refused: the old one stays
    assert dlg.settings.providers[-1].base_url == "https://ok.test/v1"
    # a disallowed address that reached the copy another way is refused at OK
    dlg.settings.providers.append(ProviderSettings("sneaky", "https://evil.test/v1", "m"))
    dlg.accept()
    assert not settings_path().exists()
    assert "https://evil.test/v1 is not allowed" in shown[-1][0]
    # the provider set up before the policy arrived stays (it just cannot be sent to)
    dlg.settings.providers.pop()
    dlg.accept()
    assert [p.name for p in load_settings().providers] == ["loopback", "provider"]


def test_the_application_reads_the_policy_and_clamps_the_range(tmp_path, monkeypatch):
    org_from(tmp_path, monkeypatch, "[epsilon]\nmin = 5\nmax = 20\n")
    door = door_with_org()
    lo, hi = door.services.dx().epsilon_range          # the embedding's calibrated range
    assert lo < 5 and hi > 20
    assert door.org_policy.epsilon_bounds == (5, 20)
    assert door.epsilon_range() == (5, 20)


def test_the_legend_cannot_loosen_a_locked_type(qtbot, tmp_path, monkeypatch):
    from ports import ORG_SAMPLE

    from preflight.core.sanitize.policy import Action

    org_from(tmp_path, monkeypatch, '[minimum.types]\nPERSON = "placeholder"\n')
    win = open_window(qtbot, door_with_org())
    win.original.setPlainText(ORG_SAMPLE)
    qtbot.waitUntil(lambda: bool(win.payload.result
                                 and "<PERSON_1>" in win.payload.result.sanitized.text
                                 and win.doc.detections_done), timeout=5000)
    errors = []
    win.policies.sig_error.connect(lambda msg, hint: errors.append(msg))
    win.policies.set_type_action("PERSON", Action.KEEP)
    assert errors and "PERSON cannot be keep" in errors[0]
    assert win.policies.policy.name == "identifiers" and not win.policies.modified
    assert "<PERSON_1>" in win.payload.result.sanitized.text
    win.policies.set_type_action("ORGANIZATION", Action.PLACEHOLDER)    # not locked
    qtbot.waitUntil(lambda: bool(win.payload.result
                                 and "<ORGANIZATION_1>" in win.payload.result.sanitized.text),
                    timeout=3000)
