"""Controllers: the window's logic, kept out of the views.

Size (~440 lines): :class:`DocumentController` is one state machine (text → detections →
preview → prediction) whose transitions share its generation counters; its assessment
ops and the answer controller already live in ``assessment_ops.py`` and ``answers.py``.

:class:`DocumentController` owns the document being prepared (text, detections, user
exclusions, policy, ε, seed) and turns every change into background ops through
:mod:`preflight.qt.qt_workers`: debounced re-detection on the "detect" lane, d_X
preparation and ε steps on the "dx" lane, fast predictions on the pool, refined ones on
the "slm" lane. Each kind of op is a :class:`Latest` group, so stale results are dropped.

It fails closed: any edit, pending detection, error, oversize text, unaccepted degraded
detector or policy change drops the result; only a preview computed after a successful
detection of the current text brings one back (:mod:`preflight.qt.freshness`).

Its freshness ops (:mod:`preflight.qt.freshness`) decide what counts as a current result.
Its assessment ops (predictions, the utility curve, the ε recommendation, the cost
estimate) live in :mod:`preflight.qt.assessment_ops`, its policy ops (choosing a policy,
legend changes, saving) in :mod:`preflight.qt.policy_ops`; :class:`AnswerController`
(:mod:`preflight.qt.answers`) runs "send" and "keep local" and streams the answer.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from preflight.app.doorway import Doorway, Prediction
from preflight.app.presentation import (
    PrivacyIndicators,
    effective_spans,
    error_text,
    oversize_message,
    privacy_indicators,
    shift_spans,
    span_key,
)
from preflight.core.errors import Cancelled
from preflight.core.tasks import SUMMARIZE, Task
from preflight.core.types import SanitizedText, Span
from preflight.core.utility.recommend import Recommendation
from preflight.core.sanitize.policy import Policy
from preflight.qt.assessment_ops import AssessmentOps
from preflight.qt.freshness import FreshnessOps
from preflight.qt.policy_ops import PolicyOps
from preflight.qt.qt_workers import Latest, OpContext, QtOp

DETECT_DEBOUNCE_MS = 400      # re-detection after typing pauses
TYPING_PREVIEW_MS = 150       # default delay of a requested preview refresh
SLIDER_DEBOUNCE_MS = 10       # slider: coalesce bursts, keep latency far below 100 ms
FAST_PREDICT_MS = 60
REFINE_AFTER_MS = 1500        # refined prediction once the user stops changing things


@dataclass(frozen=True)
class PreviewResult:
    sanitized: SanitizedText
    indicators: PrivacyIndicators
    epsilon: float | None
    generation: int
    vault: Any = None              # placeholder/pseudonym: how the answer is restored
    key: tuple = ()                # DocumentController._key() it was computed for


class DocumentController(QObject, AssessmentOps, PolicyOps, FreshnessOps):
    """State and background work behind the two text panes and the assessment panel."""

    sig_spans_changed = Signal()
    sig_spans_shifted = Signal()                  # same detections, moved by an edit
    sig_detecting = Signal(bool)
    sig_preview_changed = Signal(object)          # PreviewResult
    sig_preparing = Signal(bool)
    sig_prediction = Signal(object)               # Prediction
    sig_refining = Signal(bool)
    sig_prediction_failed = Signal(str)           # why no prediction can be shown
    sig_curve = Signal(object)                    # list[(eps, utility)]
    sig_recommendation = Signal(object)           # Recommendation
    sig_recommending = Signal(bool)
    sig_recommend_progress = Signal(float, str)   # share done, the ε being evaluated
    sig_estimate = Signal(object)                 # (core CostEstimate, provider)
    sig_epsilon_range = Signal(float, float)
    sig_policies = Signal(list)                   # [(name, title, uses_dx)]
    sig_policy = Signal(object)                   # the Policy now applied
    sig_status = Signal(str)
    sig_error = Signal(str, str)
    sig_actions = Signal()                        # fresh_result may have changed
    sig_detector = Signal(list)                   # the detector's warnings (degraded)

    def __init__(self, backend: Doorway, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.backend = backend
        self.text = ""
        self.spans: list[Span] = []
        self.excluded: set[tuple[str, str]] = set()
        self.policy_choices: list[tuple[str, str, bool]] = []
        self.policy: Policy | None = None
        self.modified = False                     # a legend change not saved yet
        self._policy_gen = 0
        self._dx_ok = True
        self.epsilon_range: tuple[float, float] | None = None
        self.epsilon: float | None = None
        self.seed = secrets.randbits(64)
        self.task: Task = SUMMARIZE
        self.provider: str | None = None
        self.prepared: Any = None
        self.prepared_key: tuple | None = None
        self.result: PreviewResult | None = None
        self.prediction: Prediction | None = None
        self._predicted_result: Any = None     # the preview result self.prediction is for
        self.recommendation: Recommendation | None = None
        self.curve: list[tuple[float, float]] = []
        self._curve_prepared: Any = None     # the preparation ``curve`` was made for
        self.detections_done = 0
        self.previews_done = 0
        self._text_gen = 0
        self._pending_preview = False
        self._detected_gen = -1                   # detection run that succeeded last
        self._excl_gen = 0
        self.blocked: str | None = None           # why there is no result (the pane says)
        self.oversize: str | None = None          # the text is over the size limit
        self.detector_warnings: list[str] | None = None   # None: not loaded yet
        self.degraded_accepted = False

        self._detect = Latest()
        self._preview = Latest()
        self._fast = Latest()
        self._refine = Latest()
        self._curve = Latest()
        self._estimate = Latest()
        self._recommend = Latest()

        self._detect_timer = self._timer(DETECT_DEBOUNCE_MS, self._run_detection)
        self._preview_timer = self._timer(TYPING_PREVIEW_MS, self._run_preview)
        self._fast_timer = self._timer(FAST_PREDICT_MS, self._run_fast_prediction)
        self._refine_timer = self._timer(REFINE_AFTER_MS, self._run_refined_prediction)
        self._estimate_timer = self._timer(250, self._run_estimate)

    def _timer(self, ms: int, slot) -> QTimer:
        t = QTimer(self)
        t.setSingleShot(True)
        t.setInterval(ms)
        t.timeout.connect(slot)
        return t

    # -- start-up ------------------------------------------------------------------------
    def start(self) -> None:
        """Load the policies the controls need, and warm the detector, in the background."""
        self.sig_status.emit("Loading the policies…")
        self._load_policies()
        self.sig_status.emit("Loading the PII detector…")
        QtOp(self, lambda ctx: self.backend.warm_detector(), self._on_detector_ready,
             self._on_detector_failed, lane="detect").run()

    def _on_detector_ready(self, warnings: list[str]) -> None:
        self.detector_warnings = list(warnings)
        self.sig_detector.emit(self.detector_warnings)
        self.sig_status.emit("Detector ready." + (" " + " ".join(warnings) if warnings else ""))
        if self.text:
            self._run_detection()

    # -- inputs from the views -----------------------------------------------------------
    def set_text(self, text: str, edit: tuple[int, int, int] | None = None) -> None:
        """The original changed. ``edit`` = (pos, removed, added) in code points, when
        known, lets highlights follow the text until re-detection catches up."""
        if text == self.text:
            return
        self._text_gen += 1
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
        self._invalidate(self._gate())
        if self.oversize:
            self._detect_timer.stop()
            self.sig_status.emit(self.oversize)
        elif text.strip():
            self._detect_timer.start()

    def set_epsilon(self, epsilon: float) -> None:
        if self.epsilon is not None and abs(epsilon - self.epsilon) < 1e-12:
            return
        self.epsilon = epsilon
        self.sig_actions.emit()                # the shown result is for another ε now
        if self.uses_dx:
            self._request_preview(delay_ms=SLIDER_DEBOUNCE_MS)

    def set_task(self, task: Task) -> None:
        self.task = task
        self.prediction = None
        self._refine_timer.start()
        self._estimate_timer.start()

    def set_provider(self, provider: str | None) -> None:
        self.provider = provider
        self.backend.set_provider(provider)   # each provider has its own calibration
        self._estimate_timer.start()
        self._fast_timer.start()

    def resample(self) -> None:
        """Fresh noise (d_X) or fresh surrogates (pseudonym)."""
        self.seed = secrets.randbits(64)
        self.sig_actions.emit()
        if self.uses_dx and self.prepared is not None:
            prepared, seed = self.prepared, self.seed
            self.sig_preparing.emit(True)
            QtOp(self, lambda ctx: prepared.resample(seed), self._on_resampled,
                 self._on_error, lane="dx").run()
        else:
            self._request_preview(immediate=True)

    def _on_resampled(self, prepared: Any) -> None:
        self.sig_preparing.emit(False)
        self.prepared = prepared
        self._request_preview(immediate=True)
        self._run_curve()

    def toggle_span(self, span: Span) -> None:
        """Exclude a detection from sanitization, or include it again."""
        key = span_key(span, self.text)
        if key in self.excluded:
            self.excluded.discard(key)
        else:
            self.excluded.add(key)
        self._excl_gen += 1
        self._invalidate("Updating the sanitized text…")
        self.sig_spans_changed.emit()
        self._request_preview(immediate=True)

    def add_to_deny_list(self, value: str) -> None:
        value = value.strip()
        if not value:
            return
        settings = self.backend.settings
        if value not in settings.detection.deny_list:
            settings.detection.deny_list.append(value)
            self.backend.save_settings(settings)
        self.sig_status.emit(f"Added to the deny-list ({len(value)} characters).")
        self._run_detection()

    def settings_changed(self) -> None:
        """Policy or lists changed in the settings dialog: recompute everything."""
        self.recommendation = None
        if self.epsilon_range is not None:
            QtOp(self, lambda ctx: self.backend.epsilon_range(), self._on_range,
                 self._on_error, lane="dx").run()
        self._load_policies(select=self.policy.name if self.policy is not None
                            and not self.modified else None)
        self._run_detection()
        self._estimate_timer.start()

    # -- detection -----------------------------------------------------------------------
    def _run_detection(self) -> None:
        self._detect_timer.stop()
        if self.oversize:
            return
        text, gen = self.text, self._text_gen
        self.sig_detecting.emit(True)
        holder: dict[str, int] = {}
        op = QtOp(self, lambda ctx: self.backend.detect(text),
                  lambda spans: self._on_spans(spans, gen, holder["g"]),
                  lambda exc: self._on_detect_error(exc, holder["g"]), lane="detect")
        holder["g"] = self._detect.start(op)
        self._invalidate(self._gate())

    def _on_detect_error(self, exc: BaseException, dgen: int) -> None:
        if not self._detect.is_current(dgen):
            return
        self.sig_detecting.emit(False)
        if isinstance(exc, Cancelled):
            return
        msg, hint = error_text(exc)
        self._invalidate(f"Detection failed, so nothing can be sent: {msg} {hint}".strip())
        self._on_error(exc)

    def _on_spans(self, spans: list[Span], gen: int, dgen: int) -> None:
        if gen != self._text_gen or not self._detect.is_current(dgen):
            return                       # the text changed meanwhile: a newer run follows
        self.sig_detecting.emit(False)
        self._detected_gen = dgen
        self.spans = list(spans)
        self.detections_done += 1
        self.sig_spans_changed.emit()
        self._request_preview(immediate=True)

    def effective_spans(self) -> list[Span]:
        return effective_spans(self.spans, self.text, self.excluded)

    # -- preview -------------------------------------------------------------------------
    def _request_preview(self, immediate: bool = False, delay_ms: int | None = None) -> None:
        if immediate:
            self._preview_timer.stop()
            self._run_preview()
        else:
            self._preview_timer.start(delay_ms if delay_ms is not None else TYPING_PREVIEW_MS)

    def _run_preview(self) -> None:
        if self._preview.busy and self.uses_dx and self.prepared is not None \
                and self.prepared_key == self._prep_key():
            # Slider step while a step is running: coalesce, the newest ε runs next.
            self._pending_preview = True
            return
        self._pending_preview = False
        text, spans, policy = self.text, self.effective_spans(), self.policy
        all_spans = list(self.spans)
        reason = self._gate()
        if reason is not None or not text.strip():
            if self.result is not None or reason != self.blocked:
                self._invalidate(reason)
            return
        self.blocked = None
        backend = self.backend
        if policy.uses_dx:
            if self.epsilon is None:
                return                     # the range is still loading
            eps, key, prepared = self.epsilon, self._prep_key(), self.prepared
            seed = self.seed
            if prepared is None or self.prepared_key is None \
                    or self.prepared_key[0] != key[0]:
                self.sig_preparing.emit(True)

                def op(ctx: OpContext):
                    p = backend.prepare(policy, text, spans, seed)
                    ctx.check()
                    return p, _preview(p.at(eps), text, all_spans, eps), p.vault
            elif self.prepared_key != key:
                self.sig_preparing.emit(True)

                def op(ctx: OpContext):
                    p = prepared.update(text, spans)
                    ctx.check()
                    return p, _preview(p.at(eps), text, all_spans, eps), p.vault
            else:
                def op(ctx: OpContext):
                    out = _preview(prepared.at(eps), text, all_spans, eps)
                    return prepared, out, prepared.vault
            lane = "dx"
        else:
            seed = self.seed
            key = None

            def op(ctx: OpContext):
                sanitized, vault = backend.sanitize(policy, text, spans, seed)
                return None, _preview(sanitized, text, all_spans, None), vault
            lane = "pool"
        gen_holder: dict[str, int] = {}
        want = self._key()
        qop = QtOp(self, op, lambda r: self._on_preview(r, gen_holder["g"], key, want),
                   lambda exc: self._on_preview_error(exc, gen_holder["g"]), lane=lane)
        gen_holder["g"] = self._preview.start(qop)

    def _prep_key(self) -> tuple:
        spans = tuple((s.start, s.end) for s in self.effective_spans())
        return ((self._policy_gen, self.seed), self.text, spans)

    def _on_preview_error(self, exc: BaseException, gen: int) -> None:
        self.sig_preparing.emit(False)
        if not self._preview.is_current(gen):
            return
        if not isinstance(exc, Cancelled):
            msg, hint = error_text(exc)
            self._invalidate(f"Sanitization failed, so nothing can be sent: {msg} "
                             f"{hint}".strip())
            self._on_error(exc)
            return
        self._after_preview_step()

    def _on_preview(self, res: tuple[Any, tuple[SanitizedText, PrivacyIndicators], Any],
                    gen: int, key: tuple | None, want: tuple) -> None:
        prepared, (sanitized, indicators), vault = res
        self.sig_preparing.emit(False)
        if want[:3] != self._key()[:3] or self._gate() is not None:
            return                 # another text, detection, policy or exclusion by now
        if prepared is not None and key is not None and key[0] == self._prep_key()[0]:
            new_prepared = prepared is not self.prepared
            self.prepared, self.prepared_key = prepared, key
            if new_prepared:
                self.recommendation = None
                self._run_curve()
        eps = sanitized.info.get("epsilon") if sanitized.info else None
        self.result = PreviewResult(sanitized, indicators,
                                    float(eps) if eps is not None else None, gen, vault, want)
        self.blocked = None
        self.previews_done += 1
        self.sig_preview_changed.emit(self.result)
        self.sig_actions.emit()
        self._fast_timer.start()
        if not self._refine_searched_text():
            self._refine_timer.start()
        self._estimate_timer.start()
        self._after_preview_step()

    def _after_preview_step(self) -> None:
        if self._pending_preview:
            self._pending_preview = False
            self._run_preview()

    # -- errors --------------------------------------------------------------------------
    def _on_error(self, exc: BaseException) -> None:
        if isinstance(exc, Cancelled):
            return
        msg, hint = error_text(exc)
        self.sig_error.emit(msg, hint)

    def _on_prediction_error(self, exc: BaseException) -> None:
        if isinstance(exc, Cancelled):
            return
        msg, hint = error_text(exc)
        self.sig_refining.emit(False)
        self.sig_prediction_failed.emit(f"{msg} {hint}".strip())

    def _on_quiet_error(self, exc: BaseException) -> None:
        """Assessment failures show in the status bar, not as a dialog."""
        if isinstance(exc, Cancelled):
            return
        msg, hint = error_text(exc)
        self.sig_status.emit(f"{msg} {hint}".strip())
        self.sig_refining.emit(False)

    def cancel_all(self) -> None:
        for group in (self._detect, self._preview, self._fast, self._refine, self._curve,
                      self._estimate, self._recommend):
            group.next_generation()
        for t in (self._detect_timer, self._preview_timer, self._fast_timer,
                  self._refine_timer, self._estimate_timer):
            t.stop()


def _preview(sanitized: SanitizedText, text: str, spans: list[Span],
             eps: float | None) -> tuple[SanitizedText, PrivacyIndicators]:
    return sanitized, privacy_indicators(text, sanitized, spans)
