"""Starting the window: `preflight gui` and `python -m preflight.qt` land here."""

from __future__ import annotations

import faulthandler
import logging
import os
import sys
import threading
import time
from typing import NoReturn

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication

from preflight.app.window_doorway import WindowDoorway
from preflight.core.errors import PreflightError
from preflight.qt import qt_theme

log = logging.getLogger(__name__)

# How long a close waits for the background work to stop and the models to be released
# before the process ends anyway. Cooperative ops stop within milliseconds; the wait runs
# out only when a worker is inside native code (a llama.cpp load, torch), which waiting
# longer would not end. The user's bound is 2 s from the close to the process's end.
CLOSE_DEADLINE_S = 1.0


def create_app(argv: list[str] | None = None) -> QApplication:
    app = QApplication.instance()
    if app is None:
        QGuiApplication.setDesktopFileName("preflight")
        app = QApplication(argv or [sys.argv[0]])
        app.setApplicationName("Preflight")
        app.setOrganizationName("Preflight")
    app.setWindowIcon(qt_theme.app_icon())
    return app


def build_window(door: WindowDoorway | None = None, theme: str | None = None):
    """The main window over ``door`` (the application layer; a real one over the user's
    settings when ``None``), themed and wired to follow the OS light/dark switch. Nothing
    heavy is loaded here."""
    from preflight.qt.qt_main_window import QtMainWindow

    app = create_app()
    door = door if door is not None else WindowDoorway()
    qt_theme.apply_theme(app, theme or door.settings.theme)
    window = QtMainWindow(door)

    def follow_os(*_a) -> None:
        if door.settings.theme == "system":
            qt_theme.apply_theme(app, "system")
            window.refresh_colors()

    QGuiApplication.styleHints().colorSchemeChanged.connect(follow_os)
    return window


def run(file: str | None = None, theme: str | None = None) -> int:
    """Show the window, then start background loading. Returns an exit code only when the
    window cannot open; once it was shown, closing it ends the process (see
    :func:`_end_now`) within :data:`CLOSE_DEADLINE_S` plus a moment."""
    t0 = time.perf_counter()
    app = create_app()
    try:
        window = build_window(theme=theme)
    except PreflightError as err:       # e.g. a damaged settings file
        from PySide6.QtWidgets import QMessageBox

        QMessageBox.critical(None, "Preflight", f"{err.message}\n\n{err.hint}")
        return err.exit_code
    _report_native_crashes()
    window.show()
    QTimer.singleShot(0, window.start)
    if not file:                        # the first start: the one-minute guide, once
        from preflight.qt.qt_first_run import show_guide_once

        QTimer.singleShot(0, lambda: show_guide_once(window))
    if file:
        QTimer.singleShot(0, lambda: window.open_file(file))
    log.info("window shown after %.2f s", time.perf_counter() - t0)
    _arm_smoke_close(window, os.environ.get("PREFLIGHT_GUI_SMOKE", ""))
    code = int(app.exec())
    closed_at = time.monotonic()
    try:
        shut_down(window, CLOSE_DEADLINE_S)
    except Exception:  # noqa: BLE001 - the process must still end here, see _end_now
        log.error("stopping the background work failed", exc_info=True)
    _end_now(code, closed_at)


class _CloseRelay(QObject):
    """Carries a "close now" from any thread (a log record) to the GUI thread."""

    sig_close = Signal()


class _CloseOnLog(logging.Handler):
    """Fires ``trigger`` once, at the first log record whose message contains ``text``."""

    def __init__(self, text: str, trigger) -> None:
        super().__init__(logging.INFO)
        self._text, self._trigger, self._fired = text, trigger, False

    def emit(self, record: logging.LogRecord) -> None:
        if not self._fired and self._text in record.getMessage():
            self._fired = True
            self._trigger()


def _arm_smoke_close(window, spec: str) -> None:
    """``PREFLIGHT_GUI_SMOKE``: the window closes by itself (the smoke tests of the real
    start, from source and in the bundle). ``SECONDS``: after that long; ``on:TEXT``: at
    the first log line containing TEXT, from whatever thread writes it — e.g.
    ``on:loading SLM`` closes it while llama.cpp loads the model in a worker."""
    if not spec:
        return

    def close() -> None:
        log.info("closing the window (PREFLIGHT_GUI_SMOKE=%s)", spec)
        window.close()

    if spec.startswith("on:"):
        relay = _CloseRelay(window)
        relay.sig_close.connect(close, Qt.ConnectionType.QueuedConnection)
        logging.getLogger().addHandler(_CloseOnLog(spec[3:], relay.sig_close.emit))
        package = logging.getLogger("preflight")
        if package.getEffectiveLevel() > logging.INFO:    # the line must be written
            package.setLevel(logging.INFO)
        return
    QTimer.singleShot(int(float(spec) * 1000), close)


def _report_native_crashes() -> None:
    """On a crash in native code (SIGSEGV …) print every thread's Python stack to stderr,
    so a crash report says which worker was where (the frozen app's close once ended in
    a bare SIGSEGV). Only code locations are printed, never document text.

    It writes to a duplicate of stderr's descriptor: while llama.cpp loads a model,
    llama-cpp-python points descriptor 2 itself at /dev/null (runtime/llama_open.py), and
    a crash then would go unreported. A windowed launcher may have no stderr: then
    nothing is enabled."""
    try:
        stream = os.fdopen(os.dup(sys.stderr.fileno()), "w")
    except (AttributeError, ValueError, OSError):     # no usable stderr
        return
    faulthandler.enable(file=stream, all_threads=True)   # it keeps ``stream`` alive


def shut_down(window, deadline_s: float) -> bool:
    """Stop the window's background work and release its models within ``deadline_s``.

    Returns ``True`` when every op returned and the application let go of its models,
    ``False`` when something is still running after the deadline — typically a model load
    in native code (llama.cpp, torch), which no cancel flag reaches."""
    from preflight.qt.qt_workers import close_lanes, wait_all

    end = time.monotonic() + deadline_s
    log.info("window closed; stopping the background work")
    window.controllers.cancel_all()
    running = close_lanes()
    # Released concurrently with the lanes draining: closing the detector's child
    # process is what lets an op waiting on it return at once.
    release = threading.Thread(target=_release, args=(window.app,), daemon=True,
                               name="preflight-release")
    release.start()
    drained = wait_all(max(0, int((end - time.monotonic()) * 1000)))
    release.join(max(0.0, end - time.monotonic()))
    if not (drained and not release.is_alive()):
        log.info("background work still running %.1f s after the close (%d op(s) were "
                 "active); not waiting for it", deadline_s, running)
        return False
    return True


def _release(door: WindowDoorway) -> None:
    try:
        door.shutdown()
    except Exception:  # noqa: BLE001 - best effort at exit; nothing left to tell the user
        log.warning("releasing the models failed", exc_info=True)


def _end_now(code: int, closed_at: float) -> NoReturn:
    """End the process without the interpreter's teardown, once :func:`shut_down` ran.

    Why: a worker still inside native code (a llama.cpp or torch model load) cannot be
    interrupted. A normal exit would wait for it (concurrent.futures joins its threads at
    exit: seconds to minutes, the process lingering after its window is gone) or tear
    Python and Qt down around it (objects freed under a running thread: the SIGSEGV the
    frozen app hit). Even with every worker stopped, the teardown of the loaded libraries
    (torch, spaCy, Qt) takes about a second, against the two the close may take.
    Nothing is lost by skipping it: :func:`shut_down` already released the models, the
    audit log is SQLite (committed records are on disk; a send cut short is marked
    "interrupted" at the next start), settings are written atomically when saved, and the
    detector's child process was ended (or exits when it sees its parent gone). Only the
    log handlers and the standard streams need flushing."""
    log.info("process ends %.2f s after the window closed", time.monotonic() - closed_at)
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)
