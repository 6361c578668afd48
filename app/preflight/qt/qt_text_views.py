"""The original text pane (editable, PII highlighted) and the highlighter both text panes
share (the sanitized pane is :mod:`preflight.qt.qt_preview_view`).

Views only render: they get spans or a :class:`SanitizedText` and paint them through a
:class:`QtRangeHighlighter` (layout formats, which never touch the text, so highlighting
never counts as an edit and never re-runs detection). Offsets are converted from Python
code points to Qt's UTF-16.

Why not ``QTextEdit.ExtraSelection``: in PySide6 6.12 assigning ``sel.cursor`` drops a
reference to ``None`` each time; a few thousand highlights later CPython aborts with
"deallocating None" (reproduced in a 20-page document). The highlighter avoids that API.
"""


from __future__ import annotations

import bisect
import html
from pathlib import Path
from typing import Callable, Sequence

from PySide6.QtCore import QEvent, QPoint, Qt, Signal
from PySide6.QtGui import (
    QAction,
    QColor,
    QFont,
    QFontDatabase,
    QSyntaxHighlighter,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
)
from PySide6.QtWidgets import QMenu, QPlainTextEdit, QToolTip, QWidget

from preflight.core.types import Span
from preflight.qt import qt_theme
from preflight.app.presentation import (
    Utf16Map,
    oversize_message,
    span_at,
    span_key,
)

OPENABLE_SUFFIXES = (".txt", ".md", ".eml", ".text", ".markdown")
EMPTY_PREVIEW = "The sanitized text appears here once the text is checked."


class QtRangeHighlighter(QSyntaxHighlighter):
    """Paints sorted, non-overlapping ``(start, end, format)`` ranges (UTF-16 offsets).

    Only the blocks a range touches get formats; ``shift`` keeps ranges on their words
    while the user types, without repainting the whole document.
    """

    def __init__(self, document: QTextDocument) -> None:
        super().__init__(document)
        self.ranges: list[tuple[int, int, QTextCharFormat]] = []
        self._starts: list[int] = []

    def set_ranges(self, ranges: list[tuple[int, int, QTextCharFormat]],
                   rehighlight: bool = True) -> None:
        self.ranges = sorted(ranges, key=lambda r: r[0])
        self._starts = [r[0] for r in self.ranges]
        if rehighlight:
            self.rehighlight()

    def shift(self, pos: int, removed: int, added: int) -> None:
        """An edit replaced ``removed`` units at ``pos`` by ``added``: move what follows
        and drop what the edit touched (the next detection brings it back)."""
        delta, end = added - removed, pos + removed
        out = []
        for s, e, fmt in self.ranges:
            if e <= pos:
                out.append((s, e, fmt))
            elif s >= end:
                out.append((s + delta, e + delta, fmt))
        self.ranges = out
        self._starts = [r[0] for r in out]

    def highlightBlock(self, text: str) -> None:  # noqa: N802 - Qt override
        if not self.ranges:
            return
        b0 = self.currentBlock().position()
        b1 = b0 + len(text)
        i = max(0, bisect.bisect_right(self._starts, b0) - 1)
        ranges = self.ranges
        while i < len(ranges) and ranges[i][0] < b1:
            s, e, fmt = ranges[i]
            if e > b0:
                a = max(s, b0)
                self.setFormat(a - b0, min(e, b1) - a, fmt)
            i += 1


def doc_font() -> QFont:
    font = QFontDatabase.systemFont(QFontDatabase.SystemFont.GeneralFont)
    font.setPointSizeF(max(font.pointSizeF(), 10.5))
    return font


class QtOriginalView(QPlainTextEdit):
    """The original document: paste, type, drop a file; PII highlighted by category."""

    sig_text_edited = Signal(str, object)      # text, (pos, removed, added) in code points
    sig_span_clicked = Signal(object)          # Span
    sig_deny_requested = Signal(str)           # selected text to protect for good
    sig_protect_here_requested = Signal(str)   # selected text to protect in this document
    sig_file_dropped = Signal(str)
    sig_paste_refused = Signal(str)            # why (the text stays as it was)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("original")
        self.setAccessibleName("Original document")
        self.setTabChangesFocus(True)     # Tab leaves the editor (keyboard users); no tabs
        self.setFont(doc_font())
        self.setPlaceholderText(
            "Paste or type the document here, drop a .txt/.md/.eml file, or use Open… (Ctrl+O).\n\n"
            "Detected personal data is highlighted; click a highlight to exclude it from "
            "sanitization, right-click one to change what the policy does with its kind, "
            "right-click a selection to add it to the deny-list.")
        self.setMouseTracking(True)
        self.setAcceptDrops(True)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self._text = ""
        self._map = Utf16Map("")
        self._spans: list[Span] = []
        #: Adds to a highlight's context menu (the window: what the policy does with it).
        self.extend_span_menu: Callable[[QMenu, Span], None] | None = None
        self._excluded: set[tuple[str, str]] = set()
        self._edit: tuple[int, int, int] | None = None
        self._press_pos: QPoint | None = None
        self._old_map = self._map
        # Connected before the highlighter exists, so ranges shift before it repaints.
        self.document().contentsChange.connect(self._on_contents_change)
        self.textChanged.connect(self._on_text_changed)
        self.highlighter = QtRangeHighlighter(self.document())

    # -- editing -------------------------------------------------------------------------
    def _on_contents_change(self, pos: int, removed: int, added: int) -> None:
        # Qt reports UTF-16 offsets; keep them to translate once the new text is known.
        # Re-formatting (the highlighter) also reports a "change" with the text unchanged.
        if removed == added and self.toPlainText() == self._text:
            return
        self._edit = (pos, removed, added)
        self.highlighter.shift(pos, removed, added)

    def _on_text_changed(self) -> None:
        text = self.toPlainText()
        if text == self._text:
            return
        edit = None
        if self._edit is not None:
            pos, removed, added = self._edit
            new_map = Utf16Map(text)
            p = self._old_map.to_py(pos)
            r = self._old_map.to_py(pos + removed) - p
            a = new_map.to_py(pos + added) - p
            # a change that reaches the end counts the document's closing block separator
            # too (select all + paste: removed = old length + 1): it is not text
            r, a = min(r, len(self._text) - p), min(a, len(text) - p)
            if p <= len(self._text) and p <= len(text):
                edit = (p, r, a)
        self._edit = None
        self._text = text
        self._map = Utf16Map(text)
        self._old_map = self._map
        self.sig_text_edited.emit(text, edit)

    def insertFromMimeData(self, source) -> None:  # noqa: N802 - Qt override
        """Paste and text drops: refused whole when the result would exceed the size
        limit Open enforces (never truncated: a cut document would be sent as if whole)."""
        if source.hasText() and not self._file_from(source):
            cur = self.textCursor()
            doc = self.toPlainText()
            after = doc[:cur.selectionStart()] + source.text() + doc[cur.selectionEnd():]
            why = oversize_message(after)
            if why is not None:
                self.sig_paste_refused.emit("Not pasted. " + why)
                return
        super().insertFromMimeData(source)

    def set_document_text(self, text: str) -> None:
        """Replace the whole document (open/drop). Not undoable: the opened file is where
        editing starts (an undo must never empty the editor back to before the Open)."""
        cursor = QTextCursor(self.document())
        cursor.select(QTextCursor.SelectionType.Document)
        cursor.insertText(text)
        self.document().clearUndoRedoStacks()
        self.moveCursor(QTextCursor.MoveOperation.Start)

    def current_text(self) -> str:
        return self._text

    # -- highlights ----------------------------------------------------------------------
    def set_spans(self, spans: Sequence[Span], excluded: set[tuple[str, str]]) -> None:
        self._spans = list(spans)
        self._excluded = set(excluded)
        self._render()

    def move_spans(self, spans: Sequence[Span]) -> None:
        """Spans shifted by an edit: the highlight cursors already moved with the text,
        so only the list used by tooltips and clicks changes (typing stays cheap)."""
        self._spans = list(spans)

    def _render(self) -> None:
        colors = qt_theme.colors()
        text = self._text
        excluded_fmt = QTextCharFormat()
        excluded_fmt.setFontStrikeOut(True)
        excluded_fmt.setForeground(colors.excluded)
        fmts = {}
        for cat, color in colors.category.items():
            f = QTextCharFormat()
            f.setBackground(color)
            fmts[cat] = f
        fallback = QTextCharFormat()
        fallback.setBackground(QColor("#dddddd"))
        ranges = []
        for s in self._spans:
            if s.end > len(text):
                continue
            a, b = self._map.to_qt(s.start), self._map.to_qt(s.end)
            if a >= b:
                continue
            fmt = excluded_fmt if span_key(s, text) in self._excluded \
                else fmts.get(s.category, fallback)
            ranges.append((a, b, fmt))
        self.highlighter.set_ranges(ranges)

    def refresh_colors(self) -> None:
        self._render()

    def span_at_point(self, point: QPoint) -> Span | None:
        cur = self.cursorForPosition(point)
        # cursorForPosition snaps to the nearest gap; check the character under the pointer.
        pos = self._map.to_py(cur.position())
        rect = self.cursorRect(cur)
        if point.x() < rect.x() and pos > 0:
            pos -= 1
        return span_at(self._spans, pos)

    # -- interaction ---------------------------------------------------------------------
    def event(self, e: QEvent) -> bool:
        if e.type() == QEvent.Type.ToolTip:
            span = self.span_at_point(self.viewport().mapFromGlobal(e.globalPos()))
            if span is not None:
                QToolTip.showText(e.globalPos(), span_tooltip(span, self._text, self._excluded),
                                  self)
            else:
                QToolTip.hideText()
            return True
        return super().event(e)

    def mousePressEvent(self, e) -> None:  # noqa: N802 - Qt override
        self._press_pos = e.position().toPoint()
        super().mousePressEvent(e)

    def mouseReleaseEvent(self, e) -> None:  # noqa: N802 - Qt override
        super().mouseReleaseEvent(e)
        press, self._press_pos = self._press_pos, None
        if e.button() != Qt.MouseButton.LeftButton or press is None:
            return
        if (e.position().toPoint() - press).manhattanLength() > 3:
            return                       # a drag selects text; only a click toggles
        if self.textCursor().hasSelection():
            return
        span = self.span_at_point(e.position().toPoint())
        if span is not None:
            self.sig_span_clicked.emit(span)

    def contextMenuEvent(self, e) -> None:  # noqa: N802 - Qt override
        self.context_menu(e.pos()).exec(e.globalPos())

    def context_menu(self, pos) -> QMenu:
        """The right-click menu at ``pos``: the standard entries, protecting the
        selection (always — saved without the value — or in this document only), and
        what to do with the highlight under the pointer."""
        menu: QMenu = self.createStandardContextMenu()
        menu.addSeparator()
        selected = self.textCursor().selectedText().replace("\u2029", "\n").strip()
        for label, signal in (("Always protect this text (add to deny-list)",
                               self.sig_deny_requested),
                              ("Protect for this document only", self.sig_protect_here_requested)):
            act = QAction(label, menu)
            act.setEnabled(bool(selected) and "\n" not in selected)
            act.triggered.connect(lambda _=False, sig=signal: sig.emit(selected))
            menu.addAction(act)
        span = self.span_at_point(pos)
        if span is not None:
            label = "Include in sanitization" if span_key(span, self._text) in self._excluded \
                else "Exclude from sanitization (send as written)"
            act = QAction(f"{label} — {span.type}", menu)
            act.triggered.connect(lambda: self.sig_span_clicked.emit(span))
            menu.addAction(act)
            if self.extend_span_menu is not None:
                self.extend_span_menu(menu, span)
        return menu

    # -- drag and drop of files ----------------------------------------------------------
    def _file_from(self, mime) -> str | None:
        return dropped_file(mime)

    def dragEnterEvent(self, e) -> None:  # noqa: N802 - Qt override
        if self._file_from(e.mimeData()):
            e.acceptProposedAction()
        else:
            super().dragEnterEvent(e)

    def dragMoveEvent(self, e) -> None:  # noqa: N802 - Qt override
        if self._file_from(e.mimeData()):
            e.acceptProposedAction()
        else:
            super().dragMoveEvent(e)

    def dropEvent(self, e) -> None:  # noqa: N802 - Qt override
        path = self._file_from(e.mimeData())
        if path:
            e.acceptProposedAction()
            self.sig_file_dropped.emit(path)
        else:
            super().dropEvent(e)


def dropped_file(mime) -> str | None:
    """The first local file a drag carries (the window opens it as File → Open would)."""
    if mime.hasUrls():
        for url in mime.urls():
            if url.isLocalFile():
                return url.toLocalFile()
    return None


def span_tooltip(span: Span, text: str, excluded: set[tuple[str, str]]) -> str:
    state = ("<i>Excluded: sent as written. Click to include again.</i>"
             if span_key(span, text) in excluded else "<i>Click to exclude it.</i>")
    label = qt_theme.CATEGORY_LABELS.get(span.category, str(span.category))
    return (f"<b>{html.escape(span.type)}</b> — {html.escape(label)}<br>"
            f"score {span.score:.2f} · {html.escape(span.recognizer)}<br>"
            f"{html.escape(span.why)}<br>{state}")


def is_openable(path: str) -> bool:
    return Path(path).suffix.lower() in OPENABLE_SUFFIXES
