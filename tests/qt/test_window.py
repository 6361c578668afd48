"""The real window, offscreen, over the fake backend: what the user sees and does."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from fakes import SAMPLE, FakeFinding
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QGuiApplication

from preflight.qt.qt_dialogs import QtConfirmSendDialog, QtHistoryDialog
from preflight.qt.qt_text_views import span_tooltip


def _wait_ready(qtbot, win, text=SAMPLE):
    win.original.setPlainText(text)
    qtbot.waitUntil(lambda: bool(win.doc.detections_done and win.doc.result is not None
                                 and win.doc.prepared is not None), timeout=5000)


def _choose(qtbot, win, name):
    """Pick a policy in the Policy box, as the user would."""
    box = win.controls.policy
    qtbot.waitUntil(lambda: bool(box.findData(name) >= 0), timeout=3000)
    box.setCurrentIndex(box.findData(name))
    qtbot.waitUntil(lambda: bool(win.doc.policy is not None and win.doc.policy.name == name and not win.doc.modified),
                    timeout=3000)


def _point_of(view, cp: int) -> QPoint:
    cur = view.textCursor()
    cur.setPosition(cp)
    r = view.cursorRect(cur)
    return QPoint(r.x() + 3, r.center().y())


def test_first_run_without_provider_says_how_to_add_one(qtbot):
    from fakes import FakeBackend

    from preflight.qt.qt_app import build_window

    win = build_window(FakeBackend(), theme="light")
    qtbot.addWidget(win)
    win.show()
    win.start()
    assert win.banner.isVisible()
    assert "Settings → Providers" in win.banner_text.text()
    assert not win.send_button.isEnabled()
    win.original.setPlainText(SAMPLE)
    qtbot.waitUntil(lambda: bool(win.local_button.isEnabled()), timeout=3000)


def test_paste_highlights_by_category_with_tooltips(qtbot, window):
    _wait_ready(qtbot, window)
    ranges = window.original.highlighter.ranges
    assert len(ranges) == 3
    start, end, fmt = ranges[0]
    assert (start, end) == (0, 8)
    assert fmt.background().color().name() == "#ffc4c4"              # direct identifier
    painted = window.original.document().firstBlock().layout().formats()
    assert any(f.start == 0 and f.length == 8 and
               f.format.background().color().name() == "#ffc4c4" for f in painted)
    tip = span_tooltip(window.doc.spans[0], window.doc.text, window.doc.excluded)
    assert "PERSON" in tip and "0.85" in tip and "capitalized" in tip
    qtbot.waitUntil(lambda: bool(window.detect_state.text() == "3 item(s) detected"),
                    timeout=3000)


def test_click_on_span_excludes_and_includes_it(qtbot, window):
    window.doc.set_policy("dx-pii")
    qtbot.waitUntil(lambda: bool(window.doc.policy is not None and window.doc.policy.name == "dx-pii"), timeout=3000)
    _wait_ready(qtbot, window)
    view = window.original
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=_point_of(view, 2))
    assert ("PERSON", "Jane Doe") in window.doc.excluded
    strike = [r for r in view.highlighter.ranges if r[2].fontStrikeOut()]
    assert len(strike) == 1
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=_point_of(view, 2))
    assert not window.doc.excluded


def test_preview_highlights_changes_and_slider_moves_it(qtbot, window):
    _wait_ready(qtbot, window)
    window.controls.slider.setValue(0)                  # ε = 1: most words replaced
    qtbot.waitUntil(lambda: bool(window.doc.result.epsilon == 1.0), timeout=3000)
    low = window.preview.toPlainText()
    n_low = len(window.preview.highlighter.ranges)
    window.controls.slider.setValue(1000)               # ε = 100: nearly all kept
    qtbot.waitUntil(lambda: bool(window.doc.result.epsilon == 100.0), timeout=3000)
    assert window.preview.toPlainText() != low
    assert len(window.preview.highlighter.ranges) < n_low
    assert window.controls.eps_spin.value() == 100.0
    change = window.preview.sanitized.changes[0] if window.preview.sanitized.changes else None
    if change is not None:
        assert window.preview.change_at_point(_point_of(window.preview, change.start)) == change


def test_assessment_panel_says_whether_the_provider_is_calibrated(qtbot, window):
    backend, label = window.backend, window.assessment.calibration
    _wait_ready(qtbot, window)
    qtbot.waitUntil(lambda: bool(label.text()), timeout=5000)
    assert backend.provider == window.provider.currentData() is not None
    assert label.text() == "not yet calibrated for this provider"
    backend.calibrated[backend.provider] = 37
    window.doc.set_provider(backend.provider)       # what choosing it in the combo does
    want = f"calibrated on 37 of your sends to {backend.provider}"
    qtbot.waitUntil(lambda: bool(label.text() == want), timeout=5000)


def test_assessment_panel_shows_prediction_indicators_and_chart(qtbot, window):
    _wait_ready(qtbot, window)
    qtbot.waitUntil(lambda: bool(window.doc.prediction and window.doc.prediction.refined),
                    timeout=5000)
    a = window.assessment
    assert a.utility.text() != "—"
    assert "±" in a.utility_detail.text()
    assert "%" in a.changed.text() and "detected" in a.pii_left.text()
    qtbot.waitUntil(lambda: bool(a.chart.series.count() == 12), timeout=3000)
    assert a.tokens.text() != "—" and "$" in a.cost.text()


def test_send_confirm_stream_restore_and_history(qtbot, window, fake_backend, tmp_path):
    _choose(qtbot, window, "placeholder")
    _wait_ready(qtbot, window) if False else window.original.setPlainText(SAMPLE)
    qtbot.waitUntil(lambda: bool(window.doc.result and "<PERSON_1>"
                                 in window.doc.result.sanitized.text), timeout=5000)
    shown = []
    window.auto_confirm = lambda dlg: (shown.append(dlg), True)[1]
    assert window.send_button.isEnabled() and "loopback" in window.send_button.text()
    qtbot.keyClick(window, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: bool(fake_backend.sent), timeout=3000)
    dlg = shown[0]
    assert isinstance(dlg, QtConfirmSendDialog)
    assert "<PERSON_1>" in dlg.payload.toPlainText()             # the exact payload
    assert "Jane Doe" not in dlg.payload.toPlainText()
    qtbot.waitUntil(lambda: bool(not window.answers.busy), timeout=3000)
    assert "Summary about Jane Doe" in window.answer.restored.toPlainText()
    assert "<PERSON_1>" in window.answer.raw.toPlainText()
    assert "tokens/s" in window.answer.rate.text()
    got = []
    window.sig_history_shown.connect(got.append)
    window.act_history.trigger()
    qtbot.waitUntil(lambda: bool(got), timeout=3000)
    hist: QtHistoryDialog = got[0]
    assert hist.table.rowCount() == 1 and hist.table.item(0, 3).text() == "loopback"
    assert "<PERSON_1>" in hist.detail.toPlainText()
    out = tmp_path / "h.json"
    hist.sig_export.emit(str(out))
    # written on a worker: wait for the whole file, not its creation
    qtbot.waitUntil(lambda: bool(out.exists() and out.read_text().endswith("]")),
                    timeout=3000)
    assert json.loads(out.read_text())[0]["provider"] == "loopback"
    hist.close()


def test_residual_pii_blocks_until_each_item_is_ticked(qtbot, window, fake_backend):
    fake_backend.findings = (FakeFinding("person-1", "PERSON", "Jane Doe", "a name"),)
    fake_backend.prior_sends = ()
    _wait_ready(qtbot, window)
    decisions = []

    def decide(dlg):
        decisions.append(dlg.send_button.isEnabled())
        dlg.overrides["person-1"].setChecked(True)
        decisions.append(dlg.send_button.isEnabled())
        return True

    window.auto_confirm = decide
    window.send_button.click()
    qtbot.waitUntil(lambda: bool(fake_backend.sent), timeout=3000)
    assert decisions == [False, True]


def test_cancelled_confirmation_sends_nothing(qtbot, window, fake_backend):
    _wait_ready(qtbot, window)
    window.auto_confirm = lambda dlg: False
    window.send_button.click()
    qtbot.waitUntil(lambda: bool(window.status_text.text() == "Not sent."), timeout=3000)
    assert fake_backend.sent == []


def test_keep_local_streams_and_escape_stops(qtbot, window, fake_backend):
    _wait_ready(qtbot, window)
    fake_backend.delay = 0.08
    window.local_button.click()
    qtbot.waitUntil(lambda: bool(window.answer.restored.toPlainText()), timeout=3000)
    qtbot.keyClick(window, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: bool(not window.answers.busy), timeout=3000)
    assert "Stopped" in window.answer.status.text()
    assert fake_backend.stop_seen.is_set()


def test_copy_sanitized(qtbot, window):
    _wait_ready(qtbot, window)
    window.copy_button.click()
    assert QGuiApplication.clipboard().text() == window.doc.result.sanitized.text


def test_settings_add_provider_hides_banner(qtbot):
    from fakes import FakeBackend

    from preflight.qt.qt_app import build_window

    backend = FakeBackend()
    win = build_window(backend, theme="light")
    qtbot.addWidget(win)
    win.show()
    assert win.banner.isVisible()
    dlg = win.open_settings("providers")
    dlg.providers._add()
    dlg.providers.name.setText("work-llm")
    dlg.providers.name.editingFinished.emit()
    dlg.policy.min_util.setValue(0.7)
    dlg.policy.deny.setPlainText("Falcon\nOsprey")
    dlg.accept()
    assert backend.saved == 1
    assert backend.settings.providers[0].name == "work-llm"
    assert backend.settings.policy.min_utility == 0.7
    assert backend.settings.detection.deny_list == ["Falcon", "Osprey"]
    assert not win.banner.isVisible()
    assert win.send_button.text().startswith("Send to work-llm")
    assert not win.send_button.isEnabled()      # no document yet: nothing to send


def test_settings_models_tab_lists_status(qtbot, window):
    dlg = window.open_settings("models")
    qtbot.waitUntil(lambda: bool(dlg.models.table.rowCount() == 5), timeout=3000)
    assert "ner" in dlg.models.note.text()
    assert "cloud_standin" not in dlg.models.note.text()     # optional: not "missing"
    dlg.models._install()
    qtbot.waitUntil(lambda: bool(dlg.models.note.text().startswith("Models installed.")), timeout=3000)
    dlg.reject()


def test_settings_models_tab_chooses_the_assessor_slm(qtbot, window):
    backend = window.backend
    dlg = window.open_settings("models")
    qtbot.waitUntil(lambda: bool(dlg.models.table.rowCount() == 5), timeout=3000)
    combo = dlg.models.assessor_slm
    assert combo.currentData() == "slm_qwen05" and dlg.models.slm_warning.text() == ""
    assert combo.itemText(0) == "Qwen2.5-Coder-0.5B-Instruct"       # the default, first
    combo.setCurrentIndex(combo.findData("slm"))
    assert "not installed" in combo.currentText()
    warning = dlg.models.slm_warning.text()
    assert "SmolLM2-135M-Instruct is not installed" in warning
    assert "Qwen2.5-Coder-0.5B-Instruct is used instead" in warning
    assert "--role slm`" in warning
    dlg.accept()
    assert backend.settings.assessor_slm == "slm"


def test_dark_theme_changes_highlight_colours(qtbot, window):
    from PySide6.QtWidgets import QApplication

    from preflight.qt import qt_theme

    _wait_ready(qtbot, window)
    qt_theme.apply_theme(QApplication.instance(), "dark")
    window.refresh_colors()
    try:
        bg = window.original.highlighter.ranges[0][2].background().color().name()
        assert bg == qt_theme.DARK.category[next(iter(qt_theme.DARK.category))].name()
        assert QApplication.instance().palette().base().color().lightness() < 80
    finally:
        qt_theme.apply_theme(QApplication.instance(), "light")


def test_open_files_txt_eml_docx(qtbot, window, tmp_path):
    txt = tmp_path / "a.txt"
    txt.write_text("Jane Doe\r\nwrote.", encoding="utf-8")
    window.open_file(str(txt))
    qtbot.waitUntil(lambda: bool(window.doc.text == "Jane Doe\nwrote."), timeout=3000)
    assert window.backend.opened == [txt]       # its placeholder memory is the file's
    eml = tmp_path / "m.eml"
    eml.write_bytes(b"From: Max Power <max@example.com>\r\nSubject: Plan\r\n"
                    b"Content-Type: text/plain; charset=utf-8\r\n"
                    b"Content-Transfer-Encoding: quoted-printable\r\n\r\nHi Jane Doe, caf=C3=A9 at 5.\r\n")
    window.open_file(str(eml))
    qtbot.waitUntil(lambda: bool("café" in window.doc.text), timeout=3000)
    assert window.doc.text.startswith("From: Max Power <max@example.com>")
    assert window.status_text.text() == "Opened m.eml."
    import docx as python_docx

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))
    from docfiles import add_picture

    document = python_docx.Document()
    document.add_paragraph("Jane Doe")
    document.add_paragraph("second line")
    add_picture(document.add_paragraph())
    docx = tmp_path / "d.docx"
    document.save(str(docx))
    window.open_file(str(docx))
    qtbot.waitUntil(lambda: bool(window.doc.text == "Jane Doe\nsecond line\n"), timeout=3000)
    # what could not be read is said where the opening is
    assert window.status_text.text() == ("Opened d.docx. Not read in d.docx: 1 image "
                                         "(Preflight reads only the text; nothing else is "
                                         "sent).")


def test_bad_file_shows_message_not_traceback(qtbot, window, tmp_path):
    bad = tmp_path / "x.txt"
    bad.write_bytes(b"\x00\x01binary")
    window.open_file(str(bad))
    from PySide6.QtWidgets import QMessageBox

    qtbot.waitUntil(lambda: bool(window.findChildren(QMessageBox)), timeout=3000)
    box = window.findChildren(QMessageBox)[-1]
    assert "binary" in box.text() and "plain text" in box.informativeText()
    box.close()
    assert window.original.toPlainText() == ""


def test_emoji_text_highlights_at_the_right_place(qtbot, window):
    text = "😀😀 hello Jane Doe"
    _wait_ready(qtbot, window, text)
    start, end, _fmt = window.original.highlighter.ranges[0]
    cur = window.original.textCursor()
    cur.setPosition(start)
    cur.setPosition(end, cur.MoveMode.KeepAnchor)
    assert cur.selectedText() == "Jane Doe"


def test_typing_keeps_highlights_on_their_words(qtbot, window):
    _wait_ready(qtbot, window)
    window.doc._detect_timer.setInterval(10_000)         # no re-detection during this test
    cur = window.original.textCursor()
    cur.setPosition(0)
    window.original.setTextCursor(cur)
    qtbot.keyClicks(window.original, "Hi ")
    start, end, _fmt = window.original.highlighter.ranges[0]
    assert window.original.toPlainText()[start:end] == "Jane Doe"
    assert window.original.span_at_point(_point_of(window.original, start + 1)).start == 3


def test_void_qt_calls_cannot_free_none():
    """PySide6 6.12.0 drops a reference to None on every void call on Python 3.11, and
    ~50,000 such calls abort the interpreter; the pinned version must not."""
    import subprocess
    import sys

    code = ("import preflight.qt\n"
            "from PySide6.QtCore import QPoint\n"
            "p = QPoint()\n"
            "for _ in range(200_000): p.setX(1)\n"
            "print('alive')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and "alive" in proc.stdout, proc.stderr[-500:]


# -- policies ---------------------------------------------------------------------------
def _policy_window(qtbot, backend):
    from fakes import open_window

    return open_window(qtbot, backend)


def test_protect_identifiers_keeps_the_organization_everything_replaces_it(qtbot):
    from fakes import ORG_SAMPLE, FakeBackend

    win = _policy_window(qtbot, FakeBackend())          # default settings: "identifiers"
    qtbot.waitUntil(lambda: bool(win.doc.policy is not None), timeout=3000)
    assert win.doc.policy.name == "identifiers"
    assert win.controls.policy.currentText() == "Protect identifiers"
    assert win.policy_name.text() == "Policy: Protect identifiers"
    win.original.setPlainText(ORG_SAMPLE)
    qtbot.waitUntil(lambda: bool(win.doc.result and "<PERSON_1>" in win.doc.result.sanitized.text),
                    timeout=5000)
    out = win.doc.result.sanitized.text
    assert "Acme Corp" in out and "Jane Doe" not in out
    assert "protected span" in win.controls.guarantee.text()
    _choose(qtbot, win, "everything")
    qtbot.waitUntil(lambda: bool(win.doc.result and "Acme Corp" not in win.doc.result.sanitized.text), timeout=3000)
    assert "<ORGANIZATION_1>" in win.doc.result.sanitized.text
    assert "Jane Doe" not in win.doc.result.sanitized.text


def test_slider_follows_whether_the_policy_uses_dx(qtbot):
    from fakes import FakeBackend

    win = _policy_window(qtbot, FakeBackend())
    qtbot.waitUntil(lambda: bool(win.doc.policy is not None), timeout=3000)
    win.original.setPlainText(SAMPLE)
    qtbot.waitUntil(lambda: bool(win.doc.detections_done and win.doc.result is not None),
                    timeout=3000)
    assert not win.controls.slider.isEnabled()
    assert not win.assessment.find_best.isEnabled()
    assert "no d_X noise" in win.assessment.find_best.toolTip()
    _choose(qtbot, win, "identifiers-dx")
    qtbot.waitUntil(lambda: bool(win.controls.slider.isEnabled()), timeout=3000)
    assert win.assessment.find_best.isEnabled()
    qtbot.waitUntil(lambda: bool(win.doc.result and win.doc.result.epsilon is not None),
                    timeout=10000)
    out = win.doc.result.sanitized.text
    assert "<PERSON_1>" in out and "<EMAIL_ADDRESS_1>" in out    # placeholders + noise
    assert win.controls.eps_spin.text() != "—"
    _choose(qtbot, win, "redact")
    qtbot.waitUntil(lambda: bool(not win.controls.slider.isEnabled()), timeout=3000)
    assert win.controls.eps_spin.text() == "—"


def test_legend_change_applies_to_the_preview_and_saves_as_a_policy(qtbot, monkeypatch):
    from fakes import ORG_SAMPLE, FakeBackend
    from PySide6.QtWidgets import QInputDialog

    from preflight.core.types import Category
    from preflight.qt.qt_policy_menu import SAVE_TEXT

    backend = FakeBackend()
    win = _policy_window(qtbot, backend)
    win.original.setPlainText(ORG_SAMPLE)
    qtbot.waitUntil(lambda: bool(win.doc.result and "<PERSON_1>" in win.doc.result.sanitized.text
                                 and win.doc.detections_done), timeout=5000)
    assert "Acme Corp" in win.doc.result.sanitized.text
    menu = win.legend_menu(Category.QUASI_IDENTIFIER)
    sub = next(a.menu() for a in menu.actions() if a.text().startswith("ORGANIZATION"))
    acts = {a.data(): a for a in sub.actions() if a.data()}
    assert acts["keep"].isChecked() and not acts["placeholder"].isChecked()
    save = next(a for a in menu.actions() if a.text() == SAVE_TEXT)
    assert not save.isEnabled()                                   # nothing changed yet
    acts["placeholder"].trigger()
    qtbot.waitUntil(lambda: bool(win.doc.result and "<ORGANIZATION_1>" in win.doc.result.sanitized.text),
                    timeout=3000)
    assert win.controls.policy.currentText() == "Protect identifiers (modified)"
    assert win.policy_name.text() == "Policy: Protect identifiers (modified)"
    menu = win.legend_menu(Category.QUASI_IDENTIFIER)
    save = next(a for a in menu.actions() if a.text() == SAVE_TEXT)
    monkeypatch.setattr(QInputDialog, "getText", lambda *a, **k: ("orgs-hidden", True))
    save.trigger()
    qtbot.waitUntil(lambda: bool(win.doc.policy is not None and win.doc.policy.name == "orgs-hidden"
                                 and not win.doc.modified), timeout=3000)
    rows = backend.settings.policy.saved
    assert [r.name for r in rows] == ["orgs-hidden"]
    assert rows[0].types["ORGANIZATION"] == "placeholder"
    assert backend.settings.policy.active == "orgs-hidden"
    # A new window over the same settings (a restart) offers and applies it.
    again = _policy_window(qtbot, FakeBackend(backend.settings))
    qtbot.waitUntil(lambda: bool(again.controls.policy.findData("orgs-hidden") >= 0
                                 and again.doc.policy is not None), timeout=3000)
    assert again.doc.policy.name == "orgs-hidden"
    again.original.setPlainText(ORG_SAMPLE)
    qtbot.waitUntil(lambda: bool(again.doc.result and "<ORGANIZATION_1>"
                                 in again.doc.result.sanitized.text), timeout=5000)


def test_highlight_context_menu_offers_the_type_actions(qtbot):
    from fakes import ORG_SAMPLE, FakeBackend
    from PySide6.QtWidgets import QMenu

    win = _policy_window(qtbot, FakeBackend())
    win.original.setPlainText(ORG_SAMPLE)
    qtbot.waitUntil(lambda: bool(win.doc.result and win.doc.detections_done), timeout=5000)
    org = next(s for s in win.doc.spans if s.type == "ORGANIZATION")
    menu = QMenu()
    win.original.extend_span_menu(menu, org)
    sub = menu.actions()[-1].menu()
    assert "ORGANIZATION: keep" in menu.actions()[-1].text()
    mask = next(a for a in sub.actions() if a.data() == "mask")
    mask.trigger()
    qtbot.waitUntil(lambda: bool(win.doc.result and "Acme Corp" not in win.doc.result.sanitized.text
                                 and "*" in win.doc.result.sanitized.text), timeout=3000)


def test_settings_policies_section_duplicates_edits_and_deletes(qtbot, window, fake_backend):
    dlg = window.open_settings("policy")
    box = dlg.policy.policies
    assert box.new_from_preset("identifiers", "mine")
    assert not box.new_from_preset("identifiers", "everything")   # a preset's name
    box._combos["ORGANIZATION"].setCurrentIndex(box._combos["ORGANIZATION"].findData("redact"))
    box.dx.setCurrentIndex(box.dx.findData("rest"))
    box.eps.setValue(12.5)
    box.active.setCurrentIndex(box.active.findData("mine"))
    dlg.accept()
    row, = fake_backend.settings.policy.saved
    assert (row.name, row.types["ORGANIZATION"], row.dx, row.epsilon) == \
        ("mine", "redact", "rest", 12.5)
    assert fake_backend.settings.policy.active == "mine"
    assert fake_backend.policy("mine").uses_dx
    dlg = window.open_settings("policy")
    dlg.policy.policies.saved.setCurrentRow(0)
    dlg.policy.policies._delete()
    dlg.accept()
    assert fake_backend.settings.policy.saved == []
    assert fake_backend.settings.policy.active == "identifiers"

def test_dont_flag_this_again_adds_to_the_allow_list_through_the_app(qtbot, window,
                                                                     fake_backend):
    from preflight.core.send.plan import Finding
    from preflight.core.types import Category

    D = Category.DIRECT_IDENTIFIER
    ticker = Finding("person-t", "PERSON", D, "ASTS ST", "document", 0, 7, 0.75, False,
                     "the NER model's guess", "note")
    mail = Finding("email-m", "EMAIL_ADDRESS", D, "ir@volvo.example", "instruction", 0, 16,
                   1.0, True, "an e-mail", "validated")
    key = Finding("api-k", "API_KEY", Category.SECRET, "sk-x", "document", 0, 4, 1.0, True,
                  "a key", "validated")
    fake_backend.findings = (ticker, mail, key)
    fake_backend.prior_sends = ()
    _wait_ready(qtbot, window)
    seen = {}

    def decide(dlg):
        seen["buttons"] = sorted(dlg.remember_buttons)
        dlg.remember_buttons["person-t"].click()           # a note: one click
        seen["after_note"] = list(fake_backend.settings.detection.allow_list)
        dlg.ask_validated = lambda f: False                # a validated one asks first
        dlg.remember_buttons["email-m"].click()
        seen["declined"] = list(fake_backend.settings.detection.allow_list)
        dlg.ask_validated = lambda f: True
        dlg.remember_buttons["email-m"].click()
        seen["ticked"] = dlg.overrides["email-m"].isChecked()
        return False

    window.auto_confirm = decide
    window.send_button.click()
    qtbot.waitUntil(lambda: "after_note" in seen and "ticked" in seen, timeout=3000)
    assert seen["buttons"] == ["email-m", "person-t"]        # never for a secret
    assert seen["after_note"] == ["ASTS ST"] and seen["declined"] == ["ASTS ST"]
    assert seen["ticked"]
    assert fake_backend.settings.detection.allow_list == ["ASTS ST", "ir@volvo.example"]
