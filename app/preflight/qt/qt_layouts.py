"""Containers that let the window fit small screens (issue 15: 1024×700, and 1366×768 at
150 % scaling, i.e. 910×512 logical pixels).

- :class:`QtFlowLayout` wraps its items onto the next line when the width runs out. Qt has
  none of its own (it ships one only as an example); the legend's chips in one row forced
  the left pane, and with it the window, to ~470 px.
- :class:`QtColumnScroll` is a column that scrolls vertically and asks the window for
  the width its content needs — no fixed width, no horizontal scroll bar in practice.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QPoint, QRect, QSize, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QFrame, QLayout, QLayoutItem, QScrollArea, QWidget

_NO_BOUND = (1 << 24) - 1          # QWIDGETSIZE_MAX: no bound on an item's height


class QtFlowLayout(QLayout):
    """Items left to right, wrapping to a new line like words; the minimum width is the
    widest single item, the height follows the width (``heightForWidth``)."""

    def __init__(self, parent: QWidget | None = None, spacing: int = 6) -> None:
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self.setContentsMargins(0, 0, 0, 0)
        self.setSpacing(spacing)

    # -- QLayout's item protocol --------------------------------------------------------------
    def addItem(self, item: QLayoutItem) -> None:  # noqa: N802 - Qt override
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:  # noqa: N802 - Qt override
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:  # noqa: N802 - Qt override
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    # -- geometry ----------------------------------------------------------------------------
    def expandingDirections(self) -> Qt.Orientation:  # noqa: N802 - Qt override
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:  # noqa: N802 - Qt override
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802 - Qt override
        return self._arrange(QRect(0, 0, width, 0), move=False)

    def setGeometry(self, rect: QRect) -> None:  # noqa: N802 - Qt override
        super().setGeometry(rect)
        self._arrange(rect, move=True)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        """One line with every item (what it would like)."""
        width = sum(i.sizeHint().width() for i in self._items)
        width += self.spacing() * max(0, len(self._items) - 1)
        height = max((i.sizeHint().height() for i in self._items), default=0)
        return self._with_margins(QSize(width, height))

    def minimumSize(self) -> QSize:  # noqa: N802 - Qt override
        """The widest item: everything else wraps."""
        size = QSize()
        for item in self._items:
            size = size.expandedTo(item.minimumSize())
        return self._with_margins(size)

    def _with_margins(self, size: QSize) -> QSize:
        m = self.contentsMargins()
        return size + QSize(m.left() + m.right(), m.top() + m.bottom())

    def _arrange(self, rect: QRect, move: bool) -> int:
        """Place the items in ``rect`` (when ``move``); return the height they need."""
        m = self.contentsMargins()
        area = rect.adjusted(m.left(), m.top(), -m.right(), -m.bottom())
        x, y, line_height = area.x(), area.y(), 0
        gap = self.spacing()
        for item in self._items:
            if item.isEmpty():          # a hidden widget takes no room
                continue
            hint = item.sizeHint().boundedTo(QSize(max(area.width(), 1), _NO_BOUND))
            if item.hasHeightForWidth():        # a word-wrapped label cut to the width
                hint.setHeight(item.heightForWidth(hint.width()))
            if x > area.x() and x + hint.width() > area.right() + 1:
                x, y = area.x(), y + line_height + gap
                line_height = 0
            if move:
                item.setGeometry(QRect(QPoint(x, y), hint))
            x += hint.width() + gap
            line_height = max(line_height, hint.height())
        return y + line_height - rect.y() + m.bottom()


class QtColumnScroll(QScrollArea):
    """A column of panels that scrolls vertically when the window is short.

    Its minimum width follows its content's (labels that do not wrap, a combo box's
    longest entry) as the content changes, so the splitter it sits in gives it that width
    and squeezes the text panes instead: the content is never clipped on the right. The
    minimum is capped at :data:`MAX_SCREEN_SHARE` of the screen, so no text, however
    long, can widen the window beyond the screen; past the cap a horizontal scroll bar
    (shown only when needed) still reaches everything."""

    MAX_SCREEN_SHARE = 0.5

    def __init__(self, content: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setWidget(content)
        content.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if watched is self.widget() and event.type() == QEvent.Type.LayoutRequest:
            self.updateGeometry()           # the content's minimum may have changed
        return super().eventFilter(watched, event)

    def _fit(self, hint: QSize, content_hint: QSize | None) -> QSize:
        """``hint`` with the width the content asks for (capped), plus the vertical bar."""
        if content_hint is None:
            return hint
        width = content_hint.width()
        screen = self.screen() or QGuiApplication.primaryScreen()
        if screen is not None:
            width = min(width, int(screen.availableGeometry().width() * self.MAX_SCREEN_SHARE))
        hint.setWidth(width + self.verticalScrollBar().sizeHint().width()
                      + 2 * self.frameWidth())
        return hint

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt override
        content = self.widget()
        return self._fit(super().minimumSizeHint(),
                         content.minimumSizeHint() if content is not None else None)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        content = self.widget()
        return self._fit(super().sizeHint(), content.sizeHint() if content is not None else None)
