"""Settings → Policy → Policies: the active policy, the saved ones, and a small editor.

Edits the dialog's copy of :class:`Settings` (``policy.active`` and ``policy.saved``);
the dialog's OK saves it. A saved policy starts as a copy of a preset; the editor sets
each entity type's action (or leaves it to the category's), whether d_X noise applies and
the ε it starts at.
"""

from __future__ import annotations

import re
from dataclasses import replace

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QInputDialog,
    QListWidget,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from preflight.app.policy_rows import saved_policy_row
from preflight.core.config import SavedPolicy, Settings
from preflight.core.sanitize.policy import PRESETS, RELATIVE_DATE, Action, DxScope
from preflight.qt.qt_dialogs import show_error

DX_LABELS = {DxScope.NONE: "no d_X noise", DxScope.REST: "d_X on the text outside the spans",
             DxScope.ALL: "d_X on the whole text", DxScope.SPANS: "d_X on the detected values"}
_NAME = re.compile(r"[\w.-]{1,64}")


def policy_types() -> list[str]:
    from preflight.qt.qt_settings import entity_types

    return sorted({*entity_types(), RELATIVE_DATE, "AGE"})


class QtPoliciesBox(QGroupBox):
    """The active policy chooser and the saved policies with their editor."""

    def __init__(self, settings: Settings, parent: QWidget | None = None) -> None:
        super().__init__("Policies", parent)
        self.settings = settings
        self._loading = False
        lay = QHBoxLayout(self)
        left = QVBoxLayout()
        form = QFormLayout()
        self.active = QComboBox()
        self.active.setObjectName("activePolicy")
        self.active.setToolTip("The policy new documents start with (the CLI's default too).")
        form.addRow("Active", self.active)
        left.addLayout(form)
        self.saved = QListWidget()
        self.saved.setObjectName("savedPolicies")
        self.saved.setAccessibleName("Saved policies")
        self.saved.currentRowChanged.connect(self._load_row)
        left.addWidget(self.saved, 1)
        buttons = QHBoxLayout()
        self.new = QPushButton("New from preset…")
        self.new.clicked.connect(self._new_from_preset)
        self.delete = QPushButton("Delete")
        self.delete.clicked.connect(self._delete)
        buttons.addWidget(self.new)
        buttons.addWidget(self.delete)
        left.addLayout(buttons)
        lay.addLayout(left, 2)

        right = QVBoxLayout()
        self.table = QTableWidget(0, 2)
        self.table.setObjectName("policyTypes")
        self.table.setAccessibleName("What the policy does with each entity type")
        self.table.setHorizontalHeaderLabels(["Entity type", "Action"])
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setStretchLastSection(True)
        self._combos: dict[str, QComboBox] = {}
        for i, etype in enumerate(policy_types()):
            self.table.insertRow(i)
            item = QTableWidgetItem(etype)
            item.setFlags(Qt.ItemFlag.ItemIsEnabled)
            self.table.setItem(i, 0, item)
            combo = QComboBox()
            combo.setAccessibleName(f"Action for {etype}")
            combo.addItem("(its category's action)", "")
            for a in Action:
                combo.addItem(a.value, a.value)
            combo.currentIndexChanged.connect(self._store_row)
            self.table.setCellWidget(i, 1, combo)
            self._combos[etype] = combo
        self.table.resizeColumnToContents(0)
        right.addWidget(self.table, 1)
        dx_row = QFormLayout()
        self.dx = QComboBox()
        self.dx.setObjectName("policyDx")
        for scope, label in DX_LABELS.items():
            self.dx.addItem(label, scope.value)
        self.dx.currentIndexChanged.connect(self._store_row)
        self.eps = QDoubleSpinBox()
        self.eps.setRange(0, 100000)
        self.eps.setDecimals(2)
        self.eps.setSpecialValueText("middle of the range")
        self.eps.valueChanged.connect(self._store_row)
        dx_row.addRow("d_X", self.dx)
        dx_row.addRow("Starting ε", self.eps)
        right.addLayout(dx_row)
        lay.addLayout(right, 3)
        self._refresh(0)

    # -- list ----------------------------------------------------------------------------
    def _refresh(self, select: int) -> None:
        pol = self.settings.policy
        self.active.clear()
        for p in PRESETS.values():
            self.active.addItem(p.title, p.name)
        for s in pol.saved:
            self.active.addItem(f"{s.title or s.name} (saved)", s.name)
        self.active.setCurrentIndex(max(0, self.active.findData(pol.active)))
        self.saved.clear()
        for s in pol.saved:
            self.saved.addItem(s.name)
        if pol.saved:
            self.saved.setCurrentRow(min(select, len(pol.saved) - 1))
        self._enable(bool(pol.saved))

    def _enable(self, on: bool) -> None:
        for w in (self.table, self.dx, self.eps, self.delete):
            w.setEnabled(on)

    def _current(self) -> SavedPolicy | None:
        i = self.saved.currentRow()
        rows = self.settings.policy.saved
        return rows[i] if 0 <= i < len(rows) else None

    def new_from_preset(self, preset: str, name: str) -> bool:
        """A saved copy of ``preset`` named ``name`` (False, with a message, if refused)."""
        taken = set(PRESETS) | {s.name for s in self.settings.policy.saved}
        if not _NAME.fullmatch(name) or name in taken:
            show_error(self, f"“{name}” cannot name a new policy.",
                       "Use 1–64 letters, digits, '.', '-' or '_', not the name of a "
                       "built-in or saved policy.")
            return False
        self.settings.policy.saved.append(
            saved_policy_row(replace(PRESETS[preset], name=name, title=name)))
        self._refresh(len(self.settings.policy.saved) - 1)
        return True

    def _new_from_preset(self) -> None:
        titles = [p.title for p in PRESETS.values()]
        title, ok = QInputDialog.getItem(self, "New policy", "Start from:", titles, 0, False)
        if not ok:
            return
        preset = next(p.name for p in PRESETS.values() if p.title == title)
        name, ok = QInputDialog.getText(self, "New policy", "Name:", text=f"{preset}-custom")
        if ok and name.strip():
            self.new_from_preset(preset, name.strip())

    def _delete(self) -> None:
        i = self.saved.currentRow()
        rows = self.settings.policy.saved
        if 0 <= i < len(rows):
            gone = rows.pop(i)
            if self.settings.policy.active == gone.name:
                self.settings.policy.active = "identifiers"
            self._refresh(max(0, i - 1))

    # -- editor --------------------------------------------------------------------------
    def _load_row(self, _row: int) -> None:
        row = self._current()
        if row is None:
            return
        self._loading = True
        for etype, combo in self._combos.items():
            combo.setCurrentIndex(max(0, combo.findData(row.types.get(etype, ""))))
        self.dx.setCurrentIndex(max(0, self.dx.findData(row.dx)))
        self.eps.setValue(row.epsilon or 0)
        self._loading = False

    def _store_row(self, *_a) -> None:
        row = self._current()
        if row is None or self._loading:
            return
        row.types = {t: c.currentData() for t, c in self._combos.items() if c.currentData()}
        row.dx = self.dx.currentData()
        row.epsilon = self.eps.value() or None
        self.eps.setEnabled(row.dx != DxScope.NONE.value)

    def store(self) -> None:
        self._store_row()
        self.settings.policy.active = self.active.currentData() or "identifiers"

