"""What the window shows of the company policy: the red "sending is disabled" banner, the
amber notice of a degraded deployment (the company utility model refused, the central audit
store unreachable) and of what the policy changes in the user's own settings (the
allow-list and threshold for protected types, an assessor server it does not allow), the
central store's sync state in the status bar, and the locks on settings the company fixes
(see :mod:`preflight.core.org_policy`).

The rules themselves live in the core; this module only renders them, so the window and
the CLI refuse the same things with the same sentences.
"""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import (
    QDoubleSpinBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QStatusBar,
    QWidget,
)

from preflight.app.window_doorway import WindowDoorway
from preflight.app.presentation import error_text
from preflight.core.org_policy import LOCKED_TEXT, OrgPolicy
from preflight.qt.qt_workers import QtOp

#: How often the central store's state is asked again (the sync itself runs on its own).
STATUS_REFRESH_MS = 15_000


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


class QtCompanyNotice(QFrame):
    """An amber notice while the company deployment runs degraded, and the central audit
    store's state in the status bar ("in sync", "12 record(s) waiting — store unreachable
    since 10:42"). :meth:`start` asks the doorway in the background (which also starts the
    store's sync job, so what earlier sessions left queued is sent now); the window never
    waits for it."""

    def __init__(self, app: WindowDoorway, status_bar: QStatusBar | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.app = app
        self.setObjectName("companyNotice")
        self.setStyleSheet("#companyNotice { background: #fff3cd; border: 1px solid #e0a800;"
                           " border-radius: 4px; } #companyNotice QLabel { color: #3d2e00; }")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(10, 6, 10, 6)
        self.text = QLabel("")
        self.text.setObjectName("companyNoticeText")
        self.text.setWordWrap(True)
        lay.addWidget(self.text, 1)
        self.central_state = QLabel("")
        self.central_state.setObjectName("centralAuditState")
        self.central_state.setVisible(False)
        if status_bar is not None:
            status_bar.addPermanentWidget(self.central_state)
        self.utility: Any = None             # the last UtilityModelStatus
        self.central: Any = None             # the last CentralAuditStatus (None: no store)
        self._problems: dict[str, str] = {}  # what is degraded -> the line that says so
        self._busy: set[str] = set()
        self.timer = QTimer(self)
        self.timer.setInterval(STATUS_REFRESH_MS)
        self.timer.timeout.connect(self.refresh)
        self.setVisible(False)

    def start(self) -> None:
        self.refresh()
        self.timer.start()

    def refresh(self) -> None:
        """Ask both states again (an ask still under way is not doubled)."""
        self._ask("utility", self.app.utility_model_status, self._on_utility)
        self._ask("central", self.app.central_audit_status, self._on_central)
        self._ask("limits", self.app.company_limits, self._on_limits)

    def _ask(self, what: str, call: Any, done: Any) -> None:
        if what in self._busy:
            return
        self._busy.add(what)

        def failed(exc: BaseException) -> None:
            self._busy.discard(what)
            message, hint = error_text(exc)
            self._set_problem(what, f"{message} {hint}".strip())

        def ok(result: Any) -> None:
            self._busy.discard(what)
            done(result)

        QtOp(self, lambda ctx: call(), ok, failed, lane="ops").run()

    def _on_utility(self, status: Any) -> None:
        self.utility = status
        self._set_problem("utility", status.warning)

    def _on_central(self, status: Any) -> None:
        self.central = status
        if status is None:                   # no central store: nothing to show
            self.central_state.setVisible(False)
            self._set_problem("central", None)
            return
        short = ("Central store: " + (f"{status.waiting} record(s) waiting — unreachable"
                                      if status.error else
                                      "checking…" if not status.checked else
                                      f"{status.waiting} record(s) waiting"
                                      if status.waiting else "in sync"))
        self.central_state.setText(short)
        self.central_state.setToolTip(status.line
                                      + (f"\n{status.error}" if status.error else ""))
        self.central_state.setVisible(True)
        self._set_problem("central", f"{status.line} ({status.error})" if status.error
                          else None)

    def _on_limits(self, lines: list[str]) -> None:
        """What the company policy changes in the user's own settings (one line each)."""
        for key in [k for k in self._problems if k.startswith("limits")]:
            self._set_problem(key, None)
        for i, line in enumerate(lines):
            self._set_problem(f"limits{i}", line)

    def _set_problem(self, what: str, line: str | None) -> None:
        if line:
            self._problems[what] = line
        else:
            self._problems.pop(what, None)
        self.text.setText("<br>".join(f"⚠ {html.escape(p)}"
                                      for _k, p in sorted(self._problems.items())))
        self.setVisible(bool(self._problems))


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
