"""The colour legend above a text pane: one chip per category (a category chip opens the
menu that changes what the policy does with that category's detected types)."""

from __future__ import annotations

import html

from PySide6.QtCore import QPoint, Qt, Signal
from PySide6.QtWidgets import QFrame, QLabel, QWidget

from preflight.qt import qt_theme
from preflight.qt.qt_layouts import QtFlowLayout


class _Chip(QLabel):
    clicked = Signal(QPoint)

    def mousePressEvent(self, e) -> None:  # noqa: N802 - Qt override
        if e.button() == Qt.MouseButton.LeftButton:
            self.clicked.emit(e.globalPosition().toPoint())
        super().mousePressEvent(e)

    def keyPressEvent(self, e) -> None:  # noqa: N802 - Qt override
        # the keyboard path to the category menu: Tab to the chip, Space or Enter
        if e.key() in (Qt.Key.Key_Space, Qt.Key.Key_Return, Qt.Key.Key_Enter) \
                and self.focusPolicy() != Qt.FocusPolicy.NoFocus:
            self.clicked.emit(self.mapToGlobal(self.rect().bottomLeft()))
            return
        super().keyPressEvent(e)


class QtLegend(QFrame):
    """Colour chips explaining the highlights. A category chip, clicked, asks for the
    menu that changes what the policy does with that category's detected types."""

    sig_category_clicked = Signal(object, QPoint)     # Category, where to open the menu

    def __init__(self, with_changed: bool = False, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._with_changed = with_changed
        # Wraps (no fixed row): one row of chips set the window's minimum width.
        self._layout = QtFlowLayout(self, spacing=10)
        self.chips: dict[object, QLabel] = {}
        self.refresh_colors()

    def refresh_colors(self) -> None:
        while self._layout.count():
            item = self._layout.takeAt(0)
            if item.widget():
                item.widget().deleteLater()
        self.chips = {}
        colors = qt_theme.colors()
        entries = [(c, qt_theme.CATEGORY_LABELS[c], colors.category[c])
                   for c in qt_theme.CATEGORY_LABELS]
        if self._with_changed:
            entries = [(None, "Changed — hover to see the original", colors.changed)]
        for key, label, color in entries:
            chip = _Chip(f"<span style='background:{color.name()};'>&nbsp;&nbsp;&nbsp;&nbsp;"
                         f"</span>&nbsp;{html.escape(label)}")
            chip.setObjectName("legendChip")
            chip.setAccessibleName(label)
            if key is not None:
                chip.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
                chip.setAccessibleName(f"{label}: choose what the policy does with them")
                chip.setCursor(Qt.CursorShape.PointingHandCursor)
                chip.setToolTip("Click to choose what the policy does with these values.")
                chip.clicked.connect(lambda pos, c=key: self.sig_category_clicked.emit(c, pos))
                self.chips[key] = chip
            chip.setWordWrap(True)            # a long label wraps, not the pane's width
            self._layout.addWidget(chip)
