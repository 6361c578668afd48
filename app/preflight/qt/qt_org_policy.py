"""What the window shows of the company policy: the red "sending is disabled" banner and
the locks on settings the company fixes (see :mod:`preflight.core.org_policy`).

The rules themselves live in the core; this module only renders them, so the window and
the CLI refuse the same things with the same sentences.
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QDoubleSpinBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QWidget,
)

from preflight.core.org_policy import LOCKED_TEXT, OrgPolicy


class QtOrgBanner(QFrame):
    """A persistent red banner while the company policy file is broken (sending is off)."""

    def __init__(self, org: OrgPolicy, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("orgBanner")
        self.setStyleSheet("#orgBanner { background: #b71c1c; border-radius: 4px; }"
                           "#orgBanner QLabel { color: #ffffff; }")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(10, 6, 10, 6)
        self.text = QLabel()
        self.text.setObjectName("orgBannerText")
        self.text.setWordWrap(True)
        lay.addWidget(self.text, 1)
        self.set_policy(org)

    def set_policy(self, org: OrgPolicy) -> None:
        reason = org.send_block_reason()
        self.blocks_send = reason is not None
        self.text.setText(f"<b>Sending is disabled.</b> {reason}" if reason else "")
        self.setVisible(self.blocks_send)


def locked_note(what: str) -> QLabel:
    """A small label saying a value is fixed by the company."""
    label = QLabel(f"{what} — {LOCKED_TEXT}")
    label.setObjectName("orgLocked")
    label.setWordWrap(True)
    return label


def lock_epsilon_spins(org: OrgPolicy, eps_min: QDoubleSpinBox,
                       eps_max: QDoubleSpinBox) -> str | None:
    """Confine the ε bound spin boxes to the company's range; the note to show, or None.

    With a company minimum, "calibrated" is no longer offered for the smallest ε (the
    calibrated bound could fall below it); the largest keeps "calibrated", which the
    doorway's ε range clamps to the company's bounds anyway."""
    lo, hi = org.epsilon_bounds
    if lo is None and hi is None:
        return None
    if lo is not None:
        eps_min.setSpecialValueText("")
        eps_min.setMinimum(lo)
    for sb in (eps_min, eps_max):
        if hi is not None:
            sb.setMaximum(hi)
        sb.setToolTip(f"ε bounds are {LOCKED_TEXT}.")
    return (f"ε stays within [{'calibrated' if lo is None else f'{lo:g}'}, "
            f"{'calibrated' if hi is None else f'{hi:g}'}]")


def lock_min_utility(org: OrgPolicy, spin: QDoubleSpinBox) -> str | None:
    """The minimum utility cannot go below the company's; the note to show, or None."""
    floor = org.min_utility
    if floor is None:
        return None
    spin.setMinimum(max(spin.minimum(), floor))
    spin.setToolTip(f"The lowest allowed value ({floor:g}) is {LOCKED_TEXT}.")
    return f"at least {floor:g}"
