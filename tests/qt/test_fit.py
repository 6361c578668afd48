"""Issue 15: the window fits small screens — every control can be reached.

The real window and application layer (fake ports), at 1024×700 (a small laptop) and at 910×512, the
logical size of a 1366×768 screen at 150 % scaling (QT_SCALE_FACTOR=1.5 divides every
pixel size, fonts included, by 1.5, so a 910×512 window at scale 1 lays out the same).
"""

from __future__ import annotations

import pytest
from conftest import SAMPLE
from ports import window_settings
from PySide6.QtCore import QPoint, QRect
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractSlider,
    QAbstractSpinBox,
    QComboBox,
    QLineEdit,
    QPlainTextEdit,
    QScrollArea,
    QScrollBar,
    QTextEdit,
    QWidget,
)

SIZES = [(1024, 700), (910, 512)]
CONTROLS = (QAbstractButton, QComboBox, QAbstractSlider, QAbstractSpinBox, QLineEdit,
            QPlainTextEdit, QTextEdit)


def _door(rig, provider: bool, degraded: bool):
    # the ε slider and its controls show (a d_X policy); a provider, or none
    door = rig.doorway(window_settings("http://127.0.0.1:9/v1" if provider else None))
    if degraded:        # the detector banner, with its button, takes room at the top
        rig.detector.warnings = ["The NER model is missing: names may go undetected."]
    return door


def _controls(win: QWidget) -> list[QWidget]:
    """Every control the user could need to reach: visible, enabled, not a scroll bar
    (scroll bars are how the others are reached)."""
    found = []
    for w in win.findChildren(QWidget):
        if not isinstance(w, CONTROLS) or isinstance(w, QScrollBar):
            continue
        if w.isVisible() and w.isEnabled() and w.window() is win:
            found.append(w)
    return found


def _on_window(w: QWidget, win: QWidget) -> QRect:
    return QRect(w.mapTo(win, QPoint(0, 0)), w.size())


def _shown_part(w: QWidget, win: QWidget) -> QRect:
    """The part of ``w`` not clipped away by any ancestor (scroll viewports, splitter
    panes) or by the window, in window coordinates."""
    rect = _on_window(w, win)
    parent = w.parentWidget()
    while parent is not None and parent is not win:
        rect = rect.intersected(_on_window(parent, win))
        parent = parent.parentWidget()
    return rect.intersected(win.rect())


def _scroll_areas(w: QWidget) -> list[QScrollArea]:
    """The scroll areas that hold ``w``, innermost first."""
    areas, parent = [], w.parentWidget()
    while parent is not None:
        if isinstance(parent, QScrollArea):
            areas.append(parent)
        parent = parent.parentWidget()
    return areas


def _unreachable(qtbot, win: QWidget) -> list[str]:
    """The controls that cannot be brought fully into view (scrolling where a scroll area
    allows it). A control larger than its viewport counts as reached when it fills it."""
    missing = []
    for w in _controls(win):
        areas = _scroll_areas(w)
        for area in areas:
            area.ensureWidgetVisible(w, 0, 0)
        qtbot.wait(10)
        full, shown = _on_window(w, win), _shown_part(w, win)
        if areas:
            port = areas[0].viewport()
            need_w = min(full.width(), port.width())
            need_h = min(full.height(), port.height())
            ok = shown.width() >= need_w and shown.height() >= need_h
        else:
            ok = shown == full
        if not ok:
            label = getattr(w, "text", lambda: "")() if not isinstance(
                w, (QPlainTextEdit, QTextEdit)) else ""
            missing.append(f"{type(w).__name__} {w.objectName()!r} {label!r}: "
                           f"{full.getRect()} shows {shown.getRect()}")
    return missing


def _settled(win: QWidget) -> bool:
    """Nothing the window started is still to arrive in the right-hand column."""
    privacy = win.privacy
    if win.payload.result is None:          # nothing sanitized yet: nothing to assess
        return True
    return bool(privacy.facts is not None
                and (not privacy.uses_dx or privacy.attack is not None)
                and not win.assessment.refining.isVisible())


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("provider,degraded", [(True, False), (False, True)],
                         ids=["document-ready", "no-provider-degraded-detector"])
def test_every_control_is_reachable(qtbot, rig, size, provider, degraded):
    from windows import open_window

    win = open_window(qtbot, _door(rig, provider, degraded))
    win.original.setPlainText(SAMPLE)
    if degraded:
        qtbot.waitUntil(lambda: win.detector_banner.isVisible(), timeout=15000)
    else:
        qtbot.waitUntil(lambda: bool(win.doc.detections_done and win.payload.result
                                     and win.send_button.isEnabled()), timeout=15000)
    # the late results (the privacy facts, the attack on the d_X noise, the refined
    # prediction) change the height of wrapped sentences above the controls: on a busy
    # machine they come seconds later, so the layout is measured once they are in
    qtbot.waitUntil(lambda: _settled(win), timeout=60000)
    width, height = size
    hint = win.minimumSizeHint()
    assert hint.width() <= width and hint.height() <= height, hint
    win.resize(width, height)
    qtbot.waitUntil(lambda: (win.width(), win.height()) == size, timeout=3000)
    qtbot.wait(100)                 # the splitters and scroll areas settle
    controls = _controls(win)
    if provider:
        assert win.send_button in controls and win.controls.slider in controls
    else:
        assert win.banner_add in controls and win.detector_accept in controls
    # late results (a prediction, the banner's words) may move the layout once more
    try:
        qtbot.waitUntil(lambda: not _unreachable(qtbot, win), timeout=10000)
    except AssertionError:
        pass
    assert not _unreachable(qtbot, win), "\n".join(_unreachable(qtbot, win))


def test_the_check_catches_a_control_out_of_reach(qtbot, window):
    """Guard the guard: a button pushed beyond the window's edge is reported."""
    from PySide6.QtWidgets import QPushButton

    window.resize(1024, 700)
    qtbot.waitUntil(lambda: window.width() == 1024, timeout=3000)
    lost = QPushButton("Lost", window.centralWidget())
    lost.setObjectName("lost")
    lost.move(window.width() + 20, 10)
    lost.show()
    assert any("'lost'" in line for line in _unreachable(qtbot, window))
