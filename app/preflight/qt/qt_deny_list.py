"""Settings → Policy: the deny-list, masked. Entries are shown as "S•••••••1 · 11
characters · secret" (the values are not stored, so they cannot be shown); a new value is
typed into a password field and turned into its keyed hash at once."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from preflight.app.presentation import error_text
from preflight.qt.qt_dialogs import show_error
from preflight.qt.qt_workers import QtOp


class QtDenyListBox(QGroupBox):
    """Edits ``entries`` (the dialog's copy of ``detection.deny_entries``) in place;
    ``deny`` is the window's :class:`~preflight.app.deny_list.DenyListDoor`."""

    def __init__(self, entries: list, deny: Any, parent: QWidget | None = None) -> None:
        super().__init__("Deny-list (always protected: codenames, clients, secrets)", parent)
        self.entries = entries
        self._deny = deny
        lay = QVBoxLayout(self)
        self.list = QListWidget()
        self.list.setObjectName("denyList")
        self.list.setAccessibleName("Deny-list entries, masked")
        self.list.setSelectionMode(QListWidget.SelectionMode.ExtendedSelection)
        lay.addWidget(self.list, 1)
        row = QHBoxLayout()
        self.value = QLineEdit()
        self.value.setObjectName("denyValue")
        self.value.setEchoMode(QLineEdit.EchoMode.Password)
        self.value.setPlaceholderText("Value to protect (hidden as you type)")
        self.value.setAccessibleName("Value to add to the deny-list, hidden")
        self.value.returnPressed.connect(self._add)
        self.add_button = QPushButton("Add")
        self.add_button.clicked.connect(self._add)
        self.remove_button = QPushButton("Remove")
        self.remove_button.setAccessibleName("Remove the selected deny-list entries")
        self.remove_button.clicked.connect(self._remove)
        row.addWidget(self.value, 1)
        row.addWidget(self.add_button)
        row.addWidget(self.remove_button)
        lay.addLayout(row)
        note = QLabel("Saved as keyed hashes: Preflight finds these values again but "
                      "never stores or shows them.")
        note.setWordWrap(True)
        note.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(note)
        self._fill()

    def _fill(self) -> None:
        self.list.clear()
        for entry in self.entries:
            lost = " · key missing: remove it and add the value again" \
                if self._deny.key_missing(entry) else ""
            self.list.addItem(entry.label() + lost)
        self.remove_button.setEnabled(bool(self.entries))

    def _add(self) -> None:
        value = self.value.text()
        self.value.clear()                  # the clear value leaves the widget at once
        if not value.strip():
            return
        self.add_button.setEnabled(False)   # the first add loads the secret-shape tests
        QtOp(self, lambda ctx: self._deny.entry(value), self._added, self._failed,
             lane="deny").run()

    def _added(self, entry: Any) -> None:
        self.add_button.setEnabled(True)
        same = [i for i, e in enumerate(self.entries)
                if e.digest == entry.digest and e.key_id == entry.key_id]
        if not same:
            self.entries.append(entry)
            self._fill()
        self.list.setCurrentRow(same[0] if same else len(self.entries) - 1)

    def _failed(self, exc: BaseException) -> None:
        self.add_button.setEnabled(True)
        show_error(self, *error_text(exc))

    def _remove(self) -> None:
        rows = sorted({self.list.row(item) for item in self.list.selectedItems()},
                      reverse=True)
        for row in rows:
            del self.entries[row]
        self._fill()
