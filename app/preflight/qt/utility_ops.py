"""The utility of the preview: :class:`UtilityController`.

It follows the payload controller's result: the instant prediction on the pool, the
refined one (with the local model) on the "slm" lane once the user stops changing
things, the cost estimate, and — per d_X preparation — the utility curve over the ε range
(lane "dx"), on which the instant number is placed so it never falls as ε grows. "Find
best ε" searches the most private ε that meets the minimum utility (lane "slm", with
progress and cancel); it only ever sets ε. Each kind of op is a
:class:`~preflight.qt.qt_workers.Latest` group: a prediction for a result that is gone
vouches for nothing and is dropped.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from PySide6.QtCore import QObject, Signal

from preflight.app.prediction import Prediction
from preflight.app.presentation import error_text, log_grid
from preflight.core.errors import Cancelled
from preflight.core.tasks import SUMMARIZE, Task
from preflight.core.utility.recommend import CURVE_POINTS, Recommendation
from preflight.qt.document_ops import single_timer
from preflight.qt.qt_workers import Latest, OpContext, QtOp

FAST_PREDICT_MS = 60
REFINE_AFTER_MS = 1500        # refined prediction once the user stops changing things
ESTIMATE_MS = 250


def no_epsilon_message(min_utility: float) -> str:
    """What the user reads when no ε in the range meets the minimum, and what to do."""
    return (f"No ε meets your minimum utility of {min_utility:.2f} — try a policy with "
            "placeholders, lower the minimum in Settings → Policy, or keep it local.")


class UtilityController(QObject):
    """Predictions, the utility curve, the ε search and the cost (see the module doc)."""

    sig_prediction = Signal(object)               # Prediction
    sig_refining = Signal(bool)
    sig_prediction_failed = Signal(str)           # why no prediction can be shown
    sig_curve = Signal(object)                    # list[(eps, utility)]
    sig_recommendation = Signal(object)           # Recommendation
    sig_recommending = Signal(bool)
    sig_recommend_progress = Signal(float, str)   # share done, the ε being evaluated
    sig_estimate = Signal(object)                 # (core CostEstimate, provider)
    sig_status = Signal(str)
    sig_error = Signal(str, str)

    def __init__(self, app: Any, doc: Any, policies: Any, payload: Any,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.app, self.doc, self.policies, self.payload = app, doc, policies, payload
        self.task: Task = SUMMARIZE
        self.provider: str | None = None
        self.prediction: Prediction | None = None
        self._predicted_result: Any = None   # the preview result self.prediction is for
        self.recommendation: Recommendation | None = None
        # per setting (policy, ε): the last refined value shown and the result key it was for
        self._refined_for: dict[tuple, tuple[float, tuple]] = {}
        self.curve: list[tuple[float, float]] = []
        self._curve_prepared: Any = None     # the preparation ``curve`` was made for
        self._fast, self._refine, self._curve = Latest(), Latest(), Latest()
        self._estimate, self._recommend = Latest(), Latest()
        self._fast_timer = single_timer(self, FAST_PREDICT_MS, self._run_fast)
        self._refine_timer = single_timer(self, REFINE_AFTER_MS, self._run_refined)
        self._estimate_timer = single_timer(self, ESTIMATE_MS, self._run_estimate)

    # -- inputs ------------------------------------------------------------------------------
    def set_task(self, task: Task) -> None:
        self.task = task
        self.prediction = None
        self._refine_timer.start()
        self._estimate_timer.start()

    def set_provider(self, provider: str | None) -> None:
        self.provider = provider
        self.app.set_provider(provider)   # each provider has its own calibration
        self._estimate_timer.start()
        self._fast_timer.start()

    def on_preview(self, res: Any) -> None:
        """A new result (predict it) or none (drop what was derived from the old one)."""
        if res is None:
            for group in (self._fast, self._refine, self._estimate):
                group.next_generation()
            self.prediction = None
            self.sig_refining.emit(False)
            return
        self._fast_timer.start()
        if not self._refine_searched_text():
            self._refine_timer.start()
        self._estimate_timer.start()

    def on_prepared(self, prepared: Any) -> None:
        """A new d_X preparation: its own curve; a search of the old one says nothing."""
        self.recommendation = None
        self._run_curve()

    def on_policy_changed(self) -> None:
        self.recommendation = None

    def settings_changed(self) -> None:
        self.recommendation = None
        self._estimate_timer.start()

    # -- predictions -------------------------------------------------------------------------
    def _run_fast(self) -> None:
        res = self.payload.result
        if res is None:
            return
        text, spans, app, task = self.doc.text, self.doc.effective_spans(), self.app, self.task
        self._fast.start(QtOp(
            self, lambda ctx: app.predict_fast(text, res.sanitized, spans, task),
            lambda pred: self._on_prediction(pred, res), self._on_prediction_error,
            lane="pool"))

    def _run_refined(self) -> None:
        res = self.payload.result
        if res is None:
            return
        text, spans, task, app = self.doc.text, self.doc.effective_spans(), self.task, self.app
        self.sig_refining.emit(True)
        self._refine.start(QtOp(
            self, lambda ctx: app.predict_refined(text, res.sanitized, spans, task,
                                                  ctx.cancel, getattr(res, "vault", None)),
            lambda pred: self._on_prediction(pred, res), self._on_prediction_error, lane="slm",
            finished=lambda: self.sig_refining.emit(self._refine.busy)))

    def _on_prediction(self, pred: Prediction, res: Any) -> None:
        if res is not self.payload.result:
            return             # predicted for a result that is gone: it vouches for nothing
        current = self.prediction
        if (not pred.refined and current is not None and current.refined
                and self._predicted_result is res):
            return             # the refined prediction of this text stays; an instant one
                               # that finished later says less
        self.prediction = self._with_note(pred, res)
        self._predicted_result = res
        self.sig_prediction.emit(self.prediction)
        self._place_on_curve()

    def _with_note(self, pred: Prediction, res: Any) -> Prediction:
        """One number per setting: an instant value shown for a setting (policy, ε) whose
        refined value was shown for another text says why the number moved."""
        key = tuple(getattr(res, "key", ()) or ())
        if len(key) < 5:
            return pred
        setting = (key[1], key[4])
        if pred.refined:
            self._refined_for[setting] = (pred.value, key)
            return pred
        before = self._refined_for.get(setting)
        if before is None or before[1] == key:
            return pred
        changed = ("the document changed" if before[1][0] != key[0]
                   else "a new noise sample" if before[1][3] != key[3]
                   else "the protected items changed")
        return replace(pred, note=f"{changed}: the refined {before[0]:.2f} was for the "
                                  "text before")

    def _on_prediction_error(self, exc: BaseException) -> None:
        if isinstance(exc, Cancelled):
            return
        msg, hint = error_text(exc)
        self.sig_refining.emit(False)
        self.sig_prediction_failed.emit(f"{msg} {hint}".strip())

    def _refine_searched_text(self) -> bool:
        """Refine now, not after the slider's pause, when the preview shows the text "Find
        best ε" chose: the search measured it, so the assessor answers from memory. False
        when the preview shows another text or its refined prediction is already shown."""
        rec, res, pred = self.recommendation, self.payload.result, self.prediction
        if (rec is None or rec.sanitized is None or res is None
                or res.sanitized.text != rec.sanitized.text
                or (pred is not None and pred.refined and self._predicted_result is res)):
            return False
        self._run_refined()
        return True

    def _place_on_curve(self) -> None:
        """Read the instant prediction from the current preparation's utility curve (d_X
        only): the number and the chart then agree, and the number never falls as ε
        grows. A refined prediction is a measurement and stays as it is."""
        pred, res, curve = self.prediction, self.payload.result, self.curve
        if (pred is None or pred.refined or pred.placed is not None or res is None
                or res.epsilon is None or not curve
                or self._curve_prepared is not self.payload.prepared):
            return
        self.prediction = pred.on_curve(curve, res.epsilon)
        self.sig_prediction.emit(self.prediction)

    # -- the curve ---------------------------------------------------------------------------
    def _run_curve(self) -> None:
        prepared, rng = self.payload.prepared, self.policies.epsilon_range
        if prepared is None or rng is None:
            return
        text, spans, app = self.doc.text, self.doc.effective_spans(), self.app
        grid = log_grid(rng[0], rng[1], CURVE_POINTS)

        def op(ctx: OpContext):
            return app.utility_curve(text, prepared, spans, grid, ctx.cancel)

        self._curve.start(QtOp(self, op, lambda curve: self._on_curve(curve, prepared),
                               self._on_quiet_error, lane="dx"))

    def _on_curve(self, curve: Any, prepared: Any = None) -> None:
        # kept as given: a core UtilityCurve carries the band the chart shades
        self.curve = curve if isinstance(curve, list) else list(curve)
        self._curve_prepared = prepared
        self.sig_curve.emit(self.curve)
        self._place_on_curve()

    # -- "Find best ε" -----------------------------------------------------------------------
    def find_best_epsilon(self) -> None:
        """Search for the most private ε that still meets the minimum utility, in the
        background, reporting each ε it evaluates (``sig_recommend_progress``). The search
        only ever sets ε: it never answers and never sends."""
        prepared = self.payload.prepared
        if not self.policies.uses_dx or prepared is None:
            self.sig_error.emit("“Find best ε” needs a policy with d_X noise.",
                                "Choose a policy with d_X (e.g. “Protect identifiers + d_X”), "
                                "then try again.")
            return
        text, spans, task, app = self.doc.text, self.doc.effective_spans(), self.task, self.app
        self.sig_recommending.emit(True)
        self.sig_recommend_progress.emit(0.0, "starting the search")
        self.sig_status.emit("Searching for the most private ε that stays useful…")
        holder: dict[str, int] = {}

        def progress(fraction: float, message: str) -> None:
            if self._recommend.is_current(holder.get("g", -1)):   # not from a stale search
                self.sig_recommend_progress.emit(fraction, message)
                if fraction < 1.0:    # in the status bar too: the button may be scrolled away
                    self.sig_status.emit(f"Finding the best ε ({fraction:.0%}): {message}. "
                                         "Esc cancels.")

        holder["g"] = self._recommend.start(QtOp(
            self, lambda ctx: app.recommend(text, prepared, spans, task, ctx.cancel,
                                            ctx.progress),
            lambda rec: self._on_recommendation(rec, prepared),
            self._on_recommend_error, lane="slm", progress=progress))

    @property
    def recommending(self) -> bool:
        """A search runs whose result still counts (a cancelled one may be winding down)."""
        op = self._recommend.current
        return self._recommend.busy and op is not None and not op.dropped

    def cancel_recommendation(self) -> None:
        """Stop the search; ε stays what it was."""
        if not self.recommending:
            return
        self._recommend.next_generation()          # cancels it and drops its result
        self.sig_recommending.emit(False)
        self.sig_status.emit("Search cancelled; ε is unchanged.")

    def _on_recommend_error(self, exc: BaseException) -> None:
        self.sig_recommending.emit(False)
        if not isinstance(exc, Cancelled):
            self.sig_error.emit(*error_text(exc))

    def _on_recommendation(self, rec: Recommendation, prepared: Any) -> None:
        self.sig_recommending.emit(False)
        if prepared is not self.payload.prepared:
            # the document, policy or noise changed during the search: it vouches for
            # another text, so it sets nothing
            self.sig_status.emit("The document changed during the search; run "
                                 "“Find best ε” again.")
            return
        self.recommendation = rec
        self.sig_recommendation.emit(rec)
        if rec.decision == "send" and rec.epsilon is not None:
            self.sig_status.emit(f"ε set to {rec.epsilon:.3g}, the most private setting that "
                                 "meets your minimum utility.")
            self.payload.set_epsilon(float(rec.epsilon))
            self._refine_searched_text()     # ε was already there: no new preview comes
        else:
            self.sig_status.emit(no_epsilon_message(rec.min_utility))

    # -- the cost ----------------------------------------------------------------------------
    def _run_estimate(self) -> None:
        res = self.payload.result
        if res is None:
            return
        payload, task, provider, app = res.sanitized.text, self.task, self.provider, self.app
        self._estimate.start(QtOp(
            self, lambda ctx: (app.estimate(payload, task, provider), provider),
            self.sig_estimate.emit, self._on_quiet_error, lane="pool"))

    def _on_quiet_error(self, exc: BaseException) -> None:
        """Assessment failures show in the status bar, not as a dialog."""
        if isinstance(exc, Cancelled):
            return
        self.sig_status.emit(" ".join(error_text(exc)).strip())
        self.sig_refining.emit(False)

    def new_document(self) -> None:
        """A new document: nothing said about the last one's predictions carries over."""
        self._refined_for.clear()
        self.recommendation = None

    def cancel_all(self) -> None:
        for group in (self._fast, self._refine, self._curve, self._estimate,
                      self._recommend):
            group.next_generation()
        for t in (self._fast_timer, self._refine_timer, self._estimate_timer):
            t.stop()
