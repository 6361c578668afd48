"""The window for keyboard and screen-reader users, and where its file dialogs open:
inputs announce their labels, Tab reaches the toolbar, a base URL that would be refused
is said at once and not saved, and Open / Save / Export start in the documents folder."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QStandardPaths, Qt
from PySide6.QtWidgets import QComboBox, QFileDialog, QToolBar, QToolButton

from preflight.core.config import settings_path


def test_every_combo_box_announces_its_label(qtbot, window):
    dlg = window.open_settings("providers")
    for root in (window, dlg):
        for combo in root.findChildren(QComboBox):
            name = combo.accessibleName()
            assert name, combo.objectName() or combo.currentText()
            assert name != combo.currentText()           # the label, not the value
    assert window.controls.policy.accessibleName() == "Policy"
    assert dlg.theme.accessibleName() == "Theme"
    assert dlg.providers.style.accessibleName() == "API style"
    dlg.reject()


def test_tab_reaches_the_toolbar_buttons(qtbot, window):
    bar = window.findChild(QToolBar, "mainToolbar")
    buttons = [bar.widgetForAction(a) for a in bar.actions()
               if isinstance(bar.widgetForAction(a), QToolButton)]
    assert [b.defaultAction() for b in buttons] == [window.act_open, window.act_settings,
                                                    window.act_history]
    assert all(b.focusPolicy() & Qt.FocusPolicy.TabFocus for b in buttons)


def test_a_base_url_without_a_scheme_is_refused_with_a_message(qtbot, window):
    dlg = window.open_settings("providers")
    tab = dlg.providers
    tab.base_url.setText("api.example.com/v1")
    tab.base_url.editingFinished.emit()
    assert tab.url_problem.isVisibleTo(dlg)
    assert "not an http:// or https:// address" in tab.url_problem.text()
    shown: list[str] = []
    from preflight.qt import qt_settings

    original = qt_settings.show_error
    qt_settings.show_error = lambda _p, message, hint="": shown.append(message)
    try:
        dlg.accept()
    finally:
        qt_settings.show_error = original
    assert shown and "invalid base URL" in shown[0]
    assert dlg.isVisible() and not settings_path().exists()     # nothing saved
    tab.base_url.setText("https://api.example.com/v1")
    tab.base_url.editingFinished.emit()
    assert not tab.url_problem.isVisibleTo(dlg)
    dlg.reject()


def test_file_dialogs_open_in_the_documents_folder(qtbot, window, monkeypatch):
    docs = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.DocumentsLocation)
    seen: list[str] = []

    def ask(_parent, _title, start="", _filters="", *_a, **_k):
        seen.append(start)
        return "", ""

    monkeypatch.setattr(QFileDialog, "getOpenFileName", ask)
    monkeypatch.setattr(QFileDialog, "getSaveFileName", ask)
    window.act_open.trigger()
    window.answer.save_answer()
    from preflight.qt.qt_history import QtHistoryDialog

    history = QtHistoryDialog([], window)
    qtbot.addWidget(history)
    history._export()
    assert len(seen) == 3
    assert all(Path(s) == Path(docs) or Path(s).parent == Path(docs) for s in seen), seen
    assert Path.cwd() not in [Path(s) for s in seen]
