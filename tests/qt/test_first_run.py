"""The first-run guide, the sample, Help → Show the guide, drag & drop onto the window,
and Open leaving no undo step that empties the editor."""

from __future__ import annotations

from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication, QMessageBox

from preflight.app import first_run
from preflight.qt.qt_first_run import PAGES, QtFirstRunGuide, show_guide_once


def test_sample_is_a_realistic_hr_email():
    text = first_run.sample_path().read_text("utf-8")
    for needle in ("Priya Raman", "priya.raman84@gmail.com", "+31 6 4821 7730",
                   "EUR 68,500", "NBL-204117", "the password is"):
        assert needle in text


def test_guide_shows_once_then_only_from_help(qtbot, window):
    guide = show_guide_once(window)                 # a fresh config folder: first start
    assert isinstance(guide, QtFirstRunGuide) and guide.isVisible()
    assert first_run.guide_seen()
    guide.close()
    assert show_guide_once(window) is None          # the next start: no guide
    help_menu = window.menuBar().actions()[-1]
    assert help_menu.text() == "&Help"
    assert [a.text() for a in help_menu.menu().actions()] == ["Keyboard shortcuts…",
                                                              "Show the guide"]
    assert [a.text() for a in window.menuBar().actions()].count("&Help") == 1
    window.act_guide.trigger()
    guides = [g for g in window.findChildren(QtFirstRunGuide) if g.isVisible()]
    assert len(guides) == 1


def test_guide_walks_every_feature_and_opens_the_sample(qtbot, window):
    guide = show_guide_once(window)
    titles = " ".join(t for t, _ in PAGES)
    for feature in ("Highlights", "Methods", "ε slider", "prediction", "Send", "local"):
        assert feature in titles
    assert len(PAGES) <= 6
    guide.open_sample.click()
    qtbot.waitUntil(lambda: "Priya Raman" in window.doc.text, timeout=3000)
    qtbot.waitUntil(lambda: bool(window.original.highlighter.ranges), timeout=5000)
    assert guide.pages.currentIndex() == 1          # on to the highlights page
    while guide.next.text() == "Next":
        guide.next.click()
    assert guide.position.text() == f"{len(PAGES)} / {len(PAGES)}"
    guide.next.click()                              # "Done"
    assert not guide.isVisible()


def _drop(window, path):
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    enter = QDragEnterEvent(QPoint(50, 50), Qt.DropAction.CopyAction, mime,
                            Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(window, enter)
    assert enter.isAccepted()
    drop = QDropEvent(QPointF(50, 50), Qt.DropAction.CopyAction, mime,
                      Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(window, drop)


def test_drop_on_the_window_opens_csv_and_refuses_unsupported(qtbot, window, door, tmp_path,
                                                             monkeypatch):
    opened = []
    real = door.new_document
    monkeypatch.setattr(door, "new_document",
                        lambda source, text: (opened.append(source), real(source, text)))
    csv = tmp_path / "staff.csv"
    csv.write_text("Name,Email\nJane Doe,jane@example.com\n", encoding="utf-8")
    _drop(window, csv)
    qtbot.waitUntil(lambda: window.doc.text == "Name: Jane Doe; Email: jane@example.com\n",
                    timeout=3000)
    assert opened[-1] == csv                        # the same path as File → Open
    sheet = tmp_path / "budget.xlsx"
    sheet.write_bytes(b"PK\x03\x04")
    _drop(window, sheet)
    qtbot.waitUntil(lambda: bool(window.findChildren(QMessageBox)), timeout=3000)
    box = window.findChildren(QMessageBox)[-1]
    assert box.text() == "Preflight cannot open budget.xlsx: .xlsx files are not supported."
    assert "Save the sheet as .csv." in box.informativeText()
    box.close()
    assert window.doc.text.startswith("Name: Jane Doe")   # the open document stays


def test_undo_after_open_never_empties_the_editor(qtbot, window, tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("Jane Doe wrote.", encoding="utf-8")
    window.open_file(str(f))
    qtbot.waitUntil(lambda: window.doc.text == "Jane Doe wrote.", timeout=3000)
    window.original.undo()
    window.original.undo()
    assert window.original.toPlainText() == "Jane Doe wrote."
    window.original.moveCursor(window.original.textCursor().MoveOperation.End)
    window.original.insertPlainText(" Again.")
    window.original.undo()                            # typing after Open stays undoable
    assert window.original.toPlainText() == "Jane Doe wrote."
