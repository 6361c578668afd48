"""The real window, offscreen, over the real application layer (fake ports, a loopback
provider): what the user sees and does."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import SAMPLE
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QGuiApplication
from windows import confirm_plans, open_window

from preflight.app import refinement
from preflight.core.config import load_settings
from preflight.qt.qt_dialogs import QtConfirmSendDialog
from preflight.qt.qt_history import QtHistoryDialog
from preflight.qt.qt_text_views import span_tooltip


def _wait_ready(qtbot, win, text=SAMPLE):
    win.original.setPlainText(text)
    qtbot.waitUntil(lambda: bool(win.doc.detections_done and win.payload.result is not None
                                 and win.payload.prepared is not None), timeout=5000)


def _policy_is(win, name) -> bool:
    p = win.policies
    return bool(p.policy is not None and p.policy.name == name and not p.modified)


def _choose(qtbot, win, name):
    """Pick a policy in the Policy box, as the user would."""
    box = win.controls.policy
    qtbot.waitUntil(lambda: bool(box.findData(name) >= 0), timeout=3000)
    box.setCurrentIndex(box.findData(name))
    qtbot.waitUntil(lambda: _policy_is(win, name), timeout=3000)


def _result_has(win, *parts, without=()) -> bool:
    res = win.payload.result
    return bool(res is not None and all(p in res.sanitized.text for p in parts)
                and not any(p in res.sanitized.text for p in without))


def _point_of(view, cp: int) -> QPoint:
    cur = view.textCursor()
    cur.setPosition(cp)
    r = view.cursorRect(cur)
    return QPoint(r.x() + 3, r.center().y())


def test_first_run_without_provider_says_how_to_add_one(qtbot, rig):
    win = open_window(qtbot, rig.doorway())                # the first start's settings
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
    window.policies.set_policy("dx-pii")
    # the policy is read on the worker pool, which may still be busy with the window's
    # start-up on a loaded machine (timed out at 3 s in a suite run beside two CPU jobs)
    qtbot.waitUntil(lambda: _policy_is(window, "dx-pii"), timeout=15000)
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
    lo, hi = window.policies.epsilon_range
    window.controls.slider.setValue(0)                  # the bottom: most words replaced
    qtbot.waitUntil(lambda: bool(window.payload.result.epsilon == pytest.approx(lo)),
                    timeout=3000)
    low = window.preview.toPlainText()
    n_low = len(window.preview.highlighter.ranges)
    window.controls.slider.setValue(1000)               # the top: the words are kept
    qtbot.waitUntil(lambda: bool(window.payload.result.epsilon == pytest.approx(hi)),
                    timeout=3000)
    assert window.preview.toPlainText() != low
    assert len(window.preview.highlighter.ranges) < n_low
    assert window.controls.eps_spin.value() == pytest.approx(hi)
    window.controls.slider.setValue(0)
    qtbot.waitUntil(lambda: bool(window.payload.result.epsilon == pytest.approx(lo)),
                    timeout=3000)
    change = window.preview.sanitized.changes[0]
    assert window.preview.change_at_point(_point_of(window.preview, change.start)) == change


def test_assessment_panel_says_whether_the_provider_is_calibrated(qtbot, window, door):
    from preflight.core.utility.predictor import load_bundle, save_bundle, shipped_bundle_path

    label = window.assessment.calibration
    _wait_ready(qtbot, window)
    qtbot.waitUntil(lambda: bool(label.text()), timeout=5000)
    assert window.utility.provider == window.provider.currentData() == "loopback"
    assert label.text() == "not yet calibrated for this provider"
    # the user's sends refitted the provider's model (37 pairs): the flow's own bundle
    services = door.services
    bundle = load_bundle(shipped_bundle_path(services.assessor_slm_role()))
    bundle["metrics"] = {**bundle["metrics"], "user_pairs": 37}
    save_bundle(bundle, services.flow_learner().bundle_path(services.provider_key("loopback")))
    window.utility.set_provider("loopback")        # what choosing it in the combo does
    qtbot.waitUntil(lambda: bool(label.text() == "calibrated on 37 of your sends to "
                                 "loopback"), timeout=5000)


def test_assessment_panel_shows_prediction_indicators_and_chart(qtbot, window):
    _wait_ready(qtbot, window)
    qtbot.waitUntil(lambda: bool(window.utility.prediction and window.utility.prediction.note),
                    timeout=5000)         # a d_X setting: the instant value, and why
    a = window.assessment
    assert a.utility.text() != "—"
    # no refined value follows for a d_X setting: the window says why, never "refining…"
    assert a.utility_detail.text().startswith("The instant estimate is shown: along the ε")
    assert "refining" not in a.utility_detail.text() and not window.utility.prediction.refines
    pred = window.utility.prediction           # the bundle's conformal band, in words,
    band = f"{pred.level:.0%} interval {pred.low:.2f}–{pred.high:.2f}"   # beside the number
    assert a.utility_band.text() == band and band not in a.utility_detail.text()
    assert "%" in a.changed.text() and "detected" in a.pii_left.text()
    qtbot.waitUntil(lambda: bool(a.chart.series.count() == 12), timeout=3000)
    qtbot.waitUntil(lambda: a.tokens.text() != "—", timeout=3000)
    assert "$" in a.cost.text()


def test_send_confirm_stream_restore_and_history(qtbot, window, provider, tmp_path):
    _choose(qtbot, window, "placeholder")
    window.original.setPlainText(SAMPLE)
    qtbot.waitUntil(lambda: _result_has(window, "<PERSON_1>"), timeout=5000)
    shown = confirm_plans(window)
    assert window.send_button.isEnabled() and "loopback" in window.send_button.text()
    qtbot.keyClick(window, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: bool(provider.bodies), timeout=3000)
    dlg = shown[0]
    assert isinstance(dlg, QtConfirmSendDialog)
    assert "<PERSON_1>" in dlg.payload.toPlainText()             # the exact payload
    assert "Jane Doe" not in dlg.payload.toPlainText()
    assert dlg.plan.payload == provider.bodies[0]                # what left is what it said
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
    qtbot.waitUntil(lambda: bool(out.exists() and out.read_text().rstrip().endswith("]")),
                    timeout=3000)
    assert json.loads(out.read_text())[0]["provider"] == "loopback"
    hist.close()


def test_residual_pii_blocks_until_each_item_is_ticked(qtbot, window, provider):
    _wait_ready(qtbot, window)
    window.controls.slider.setValue(1000)         # d_X at the top: the values stay
    qtbot.waitUntil(lambda: bool(window.payload.fresh_result is not None
                                 and "Jane Doe" in window.payload.result.sanitized.text),
                    timeout=3000)
    decisions = []

    def decide(dlg):
        blocking = [f.id for f in dlg.plan.findings if f.blocking]
        assert len(blocking) == 3                  # the two names and the e-mail address
        decisions.append(dlg.send_button.isEnabled())
        for fid in blocking:
            dlg.overrides[fid].setChecked(True)
            decisions.append(dlg.send_button.isEnabled())
        return True

    window.auto_confirm = decide
    window.send_button.click()
    qtbot.waitUntil(lambda: bool(provider.bodies), timeout=3000)
    assert decisions == [False, False, False, True]


def test_cancelled_confirmation_sends_nothing(qtbot, window, provider):
    _wait_ready(qtbot, window)
    confirm_plans(window, accept=False)
    window.send_button.click()
    qtbot.waitUntil(lambda: bool(window.status_text.text() == "Not sent."), timeout=3000)
    qtbot.wait(200)
    assert provider.bodies == []


def test_keep_local_streams_and_escape_stops(qtbot, window, rig):
    _wait_ready(qtbot, window)
    rig.slm.delay = 0.08
    window.local_button.click()
    qtbot.waitUntil(lambda: bool(window.answer.restored.toPlainText()), timeout=3000)
    qtbot.keyClick(window, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: bool(not window.answers.busy), timeout=3000)
    assert "Stopped" in window.answer.status.text()
    assert rig.slm.stop_seen.is_set()


def test_copy_sanitized(qtbot, window):
    _wait_ready(qtbot, window)
    window.copy_button.click()
    assert QGuiApplication.clipboard().text() == window.payload.result.sanitized.text


def test_settings_add_provider_hides_banner(qtbot, rig):
    win = open_window(qtbot, rig.doorway())
    assert win.banner.isVisible()
    dlg = win.open_settings("providers")
    dlg.providers._add()
    dlg.providers.name.setText("work-llm")
    dlg.providers.name.editingFinished.emit()
    dlg.policy.min_util.setValue(0.7)
    for count, value in enumerate(("Falcon", "Osprey"), 1):
        dlg.policy.deny.value.setText(value)
        dlg.policy.deny.add_button.click()
        qtbot.waitUntil(lambda n=count: dlg.policy.deny.list.count() == n, timeout=30000)
    dlg.accept()
    saved = load_settings()
    assert saved.providers[0].name == "work-llm"
    assert saved.policy.min_utility == 0.7
    assert [e.hint for e in saved.detection.deny_entries] == ["F•••••", "O•••••"]
    assert win.app.settings == saved
    assert not win.banner.isVisible()
    assert win.send_button.text().startswith("Send to work-llm")
    assert not win.send_button.isEnabled()      # no document yet: nothing to send


def test_settings_models_tab_lists_status(qtbot, window, rig):
    roles = len(rig.models[0].manifest.models)
    dlg = window.open_settings("models")
    qtbot.waitUntil(lambda: bool(dlg.models.table.rowCount() == roles), timeout=3000)
    assert "ner" in dlg.models.note.text()
    assert "cloud_standin" not in dlg.models.note.text()     # optional: not "missing"
    dlg.models._install()
    qtbot.waitUntil(lambda: bool(dlg.models.note.text().startswith("Models installed.")),
                    timeout=3000)
    assert "slm_qwen05" in rig.models[0].installed[-1]     # the chosen SLM, with the rest
    dlg.reject()


def test_settings_models_tab_chooses_the_assessor_slm(qtbot, window, rig):
    roles = len(rig.models[0].manifest.models)
    dlg = window.open_settings("models")
    qtbot.waitUntil(lambda: bool(dlg.models.table.rowCount() == roles), timeout=3000)
    qwen, smol = (rig.models[0].spec(r).name for r in ("slm_qwen05", "slm"))
    combo = dlg.models.assessor_slm
    assert combo.currentData() == "slm_qwen05" and dlg.models.slm_warning.text() == ""
    assert combo.itemText(0) == qwen and qwen.startswith("Qwen2.5-Coder-0.5B")  # the default
    combo.setCurrentIndex(combo.findData("slm"))           # SmolLM2: not installed here
    assert "not installed" in combo.currentText()
    warning = dlg.models.slm_warning.text()
    assert f"{smol} is not installed" in warning
    assert f"{qwen} is used instead" in warning
    assert "--role slm`" in warning
    dlg.accept()
    assert window.app.settings.assessor_slm == load_settings().assessor_slm == "slm"


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


def test_open_files_txt_eml_docx(qtbot, window, door, tmp_path, monkeypatch):
    opened = []
    real = door.new_document
    monkeypatch.setattr(door, "new_document",
                        lambda source, text: (opened.append(source), real(source, text)))
    txt = tmp_path / "a.txt"
    txt.write_text("Jane Doe\r\nwrote.", encoding="utf-8")
    window.open_file(str(txt))
    qtbot.waitUntil(lambda: bool(window.doc.text == "Jane Doe\nwrote."), timeout=3000)
    assert opened == [txt]                      # its placeholder memory is the file's
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
def test_protect_identifiers_keeps_the_organization_everything_replaces_it(qtbot, rig):
    from ports import ORG_SAMPLE

    win = open_window(qtbot, rig.doorway())               # default settings: "identifiers"
    qtbot.waitUntil(lambda: bool(win.policies.policy is not None), timeout=3000)
    assert win.policies.policy.name == "identifiers"
    assert win.controls.policy.currentText() == "Protect identifiers"
    assert win.policy_name.text() == "Policy: Protect identifiers"
    win.original.setPlainText(ORG_SAMPLE)
    qtbot.waitUntil(lambda: _result_has(win, "<PERSON_1>"), timeout=5000)
    out = win.payload.result.sanitized.text
    assert "Acme Corp" in out and "Jane Doe" not in out
    assert "protected span" in win.controls.guarantee.text()
    _choose(qtbot, win, "everything")
    qtbot.waitUntil(lambda: _result_has(win, without=("Acme Corp",)), timeout=3000)
    assert "<ORGANIZATION_1>" in win.payload.result.sanitized.text
    assert "Jane Doe" not in win.payload.result.sanitized.text


def test_slider_follows_whether_the_policy_uses_dx(qtbot, rig):
    win = open_window(qtbot, rig.doorway())
    qtbot.waitUntil(lambda: bool(win.policies.policy is not None), timeout=3000)
    win.original.setPlainText(SAMPLE)
    qtbot.waitUntil(lambda: bool(win.doc.detections_done and win.payload.result is not None),
                    timeout=3000)
    assert not win.controls.slider.isEnabled()
    assert not win.assessment.find_best.isEnabled()
    assert "no d_X noise" in win.assessment.find_best.toolTip()
    _choose(qtbot, win, "identifiers-dx")
    qtbot.waitUntil(lambda: bool(win.controls.slider.isEnabled()), timeout=3000)
    assert win.assessment.find_best.isEnabled()
    qtbot.waitUntil(lambda: bool(win.payload.result and win.payload.result.epsilon is not None),
                    timeout=10000)
    out = win.payload.result.sanitized.text
    assert "<PERSON_1>" in out and "<EMAIL_ADDRESS_1>" in out    # placeholders + noise
    assert win.controls.eps_spin.text() != "—"
    _choose(qtbot, win, "redact")
    qtbot.waitUntil(lambda: bool(not win.controls.slider.isEnabled()), timeout=3000)
    assert win.controls.eps_spin.text() == "—"


def test_legend_change_applies_to_the_preview_and_saves_as_a_policy(qtbot, rig,
                                                                    monkeypatch):
    from ports import ORG_SAMPLE
    from PySide6.QtWidgets import QInputDialog

    from preflight.core.types import Category
    from preflight.qt.qt_policy_menu import SAVE_TEXT

    win = open_window(qtbot, rig.doorway())
    win.original.setPlainText(ORG_SAMPLE)
    qtbot.waitUntil(lambda: bool(_result_has(win, "<PERSON_1>") and win.doc.detections_done),
                    timeout=5000)
    assert "Acme Corp" in win.payload.result.sanitized.text
    menu = win.legend_menu(Category.QUASI_IDENTIFIER)
    sub = next(a.menu() for a in menu.actions() if a.text().startswith("ORGANIZATION"))
    acts = {a.data(): a for a in sub.actions() if a.data()}
    assert acts["keep"].isChecked() and not acts["placeholder"].isChecked()
    save = next(a for a in menu.actions() if a.text() == SAVE_TEXT)
    assert not save.isEnabled()                                   # nothing changed yet
    acts["placeholder"].trigger()
    qtbot.waitUntil(lambda: _result_has(win, "<ORGANIZATION_1>"), timeout=3000)
    assert win.controls.policy.currentText() == "Protect identifiers (modified)"
    assert win.policy_name.text() == "Policy: Protect identifiers (modified)"
    menu = win.legend_menu(Category.QUASI_IDENTIFIER)
    save = next(a for a in menu.actions() if a.text() == SAVE_TEXT)
    monkeypatch.setattr(QInputDialog, "getText", lambda *a, **k: ("orgs-hidden", True))
    save.trigger()
    qtbot.waitUntil(lambda: _policy_is(win, "orgs-hidden"), timeout=3000)
    saved = load_settings()
    rows = saved.policy.saved
    assert [r.name for r in rows] == ["orgs-hidden"]
    assert rows[0].types["ORGANIZATION"] == "placeholder"
    assert saved.policy.active == "orgs-hidden"
    # A new window over the saved settings (a restart) offers and applies it.
    again = open_window(qtbot, rig.doorway(saved))
    qtbot.waitUntil(lambda: bool(again.controls.policy.findData("orgs-hidden") >= 0
                                 and again.policies.policy is not None), timeout=3000)
    assert again.policies.policy.name == "orgs-hidden"
    again.original.setPlainText(ORG_SAMPLE)
    qtbot.waitUntil(lambda: _result_has(again, "<ORGANIZATION_1>"), timeout=5000)


def test_highlight_context_menu_offers_the_type_actions(qtbot, rig):
    from ports import ORG_SAMPLE
    from PySide6.QtWidgets import QMenu

    win = open_window(qtbot, rig.doorway())
    win.original.setPlainText(ORG_SAMPLE)
    qtbot.waitUntil(lambda: bool(win.payload.result and win.doc.detections_done), timeout=5000)
    org = next(s for s in win.doc.spans if s.type == "ORGANIZATION")
    menu = QMenu()
    win.original.extend_span_menu(menu, org)
    sub = menu.actions()[-1].menu()
    assert "ORGANIZATION: keep" in menu.actions()[-1].text()
    mask = next(a for a in sub.actions() if a.data() == "mask")
    mask.trigger()
    qtbot.waitUntil(lambda: _result_has(win, "*", without=("Acme Corp",)), timeout=3000)


def test_settings_policies_section_duplicates_edits_and_deletes(qtbot, window, door):
    dlg = window.open_settings("policy")
    box = dlg.policy.policies
    assert box.new_from_preset("identifiers", "mine")
    assert not box.new_from_preset("identifiers", "everything")   # a preset's name
    box._combos["ORGANIZATION"].setCurrentIndex(box._combos["ORGANIZATION"].findData("redact"))
    box.dx.setCurrentIndex(box.dx.findData("rest"))
    box.eps.setValue(12.5)
    box.active.setCurrentIndex(box.active.findData("mine"))
    dlg.accept()
    row, = load_settings().policy.saved
    assert (row.name, row.types["ORGANIZATION"], row.dx, row.epsilon) == \
        ("mine", "redact", "rest", 12.5)
    assert load_settings().policy.active == "mine"
    assert door.policy("mine").uses_dx
    dlg = window.open_settings("policy")
    dlg.policy.policies.saved.setCurrentRow(0)
    dlg.policy.policies._delete()
    dlg.accept()
    assert load_settings().policy.saved == []
    assert load_settings().policy.active == "identifiers"


def test_dont_flag_this_again_adds_to_the_allow_list_through_the_app(qtbot, window, door):
    """The confirmation's "Don't flag this again" on a plan whose re-scan found a NER
    guess (a note), a validated e-mail in the instruction and an API key."""
    from dataclasses import replace

    from preflight.core.send.plan import Finding
    from preflight.core.types import Category

    D = Category.DIRECT_IDENTIFIER
    ticker = Finding("person-t", "PERSON", D, "ASTS ST", "document", 0, 7, 0.75, False,
                     "the NER model's guess", "note")
    mail = Finding("email-m", "EMAIL_ADDRESS", D, "ir@volvo.example", "instruction", 0, 16,
                   1.0, True, "an e-mail", "validated")
    key = Finding("api-k", "API_KEY", Category.SECRET, "sk-x", "document", 0, 4, 1.0, True,
                  "a key", "validated")
    _wait_ready(qtbot, window)
    plans = confirm_plans(window, accept=False)
    window.send_button.click()                           # the real plan of this document
    qtbot.waitUntil(lambda: bool(plans), timeout=3000)
    plan = replace(plans[0].plan, findings=(ticker, mail, key))
    seen = {}

    def allowed():
        return list(door.settings.detection.allow_list)

    def decide(dlg):
        seen["buttons"] = sorted(dlg.remember_buttons)
        dlg.remember_buttons["person-t"].click()           # a note: one click
        seen["after_note"] = allowed()
        dlg.ask_validated = lambda f: False                # a validated one asks first
        dlg.remember_buttons["email-m"].click()
        seen["declined"] = allowed()
        dlg.ask_validated = lambda f: True
        dlg.remember_buttons["email-m"].click()
        seen["ticked"] = dlg.overrides["email-m"].isChecked()
        return False

    window.auto_confirm = decide
    window._confirm(plan)
    assert seen["buttons"] == ["email-m", "person-t"]        # never for a secret
    assert seen["after_note"] == ["ASTS ST"] and seen["declined"] == ["ASTS ST"]
    assert seen["ticked"]
    assert load_settings().detection.allow_list == ["ASTS ST", "ir@volvo.example"]


def test_a_document_pasted_over_the_last_one_starts_clean(qtbot, rig):
    """Select all, paste another document: its placeholders start at <PERSON_1> again, the
    last document's answer, question and legend change are gone."""
    from PySide6.QtCore import QMimeData

    win = open_window(qtbot, rig.doorway())
    qtbot.waitUntil(lambda: bool(win.policies.policy is not None), timeout=3000)
    win.original.setPlainText("Jane Doe met Max Power and Anna Berg in Berlin.")
    qtbot.waitUntil(lambda: _result_has(win, "<PERSON_3>"), timeout=5000)
    win.controls.question.setText("Who met whom?")
    win.answer.raw.setPlainText("<PERSON_1> met <PERSON_2>.")
    win.policies.protect_types(["LOCATION"])                  # a legend change, this document
    qtbot.waitUntil(lambda: bool(win.policies.modified), timeout=3000)

    win.original.selectAll()
    mime = QMimeData()
    mime.setText("Tom Baker wrote to Carl Dunn about the budget.")
    win.original.insertFromMimeData(mime)
    qtbot.waitUntil(lambda: _result_has(win, "<PERSON_1>", "<PERSON_2>",
                                        without=("Tom Baker", "Carl Dunn")), timeout=5000)
    assert "<PERSON_3>" not in win.payload.result.sanitized.text
    assert "<PERSON_4>" not in win.payload.result.sanitized.text
    assert win.controls.question.text() == ""
    assert win.answer.raw.toPlainText() == ""
    qtbot.waitUntil(lambda: not win.policies.modified, timeout=3000)


def test_typing_inside_a_document_keeps_its_placeholders(qtbot, rig):
    """An edit that replaces part of the text is the same document: its numbering stays."""
    win = open_window(qtbot, rig.doorway())
    win.original.setPlainText("Jane Doe met Max Power in Berlin.")
    qtbot.waitUntil(lambda: _result_has(win, "<PERSON_2>"), timeout=5000)
    cur = win.original.textCursor()
    cur.movePosition(cur.MoveOperation.End)
    win.original.setTextCursor(cur)
    win.original.insertPlainText(" Later Anna Berg joined.")
    qtbot.waitUntil(lambda: _result_has(win, "<PERSON_3>"), timeout=5000)


def test_an_instant_number_after_a_refined_one_for_the_same_setting_says_why(qtbot, window,
                                                                             rig, monkeypatch):
    # One number per setting: the refined value of this policy and ε was shown; a new noise
    # sample gets the instant value first, and the window says why the number moved. (A
    # bundle that shows refined values for this setting: the shipped rules keep d_X
    # settings instant, app.refinement.)
    monkeypatch.setattr(refinement, "verdict", lambda metrics, kind: (True, ""))
    _wait_ready(qtbot, window)
    u, a = window.utility, window.assessment
    qtbot.waitUntil(lambda: bool(u.prediction and u.prediction.refined), timeout=5000)
    refined = u.prediction.value
    assert "refined" not in a.utility_detail.text().split(";")[0]
    rig.slm.run_delay = 60                 # the next refinement never finishes
    before = window.payload.result
    window.payload.resample()
    qtbot.waitUntil(lambda: bool(u.prediction is not None and not u.prediction.refined
                                 and window.payload.result is not before), timeout=5000)
    assert a.utility_caption.text() == "predicted utility — instant estimate"
    assert a.utility_detail.text().startswith(
        f"a new noise sample: the refined {refined:.2f} was for the text before")
    # a new document says nothing about the last one's numbers
    window.original.setPlainText("")
    window.original.setPlainText(SAMPLE.replace("Jane", "Joan"))
    qtbot.waitUntil(lambda: bool(u.prediction is not None
                                 and window.payload.result is not before), timeout=5000)
    assert "was for the text before" not in a.utility_detail.text()
