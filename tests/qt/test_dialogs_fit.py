"""The dialogs a send goes through fit a 1366×768 screen at 150 % scaling (910×512
logical pixels): the confirmation with many leftover items, Settings, History."""

from __future__ import annotations

from ports import real_plan
from PySide6.QtWidgets import QAbstractButton, QScrollArea, QWidget

from preflight.core.send.plan import Finding
from preflight.core.types import Category
from preflight.qt.qt_dialogs import QtConfirmSendDialog
from preflight.qt.qt_history import QtHistoryDialog
from preflight.qt.qt_settings import QtSettingsDialog

SMALL = (910, 512)


def _fits(qtbot, dlg: QWidget) -> None:
    qtbot.addWidget(dlg)
    dlg.resize(*SMALL)
    dlg.show()
    qtbot.waitExposed(dlg)
    hint = dlg.minimumSizeHint()
    assert hint.width() <= SMALL[0] and hint.height() <= SMALL[1], hint
    assert dlg.width() <= SMALL[0] and dlg.height() <= SMALL[1]
    # every button is on the dialog, or in a scroll area that can bring it into view
    for b in dlg.findChildren(QAbstractButton):
        if not b.isVisibleTo(dlg):
            continue
        area = next((p for p in _parents(b) if isinstance(p, QScrollArea)), None)
        if area is not None:
            area.ensureWidgetVisible(b)
        top_left = b.mapTo(dlg, b.rect().topLeft())
        assert 0 <= top_left.x() and top_left.x() + b.width() <= dlg.width() + 1, b.text()
        assert 0 <= top_left.y() and top_left.y() + b.height() <= dlg.height() + 1, b.text()


def _parents(w: QWidget):
    p = w.parentWidget()
    while p is not None:
        yield p
        p = p.parentWidget()


def test_the_confirmation_with_many_leftover_items_fits(qtbot, rig):
    findings = [Finding(f"person-{i}", "PERSON", Category.DIRECT_IDENTIFIER,
                        f"Person Number{i}", "document", 0, 10, 0.85, True,
                        "a value of the original the policy protects", "leak")
                for i in range(14)]
    plan = real_plan(rig, "https://api.example.com/v1", " ".join(
        f"Person Number{i} met the board about the merger plan." for i in range(40)),
        findings=findings)
    _fits(qtbot, QtConfirmSendDialog(plan))


def test_settings_and_history_fit(qtbot, door):
    for tab in ("providers", "models", "policy", "answers"):
        _fits(qtbot, QtSettingsDialog(door, tab=tab))
    rows = [{"id": i, "created_at": "2026-03-04T08:12:44+00:00", "provider": "acme",
             "model": "acme-1", "method": "placeholder", "status": "done",
             "payload": "Hello <PERSON_1>. " * 30, "answer_raw": "Hi <PERSON_1>.",
             "answer_restored": None, "overrides": "[]"} for i in range(40)]
    _fits(qtbot, QtHistoryDialog(rows))
