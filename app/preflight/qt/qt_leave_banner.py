"""The banner above Send: what will leave the computer, in words, with one-click fixes.

It reads the payload controller's fresh result only
(:attr:`~preflight.qt.payload_ops.PayloadController.fresh_result`): without one it is hidden, so it never vouches for a payload that is not the one Send
would use. The sentence comes from :mod:`preflight.app.leave_summary` (the CLI prints the
same words); the colour follows its severity: red when a secret or a direct identifier
leaves, amber for other kinds or values the user allowed, green when nothing does.

"Protect these" switches exactly the leaking types to placeholders for this document
(:meth:`~preflight.qt.policy_ops.PolicyController.protect_types`: a modified policy, as the
legend makes; "Save as named policy…" keeps it). "Choose…" lists each value with
"Protect" (its type becomes placeholders) and "Allow this time" (the existing per-span
exclusion, undone by "Protect again").
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QMenu, QPushButton, QWidget

from preflight.app.leave_summary import LeaveSummary, LeavingItem, summarize_leaving
from preflight.app.presentation import span_key
from preflight.qt import qt_theme

MAX_MENU_ITEMS = 40         # a long list ends with "… and N more" (the legend has all)


class QtLeaveBanner(QFrame):
    """One line of words and two buttons, following the payload (``doc``: its document
    and exclusions, ``policies``: "Protect these")."""

    def __init__(self, doc: Any, payload: Any, policies: Any,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc, self.payload, self.policies = doc, payload, policies
        self.summary: LeaveSummary | None = None
        self.setObjectName("leaveBanner")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(10, 5, 10, 5)
        self.text = QLabel("")
        self.text.setObjectName("leaveText")
        self.text.setWordWrap(True)
        self.protect = QPushButton("Protect these")
        self.protect.setObjectName("protectThese")
        self.protect.setToolTip("Replace every value of these kinds by a placeholder, for "
                                "this document only.")
        self.choose = QPushButton("Choose…")
        self.choose.setObjectName("chooseItems")
        self.menu = QMenu(self)
        self.choose.setMenu(self.menu)
        lay.addWidget(self.text, 1)
        lay.addWidget(self.protect)
        lay.addWidget(self.choose)
        self.protect.clicked.connect(self.protect_these)
        payload.sig_preview_changed.connect(self.refresh)
        payload.sig_actions.connect(self.refresh)
        self.setVisible(False)

    # -- state -----------------------------------------------------------------------------
    def refresh(self, *_args: Any) -> None:
        """Follow the controller: the fresh result's summary, or hidden."""
        res = self.payload.fresh_result
        if res is None:
            self.summary = None
            self.setVisible(False)
            return
        self.show_summary(summarize_leaving(self.doc.text, res.sanitized, self.doc.spans,
                                            self.doc.excluded))

    def show_plan(self, plan: Any) -> LeaveSummary | None:
        """The summary with ``plan``'s blocking findings (its fresh re-scan of the payload:
        what the confirmation lists), shown; returns it (None without a fresh result)."""
        res = self.payload.fresh_result
        if res is None:
            return None
        summary = summarize_leaving(self.doc.text, res.sanitized, self.doc.spans,
                                    self.doc.excluded, tuple(plan.blocking))
        self.setVisible(True)
        self.show_summary(summary)
        return summary

    def show_summary(self, summary: LeaveSummary) -> None:
        self.summary = summary
        c = qt_theme.colors()
        color = {"high": c.bad, "low": c.warn}.get(summary.severity, c.good)
        self.setStyleSheet(f"QFrame#leaveBanner {{ border: 1px solid {color.name()}; "
                           f"border-left: 5px solid {color.name()}; border-radius: 4px; }}")
        self.text.setText(summary.sentence)
        self.protect.setVisible(bool(summary.leaking_types))
        self._fill_menu(summary)
        self.choose.setVisible(not self.menu.isEmpty())
        self.setVisible(True)

    def _fill_menu(self, summary: LeaveSummary) -> None:
        self.menu.clear()
        shown = 0
        for group, items in (("leaving", summary.leaving), ("kept", summary.kept),
                             ("allowed", summary.allowed)):
            for item in items:
                if shown == MAX_MENU_ITEMS:
                    rest = len(summary.leaving) + len(summary.kept) + len(summary.allowed)
                    self.menu.addAction(f"… and {rest - shown} more").setEnabled(False)
                    return
                shown += 1
                sub = self.menu.addMenu(f"{item.value}  ({item.words}"
                                        + (", allowed by you)" if group == "allowed"
                                           else ", kept by your policy)" if group == "kept"
                                           else ")"))
                if group == "allowed":
                    sub.addAction("Protect again", lambda i=item: self.toggle(i))
                    continue
                sub.addAction(f"Protect (every {item.words} → placeholder)",
                              lambda i=item: self.policies.protect_types([i.type]))
                sub.addAction("Allow this time", lambda i=item: self.toggle(i))

    # -- actions ---------------------------------------------------------------------------
    def protect_these(self) -> None:
        if self.summary is not None and self.summary.leaking_types:
            self.policies.protect_types(list(self.summary.leaking_types))

    def toggle(self, item: LeavingItem) -> None:
        """Allow (or protect again) every spelling of the value: the per-span exclusion."""
        seen = set()
        for span in item.spans:
            key = span_key(span, self.doc.text)
            if key not in seen:
                seen.add(key)
                self.doc.toggle_span(span)
