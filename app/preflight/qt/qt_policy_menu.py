"""The small menu that changes what the policy does with one entity type.

Opened from a category chip of the legend (one submenu per detected type of that
category) or by right-clicking a highlight in the original (that span's type). Choosing
an action makes a modified copy of the policy that applies to the preview at once; "Save
as named policy…" keeps it among the user's policies.
"""

from __future__ import annotations

from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QInputDialog, QMenu, QWidget

from preflight.core.sanitize.policy import ACTION_TEXT
from preflight.core.types import Category
from preflight.qt import qt_theme
from preflight.qt.policy_ops import LEGEND_ACTIONS

SAVE_TEXT = "Save as named policy…"


def add_type_actions(menu: QMenu, policies, etype: str) -> None:
    """One checkable action per choice for ``etype``, the current one checked."""
    current = policies.action_for_type(etype)
    group = QActionGroup(menu)
    group.setExclusive(True)
    usable = policies.per_type_actions
    for action in LEGEND_ACTIONS:
        act = QAction(f"{action.value} — {ACTION_TEXT[action]}", menu)
        act.setCheckable(True)
        act.setChecked(action is current)
        act.setEnabled(usable)
        act.setData(action.value)
        act.triggered.connect(lambda _c=False, a=action: policies.set_type_action(etype, a))
        group.addAction(act)
        menu.addAction(act)
    if not usable:
        menu.setToolTipsVisible(True)
        note = menu.addAction("d_X alone changes the text under this policy")
        note.setEnabled(False)


def add_save_action(menu: QMenu, policies, parent: QWidget) -> QAction:
    act = QAction(SAVE_TEXT, menu)
    act.setEnabled(policies.modified)

    def ask() -> None:
        name, ok = QInputDialog.getText(
            parent, "Save policy", "Name of the policy (letters, digits, '.', '-', '_'):",
            text=policies.policy.name + "-custom" if policies.policy is not None else "")
        if ok and name.strip():
            policies.save_policy_as(name.strip())

    act.triggered.connect(ask)
    menu.addAction(act)
    return act


def category_menu(parent: QWidget, policies, category: Category) -> QMenu:
    """The legend chip's menu: the detected types of ``category`` and what each gets."""
    menu = QMenu(parent)
    menu.setObjectName("policyMenu")
    types = policies.detected_types().get(category, [])
    if not types:
        label = qt_theme.CATEGORY_LABELS.get(category, str(category))
        menu.addAction(f"No {label.lower()} detected yet").setEnabled(False)
    for etype in types:
        sub = menu.addMenu(f"{etype}: {_current(policies, etype)}")
        add_type_actions(sub, policies, etype)
    menu.addSeparator()
    add_save_action(menu, policies, parent)
    return menu


def type_menu(menu: QMenu, policies, etype: str, parent: QWidget) -> None:
    """The original's context menu: a submenu for the clicked highlight's type."""
    sub = menu.addMenu(f"What the policy does with {etype}: {_current(policies, etype)}")
    add_type_actions(sub, policies, etype)
    sub.addSeparator()
    add_save_action(sub, policies, parent)


def _current(policies, etype: str) -> str:
    action = policies.action_for_type(etype)
    return action.value if action is not None else "—"
