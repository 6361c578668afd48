"""Sending and local answers: :class:`AnswerController` runs "send" (plan, confirm,
stream) and "keep local" (the SLM answers on the original) and streams the answer into
the answer pane (:mod:`preflight.qt.qt_answer_pane`).

Stop: :meth:`AnswerController.stop` cancels the op (the cloud stream's connection is shut,
llama.cpp aborts inside its batch) and from then on nothing more is shown; the op's
report ends the answer with "Stopped by you" and the partial answer kept.

Every finished answer carries the core's check against the document
(:mod:`preflight.core.send.answer_review`): the pane shows its line under the answer, and
the realized score beside the result line is coloured by :func:`score_tone` — never green
while the check flags a fact."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, Signal

from preflight.app.answer_stream import AnswerChunk
from preflight.app.long_documents import LongSend, OverContext, part_words
from preflight.app.presentation import error_text
from preflight.core.errors import Cancelled, PreflightError
from preflight.core.send.answer_review import check_line, realized_phrase
from preflight.core.utility.answer_check import AnswerCheck
from preflight.core.send.answer_text import (
    NOISE_NOTE,
    Restoration,
    finish_answer,
    restoration_line,
)
from preflight.qt.qt_workers import OpContext, QtOp


STOPPED = "Stopped by you. The partial answer is kept above."
STOPPED_EMPTY = "Stopped by you before any answer arrived."
LOCAL_DONE = "Answered locally: nothing left this computer."


@dataclass(frozen=True)
class AnswerOutcome:
    """How an answer ended, as the pane shows it."""

    status: str                     # the result line
    notes: tuple[str, ...] = ()     # d_X noise, the length limit, what the core left or removed
    restored: str | None = None     # the answer to show instead (trimmed), None: as is
    stopped: bool = False
    check: AnswerCheck | None = None    # the answer's facts against the document
    check_line: str = ""            # what is not in the document, and what came by noise
    score: str = ""                 # "realized utility 0.31 (similarity 0.79, lowered …)"
    score_tone: str = ""            # "good" | "warn" | "bad": how the score is coloured


def score_tone(utility: float, check: AnswerCheck | None, min_utility: float | None) -> str:
    """The realized score's colour: "good" only for an answer at or above the minimum
    whose check flags nothing; "warn" while facts are flagged; "bad" below the minimum.
    Without a minimum (a setting the rules refuse) it is never "good" or "bad"."""
    if min_utility is not None and utility < min_utility:
        return "bad"
    if check is not None and check.flagged:
        return "warn"
    return "good" if min_utility is not None else ""


def cloud_status(result: Any, restoration: Restoration | None) -> str:
    """The result line of a send: tokens, cost and what was restored (the realized score
    stands beside it, coloured: :attr:`AnswerOutcome.score`)."""
    head = f"Done: {result.output_tokens} tokens, cost {result.cost:.4f}."
    if restoration is None:
        return head + " See the Raw tab for what came back."
    return f"{head} {restoration_line(restoration)} See the Raw tab for what came back."


class AnswerController(QObject):
    """Send to the provider or answer locally; streams the answer into the answer pane."""

    sig_started = Signal(str)                 # "cloud" | "local"
    sig_chunk = Signal(str, str)              # restored, raw
    sig_rate = Signal(float)                  # tokens per second
    sig_stopping = Signal()                   # Stop was asked for; the op winds down
    sig_outcome = Signal(object)              # AnswerOutcome, just before sig_finished
    sig_finished = Signal(object)             # SendResult / str / None when stopped
    sig_failed = Signal(str, str)
    sig_plan_ready = Signal(object)           # a SendPlan to confirm
    sig_over_context = Signal(object)         # OverContext: the long-document choice
    sig_progress = Signal(str)                # a chunked send: "Summarizing part 3 of 12"
    sig_busy = Signal(bool)

    def __init__(self, app: Any, doc: Any, payload: Any, utility: Any,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.app, self.doc, self.payload, self.utility = app, doc, payload, utility
        self._op: QtOp | None = None
        self._busy = False          # set before sig_busy goes out, so slots see it
        self._tokens = 0
        self._t0 = 0.0
        self._stopping = False
        self._restoration: Restoration | None = None   # what the payload carried
        self._turn = 1                  # the send's turn in its document's conversation
        self.restored = ""
        self.raw = ""

    @property
    def busy(self) -> bool:
        return self._busy

    def _set_busy(self, busy: bool) -> None:
        self._busy = busy
        self.sig_busy.emit(busy)

    def prepare_send(self, task: Any = None) -> None:
        """Build the exact request (payload, cost, residual PII); the window confirms it.
        ``task``: the fields as they read now (None: the last task they reported); the
        prediction goes along only when it was made for that task."""
        res = self.payload.fresh_result   # only a complete, current result may leave
        util = self.utility
        if res is None or not util.provider or self.busy:
            return
        text, sanitized, spans = self.doc.text, res.sanitized, self.doc.effective_spans()
        task = task if task is not None else util.task
        pred = util.prediction if task == util.task else None
        provider, app = util.provider, self.app
        vault = res.vault               # the seed stays in the window: it is a secret
        self._set_busy(True)
        # Lane "detect": the plan re-scans the payload with the single-owner detector.
        long = LongSend(app)

        def op(ctx: OpContext) -> Any:
            long.check(sanitized.text, task, provider)   # over the window: before the re-scan
            return app.prepare_send(text, sanitized, spans, task, provider, pred, vault)

        self._op = QtOp(self, op, self._on_plan, self._on_failed, lane="detect").run()

    def _on_plan(self, plan: Any) -> None:
        self._set_busy(False)
        self.sig_plan_ready.emit(plan)

    def execute(self, plan: Any, confirmation: Any) -> None:
        app = self.app
        sanitized = getattr(plan, "sanitized", None)
        self._restoration = Restoration.of(sanitized) if sanitized is not None else None
        self._turn = getattr(plan, "turn", 1)
        self._begin("cloud")

        def op(ctx: OpContext):
            if hasattr(plan, "requests"):         # a chunked summary
                return LongSend(app).execute_chunked(
                    plan, confirmation, ctx.emit,
                    lambda i, n, words: ctx.progress(i / max(n, 1), part_words(i, n, words)),
                    ctx.cancel)
            return app.execute_send(plan, confirmation, ctx.emit, ctx.cancel)

        self._op = QtOp(self, op, self._on_done, self._on_failed, lane="pool",
                        on_emit=self._on_chunk,
                        progress=lambda _f, words: self.sig_progress.emit(words)).run()

    def keep_local(self) -> None:
        if self.payload.fresh_result is None or self.busy:
            return
        text, task, app = self.doc.text, self.utility.task, self.app
        self._restoration = None            # the original text: nothing to restore
        self._begin("local")

        def op(ctx: OpContext):
            return app.run_local(task, text, lambda tok: ctx.emit(AnswerChunk(tok, tok)),
                                 ctx.cancel)

        # The pool, not the "slm" lane: the local model has its own owner thread, and an
        # answer queued behind a utility refinement on that lane could not be stopped.
        self._op = QtOp(self, op, self._on_done, self._on_failed, lane="pool",
                        on_emit=self._on_chunk).run()

    def stop(self) -> None:
        """Stop the answer: nothing more is shown from now on (see the module doc)."""
        if self.busy and self._op is not None and not self._stopping:
            self._stopping = True
            self._op.cancel(drop=False)
            self.sig_stopping.emit()

    def _begin(self, mode: str) -> None:
        self._stopping = False
        self.restored = self.raw = ""
        self._tokens = 0
        self._t0 = time.monotonic()
        self._set_busy(True)
        self.sig_started.emit(mode)

    def _on_chunk(self, chunk: AnswerChunk) -> None:
        if self._stopping:
            return                  # already on its way in; the user said stop
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
        self.sig_outcome.emit(self._outcome(result))
        self.sig_finished.emit(result)

    def _outcome(self, result: Any) -> AnswerOutcome:
        shown, cut = finish_answer(self.restored, getattr(result, "finish_reason", None))
        # What was left as a placeholder, removed or redacted: beside the answer, never in
        # the provider's text (the core's SendResult.notes).
        notes = (self._noise_notes() + ((cut,) if cut else ())
                 + tuple(getattr(result, "notes", ()) or ()))
        audit_error = getattr(result, "audit_error", None)   # shown, but not all recorded
        notes += (audit_error,) if audit_error else ()
        if cut:
            self.restored = shown
        cloud = hasattr(result, "output_tokens")
        status = cloud_status(result, self._restoration) if cloud else LOCAL_DONE
        if cloud and self._turn > 1:
            status += f" Turn {self._turn} of this document's conversation."
        check = getattr(result, "answer_check", None)
        line = check_line(check, dx=bool(self._restoration and self._restoration.noise))
        utility = getattr(result, "realized_utility", None)
        score = realized_phrase(utility, getattr(result, "similarity", None), check)
        tone = score_tone(utility, check, self._min_utility()) if score else ""
        return AnswerOutcome(status, notes, shown if cut else None, check=check,
                             check_line=line, score=score, score_tone=tone)

    def _min_utility(self) -> float | None:
        """The minimum the score is coloured against (None: a setting the rules refuse;
        the window says so where it is set)."""
        try:
            return self.app.min_utility()
        except PreflightError:
            return None

    def _noise_notes(self) -> tuple[str, ...]:
        return (NOISE_NOTE,) if self._restoration is not None and self._restoration.noise \
            else ()

    def _on_failed(self, exc: BaseException) -> None:
        self._set_busy(False)
        if isinstance(exc, OverContext):
            self.sig_over_context.emit(exc)
            return
        if isinstance(exc, Cancelled):
            said = STOPPED if (self.restored or self.raw) else STOPPED_EMPTY
            self.sig_outcome.emit(AnswerOutcome(said, self._noise_notes(), stopped=True))
            self.sig_finished.emit(None)
            return
        self.sig_failed.emit(*error_text(exc))
