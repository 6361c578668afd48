"""Keyboard shortcuts of the main window and the Help → Keyboard shortcuts page.

The window's commands are :class:`QAction` objects (toolbar and menus) plus a few
:class:`QShortcut` objects (Send's two keys, Esc). The page lists them by reading those
objects at the moment it opens — text and key from the very objects that react to the
keys — so it cannot drift from what the keys actually do.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractButton,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QMainWindow,
    QMenu,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)


@dataclass(frozen=True)
class ShortcutRow:
    command: str
    keys: str          # as the platform shows them (e.g. "Ctrl+Return")


def _clean(text: str) -> str:
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&").rstrip(".…")


def _keys(sequences: list[QKeySequence]) -> str:
    return ", ".join(s.toString(QKeySequence.SequenceFormat.NativeText)
                     for s in sequences if not s.isEmpty())


def shortcut_rows(window: QWidget) -> list[ShortcutRow]:
    """Every action and shortcut of ``window`` that has a key, read from the objects."""
    rows: list[ShortcutRow] = []
    seen: set[int] = set()
    for action in window.findChildren(QAction):
        keys = _keys(action.shortcuts())
        if keys and id(action) not in seen and action.text():
            seen.add(id(action))
            rows.append(ShortcutRow(_clean(action.text()), keys))
    for shortcut in window.findChildren(QShortcut):
        keys = _keys([shortcut.key()])
        if keys and shortcut.whatsThis():
            rows.append(ShortcutRow(shortcut.whatsThis(), keys))
    return rows


def _button_action(window: QWidget, text: str, keys: str, button: QAbstractButton,
                   tip: str) -> QAction:
    """An action that presses ``button`` (so it does nothing while the button is off)."""
    action = QAction(text, window)
    action.setShortcut(QKeySequence(keys))
    action.setToolTip(tip)
    action.triggered.connect(lambda: button.isEnabled() and button.click())
    return action


def install_shortcuts(window: QMainWindow) -> None:
    """Give every main command a key and a menu entry, and add Help → Keyboard shortcuts.

    ``window`` is the :class:`~preflight.qt.qt_main_window.QtMainWindow`; its toolbar
    actions (Open, Settings, History) and Send/Stop shortcuts already exist.
    """
    w = window
    w.send_shortcut.setWhatsThis("Send the sanitized text (asks for confirmation first)")
    w.send_shortcut2.setWhatsThis("Send (keypad Enter)")
    w.stop_shortcut.setWhatsThis("Stop the answer or the ε search")
    w.stop_shortcut.activated.connect(w.utility.cancel_recommendation)
    w.act_keep_local = _button_action(w, "Keep local", "Ctrl+L", w.local_button,
                                      "Answer on this computer; nothing is sent")
    w.act_copy = _button_action(w, "Copy sanitized", "Ctrl+Shift+C", w.copy_button,
                                "Copy exactly what would be sent")
    w.act_find_best = _button_action(w, "Find best ε", "Ctrl+B", w.assessment.find_best,
                                     "Search the most private ε that stays useful "
                                     "(again: cancel)")
    w.act_shortcuts = QAction("Keyboard shortcuts…", w)
    w.act_shortcuts.setShortcut(QKeySequence(QKeySequence.StandardKey.HelpContents))
    w.act_shortcuts.triggered.connect(lambda: open_shortcuts_page(w))

    file_menu = menu_named(w, "&File")
    for a in (w.act_open, w.act_settings, w.act_history):
        file_menu.addAction(a)
    doc_menu = menu_named(w, "&Document")
    for a in (w.act_keep_local, w.act_copy, w.act_find_best):
        doc_menu.addAction(a)
    help_menu = menu_named(w, "&Help")
    help_menu.insertAction(next(iter(help_menu.actions()), None), w.act_shortcuts)


def menu_named(window: QMainWindow, title: str) -> QMenu:
    """``window``'s menu-bar menu ``title``, made on first use (one Help menu, whoever
    adds to it first)."""
    bar = window.menuBar()
    found = next((a.menu() for a in bar.actions() if a.text() == title and a.menu()), None)
    return found if found is not None else bar.addMenu(title)


class QtShortcutsDialog(QDialog):
    """Help → Keyboard shortcuts: a table made from the window's own actions."""

    def __init__(self, rows: list[ShortcutRow], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        lay = QVBoxLayout(self)
        intro = QLabel("Tab and Shift+Tab move between controls (also out of the text "
                       "panes); Space or Enter presses the focused button.")
        intro.setWordWrap(True)
        lay.addWidget(intro)
        self.table = QTableWidget(len(rows), 2)
        self.table.setAccessibleName("Keyboard shortcuts")
        self.table.setHorizontalHeaderLabels(["Command", "Keys"])
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(
            0, QHeaderView.ResizeMode.Stretch)
        self.table.horizontalHeader().setSectionResizeMode(
            1, QHeaderView.ResizeMode.ResizeToContents)
        for i, row in enumerate(rows):
            self.table.setItem(i, 0, QTableWidgetItem(row.command))
            self.table.setItem(i, 1, QTableWidgetItem(row.keys))
        lay.addWidget(self.table)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        lay.addWidget(buttons)
        self.resize(520, 420)

    def listed(self) -> dict[str, str]:
        """Command → keys as shown (tests read it)."""
        return {self.table.item(i, 0).text(): self.table.item(i, 1).text()
                for i in range(self.table.rowCount())}


def open_shortcuts_page(window: QWidget) -> QtShortcutsDialog:
    """Show the page (window-modal, no nested event loop); returns it."""
    dlg = QtShortcutsDialog(shortcut_rows(window), window)
    dlg.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dlg.open()
    return dlg
