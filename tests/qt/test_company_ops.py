"""A company deployment never runs degraded silently: the window shows a refused company
utility model and an unreachable central audit store (and the store's sync state), and
Settings → Local models edits, validates, locks and tests the company-hosted assessor.

The real window and application layer over fake ports; the company policy is a real file,
the central store's client a fake that can be unreachable (``ports.MemorySink``)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from loopback import LoopbackLLM
from ports import window_settings
from PySide6.QtWidgets import QMessageBox
from windows import open_window

from preflight.core.config import AssessorEndpointSettings, Settings
from preflight.core.org_policy import LOCKED_TEXT, OrgPolicy
from preflight.core.send.audit import AuditLog, Fingerprint

CENTRAL = '[audit.central]\nurl = "postgresql://u@db.corp.example:5432/preflight"\n'


def _company_policy(text: str) -> None:
    """The administrator's policy file (read when the window's services are built)."""
    Path(os.environ["PREFLIGHT_ORG_POLICY"]).write_text("version = 1\n" + text,
                                                         encoding="utf-8")


def _open(qtbot, rig, settings: Settings | None = None):
    return open_window(qtbot, rig.doorway(settings or window_settings()))


def test_a_refused_company_model_is_shown_with_the_reason(qtbot, rig, tmp_path):
    model = tmp_path / "company.joblib"
    model.write_bytes(b"not the file the policy names")
    _company_policy(f'[utility_model]\npath_or_url = "{model}"\nsha256 = "{"1" * 64}"\n')
    win = _open(qtbot, rig)
    notice = win.company_notice
    qtbot.waitUntil(notice.isVisible, timeout=10000)
    text = notice.text.text()
    assert "company model refused" in text and "sha256" in text
    assert "Using the shipped model; tell IT" in text
    assert not notice.central_state.isVisible()              # no central store named


def test_nothing_degraded_shows_nothing(qtbot, rig):
    win = _open(qtbot, rig)
    notice = win.company_notice
    qtbot.waitUntil(lambda: notice.utility is not None, timeout=10000)
    qtbot.wait(100)                                         # the central state came too
    assert notice.utility.source == "shipped" and notice.central is None
    assert not notice.isVisible()
    assert not notice.central_state.isVisible()


def test_central_store_state_in_the_status_bar_and_the_notice(qtbot, rig):
    _company_policy(CENTRAL)
    earlier = AuditLog()            # an earlier session's records, not yet in the store
    for n in range(12):
        earlier.begin(kind="send", status="done", fingerprint=Fingerprint.of(f"doc {n}"),
                      provider="p", model="m", method="placeholder")
    earlier.close()
    rig.sink.down = True
    win = _open(qtbot, rig)
    notice = win.company_notice
    qtbot.waitUntil(lambda: (notice.refresh(), "unreachable" in notice.central_state.text()
                             )[1], timeout=10000)
    assert notice.central_state.text() == "Central store: 12 record(s) waiting — unreachable"
    since = time.strftime("%H:%M", time.localtime(notice.central.failing_since))
    assert f"store unreachable since {since}" in notice.central_state.toolTip()
    assert notice.isVisible() and "12 record(s) waiting" in notice.text.text()
    assert "cannot be reached" in notice.text.text()
    # the store answers again: the next refresh says so and the warning goes away
    rig.sink.down = False
    win.app.services.audit_sync().wake()
    qtbot.waitUntil(lambda: (notice.refresh(),
                             notice.central_state.text() == "Central store: in sync")[1],
                    timeout=10000)
    assert not notice.isVisible()


def test_a_failing_status_call_is_shown_not_swallowed(qtbot, rig):
    from preflight.core.errors import ConfigError

    _company_policy(CENTRAL)
    rig.sink_error = ConfigError("No password for the central audit store.", "Set it.")
    win = _open(qtbot, rig)
    qtbot.waitUntil(win.company_notice.isVisible, timeout=10000)
    assert "No password for the central audit store. Set it." in \
        win.company_notice.text.text()


# --- Settings → Local models: the company assessor ------------------------------------------
def _real_dialog(qtbot, rig, settings: Settings | None = None):
    from preflight.qt.qt_settings import QtSettingsDialog

    door = rig.doorway(settings or Settings())
    dlg = QtSettingsDialog(door, tab="models")
    qtbot.addWidget(dlg)
    dlg.show()
    # the models tab checks the model files in the background: let it report first
    qtbot.waitUntil(lambda: bool(dlg.models.statuses), timeout=10000)
    return door, dlg


def test_test_button_asks_the_server_for_its_models_only(qtbot, rig):
    with LoopbackLLM(["hi"], models=("SmolLM2-135M-Instruct", "other")) as srv:
        _door, dlg = _real_dialog(qtbot, rig)
        box = dlg.models.assessor
        assert box.isEnabled() and not box.locked
        box.url.setText(srv.base_url)
        box.model.setText("SmolLM2-135M-Instruct")
        box.test.button.click()
        qtbot.waitUntil(lambda: box.test.state.text().startswith("✔"), timeout=5000)
        assert box.test.state.text() == \
            "✔ Connected — 2 models; SmolLM2-135M-Instruct is among them."
        assert [g[0] for g in srv.gets] == ["/v1/models"]
        assert srv.gets[0][2] == b"" and srv.bodies == []          # no document text
        box.url.setText(srv.base_url.removesuffix("/v1"))          # without /v1: the same
        box.model.setText("missing-model")
        box.test.button.click()
        qtbot.waitUntil(lambda: len(srv.gets) == 2 and box.test.state.text()
                        .startswith("✔"), timeout=5000)
        assert "missing-model is not among them" in box.test.state.text()
        dlg.reject()


def test_test_button_reports_a_server_that_is_down(qtbot, rig):
    with LoopbackLLM(["hi"]) as srv:
        url = srv.base_url
    _door, dlg = _real_dialog(qtbot, rig)                 # the server is gone now
    box = dlg.models.assessor
    box.url.setText(url)
    box.test.button.click()
    qtbot.waitUntil(lambda: box.test.state.text().startswith("✘"), timeout=8000)
    assert "could not reach 127.0.0.1" in box.test.state.text()
    assert "Check that the server is running" in box.test.state.text()
    dlg.reject()


def test_save_validates_and_stores_the_endpoint(qtbot, rig):
    from preflight.core.config import load_settings

    door, dlg = _real_dialog(qtbot, rig)
    box = dlg.models.assessor
    box.url.setText("ftp://gpu-box/v1")
    dlg.accept()
    qtbot.waitUntil(lambda: bool(dlg.findChildren(QMessageBox)), timeout=3000)
    err = dlg.findChildren(QMessageBox)[-1]
    assert "must be an http(s) URL with a host" in err.text()
    assert "Settings → Local models" in err.informativeText()
    assert dlg.isVisible() and load_settings().assessor_endpoint is None
    err.close()
    box.url.setText("http://gpu-box.corp.example:8000/v1")
    box.model.setText("SmolLM2-135M-Instruct")
    # only the company policy marks a server internal: the user cannot tick it
    assert not box.internal.isEnabled() and not box.internal.isChecked()
    dlg.accept()
    saved = load_settings().assessor_endpoint
    assert saved == AssessorEndpointSettings("http://gpu-box.corp.example:8000/v1",
                                             "SmolLM2-135M-Instruct")
    assert door.settings.assessor_endpoint == saved
    assert "Only your organization's policy can mark a server internal" in \
        box.internal.toolTip()
    # clearing the URL assesses on this computer only again
    _door2, dlg2 = _real_dialog(qtbot, rig, load_settings())
    assert dlg2.models.assessor.url.text() == "http://gpu-box.corp.example:8000/v1"
    assert not dlg2.models.assessor.internal.isChecked()
    dlg2.models.assessor.url.setText("")
    dlg2.accept()
    assert load_settings().assessor_endpoint is None


def test_the_company_policy_locks_the_assessor(qtbot, rig):
    _company_policy('[assessor]\nurl = "http://gpu.corp.example:8000/v1"\n'
                    'model = "company-slm"\ninternal = false\n')
    settings = window_settings()
    settings.assessor_endpoint = AssessorEndpointSettings("http://mine:1/v1")
    win = _open(qtbot, rig, settings)
    dlg = win.open_settings("models")
    box = dlg.models.assessor
    assert box.locked
    assert box.url.text() == "http://gpu.corp.example:8000/v1" and not box.url.isEnabled()
    assert box.model.text() == "company-slm" and not box.internal.isChecked()
    assert not box.internal.isEnabled()
    notes = [lbl.text() for lbl in box.findChildren(type(box.test.state))
             if lbl.objectName() == "orgLocked"]
    assert notes == [f"The company assessor — {LOCKED_TEXT}"]
    dlg.accept()
    assert win.app.settings.assessor_endpoint == AssessorEndpointSettings(
        "http://mine:1/v1")                                    # the user's is kept as is
    assert OrgPolicy.none().assessor_endpoint is None
