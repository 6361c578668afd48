"""Long documents in the window: the choice when a payload is over the provider's context
window, and the progress (with Cancel) of planning a chunked summary.

:class:`QtLongDocumentDialog` says the figures (:class:`~preflight.app.long_documents.
OverContext`) and offers "Send the first part" or "Chunked summary". :class:`LongSendController`
runs the chosen step on a worker lane (``preflight.app.long_documents.LongSend``) and hands
the plan to the usual confirmation (``AnswerController.sig_plan_ready``); planning the
parts shows a progress dialog ("Checking part 3 of 12") whose Cancel stops between parts.
Sending the parts streams like any answer, its progress on the status line, and Stop
(Esc) stops it (:class:`~preflight.qt.answers.AnswerController`).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import (
    QDialog, QDialogButtonBox, QLabel, QProgressDialog, QVBoxLayout, QWidget,
)

from preflight.app.long_documents import CHUNKED, FIRST_PART, LongSend, OverContext
from preflight.app.presentation import error_text
from preflight.core.errors import Cancelled
from preflight.qt.qt_workers import OpContext, QtOp


class QtLongDocumentDialog(QDialog):
    """Too long to send whole: the figures, and the two ways on (or Cancel)."""

    def __init__(self, exc: OverContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Too long to send whole")
        self.setObjectName("longDocumentDialog")
        self.choice: str | None = None
        lay = QVBoxLayout(self)
        self.head = head = QLabel(f"<b>{exc.message}</b>")
        head.setWordWrap(True)
        head.setTextFormat(Qt.TextFormat.RichText)
        lay.addWidget(head)
        parts = max(2, -(-exc.fit.request_tokens // max(1, exc.fit.budget)))
        body = QLabel(
            "Nothing has been sent. Choose:<ul>"
            "<li><b>Send the first part</b>: the beginning of the document that fits, cut "
            "at the end of a paragraph. The rest is not sent.</li>"
            f"<li><b>Chunked summary</b>: about {parts} parts, each summarized in its own "
            "request, then one summary of those summaries. You confirm once; every request "
            "is re-scanned and recorded.</li></ul>"
            "If the provider's window is larger, set it in Settings → Providers.")
        body.setWordWrap(True)
        body.setTextFormat(Qt.TextFormat.RichText)
        lay.addWidget(body)
        buttons = QDialogButtonBox()
        self.first = buttons.addButton("Send the first part",
                                       QDialogButtonBox.ButtonRole.AcceptRole)
        self.first.setObjectName("longFirstPart")
        self.chunked = buttons.addButton("Chunked summary",
                                         QDialogButtonBox.ButtonRole.AcceptRole)
        self.chunked.setObjectName("longChunked")
        buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        self.first.clicked.connect(lambda: self._choose(FIRST_PART))
        self.chunked.clicked.connect(lambda: self._choose(CHUNKED))
        buttons.rejected.connect(self.reject)
        lay.addWidget(buttons)
        self.setMinimumWidth(620)
        self.adjustSize()

    def _choose(self, choice: str) -> None:
        self.choice = choice
        self.accept()


class LongSendController(QObject):
    """Runs the chosen long-document step; see the module doc."""

    sig_dialog = Signal(object)       # the choice or progress dialog, before it is shown
    sig_status = Signal(str)

    def __init__(self, window: QWidget, app: Any, doc: Any, payload: Any, utility: Any,
                 answers: Any) -> None:
        super().__init__(window)
        self.window, self.app, self.doc = window, app, doc
        self.payload, self.utility, self.answers = payload, utility, answers
        self.auto_choice: Any = None      # tests: dialog -> choice, instead of exec()
        self._op: QtOp | None = None
        self.progress: QProgressDialog | None = None

    def choose(self, exc: OverContext) -> None:
        dlg = QtLongDocumentDialog(exc, self.window)
        self.sig_dialog.emit(dlg)
        if self.auto_choice is not None:
            choice = self.auto_choice(dlg)
        else:
            choice = dlg.choice if dlg.exec() == QDialog.DialogCode.Accepted else None
        if choice == FIRST_PART:
            self.first_part()
        elif choice == CHUNKED:
            self.chunked()
        else:
            self.sig_status.emit("Not sent.")

    def _inputs(self) -> tuple[Any, ...] | None:
        res = self.payload.fresh_result
        if res is None or not self.utility.provider:
            return None
        return (self.doc.text, res.sanitized, self.doc.effective_spans(), self.utility.task,
                self.utility.provider, res.vault)

    def first_part(self) -> None:
        got = self._inputs()
        if got is None:
            return
        long = LongSend(self.app)
        self._op = QtOp(self, lambda ctx: long.first_part(*got), self._plan,
                        self._failed, lane="detect").run()

    def chunked(self) -> None:
        got = self._inputs()
        if got is None:
            return
        long = LongSend(self.app)
        bar = QProgressDialog("Splitting the document at paragraph ends…", "Cancel", 0, 0,
                              self.window)
        bar.setObjectName("chunkedProgress")
        bar.setWindowTitle("Preparing a chunked summary")
        bar.setMinimumDuration(0)
        bar.setMinimumWidth(460)
        bar.setAutoClose(False)
        bar.setAutoReset(False)
        self.progress = bar

        def op(ctx: OpContext) -> Any:
            return long.prepare_chunked(*got[:5], got[5],
                                        lambda i, n, words: ctx.progress(i / max(n, 1), words),
                                        ctx.cancel)

        self._op = QtOp(self, op, self._plan, self._failed, lane="detect",
                        progress=self._on_progress).run()
        bar.canceled.connect(self.cancel)
        self.sig_dialog.emit(bar)
        bar.show()

    def _on_progress(self, share: float, words: str) -> None:
        bar = self.progress
        if bar is not None:
            bar.setRange(0, 1000)
            bar.setValue(int(share * 1000))
            bar.setLabelText(words)
        self.sig_status.emit(words)

    def cancel(self) -> None:
        if self._op is not None:
            self._op.cancel(drop=False)

    def _close_progress(self) -> None:
        if self.progress is not None:
            self.progress.close()
            self.progress = None

    def _plan(self, plan: Any) -> None:
        self._close_progress()
        self.answers.sig_plan_ready.emit(plan)

    def _failed(self, exc: BaseException) -> None:
        self._close_progress()
        if isinstance(exc, Cancelled):
            self.sig_status.emit("Stopped by you; nothing was sent.")
            return
        self.answers.sig_failed.emit(*error_text(exc))
