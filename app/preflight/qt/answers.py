"""Sending and local answers: :class:`AnswerController` runs "send" (plan, confirm,
stream) and "keep local" (the SLM answers on the original) and streams the answer into
the answer pane."""

from __future__ import annotations

import time
from typing import Any

from PySide6.QtCore import QObject, Signal

from preflight.app.doorway import AnswerChunk, Doorway
from preflight.app.presentation import error_text
from preflight.core.errors import Cancelled
from preflight.qt.controllers import DocumentController
from preflight.qt.qt_workers import OpContext, QtOp


class AnswerController(QObject):
    """Send to the provider or answer locally; streams the answer into the answer pane."""

    sig_started = Signal(str)                 # "cloud" | "local"
    sig_chunk = Signal(str, str)              # restored, raw
    sig_rate = Signal(float)                  # tokens per second
    sig_finished = Signal(object)             # SendResult / str / None when stopped
    sig_failed = Signal(str, str)
    sig_plan_ready = Signal(object)           # a SendPlan to confirm
    sig_busy = Signal(bool)

    def __init__(self, backend: Doorway, doc: DocumentController,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.backend = backend
        self.doc = doc
        self._op: QtOp | None = None
        self._busy = False          # set before sig_busy goes out, so slots see it
        self._tokens = 0
        self._t0 = 0.0
        self.restored = ""
        self.raw = ""

    @property
    def busy(self) -> bool:
        return self._busy

    def _set_busy(self, busy: bool) -> None:
        self._busy = busy
        self.sig_busy.emit(busy)

    def prepare_send(self) -> None:
        """Build the exact request (payload, cost, residual PII); the window confirms it."""
        doc = self.doc
        res = doc.fresh_result          # only a complete, current result may leave
        if res is None or not doc.provider or self.busy:
            return
        text, sanitized, spans = doc.text, res.sanitized, doc.effective_spans()
        task, provider, pred, backend = doc.task, doc.provider, doc.prediction, self.backend
        vault = res.vault               # the seed stays in the window: it is a secret
        self._set_busy(True)
        # Lane "detect": the plan re-scans the payload with the single-owner detector.
        self._op = QtOp(
            self, lambda ctx: backend.prepare_send(text, sanitized, spans, task, provider, pred,
                                                   vault),
            self._on_plan, self._on_failed, lane="detect").run()

    def _on_plan(self, plan: Any) -> None:
        self._set_busy(False)
        self.sig_plan_ready.emit(plan)

    def execute(self, plan: Any, confirmation: Any) -> None:
        backend = self.backend
        self._begin("cloud")

        def op(ctx: OpContext):
            return backend.execute_send(plan, confirmation, ctx.emit, ctx.cancel)

        self._op = QtOp(self, op, self._on_done, self._on_failed, lane="pool",
                        on_emit=self._on_chunk).run()

    def keep_local(self) -> None:
        doc = self.doc
        if doc.fresh_result is None or self.busy:
            return
        text, task, backend = doc.text, doc.task, self.backend
        self._begin("local")

        def op(ctx: OpContext):
            return backend.run_local(task, text, lambda tok: ctx.emit(AnswerChunk(tok, tok)),
                                     ctx.cancel)

        self._op = QtOp(self, op, self._on_done, self._on_failed, lane="slm",
                        on_emit=self._on_chunk).run()

    def stop(self) -> None:
        if self.busy and self._op is not None:
            self._op.cancel(drop=False)

    def _begin(self, mode: str) -> None:
        self.restored = self.raw = ""
        self._tokens = 0
        self._t0 = time.monotonic()
        self._set_busy(True)
        self.sig_started.emit(mode)

    def _on_chunk(self, chunk: AnswerChunk) -> None:
        self.restored += chunk.restored
        self.raw += chunk.raw
        self._tokens += 1
        self.sig_chunk.emit(chunk.restored, chunk.raw)
        dt = time.monotonic() - self._t0
        if dt > 0:
            self.sig_rate.emit(self._tokens / dt)

    def _on_done(self, result: Any) -> None:
        self._set_busy(False)
        final = getattr(result, "answer", None) if not isinstance(result, str) else result
        if final is not None and not self.restored:
            # Nothing streamed (a provider that answers in one piece): show it whole.
            raw = getattr(result, "answer_raw", final)
            self.restored, self.raw = final, raw
            self.sig_chunk.emit(final, raw)
        self.sig_finished.emit(result)

    def _on_failed(self, exc: BaseException) -> None:
        self._set_busy(False)
        if isinstance(exc, Cancelled):
            self.sig_finished.emit(None)
            return
        self.sig_failed.emit(*error_text(exc))
