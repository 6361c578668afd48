"""The document and its detections: :class:`DocumentController`.

It owns the text being prepared, the detector's state (loading, degraded, accepted) and
the detections of the current text with the user's exclusions. Edits re-detect after a
pause (debounced, on the "detect" lane; the latest run wins) while the highlights follow
the text. It never sanitizes: it tells its listeners when what they computed from the
document is void (:attr:`DocumentController.sig_void`) and when a preview may be computed
(:attr:`DocumentController.sig_ready`); :meth:`DocumentController.gate` says why not yet.

A long detection (a pasted book) reports how far it is (:attr:`sig_detect_progress`) and
stops on :meth:`DocumentController.stop_detection`: then nothing is detected, the gate
says so, nothing can be sent, and the next edit or :meth:`redetect` starts again.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from preflight.app.presentation import (
    effective_spans,
    error_text,
    oversize_message,
    shift_spans,
    span_key,
)
from preflight.core.errors import Cancelled
from preflight.core.types import Span
from preflight.qt.qt_workers import Latest, QtOp

DETECT_DEBOUNCE_MS = 400      # re-detection after typing pauses


def single_timer(parent: QObject, ms: int, slot: Any) -> QTimer:
    """A single-shot timer of ``ms`` that calls ``slot`` (a restart postpones it)."""
    t = QTimer(parent)
    t.setSingleShot(True)
    t.setInterval(ms)
    t.timeout.connect(slot)
    return t


class DocumentController(QObject):
    """The text, the detector and the detections (see the module doc)."""

    sig_spans_changed = Signal()
    sig_spans_shifted = Signal()                  # same detections, moved by an edit
    sig_detecting = Signal(bool)
    sig_detect_progress = Signal(float, str)      # share done, in words
    sig_detect_stopped = Signal()                 # the user stopped a detection
    sig_detector = Signal(list)                   # the detector's warnings (degraded)
    sig_void = Signal(object)                     # results of the document are void:
                                                  # the reason, or None (see gate())
    sig_ready = Signal()                          # a preview may be computed now
    sig_status = Signal(str)
    sig_error = Signal(str, str)

    def __init__(self, app: Any, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.app = app
        self.text = ""
        self.spans: list[Span] = []
        self.excluded: set[tuple[str, str]] = set()
        self.oversize: str | None = None          # the text is over the size limit
        self.detector_warnings: list[str] | None = None   # None: not loaded yet
        self.degraded_accepted = False
        self.detections_done = 0
        self._text_gen = 0
        self._detected_gen = -1                   # detection run that succeeded last
        self._excl_gen = 0
        self._detect = Latest()
        self._detect_op: QtOp | None = None
        self.stopped = False                      # the user stopped the last detection
        self._detect_timer = single_timer(self, DETECT_DEBOUNCE_MS, self.redetect)

    # -- start-up ------------------------------------------------------------------------
    def start(self) -> None:
        """Warm the detector in the background (its warnings say whether it is degraded)."""
        self.sig_status.emit("Loading the PII detector…")
        QtOp(self, lambda ctx: self.app.warm_detector(), self._on_detector_ready,
             self._on_detector_failed, lane="detect").run()

    def _on_detector_ready(self, warnings: list[str]) -> None:
        self.detector_warnings = list(warnings)
        self.sig_detector.emit(self.detector_warnings)
        self.sig_status.emit("Detector ready." + (" " + " ".join(warnings) if warnings else ""))
        if self.text:
            self.redetect()

    def _on_detector_failed(self, exc: BaseException) -> None:
        """Not loaded: treated as degraded (nothing is shown until the user accepts)."""
        msg, hint = error_text(exc)
        self._on_detector_ready([f"The PII detector did not start: {msg} {hint}".strip()])

    def accept_degraded(self) -> None:
        """The user accepts working with the degraded detector (Send still asks again)."""
        self.degraded_accepted = True
        self.sig_ready.emit()

    # -- inputs from the views -----------------------------------------------------------
    def set_text(self, text: str, edit: tuple[int, int, int] | None = None) -> None:
        """The original changed. ``edit`` = (pos, removed, added) in code points, when
        known, lets highlights follow the text until re-detection catches up."""
        if text == self.text:
            return
        self._text_gen += 1
        self.stopped = False                     # an edit looks again
        self.oversize = oversize_message(text)
        before = len(self.spans)
        if edit is not None and self.text:
            self.spans = shift_spans(self.spans, *edit)
        else:
            self.spans = []
        self.text = text
        if len(self.spans) == before:
            # The editor's highlight cursors move with the text by themselves: no re-render
            # per keystroke, only the view's span list changes (for tooltips and clicks).
            self.sig_spans_shifted.emit()
        else:
            self.sig_spans_changed.emit()      # the edit touched a detection: drop its colour
        self._detect.next_generation()
        self.sig_void.emit(None)
        if self.oversize:
            self._detect_timer.stop()
            self.sig_status.emit(self.oversize)
        elif text.strip():
            self._detect_timer.start()

    def toggle_span(self, span: Span) -> None:
        """Exclude a detection from sanitization, or include it again."""
        key = span_key(span, self.text)
        if key in self.excluded:
            self.excluded.discard(key)
        else:
            self.excluded.add(key)
        self._excl_gen += 1
        self.sig_void.emit("Updating the sanitized text…")
        self.sig_spans_changed.emit()
        self.sig_ready.emit()

    def add_to_deny_list(self, value: str) -> None:
        """"Always protect": saved as a keyed hash (never the value), typed as a secret
        when it looks like one. Off the GUI thread: the first use loads the detector's
        secret-shape tests (Presidio), and the key may come from the OS keyring."""
        if value.strip():
            QtOp(self, lambda ctx: self.app.deny.always(value), self._on_protected,
                 self._on_protect_failed, lane="deny").run()

    def _on_protected(self, entry: Any) -> None:
        self.sig_status.emit(
            "Already on your deny-list." if entry is None else
            f"Protected in every document from now on ({entry.label()}); "
            "saved without the value.")
        self.redetect()

    def _on_protect_failed(self, exc: BaseException) -> None:
        self.sig_error.emit(*error_text(exc))

    def protect_in_document(self, value: str) -> None:
        """"Protect for this document only": held in memory, forgotten with the document."""
        if not value.strip():
            return
        deny = self.app.deny
        QtOp(self, lambda ctx: (deny.this_document(value), deny.kind_of(value)),
             self._on_protected_here, self._on_protect_failed, lane="deny").run()

    def _on_protected_here(self, result: tuple[bool, str]) -> None:
        added, kind = result
        kind = "a secret" if kind == "secret" else "a name or term"
        self.sig_status.emit(
            f"Protected as {kind} in this document only (not saved; a new document "
            "forgets it)." if added else "Already protected in this document.")
        self.redetect()

    # -- detection -----------------------------------------------------------------------
    def redetect(self) -> None:
        """Detect the current text now (the latest run wins)."""
        self._detect_timer.stop()
        if self.oversize:
            return
        text, gen, app = self.text, self._text_gen, self.app
        self.stopped = False
        self.sig_detecting.emit(True)
        holder: dict[str, int] = {}
        op = QtOp(self, lambda ctx: app.detect(text, ctx.progress, ctx.cancel),
                  lambda spans: self._on_spans(spans, gen, holder["g"]),
                  lambda exc: self._on_detect_error(exc, holder["g"]), lane="detect",
                  progress=lambda share, words: self._on_detect_progress(share, words,
                                                                         holder["g"]))
        holder["g"] = self._detect.start(op)
        self._detect_op = op
        self.sig_void.emit(None)

    def _on_detect_progress(self, share: float, words: str, dgen: int) -> None:
        if self._detect.is_current(dgen):
            self.sig_detect_progress.emit(share, words)

    def stop_detection(self) -> None:
        """The user's Cancel: the running detection stops; nothing is detected, so
        nothing can be sent until a detection completes (an edit, or :meth:`redetect`)."""
        op, self._detect_op = self._detect_op, None
        self._detect_timer.stop()
        if op is None or op.done:
            return
        op.cancel()
        self._detect.next_generation()          # its result, if one arrives, is void
        self.stopped = True
        self.spans = []
        self.sig_detecting.emit(False)
        self.sig_spans_changed.emit()
        self.sig_void.emit(self.gate())
        self.sig_detect_stopped.emit()

    def _on_detect_error(self, exc: BaseException, dgen: int) -> None:
        if not self._detect.is_current(dgen):
            return
        self.sig_detecting.emit(False)
        if isinstance(exc, Cancelled):
            return
        msg, hint = error_text(exc)
        self.sig_void.emit(f"Detection failed, so nothing can be sent: {msg} {hint}".strip())
        self.sig_error.emit(msg, hint)

    def _on_spans(self, spans: list[Span], gen: int, dgen: int) -> None:
        if gen != self._text_gen or not self._detect.is_current(dgen):
            return                       # the text changed meanwhile: a newer run follows
        self.sig_detecting.emit(False)
        self._detected_gen = dgen
        self.spans = list(spans)
        self.detections_done += 1
        self.sig_spans_changed.emit()
        self.sig_ready.emit()

    @property
    def detecting(self) -> bool:
        return self._detect.busy

    def effective_spans(self) -> list[Span]:
        """The detections the policy applies to (without the user's exclusions)."""
        return effective_spans(self.spans, self.text, self.excluded)

    # -- what a result must match ----------------------------------------------------------
    def key(self) -> tuple[int, int]:
        """The detection run and exclusions a result must have been computed for."""
        return self._detect.generation, self._excl_gen

    def gate(self) -> str | None:
        """Why no preview may be computed for the document now (None: it may)."""
        if self.oversize:
            return self.oversize
        if not self.text.strip():
            return None
        if self.detector_warnings is None:
            return "Loading the PII detector…"
        if self.detector_warnings and not self.degraded_accepted:
            return ("The PII detector runs degraded (" + " ".join(self.detector_warnings)
                    + ") Accept this in the warning above to see the sanitized text.")
        if self.stopped:
            return ("Detection stopped: nothing was detected, so nothing can be sent. "
                    "Edit the text or press F5 to look for personal data again.")
        if self._detected_gen != self._detect.generation:
            return "Checking the text for personal data…"
        return None

    def cancel_all(self) -> None:
        self._detect.next_generation()
        self._detect_timer.stop()
