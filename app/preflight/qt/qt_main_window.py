"""The Preflight main window: it connects the views to the controllers.

The widget tree is built by :func:`preflight.qt.qt_main_layout.build_layout`; the logic
lives in the controllers (:mod:`preflight.qt.controllers`), over one application layer
(:class:`~preflight.app.window_doorway.WindowDoorway`). What is left here maps the
controllers' signals onto the views, and the views' gestures onto the controllers.

Size (~425 lines): one method per signal it maps; the logic is in the controllers.
"""

from __future__ import annotations

import html
from dataclasses import replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import QTimer, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication, QFileDialog, QMainWindow, QMenu, QWidget

from preflight.app.documents import Document, open_for_window
from preflight.app.presentation import error_text
from preflight.app.window_doorway import WindowDoorway
from preflight.core.sanitize.policy import effective_type
from preflight.qt import qt_theme
from preflight.qt.controllers import PreviewResult, build_controllers
from preflight.qt.qt_detect_progress import QtDetectProgress
from preflight.qt.qt_dialogs import QtConfirmSendDialog, documents_path, show_error
from preflight.qt.qt_history import open_history
from preflight.qt.qt_first_run import install_help_menu
from preflight.qt.qt_main_layout import build_layout
from preflight.qt.qt_panels import decision_text
from preflight.qt.qt_policy_menu import category_menu, type_menu
from preflight.qt.qt_settings import QtSettingsDialog
from preflight.qt.qt_shortcuts import install_shortcuts
from preflight.qt.qt_text_views import dropped_file
from preflight.qt.qt_workers import QtOp


class QtMainWindow(QMainWindow):
    """Original on the left, sanitized preview in the middle, controls and assessment on
    the right, the answer below."""

    sig_history_shown = Signal(object)       # the dialog (tests drive it)
    sig_confirm_shown = Signal(object)

    def __init__(self, app: WindowDoorway, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.app = app
        self.setWindowTitle("Preflight — check before it leaves")
        self.setWindowIcon(qt_theme.app_icon())
        self._fit_to_screen(1500, 940)
        self.controllers = c = build_controllers(app, self)
        self.doc, self.policies, self.payload = c.doc, c.policies, c.payload
        self.utility, self.answers, self.privacy = c.utility, c.answers, c.privacy
        self.auto_confirm: Any = None        # tests: a function(dialog) deciding the dialog
        self._opening_file = False           # set while an opened file's text goes in
        self._step = ""                      # the status line's chunked-send step, if shown
        build_layout(self, app)
        self._wire()
        install_shortcuts(self)              # keys, menus, Help → Keyboard shortcuts
        self.act_guide = install_help_menu(self)     # Help → Show the guide
        self._refresh_providers()

    def _fit_to_screen(self, width: int, height: int) -> None:
        """Preferred size, shrunk to 95 % of the screen's free area (a 1366×768 laptop must
        see the whole window, controls included)."""
        screen = QGuiApplication.primaryScreen()
        if screen is not None:
            free = screen.availableGeometry()
            width = min(width, int(free.width() * 0.95))
            height = min(height, int(free.height() * 0.95))
        self.resize(width, height)

    # -- wiring --------------------------------------------------------------------------
    def _wire(self) -> None:
        d, p, pay, u, a = self.doc, self.policies, self.payload, self.utility, self.answers
        # first: a document replaced whole starts over before it is detected
        self.original.sig_text_edited.connect(self._on_text_edited)
        self.original.sig_text_edited.connect(d.set_text)
        self.original.sig_span_clicked.connect(d.toggle_span)
        self.original.sig_deny_requested.connect(d.add_to_deny_list)
        self.original.sig_protect_here_requested.connect(d.protect_in_document)
        self.original.sig_file_dropped.connect(self.open_file)
        self.original.sig_paste_refused.connect(self._on_paste_refused)
        self.original.extend_span_menu = self._span_menu
        self.legend.sig_category_clicked.connect(self._legend_menu)
        self.controls.sig_policy_changed.connect(p.set_policy)
        self.controls.sig_epsilon_changed.connect(pay.set_epsilon)
        self.controls.sig_resample.connect(pay.resample)
        self.controls.sig_task_changed.connect(u.set_task)
        self.detector_accept.clicked.connect(self._accept_degraded)
        d.sig_spans_changed.connect(self._on_spans)
        d.sig_spans_shifted.connect(lambda: self.original.move_spans(d.spans))
        d.sig_detecting.connect(lambda on: self.detect_state.setText(
            "detecting…" if on else f"{len(d.spans)} item(s) detected"))
        self.detect_progress = QtDetectProgress(self, d, self.detect_state)
        d.sig_detector.connect(self._on_detector)
        p.sig_policy.connect(self._on_policy)
        p.sig_epsilon_range.connect(self._on_range)
        pay.sig_preparing.connect(lambda on: self.preview_state.setText(
            "preparing d_X…" if on else ""))
        pay.sig_preview_changed.connect(self._on_preview)
        pay.sig_actions.connect(self._sync_actions)
        self._wire_utility()
        self.assessment.privacy.bind(self.privacy, self.assessment.chart)
        for c in (d, p, pay, u, self.privacy, self.controllers.long):
            c.sig_status.connect(self.status_text.setText)
        a.sig_progress.connect(self._show_step)              # a chunked send's steps,
        a.sig_busy.connect(lambda busy: busy or self._show_step(""))   # gone when it ends
        for c in (d, p, pay, u):
            c.sig_error.connect(lambda m, h: show_error(self, m, h))
        self.provider.currentIndexChanged.connect(self._on_provider)
        for trigger in (self.send_button.clicked, self.send_shortcut.activated,
                        self.send_shortcut2.activated):
            # Ctrl+Enter in any field: the question as typed, before its field loses focus
            trigger.connect(lambda *_: a.prepare_send(self.controls.current_task()))
        self.local_button.clicked.connect(a.keep_local)
        self.copy_button.clicked.connect(self.copy_sanitized)
        self.stop_shortcut.activated.connect(a.stop)
        self.answer.bind(a)                       # chunks, rate, Stop, the outcome
        a.sig_plan_ready.connect(self._confirm)
        a.sig_started.connect(self._on_answer_started)
        a.sig_finished.connect(self._sync_actions)   # the pane shows the outcome
        a.sig_failed.connect(self._on_answer_failed)
        a.sig_busy.connect(self._sync_actions)
        self.act_open.triggered.connect(self._open_dialog)
        self.act_settings.triggered.connect(lambda: self.open_settings())
        self.act_history.triggered.connect(self.open_history)
        self.banner_add.clicked.connect(lambda: self.open_settings("providers"))

    def _wire_utility(self) -> None:
        u, panel = self.utility, self.assessment
        self.assessment.sig_find_best.connect(u.find_best_epsilon)
        self.assessment.sig_cancel_search.connect(u.cancel_recommendation)
        u.sig_prediction.connect(self._on_prediction)
        u.sig_refining.connect(panel.set_refining)
        u.sig_prediction_failed.connect(self._on_prediction_failed)
        u.sig_curve.connect(self._on_curve)
        u.sig_recommendation.connect(self._on_recommendation)
        u.sig_recommending.connect(panel.set_searching)
        # the scroll area is the timer's context: a window closed within the 100 ms drops
        # the call instead of reaching a deleted widget
        u.sig_recommending.connect(lambda on: on and QTimer.singleShot(
            100, self.right_scroll,
            lambda: self.right_scroll.ensureWidgetVisible(panel.search_step)))
        u.sig_recommend_progress.connect(panel.set_search_progress)
        u.sig_estimate.connect(lambda pair: panel.set_estimate(*pair))

    def start(self) -> None:
        """Begin background loading (after the window is shown, so it appears at once)."""
        self.controllers.start()
        self.company_notice.start()          # background: company model, central store
        self._sync_actions()

    # -- reactions -----------------------------------------------------------------------
    def _on_policy(self, policy) -> None:
        """A policy now applies: its name in the preview header, the controls follow it."""
        self.controls.set_policies(self.policies.choices, policy, self.policies.modified)
        self.assessment.set_dx_mode(policy.uses_dx)
        self.policy_name.setText(f"Policy: {html.escape(policy.title)}")
        self.policy_name.setToolTip(policy.description)
        self._sync_actions()

    def legend_menu(self, category) -> QMenu:
        return category_menu(self, self.policies, category)

    def _legend_menu(self, category, pos) -> None:
        self.legend_menu(category).exec(pos)

    def _span_menu(self, menu: QMenu, span) -> None:
        text = self.doc.text
        type_menu(menu, self.policies, effective_type(span, text[span.start:span.end]), self)

    def _on_range(self, lo: float, hi: float) -> None:
        self.controls.set_range(lo, hi, self.payload.epsilon or lo)
        self.assessment.chart.set_range(lo, hi)

    def _on_spans(self) -> None:
        self.original.set_spans(self.doc.spans, self.doc.excluded)
        if not self.doc.detecting:
            self.detect_state.setText(f"{len(self.doc.spans)} item(s) detected"
                                      if self.doc.text else "")

    def _on_detector(self, warnings: list) -> None:
        """A degraded detector: a warning that stays in sight, and an explicit choice."""
        self.detector_banner.setVisible(bool(warnings))
        self.detector_banner_text.setText(
            "<b>The PII detector runs degraded:</b> " + html.escape(" ".join(warnings))
            + " Nothing is shown or sent until you continue; Send asks again.")

    def _accept_degraded(self) -> None:
        self.detector_accept.setEnabled(False)
        self.detector_accept.setText("Continuing with limited detection")
        self.doc.accept_degraded()

    def _on_paste_refused(self, why: str) -> None:
        self.status_text.setText(why)
        show_error(self, why.split(". ", 1)[0] + ".", why.split(". ", 1)[1])

    def _on_text_edited(self, text: str, edit) -> None:
        """An emptied document, or one replaced whole (select all, then paste or type),
        is a new document: no answer, no question, no indicators, no legend change of
        the last one, and placeholders from ``<PERSON_1>`` again (numbers continued from
        another document would tell the provider it exists, and link people across
        them). An opened file starts over in :meth:`open_file`."""
        if self._opening_file:
            return
        replaced = edit is not None and edit[0] == 0 and edit[1] > 0 and edit[2] == len(text)
        if not text.strip() or replaced:
            self._start_new_document()
            self.app.new_document(None, text)

    def _start_new_document(self) -> None:
        self.answers.stop()
        self.answer.reset()
        self.controls.question.clear()
        self.decision.setText("")
        self.payload.new_document()
        self.policies.new_document()
        self.utility.new_document()

    def _on_preview(self, res: PreviewResult | None) -> None:
        if res is None:
            self.preview.set_blocked(self.payload.blocked)
            self.preview_state.setText("not ready" if self.payload.blocked else "")
            self.assessment.set_indicators(None)
            self.assessment.set_prediction(None, self.app.min_utility())
            self.assessment.set_refining(False)
            self.decision.setText("")
            self._sync_actions()
            return
        self.preview_state.setText("")
        self.preview.set_sanitized(res.sanitized)
        self.assessment.set_indicators(res.indicators)
        self.controls.set_guarantee(res.indicators.guarantee)
        if res.epsilon is not None:
            self.controls.set_epsilon(self.payload.epsilon or res.epsilon)
        self._sync_actions()

    def _on_prediction(self, pred) -> None:
        min_u = self.app.min_utility()
        self.assessment.set_prediction(pred, min_u)
        res = self.payload.result
        self.assessment.chart.set_current(res.epsilon if res else None, pred.value)
        self.decision.setText(decision_text(pred.value, min_u, self.policies.uses_dx))

    def _on_prediction_failed(self, why: str) -> None:
        self.assessment.set_unavailable(why)
        self.decision.setText("No utility prediction: decide from the preview and the "
                              "privacy indicators.")

    def _on_curve(self, curve) -> None:
        self.assessment.show_curve(curve, self.app.min_utility(),
                                   self.utility.recommendation is not None)

    def _on_recommendation(self, rec) -> None:
        self.assessment.show_recommendation(rec)
        if rec.decision == "send" and rec.epsilon is not None:
            self.controls.set_epsilon(rec.epsilon)

    def _on_provider(self, _i: int) -> None:
        self.utility.set_provider(self.provider.currentData())
        self._sync_actions()

    def _refresh_providers(self) -> None:
        names = self.app.provider_names()
        current = self.provider.currentData() or self.app.default_provider()
        self.provider.blockSignals(True)
        self.provider.clear()
        for n in names:
            self.provider.addItem(n, n)
        if not names:
            self.provider.addItem("none — works locally", None)
        self.provider.setCurrentIndex(max(self.provider.findData(current), 0))
        self.provider.blockSignals(False)
        self.banner.setVisible(not names)
        self.utility.set_provider(self.provider.currentData())
        self._sync_actions()

    def _sync_actions(self, *_a) -> None:
        prov = self.provider.currentData()
        busy = self.answers.busy
        has_payload = self.payload.fresh_result is not None
        self.send_button.setText(f"Send to {prov}  (Ctrl+Enter)" if prov
                                 else "Send (add a provider first)")
        self.send_button.setEnabled(bool(prov) and has_payload and not busy
                                    and not self.org_banner.blocks_send)
        self.local_button.setEnabled(has_payload and not busy)
        self.copy_button.setEnabled(has_payload)

    # -- send ------------------------------------------------------------------------------
    def _confirm(self, plan: Any) -> None:
        self._show_left(plan)
        ledger = getattr(plan, "ledger", None)     # the ledger as of this plan
        dlg = QtConfirmSendDialog(plan, self, remember=self._remember_allow,
                                  protect=self.policies.protect_types,
                                  privacy=self.privacy.summary(
                                      ledger.describe() if ledger is not None else None),
                                  headers=self.app.headers_as_sent(plan))
        self.sig_confirm_shown.emit(dlg)
        if self.auto_confirm is not None:
            accepted = bool(self.auto_confirm(dlg))
        else:
            accepted = dlg.exec() == QtConfirmSendDialog.DialogCode.Accepted
        if not accepted:
            self.status_text.setText("Not sent.")
            return
        confirmation = self.app.confirmation_for(plan, dlg.chosen_overrides(),
                                                 dlg.resend_ok())
        self.answers.execute(plan, confirmation)

    def _show_left(self, plan: Any) -> None:
        """"Left" from the plan the confirmation shows: the banner and "PII left in
        payload" count what its re-scan blocks, the fresh detection's findings too."""
        summary = self.leave_banner.show_plan(plan)
        res = self.payload.fresh_result
        if summary is not None and res is not None:
            self.assessment.set_indicators(replace(res.indicators,
                                                   pii_left=len(summary.leaving)))

    def _remember_allow(self, finding: Any) -> None:
        """"Don't flag this again": the value joins the detection allow-list (saved),
        unless the company policy refuses it (the same rule as the CLI's)."""
        refusal = self.app.org_policy.allow_list_refusal([finding])
        if refusal is not None:
            show_error(self, *refusal)
            return
        settings = self.app.settings
        allow = settings.detection.allow_list
        if finding.value.casefold() not in {v.casefold() for v in allow}:
            allow.append(finding.value)
            self.app.save_settings(settings)
        self.status_text.setText(f"{finding.type} added to the detection allow-list; it "
                                 "will not be flagged again (Settings to undo).")

    def _on_answer_started(self, mode: str) -> None:
        self.answer.start(mode, self.provider.currentData() or "The provider")
        self._sync_actions()

    def _show_step(self, words: str) -> None:
        if words or self.status_text.text() == self._step:
            self.status_text.setText(words)
        self._step = words

    def _on_answer_failed(self, message: str, hint: str) -> None:
        # the pane keeps what to do after the message box is closed
        self.answer.finish(" ".join(p for p in (f"Failed: {message}", hint) if p))
        show_error(self, message, hint)
        self._sync_actions()

    def copy_sanitized(self) -> None:
        res = self.payload.fresh_result
        if res is None:
            self.status_text.setText("Nothing copied: there is no up-to-date sanitized text "
                                     "yet.")
            return
        QGuiApplication.clipboard().setText(res.sanitized.text)
        self.status_text.setText("Sanitized text copied to the clipboard.")

    # -- files -----------------------------------------------------------------------------
    def _open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Open a document", documents_path(),
            "Documents (*.txt *.md *.eml *.docx *.pdf *.csv);;All files (*)")
        if path:
            self.open_file(path)

    def open_file(self, path: str) -> None:
        def done(doc: Document) -> None:
            self._start_new_document()
            self._opening_file = True            # its placeholders are the file's own
            try:
                self.original.set_document_text(doc.text)
            finally:
                self._opening_file = False
            # what could not be read is said where the file's opening is, never dropped
            self.status_text.setText(" ".join((f"Opened {Path(path).name}.", *doc.notices)))
            self.status_text.setToolTip("\n".join(doc.notices))

        def read(ctx) -> Document:
            doc = open_for_window(path)
            self.app.new_document(Path(path), doc.text)   # its placeholders stay stable
            return doc

        QtOp(self, read, done, lambda exc: show_error(self, *error_text(exc))).run()

    def dragEnterEvent(self, e) -> None:  # noqa: N802 - Qt override
        if dropped_file(e.mimeData()):
            e.acceptProposedAction()

    def dropEvent(self, e) -> None:  # noqa: N802 - Qt override
        path = dropped_file(e.mimeData())
        if path:
            e.acceptProposedAction()
            self.open_file(path)

    # -- other windows -----------------------------------------------------------------------
    def open_settings(self, tab: str = "") -> QtSettingsDialog:
        dlg = QtSettingsDialog(self.app, self, tab)
        dlg.sig_saved.connect(self._on_settings_saved)
        dlg.models.sig_models_changed.connect(lambda: self.status_text.setText(
            "Model settings changed; they apply to the next model load."))
        dlg.open()
        return dlg

    def _on_settings_saved(self) -> None:
        qt_theme.apply_theme(QApplication.instance(), self.app.settings.theme)
        self.refresh_colors()
        self._refresh_providers()
        self.controllers.settings_changed()

    def refresh_colors(self) -> None:
        for view in (self.original, self.preview, self.legend, self.legend_changed,
                     self.assessment.chart):
            view.refresh_colors()

    def open_history(self) -> None:
        open_history(self, self.app, self.sig_history_shown.emit, self.status_text.setText)

    # -- shutdown ----------------------------------------------------------------------------
    def closeEvent(self, e) -> None:  # noqa: N802 - Qt override
        self.controllers.cancel_all()
        super().closeEvent(e)
