"""The document controller's assessment ops: instant and refined predictions, the utility
curve, the ε recommendation and the cost estimate.

A mixin of :class:`preflight.qt.controllers.DocumentController` (it uses the controller's
state, signals and :class:`~preflight.qt.qt_workers.Latest` groups); split out to keep the
controller readable. Fast ops run on the "pool" lane, the curve on "dx", anything touching
the local SLM on "slm".
"""

from __future__ import annotations

from preflight.app.doorway import Prediction
from preflight.app.presentation import log_grid
from preflight.core.errors import Cancelled
from preflight.core.utility.recommend import CURVE_POINTS, Recommendation
from preflight.qt.qt_workers import OpContext, QtOp


def no_epsilon_message(min_utility: float) -> str:
    """What the user reads when no ε in the range meets the minimum, and what to do."""
    return (f"No ε meets your minimum utility of {min_utility:.2f} — try a policy with "
            "placeholders, lower the minimum in Settings → Policy, or keep it local.")


class AssessmentOps:
    """Mixin: needs ``backend``, ``result``, ``prepared``, ``text``, ``task``... (see
    :class:`~preflight.qt.controllers.DocumentController`)."""

    def _run_fast_prediction(self) -> None:
        res = self.result
        if res is None:
            return
        text, spans, backend, task = self.text, self.effective_spans(), self.backend, self.task
        self._fast.start(QtOp(
            self, lambda ctx: backend.predict_fast(text, res.sanitized, spans, task),
            lambda pred: self._on_prediction(pred, res), self._on_prediction_error,
            lane="pool"))

    def _run_refined_prediction(self) -> None:
        res = self.result
        if res is None:
            return
        text, spans, task, backend = self.text, self.effective_spans(), self.task, self.backend
        self.sig_refining.emit(True)
        self._refine.start(QtOp(
            self, lambda ctx: backend.predict_refined(text, res.sanitized, spans, task,
                                                      ctx.cancel),
            lambda pred: self._on_prediction(pred, res), self._on_prediction_error, lane="slm",
            finished=lambda: self.sig_refining.emit(self._refine.busy)))

    def _on_prediction(self, pred: Prediction, res) -> None:
        if res is not self.result:
            return             # predicted for a result that is gone: it vouches for nothing
        current = self.prediction
        if (not pred.refined and current is not None and current.refined
                and self._predicted_result is res):
            return             # the refined prediction of this text stays; an instant one
                               # that finished later says less
        self.prediction = pred
        self._predicted_result = res
        self.sig_prediction.emit(pred)
        self._place_on_curve()

    def _refine_searched_text(self) -> bool:
        """Refine now, not after the slider's pause, when the preview shows the text "Find
        best ε" chose: the search measured it, so the assessor answers from memory. False
        when the preview shows another text or its refined prediction is already shown."""
        rec, res, pred = self.recommendation, self.result, self.prediction
        if (rec is None or rec.sanitized is None or res is None
                or res.sanitized.text != rec.sanitized.text
                or (pred is not None and pred.refined and self._predicted_result is res)):
            return False
        self._run_refined_prediction()
        return True

    def _place_on_curve(self) -> None:
        """Read the instant prediction from the current preparation's utility curve (d_X
        only): the number and the chart then agree, and the number never falls as ε
        grows. A refined prediction is a measurement and stays as it is."""
        pred, res, curve = self.prediction, self.result, self.curve
        if (pred is None or pred.refined or pred.placed is not None or res is None
                or res.epsilon is None or not curve
                or self._curve_prepared is not self.prepared):
            return
        self.prediction = pred.on_curve(curve, res.epsilon)
        self.sig_prediction.emit(self.prediction)

    def _run_curve(self) -> None:
        prepared, rng = self.prepared, self.epsilon_range
        if prepared is None or rng is None:
            return
        text, spans, backend = self.text, self.effective_spans(), self.backend
        grid = log_grid(rng[0], rng[1], CURVE_POINTS)

        def op(ctx: OpContext):
            return backend.utility_curve(text, prepared, spans, grid, ctx.cancel)

        self._curve.start(QtOp(self, op, lambda curve: self._on_curve(curve, prepared),
                               self._on_quiet_error, lane="dx"))

    def _on_curve(self, curve: list[tuple[float, float]], prepared=None) -> None:
        # kept as given: a core UtilityCurve carries the band the chart shades
        self.curve = curve if isinstance(curve, list) else list(curve)
        self._curve_prepared = prepared
        self.sig_curve.emit(self.curve)
        self._place_on_curve()

    def find_best_epsilon(self) -> None:
        """Search for the most private ε that still meets the minimum utility, in the
        background, reporting each ε it evaluates (``sig_recommend_progress``). The search
        only ever sets ε: it never answers and never sends."""
        prepared = self.prepared
        if not self.uses_dx or prepared is None:
            self.sig_error.emit("“Find best ε” needs a policy with d_X noise.",
                                "Choose a policy with d_X (e.g. “Protect identifiers + d_X”), "
                                "then try again.")
            return
        text, spans, task, backend = self.text, self.effective_spans(), self.task, self.backend
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
            self, lambda ctx: backend.recommend(text, prepared, spans, task, ctx.cancel,
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
            self._on_error(exc)

    def _on_recommendation(self, rec: Recommendation, prepared) -> None:
        self.sig_recommending.emit(False)
        if prepared is not self.prepared:
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
            self.set_epsilon(float(rec.epsilon))
            self._refine_searched_text()     # ε was already there: no new preview comes
        else:
            self.sig_status.emit(no_epsilon_message(rec.min_utility))

    def _run_estimate(self) -> None:
        res = self.result
        if res is None:
            return
        payload, task, provider, backend = res.sanitized.text, self.task, self.provider, \
            self.backend
        self._estimate.start(QtOp(
            self, lambda ctx: (backend.estimate(payload, task, provider), provider),
            self.sig_estimate.emit, self._on_quiet_error, lane="pool"))

