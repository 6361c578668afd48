"""The window's "Always protect" and "Protect for this document only": no value in clear
anywhere under the profile, a secret found again (typed SECRET) by a new detector built
from the saved settings, a document's own values gone with it, Settings masked."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QMimeData
from PySide6.QtGui import QTextCursor
from windows import open_window

from preflight.core.config import load_settings
from preflight.core.types import Category

SECRET = "Vk7#qLp92Zr"
MEMO = f"Jane Doe set the staging password to {SECRET} before Friday."


def _files_holding(home: Path, value: str) -> list[str]:
    needles = {value.encode(), value.lower().encode()}
    return [str(p) for p in home.rglob("*") if p.is_file()
            and any(n in p.read_bytes() for n in needles)]


def _select(win, value: str) -> None:
    view = win.original
    start = view.toPlainText().index(value)
    cursor = view.textCursor()
    cursor.setPosition(start)
    cursor.setPosition(start + len(value), QTextCursor.MoveMode.KeepAnchor)
    view.setTextCursor(cursor)


def _choose(win, label: str) -> None:
    """Right-click the selection and pick ``label`` (the real menu of the view)."""
    view = win.original
    menu = view.context_menu(view.cursorRect().center())
    (action,) = [a for a in menu.actions() if a.text() == label]
    assert action.isEnabled()
    action.trigger()


def _typed(win, value: str) -> list[str]:
    text = win.doc.text
    return [s.type for s in win.doc.spans if text[s.start:s.end] == value]


def _ready(qtbot, win, text: str) -> None:
    done = win.doc.detections_done
    win.original.setPlainText(text)
    qtbot.waitUntil(lambda: bool(win.doc.detections_done > done), timeout=30000)


def test_always_protect_stores_no_value_and_finds_it_again(qtbot, rig, _isolated_home,
                                                           tmp_path):
    win = open_window(qtbot, rig.doorway())
    _ready(qtbot, win, MEMO)
    assert _typed(win, SECRET) == []                    # the detector missed it
    _select(win, SECRET)
    _choose(win, "Always protect this text (add to deny-list)")
    qtbot.waitUntil(lambda: _typed(win, SECRET) == ["SECRET"], timeout=30000)
    assert "secret" in win.status_text.text() and SECRET not in win.status_text.text()

    assert _files_holding(_isolated_home, SECRET) == []          # settings and data folders
    saved = load_settings().detection
    assert [e.kind for e in saved.deny_entries] == ["secret"] and saved.deny_list == []

    from preflight.core.pii.detector import PiiDetector

    other = f"Rotate {SECRET.lower()} and {SECRET} on the build server."
    detector = PiiDetector(saved, nlp_model_path=tmp_path / "no-model")
    spans = [(other[s.start:s.end], s.type, s.category) for s in detector.detect(other)]
    assert (SECRET, "SECRET", Category.SECRET) in spans
    assert (SECRET.lower(), "SECRET", Category.SECRET) in spans


def test_a_codename_stays_a_name_and_matches_whole_words(qtbot, rig, tmp_path):
    win = open_window(qtbot, rig.doorway())
    _ready(qtbot, win, "Budget for Blue Heron, due soon.")
    _select(win, "Blue Heron")
    _choose(win, "Always protect this text (add to deny-list)")
    qtbot.waitUntil(lambda: _typed(win, "Blue Heron") == ["DENY_LIST"], timeout=30000)

    from preflight.core.pii.detector import PiiDetector

    text = "BLUE HERON ships; blue\nheron too; Blue Herons and Blue-Heronx do not."
    detector = PiiDetector(load_settings().detection, nlp_model_path=tmp_path / "no-model")
    found = [text[s.start:s.end] for s in detector.detect(text) if s.type == "DENY_LIST"]
    assert found == ["BLUE HERON", "blue\nheron"]


def test_this_document_only_is_never_saved_and_ends_with_the_document(qtbot, rig,
                                                                      _isolated_home):
    win = open_window(qtbot, rig.doorway())
    _ready(qtbot, win, "The Osprey deal closes Friday; Osprey stays internal.")
    _select(win, "Osprey")
    _choose(win, "Protect for this document only")
    qtbot.waitUntil(lambda: _typed(win, "Osprey") == ["DENY_LIST", "DENY_LIST"],
                    timeout=30000)
    assert "this document only" in win.status_text.text()
    assert _files_holding(_isolated_home, "Osprey") == []
    assert load_settings().detection.deny_entries == []

    done = win.doc.detections_done
    win.original.selectAll()                              # paste another document over it
    mime = QMimeData()
    mime.setText("Osprey is the name of a bird.")
    win.original.insertFromMimeData(mime)
    qtbot.waitUntil(lambda: bool(win.doc.detections_done > done
                                 and win.doc.text.startswith("Osprey is")), timeout=30000)
    assert _typed(win, "Osprey") == []


def test_settings_policy_shows_masked_entries_adds_and_removes(qtbot, rig, _isolated_home):
    win = open_window(qtbot, rig.doorway())
    _ready(qtbot, win, MEMO)
    _select(win, SECRET)
    _choose(win, "Always protect this text (add to deny-list)")
    qtbot.waitUntil(lambda: _typed(win, SECRET) == ["SECRET"], timeout=30000)
    dlg = win.open_settings("policy")
    box = dlg.policy.deny
    assert [box.list.item(i).text() for i in range(box.list.count())] == [
        "V••••••••r · 11 characters · secret"]
    assert box.value.echoMode() == box.value.EchoMode.Password
    box.value.setText("Nightjar")
    box.add_button.click()
    assert box.value.text() == ""                         # gone from the field at once
    qtbot.waitUntil(lambda: box.list.count() == 2, timeout=30000)
    assert box.list.item(1).text() == "N••••••• · 8 characters · name or term"
    box.list.setCurrentRow(0)
    box.remove_button.click()
    dlg.accept()
    saved = load_settings().detection.deny_entries
    assert [e.hint for e in saved] == ["N•••••••"]
    assert _files_holding(_isolated_home, "Nightjar") == []
    qtbot.waitUntil(lambda: _typed(win, SECRET) == [], timeout=30000)   # removed: found no more
