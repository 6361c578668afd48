"""Light/dark appearance that follows the OS (or the user's choice in Settings).

Qt 6.5+ reports the OS colour scheme through ``QStyleHints.colorScheme()`` and signals
changes; with the Fusion style and an explicit palette the window looks the same on
every platform and under Xvfb.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QIcon, QPalette
from PySide6.QtWidgets import QApplication

from preflight.core import paths
from preflight.core.types import Category


@dataclass(frozen=True)
class Colors:
    dark: bool
    category: dict[Category, QColor]
    changed: QColor
    excluded: QColor
    text_muted: QColor
    good: QColor
    warn: QColor
    bad: QColor
    chart_line: QColor
    chart_marker: QColor


CATEGORY_LABELS = {
    Category.DIRECT_IDENTIFIER: "Direct identifier",
    Category.QUASI_IDENTIFIER: "Quasi-identifier",
    Category.CONFIDENTIAL_ATTRIBUTE: "Confidential attribute",
    Category.SECRET: "Secret",
}

LIGHT = Colors(
    dark=False,
    category={
        Category.DIRECT_IDENTIFIER: QColor("#ffc4c4"),
        Category.QUASI_IDENTIFIER: QColor("#ffe39a"),
        Category.CONFIDENTIAL_ATTRIBUTE: QColor("#dccbff"),
        Category.SECRET: QColor("#ff9ed8"),
    },
    changed=QColor("#c6e2ff"),
    excluded=QColor("#9a9a9a"),
    text_muted=QColor("#5f6368"),
    good=QColor("#1e7d32"),
    warn=QColor("#a56400"),
    bad=QColor("#c62828"),
    chart_line=QColor("#1565c0"),
    chart_marker=QColor("#2e7d32"),
)

DARK = Colors(
    dark=True,
    category={
        Category.DIRECT_IDENTIFIER: QColor("#7d2f35"),
        Category.QUASI_IDENTIFIER: QColor("#6e5714"),
        Category.CONFIDENTIAL_ATTRIBUTE: QColor("#4d3b80"),
        Category.SECRET: QColor("#85215f"),
    },
    changed=QColor("#1d4a78"),
    excluded=QColor("#8a8a8a"),
    text_muted=QColor("#a8adb4"),
    good=QColor("#81c784"),
    warn=QColor("#ffb74d"),
    bad=QColor("#ef9a9a"),
    chart_line=QColor("#64b5f6"),
    chart_marker=QColor("#81c784"),
)

_current: Colors = LIGHT


def colors() -> Colors:
    return _current


def os_prefers_dark() -> bool:
    hints = QGuiApplication.styleHints()
    return hints.colorScheme() == Qt.ColorScheme.Dark


def _dark_palette() -> QPalette:
    p = QPalette()
    base, window, text = QColor("#1e1f22"), QColor("#2b2d31"), QColor("#e6e6e6")
    p.setColor(QPalette.ColorRole.Window, window)
    p.setColor(QPalette.ColorRole.WindowText, text)
    p.setColor(QPalette.ColorRole.Base, base)
    p.setColor(QPalette.ColorRole.AlternateBase, QColor("#26282c"))
    p.setColor(QPalette.ColorRole.ToolTipBase, QColor("#3a3d42"))
    p.setColor(QPalette.ColorRole.ToolTipText, text)
    p.setColor(QPalette.ColorRole.Text, text)
    p.setColor(QPalette.ColorRole.Button, QColor("#35373c"))
    p.setColor(QPalette.ColorRole.ButtonText, text)
    p.setColor(QPalette.ColorRole.BrightText, QColor("#ff6b6b"))
    p.setColor(QPalette.ColorRole.Highlight, QColor("#3d6fb4"))
    p.setColor(QPalette.ColorRole.HighlightedText, QColor("#ffffff"))
    p.setColor(QPalette.ColorRole.Link, QColor("#8ab4f8"))
    p.setColor(QPalette.ColorRole.PlaceholderText, QColor("#8a8f96"))
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText,
                 QPalette.ColorRole.WindowText):
        p.setColor(QPalette.ColorGroup.Disabled, role, QColor("#777a80"))
    return p


def _light_palette() -> QPalette:
    p = QPalette()
    p.setColor(QPalette.ColorRole.Window, QColor("#f3f4f6"))
    p.setColor(QPalette.ColorRole.WindowText, QColor("#1f2328"))
    p.setColor(QPalette.ColorRole.Base, QColor("#ffffff"))
    p.setColor(QPalette.ColorRole.AlternateBase, QColor("#f6f8fa"))
    p.setColor(QPalette.ColorRole.ToolTipBase, QColor("#ffffe8"))
    p.setColor(QPalette.ColorRole.ToolTipText, QColor("#1f2328"))
    p.setColor(QPalette.ColorRole.Text, QColor("#1f2328"))
    p.setColor(QPalette.ColorRole.Button, QColor("#e9ebee"))
    p.setColor(QPalette.ColorRole.ButtonText, QColor("#1f2328"))
    p.setColor(QPalette.ColorRole.Highlight, QColor("#2f6fd0"))
    p.setColor(QPalette.ColorRole.HighlightedText, QColor("#ffffff"))
    p.setColor(QPalette.ColorRole.PlaceholderText, QColor("#7b8088"))
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText,
                 QPalette.ColorRole.WindowText):
        p.setColor(QPalette.ColorGroup.Disabled, role, QColor("#9aa0a6"))
    return p


def apply_theme(app: QApplication, theme: str = "system") -> Colors:
    """Apply ``theme`` ("system", "light" or "dark"); returns the highlight colours."""
    global _current
    dark = os_prefers_dark() if theme == "system" else theme == "dark"
    app.setStyle("Fusion")
    app.setPalette(_dark_palette() if dark else _light_palette())
    qss = paths.resource_path("style", "preflight.qss")
    app.setStyleSheet(qss.read_text(encoding="utf-8") if qss.exists() else "")
    _current = DARK if dark else LIGHT
    return _current


def app_icon() -> QIcon:
    icon = QIcon()
    for name in ("preflight.svg", "preflight-256.png"):
        path = paths.resource_path("icons", name)
        if path.exists():
            icon.addFile(str(path))
    return icon
