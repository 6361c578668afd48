"""The Preflight main window: layout and wiring only (logic lives in the controllers).

Size (~600 lines, over the ~400 we aim for): one widget tree and the slots that map the
controllers' signals onto it; splitting the slots from the widgets they touch would only
add indirection. The window is being reworked as a whole (fail-closed states, answer
pane, small screens), which is where its layout moves into per-panel views.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMenu,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from preflight.app.documents import Document, open_for_window
from preflight.app.doorway import Doorway
from preflight.app.presentation import error_text, utility_number
from preflight.core.sanitize.policy import effective_type
from preflight.qt import qt_theme
from preflight.qt.answers import AnswerController
from preflight.qt.assessment_ops import no_epsilon_message
from preflight.qt.controllers import DocumentController, PreviewResult
from preflight.qt.privacy_ops import PrivacyController
from preflight.qt.qt_answer_pane import QtAnswerPane
from preflight.qt.qt_dialogs import QtConfirmSendDialog, QtHistoryDialog, show_error
from preflight.qt.qt_layouts import QtColumnScroll
from preflight.qt.qt_leave_banner import QtLeaveBanner
from preflight.qt.qt_org_policy import QtCompanyNotice, QtOrgBanner
from preflight.qt.qt_policy_menu import category_menu, type_menu
from preflight.qt.qt_first_run import install_help_menu
from preflight.qt.qt_panels import QtAssessmentPanel, QtControlsPanel
from preflight.qt.qt_settings import QtSettingsDialog
from preflight.qt.qt_shortcuts import install_shortcuts
from preflight.qt.qt_text_views import QtLegend, QtOriginalView, QtPreviewView, dropped_file
from preflight.qt.qt_workers import QtOp


def _title(text: str) -> QLabel:
    label = QLabel(text)
    label.setObjectName("paneTitle")
    label.setWordWrap(True)          # wraps in a narrow pane instead of widening the window
    return label


class QtMainWindow(QMainWindow):
    """Original on the left, sanitized preview in the middle, controls and assessment on
    the right, the answer below."""

    sig_history_shown = Signal(object)       # the dialog (tests drive it)
    sig_confirm_shown = Signal(object)

    def _fit_to_screen(self, width: int, height: int) -> None:
        """Preferred size, shrunk to 95 % of the screen's free area (a 1366×768 laptop must
        see the whole window, controls included)."""
        screen = QGuiApplication.primaryScreen()
        if screen is not None:
            free = screen.availableGeometry()
            width = min(width, int(free.width() * 0.95))
            height = min(height, int(free.height() * 0.95))
        self.resize(width, height)

    def __init__(self, backend: Doorway, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.backend = backend
        self.setWindowTitle("Preflight — check before it leaves")
        self.setWindowIcon(qt_theme.app_icon())
        self._fit_to_screen(1500, 940)
        self.doc = DocumentController(backend, self)
        self.answers = AnswerController(backend, self.doc, self)
        self.privacy = PrivacyController(backend, self.doc, self)
        self.auto_confirm: Any = None        # tests: a function(dialog) deciding the dialog
        self._build()
        self._wire()
        install_shortcuts(self)              # keys, menus, Help → Keyboard shortcuts
        self.act_guide = install_help_menu(self)     # Help → Show the guide
        self._refresh_providers()

    # -- layout --------------------------------------------------------------------------
    def _build(self) -> None:
        tb = QToolBar("Main")
        tb.setObjectName("mainToolbar")
        tb.setMovable(False)
        tb.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.addToolBar(tb)
        self.act_open = QAction("Open…", self)
        self.act_open.setShortcut(QKeySequence.StandardKey.Open)
        self.act_settings = QAction("Settings", self)
        self.act_settings.setShortcut(QKeySequence("Ctrl+,"))
        self.act_history = QAction("History", self)
        self.act_history.setShortcut(QKeySequence("Ctrl+H"))
        for a in (self.act_open, self.act_settings, self.act_history):
            tb.addAction(a)
        self.setAcceptDrops(True)     # a file dropped anywhere opens like File → Open
        spacer = QWidget()
        spacer.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        tb.addWidget(spacer)
        tb.addWidget(QLabel("Provider "))
        self.provider = QComboBox()
        self.provider.setObjectName("provider")
        self.provider.setAccessibleName("Cloud provider")
        self.provider.setMinimumWidth(180)
        tb.addWidget(self.provider)

        central = QWidget()
        outer = QVBoxLayout(central)
        outer.setContentsMargins(8, 6, 8, 6)
        self.banner = QFrame()
        self.banner.setObjectName("banner")
        bl = QHBoxLayout(self.banner)
        bl.setContentsMargins(10, 6, 10, 6)
        self.banner_text = QLabel(
            "<b>No cloud provider yet.</b> Everything works locally — detection, sanitization, "
            "the utility prediction and “Keep local” answers. To send to a cloud model, add "
            "an OpenAI-compatible provider and its key in Settings → Providers.")
        self.banner_text.setWordWrap(True)
        self.banner_add = QPushButton("Add a provider…")
        bl.addWidget(self.banner_text, 1)
        bl.addWidget(self.banner_add)
        outer.addWidget(self.banner)
        self.org_banner = QtOrgBanner(self.backend.org_policy)
        outer.addWidget(self.org_banner)
        self.company_notice = QtCompanyNotice(self.backend, self.statusBar())
        outer.addWidget(self.company_notice)
        self.detector_banner = QFrame()          # the detector runs degraded
        self.detector_banner.setObjectName("banner")
        dl = QHBoxLayout(self.detector_banner)
        dl.setContentsMargins(10, 6, 10, 6)
        self.detector_banner_text = QLabel("")
        self.detector_banner_text.setWordWrap(True)
        self.detector_accept = QPushButton("Continue with limited detection")
        dl.addWidget(self.detector_banner_text, 1)
        dl.addWidget(self.detector_accept)
        self.detector_banner.setVisible(False)
        outer.addWidget(self.detector_banner)

        vsplit = QSplitter(Qt.Orientation.Vertical)
        vsplit.setObjectName("vsplit")
        hsplit = QSplitter(Qt.Orientation.Horizontal)
        hsplit.setObjectName("hsplit")

        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 4, 0)
        head = QHBoxLayout()
        head.addWidget(_title("Original"))
        self.detect_state = QLabel("")
        self.detect_state.setObjectName("muted")
        head.addWidget(self.detect_state, 1, Qt.AlignmentFlag.AlignRight)
        ll.addLayout(head)
        self.legend = QtLegend()
        ll.addWidget(self.legend)
        self.original = QtOriginalView()
        ll.addWidget(self.original, 1)
        hsplit.addWidget(left)

        mid = QWidget()
        ml = QVBoxLayout(mid)
        ml.setContentsMargins(4, 0, 4, 0)
        mhead = QHBoxLayout()
        mhead.addWidget(_title("Sanitized — exactly what would be sent"))
        self.policy_name = QLabel("")
        self.policy_name.setObjectName("policyName")
        self.policy_name.setWordWrap(True)
        mhead.addWidget(self.policy_name)
        self.preview_state = QLabel("")
        self.preview_state.setObjectName("muted")
        mhead.addWidget(self.preview_state, 1, Qt.AlignmentFlag.AlignRight)
        ml.addLayout(mhead)
        self.legend_changed = QtLegend(with_changed=True)
        ml.addWidget(self.legend_changed)
        self.preview = QtPreviewView()
        ml.addWidget(self.preview, 1)
        hsplit.addWidget(mid)

        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(4, 0, 0, 0)
        self.controls = QtControlsPanel()
        self.assessment = QtAssessmentPanel()
        rl.addWidget(self.controls)
        rl.addWidget(self.assessment, 1)
        # Scrolls when the window is short; as wide as its content needs (no fixed 380
        # px: with the one-line legends and headers the window needed ~1,250 px).
        scroll = self.right_scroll = QtColumnScroll(right)
        scroll.setAccessibleName("Sanitization and assessment")
        hsplit.addWidget(scroll)
        hsplit.setStretchFactor(0, 5)
        hsplit.setStretchFactor(1, 5)
        hsplit.setStretchFactor(2, 3)
        hsplit.setSizes([560, 560, 400])
        vsplit.addWidget(hsplit)

        bottom = QWidget()
        bl2 = QVBoxLayout(bottom)
        bl2.setContentsMargins(0, 0, 0, 0)
        actions = QHBoxLayout()
        self.send_button = QPushButton("Send")
        self.send_button.setObjectName("send")
        self.send_button.setDefault(True)
        self.local_button = QPushButton("Keep local (answer on this computer)")
        self.local_button.setObjectName("keepLocal")
        self.copy_button = QPushButton("Copy sanitized")
        self.copy_button.setObjectName("copySanitized")
        self.decision = QLabel("")
        self.decision.setObjectName("decision")
        self.decision.setWordWrap(True)
        actions.addWidget(self.decision, 1)
        actions.addWidget(self.copy_button)
        actions.addWidget(self.local_button)
        actions.addWidget(self.send_button)
        self.leave_banner = QtLeaveBanner(self.doc)      # what will leave, above Send
        bl2.addWidget(self.leave_banner)
        bl2.addLayout(actions)
        self.answer = QtAnswerPane()
        bl2.addWidget(self.answer, 1)
        vsplit.addWidget(bottom)
        vsplit.setStretchFactor(0, 3)
        vsplit.setStretchFactor(1, 1)
        vsplit.setSizes([700, 190])
        self.answer.follow_splitter(vsplit, 1)     # grows when an answer starts
        vsplit.setCollapsible(1, False)          # dragging must not hide Send
        outer.addWidget(vsplit, 1)
        self.setCentralWidget(central)

        self.status_text = QLabel("Starting…")
        self.statusBar().addWidget(self.status_text, 1)

        self.send_shortcut = QShortcut(QKeySequence("Ctrl+Return"), self)
        self.send_shortcut2 = QShortcut(QKeySequence("Ctrl+Enter"), self)
        self.stop_shortcut = QShortcut(QKeySequence(Qt.Key.Key_Escape), self)

    # -- wiring --------------------------------------------------------------------------
    def _wire(self) -> None:
        d, a = self.doc, self.answers
        self.original.sig_text_edited.connect(d.set_text)
        self.original.sig_span_clicked.connect(d.toggle_span)
        self.original.sig_deny_requested.connect(d.add_to_deny_list)
        self.original.sig_file_dropped.connect(self.open_file)
        self.controls.sig_policy_changed.connect(d.set_policy)
        self.legend.sig_category_clicked.connect(self._legend_menu)
        self.original.extend_span_menu = self._span_menu
        self.controls.sig_epsilon_changed.connect(d.set_epsilon)
        self.controls.sig_resample.connect(d.resample)
        self.controls.sig_task_changed.connect(d.set_task)
        self.assessment.sig_find_best.connect(d.find_best_epsilon)
        d.sig_policy.connect(self._on_policy)
        d.sig_epsilon_range.connect(self._on_range)
        d.sig_spans_changed.connect(self._on_spans)
        d.sig_spans_shifted.connect(lambda: self.original.move_spans(d.spans))
        d.sig_detecting.connect(lambda on: self.detect_state.setText(
            "detecting…" if on else f"{len(d.spans)} item(s) detected"))
        d.sig_preparing.connect(lambda on: self.preview_state.setText(
            "preparing d_X…" if on else ""))
        d.sig_preview_changed.connect(self._on_preview)
        d.sig_actions.connect(self._sync_actions)
        d.sig_detector.connect(self._on_detector)
        self.detector_accept.clicked.connect(self._accept_degraded)
        self.original.sig_paste_refused.connect(self._on_paste_refused)
        self.original.sig_text_edited.connect(self._on_text_edited)
        d.sig_prediction.connect(self._on_prediction)
        d.sig_refining.connect(self.assessment.set_refining)
        d.sig_prediction_failed.connect(self._on_prediction_failed)
        d.sig_curve.connect(self._on_curve)
        d.sig_recommendation.connect(self._on_recommendation)
        d.sig_recommending.connect(self.assessment.set_searching)
        # the scroll area is the timer's context: a window closed within the 100 ms drops
        # the call instead of reaching a deleted widget
        d.sig_recommending.connect(lambda on: on and QTimer.singleShot(
            100, self.right_scroll,
            lambda: self.right_scroll.ensureWidgetVisible(self.assessment.search_step)))
        d.sig_recommend_progress.connect(self.assessment.set_search_progress)
        self.assessment.sig_cancel_search.connect(d.cancel_recommendation)
        d.sig_estimate.connect(lambda pair: self.assessment.set_estimate(*pair))
        d.sig_status.connect(self.status_text.setText)
        self._wire_privacy()
        d.sig_error.connect(lambda m, h: show_error(self, m, h))
        self.provider.currentIndexChanged.connect(self._on_provider)
        self.send_button.clicked.connect(a.prepare_send)
        self.send_shortcut.activated.connect(a.prepare_send)
        self.send_shortcut2.activated.connect(a.prepare_send)
        self.local_button.clicked.connect(a.keep_local)
        self.copy_button.clicked.connect(self.copy_sanitized)
        self.stop_shortcut.activated.connect(a.stop)
        self.answer.bind(a)                       # chunks, rate, Stop, the outcome
        a.sig_plan_ready.connect(self._confirm)
        a.sig_started.connect(self._on_answer_started)
        a.sig_finished.connect(self._on_answer_finished)
        a.sig_failed.connect(self._on_answer_failed)
        a.sig_busy.connect(self._sync_actions)
        self.act_open.triggered.connect(self._open_dialog)
        self.act_settings.triggered.connect(lambda: self.open_settings())
        self.act_history.triggered.connect(self.open_history)
        self.banner_add.clicked.connect(lambda: self.open_settings("providers"))

    def _wire_privacy(self) -> None:
        p, group, chart = self.privacy, self.assessment.privacy, self.assessment.chart
        p.sig_facts.connect(group.set_facts)
        p.sig_attack.connect(lambda dx: (
            group.set_attack(dx, p.uses_dx),
            chart.set_attack_current(*((dx["epsilon"], dx["success"]) if dx else
                                       (None, None)))))
        p.sig_attack_curve.connect(chart.set_attack_curve)
        p.sig_attack_busy.connect(group.set_attack_busy)
        p.sig_attack_failed.connect(group.set_attack_failed)
        p.sig_reconstruction.connect(group.set_reconstruction)
        p.sig_reconstructing.connect(group.set_reconstructing)
        p.sig_reconstruct_failed.connect(group.set_reconstruct_failed)
        group.reidentify.clicked.connect(p.reconstruct)

    def start(self) -> None:
        """Begin background loading (after the window is shown, so it appears at once)."""
        self.doc.start()
        self.company_notice.start()          # background: company model, central store
        self._sync_actions()

    # -- reactions -----------------------------------------------------------------------
    def _on_policy(self, policy) -> None:
        """A policy now applies: its name in the preview header, the controls follow it."""
        self.controls.set_policies(self.doc.policy_choices, policy, self.doc.modified)
        self.assessment.set_dx_mode(policy.uses_dx)
        self.policy_name.setText(f"Policy: {html.escape(policy.title)}")
        self.policy_name.setToolTip(policy.description)
        self._sync_actions()

    def legend_menu(self, category) -> QMenu:
        return category_menu(self, self.doc, category)

    def _legend_menu(self, category, pos) -> None:
        self.legend_menu(category).exec(pos)

    def _span_menu(self, menu: QMenu, span) -> None:
        text = self.doc.text
        type_menu(menu, self.doc, effective_type(span, text[span.start:span.end]), self)

    def _on_range(self, lo: float, hi: float) -> None:
        self.controls.set_range(lo, hi, self.doc.epsilon or lo)
        self.assessment.chart.set_range(lo, hi)

    def _on_spans(self) -> None:
        self.original.set_spans(self.doc.spans, self.doc.excluded)
        if not self.doc._detect.busy:
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

    def _on_text_edited(self, text: str, _edit) -> None:
        """An emptied document starts over: no answer, no question, no indicators."""
        if not text.strip():
            self._reset_document_state()

    def _reset_document_state(self) -> None:
        self.answers.stop()
        self.answer.reset()
        self.controls.question.clear()
        self.decision.setText("")

    def _on_preview(self, res: PreviewResult | None) -> None:
        if res is None:
            self.preview.set_blocked(self.doc.blocked)
            self.preview_state.setText("not ready" if self.doc.blocked else "")
            self.assessment.set_indicators(None)
            self.assessment.set_prediction(None, self.backend.settings.policy.min_utility)
            self.assessment.set_refining(False)
            self.decision.setText("")
            self._sync_actions()
            return
        self.preview_state.setText("")
        self.preview.set_sanitized(res.sanitized)
        self.assessment.set_indicators(res.indicators)
        self.controls.set_guarantee(res.indicators.guarantee)
        if res.epsilon is not None:
            self.controls.set_epsilon(self.doc.epsilon or res.epsilon)
        self._sync_actions()

    def _on_prediction(self, pred) -> None:
        min_u = self.backend.settings.policy.min_utility
        self.assessment.set_prediction(pred, min_u)
        res = self.doc.result
        self.assessment.chart.set_current(res.epsilon if res else None, pred.value)
        if pred.value < min_u:
            self.decision.setText(
                f"<span style='color:{qt_theme.colors().bad.name()}'>Predicted utility "
                f"{utility_number(pred.value, min_u)} is below your minimum {min_u:.2f}.</span> "
                + ("Try a larger ε (or “Find best ε”), or keep this one local."
                   if self.doc.uses_dx else
                   "Try a policy that keeps more (or change a type in the legend), or keep "
                   "this one local."))
        else:
            self.decision.setText(f"Predicted utility {utility_number(pred.value, min_u)} "
                                  "meets your minimum "
                                  f"{min_u:.2f}.")

    def _on_prediction_failed(self, why: str) -> None:
        self.assessment.set_unavailable(why)
        self.decision.setText("No utility prediction: decide from the preview and the "
                              "privacy indicators.")

    def _on_curve(self, curve) -> None:
        min_u = self.backend.settings.policy.min_utility
        self.assessment.chart.set_curve(curve, min_u)
        rec = self.doc.recommendation
        if rec is None:
            # Until "Find best ε" runs, mark where the instant curve crosses the minimum.
            ok = [(e, u) for e, u in curve if u >= min_u]
            if ok:
                self.assessment.chart.set_recommended(*ok[0])
                self.assessment.recommendation.setText(
                    f"≈ ε {ok[0][0]:.3g} by the instant estimate; “Find best ε” refines it.")
            else:
                self.assessment.chart.set_recommended(None, None)
                self.assessment.recommendation.setText(
                    "No ε in the range reaches the minimum utility by the instant estimate.")

    def _on_recommendation(self, rec) -> None:
        if rec.decision == "send" and rec.epsilon is not None:
            self.assessment.chart.set_recommended(rec.epsilon, rec.predicted_utility)
            self.controls.set_epsilon(rec.epsilon)
            self.assessment.recommendation.setText(
                f"Recommended ε {rec.epsilon:.3g}"
                + (f" (predicted utility {rec.predicted_utility:.2f})"
                   if rec.predicted_utility is not None
                   else "") + ".")
        else:        # says so and what to do; it never answers by itself
            self.assessment.chart.set_recommended(None, None)
            self.assessment.recommendation.setText(
                no_epsilon_message(rec.min_utility)
                + (" (best predicted utility "
                   f"{utility_number(rec.predicted_utility, rec.min_utility)})"
                   if rec.predicted_utility is not None else ""))

    def _on_provider(self, _i: int) -> None:
        self.doc.set_provider(self.provider.currentData())
        self._sync_actions()

    def _refresh_providers(self) -> None:
        names = self.backend.provider_names()
        current = self.provider.currentData() or self.backend.default_provider()
        self.provider.blockSignals(True)
        self.provider.clear()
        for n in names:
            self.provider.addItem(n, n)
        if not names:
            self.provider.addItem("none — works locally", None)
        idx = self.provider.findData(current)
        self.provider.setCurrentIndex(max(idx, 0))
        self.provider.blockSignals(False)
        self.banner.setVisible(not names)
        self.doc.set_provider(self.provider.currentData())
        self._sync_actions()

    def _sync_actions(self, *_a) -> None:
        prov = self.provider.currentData()
        busy = self.answers.busy
        has_payload = self.doc.fresh_result is not None
        self.send_button.setText(f"Send to {prov}  (Ctrl+Enter)" if prov
                                 else "Send (add a provider first)")
        self.send_button.setEnabled(bool(prov) and has_payload and not busy
                                    and not self.org_banner.blocks_send)
        self.local_button.setEnabled(has_payload and not busy)
        self.copy_button.setEnabled(has_payload)

    # -- send ------------------------------------------------------------------------------
    def _confirm(self, plan: Any) -> None:
        ledger = getattr(plan, "ledger", None)     # the ledger as of this plan
        dlg = QtConfirmSendDialog(plan, self, remember=self._remember_allow,
                                  privacy=self.privacy.summary(
                                      ledger.describe() if ledger is not None else None))
        self.sig_confirm_shown.emit(dlg)
        if self.auto_confirm is not None:
            accepted = bool(self.auto_confirm(dlg))
        else:
            accepted = dlg.exec() == QtConfirmSendDialog.DialogCode.Accepted
        if not accepted:
            self.status_text.setText("Not sent.")
            return
        confirmation = self.backend.confirmation_for(plan, dlg.chosen_overrides(),
                                                     dlg.resend_ok())
        self.answers.execute(plan, confirmation)

    def _remember_allow(self, finding: Any) -> None:
        """"Don't flag this again": the value joins the detection allow-list (saved),
        unless the company policy refuses it (the same rule as the CLI's)."""
        refusal = self.backend.org_policy.allow_list_refusal([finding])
        if refusal is not None:
            show_error(self, *refusal)
            return
        settings = self.backend.settings
        allow = settings.detection.allow_list
        if finding.value.casefold() not in {v.casefold() for v in allow}:
            allow.append(finding.value)
            self.backend.save_settings(settings)
        self.status_text.setText(f"{finding.type} added to the detection allow-list; it "
                                 "will not be flagged again (Settings to undo).")

    def _on_answer_started(self, mode: str) -> None:
        self.answer.start(mode, self.provider.currentData() or "The provider")
        self._sync_actions()

    def _on_answer_finished(self, _result: Any) -> None:
        self._sync_actions()                      # the pane shows the outcome (sig_outcome)

    def _on_answer_failed(self, message: str, hint: str) -> None:
        self.answer.finish(f"Failed: {message}")
        show_error(self, message, hint)
        self._sync_actions()

    def copy_sanitized(self) -> None:
        res = self.doc.fresh_result
        if res is None:
            self.status_text.setText("Nothing copied: there is no up-to-date sanitized text "
                                     "yet.")
            return
        QGuiApplication.clipboard().setText(res.sanitized.text)
        self.status_text.setText("Sanitized text copied to the clipboard.")

    # -- files -----------------------------------------------------------------------------
    def _open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Open a document", "",
            "Documents (*.txt *.md *.eml *.docx *.pdf *.csv);;All files (*)")
        if path:
            self.open_file(path)

    def open_file(self, path: str) -> None:
        def done(doc: Document) -> None:
            self._reset_document_state()         # a new document starts over
            self.original.set_document_text(doc.text)
            # what could not be read is said where the file's opening is, never dropped
            self.status_text.setText(" ".join((f"Opened {Path(path).name}.", *doc.notices)))
            self.status_text.setToolTip("\n".join(doc.notices))

        def read(ctx) -> Document:
            doc = open_for_window(path)
            self.backend.new_document(Path(path), doc.text)   # its placeholders stay stable
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
        dlg = QtSettingsDialog(self.backend, self, tab)
        dlg.sig_saved.connect(self._on_settings_saved)
        dlg.models.sig_models_changed.connect(lambda: self.status_text.setText(
            "Model settings changed; they apply to the next model load."))
        dlg.open()
        return dlg

    def _on_settings_saved(self) -> None:
        app = QApplication.instance()
        qt_theme.apply_theme(app, self.backend.settings.theme)
        self.refresh_colors()
        self._refresh_providers()
        self.doc.settings_changed()

    def refresh_colors(self) -> None:
        self.original.refresh_colors()
        self.preview.refresh_colors()
        self.legend.refresh_colors()
        self.legend_changed.refresh_colors()
        self.assessment.chart.refresh_colors()

    def open_history(self) -> None:
        def show(rows) -> None:
            dlg = QtHistoryDialog(rows, self)
            dlg.sig_export.connect(self._export_history)
            self.sig_history_shown.emit(dlg)
            dlg.open()

        QtOp(self, lambda ctx: self.backend.history(), show,
             lambda exc: show_error(self, *error_text(exc))).run()

    def _export_history(self, path: str) -> None:
        QtOp(self, lambda ctx: self.backend.export_history(Path(path)),
             lambda n: self.status_text.setText(f"Exported {n} record(s) to {path}."),
             lambda exc: show_error(self, *error_text(exc))).run()

    # -- shutdown ----------------------------------------------------------------------------
    def closeEvent(self, e) -> None:  # noqa: N802 - Qt override
        self.doc.cancel_all()
        self.privacy.cancel_all()
        self.answers.stop()
        super().closeEvent(e)
