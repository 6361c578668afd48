"""Starting the window: `preflight gui` and `python -m preflight.qt` land here."""

from __future__ import annotations

import logging
import os
import sys
import time

from PySide6.QtCore import QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication

from preflight.app.doorway import Doorway
from preflight.core.errors import PreflightError
from preflight.qt import qt_theme

log = logging.getLogger(__name__)


def create_app(argv: list[str] | None = None) -> QApplication:
    app = QApplication.instance()
    if app is None:
        QGuiApplication.setDesktopFileName("preflight")
        app = QApplication(argv or [sys.argv[0]])
        app.setApplicationName("Preflight")
        app.setOrganizationName("Preflight")
    app.setWindowIcon(qt_theme.app_icon())
    return app


def build_window(backend: Doorway | None = None, theme: str | None = None):
    """The main window over ``backend`` (the real doorway when ``None``), themed and wired
    to follow the OS light/dark switch. Nothing heavy is loaded here."""
    from preflight.app.window_doorway import WindowDoorway
    from preflight.qt.qt_main_window import QtMainWindow

    app = create_app()
    backend = backend if backend is not None else WindowDoorway()
    qt_theme.apply_theme(app, theme or backend.settings.theme)
    window = QtMainWindow(backend)

    def follow_os(*_a) -> None:
        if backend.settings.theme == "system":
            qt_theme.apply_theme(app, "system")
            window.refresh_colors()

    QGuiApplication.styleHints().colorSchemeChanged.connect(follow_os)
    return window


def run(file: str | None = None, theme: str | None = None) -> int:
    """Show the window, then start background loading; returns the exit code."""
    t0 = time.perf_counter()
    app = create_app()
    try:
        window = build_window(theme=theme)
    except PreflightError as err:       # e.g. a damaged settings file
        from PySide6.QtWidgets import QMessageBox

        QMessageBox.critical(None, "Preflight", f"{err.message}\n\n{err.hint}")
        return err.exit_code
    window.show()
    QTimer.singleShot(0, window.start)
    if file:
        QTimer.singleShot(0, lambda: window.open_file(file))
    log.info("window shown after %.2f s", time.perf_counter() - t0)
    if os.environ.get("PREFLIGHT_GUI_SMOKE"):
        # `PREFLIGHT_GUI_SMOKE=seconds`: close by itself (CI smoke test of the real start).
        QTimer.singleShot(int(float(os.environ["PREFLIGHT_GUI_SMOKE"]) * 1000), window.close)
    code = app.exec()
    from preflight.qt.qt_workers import wait_all

    window.doc.cancel_all()
    wait_all(3000)
    window.backend.shutdown()
    return int(code)
