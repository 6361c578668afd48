"""What a screen reader and the keyboard need of a finished widget tree: every input
announces its label, not only its value, and every toolbar button is reachable with Tab.

Applied once to a built window or dialog (:func:`label_fields`), so a field added later
in a form gets its name without each builder remembering to set it.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QComboBox,
    QFormLayout,
    QLabel,
    QLayout,
    QLineEdit,
    QToolBar,
    QToolButton,
    QWidget,
)

_FIELDS = (QComboBox, QAbstractSpinBox, QLineEdit)


def label_fields(root: QWidget) -> None:
    """Give each combo box, spin box and line edit under ``root`` that has no accessible
    name the text of its label: its form row's label, or the label it is the buddy of."""
    for form in root.findChildren(QFormLayout):
        for row in range(form.rowCount()):
            label = form.itemAt(row, QFormLayout.ItemRole.LabelRole)
            field = form.itemAt(row, QFormLayout.ItemRole.FieldRole)
            if label is None or field is None or not isinstance(label.widget(), QLabel):
                continue
            _name(_first_field(field.widget() or field.layout()), label.widget().text())
    for label in root.findChildren(QLabel):
        if label.buddy() is not None:
            _name(label.buddy(), label.text())


def focus_toolbar(toolbar: QToolBar) -> None:
    """Let Tab reach the toolbar's buttons (a toolbar makes them click-only by default)."""
    for action in toolbar.actions():
        button = toolbar.widgetForAction(action)
        if isinstance(button, QToolButton):
            button.setFocusPolicy(Qt.FocusPolicy.TabFocus)


def _first_field(item: QWidget | QLayout | None) -> QWidget | None:
    if isinstance(item, _FIELDS):
        return item
    if isinstance(item, QLayout):
        for i in range(item.count()):
            found = _first_field(item.itemAt(i).widget() or item.itemAt(i).layout())
            if found is not None:
                return found
    return None


def _name(field: QWidget | None, text: str) -> None:
    words = text.replace("&&", "\0").replace("&", "").replace("\0", "&").strip().rstrip(":")
    if isinstance(field, _FIELDS) and not field.accessibleName() and words:
        field.setAccessibleName(words)
