"""The sanitized pane: the text exactly as it would be sent, the changed parts highlighted
(through the shared :class:`~preflight.qt.qt_text_views.QtRangeHighlighter`); hovering a
change shows what it replaced."""

from __future__ import annotations

import html

from PySide6.QtCore import QEvent, QPoint, Qt
from PySide6.QtGui import QTextCharFormat
from PySide6.QtWidgets import QPlainTextEdit, QToolTip, QWidget

from preflight.app.presentation import Utf16Map, change_at
from preflight.core.types import Change, SanitizedText
from preflight.qt import qt_theme
from preflight.qt.qt_text_views import EMPTY_PREVIEW, QtRangeHighlighter, doc_font


class QtPreviewView(QPlainTextEdit):
    """The sanitized text exactly as it would be sent; changed parts highlighted, hovering
    one shows what it replaced."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("preview")
        self.setAccessibleName("Sanitized text — exactly what would be sent")
        self.setTabChangesFocus(True)
        self.setReadOnly(True)
        # read-only text is skipped by Tab unless it selects by keyboard too
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse
                                     | Qt.TextInteractionFlag.TextSelectableByKeyboard)
        self.setFont(doc_font())
        self.setMouseTracking(True)
        self.setPlaceholderText(EMPTY_PREVIEW)
        self.sanitized: SanitizedText | None = None
        self._map = Utf16Map("")
        self.highlighter = QtRangeHighlighter(self.document())

    def set_blocked(self, reason: str | None) -> None:
        """No result to show: the pane is blank and says why (``None``: nothing typed)."""
        self.setPlaceholderText(reason or EMPTY_PREVIEW)
        self.set_sanitized(None)

    def set_sanitized(self, sanitized: SanitizedText | None) -> None:
        self.sanitized = sanitized
        text = sanitized.text if sanitized is not None else ""
        bar = self.verticalScrollBar()
        keep = bar.value()
        if text != self.toPlainText():
            self.highlighter.set_ranges([], rehighlight=False)   # paint once, below
            self.setPlainText(text)
        self._map = Utf16Map(text)
        self._render()
        bar.setValue(min(keep, bar.maximum()))

    def _render(self) -> None:
        if self.sanitized is None:
            self.highlighter.set_ranges([])
            return
        fmt = QTextCharFormat()
        fmt.setBackground(qt_theme.colors().changed)
        ranges = []
        for c in self.sanitized.changes:
            a, b = self._map.to_qt(c.start), self._map.to_qt(c.end)
            if a < b:
                ranges.append((a, b, fmt))
        self.highlighter.set_ranges(ranges)

    def refresh_colors(self) -> None:
        self._render()

    def change_at_point(self, point: QPoint) -> Change | None:
        cur = self.cursorForPosition(point)
        pos = self._map.to_py(cur.position())
        if point.x() < self.cursorRect(cur).x() and pos > 0:
            pos -= 1
        return change_at(self.sanitized, pos)

    def event(self, e: QEvent) -> bool:
        if e.type() == QEvent.Type.ToolTip:
            change = self.change_at_point(self.viewport().mapFromGlobal(e.globalPos()))
            if change is not None:
                QToolTip.showText(e.globalPos(), change_tooltip(change), self)
            else:
                QToolTip.hideText()
            return True
        return super().event(e)


def change_tooltip(change: Change) -> str:
    original = change.original if change.original else "(deleted text)"
    return (f"<b>Original:</b> {html.escape(original)}<br>"
            f"<b>Sent as:</b> {html.escape(change.replacement) or '(nothing)'}<br>"
            f"<span>{html.escape(change.type)}</span>")
