"""Opening and closing the real main window in tests."""

from __future__ import annotations

from typing import Any


def open_window(qtbot: Any, door: Any, *, owned_by_qtbot: bool = True) -> Any:
    """The main window over ``door`` (a WindowDoorway), shown and started (light theme);
    a test that deletes the window itself passes ``owned_by_qtbot=False``."""
    from preflight.qt.qt_app import build_window

    win = build_window(door, theme="light")
    if owned_by_qtbot:      # its work stops before qtbot closes it at the test's end
        qtbot.addWidget(win, before_close_func=stop_window_work)
    win.show()
    win.start()
    return win


def stop_window_work(win: Any) -> None:
    """Cancel everything the window started and wait for its workers (test teardown)."""
    from preflight.qt.qt_workers import wait_all

    win.controllers.cancel_all()
    wait_all(3000)
    win.app.shutdown()


def confirm_plans(win: Any, accept: bool = True, *, allow_all: bool = False) -> list:
    """Answer every send confirmation with ``accept`` (with ``allow_all``: every item the
    re-scan flags is allowed and a resend acknowledged first); returns the list the
    dialogs are appended to (each has ``.plan``, the exact request)."""
    shown: list = []

    def decide(dlg: Any) -> bool:
        shown.append(dlg)
        if allow_all:
            for box in dlg.overrides.values():
                box.setChecked(True)
            if dlg.resend is not None:
                dlg.resend.setChecked(True)
        return accept

    win.auto_confirm = decide
    return shown
